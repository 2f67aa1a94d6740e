"""to_graph(): the ATen graph pytvmbridge would compile for a function (torch_tvm's to_relay).

Example:
    >>> import torch
    >>> from pytvmbridge.torch import to_graph
    >>> g = to_graph(torch.nn.Linear(3, 2), [torch.ones(4, 3)])
    >>> [op for op in g.supported if "addmm" in op]
    ['aten.addmm.default']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..error import TVMTypeError


@dataclass
class ImportedGraph:
    """An ATen-level FX graph with each operator classified as compiled or left to PyTorch.

    ``graph_module`` is the FX GraphModule (a module's parameters are among its inputs);
    ``supported`` and ``unsupported`` list operator names in graph order (unique). ``str()``
    prints the graph with a ``# pytorch`` mark on every node that would stay in PyTorch.
    Calling it runs the graph in PyTorch on the traced function's own inputs (the parameters
    bound) and returns what the function returns.
    """

    graph_module: torch.fx.GraphModule
    supported: list[str]
    unsupported: list[str]
    program: Any = None  # the exported program's module: user inputs in, user outputs out

    def __str__(self) -> str:
        from ..graph.partition import is_supported

        lines = []
        for node in self.graph_module.graph.nodes:
            text = node.format_node() or str(node)
            if node.op == "call_function":
                text += "" if is_supported(node) else "  # pytorch"
            lines.append(text)
        return "\n".join(lines)

    def __call__(self, *args: Any) -> Any:
        return self.graph_module(*args) if self.program is None else self.program(*args)


class _Wrap(torch.nn.Module):
    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def to_graph(fn: Callable | torch.nn.Module, example_inputs: Sequence[Any]) -> ImportedGraph:
    """Trace ``fn`` on ``example_inputs`` (``torch.export``, core ATen decompositions).

    Parameters of a module appear as graph inputs, as they do for ``torch.compile``.

    Example:
        >>> import torch
        >>> g = to_graph(lambda x: torch.tanh(x), [torch.zeros(3)])
        >>> g(torch.zeros(3)).tolist()
        [0.0, 0.0, 0.0]
        >>> linear = to_graph(torch.nn.Linear(3, 2), [torch.ones(4, 3)])
        >>> linear(torch.ones(4, 3)).shape  # its parameters are bound
        torch.Size([4, 2])
    """
    from ..graph.backend import core_decompositions
    from ..graph.partition import is_supported

    if not isinstance(example_inputs, (list, tuple)):
        found = type(example_inputs).__name__
        raise TVMTypeError(f"example_inputs must be a list or tuple of tensors, found {found}")
    module = fn if isinstance(fn, torch.nn.Module) else _Wrap(fn)
    exported = torch.export.export(module, tuple(example_inputs)).run_decompositions(
        core_decompositions()
    )
    gm = exported.graph_module
    supported, unsupported = [], []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        name = str(node.target)
        bucket = supported if is_supported(node) else unsupported
        if name not in bucket:
            bucket.append(name)
    return ImportedGraph(gm, supported, unsupported, exported.module())


__all__ = ["ImportedGraph", "to_graph"]
