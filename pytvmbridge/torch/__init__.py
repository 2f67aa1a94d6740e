"""PyTorch integration: the torch_tvm seed's switch and graph view on ``torch.compile``.

- ``torch.compile(model, backend="pytvmbridge")`` works without importing this package (the
  backend is registered through the ``torch_dynamo_backends`` entry point; see
  :mod:`pytvmbridge.graph.backend`).
- :func:`enable` / :func:`disable`: torch_tvm's switch. ``enable()`` makes ``torch.compile``
  called *without* a ``backend`` argument use pytvmbridge (with the given ``opt_level`` and
  ``strict``); an explicit ``backend=`` is left alone. ``disable()`` restores ``torch.compile``.
- :func:`to_graph`: torch_tvm's ``to_relay``: the ATen graph pytvmbridge imports for ``fn``,
  printable, with each operator marked as compiled or left to PyTorch.

Example:
    >>> import torch, pytvmbridge.torch as ptt
    >>> g = ptt.to_graph(lambda x: torch.relu(x) + 1, [torch.ones(2)])
    >>> g.unsupported
    []
    >>> "relu" in str(g)
    True
"""

from __future__ import annotations

from ..torch_compile import compile, load  # PyTorchTVM's compile(model, option) / load(dir)
from .graph import ImportedGraph, to_graph
from .switch import disable, enable, is_enabled

__all__ = ["ImportedGraph", "compile", "disable", "enable", "is_enabled", "load", "to_graph"]
