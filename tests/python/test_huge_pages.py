"""Folded weights copied into transparent huge pages (pytvmbridge/graph/huge_pages.py)."""

import mmap

import pytest
import torch

from pytvmbridge.graph.fold import Derived, DerivedCache
from pytvmbridge.graph.huge_pages import HUGE_PAGE, MIN_BYTES, huge_page_copy

needs_madvise = pytest.mark.skipif(
    not hasattr(mmap, "MADV_HUGEPAGE"), reason="the platform has no MADV_HUGEPAGE"
)


@needs_madvise
def test_copy_is_aligned_and_equal():
    src = torch.randn(1024, 700)  # 2.7 MiB: not a whole number of huge pages
    out = huge_page_copy(src)
    assert out is not src
    assert out.data_ptr() % HUGE_PAGE == 0
    assert out.shape == src.shape and out.dtype == src.dtype and out.is_contiguous()
    assert torch.equal(out, src)
    # Its own storage: writing the source leaves the copy as it was.
    before = out.clone()
    src.add_(1.0)
    assert torch.equal(out, before)


def test_small_strided_and_grad_tensors_stay():
    small = torch.ones(MIN_BYTES // 4 - 1)
    assert huge_page_copy(small) is small
    strided = torch.randn(2048, 1024).t()
    assert huge_page_copy(strided) is strided
    param = torch.randn(1024, 1024, requires_grad=True)
    assert huge_page_copy(param) is param


@needs_madvise
def test_derived_cache_packs_into_huge_pages():
    # A 1024x1024 linear weight packed into 64-wide panels, as the graph backend folds it.
    w = torch.randn(1024, 1024)
    cache = DerivedCache()
    packed = cache.get(0, Derived("dense_pack", (0,), (64,)), [w])
    assert packed.data_ptr() % HUGE_PAGE == 0
    assert torch.equal(packed, w.reshape(16, 64, 1024).permute(0, 2, 1))
    assert cache.get(0, Derived("dense_pack", (0,), (64,)), [w]) is packed
    w.mul_(2.0)  # an in-place update is seen: recomputed
    again = cache.get(0, Derived("dense_pack", (0,), (64,)), [w])
    assert torch.equal(again, w.reshape(16, 64, 1024).permute(0, 2, 1))
