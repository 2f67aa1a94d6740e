"""Tensor Comprehensions' mapping options and tuning entry points, accepted for TC code.

TC maps each def onto a GPU with ``MappingOptions`` (tile sizes, block and grid shapes, memory
promotion) chosen by hand or by its genetic autotuner. pytvmbridge compiles TC for the CPU
through its own schedules, so these options have no effect here: they are accepted (every
calling form of TC v0.1.1 and of TC's later Python API) so that TC code runs unchanged. The
autotuning calls warn and return their input until pytvmbridge's tuner (``autotvm``) can tune TC
defs.

Example:
    >>> import numpy as np
    >>> from pytvmbridge import tc
    >>> T = tc.define("def add(float(N) A, float(N) B) -> (C) { C(i) = A(i) + B(i) }",
    ...               tc.make_naive_options_factory())
    >>> T.add(np.ones(2, "float32"), np.ones(2, "float32"), options=tc.Options("naive"))
    array([2., 2.], dtype=float32)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "MappingOptions",
    "Options",
    "TunerConfig",
    "assert_almost_equal",
    "autotune",
    "make_autotuned_options_factory",
    "make_load_from_cache_options_factory",
    "make_naive_options_factory",
    "warn_no_tuner",
]

_NO_EFFECT = "mapping options have no effect on the CPU"


class MappingOptions:
    """TC's mapping options (``MappingOptions('naive')``, TC v0.1.1's ``Options('mlp')``).

    Any builder method (``.tile(...)``, ``.mapToThreads(...)``, ``.unroll(...)``...) is
    accepted and returns the options, so chained TC code runs; none changes how pytvmbridge
    compiles for the CPU.

    Example:
        >>> from pytvmbridge import tc
        >>> o = tc.MappingOptions("naive").tile(32, 32).unroll(4)
        >>> o
        MappingOptions('naive')
    """

    def __init__(self, kind: Any = "naive") -> None:
        self.kind = kind if isinstance(kind, str) else "naive"

    def __getattr__(self, name: str) -> Callable[..., MappingOptions]:
        if name.startswith("_"):
            raise AttributeError(name)

        def setter(*args: Any, **kwargs: Any) -> MappingOptions:
            del args, kwargs
            return self

        return setter

    def serialize(self) -> bytes:
        """The options as bytes (TC stores them in its cache files)."""
        return self.kind.encode()

    def __repr__(self) -> str:
        return f"MappingOptions({self.kind!r})"


#: TC v0.1.1's name of the options class.
Options = MappingOptions


class TunerConfig(MappingOptions):
    """TC's autotuner settings (``TunerConfig().threads(5).generations(3)``): accepted, chained,
    without effect until pytvmbridge's tuner can tune TC defs.

    Example:
        >>> from pytvmbridge import tc
        >>> tc.TunerConfig().threads(5).generations(3).pop_size(5)
        TunerConfig()
    """

    def __init__(self) -> None:
        super().__init__("naive")

    def __repr__(self) -> str:
        return "TunerConfig()"


def make_naive_options_factory() -> Callable[..., MappingOptions]:
    """A factory of naive options (TC's ``define(lang, make_naive_options_factory())``).

    Example:
        >>> from pytvmbridge import tc
        >>> tc.make_naive_options_factory()("def ...", "f")
        MappingOptions('naive')
    """

    def generate(tc: str, entry_point: str, *inputs: Any) -> MappingOptions:
        del tc, entry_point, inputs
        return MappingOptions("naive")

    return generate


def make_load_from_cache_options_factory(cache_filename: str) -> Callable[..., MappingOptions]:
    """TC's factory reading tuned options from a cache file; here naive options (see the
    module's note).

    Example:
        >>> from pytvmbridge import tc
        >>> tc.make_load_from_cache_options_factory("tc.options")("def ...", "f")
        MappingOptions('naive')
    """
    del cache_filename
    return make_naive_options_factory()


def make_autotuned_options_factory(**kwargs: Any) -> Callable[..., MappingOptions]:
    """TC's factory that autotunes on first use; here naive options, with a warning on first
    use that no tuning happened.

    Example:
        >>> import warnings
        >>> from pytvmbridge import tc
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     tc.make_autotuned_options_factory(starting_options="naive")("def ...", "f")
        MappingOptions('naive')
        >>> "not tuned" in str(caught[0].message)
        True
    """
    del kwargs

    def generate(tc: str, entry_point: str, *inputs: Any) -> MappingOptions:
        del tc, inputs
        warn_no_tuner(entry_point)
        return MappingOptions("naive")

    return generate


def warn_no_tuner(name: str) -> None:
    """Warn that a TC autotuning request did nothing."""
    warnings.warn(
        f"TC def {name!r} was not tuned: pytvmbridge cannot autotune TC defs yet, and TC's "
        f"{_NO_EFFECT}; it runs with pytvmbridge's default CPU schedule",
        UserWarning,
        stacklevel=3,
    )


def autotune(tc: str, entry_point: str, *inputs: Any, **kwargs: Any) -> MappingOptions:
    """TC's ``tc.autotune(tc, entry_point, *inputs, ...)``: warns and returns naive options.

    Example:
        >>> import warnings
        >>> from pytvmbridge import tc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     tc.autotune("def f(float(N) A) -> (B) { B(i) = A(i) }", "f")
        MappingOptions('naive')
    """
    del tc, inputs, kwargs
    warn_no_tuner(entry_point)
    return MappingOptions("naive")


def assert_almost_equal(
    actual: Any, expected: Any, *inputs: Any, operations: int = 1, precision: float = 1e-7
) -> None:
    """TC's check: ``actual`` and ``expected`` agree to within ``precision`` times the number
    of ``operations`` per element, relative to the largest input magnitude.

    Example:
        >>> import numpy as np
        >>> from pytvmbridge import tc
        >>> a = np.ones(3, "float32")
        >>> tc.assert_almost_equal(a + a, 2 * a, a)
    """
    got, want = np.asarray(_numpy(actual), "float64"), np.asarray(_numpy(expected), "float64")
    scale = max([1.0, *(float(np.abs(_numpy(x)).max(initial=0.0)) for x in inputs)])
    bound = precision * operations * scale
    error = float(np.abs(got - want).max(initial=0.0))
    if not error <= bound:
        raise AssertionError(f"max absolute difference {error} exceeds {bound}")


def _numpy(x: Any) -> Any:
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return x.numpy() if hasattr(x, "numpy") and not isinstance(x, np.ndarray) else x
