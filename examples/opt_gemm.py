"""The GEMM optimisation ladder of TVM's "How to optimize GEMM on CPU", as a TVM user writes it.

Each step keeps the same algorithm, C = A @ B, and changes only the schedule: blocking for the
cache, a vectorized inner loop, a loop order that streams through memory, B packed into tiles,
a write cache accumulated in registers, and finally parallel outer loops. Every step is checked
against NumPy and timed; the table at the end shows what each schedule change bought.
The only change from TVM code is the import line.

Run: python examples/opt_gemm.py [size]   (default 256: a few seconds in all)
"""

import sys

import numpy as np

import pytvmbridge as tvm
import pytvmbridge.testing
from pytvmbridge import te

size = int(sys.argv[1]) if len(sys.argv) > 1 else 256
M = K = N = size
dtype = "float32"
target = tvm.target.Target("llvm")
dev = tvm.device(target.kind.name, 0)

rng = np.random.default_rng(0)
a = tvm.nd.array(rng.random((M, K)).astype(dtype), dev)
b = tvm.nd.array(rng.random((K, N)).astype(dtype), dev)
expected = a.numpy() @ b.numpy()

timings = []


def evaluate(name, s, args):
    """Build the schedule, check it against NumPy and record its time."""
    func = tvm.build(s, args, target=target, name=name)
    c = tvm.nd.array(np.zeros((M, N), dtype=dtype), dev)
    func(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), expected, rtol=1e-4)
    evaluator = func.time_evaluator(func.entry_name, dev, number=2, repeat=3)
    timings.append((name, evaluator(a, b, c).median))


# The algorithm, written once.
k = te.reduce_axis((0, K), "k")
A = te.placeholder((M, K), name="A")
B = te.placeholder((K, N), name="B")
C = te.compute((M, N), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")

# Step 0: the default schedule, three nested loops.
s = te.create_schedule(C.op)
evaluate("default", s, [A, B, C])

# Step 1: blocking. 32x32 tiles of C keep a block of A and B in cache; the reduction is split
# so that its inner part sits inside the tile.
bn = 32
kfactor = 4
s = te.create_schedule(C.op)
mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
(kaxis,) = s[C].op.reduce_axis
ko, ki = s[C].split(kaxis, factor=kfactor)
s[C].reorder(mo, no, ko, ki, mi, ni)
evaluate("blocking", s, [A, B, C])

# Step 2: vectorize the innermost loop, which walks a row of C and of B.
s[C].vectorize(ni)
evaluate("vectorization", s, [A, B, C])

# Step 3: loop permutation. With mi outside ki, the inner loops read A[mi, k] once and
# stream along rows of B and C.
s = te.create_schedule(C.op)
mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
(kaxis,) = s[C].op.reduce_axis
ko, ki = s[C].split(kaxis, factor=kfactor)
s[C].reorder(mo, no, ko, mi, ki, ni)
s[C].vectorize(ni)
evaluate("loop permutation", s, [A, B, C])

# Step 4: array packing. B is rearranged into [N/bn][K][bn] so a tile's column block is
# contiguous; N / bn is a float in Python 3, taken as an extent as TVM takes it.
packedB = te.compute((N / bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
C = te.compute(
    (M, N),
    lambda x, y: te.sum(A[x, k] * packedB[y // bn, k, tvm.tir.indexmod(y, bn)], axis=k),
    name="C",
)
s = te.create_schedule(C.op)
mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
(kaxis,) = s[C].op.reduce_axis
ko, ki = s[C].split(kaxis, factor=kfactor)
s[C].reorder(mo, no, ko, mi, ki, ni)
s[C].vectorize(ni)
x, y, z = s[packedB].op.axis
s[packedB].vectorize(z)
s[packedB].parallel(x)
evaluate("array packing", s, [A, B, C])

# Step 5: a write cache. Each 32x32 block of C is accumulated in a local buffer (registers
# and L1) and written back once.
s = te.create_schedule(C.op)
CC = s.cache_write(C, "global")
mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
s[CC].compute_at(s[C], no)
mc, nc = s[CC].op.axis
(kaxis,) = s[CC].op.reduce_axis
ko, ki = s[CC].split(kaxis, factor=kfactor)
s[CC].reorder(ko, mc, ki, nc)
s[CC].vectorize(nc)
s[CC].unroll(ki)
x, y, z = s[packedB].op.axis
s[packedB].vectorize(z)
s[packedB].parallel(x)
evaluate("write cache", s, [A, B, C])

# Step 6: parallel. The outermost block loop runs on all cores.
s[C].parallel(mo)
evaluate("parallel", s, [A, B, C])
print(tvm.lower(s, [A, B, C], simple_mode=True))

print(f"\nGEMM {M}x{K}x{N} float32 (median of 3 rounds)")
print(f"{'schedule':<20}{'ms':>10}{'GFLOP/s':>10}")
for name, seconds in timings:
    print(f"{name:<20}{seconds * 1e3:>10.2f}{2 * M * N * K / seconds / 1e9:>10.1f}")
