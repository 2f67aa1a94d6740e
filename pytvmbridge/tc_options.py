"""Tensor Comprehensions' mapping options and tuning entry points, accepted for TC code.

TC maps each def onto a GPU with ``MappingOptions`` (tile sizes, block and grid shapes, memory
promotion) chosen by hand or by its genetic autotuner. pytvmbridge compiles TC for the CPU
through its own schedules, so hand-written options have no effect here: they are accepted (every
calling form of TC v0.1.1 and of TC's later Python API) so that TC code runs unchanged. Tuning
is real: ``tc.autotune(tc, entry_point, *inputs)`` tunes the def with ``pytvmbridge.autotvm`` at
those inputs' sizes and returns options that carry the best configuration found;
``tc.compile(tc, entry_point, options)``, a call with ``options=``, and
``define(tc, make_autotuned_options_factory(...))`` (tuned at the first call of each size) build
the def with it. ``make_load_from_cache_options_factory(log)`` takes the log's best record.

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
        # A tuned configuration for one def: {"source", "name", "config"} (``autotune``).
        self.tuned: dict[str, Any] | None = None

    @classmethod
    def _tuned_for(cls, fn: Any, config: Any) -> MappingOptions:
        options = cls("tuned")
        options.tuned = {"source": fn._source, "name": fn.name, "config": config}
        return options

    def config_for(self, fn: Any) -> Any:
        """The tuned configuration these options carry for TC def ``fn`` (same source and
        name), or ``None``."""
        t = self.tuned
        if t is not None and t["name"] == fn.name and t["source"] == fn._source:
            return t["config"]
        return None

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
    """TC's autotuner settings (``TunerConfig().threads(5).generations(3)``), chained;
    ``generations * pop_size`` is the number of trials ``autotune`` measures (the GPU
    settings have no effect).

    Example:
        >>> from pytvmbridge import tc
        >>> tc.TunerConfig().threads(5).generations(3).pop_size(5).settings["generations"]
        3
    """

    def __init__(self) -> None:
        super().__init__("naive")
        self.settings: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Callable[..., MappingOptions]:
        if name.startswith("_"):
            raise AttributeError(name)

        def setter(*args: Any, **kwargs: Any) -> MappingOptions:
            del kwargs
            if args:
                self.settings[name] = args[0]
            return self

        return setter

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

    generate.always_naive = True  # type: ignore[attr-defined]
    return generate


def make_load_from_cache_options_factory(cache_filename: str) -> Callable[..., MappingOptions]:
    """TC's factory reading tuned options from a cache file: here a tuning log; a def is built
    with the log's best record for the sizes of its first call (naive options when the log has
    none, with ``apply_history_best``'s warning).

    Example:
        >>> from pytvmbridge import tc
        >>> tc.make_load_from_cache_options_factory("tc.options")("def ...", "f")
        MappingOptions('naive')
    """

    def generate(tc: str, entry_point: str, *inputs: Any) -> MappingOptions:
        if not inputs:
            return MappingOptions("naive")
        from .autotvm import record
        from .autotvm.dispatch import tc_task_at
        from .tc import define

        fn = define(tc, name=entry_point)
        config = record.apply_history_best(cache_filename).lookup(
            tc_task_at(fn, _input_specs(inputs))
        )
        return MappingOptions("naive") if config is None else MappingOptions._tuned_for(fn, config)

    return generate


def make_autotuned_options_factory(**kwargs: Any) -> Callable[..., MappingOptions]:
    """TC's factory that autotunes on first use: a def defined with it is tuned (``autotune``,
    with these keywords) at the sizes of its first call, and of each new size after.

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

    def generate(tc: str, entry_point: str, *inputs: Any) -> MappingOptions:
        return autotune(tc, entry_point, *inputs, **kwargs)

    return generate


def warn_no_tuner(name: str) -> None:
    """Warn that a TC autotuning request had no inputs to measure with."""
    warnings.warn(
        f"TC def {name!r} was not tuned: tuning measures the def at its inputs' sizes, and "
        "none were given (pass example inputs); it runs with pytvmbridge's default CPU schedule",
        UserWarning,
        stacklevel=3,
    )


def autotune(tc: str, entry_point: str, *inputs: Any, **kwargs: Any) -> MappingOptions:
    """TC's ``tc.autotune(tc, entry_point, *inputs, ...)``: tunes def ``entry_point`` with
    ``pytvmbridge.autotvm`` at these inputs' sizes (``tuner_config=TunerConfig()
    .generations(g).pop_size(p)``: g * p trials, 8 by default; ``cache_filename=``: the log)
    and returns options carrying the best configuration, for ``tc.compile(tc, entry_point,
    options)`` or a call's ``options=``. Without inputs it warns and returns naive options.

    Example:
        >>> import warnings
        >>> from pytvmbridge import tc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     tc.autotune("def f(float(N) A) -> (B) { B(i) = A(i) }", "f")
        MappingOptions('naive')
    """
    if not inputs:
        warn_no_tuner(entry_point)
        return MappingOptions("naive")
    from .autotvm.dispatch import tc_autotune
    from .tc import define

    fn = define(tc, name=entry_point)
    tc_autotune(fn, *inputs, **kwargs)
    best = fn.tuned_record
    return (
        MappingOptions("naive") if best is None else MappingOptions._tuned_for(fn, best["config"])
    )


def _input_specs(inputs: Any) -> tuple[tuple[tuple[int, ...], str], ...]:
    from .frameworks import framework_of

    specs = []
    for x in inputs:
        fw = framework_of(x)
        specs.append((tuple(int(d) for d in fw.shape(x)), str(fw.dtype(x))))
    return tuple(specs)


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
