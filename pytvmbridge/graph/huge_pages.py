"""Large constant tensors (pre-packed weights) copied into transparent huge pages.

A compiled model reads its folded weights (:mod:`.fold`) on every call, and when they do not fit
the cores' L2 caches (an MLP's 7.4 MB, a BERT layer's 28 MB) they stream from beyond it. With 4
KiB pages such a stream takes a TLB miss and a page walk every 4 KiB; with 2 MiB pages, one per 2
MiB. PyTorch's allocator does not ask for huge pages (unless ``THP_MEM_ALLOC_ENABLE`` is set), and
Linux's default policy (``transparent_hugepage=madvise``) gives them only to memory that asks, so
:func:`huge_page_copy` maps a 2 MiB-aligned anonymous region, asks for huge pages with
``madvise(MADV_HUGEPAGE)`` and copies the tensor there. Elsewhere (no ``MADV_HUGEPAGE``, a small
or non-contiguous tensor) it returns the tensor itself.

Example:
    >>> import torch
    >>> w = torch.arange(6.0).reshape(2, 3)
    >>> huge_page_copy(w) is w  # small: kept where it is
    True
    >>> big = torch.ones(1024, 1024)
    >>> bool((huge_page_copy(big) == big).all())
    True
"""

from __future__ import annotations

import mmap

import torch

HUGE_PAGE = 2 << 20
"""The size of a transparent huge page on x86-64 and the alignment the region is given."""

MIN_BYTES = HUGE_PAGE
"""Tensors smaller than this stay where they are (at most one huge page to gain)."""


def huge_page_copy(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` copied into memory that asks for transparent huge pages, or ``tensor`` itself
    when it is smaller than :data:`MIN_BYTES`, not a contiguous CPU tensor, or the platform has no
    ``MADV_HUGEPAGE``. The copy's storage lives as long as the returned tensor."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    nbytes = tensor.numel() * tensor.element_size()
    if (
        advice is None
        or nbytes < MIN_BYTES
        or tensor.device.type != "cpu"
        or not tensor.is_contiguous()
        or tensor.requires_grad
    ):
        return tensor
    # Whole huge pages, plus one for aligning the start: the slack is never touched, so it takes
    # address space only.
    size = (nbytes + HUGE_PAGE - 1) // HUGE_PAGE * HUGE_PAGE + HUGE_PAGE
    try:
        region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        region.madvise(advice)
    except (OSError, ValueError):
        return tensor
    raw = torch.frombuffer(region, dtype=torch.uint8)  # holds a reference to the region
    start = -raw.data_ptr() % HUGE_PAGE
    out = raw[start : start + nbytes].view(tensor.dtype).view(tensor.shape)
    out.copy_(tensor)
    return out
