"""Test helpers under TVM's names (``tvm.testing``), for tests written for TVM.

``assert_allclose`` compares as TVM's does (shapes first, then values with ``rtol``/``atol``
of 1e-7 unless given); the target helpers describe the only target pytvmbridge has, ``llvm``
on this CPU, so TVM tests parametrized over targets run their CPU case; GPU-only tests are
skipped with a reason.

Example:
    >>> import numpy as np
    >>> import pytvmbridge as tvm
    >>> import pytvmbridge.testing
    >>> tvm.testing.assert_allclose(tvm.nd.array(np.ones(3, "float32")), np.ones(3))
    >>> tvm.testing.enabled_targets()
    [('llvm', cpu(0))]
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

__all__ = [
    "assert_allclose",
    "assert_prim_expr_equal",
    "check_numerical_grads",
    "device_enabled",
    "enabled_targets",
    "main",
    "parametrize_targets",
    "requires_cuda",
    "requires_gpu",
    "requires_llvm",
    "uses_gpu",
]


def _as_numpy(x: Any) -> np.ndarray:
    numpy = getattr(x, "numpy", None)
    if callable(numpy) and not isinstance(x, np.ndarray):
        return np.asanyarray(numpy())
    return np.asanyarray(x)


def assert_allclose(actual: Any, desired: Any, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """Assert that two arrays (NumPy, NDArray, PyTorch...) have the same shape and values within
    ``atol + rtol * |desired|``, as TVM's ``tvm.testing.assert_allclose``.

    Example:
        >>> import pytvmbridge.testing as testing
        >>> testing.assert_allclose([1.0, 2.0], [1.0, 2.0 + 1e-9])
        >>> try:
        ...     testing.assert_allclose([1.0], [1.0, 2.0])
        ... except AssertionError:
        ...     print("shape mismatch")
        shape mismatch
    """
    a, d = _as_numpy(actual), _as_numpy(desired)
    np.testing.assert_allclose(a.shape, d.shape)
    np.testing.assert_allclose(a, d, rtol=rtol, atol=atol, verbose=True)


def assert_prim_expr_equal(lhs: Any, rhs: Any) -> None:
    """Assert that two scalar expressions are equal after simplification (their difference
    folds to zero), as TVM's helper of the same name.

    Example:
        >>> import pytvmbridge as tvm, pytvmbridge.testing as testing
        >>> n = tvm.var("n")
        >>> testing.assert_prim_expr_equal(n * 2 + n, n * 3)
    """
    from . import _core

    difference = _core.simplify(_core.convert(lhs) - _core.convert(rhs))
    if str(difference) not in ("0", "0.0", "0f", "False"):
        raise AssertionError(f"{lhs} and {rhs} differ: their difference simplifies to {difference}")


def enabled_targets() -> list[tuple[str, Any]]:
    """The (target, device) pairs tests can run on: ``llvm`` and the CPU.

    Example:
        >>> import pytvmbridge.testing as testing
        >>> [t for t, _ in testing.enabled_targets()]
        ['llvm']
    """
    from .nd import cpu

    return [("llvm", cpu(0))]


def device_enabled(target: Any) -> bool:
    """Whether tests for ``target`` can run here: true for ``llvm`` targets only.

    Example:
        >>> import pytvmbridge.testing as testing
        >>> testing.device_enabled("llvm"), testing.device_enabled("cuda")
        (True, False)
    """
    return str(target).split()[0] in ("llvm", "cpu")


def _skip(reason: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    import pytest

    return pytest.mark.skip(reason=reason)


def uses_gpu(func: Callable[..., Any]) -> Callable[..., Any]:
    """TVM marks tests that also run on GPUs with this; here they run their CPU part.

    Example:
        >>> import pytvmbridge.testing as testing
        >>> testing.uses_gpu(lambda: 3)()
        3
    """
    return func


def requires_llvm(func: Callable[..., Any]) -> Callable[..., Any]:
    """The LLVM backend is always present: the test runs.

    Example:
        >>> import pytvmbridge.testing as testing
        >>> testing.requires_llvm(lambda: 4)()
        4
    """
    return func


def requires_gpu(func: Callable[..., Any]) -> Callable[..., Any]:
    """Skips the test: pytvmbridge compiles for the CPU only."""
    return _skip("pytvmbridge compiles for the CPU only (no GPU target)")(func)


requires_cuda = requires_gpu


def parametrize_targets(*targets: Any) -> Any:
    """Parametrize a test taking ``target`` and ``dev`` over the CPU target; GPU targets named
    in ``targets`` are left out. Usable bare (``@parametrize_targets``) or with names.

    Example:
        >>> import pytvmbridge.testing as testing
        >>> @testing.parametrize_targets("llvm", "cuda")
        ... def test(target, dev):
        ...     pass
        >>> [m.args[1] for m in test.pytestmark]
        [[('llvm', cpu(0))]]
    """
    import pytest

    def wrap(func: Callable[..., Any], names: Iterable[str]) -> Callable[..., Any]:
        pairs = [(t, d) for t, d in enabled_targets() if not names or t in names]
        return pytest.mark.parametrize("target,dev", pairs)(func)

    if len(targets) == 1 and callable(targets[0]):
        return wrap(targets[0], ())
    names = [str(t).split()[0] for t in targets]
    return functools.partial(wrap, names=names)


def check_numerical_grads(
    function: Callable[..., Any],
    input_values: dict[str, Any] | list[Any],
    grad_values: dict[str, Any] | list[Any],
    function_value: Any = None,
    delta: float = 1e-3,
    atol: float = 1e-2,
    rtol: float = 0.1,
) -> None:
    """Compare gradients with central differences of the scalar ``function`` (as TVM's).

    Example:
        >>> import numpy as np, pytvmbridge.testing as testing
        >>> x = np.array([1.0, 2.0])
        >>> testing.check_numerical_grads(lambda x: float((x ** 2).sum()), [x], [2 * x])
    """
    del function_value
    if isinstance(input_values, dict):
        keys = list(input_values)
        values = [np.asarray(input_values[k], dtype="float64") for k in keys]
        grads = [np.asarray(grad_values[k]) for k in keys]  # type: ignore[index]

        def call(vs: list[np.ndarray]) -> float:
            return float(function(**dict(zip(keys, vs, strict=True))))
    else:
        values = [np.asarray(v, dtype="float64") for v in input_values]
        grads = [np.asarray(g) for g in grad_values]  # type: ignore[union-attr]

        def call(vs: list[np.ndarray]) -> float:
            return float(function(*vs))

    for n, (value, grad) in enumerate(zip(values, grads, strict=True)):
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            shifted = [v.copy() for v in values]
            shifted[n][index] = value[index] + delta
            up = call(shifted)
            shifted[n][index] = value[index] - delta
            numeric[index] = (up - call(shifted)) / (2 * delta)
        np.testing.assert_allclose(grad, numeric, rtol=rtol, atol=atol)


def main() -> None:
    """Run the calling test file with pytest (``if __name__ == "__main__": tvm.testing.main()``)."""
    import pytest

    sys.exit(pytest.main([sys.argv[0], *sys.argv[1:]]))
