"""Writes to parameters that PyTorch's version counters do not record: fused optimizer steps.

The graph backend keeps tensors derived from a model's parameters (packed, transposed,
batch-norm-folded weights, :mod:`.fold`) and recomputes them when a parameter changes, which it
sees from the tensor's version counter: every in-place update bumps it, the foreach and
for-loop optimizer steps included. PyTorch's fused CPU optimizer kernels
(``SGD/Adam/AdamW/Adagrad(..., fused=True)``) write the parameters without bumping it, so a
compiled model trained with one kept computing with its first weights. :data:`fused_steps`
counts those steps (an optimizer step hook, registered once, by :func:`watch`); a derived
tensor made before the last of them is made again.

Example:
    >>> import torch
    >>> from pytvmbridge.graph import unseen_writes
    >>> unseen_writes.watch()
    >>> p = torch.nn.Parameter(torch.ones(3)); p.grad = torch.ones(3)
    >>> before = unseen_writes.fused_steps
    >>> torch.optim.SGD([p], lr=0.5, fused=True).step()
    >>> p._version, unseen_writes.fused_steps - before
    (0, 1)
"""

from __future__ import annotations

from typing import Any

fused_steps = 0
"""How many optimizer steps of fused kernels ran in this process since :func:`watch`."""

_watching = False


def _after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    global fused_steps
    if any(group.get("fused") for group in optimizer.param_groups):
        fused_steps += 1


def watch() -> None:
    """Starts counting fused optimizer steps (once per process; later calls do nothing)."""
    global _watching
    if _watching:
        return
    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(_after_step)
    _watching = True


__all__ = ["fused_steps", "watch"]
