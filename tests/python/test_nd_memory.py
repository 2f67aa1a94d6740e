"""Producer memory is released exactly when the last view goes, and never leaks.

NumPy's DLPack deleter drops the reference it holds on the exported array, so a weakref
callback on that array (or on the object owning its buffer) observes the deleter. PyTorch's
deleter frees an ATen tensor, observed through the storage's reuse being impossible while a
view is alive.
"""

import os
import weakref

import numpy as np
import torch

from pytvmbridge import nd


class Buffer(bytearray):
    """Memory owned by a plain Python object whose destruction a weakref can observe."""


class CountingProducer:
    """Hands out capsules made by NumPy over a buffer it wraps; counts how often that buffer dies.

    The buffer is referenced only by the NumPy array that the producer exports, so the weakref
    fires exactly when the last DLPack deleter has dropped it.
    """

    def __init__(self, n):
        buf = Buffer(np.arange(n, dtype=np.float32).tobytes())
        self.freed = []
        weakref.finalize(buf, self.freed.append, "buffer")
        self.array = np.frombuffer(buf, dtype=np.float32)
        self.calls = 0

    def __dlpack__(self, **kwargs):
        self.calls += 1
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)

    def release(self):
        self.array = None


def test_counting_producer_memory_freed_exactly_once():
    p = CountingProducer(8)
    a = nd.from_dlpack(p)
    b = nd.from_dlpack(p)
    assert p.calls == 2
    t = torch.from_dlpack(a)  # a chain: NumPy -> pytvmbridge -> torch
    c = nd.from_dlpack(t)
    p.release()
    assert p.freed == []
    np.testing.assert_array_equal(c.numpy(), np.arange(8, dtype=np.float32))
    del a, b
    assert p.freed == []
    del t
    assert p.freed == []  # c still views it
    c.numpy()[0] = 5.0
    del c
    assert p.freed == ["buffer"]


def test_numpy_base_freed_when_last_view_goes():
    base = np.arange(100, dtype=np.float64)
    freed = []
    weakref.finalize(base, freed.append, 1)
    views = [nd.from_dlpack(base[10:20]), nd.from_dlpack(base.reshape(10, 10).T)]
    del base
    assert freed == []
    np.testing.assert_array_equal(views[0].numpy(), np.arange(10, 20))
    np.testing.assert_array_equal(views[1].numpy(), np.arange(100).reshape(10, 10).T)
    views.pop()
    assert freed == []
    views.pop()
    assert freed == [1]


def test_our_own_memory_outlives_the_ndarray_while_exported():
    a = nd.array(np.arange(1000, dtype=np.int64))
    ptr = a.data_ptr
    n = np.from_dlpack(a)
    t = torch.from_dlpack(a)
    del a
    # The allocations that would reuse freed memory cannot touch it.
    junk = [nd.empty((1000,), "int64") for _ in range(50)]
    for j in junk:
        j.numpy()[:] = -1
    assert n.ctypes.data == t.data_ptr() == ptr
    np.testing.assert_array_equal(n, np.arange(1000))
    assert torch.equal(t, torch.arange(1000))


def test_torch_storage_kept_alive_by_imported_view():
    t = torch.arange(1000, dtype=torch.float32)
    a = nd.from_dlpack(t[500:])
    del t
    junk = [torch.full((1000,), -1.0) for _ in range(50)]
    np.testing.assert_array_equal(a.numpy(), np.arange(500, 1000, dtype=np.float32))
    del junk


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def round_trips(n, t, arr, own):
    for _ in range(n):
        a = nd.from_dlpack(t)  # torch -> pytvmbridge
        torch.from_dlpack(a)  # pytvmbridge -> torch
        nd.from_dlpack(arr)  # numpy -> pytvmbridge
        np.from_dlpack(own)  # pytvmbridge -> numpy
        cap = own.__dlpack__(max_version=(1, 0))
        nd.from_dlpack(cap)  # our capsule consumed by us
        own.__dlpack__()  # and one dropped unconsumed


def test_100k_import_round_trips_do_not_grow_memory():
    t = torch.randn(16, 16)
    arr = np.ones((8, 8), np.float32)
    own = nd.empty((4, 4), "float32")
    round_trips(2_000, t, arr, own)  # warm up allocator pools
    before = rss_bytes()
    round_trips(100_000, t, arr, own)
    grown = rss_bytes() - before
    # One leaked 64-byte record per iteration would be 6.4 MB; allow allocator noise only.
    assert grown < 2 * 1024 * 1024, f"RSS grew by {grown / 1e6:.1f} MB over 100k round trips"
    assert own._use_count == 1
