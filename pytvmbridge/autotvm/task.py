"""Tuning tasks: one operator workload, the space of its schedules, and how to build a point.

A task is a recipe, not compiled objects: ``func(*args)`` makes the computation afresh (so a
task can be sent to a worker process or a Ray node and rebuilt there). Two kinds:

- ``"auto"``: ``func(*args)`` returns the build arguments (input placeholders, then outputs);
  the space is the automatic scheduler's knobs (``auto_schedule_space``), whose analytical
  point is the default and the reference the candidates' outputs are checked against.
- ``"template"``: an AutoTVM template (``@autotvm.template``): ``func(*args)`` returns
  ``(schedule, build_args)`` and reads its knobs from ``autotvm.get_config()``; the reference
  is the naive schedule of the same computation.

Tasks are keyed by a structural hash of the workload: the naive loop nest of the computation
(names, shapes, dtypes, arithmetic) and the concrete argument shapes it is measured at.

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import autotvm
    >>> def add(n):
    ...     A = tvm.placeholder((n,), name="A")
    ...     return [A, tvm.compute((n,), lambda i: A[i] + 1.0, name="B")]
    >>> task = autotvm.auto_task(add, (1024,))
    >>> task.kind, len(task.workload_key), task.arg_shapes
    ('auto', 16, [((1024,), 'float32'), ((1024,), 'float32')])
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..error import TVMError, TVMTypeError, TVMValueError
from .space import AutoSpace, ConfigEntity, ConfigSpace

__all__ = [
    "Task",
    "auto_task",
    "create",
    "extract_from_kernel",
    "extract_from_tc",
    "get_config",
    "template",
]

_TEMPLATES: dict[str, Callable[..., Any]] = {}
_config_stack = threading.local()


def get_config() -> Any:
    """Inside a template: the configuration being defined (``ConfigSpace``) or applied
    (``ConfigEntity``)."""
    stack = getattr(_config_stack, "items", None)
    if not stack:
        raise TVMError("autotvm.get_config() is only valid inside a template being run")
    return stack[-1]


class _using_config:
    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    def __enter__(self) -> Any:
        if not hasattr(_config_stack, "items"):
            _config_stack.items = []
        _config_stack.items.append(self.cfg)
        return self.cfg

    def __exit__(self, *exc: object) -> None:
        _config_stack.items.pop()


def template(name_or_fn: Any = None) -> Any:
    """Mark a function ``f(*args) -> (schedule, build_args)`` as an AutoTVM template.

    Inside it, ``cfg = autotvm.get_config()`` defines knobs and reads their values. Called
    outside a tuner, the template runs with its default point (every knob's first candidate) or
    the best record of an ``apply_history_best`` context. Usable as ``@template`` or
    ``@template("name")`` (the name is what ``autotvm.task.create`` finds).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import autotvm
        >>> @autotvm.template("doc_scale")
        ... def scale(n):
        ...     A = tvm.placeholder((n,), name="A")
        ...     B = tvm.compute((n,), lambda i: A[i] * 2.0, name="B")
        ...     s = tvm.create_schedule(B.op)
        ...     cfg = autotvm.get_config()
        ...     cfg.define_split("x", B.op.axis[0], num_outputs=2)
        ...     cfg["x"].apply(s, B, B.op.axis[0])
        ...     return s, [A, B]
        >>> task = autotvm.task.create("doc_scale", args=(64,))
        >>> len(task.space)
        7
    """

    def wrap(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            stack = getattr(_config_stack, "items", None)
            if stack:  # inside a tuner: the config it set
                return fn(*args)
            from .record import _current_config

            t = Task(name, fn, args, kind="template")
            chosen = _current_config(t)
            config = chosen if chosen is not None else t.space.default()
            with _using_config(ConfigEntity(t.space, config)):
                return fn(*args)

        run.__name__ = getattr(fn, "__name__", name)
        run.__doc__ = fn.__doc__
        run.template_fn = fn  # type: ignore[attr-defined]
        run.template_name = name  # type: ignore[attr-defined]
        _TEMPLATES[name] = run
        return run

    if callable(name_or_fn):
        return wrap(name_or_fn, getattr(name_or_fn, "__name__", "template"))
    return lambda fn: wrap(fn, name_or_fn or getattr(fn, "__name__", "template"))


class Task:
    """One workload to tune: ``func``, ``args``, its ``space``, and the shapes it is measured at.

    ``arg_shapes`` (optional) gives ``(shape, dtype)`` per build argument; it is required when
    the computation has symbolic sizes (a TC def), and read from the placeholders otherwise.
    """

    def __init__(
        self,
        name: str,
        func: Callable[..., Any],
        args: Sequence[Any] = (),
        target: str = "llvm",
        kind: str = "auto",
        arg_shapes: Sequence[tuple[tuple[int, ...], str]] | None = None,
        flop: float | None = None,
    ) -> None:
        if kind not in ("auto", "template"):
            raise TVMValueError(f"Task kind must be 'auto' or 'template', got {kind!r}")
        if not callable(func):
            raise TVMTypeError(f"Task func must be callable, got {type(func).__name__}")
        self.name = name
        self.func = func
        self.args = tuple(args)
        self.target = str(target)
        self.kind = kind
        self._space: Any = None
        tensors = self._tensors()
        if arg_shapes is None:
            arg_shapes = []
            for t in tensors:
                dims = [getattr(d, "value", d) for d in t.shape]
                if not all(isinstance(d, int) for d in dims):
                    raise TVMValueError(
                        f"task '{name}': argument '{t.name}' has symbolic shape {t.shape}; "
                        "pass arg_shapes=[(shape, dtype), ...] to say what to measure at"
                    )
                arg_shapes.append((tuple(dims), str(t.dtype)))
        self.arg_shapes = [(tuple(int(d) for d in s), str(dt)) for s, dt in arg_shapes]
        if len(self.arg_shapes) != len(tensors):
            raise TVMValueError(
                f"task '{name}': arg_shapes has {len(self.arg_shapes)} entries, the computation "
                f"has {len(tensors)} build arguments"
            )
        self.is_output = [not _is_placeholder(t) for t in tensors]
        self.flop = float(flop) if flop is not None else _count_flop(tensors, self.arg_shapes)
        self.workload_key, self.description = _workload(self, tensors)

    # --- the computation ---
    def _tensors(self) -> list[Any]:
        if self.kind == "auto":
            return list(self.func(*self.args))
        with _using_config(ConfigSpace()):
            _, tensors = _template_result(self.name, self.func(*self.args))
        return tensors

    @property
    def config_space(self) -> Any:
        """TVM's name of ``space``: the knobs' search space (``len(task.config_space)``
        points; printed, the knobs of a template)."""
        return self.space

    @property
    def space(self) -> Any:
        """The search space (built on first use)."""
        if self._space is None:
            if self.kind == "auto":
                self._space = AutoSpace(self._outputs, self.target)
            else:
                cfg = ConfigSpace()
                with _using_config(cfg):
                    self.func(*self.args)
                self._space = cfg
        return self._space

    def _outputs(self) -> list[Any]:
        return [t for t in self.func(*self.args) if not _is_placeholder(t)]

    def instantiate(self, config: Any) -> tuple[Any, list[Any]]:
        """The schedule at ``config`` (``None``: the default point) and the build arguments."""
        from ..autoschedule import auto_schedule
        from ..schedule import create_schedule

        if config is None:
            config = self.space.default()
        if self.kind == "auto":
            tensors = list(self.func(*self.args))
            outs = [t.op for t in tensors if not _is_placeholder(t)]
            s = create_schedule(outs)
            auto_schedule(s, target=self.target, config=config)
            return s, tensors
        with _using_config(ConfigEntity(self.space, config)):
            return _template_result(self.name, self.func(*self.args))

    def reference(self) -> tuple[Any, list[Any]]:
        """The schedule candidates are checked against: the analytical one (auto tasks), the
        naive one (templates)."""
        if self.kind == "auto":
            return self.instantiate(None)
        from ..schedule import create_schedule

        tensors = self._tensors()
        return create_schedule([t.op for t in tensors if not _is_placeholder(t)]), tensors

    def canonical(self, config: Any) -> Any:
        return self.space.canonical(config)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_space"] = None  # rebuilt where needed (it may hold closures over self)
        state.pop("_measure_data", None)
        return state

    def __repr__(self) -> str:
        return f"Task({self.description!r}, kind={self.kind!r}, key={self.workload_key})"


def _template_result(name: str, out: Any) -> tuple[Any, list[Any]]:
    """A template's return value as ``(schedule, build arguments)``, checked: anything else
    failed as "cannot unpack non-iterable int object", naming neither the template nor what
    it should return."""
    from ..schedule import Schedule
    from ..te import Tensor

    if isinstance(out, (tuple, list)) and len(out) == 2:
        s, args = out
        if (
            isinstance(s, Schedule)
            and isinstance(args, (tuple, list))
            and all(isinstance(t, Tensor) for t in args)
        ):
            return s, list(args)
    shown = repr(out)
    if len(shown) > 120:
        shown = shown[:120] + "..."
    raise TVMTypeError(
        f"template '{name}' must return (schedule, build_args): a Schedule and a list of "
        f"tensors, got {type(out).__name__} {shown}"
    )


def _is_placeholder(t: Any) -> bool:
    from ..te import PlaceholderOp

    return isinstance(t.op, PlaceholderOp)


def _workload(task: Task, tensors: list[Any]) -> tuple[str, str]:
    from ..build import lower
    from ..schedule import create_schedule

    naive = create_schedule([t.op for t in tensors if not _is_placeholder(t)])
    text = str(lower(naive, tensors, simple_mode=True))
    h = hashlib.sha256()
    h.update(task.kind.encode())
    h.update(text.encode())
    h.update(repr(task.arg_shapes).encode())
    shapes = ", ".join(f"{list(s)}:{d}" for s, d in task.arg_shapes)
    return h.hexdigest()[:16], f"{task.name}({shapes})"


def _count_flop(tensors: list[Any], arg_shapes: Sequence[tuple[tuple[int, ...], str]]) -> float:
    """Floating-point operations of one run, roughly: per element of every stage (the
    intermediate ones a fused graph task computes too, not only its outputs), one per
    reduction iteration times 2 (a multiply-add) or 1 for a stage without reduction. Symbolic
    sizes (a TC def's) take the values of ``arg_shapes``, the sizes the task is measured at."""
    from .. import _core
    from ..te import PlaceholderOp

    binding: dict[str, int] = {}
    pairs = []
    for t, (shape, _) in zip(tensors, arg_shapes, strict=False):
        for d, n in zip(t.shape, shape, strict=False):
            if isinstance(d, _core.Var) and d.name not in binding:
                binding[d.name] = int(n)
                pairs.append((d, int(n)))

    def size(e: Any) -> int:
        value = getattr(e, "value", None)
        if value is None and pairs:
            value = getattr(_core.simplify(_core.substitute(e, pairs)), "value", None)
        return int(value) if value is not None else 1

    total = 0.0
    seen: set[Any] = set()
    stack = [t.op for t in tensors if not _is_placeholder(t)]
    while stack:
        op = stack.pop()
        if op in seen or isinstance(op, PlaceholderOp) or not hasattr(op, "reduce_axis"):
            continue
        seen.add(op)
        stack.extend(t.op for t in op.input_tensors)
        out = math.prod(size(d) for d in op.output(0).shape)
        red = math.prod(size(iv.dom.extent) for iv in op.reduce_axis)
        total += out * red * (2 if len(op.reduce_axis) else 1)
    return float(total)


# --- making tasks ------------------------------------------------------------------------------


def auto_task(
    func: Callable[..., Any],
    args: Sequence[Any] = (),
    target: str = "llvm",
    name: str | None = None,
    **kwargs: Any,
) -> Task:
    """A task over the automatic scheduler's knobs: ``func(*args)`` returns the build
    arguments (placeholders then outputs).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import autotvm
        >>> def square(n):
        ...     A = tvm.placeholder((n, n), name="A")
        ...     return [A, tvm.compute((n, n), lambda i, j: A[i, j] * A[i, j], name="S")]
        >>> "S/vectorize" in autotvm.auto_task(square, (64,)).space.knobs
        True
    """
    import inspect

    from ..kernel import Kernel

    name = name or getattr(func, "__name__", "task")
    if isinstance(func, Kernel):
        raise TVMTypeError(
            f"auto_task takes a function returning build arguments; for the @kernel "
            f"'{func.name}' use autotvm.extract_tasks({func.name}, *example_inputs)"
        )
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin or C function: called as is
        signature = None
    if signature is not None:
        try:
            signature.bind(*args)
        except TypeError as err:
            raise TVMTypeError(
                f"auto_task: {name}{signature} cannot take the {len(args)} argument(s) given "
                f"({err})"
            ) from None
    return Task(name, func, args, target, "auto", **kwargs)


def create(
    func_or_name: Any, args: Sequence[Any] = (), target: str = "llvm", **kwargs: Any
) -> Task:
    """AutoTVM's ``autotvm.task.create(template, args, target)``: a task of a template (by
    name or the decorated function)."""
    if isinstance(func_or_name, str):
        if func_or_name not in _TEMPLATES:
            raise TVMValueError(
                f"no template named {func_or_name!r}; known: {sorted(_TEMPLATES)} "
                "(decorate it with @autotvm.template)"
            )
        func_or_name = _TEMPLATES[func_or_name]
    fn = getattr(func_or_name, "template_fn", None)
    if fn is None:
        raise TVMTypeError(
            "autotvm.task.create takes a template (a function decorated with "
            f"@autotvm.template, or its name), got {func_or_name!r}"
        )
    return Task(func_or_name.template_name, fn, args, target, "template", **kwargs)


class _KernelRecipe:
    """``kernel.fn`` at concrete input shapes: the build arguments of one call."""

    def __init__(self, fn: Callable[..., Any], names: list[str]) -> None:
        self.fn, self.names = fn, names

    def __call__(self, *specs: tuple[tuple[int, ...], str]) -> list[Any]:
        from .. import te

        inputs = [
            te.placeholder(shape, dtype=dtype, name=self.names[k])
            for k, (shape, dtype) in enumerate(specs)
        ]
        result = self.fn(*inputs)
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        return inputs + outs


def kernel_task(kernel: Any, specs: Sequence[tuple[Sequence[int], str]]) -> Task:
    """The task of a ``@kernel`` called with inputs of these ``(shape, dtype)``."""
    specs = tuple((tuple(int(d) for d in s), str(dt)) for s, dt in specs)
    n_in = getattr(kernel, "_n_in", None)  # None: the kernel takes *args
    if n_in is not None and len(specs) != n_in:
        # the kernel's own call says the same ("takes N input array(s)"); without this the
        # placeholders' names ran out first (a bare IndexError)
        raise TVMTypeError(
            f"kernel '{kernel.name}' takes {n_in} input array(s), got {len(specs)} example "
            "input(s) to tune it with"
        )
    names = kernel._arg_names or [f"x{k}" for k in range(len(specs))]
    recipe = _KernelRecipe(kernel.fn, list(names))
    return Task(kernel.name, recipe, specs, kernel.target, "auto")


def _specs(inputs: Sequence[Any]) -> list[tuple[tuple[int, ...], str]]:
    from ..frameworks import framework_of

    out = []
    for x in inputs:
        fw = framework_of(x)
        out.append((tuple(int(s) for s in fw.shape(x)), str(fw.dtype(x))))
    return out


def extract_from_kernel(kernel: Any, *example_inputs: Any) -> list[Task]:
    """The task of a ``@kernel`` at the shapes and dtypes of ``example_inputs``.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> from pytvmbridge import autotvm
        >>> @tvm.kernel
        ... def double(A):
        ...     return tvm.compute(A.shape, lambda i: A[i] * 2.0, name="B")
        >>> [t.description for t in autotvm.extract_from_kernel(double, np.ones(256, "float32"))]
        ['double([256]:float32, [256]:float32)']
    """
    return [kernel_task(kernel, _specs(example_inputs))]


class _TcRecipe:
    def __init__(self, source: str, name: str) -> None:
        self.source, self.name = source, name

    def __call__(self) -> list[Any]:
        from .. import tc

        fn = tc.define(self.source, name=self.name)
        return fn.inputs + fn.outputs


def extract_from_tc(tc_fn: Any, *example_inputs: Any, source: str | None = None) -> list[Task]:
    """The task of a TC def at the sizes of ``example_inputs`` (the def's sizes stay symbolic;
    the candidates are measured at these)."""
    import numpy as np

    source = source or getattr(tc_fn, "_source", None)
    if source is None:
        raise TVMValueError(
            f"TC def '{tc_fn.name}': its source is not known; pass source= (the TC text)"
        )
    arrays = [np.asarray(x) if not hasattr(x, "numpy") else x for x in example_inputs]
    outs = tc_fn(*arrays)
    outs = outs if isinstance(outs, tuple) else (outs,)
    specs = _specs(list(example_inputs) + list(outs))
    return [
        Task(tc_fn.name, _TcRecipe(source, tc_fn.name), (), tc_fn.target, "auto", arg_shapes=specs)
    ]
