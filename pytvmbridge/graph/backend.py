"""The ``torch.compile`` backend: ``torch.compile(model, backend="pytvmbridge")``.

Dynamo hands the backend a Python-level FX graph; AOT autograd lowers it to core ATen operators
(with the core ATen decompositions) and splits forward from backward when gradients are needed.
Both graphs go through :func:`~pytvmbridge.graph.partition.partition_and_compile`: supported
operators run as compiled kernels (backward operators such as ``convolution_backward`` and
``max_pool2d_with_indices_backward`` through ``te.gradient``:
:mod:`pytvmbridge.autodiff.graph_grads`), the rest (for instance ``cumsum``) stays in PyTorch.
The backend is registered under the
``torch_dynamo_backends`` entry point, so no import of pytvmbridge is needed.

Options (``torch.compile(..., options={...})``): ``strict`` (raise on the first operator that
would stay in PyTorch), ``num_threads`` (threads of the compiled kernels), ``tuning_log_file``
(each operator's best record in that log is its schedule; see
:mod:`pytvmbridge.autotvm.graph_tuning`), ``tuning_n_trials`` (tune the graph's operators for that
many trials in total first, logging to ``tuning_log_file``), ``target`` (an ``llvm`` target
string), ``layout`` (``"NCHWc"``, the default: convolution chains computed in blocked
channels, see :mod:`pytvmbridge.graph.layout`; ``"NCHW"``: every tensor in PyTorch's layout),
``winograd`` (True, the default: stride-1 3x3 convolutions with enough output tiles computed by
Winograd's algorithm, :mod:`pytvmbridge.topi.nn.winograd`; False: every convolution direct).

Example:
    >>> import torch
    >>> f = torch.compile(lambda x: torch.relu(x) * 2, backend="pytvmbridge")
    >>> f(torch.tensor([-1.0, 3.0]))
    tensor([0., 6.])
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch

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
        if parsed.num_threads is not None and (
            not isinstance(parsed.num_threads, int) or parsed.num_threads < 1
        ):
            raise TVMValueError(
                f"options['num_threads'] must be an int >= 1, found {parsed.num_threads!r}"
            )
        if parsed.layout not in ("NCHWc", "NCHW"):
            raise TVMValueError(
                f"options['layout'] must be 'NCHWc' or 'NCHW', found {parsed.layout!r}"
            )
        if not isinstance(parsed.winograd, bool):
            raise TVMValueError(
                f"options['winograd'] must be True or False, found {parsed.winograd!r}"
            )
        n = parsed.tuning_n_trials
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise TVMValueError(f"options['tuning_n_trials'] must be an int >= 0, found {n!r}")
        return parsed


# Compilations done by the backend (one per forward or backward graph), for tests and users.
compile_count = 0


def _graph_compiler(opts: BackendOptions) -> Any:
    from torch._functorch.aot_autograd import make_boxed_func

    def compile_aten(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        global compile_count
        compile_count += 1
        if opts.num_threads is not None:
            from .. import set_num_threads

            set_num_threads(opts.num_threads)
        compiled = partition_and_compile(
            gm,
            strict=opts.strict,
            target=opts.target,
            tuning_log_file=opts.tuning_log_file,
            tuning_n_trials=opts.tuning_n_trials,
            layout=opts.layout,
            winograd=opts.winograd,
        )
        return make_boxed_func(compiled.forward)

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

    return dict(core_aten_decompositions().items())


def pytvmbridge_backend(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: dict | None = None, **_: Any
) -> Any:
    """Dynamo backend entry: lower ``gm`` with AOT autograd and compile what is supported."""
    from torch._dynamo.backends.common import aot_autograd

    opts = BackendOptions.parse(options)
    compiler = _graph_compiler(opts)
    backend = aot_autograd(
        fw_compiler=compiler,
        bw_compiler=compiler,
        decompositions=core_decompositions(),
    )
    return backend(gm, example_inputs)


__all__ = ["KNOWN_OPTIONS", "BackendOptions", "pytvmbridge_backend"]
