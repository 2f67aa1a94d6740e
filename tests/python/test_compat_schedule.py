"""Issue 10: TVM schedule behaviours that classic TVM tests rely on.

fuse() with no axis (a Singleton relation, also on a 0-d stage), attaching to and from extern
and scan stages, stable rfactor axes, buffer attributes of extern inputs. Values against NumPy.
"""

import numpy as np

import pytvmbridge as tvm
from pytvmbridge import te


def _run(s, args, arrays):
    f = tvm.build(s, args)
    nds = [tvm.nd.array(a) for a in arrays]
    f(*nds)
    return [a.asnumpy() for a in nds]


def test_singleton_fuse_on_a_0d_stage_as_tvm_test_singleton():
    A = te.placeholder((), name="A")
    T = te.compute((), lambda: A() + 1)
    s = te.create_schedule(T.op)
    assert s[T].leaf_iter_vars == [] or len(s[T].leaf_iter_vars) == 0
    fused = s[T].fuse()
    assert any(isinstance(x, tvm.te.schedule.Singleton) for x in s[T].relations)
    assert len(s[T].leaf_iter_vars) == 1 and s[T].leaf_iter_vars[0].name == fused.name
    assert int(fused.dom.extent) == 1
    a = np.array(2.5, "float32")
    _, t = _run(s, [A, T], [a, np.zeros((), "float32")])
    assert t == a + 1


def test_a_stage_computed_at_the_singleton_of_a_0d_reduction():
    n = 37
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    k = te.reduce_axis((0, n), name="k")
    T = te.compute((), lambda: te.sum(B[k], axis=k), name="T")
    s = te.create_schedule(T.op)
    single = s[T].fuse()
    s[B].compute_at(s[T], single)
    assert s[B].attach_type == "scope"
    a = np.random.default_rng(0).standard_normal(n).astype("float32")
    _, t = _run(s, [A, T], [a, np.zeros((), "float32")])
    np.testing.assert_allclose(t, (a.astype("float64") * 2 + 1).sum(), rtol=1e-5)


def test_singleton_on_a_2d_stage_is_an_outer_loop_that_keeps_values():
    A = te.placeholder((5, 7), name="A")
    B = te.compute((5, 7), lambda i, j: A[i, j] * 3.0, name="B")
    s = te.create_schedule(B.op)
    single = s[B].fuse()
    assert s[B].leaf_iter_vars[0].name == single.name and len(s[B].leaf_iter_vars) == 3
    f = s[B].fuse(*B.op.axis)
    s[B].parallel(f)
    kinds = [type(r).__name__ for r in s[B].relations]
    assert kinds == ["Singleton", "Fuse"]
    a = np.arange(35, dtype="float32").reshape(5, 7)
    _, b = _run(s, [A, B], [a, np.zeros((5, 7), "float32")])
    np.testing.assert_array_equal(b, a * 3)


def test_relations_are_tvm_typed_and_still_tuples():
    A = te.placeholder((12,), name="A")
    B = te.compute((12,), lambda i: A[i], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], nparts=3)
    fused = s[B].fuse(xo, xi)
    split, fuse = s[B].relations
    assert isinstance(split, tvm.te.schedule.Split) and split[0] == "split"
    assert split.nparts is not None and int(split.nparts) == 3 and split.factor is None
    assert (split.outer.name, split.inner.name) == (xo.name, xi.name)
    assert isinstance(fuse, tvm.te.schedule.Fuse) and fuse.fused.name == fused.name
    assert int(fuse.fused.dom.extent) == 12
