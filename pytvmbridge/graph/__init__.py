"""The graph compiler behind ``torch.compile(model, backend="pytvmbridge")``.

- :mod:`.ops`: the ATen operator -> topi table (what is supported),
- :mod:`.compiler`: :func:`compile_graph`, one FX graph of supported operators -> one kernel
  (:class:`CompiledGraph`, plain data: Module + input/output plan),
- :mod:`.partition`: capability-based partitioning, unsupported operators stay in PyTorch,
- :mod:`.backend`: the Dynamo backend (AOT autograd, core ATen decompositions).

Example:
    >>> import torch
    >>> from pytvmbridge.graph import compile_graph
    >>> gm = torch.fx.symbolic_trace(lambda x: torch.ops.aten.tanh.default(x))
    >>> compile_graph(gm, [torch.zeros(2)])(torch.zeros(2))
    tensor([0., 0.])
"""

from .compiler import CompiledGraph, UnsupportedGraphError, compile_graph
from .partition import UnsupportedOperatorError, partition_and_compile

__all__ = [
    "CompiledGraph",
    "UnsupportedGraphError",
    "UnsupportedOperatorError",
    "compile_graph",
    "partition_and_compile",
]
