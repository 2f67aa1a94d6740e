"""The ``torch.compile`` backend: ``torch.compile(model, backend="pytvmbridge")``.

Dynamo hands the backend a Python-level FX graph; AOT autograd lowers it to core ATen operators
(with the core ATen decompositions) and splits forward from backward when gradients are needed.
Both graphs go through :func:`~pytvmbridge.graph.partition.partition_and_compile`: supported
operators run as compiled kernels (backward operators such as ``convolution_backward`` and
``max_pool2d_with_indices_backward`` through ``te.gradient``:
:mod:`pytvmbridge.autodiff.graph_grads`), the rest (for instance ``logcumsumexp``) stays in PyTorch.
The backend is registered under the
``torch_dynamo_backends`` entry point, so no import of pytvmbridge is needed.

Options (``torch.compile(..., options={...})``): ``strict`` (raise on the first operator that
would stay in PyTorch), ``num_threads`` (the most threads of the pool, ``set_num_threads``, that
this model's kernels use; other models and kernels keep theirs), ``tuning_log_file``
(each operator's best record in that log is its schedule; see
:mod:`pytvmbridge.autotvm.graph_tuning`), ``tuning_n_trials`` (tune the graph's operators for that
many trials in total first, logging to ``tuning_log_file``), ``target`` (an ``llvm`` target
string), ``layout`` (``"NCHWc"``, the default: convolution chains computed in blocked
channels, see :mod:`pytvmbridge.graph.layout`; ``"NCHW"``: every tensor in PyTorch's layout),
``winograd`` (True, the default: stride-1 3x3 convolutions with enough output tiles computed by
Winograd's algorithm, :mod:`pytvmbridge.topi.nn.winograd`; False: every convolution direct),
``opt_level`` (0-3, the torch_tvm seed's; every level compiles with the same LLVM pipeline,
O2's function passes). Each is checked when the model is compiled: a value of the wrong kind
raises ``ValueError`` naming the option, what it takes and what it was given (``True`` is no
thread count, ``"3"`` no level, an unknown target is refused rather than left to PyTorch).

Weights: a convolution's or linear layer's weight is packed (and a batch norm that follows is
folded into it) once, and the packed copy is reused while the parameter's version counter and
address stay the same: optimizer steps, ``load_state_dict`` and in-place updates under
``torch.no_grad()`` (``p.mul_(2)``) all bump the counter and are seen on the next call; the
fused optimizer kernels (``Adam(..., fused=True)``), which write without bumping it, are seen
too (a step hook counts them: ``graph/unseen_writes.py``). Writes through ``p.data``
(``p.data.mul_(2)``, old-style hand-written SGD or EMA updates), ``p.numpy()`` or another
framework's view of the memory (DLPack) bypass the counter, as they bypass autograd, and are
*not* seen: write to the parameter under ``torch.no_grad()`` instead. So does PyTorch's own
batch-norm kernel when an eager forward in training mode updates the running statistics
outside the compiled model (a recalibration pass such as ``swa_utils.update_bn`` on the eager
module): compile again (``torch._dynamo.reset()``) after it, or run that pass through the
compiled model. A model made under
``torch.inference_mode()`` has no counters: its weights are taken as fixed.

Example:
    >>> import torch
    >>> f = torch.compile(lambda x: torch.relu(x) * 2, backend="pytvmbridge")
    >>> f(torch.tensor([-1.0, 3.0]))
    tensor([0., 6.])
"""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass
from typing import Any

import torch

from .. import _core, progress
from ..error import TVMValueError
from .partition import partition_and_compile

KNOWN_OPTIONS = (
    "strict",
    "num_threads",
    "tuning_log_file",
    "tuning_n_trials",
    "target",
    "opt_level",
    "layout",
    "winograd",
)


@dataclass
class BackendOptions:
    """Parsed ``options`` of the backend (see the module docstring)."""

    strict: bool = False
    num_threads: int | None = None
    tuning_log_file: str | None = None
    tuning_n_trials: int = 0
    target: str = "llvm"
    opt_level: int = 3
    layout: str = "NCHWc"
    winograd: bool = True

    @classmethod
    def parse(cls, options: dict[str, Any] | None) -> BackendOptions:
        options = dict(options or {})
        unknown = sorted(set(options) - set(KNOWN_OPTIONS))
        if unknown:
            raise TVMValueError(
                f"options: unknown key(s) {unknown} for backend 'pytvmbridge'; "
                f"expected some of {list(KNOWN_OPTIONS)}"
            )
        parsed = cls(**options)
        for name in ("strict", "winograd"):
            value = getattr(parsed, name)
            if not isinstance(value, bool):
                raise TVMValueError(
                    f"options[{name!r}] must be True or False, found {_found(value)}"
                )
        threads = parsed.num_threads
        if threads is not None and (not _is_int(threads) or threads < 1):
            raise TVMValueError(
                f"options['num_threads'] must be an int >= 1 or None, found {_found(threads)}"
            )
        if not _is_int(parsed.opt_level) or not 0 <= parsed.opt_level <= 3:
            raise TVMValueError(
                f"options['opt_level'] must be an int in 0..3, found {_found(parsed.opt_level)}"
            )
        log = parsed.tuning_log_file
        if log is not None and not isinstance(log, (str, os.PathLike)):
            raise TVMValueError(
                f"options['tuning_log_file'] must be a path (str or os.PathLike) or None, "
                f"found {_found(log)}"
            )
        check_target(parsed.target, "options['target']")
        if parsed.layout not in ("NCHWc", "NCHW"):
            raise TVMValueError(
                f"options['layout'] must be 'NCHWc' or 'NCHW', found {parsed.layout!r}"
            )
        n = parsed.tuning_n_trials
        if not _is_int(n) or n < 0:
            raise TVMValueError(f"options['tuning_n_trials'] must be an int >= 0, found {n!r}")
        return parsed


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # True is no count


def _found(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def check_target(target: Any, what: str) -> None:
    """Raise ``ValueError`` naming ``what`` unless ``target`` is a target string the compiler
    takes (``"llvm"``, ``"llvm -mcpu=NAME"``, ``"llvm -mattr=..."``): a wrong target fails
    here, once, not in every partition (which would all run in PyTorch).

    Example:
        >>> try:
        ...     check_target("cuda", "options['target']")
        ... except ValueError as err:
        ...     print(str(err)[:44])
        options['target'] must be an llvm target str
    """
    if not isinstance(target, str):
        raise TVMValueError(
            f"{what} must be an llvm target string such as 'llvm' or 'llvm -mcpu=NAME', "
            f"found {_found(target)}"
        )
    try:
        _check_target_text(target)
    except (TypeError, ValueError) as err:
        raise TVMValueError(
            f"{what} must be an llvm target string such as 'llvm' or 'llvm -mcpu=NAME', "
            f"found {target!r}: {err}"
        ) from None


@functools.cache
def _check_target_text(target: str) -> None:
    # The compiler parses a target when it builds: a one-element kernel (milliseconds) checks it
    # with the same parser, -mcpu and -mattr included.
    if target == "llvm":
        return
    from .. import build, compute, create_schedule, placeholder

    a = placeholder((1,), name="a")
    b = compute((1,), lambda i: a[i], name="b")
    build(create_schedule(b.op), [a, b], target=target)


# Compilations done by the backend (one per forward or backward graph), for tests and users.
compile_count = 0


def _graph_compiler(opts: BackendOptions) -> Any:
    from torch._functorch.aot_autograd import make_boxed_func

    def compile_aten(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        global compile_count
        compile_count += 1
        devices = {
            x.device.type for x in example_inputs if isinstance(x, torch.Tensor) and not x.is_cpu
        }
        if devices:
            # Kernels run on CPU memory: a graph on another device (a model moved to "meta" for
            # shape inference, or to a GPU) runs in PyTorch, as any operator left to it does.
            if "meta" not in devices or len(devices) > 1:
                warnings.warn(
                    f"pytvmbridge: this graph's tensors are on {sorted(devices)}; it runs in "
                    "PyTorch (pytvmbridge compiles for tensors in CPU memory)",
                    UserWarning,
                    stacklevel=2,
                )
            return make_boxed_func(gm.forward)
        with progress.busy("pytvmbridge: compiling a graph"):  # a bar only past a second
            compiled = partition_and_compile(
                gm,
                strict=opts.strict,
                target=opts.target,
                tuning_log_file=opts.tuning_log_file,
                tuning_n_trials=opts.tuning_n_trials,
                layout=opts.layout,
                winograd=opts.winograd,
            )
        forward = compiled.forward
        if opts.num_threads is not None:
            # This model's kernels use at most that many of the pool's threads; other models
            # and kernels keep theirs (the pool itself is not resized).
            def forward(*args: Any, _forward: Any = compiled.forward, _n: int = opts.num_threads):
                with _core.ThreadLimit(_n):
                    return _forward(*args)

        return make_boxed_func(forward)

    return compile_aten


@functools.cache
def core_decompositions() -> dict[Any, Any]:
    """The core ATen decompositions as a plain dict, built once per process.

    ``torch._decomp.core_aten_decompositions()`` returns a lazy table that AOT autograd
    materializes again on every graph (its ``len()``): 20-70 ms per compiled subgraph, most of
    a small model's compile. Inductor keeps its table the same way.

    Example:
        >>> import torch
        >>> torch.ops.aten.hardswish.default in core_decompositions()
        True
    """
    from torch._decomp import core_aten_decompositions

    from .decompositions import extra_decompositions

    table = dict(core_aten_decompositions().items())
    # Export's rule for the CPU flash attention returns the attention probabilities where the op
    # returns its logsumexp, which the flash backward (left to PyTorch) then reads: wrong
    # gradients for scaled_dot_product_attention. PyTorch says to exclude it, as Inductor does;
    # ours returns the logsumexp (and with it the fast path of nn.TransformerEncoderLayer,
    # which ran whole in PyTorch in eval mode): graph/decompositions.py.
    table.update(extra_decompositions())
    # Nearest upsampling whole (graph/ops_spatial.py: one gather with PyTorch's index rule)
    # rather than arange / multiply / cast / index operators, where a graph keeps it whole
    # (torch.export; under torch.compile PyTorch's own Python kernels decompose it anyway).
    for op in (torch.ops.aten.upsample_nearest2d, torch.ops.aten._upsample_nearest_exact2d):
        table.pop(op.default, None)
        table.pop(op.vec, None)
    return table


def pytvmbridge_backend(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: dict | None = None, **_: Any
) -> Any:
    """Dynamo backend entry: lower ``gm`` with AOT autograd and compile what is supported."""
    from torch._dynamo.backends.common import aot_autograd

    from .interpolate import match_eager_interpolate

    opts = BackendOptions.parse(options)
    compiler = _graph_compiler(opts)
    match_eager_interpolate(gm)  # F.interpolate as eager computes it (interpolate.py)
    backend = aot_autograd(
        fw_compiler=compiler,
        bw_compiler=compiler,
        decompositions=core_decompositions(),
    )
    return backend(gm, example_inputs)


__all__ = ["KNOWN_OPTIONS", "BackendOptions", "check_target", "pytvmbridge_backend"]
