"""TVM's schedule primitives, one at a time, as a TVM user writes them.

A schedule says how to compute a tensor (loop order, tiling, where intermediate results live)
without changing what is computed. This walks through split, tile, fuse, reorder, parallel,
vectorize, unroll, compute_at, compute_inline and compute_root: each one prints the loop nest
it produces and runs it against NumPy. The only change from TVM code is the import line.

Run: python examples/schedule_primitives.py
"""

import numpy as np

import pytvmbridge as tvm
import pytvmbridge.testing
from pytvmbridge import te

n, m = te.var("n"), te.var("m")
rng = np.random.default_rng(1)


def show_and_check(title, s, args, reference, *inputs):
    """Print the loop nest of `s`, run it on `inputs` and compare the last output."""
    print(f"---- {title}")
    print(tvm.lower(s, args, simple_mode=True))
    func = tvm.build(s, args, target="llvm")
    arrays = [tvm.nd.array(x) for x in inputs]
    out = tvm.nd.array(np.zeros_like(reference))
    func(*arrays, out)
    tvm.testing.assert_allclose(out.numpy(), reference, rtol=1e-5)


# A matrix scaled element-wise: the stage every primitive below reshapes.
A = te.placeholder((m, n), name="A")
B = te.compute((m, n), lambda i, j: A[i, j] * 2.0, name="B")
a = rng.random((20, 30)).astype("float32")

# split: one loop into two, by the inner extent (factor) ...
s = te.create_schedule(B.op)
xo, xi = s[B].split(B.op.axis[0], factor=8)
show_and_check("split by factor", s, [A, B], a * 2, a)

# ... or by the outer extent (nparts).
s = te.create_schedule(B.op)
bx, tx = s[B].split(B.op.axis[0], nparts=4)
show_and_check("split by nparts", s, [A, B], a * 2, a)

# tile: split both axes and bring the two inner loops inside.
s = te.create_schedule(B.op)
xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=4, y_factor=6)
show_and_check("tile", s, [A, B], a * 2, a)

# fuse: two consecutive loops into one, here the two outer loops of a tile.
fused = s[B].fuse(xo, yo)
show_and_check("fuse", s, [A, B], a * 2, a)

# reorder: any order of the loops.
s = te.create_schedule(B.op)
xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=4, y_factor=6)
s[B].reorder(xi, yo, xo, yi)
show_and_check("reorder", s, [A, B], a * 2, a)

# parallel, vectorize, unroll: how a loop runs.
s = te.create_schedule(B.op)
outer, inner = s[B].split(B.op.axis[1], factor=8)
s[B].parallel(B.op.axis[0])
s[B].vectorize(inner)
show_and_check("parallel + vectorize", s, [A, B], a * 2, a)
s = te.create_schedule(B.op)
outer, inner = s[B].split(B.op.axis[1], factor=4)
s[B].unroll(inner)
show_and_check("unroll", s, [A, B], a * 2, a)

# A producer and a consumer: C = A + 1, then D = C * 2.
C = te.compute((m, n), lambda i, j: A[i, j] + 1.0, name="C")
D = te.compute((m, n), lambda i, j: C[i, j] * 2.0, name="D")
reference = (a + 1) * 2

# By default each stage is computed at root: all of C, then all of D.
s = te.create_schedule(D.op)
show_and_check("two stages at root", s, [A, D], reference, a)

# compute_at: compute the part of C that one row of D needs, inside D's row loop.
s = te.create_schedule(D.op)
s[C].compute_at(s[D], D.op.axis[0])
show_and_check("compute_at", s, [A, D], reference, a)

# compute_inline: no C at all; its expression is substituted into D.
s = te.create_schedule(D.op)
s[C].compute_inline()
show_and_check("compute_inline", s, [A, D], reference, a)

# compute_root: undo a compute_at.
s = te.create_schedule(D.op)
s[C].compute_at(s[D], D.op.axis[0])
s[C].compute_root()
show_and_check("compute_root", s, [A, D], reference, a)

# A reduction: the row sums of A, with the reduction split in two.
k = te.reduce_axis((0, n), name="k")
R = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="R")
s = te.create_schedule(R.op)
ko, ki = s[R].split(R.op.reduce_axis[0], factor=8)
show_and_check("split reduction", s, [A, R], a.sum(axis=1), a)
print("every schedule computed the same values as NumPy")
