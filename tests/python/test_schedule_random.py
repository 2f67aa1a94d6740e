"""Random schedules over random computes compute the same values as the default schedule
(hypothesis); illegal random requests raise ValueError and nothing else."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytvmbridge as tvm


@st.composite
def pipelines(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 11)) for _ in range(ndim))
    A = tvm.placeholder(shape, name="A")
    stages = []
    prev = A
    for n in range(draw(st.integers(1, 3))):
        name = "BCD"[n]
        shift = draw(st.integers(0, 2))
        last = prev.shape[-1]

        def body(*i, prev=prev, shift=shift, last=last):
            shifted = [*list(i[:-1]), tvm.min(i[-1] + shift, last - 1)]
            return prev[i] * 0.5 + prev[tuple(shifted)]

        stages.append(tvm.compute(prev.shape, body, name=name))
        prev = stages[-1]
    if len(prev.shape) > 1 and draw(st.booleans()):
        r = tvm.reduce_axis((0, prev.shape[-1]), name="r")
        p = prev
        stages.append(
            tvm.compute(prev.shape[:-1], lambda *i: tvm.sum(p[(*i, r)] * 2.0, axis=r), name="R")
        )
    return A, stages


def apply_random_schedule(draw, s, stages):
    for _ in range(draw(st.integers(0, 8))):
        t = draw(st.sampled_from(stages))
        stage = s[t]
        leaves = list(stage.leaf_iter_vars)
        if not leaves:
            continue
        leaf = draw(st.sampled_from(leaves))
        action = draw(
            st.sampled_from(
                [
                    "split",
                    "nparts",
                    "fuse",
                    "reorder",
                    "vectorize",
                    "unroll",
                    "parallel",
                    "compute_at",
                    "inline",
                    "root",
                ]
            )
        )
        try:
            if action == "split":
                stage.split(leaf, factor=draw(st.integers(1, 8)))
            elif action == "nparts":
                stage.split(leaf, nparts=draw(st.integers(1, 4)))
            elif action == "fuse" and len(leaves) > 1:
                i = draw(st.integers(0, len(leaves) - 2))
                stage.fuse(leaves[i], leaves[i + 1])
            elif action == "reorder":
                stage.reorder(*draw(st.permutations(leaves)))
            elif action == "vectorize":
                stage.vectorize(leaf)
            elif action == "unroll":
                stage.unroll(leaf)
            elif action == "parallel":
                stage.parallel(leaf)
            elif action == "compute_at":
                idx = stages.index(t)
                if idx + 1 < len(stages):
                    consumer = s[stages[idx + 1]]
                    if consumer.leaf_iter_vars:
                        stage.compute_at(
                            consumer, draw(st.sampled_from(list(consumer.leaf_iter_vars)))
                        )
            elif action == "inline":
                stage.compute_inline()
            elif action == "root":
                stage.compute_root()
        except ValueError as e:
            assert "stage '" in str(e)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_schedule_same_as_default(data):
    A, stages = data.draw(pipelines())
    out = stages[-1]
    s = tvm.create_schedule(out.op)
    apply_random_schedule(data.draw, s, stages)
    a = (
        np.random.default_rng(0)
        .integers(-5, 5, size=tuple(int(d) for d in A.shape))
        .astype("float32")
    )
    expected = np.zeros(tuple(int(d) for d in out.shape), "float32")
    tvm.build(tvm.create_schedule(out.op), [A, out])(a, expected)
    try:
        f = tvm.build(s, [A, out])
    except ValueError as e:  # compute_at whose axis was split later, and the like
        assert "stage '" in str(e)
        return
    got = np.full_like(expected, np.nan)
    f(a, got)
    np.testing.assert_array_equal(got, expected)
