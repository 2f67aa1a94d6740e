"""The graph compiler behind ``torch.compile(model, backend="pytvmbridge")``.

- :mod:`.ops`: the ATen operator -> topi table (what is supported),
- :mod:`.compiler`: :func:`compile_graph`, one FX graph of supported operators -> one kernel
  (:class:`CompiledGraph`, plain data: Module + input/output plan),
- :mod:`.partition`: capability-based partitioning, unsupported operators stay in PyTorch,
- :mod:`.replay`: outputs that eager returns as views, made from their bases after the kernel,
- :mod:`.backend`: the Dynamo backend (AOT autograd, core ATen decompositions).

Errors: :class:`UnsupportedOperatorError` (a ``NotImplementedError``) when an operator would
have to run in PyTorch where that is not allowed (``strict=True``); :class:`UnsupportedGraphError`,
its subclass, when :func:`compile_graph` is handed a graph it cannot convert.

Example:
    >>> import torch
    >>> from pytvmbridge.graph import compile_graph
    >>> gm = torch.fx.symbolic_trace(lambda x: torch.ops.aten.tanh.default(x))
    >>> compile_graph(gm, [torch.zeros(2)])(torch.zeros(2))
    tensor([0., 0.])
"""

from .compiler import (
    CompiledGraph,
    UnsupportedGraphError,
    UnsupportedOperatorError,
    compile_graph,
)
from .partition import partition_and_compile

__all__ = [
    "CompiledGraph",
    "UnsupportedGraphError",
    "UnsupportedOperatorError",
    "compile_graph",
    "partition_and_compile",
]
