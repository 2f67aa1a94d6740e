"""Tensor Comprehensions: kernels written in TC's Einstein notation, run on any framework's arrays.

``define(lang)`` parses TC source, checks it and translates every ``def`` into the same tensor
expressions the Python DSL builds, so schedules and code generation are shared. Calling the
result with arrays of any framework (PyTorch, NumPy, JAX, MXNet, anything with ``__dlpack__``)
infers the output shapes from the input sizes, allocates the outputs in the framework of the
first input and returns them (one array, or a tuple for several outputs)::

    def matmul(float(M, K) A, float(K, N) B) -> (C) {
        C(m, n) +=! A(m, r_k) * B(r_k, n)
    }

The language:

* Types ``bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 bfloat16 float32
  float64``, and ``float``/``double`` for float32/float64. A size in a signature is a name (the
  same name in two inputs means the same size, checked at call time) or an integer.
* Statements ``O(i, j) op expr``, with ``op`` one of ``=``, ``+=!``, ``*=!``, ``min=!``,
  ``max=!`` (initialise the output to the operator's identity, then reduce over the indices that
  appear on the right only) and ``+= *= min= max=`` (accumulate into the values that earlier
  statements wrote; on an output's first write, where TC's outputs are freshly allocated, they
  are the same as the ``!`` forms).
* ``where i in lo:hi`` gives a range, overriding inference; ``where x = expr`` is a binding
  substituted where ``x`` is used; ``where exists T(i, k)`` constrains inference as the read
  ``T(i, k)`` would, without reading anything.
* Gather indexing: a tensor index may read another tensor (``O(i) = T(I(i))``,
  ``O(b, d) = W(I(b), d)``, ``B(C(i) + 1)``). Such an index constrains no range (the index
  tensor's own reads do); its value, of any integer dtype, is clamped into the dimension it
  indexes, so an id out of range reads the first or last element instead of outside the
  tensor (PyTorch's ``embedding`` would raise). Gathering from an empty dimension raises
  ``ValueError`` at call time.
* Expressions: ``+ - * /`` (integer ``/`` rounds down), unary ``-``, ``!``, comparisons, ``&&``,
  ``||``, ``c ? a : b``, ``T.k`` (the size of dimension ``k`` of tensor ``T``), the sizes of the
  signature by name, integer and float literals, conversions ``float32(x)``, and the 64
  builtins TC documents (CUDA's math functions: ``exp log tanh sqrt rsqrt erf floor ceil fmax
  fmin pow fabs cos sin log2 log1p exp2 round trunc fmod erfinv normcdf hypot norm3d ...``, the
  same as the te functions of those names; ``round`` rounds halves away from zero, as in CUDA)
  plus ``abs sigmoid`` (``max``/``min`` are aliases of ``fmax``/``fmin``). ``#`` starts a
  comment.
* Literals adopt the dtype of the tensor values they meet (``A(i) * 2`` is float64 for a
  float64 ``A``); tensor values of different dtypes never mix without a conversion.

Range inference gives each index variable the largest range that keeps every read in bounds;
indices must be affine (``2 * h + kh``) or gathered. An output's shape follows from the ranges
of its first write. Statements run in order; an output written by several statements is
updated in place and later statements read its newest values; elements that no statement
writes are 0. Reads made out of bounds by ``where`` clauses are refused with a ValueError
before the kernel runs.

Each def compiles on its own: in a source with several, a def with an error (or using a
feature this front end lacks) raises its ``TCError`` when it is used (``lib.bad``) and is
listed in ``lib.errors``; the other defs work. Errors outside any def (no def at all, a name
defined twice, a character the lexer rejects) still fail ``define``.

Every error in the source is a ``TCError`` (a ``ValueError``) with ``line``, ``column``, the
message and the source line with a caret under the offending token. Inputs whose sizes disagree
raise ``ValueError`` naming the size variable; a wrong dtype raises ``TypeError``.

Compilation happens once per def, on its first call: the dtypes are fixed by the signature and
the sizes are symbolic, so every later call (whatever the shapes) reuses the compiled kernel.

Example:
    >>> import numpy as np
    >>> from pytvmbridge import tc
    >>> matmul = tc.define('''
    ...     def matmul(float(M, K) A, float(K, N) B) -> (C) {
    ...         C(m, n) +=! A(m, r_k) * B(r_k, n)
    ...     }''')
    >>> a = np.ones((2, 3), "float32"); b = np.ones((3, 4), "float32")
    >>> matmul(a, b)
    array([[3., 3., 3., 3.],
           [3., 3., 3., 3.]], dtype=float32)
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Iterator
from typing import Any

from . import _core, frameworks
from ._fork import lock_for
from .autodiff.hooks import route as _autodiff_route
from .bridges import Signature, call_allocating, call_inplace
from .error import TVMTypeError, TVMValueError
from .target import target_string
from .tc_options import (
    MappingOptions,
    Options,
    TunerConfig,
    _input_specs,
    assert_almost_equal,
    autotune,
    make_autotuned_options_factory,
    make_load_from_cache_options_factory,
    make_naive_options_factory,
    warn_no_tuner,
)

__all__ = [
    "MappingOptions",
    "Options",
    "TCError",
    "TcDefs",
    "TcFunction",
    "TunerConfig",
    "assert_almost_equal",
    "autotune",
    "compile",
    "define",
    "make_autograd",
    "make_autotuned_options_factory",
    "make_load_from_cache_options_factory",
    "make_naive_options_factory",
]

#: The error raised for TC source that does not parse or check: a ``ValueError`` with the
#: attributes ``line``, ``column`` (1-based), ``message`` and ``source_line``.
TCError = _core.TCError

# Input signatures (dtype and shape per input) remembered as checked, per def, before the table
# is emptied: the check is cheap, this only spares repeating it for every call.
_CHECKED_LIMIT = 4096

# Sizes and loop indices are int32 (TC's convention); an input with a larger dimension is run by
# a variant of the def translated with int64 sizes and indices (compiled on first need).
_INT32_MAX = 2**31 - 1


def _history_active() -> bool:
    """Whether an ``autotvm.apply_history_best`` context is active on this thread (without
    importing the tuner when no one has)."""
    rec = sys.modules.get("pytvmbridge.autotvm.record")
    return rec is not None and rec.current() is not None


# The type of a DLPack capsule (datetime's C API is one: Python 3.11 has no types.CapsuleType).
_CAPSULE = type(datetime.datetime_CAPI)


class TcFunction:
    """One TC ``def``, callable with arrays of any framework; made by ``define``.

    Example:
        >>> import torch
        >>> from pytvmbridge import tc
        >>> relu = tc.define("def relu(float(N) I) -> (O) { O(i) = fmax(I(i), 0) }")
        >>> relu(torch.tensor([-1.0, 2.0]))
        tensor([0., 2.])
        >>> relu.name, relu.input_names, relu.output_names
        ('relu', ['I'], ['O'])
    """

    def __init__(self, fn: Any, target: str = "llvm", schedule: Any = "auto") -> None:
        self._fn = fn
        self.target = target_string(target, "TC target")
        self.schedule = schedule
        self._sig: Signature | None = None
        self._lock = lock_for(self)
        # Input (dtype, shape) keys already checked -> whether they need the int64 variant.
        self._checked: dict[Any, bool] = {}
        self._wide: TcFunction | None = None
        self._is_wide = False  # True for the int64 variant itself
        # Tuned builds (TC's options=, an options factory, apply_history_best): config -> Signature
        self._tuned: dict[str, Signature] = {}
        self._factory: Any = None  # define(lang, options_factory)
        self._factory_options: dict[Any, Any] = {}  # input specs -> the factory's options

    @property
    def name(self) -> str:
        """The name of the def."""
        return str(self._fn.name)

    @property
    def signature(self) -> str:
        """The def's signature as text, e.g. ``'relu(float32(N) I) -> (O)'``."""
        return str(self._fn.signature)

    @property
    def input_names(self) -> list[str]:
        """The names of the inputs, in order."""
        return list(self._fn.input_names)

    @property
    def output_names(self) -> list[str]:
        """The names of the outputs, in order."""
        return list(self._fn.output_names)

    @property
    def inputs(self) -> list[Any]:
        """The input placeholders (tensor expressions), in order."""
        return list(self._fn.inputs)

    @property
    def outputs(self) -> list[Any]:
        """The output tensors (the last stage written for each output), in order."""
        return list(self._fn.outputs)

    def create_schedule(self) -> Any:
        """A default (naive) schedule of the outputs, to transform before ``build``.

        Example:
            >>> from pytvmbridge import tc
            >>> f = tc.define("def f(float(N) A) -> (B) { B(i) = A(i) * 2 }")
            >>> s = f.create_schedule()
            >>> outer, inner = s[f.outputs[0]].split(s[f.outputs[0]].op.axis[0], factor=4)
        """
        from .schedule import create_schedule

        return create_schedule([t.op for t in self.outputs])

    def build(self, schedule: Any = None) -> Any:
        """Compile (with ``schedule``, or the def's own: automatic unless ``define`` was given
        ``schedule=``) into a ``Module`` taking the inputs then the outputs; later calls of this
        object run it.

        Example:
            >>> from pytvmbridge import tc
            >>> f = tc.define("def f(float(N) A) -> (B) { B(i) = A(i) * 2 }")
            >>> f.build().arg_names
            ['A', 'B']
        """
        sig = Signature(self._compile(schedule))
        with self._lock:
            self._sig = sig
        return sig.module

    def _compile(self, schedule: Any = None) -> Any:
        from . import cache  # the on-disk compile cache: another process's build is loaded

        args = self.inputs + self.outputs
        if schedule is None and isinstance(self.schedule, str):  # keyed before scheduling
            return cache.build_auto(args, target=self.target, name=self.name)
        s = schedule if schedule is not None else self._default_schedule()
        return cache.build(s, args, target=self.target, name=self.name)

    def _default_schedule(self) -> Any:
        """The schedule ``define(schedule=...)`` asked for: automatic, naive (None), or a
        function ``fn(s, *outputs)`` that modifies the naive one or returns another."""
        from .autoschedule import auto_schedule

        s = self.create_schedule()
        if isinstance(self.schedule, str):
            return auto_schedule(s, target=self.target)
        if self.schedule is not None:
            scheduled = self.schedule(s, *self.outputs)
            if scheduled is not None:
                s = scheduled
        return s

    @property
    def module(self) -> Any:
        """The compiled Module (compiled on first use)."""
        return self._signature().module

    def _signature(self) -> Signature:
        """The compiled kernel: built once, on first use; concurrent first callers wait."""
        sig = self._sig
        if sig is None:
            with self._lock:
                if self._sig is None:
                    self._sig = Signature(self._compile())
                sig = self._sig
        return sig

    def _check(self, inputs: tuple[Any, ...], key: Any) -> bool:
        """The TC-level checks of a call: sizes against the signature, reads in bounds. True
        when an input has a dimension past int32: the int64 variant (``_wide_variant``) runs
        the call and makes the checks. ``key``: the inputs' (dtype, shape) pairs, which cache
        the outcome (None: not cached)."""
        if key is not None:
            wide = self._checked.get(key)
            if wide is not None:
                return wide
        if len(inputs) != len(self._fn.input_names):
            names = ", ".join(self._fn.input_names)
            raise TVMTypeError(
                f"{self.name}() takes {len(self._fn.input_names)} input(s) ({names}), "
                f"got {len(inputs)}"
            )
        shapes, dtypes = [], []
        for k, x in enumerate(inputs):
            try:
                fw = frameworks.framework_of(x)
            except TypeError as err:
                raise TVMTypeError(f"input {k} ('{self._fn.input_names[k]}'): {err}") from None
            shapes.append(list(fw.shape(x)))
            dtypes.append(fw.dtype(x))
        wide = not self._is_wide and any(d > _INT32_MAX for shape in shapes for d in shape)
        if not wide:
            self._fn.prepare(shapes, dtypes)
        if key is not None:
            if len(self._checked) >= _CHECKED_LIMIT:
                self._checked.clear()
            self._checked[key] = wide
        return wide

    def _wide_variant(self) -> TcFunction:
        """This def translated with int64 sizes and loop indices, for inputs with a dimension
        of 2**31 or more (int32 ones would wrap); made on first need, with the same schedule.

        Example:
            >>> from pytvmbridge import tc
            >>> f = tc.define("def f(float(N) A) -> (B) { B(i) = A(i) * 2 }")
            >>> f._wide_variant().inputs[0].shape[0].dtype
            'int64'
        """
        with self._lock:
            if self._wide is None:
                (_, fn), *_ = (
                    e
                    for e in _core.tc_compile_defs(self._source, index_bits=64)
                    if e[0] == self.name
                )
                self._wide = TcFunction(fn, self.target, self.schedule)
                self._wide._source = self._source
                self._wide._is_wide = True
            return self._wide

    def __call__(self, *inputs: Any, out: Any = None, **tc_options: Any) -> Any:
        """Run on ``inputs``; returns the outputs, allocated in the first input's framework
        (NumPy for a def without inputs): one array, or a tuple for several outputs.

        With ``out=`` (one array, or a tuple for several outputs; ``outputs=`` is TC's name)
        the outputs are written there and ``out`` is returned. TC's ``options=`` builds the def
        with the configuration ``tc.autotune`` put in them (other options have no effect on
        the CPU); ``cache=`` and ``unchecked=`` are accepted and do nothing.
        """
        options = None
        if tc_options:
            options = tc_options.get("options")
            out = _tc_call_options(self.name, out, tc_options)
        try:  # the checks' cache key (arrays of every framework have dtype and shape)
            key = tuple([(x.dtype, x.shape) for x in inputs])
        except AttributeError:
            key = None
            if _CAPSULE in map(type, inputs):
                # A DLPack capsule can be read once only: viewed as an NDArray for the checks
                # and the call alike.
                from . import nd

                inputs = tuple(nd.from_dlpack(x) if type(x) is _CAPSULE else x for x in inputs)
        if out is None and (route := _autodiff_route(inputs)) is not None:
            return route.call(self, inputs, {})  # autograd / JAX trace (pytvmbridge/autodiff/)
        if self._check(inputs, key):
            return self._wide_variant()(*inputs, out=out)
        sig = None
        if options is not None or self._factory is not None or _history_active():
            sig = self._tuned_signature(inputs, options)
        if sig is None:
            sig = self._signature()
        if out is None:
            fw = frameworks.framework_of(inputs[0]) if inputs else frameworks.get("numpy")
            return call_allocating(sig, fw, inputs)
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(outs) != len(sig.outputs):
            raise TVMTypeError(f"{self.name}() has {len(sig.outputs)} output(s), got {len(outs)}")
        call_inplace(sig, inputs + outs)
        return out

    def _tuned_signature(self, inputs: tuple[Any, ...], options: Any) -> Signature | None:
        """The build a call runs when a tuned configuration applies to it: the one ``options``
        carry (``tc.autotune``'s), else the options factory's for these sizes, else the active
        ``apply_history_best`` context's record; ``None`` for the def's own build."""
        config = options.config_for(self) if isinstance(options, MappingOptions) else None
        specs = None
        if config is None and self._factory is not None:
            specs = _input_specs(inputs)
            if specs not in self._factory_options:
                made = self._factory(self._source, self.name, *inputs)
                self._factory_options[specs] = made
            made = self._factory_options[specs]
            config = made.config_for(self) if isinstance(made, MappingOptions) else None
        if config is None and _history_active():
            from .autotvm.dispatch import tc_history_config

            config = tc_history_config(self, specs or _input_specs(inputs))
        if config is None:
            return None
        key = json.dumps(config, sort_keys=True)
        sig = self._tuned.get(key)
        if sig is None:
            from .autotvm.dispatch import tc_schedule

            with self._lock:
                sig = self._tuned.get(key)
                if sig is None:
                    sig = self._tuned[key] = Signature(self._compile(tc_schedule(self, config)))
        return sig

    def autotune(self, *inputs: Any, **kwargs: Any) -> TcFunction:
        """TC v0.1.1's ``f.autotune(*inputs, ...)``: tunes the def at these inputs' sizes with
        ``pytvmbridge.autotvm`` (``n_trial=``, or ``generations * pop_size``; ``cache=`` a log
        file) and rebuilds it with the best schedule found; returns the definition (calls
        accept it as ``options=``). Without inputs there is nothing to measure: it warns.

        Example:
            >>> import warnings
            >>> from pytvmbridge import tc
            >>> f = tc.define("def f(float(N) A) -> (B) { B(i) = A(i) }")
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore")
            ...     f.autotune(cache=True) is f
            True
        """
        if not inputs:
            warn_no_tuner(self.name)
            return self
        from .autotvm.dispatch import tc_autotune

        return tc_autotune(self, *inputs, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # TC's later API reaches every def as an attribute (T.matmul), one-def sources too.
        fn = self.__dict__.get("_fn")
        if fn is not None and name == str(fn.name):
            return self
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"<tc.TcFunction {self.signature}>"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its source and options, defined again when loaded (compiled code is not
        carried: the loading process compiles on first call, or reads the on-disk cache), so
        ``torch.save`` of a model holding a def works."""
        source = self.__dict__.get("_source")
        if source is None:
            raise TVMTypeError("this TcFunction was not made by tc.define and cannot be pickled")
        return _redefine, (source, self.name, self.target, self.schedule, self._factory)


class TcDefs:
    """The defs of a TC source with several of them: one attribute per def (also ``defs[name]``).

    Example:
        >>> from pytvmbridge import tc
        >>> lib = tc.define('''
        ...     def twice(float(N) A) -> (B) { B(i) = 2 * A(i) }
        ...     def square(float(N) A) -> (B) { B(i) = A(i) * A(i) }
        ... ''')
        >>> lib.names
        ['twice', 'square']
        >>> import numpy as np
        >>> lib.square(np.arange(3, dtype="float32"))
        array([0., 1., 4.], dtype=float32)
    """

    def __init__(
        self, functions: list[TcFunction], errors: dict[str, Exception] | None = None
    ) -> None:
        self._functions = {f.name: f for f in functions}
        self._errors = dict(errors or {})
        self._order = [*self._functions, *self._errors]

    @property
    def names(self) -> list[str]:
        """The names of the defs that compiled, in source order."""
        return list(self._functions)

    @property
    def errors(self) -> dict[str, Exception]:
        """The defs that did not compile, each with its ``TCError``; using one raises it."""
        return dict(self._errors)

    def __getattr__(self, name: str) -> TcFunction:
        try:
            return self.__dict__["_functions"][name]
        except KeyError:
            err = self.__dict__.get("_errors", {}).get(name)
            if err is not None:
                raise _def_error(name, err) from None
            raise AttributeError(
                f"the TC source has no def named {name!r}; it defines "
                f"{', '.join(self.__dict__.get('_functions', {}))}"
            ) from None

    def __getitem__(self, name: str) -> TcFunction:
        # Not getattr: a def may be named like a property of this class (names, errors).
        if not isinstance(name, str):
            raise TVMTypeError(f"TC defs are looked up by name (a str), got {type(name).__name__}")
        try:
            return self.__getattr__(name)
        except AttributeError as err:
            raise KeyError(str(err)) from None

    def __iter__(self) -> Iterator[TcFunction]:
        return iter(self._functions.values())

    def __len__(self) -> int:
        return len(self._functions)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self._functions]

    def __repr__(self) -> str:
        return f"<tc.TcDefs {', '.join(self._functions)}>"


def define(
    lang: str | bytes,
    name: Any = None,
    constants: dict[str, Any] | None = None,
    target: str = "llvm",
    schedule: Any = "auto",
    **tc_options: Any,
) -> Any:
    """Parse and check TC source; returns a ``TcFunction`` when it has one def (or ``name``
    picks one), else a ``TcDefs`` with an attribute per def.

    Each def is compiled with ``auto_schedule`` unless ``schedule`` says otherwise: ``None``
    for the naive schedule, or a function ``fn(s, *outputs)`` that schedules the naive one.

    Raises ``TCError`` (a ``ValueError``) with the line, column and a caret for any error in
    the source, and ``ValueError`` when ``name`` is not one of its defs.

    Example:
        >>> from pytvmbridge import tc
        >>> try:
        ...     tc.define("def f(float(N, M) A) -> (B) { B(i) = A(i, j) }")
        ... except tc.TCError as err:
        ...     print(err.line, err.column, err.message[:41])
        1 43 'j' is not an index of the left-hand side
    """
    lang, name, factory = _tc_define_forms(lang, name, constants, tc_options)
    if isinstance(lang, str):
        # surrogatepass: any str reaches the lexer, which reports bad characters as TCError.
        source = lang.encode("utf-8", "surrogatepass")
    elif isinstance(lang, (bytes, bytearray)):
        source = bytes(lang)
    else:
        raise TVMTypeError(f"define() takes TC source as a str, got {type(lang).__name__}")
    if schedule != "auto" and schedule is not None and not callable(schedule):
        raise TVMTypeError(
            f"define() schedule must be 'auto', None or a function (s, *outputs), got {schedule!r}"
        )
    # Each def compiles on its own: one that fails (a feature this front end lacks) raises its
    # TCError when it is used, and the others stay usable.
    entries = _core.tc_compile_defs(source)
    functions = [
        TcFunction(v, target, schedule) for _, v in entries if not isinstance(v, BaseException)
    ]
    for f in functions:  # the text autotvm rebuilds a def from (in tuning workers)
        f._source = source.decode("utf-8", "surrogatepass")
        f._factory = factory
    errors = {n: v for n, v in entries if isinstance(v, BaseException)}
    if name is not None:
        if name in errors:
            raise _def_error(name, errors[name])
        for f in functions:
            if f.name == name:
                return f
        raise TVMValueError(
            f"the TC source has no def named {name!r}; it defines "
            f"{', '.join(n for n, _ in entries)}"
        )
    if len(entries) == 1:
        if errors:
            raise _def_error(entries[0][0], errors[entries[0][0]])
        return functions[0]
    return TcDefs(functions, errors)


def _redefine(source: str, name: str, target: str, schedule: Any, factory: Any) -> TcFunction:
    """The def ``name`` of ``source`` again (unpickling a :class:`TcFunction`)."""
    f = define(source, name=name, target=target, schedule=schedule)
    f._factory = factory
    return f


def _def_error(name: str, err: Any) -> Exception:
    """A fresh copy of the TCError that stopped def ``name`` (each raise gets its own
    traceback)."""
    copy = TCError(str(err))
    for attr in ("line", "column", "message", "source_line"):
        setattr(copy, attr, getattr(err, attr))
    return copy


class _AutogradFunction:
    """The callable ``make_autograd`` returns: ``forward`` with ``backward`` as its gradient."""

    def __init__(self, forward: Any, backward: Any) -> None:
        self.forward = forward
        self.backward = backward

    def __call__(self, *inputs: Any) -> Any:
        from .autodiff.torch_autograd import _as_tensor

        # arrays of other frameworks (a NumPy array beside a tensor that requires grad) are
        # read as torch tensors, as a differentiable kernel call reads them
        inputs = tuple(_as_tensor(self.forward, k, x) for k, x in enumerate(inputs))
        return _autograd_function().apply(self.forward, self.backward, *inputs)


_AUTOGRAD_CLASS: Any = None


def _autograd_function() -> Any:
    """The torch.autograd.Function behind make_autograd (built on first use: importing torch
    is slow and only needed here)."""
    global _AUTOGRAD_CLASS
    if _AUTOGRAD_CLASS is None:
        import torch

        class TcAutogradFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, forward: Any, backward: Any, *inputs: Any) -> Any:
                ctx.backward_fn = backward
                ctx.save_for_backward(*inputs)
                out = forward(*inputs)
                return tuple(out) if isinstance(out, list) else out

            @staticmethod
            def backward(ctx: Any, *grads: Any) -> Any:
                inputs = ctx.saved_tensors
                # The gradient PyTorch passes is often an expanded (zero-stride) view of a
                # scalar; a compact copy lets the kernel take its contiguous fast path.
                g = ctx.backward_fn(*inputs, *(x.contiguous() for x in grads))
                g = tuple(g) if isinstance(g, (tuple, list)) else (g,)
                if len(g) != len(inputs):
                    raise TVMValueError(
                        f"the backward function returned {len(g)} gradient(s) for "
                        f"{len(inputs)} input(s); return one per input (None for none)"
                    )
                return (None, None, *g)

        _AUTOGRAD_CLASS = TcAutogradFunction
    return _AUTOGRAD_CLASS


def make_autograd(forward: Any, backward: Any) -> Any:
    """A differentiable PyTorch function from a forward TC def and a hand-written backward, as
    TC's ``make_autograd``: ``backward`` is called with the forward's inputs followed by the
    gradients of its outputs, and returns one gradient per input (``None`` for an input that
    needs none). Both are any callables taking and returning torch tensors, usually TC defs.

    Example:
        >>> import torch
        >>> from pytvmbridge import tc
        >>> T = tc.define('''
        ...     def scale(double(N) X, double(N) W) -> (Y) { Y(i) = X(i) * W(i) }
        ...     def scale_grad(double(N) X, double(N) W, double(N) dY) -> (dX, dW) {
        ...         dX(i) = dY(i) * W(i)
        ...         dW(i) = dY(i) * X(i)
        ...     }''')
        >>> f = tc.make_autograd(T.scale, T.scale_grad)
        >>> x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        >>> w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
        >>> f(x, w).sum().backward()
        >>> x.grad, w.grad
        (tensor([3., 4.], dtype=torch.float64), tensor([1., 2.], dtype=torch.float64))
    """
    if not callable(forward) or not callable(backward):
        raise TVMTypeError(
            "make_autograd(forward, backward) takes two callables (TC defs or functions), got "
            f"{type(forward).__name__} and {type(backward).__name__}"
        )
    return _AutogradFunction(forward, backward)


# ---- TC's own calling forms (TC v0.1.1 and its later Python API) ----

_IGNORED_DEFINE_OPTIONS = ("training", "backward", "inject_kernel", "cuda_code")
_IGNORED_CALL_OPTIONS = ("options", "cache", "unchecked", "reorder_function")


def _tc_define_forms(
    lang: Any, name: Any, constants: dict[str, Any] | None, tc_options: dict[str, Any]
) -> tuple[Any, str | None, Any]:
    """TC's define() arguments as pytvmbridge's: an options factory (or options) as the second
    argument is accepted for TC's later API (``define(lang, make_naive_options_factory())``;
    returned third, as a factory, which each new input size is built with), and ``constants``
    are substituted into the source with ``str.format`` as TC v0.1.1 did
    (so the source writes ``{sH}`` for a constant and ``{{``/``}}`` for braces)."""
    unknown = [k for k in tc_options if k not in _IGNORED_DEFINE_OPTIONS]
    if unknown:
        raise TVMTypeError(f"define() got an unexpected keyword argument {unknown[0]!r}")
    if name is not None and not isinstance(name, str):
        if not (callable(name) or isinstance(name, MappingOptions)):
            raise TVMTypeError(
                f"define(): name must be a def's name or an options factory, got "
                f"{type(name).__name__}"
            )
        # Nothing to ask per call where the answer is always naive options: plain options, or
        # the naive factory (the usual TC form); its defs' calls stay as cheap as define(lang)'s.
        if isinstance(name, MappingOptions):
            options = name
            factory = None if options.tuned is None else (lambda *args: options)
        elif getattr(name, "always_naive", False):
            factory = None
        else:
            factory = name  # TC's mapping_options_factory(tc, entry_point, *inputs)
        name = None
    else:
        factory = None
    if constants:
        if not isinstance(lang, str):
            raise TVMTypeError("define(): constants= needs the TC source as a str")
        try:
            lang = lang.format(**constants)
        except (KeyError, IndexError) as err:
            key = str(err.args[0])
            if not key.isidentifier():
                # a TC body in single braces ("{ C(i) = A(i) * S }") read as a field name
                raise TVMValueError(
                    f"define(): with constants=, braces that belong to TC must be doubled "
                    f"({{{{ and }}}}), as in TC v0.1.1: the source's {{{key.strip()[:40]}}} "
                    "was read as a constant's name"
                ) from None
            raise TVMValueError(
                f"define(): the TC source uses the constant {{{key}}} but constants= "
                f"gives only {', '.join(constants)}"
            ) from None
        except ValueError as err:
            raise TVMValueError(
                f"define(): cannot substitute constants= into the TC source ({err}); with "
                "constants, braces that belong to TC must be doubled ({{ and }}), as in TC v0.1.1"
            ) from None
    return lang, name, factory


def _tc_call_options(name: str, out: Any, tc_options: dict[str, Any]) -> Any:
    """The ``out`` of a call made with TC's keywords: ``outputs=`` is ``out=``; the mapping
    options keywords have no effect on the CPU."""
    options = dict(tc_options)
    if "outputs" in options:
        outputs = options.pop("outputs")
        if out is not None and outputs is not None:
            raise TVMTypeError(f"{name}() got both out= and outputs=; they are the same argument")
        out = outputs if out is None else out
        if isinstance(out, list):
            out = tuple(out)
    unknown = [k for k in options if k not in _IGNORED_CALL_OPTIONS]
    if unknown:
        raise TVMTypeError(f"{name}() got an unexpected keyword argument {unknown[0]!r}")
    return out


def compile(tc: str, entry_point: str, mapping_options: Any = None, *inputs: Any) -> TcFunction:
    """TC's ``tc.compile(tc, entry_point, options, *inputs)``: the def ``entry_point`` of the
    source ``tc``, compiled and callable with arrays: with the configuration ``options`` carry
    when ``tc.autotune`` made them for this def, else with the automatic schedule (hand-written
    mapping options have no effect on the CPU).

    Example:
        >>> import numpy as np
        >>> from pytvmbridge import tc
        >>> add = tc.compile("def add(float(N) A) -> (B) { B(i) = A(i) + 1 }", "add", "naive")
        >>> add(np.zeros(2, "float32"))
        array([1., 1.], dtype=float32)
    """
    del inputs
    function = define(tc, name=entry_point)
    config = None
    if isinstance(mapping_options, MappingOptions):
        config = mapping_options.config_for(function)
    if config is not None:
        from .autotvm.dispatch import tc_schedule

        function.build(tc_schedule(function, config))
    else:
        function.build()
    return function  # type: ignore[no-any-return]
