"""``@kernel``: a Python function of placeholders, compiled on first call, run on any framework.

The decorated function takes one placeholder per input array and returns the output tensor (or
a tuple of them). Called with arrays of any framework (PyTorch, NumPy, JAX, MXNet, pytvmbridge
NDArrays, anything with ``__dlpack__``), it builds the kernel for those arrays' dtypes and ranks,
caches it, and returns the outputs allocated in the framework of the *first* input (arrays of
several frameworks may be mixed in one call).

Shapes are symbolic: every dimension is a size variable bound at call time, so a call with new
sizes reuses the compiled kernel. The cache key is what changes the generated code: each
input's dtype and number of dimensions, and the layout class, i.e. which dimensions are equal
to which (``A`` of shape ``(n, n)`` and ``B`` of shape ``(n,)`` share one variable ``n``; the
kernel is then known to index them safely together) and which are 1. A dimension of size 1 is
the constant 1, not a variable, as in Inductor's and TVM's dynamic shapes: NumPy broadcasting
(``topi.add`` of ``(n, m)`` and ``(1, m)``) and ``topi.squeeze`` need to know it, so a call with
a batch of 1 and one with a batch of 8 are two variants. Strides need no key of their own: each
build has a compact and a strided variant, picked per call.

Inputs whose sizes differ get separate size variables, so the reads are checked: an input
indexed by an axis (or a constant) must be long enough for that axis, or the call raises
``ValueError`` before anything runs (``A[i] + B[i]`` over ``A.shape`` with a shorter ``B``; a
matrix product whose inner sizes differ). This is checked once per new set of shapes. Reads
through other index expressions (``A[i + 1]``, ``A[2 * i]``) are the function's to keep in
range, as in a loop written in C.

Kernels are scheduled by ``auto_schedule`` unless told otherwise: ``@kernel(schedule=fn)``
schedules the outputs with ``fn(s, *outputs)``, which modifies the naive schedule ``s`` (or
returns a new one); ``@kernel(schedule=None)`` keeps the naive schedule. The cache is safe to
use from several threads: each variant is built once, concurrent callers of a variant being
built wait for it.

Example:
    >>> import numpy as np, torch
    >>> import pytvmbridge as tvm
    >>> @tvm.kernel
    ... def axpy(X, Y):
    ...     return tvm.compute(X.shape, lambda i: 2.0 * X[i] + Y[i], name="Z")
    >>> axpy(torch.ones(3), torch.ones(3))
    tensor([3., 3., 3.])
    >>> axpy(np.ones(5, "float32"), np.zeros(5, "float32"))  # new size, same compiled code
    array([2., 2., 2., 2., 2.], dtype=float32)
    >>> axpy.compilations
    1
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, overload

from . import _core
from ._fork import lock_for
from .autodiff.hooks import route as _autodiff_route
from .error import TVMTypeError, TVMValueError
from .frameworks import framework_of
from .target import target_string

__all__ = ["Kernel", "kernel"]

# The largest int32: inputs with more elements get int64 size variables.
_INT32_MAX = 2**31 - 1
# A dimension of size 1 in a layout class: the constant 1 in the kernel, not a size variable
# (NumPy broadcasting and squeeze need to know it; the C++ call path marks it the same way).
_ONE = -1


class Kernel(_core.Caller):
    """A function of placeholders, compiled per dtype/rank/layout class and cached.

    See the module documentation; made by ``@kernel``. Calling it (``k(*inputs, out=None)``)
    runs in C++ (``_core.Caller``, csrc/python/bind_bridges.cc): the inputs' layout class picks
    the compiled variant, and only a new class comes back to Python, to ``_variant``, to be
    compiled. Returns the outputs in the first input's framework; with ``out=`` (one array, or a
    tuple for several outputs) writes them there and returns ``out``.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> k = tvm.kernel(
        ...     lambda A: tvm.compute((A.shape[1], A.shape[0]), lambda i, j: A[j, i], name="T")
        ... )
        >>> k(np.arange(6, dtype="int32").reshape(2, 3)).tolist()
        [[0, 3], [1, 4], [2, 5]]
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        schedule: Callable[..., Any] | str | None = "auto",
        target: str = "llvm",
        name: str | None = None,
        tune: int = 0,
        tuning_log_file: str | None = None,
    ) -> None:
        if not callable(fn):
            raise TVMTypeError(f"@kernel decorates a function, got {type(fn).__name__}")
        if schedule != "auto" and schedule is not None and not callable(schedule):
            raise TVMTypeError(
                f"schedule must be 'auto', None or a function (s, *outputs), got {schedule!r}"
            )
        if isinstance(tune, bool) or not isinstance(tune, int):
            raise TVMTypeError(
                f"@kernel tune must be a number of trials (an int >= 0), got "
                f"{type(tune).__name__} {tune!r}"
            )
        if tune < 0:
            raise TVMValueError(f"@kernel tune must be a number of trials >= 0, got {tune}")
        if tune and schedule != "auto":
            raise TVMValueError(
                f"@kernel tune={tune} searches the automatic schedule's space, but schedule="
                f"{getattr(schedule, '__name__', schedule)!r} replaces that schedule; use one or "
                "the other"
            )
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.schedule = schedule
        self.target = target_string(target, "@kernel target")
        # Autotuning (pytvmbridge.autotvm.dispatch): trials per new variant, and its log.
        self.tune, self.tuning_log_file = tune, tuning_log_file
        self.name = name or getattr(fn, "__name__", "kernel").replace("<lambda>", "kernel")
        self._arg_names, self._n_in = _parameters(fn)
        self._lock = lock_for(self)
        # layout class -> (compiled Module, the read ranges to check against each call's shapes)
        self._variants: dict[Any, tuple[Any, list[_Read]]] = {}
        self._compilations = 0
        self._kernel(self.name, self._arg_names, -1 if self._n_in is None else self._n_in)

    @property
    def compilations(self) -> int:
        """How many times this kernel has been compiled (once per dtype/rank/layout class)."""
        return self._compilations

    def cache_clear(self) -> None:
        """Forget every compiled variant (the next call compiles again)."""
        with self._lock:
            self._variants.clear()
            self._forget_variants()

    def module_for(self, *inputs: Any) -> Any:
        """The compiled Module that a call with ``inputs`` runs (compiling it if needed).

        Example:
            >>> import numpy as np, pytvmbridge as tvm
            >>> k = tvm.kernel(lambda A: tvm.compute(A.shape, lambda i: A[i] + 1, name="B"))
            >>> k.module_for(np.zeros(4, "int32")).arg_names
            ['A', 'B']
        """
        names = self._arg_names or [f"x{k}" for k in range(len(inputs))]
        specs = []
        for k, x in enumerate(inputs):
            if not hasattr(x, "shape"):  # a capsule or a bare DLPack producer
                x = _core.from_dlpack(x, f"argument {k} ('{names[k]}')")
            fw = framework_of(x)
            specs.append((fw.dtype(x), tuple(int(s) for s in fw.shape(x))))
        module, reads, _ = self._variant(*specs)
        _check_reads(self.name, module, reads, [shape for _, shape in specs])
        return module

    def _variant(self, *specs: tuple[str, tuple[int, ...]]) -> tuple[Any, list[_Read]]:
        """The compiled variant for inputs of these (dtype, shape): found by layout class, or
        built. Called by the C++ call path for a layout class it has not seen."""
        if self._n_in is not None and len(specs) != self._n_in:
            raise TVMTypeError(
                f"kernel '{self.name}' takes {self._n_in} input array(s), got {len(specs)}"
            )
        ids: dict[int, int] = {}
        variant = tuple(
            (dtype, tuple(_ONE if s == 1 else ids.setdefault(s, len(ids)) for s in shape))
            for dtype, shape in specs
        )
        # Inputs of 2**31 elements or more get int64 sizes (see _compile): a variant of its own.
        wide = any(math.prod(shape) > _INT32_MAX for _, shape in specs)
        token, config, exact = _tuned_config(self, specs)  # a tuned schedule, if any
        entry = self._variants.get((variant, wide, token))
        if entry is None:
            with self._lock:
                entry = self._variants.get((variant, wide, token))
                if entry is None:
                    try:
                        entry = self._compile(variant, wide, config)
                    except (TVMValueError, TVMTypeError) as err:
                        _note_sizes(err, self._arg_names, specs)
                        raise
                    self._variants[(variant, wide, token)] = entry
                    self._compilations += 1
        # exact: while tuned schedules may apply, the C++ call path keys this variant by the
        # exact shapes (a tuning record holds for its own shapes, not the whole layout class)
        return entry[0], entry[1], exact

    def _compile(
        self, variant: tuple[tuple[str, tuple[int, ...]], ...], wide: bool, config: Any = None
    ) -> tuple[Any, list[_Read]]:
        # Sizes are int32 (what TVM code expects of index arithmetic) unless an input has 2**31
        # elements or more: then every size is int64, so that products such as the element
        # count of a flattened input cannot overflow. A separate variant, not always int64:
        # int64 index variables would change the dtype of expressions that use an index as a
        # value (A[i] + i).
        size_dtype = "int64" if wide else "int32"
        from . import cache, te
        from .schedule import create_schedule

        names = self._arg_names or [f"x{k}" for k in range(len(variant))]
        size_vars: dict[int, Any] = {}
        placeholders = []
        for k, (dtype, dims) in enumerate(variant):
            shape = []
            for d, v in enumerate(dims):
                if v == _ONE:
                    shape.append(1)
                    continue
                if v not in size_vars:
                    size_vars[v] = te.var(f"{names[k]}_{d}", size_dtype)
                shape.append(size_vars[v])
            placeholders.append(te.placeholder(tuple(shape), dtype=dtype, name=names[k]))
        with _recording_reads(placeholders) as recorded:
            try:
                result = self.fn(*placeholders)
            except TypeError as err:
                dtypes = {p.dtype for p in placeholders}
                if len(dtypes) < 2 or "dtype" not in str(err):
                    raise
                # Arrays of different dtypes met in the body: say which argument is which.
                given = ", ".join(f"{p.name}: {p.dtype}" for p in placeholders)
                raise TVMTypeError(f"kernel '{self.name}': {err} (the arguments: {given})") from err
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        for k, t in enumerate(outputs):
            if not isinstance(t, te.Tensor):
                raise TVMTypeError(
                    f"kernel '{self.name}' must return tensors made with compute(), got "
                    f"{type(t).__name__} as output {k}"
                )
            if any(t == p for p in placeholders):
                raise TVMValueError(
                    f"kernel '{self.name}' returns its input '{t.name}' as output {k}; "
                    "outputs must be computed tensors"
                )
        reads = _read_ranges(recorded, outputs, size_vars, variant)
        # Through the on-disk cache: a build another process made is loaded, not compiled (an
        # automatic schedule is keyed before scheduling, so a hit schedules nothing).
        args = placeholders + outputs
        if isinstance(self.schedule, str):
            if config is not None:
                from .autotvm.dispatch import apply_config

                config = apply_config(outputs, self.target, config)
            return cache.build_auto(args, self.target, self.name, config), reads
        s = create_schedule([t.op for t in outputs])
        if self.schedule is not None:
            _check_schedule_signature(self.schedule, len(outputs))
            scheduled = self.schedule(s, *outputs)
            if scheduled is not None:
                s = scheduled
        return cache.build(s, args, target=self.target, name=self.name), reads

    # Calls stay in C++: the C++ vectorcall runs every call (`k(...)`), never this __call__
    # (_core.Caller keeps the vectorcall for a type whose __call__ carries
    # `_same_as_vectorcall`). torch.compile's tracer (Dynamo) reads __call__ to trace a call:
    # there the call is the kernel's custom op, one node of the graph, so fullgraph=True works.
    def __call__(self, *args: Any, out: Any = None) -> Any:
        """Runs the kernel on ``args`` (exactly as the C++ call does; see the class)."""
        if _torch_compiling():
            return _traced_call(self, args, out)
        return _core.Caller.__call__(self, *args, out=out)

    __call__._same_as_vectorcall = True  # type: ignore[attr-defined]

    # When an argument may need autograd or a JAX trace (a torch tensor that requires grad, a
    # traced tensor, a JAX tracer), the C++ call asks this hook first; NotImplemented means
    # "plain call after all" (e.g. grad mode is off).
    def _autodiff_call(self, args: tuple[Any, ...], out: Any) -> Any:
        route = _autodiff_route(args)
        if route is None:
            return NotImplemented
        return route.call(self, args, {} if out is None else {"out": out})

    def __repr__(self) -> str:
        return f"<pytvmbridge kernel {self.name!r}: {self._compilations} compiled variant(s)>"

    def __reduce__(self) -> Any:
        """Pickled by reference when it is a module's attribute (a decorated function: pickle
        cannot pickle the function itself, whose name now holds the kernel), else as its
        function and options; compiled variants are not carried (the loading process compiles
        on first call, or reads the on-disk cache)."""
        module = sys.modules.get(getattr(self.fn, "__module__", None) or "")
        owner: Any = module
        for part in getattr(self.fn, "__qualname__", "").split("."):
            owner = getattr(owner, part, None)
        if owner is self:
            return self.fn.__qualname__  # pickle stores module + name and looks it up on load
        return (
            Kernel,
            (self.fn, self.schedule, self.target, self.name, self.tune, self.tuning_log_file),
        )


def _tuned_config(kernel: Kernel, specs: Any) -> tuple[str | None, Any, bool]:
    """``autotvm.dispatch.kernel_config``, without importing the tuner when nothing can be tuned
    (no ``tune=``, no log, and no ``apply_history_best`` context, which needs autotvm imported):
    a kernel's first call stays cheap. The third item: whether each shape has its own lookup
    (records from a log or a context apply to their own shapes)."""
    import sys

    if not (kernel.tune or kernel.tuning_log_file or "pytvmbridge.autotvm.record" in sys.modules):
        return None, None, False
    from .autotvm import record
    from .autotvm.dispatch import kernel_config

    token, config = kernel_config(kernel, specs)
    # Records are looked up per shape (a log, an apply_history_best context); tune=N tunes once
    # per layout class, as documented, rather than again for every new size
    exact = (
        kernel.schedule == "auto"
        and not kernel.tune
        and bool(kernel.tuning_log_file or record.current() is not None)
    )
    return token, config, exact


def _torch_compiling() -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def _traced_call(kernel: Kernel, args: tuple[Any, ...], out: Any) -> Any:
    """A call inside torch.compile's trace: the kernel's custom op (forward, fake shapes and
    backward: pytvmbridge/autodiff/torch_autograd.py)."""
    if out is not None:
        raise TVMValueError(
            f"kernel '{kernel.name}': out= cannot be used inside torch.compile (the graph "
            "would not see the write); call it with the inputs only"
        )
    import torch

    from .autodiff.torch_autograd import custom_op_name

    outs = getattr(torch.ops.pytvmbridge, custom_op_name(kernel))(list(args))
    return outs[0] if len(outs) == 1 else tuple(outs)


# --- read ranges -----------------------------------------------------------------------------
# Inputs get one size variable per distinct size, so a function that indexes an input with an
# axis of another size (A[i] + B[i] over A.shape, with B shorter) would read out of range. While
# the function runs, every element read of an input is recorded; a read whose index is an axis
# (or a constant) gives a requirement "input k is at least this long in dimension d", checked
# once per new set of shapes. Reads through other index expressions (i + 1, 2 * i) are not
# checked: the function must keep them in range.

#: (input k, dimension d, axis start, extent: ("size", k2, d2) or ("const", n))
_Read = tuple[int, int, int, tuple[Any, ...]]

_recorders: list[tuple[dict[int, int], list[Any]]] = []
_record_lock = threading.RLock()
_patched: dict[str, Any] = {}


def _stop_recording_in_child() -> None:
    # Forked while another thread ran a kernel's function (holding the lock, with the Tensor
    # methods patched): the child has no such thread, so nothing records.
    global _record_lock
    _record_lock = threading.RLock()
    if _recorders:
        _recorders.clear()
        _core.Tensor.__getitem__ = _patched["getitem"]
        _core.Tensor.__call__ = _patched["call"]


os.register_at_fork(after_in_child=_stop_recording_in_child)


def _record(tensor: Any, indices: tuple[Any, ...]) -> None:
    if _recorders:
        h = hash(tensor.op)
        for positions, reads in _recorders:
            k = positions.get(h)
            if k is not None:
                reads.append((k, indices))


class _recording_reads:
    """Within the block, reads ``placeholders[k][indices]`` are listed as (k, indices)."""

    def __init__(self, placeholders: list[Any]) -> None:
        self.positions = {hash(p.op): k for k, p in enumerate(placeholders)}
        self.reads: list[Any] = []

    def __enter__(self) -> list[Any]:
        _record_lock.acquire()
        if not _recorders:
            tensor = _core.Tensor
            getitem, call = tensor.__getitem__, tensor.__call__
            _patched.update(getitem=getitem, call=call)

            def recording_getitem(self: Any, key: Any) -> Any:
                _record(self, key if isinstance(key, tuple) else (key,))
                return getitem(self, key)

            def recording_call(self: Any, *indices: Any) -> Any:
                _record(self, indices)
                return call(self, *indices)

            tensor.__getitem__ = recording_getitem
            tensor.__call__ = recording_call
        _recorders.append((self.positions, self.reads))
        return self.reads

    def __exit__(self, *exc: object) -> None:
        _recorders.pop()
        if not _recorders:
            _core.Tensor.__getitem__ = _patched["getitem"]
            _core.Tensor.__call__ = _patched["call"]
        _record_lock.release()


def _operations(outputs: list[Any]) -> list[Any]:
    """Every operation the outputs depend on."""
    seen: dict[int, Any] = {}
    stack = [t.op for t in outputs]
    while stack:
        op = stack.pop()
        if hash(op) not in seen:
            seen[hash(op)] = op
            stack.extend(t.op for t in op.input_tensors)
    return list(seen.values())


def _read_ranges(
    recorded: list[Any], outputs: list[Any], size_vars: dict[int, Any], variant: Any
) -> list[_Read]:
    """The requirements on the inputs' sizes that the recorded reads make (see above)."""
    where: dict[int, tuple[int, int, int]] = {}  # size variable -> (id, first input, dimension)
    for k, (_, dims) in enumerate(variant):
        for d, v in enumerate(dims):
            if v != _ONE:
                where.setdefault(hash(size_vars[v]), (v, k, d))
    domains: dict[int, Any] = {}  # an axis (IterVar or its Var) -> its range
    for op in _operations(outputs):
        for iv in [*op.axis, *op.reduce_axis]:
            domains[hash(iv)] = domains[hash(iv.var)] = iv.dom
    requirements: set[_Read] = set()
    for k, indices in recorded:
        for d, index in enumerate(indices):
            if isinstance(index, int) and not isinstance(index, bool):
                requirements.add((k, d, index, ("const", 1)))
                continue
            dom = domains.get(hash(index)) if isinstance(index, _core.Expr) else None
            if dom is None or not isinstance(dom.min, _core.IntImm):
                continue  # an expression: not checked
            extent = dom.extent
            if isinstance(extent, _core.IntImm):
                requirements.add((k, d, dom.min.value, ("const", extent.value)))
            elif hash(extent) in where:
                v, k2, d2 = where[hash(extent)]
                if v != variant[k][1][d] or dom.min.value != 0:  # not the very same size
                    requirements.add((k, d, dom.min.value, ("size", k2, d2)))
    return sorted(requirements, key=repr)


def _check_reads(name: str, module: Any, reads: list[_Read], shapes: list[tuple[int, ...]]) -> None:
    """Raises when the shapes do not fit the read ranges (the C++ call path checks the same)."""
    inputs = [i for i, o in enumerate(module.is_output) if not o]
    for k, d, start, extent in reads:
        count = extent[1] if extent[0] == "const" else shapes[extent[1]][extent[2]]
        if count > 0 and start + count > shapes[k][d]:
            what = f"argument {inputs[k]} ('{module.arg_names[inputs[k]]}')"
            raise TVMValueError(
                f"kernel '{name}' reads {what} up to index {start + count - 1} in dimension {d}, "
                f"but its shape is {tuple(shapes[k])}: the inputs' sizes do not fit what the "
                "function computes"
            )


def _parameters(fn: Callable[..., Any]) -> tuple[list[str] | None, int | None]:
    """The input names and count of ``fn`` (count None when it takes ``*args``)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None, None
    names = []
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            return None, None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            names.append(p.name)
    return names, len(names)


def _note_sizes(
    err: BaseException, arg_names: Sequence[str] | None, specs: Sequence[tuple[str, tuple]]
) -> None:
    """Adds to an error raised while the kernel was traced the sizes its size variables have
    in this call (the kernel is traced with one variable per distinct size, named after the
    first argument and dimension that has it: "shapes (x_0,) and (y_0,) do not broadcast"
    named no size the caller passed)."""
    if not hasattr(err, "add_note"):  # Python 3.10
        return
    names = arg_names or [f"x{k}" for k in range(len(specs))]
    seen: dict[int, str] = {}
    for k, (_, shape) in enumerate(specs):
        for d, size in enumerate(shape):
            if size != 1 and size not in seen:
                seen[size] = f"{names[k]}_{d} = {size}"
    if seen:
        err.add_note(f"(the size variables in this call: {', '.join(seen.values())})")


def _check_schedule_signature(fn: Callable[..., Any], n_outputs: int) -> None:
    """A TypeError naming the calling convention when ``schedule=`` cannot take
    ``(s, *outputs)`` (a one-argument ``fn(s)`` failed inside the user's own frame)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C callable: let the call speak
        return
    try:
        sig.bind(*([None] * (1 + n_outputs)))
    except TypeError as err:
        raise TVMTypeError(
            f"@kernel(schedule=...) is called as schedule(s, *outputs): here with the schedule "
            f"and {n_outputs} output tensor(s), which {getattr(fn, '__name__', fn)!r}"
            f"{sig} cannot take ({err})"
        ) from None


@overload
def kernel(fn: Callable[..., Any]) -> Kernel: ...


@overload
def kernel(
    fn: None = None,
    *,
    schedule: Callable[..., Any] | str | None = "auto",
    target: str = "llvm",
    name: str | None = None,
    tune: int = 0,
    tuning_log_file: str | None = None,
) -> Callable[[Callable[..., Any]], Kernel]: ...


def kernel(
    fn: Callable[..., Any] | None = None,
    *,
    schedule: Callable[..., Any] | str | None = "auto",
    target: str = "llvm",
    name: str | None = None,
    tune: int = 0,
    tuning_log_file: str | None = None,
) -> Kernel | Callable[[Callable[..., Any]], Kernel]:
    """Decorate a function of placeholders returning output tensors; see the module doc.

    ``schedule(s, *outputs)`` modifies the default schedule ``s`` of the outputs (or returns
    another schedule); ``target`` is passed to ``build``. ``tune=N`` tunes each new variant
    for N trials at the first call's shapes (``pytvmbridge.autotvm``; logged to
    ``tuning_log_file`` and resumed from it), and a kernel compiled under
    ``autotvm.apply_history_best(log)`` uses the log's best record for those shapes.

    Example:
        >>> import torch, pytvmbridge as tvm
        >>> def vectorized(s, C):
        ...     xo, xi = s[C].split(C.op.axis[0], factor=8)
        ...     s[C].vectorize(xi)
        >>> @tvm.kernel(schedule=vectorized)
        ... def add(A, B):
        ...     return tvm.compute(A.shape, lambda i: A[i] + B[i], name="C")
        >>> add(torch.arange(10.0), torch.ones(10))[-1].item()
        10.0
    """
    opts = dict(
        schedule=schedule, target=target, name=name, tune=tune, tuning_log_file=tuning_log_file
    )
    if fn is None:
        return lambda f: Kernel(f, **opts)
    return Kernel(fn, **opts)
