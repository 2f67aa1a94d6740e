"""Framework bridges: a built Module as a function of PyTorch, NumPy, JAX or MXNet arrays.

``to_pytorch(module)`` (and ``to_numpy``, ``to_jax``, ``to_mxnet``) returns a function that is
called in one of two forms:

* with every array of the kernel's signature, inputs and outputs in order: the kernel writes
  the outputs in place and the function returns ``None`` (the form of TVM's ``to_pytorch``);
* with the inputs only: the outputs are allocated in the bridge's framework with the shapes
  bound from the inputs, written, and returned (one array, or a tuple for several outputs).

Nothing is copied: every array is viewed through DLPack (PyTorch through its C exchange table,
MXNet through ``to_dlpack_for_read``/``to_dlpack_for_write``). Arrays of another framework may be
mixed in; outputs that are allocated are always the bridge's framework's. JAX arrays are
immutable: ``to_jax`` functions take the inputs only.

Errors are raised before anything is written: wrong count, shape, dtype or device, an output
that requires grad (PyTorch) or is immutable (JAX) or read-only (NumPy).

Example:
    >>> import numpy as np, torch
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge.bridges import to_pytorch
    >>> n = tvm.var("n")
    >>> A = tvm.placeholder((n,), name="A")
    >>> B = tvm.compute((n,), lambda i: A[i] * 2.0, name="B")
    >>> f = to_pytorch(tvm.build(tvm.create_schedule(B.op), [A, B], name="double"))
    >>> f(torch.arange(3.0))
    tensor([0., 2., 4.])
    >>> b = torch.empty(3); f(torch.ones(3), b); b
    tensor([2., 2., 2.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _core, frameworks
from .frameworks import Framework, framework_of

__all__ = ["bridge", "to_jax", "to_mxnet", "to_numpy", "to_pytorch"]

_by_type = frameworks._by_type
#: The C++ fast path of the all-arrays form, where this build has it; None: the Python one.
_FastBridge = getattr(_core, "FastBridge", None)
_FAST_MAX_ARGS = 16


class Signature:
    """What a call needs to know about a Module, computed once: which arguments are outputs,
    their dtypes, and how each argument is named in errors.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((4,), name="A")
        >>> B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
        >>> sig = Signature(tvm.build(tvm.create_schedule(B.op), [A, B]))
        >>> sig.inputs, sig.outputs, sig.out_dtypes
        ((0,), (1,), ('float32',))
    """

    __slots__ = (
        "inputs",
        "is_output",
        "module",
        "n_all",
        "n_in",
        "name",
        "out_dtypes",
        "outputs",
        "run",
        "shapes",
        "single_trailing_output",
        "whats",
    )

    def __init__(self, module: Any) -> None:
        self.module = module
        self.name = module.entry_name
        self.is_output = tuple(bool(b) for b in module.is_output)
        names = list(module.arg_names)
        dtypes = list(module.arg_dtypes)
        self.n_all = len(self.is_output)
        self.inputs = tuple(i for i, o in enumerate(self.is_output) if not o)
        self.outputs = tuple(i for i, o in enumerate(self.is_output) if o)
        self.n_in = len(self.inputs)
        self.out_dtypes = tuple(dtypes[i] for i in self.outputs)
        self.single_trailing_output = self.outputs == (self.n_all - 1,)
        self.shapes: dict[Any, tuple[tuple[int, ...], ...]] = {}
        self.whats = tuple(f"argument {i} ('{name}')" for i, name in enumerate(names))
        # What runs the kernel on arrays passed as they are: the module, or its C++ fast path
        # (no error text built unless there is an error; any failure retried by the module).
        fast = _FastBridge is not None and self.n_all <= _FAST_MAX_ARGS
        self.run = _FastBridge(module, None, module, self.whats) if fast else module

    def count_error(self, n: int) -> TypeError:
        """The error for a call with ``n`` arrays."""
        return TypeError(
            f"kernel '{self.name}' takes all {self.n_all} arrays (outputs written in place) or "
            f"its {self.n_in} input(s) (outputs allocated and returned), got {n}"
        )


def _framework(x: Any, what: str) -> Framework:
    try:
        return framework_of(x)
    except TypeError as err:
        raise TypeError(f"{what}: {err}") from None


def _convert(sig: Signature, arrays: tuple[Any, ...]) -> list[Any]:
    """Every array as its framework hands it to a kernel (may raise for a bad output)."""
    out = []
    for i, x in enumerate(arrays):
        fw = _by_type.get(type(x)) or _framework(x, sig.whats[i])
        out.append(
            fw.as_output(x, sig.whats[i]) if sig.is_output[i] else fw.as_input(x, sig.whats[i])
        )
    return out


def _explain(sig: Signature, arrays: Any, positions: Any, err: BaseException) -> None:
    """After a failed call: raise a clearer error when a framework can tell what is wrong."""
    for i, x in zip(positions, arrays, strict=True):
        fw = _by_type.get(type(x))
        message = fw.diagnose(x, sig.whats[i]) if fw is not None else None
        if message is not None:
            raise ValueError(message) from err


def _run(sig: Signature, args: list[Any] | tuple[Any, ...], originals: Any, positions: Any) -> None:
    try:
        sig.run(*args)
    except Exception as err:
        _explain(sig, originals, positions, err)
        raise


def _recover(sig: Signature, arrays: tuple[Any, ...], err: Exception) -> None:
    """The arrays failed as they are: raise a clearer error when a framework can tell what is
    wrong, else the error itself. Nothing is retried: a producer is asked for its array once,
    and a capsule can be consumed only once."""
    _explain(sig, arrays, range(sig.n_all), err)
    raise err


# Per type: how an array of that type is checked before it is handed over as an output. None:
# as it is; a function (x, what) that raises when the framework forbids the write; _CONVERT:
# the array must go through its framework (MXNet) first.
_out_checks: dict[type, Any] = {}
_UNKNOWN = object()
_CONVERT = object()


def _output_check(x: Any, what: str) -> Any:
    """The output check for the type of ``x`` (resolved once per type)."""
    check = _out_checks.get(type(x), _UNKNOWN)
    if check is _UNKNOWN:
        fw = _framework(x, what)
        check = fw.output_check() if fw.native else _CONVERT
        if type(x).__name__ != "PyCapsule":
            _out_checks[type(x)] = check
    return check


def call_inplace(sig: Signature, arrays: tuple[Any, ...], native: bool = True) -> None:
    """Run with every array given; outputs are written in place.

    ``native`` says the arrays may first be tried as they are (they speak DLPack); outputs are
    checked by their framework's rules beforehand either way, so nothing is written on error.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> A = tvm.placeholder((2,), name="A")
        >>> B = tvm.compute((2,), lambda i: A[i] + 1.0, name="B")
        >>> sig = Signature(tvm.build(tvm.create_schedule(B.op), [A, B]))
        >>> b = np.zeros(2, "float32"); call_inplace(sig, (np.ones(2, "float32"), b)); b
        array([2., 2.], dtype=float32)
    """
    if native:
        for i in sig.outputs:
            check = _output_check(arrays[i], sig.whats[i])
            if check is _CONVERT:
                native = False
                break
            if check is not None:
                check(arrays[i], sig.whats[i])
    if not native:
        _run(sig, _convert(sig, arrays), arrays, range(sig.n_all))
        return
    try:
        sig.run(*arrays)
    except Exception as err:
        _recover(sig, arrays, err)


_in_converters: dict[type, Any] = {}
#: Output shapes remembered per Signature, by input shapes, before the table is emptied.
_SHAPES_LIMIT = 256


def _input_converter(x: Any, what: str) -> Any:
    """The fast-path input converter for the type of ``x`` (resolved once per type)."""
    conv = _in_converters.get(type(x), _UNKNOWN)
    if conv is _UNKNOWN:
        conv = _framework(x, what).input_converter()
        if type(x).__name__ != "PyCapsule":
            _in_converters[type(x)] = conv
    return conv


def _output_shapes(sig: Signature, args: list[Any], inputs: tuple[Any, ...], key: Any) -> Any:
    """The outputs' shapes for these inputs, asked of the module (which also checks the inputs'
    ranks) and remembered under ``key`` (any hashable that determines them; None: not kept)."""
    try:
        shapes = tuple(tuple(s) for s in sig.module.output_shapes(*args))
    except Exception as err:
        _explain(sig, inputs, sig.inputs, err)
        raise
    if key is not None:
        if len(sig.shapes) >= _SHAPES_LIMIT:
            sig.shapes.clear()
        sig.shapes[key] = shapes
    return shapes


def call_allocating(
    sig: Signature, out_fw: Framework, inputs: tuple[Any, ...], key: Any = None
) -> Any:
    """Run with the inputs only: allocate the outputs in ``out_fw``, run, return them.

    Returns one array for one output, a tuple for several. ``key`` (optional) is a hashable
    that determines the inputs' shapes, for the caller that has one already.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> from pytvmbridge import frameworks
        >>> A = tvm.placeholder((2,), name="A")
        >>> B = tvm.compute((2,), lambda i: A[i] + 1.0, name="B")
        >>> sig = Signature(tvm.build(tvm.create_schedule(B.op), [A, B]))
        >>> call_allocating(sig, frameworks.get("numpy"), (np.ones(2, "float32"),))
        array([2., 2.], dtype=float32)
    """
    positions = sig.inputs
    args = list(inputs)
    for k, x in enumerate(inputs):
        conv = _in_converters.get(type(x), _UNKNOWN)
        if conv is not None:
            if conv is _UNKNOWN:
                conv = _input_converter(x, sig.whats[positions[k]])
            if conv is not None:
                args[k] = conv(x, sig.whats[positions[k]])
    shapes = None
    if key is None:
        try:
            key = tuple([a.shape for a in args])
        except AttributeError:  # a capsule: no shape to look up by
            pass
    if key is not None:
        shapes = sig.shapes.get(key)
    if shapes is None:
        shapes = _output_shapes(sig, args, inputs, key)
    if sig.single_trailing_output and out_fw.plain_buffers:  # the usual: inputs, then one output
        buffer = out_fw.empty(shapes[0], sig.out_dtypes[0])
        args.append(buffer)
        try:
            sig.run(*args)
        except Exception as err:
            _explain(sig, inputs, positions, err)
            raise
        return buffer
    buffers = [out_fw.empty(shape, dt) for shape, dt in zip(shapes, sig.out_dtypes, strict=True)]
    merged: list[Any] = [None] * sig.n_all
    for k, i in enumerate(positions):
        merged[i] = args[k]
    for k, i in enumerate(sig.outputs):
        merged[i] = out_fw.writable(buffers[k])
    _run(sig, merged, inputs, positions)
    if len(buffers) == 1:
        return out_fw.wrap(buffers[0])
    return tuple(out_fw.wrap(b) for b in buffers)


def bridge(module: Any, framework: str | Framework) -> Callable[..., Any]:
    """``module`` as a function of ``framework``'s arrays, in both forms (see the module doc).

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> A = tvm.placeholder((3,), name="A")
        >>> B = tvm.compute((3,), lambda i: A[i] * A[i], name="B")
        >>> f = bridge(tvm.build(tvm.create_schedule(B.op), [A, B]), "numpy")
        >>> f(np.arange(3, dtype="float32"))
        array([0., 1., 4.], dtype=float32)
    """
    fw = frameworks.get(framework) if isinstance(framework, str) else framework
    sig = Signature(module)
    n_all, n_in = sig.n_all, sig.n_in
    if fw.native:
        # The hot path, kept flat: each output checked by its type's rule, then one call.
        whats, outputs, run, checks = sig.whats, sig.outputs, sig.run, _out_checks

        def call(*arrays: Any) -> Any:
            n = len(arrays)
            if n == n_all:
                for i in outputs:
                    check = checks.get(type(arrays[i]), _UNKNOWN)
                    if check is not None:
                        if check is _UNKNOWN:
                            check = _output_check(arrays[i], whats[i])
                        if check is _CONVERT:
                            return call_inplace(sig, arrays, native=False)
                        if check is not None:
                            check(arrays[i], whats[i])
                try:
                    run(*arrays)
                except Exception as err:
                    _recover(sig, arrays, err)
                return None
            if n == n_in:
                return call_allocating(sig, fw, arrays)
            raise sig.count_error(n)

    else:

        def call(*arrays: Any) -> Any:
            n = len(arrays)
            if n == n_all:
                return call_inplace(sig, arrays, native=False)
            if n == n_in:
                return call_allocating(sig, fw, arrays)
            raise sig.count_error(n)

    result: Any = call
    if fw.native and _FastBridge is not None and n_all <= _FAST_MAX_ARGS:
        # The all-arrays form in C++ (csrc/python/bind_bridges.cc); every other call, and any
        # call it cannot finish, goes to `call`.
        result = _FastBridge(module, _out_checks, call, sig.whats)
    else:
        call.module = module  # type: ignore[attr-defined]
    result.__name__ = result.__qualname__ = f"{sig.name}_{fw.name}"
    result.__doc__ = (
        f"Kernel '{sig.name}' on {fw.name} arrays: pass all {n_all} arrays to write the outputs "
        f"in place (returns None), or the {n_in} input(s) to get the outputs back."
    )
    result.framework = fw.name
    return result


def to_pytorch(module: Any) -> Callable[..., Any]:
    """``module`` as a function of PyTorch tensors (TVM's ``to_pytorch``).

    All arrays: runs in place, returns None. Inputs only: returns new tensors.

    Example:
        >>> import torch, pytvmbridge as tvm
        >>> n = tvm.var("n")
        >>> X = tvm.placeholder((n,), name="X")
        >>> Y = tvm.compute((n,), lambda i: X[i] + 1.0, name="Y")
        >>> f = to_pytorch(tvm.build(tvm.create_schedule(Y.op), [X, Y]))
        >>> f(torch.zeros(2))
        tensor([1., 1.])
    """
    return bridge(module, "torch")


def to_numpy(module: Any) -> Callable[..., Any]:
    """``module`` as a function of NumPy arrays.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> X = tvm.placeholder((2,), name="X", dtype="int32")
        >>> Y = tvm.compute((2,), lambda i: X[i] * 3, name="Y")
        >>> to_numpy(tvm.build(tvm.create_schedule(Y.op), [X, Y]))(np.array([1, 2], "int32"))
        array([3, 6], dtype=int32)
    """
    return bridge(module, "numpy")


def to_jax(module: Any) -> Callable[..., Any]:
    """``module`` as a function of JAX arrays: inputs only (JAX arrays are immutable).

    The outputs are allocated by pytvmbridge and handed to JAX without a copy.

    Example:
        >>> import jax.numpy as jnp, pytvmbridge as tvm
        >>> X = tvm.placeholder((3,), name="X")
        >>> Y = tvm.compute((3,), lambda i: X[i] - 1.0, name="Y")
        >>> to_jax(tvm.build(tvm.create_schedule(Y.op), [X, Y]))(jnp.ones(3)).tolist()
        [0.0, 0.0, 0.0]
    """
    return bridge(module, "jax")


def to_mxnet(module: Any) -> Callable[..., Any]:
    """``module`` as a function of MXNet NDArrays (TVM's ``to_mxnet_func``), MXNet 1.x included.

    Arrays are exchanged through ``to_dlpack_for_read``/``to_dlpack_for_write``.

    Example:
        >>> import mxnet as mx, pytvmbridge as tvm  # doctest: +SKIP
        >>> X = tvm.placeholder((2,), name="X")  # doctest: +SKIP
        >>> Y = tvm.compute((2,), lambda i: X[i] * 2.0, name="Y")  # doctest: +SKIP
        >>> f = to_mxnet(tvm.build(tvm.create_schedule(Y.op), [X, Y]))  # doctest: +SKIP
        >>> f(mx.nd.ones((2,))).asnumpy()  # doctest: +SKIP
        array([2., 2.], dtype=float32)
    """
    return bridge(module, "mxnet")
