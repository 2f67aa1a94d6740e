import numpy as np
import pytest
import torch
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "bool"])
def test_reshape_transpose_expand_squeeze_flatten(dtype):
    A = tvm.placeholder((2, 3, 1, 5), dtype, name="A")
    a = random((2, 3, 1, 5), dtype)
    outs = [
        topi.reshape(A, (5, -1)),
        topi.reshape(A, (30,)),
        topi.transpose(A),
        topi.transpose(A, (1, 3, 0, 2)),
        topi.permute(A, (0, 2, 3, 1)),
        topi.expand_dims(A, 1, 2),
        topi.squeeze(A),
        topi.squeeze(A, 2),
        topi.flatten(A),
    ]
    refs = [
        a.reshape(5, -1),
        a.reshape(30),
        a.transpose(),
        a.transpose(1, 3, 0, 2),
        a.transpose(0, 2, 3, 1),
        a[:, None, None],
        a.squeeze(),
        a.squeeze(2),
        a.reshape(2, -1),
    ]
    run([A], outs, [a], refs)
    assert all(o.op.tag == "injective" for o in outs)


def test_reshape_symbolic():
    n = tvm.var("n")
    A = tvm.placeholder((n, 6), name="A")
    a = random((4, 6), "float32")
    outs = [topi.reshape(A, (n, 2, 3)), topi.reshape(A, (-1, 3)), topi.flatten(A)]
    run([A], outs, [a], [a.reshape(4, 2, 3), a.reshape(-1, 3), a])
    run([A], outs, [a[:1]], [a[:1].reshape(1, 2, 3), a[:1].reshape(-1, 3), a[:1]])


def test_reshape_infers_a_constant_beside_a_symbolic_batch():
    # x.view(x.size(0), -1): the inferred size cancels the batch, a constant a matmul can
    # check against its weight (not floordiv(n * 32, n)).
    n = tvm.var("n")
    A = tvm.placeholder((n, 8, 2, 2), name="A")
    flat, halves, quarter = (
        topi.reshape(A, (n, -1)),
        topi.reshape(A, (2, -1)),
        topi.reshape(A, (-1, 4)),
    )
    assert [int(d) for d in flat.shape[1:]] == [32]
    assert int(quarter.shape[1]) == 4
    a = random((3, 8, 2, 2), "float32")
    run([A], [flat], [a], [a.reshape(3, -1)])
    run([A], [halves], [a[:2]], [a[:2].reshape(2, -1)])
    run([A], [quarter], [a], [a.reshape(-1, 4)])
    B = tvm.placeholder((n, 3), name="B")  # 3 n / 2 has no constant form: floordiv, still right
    odd = topi.reshape(B, (2, -1))
    b = random((4, 3), "float32")
    run([B], [odd], [b], [b.reshape(2, -1)])


@pytest.mark.parametrize(
    "shape, newshape",
    [
        ((2, 3, 4), (6, 4)),  # merge two leading dimensions, keep the last
        ((6, 4), (2, 3, 4)),  # split one
        ((1, 5, 7), (5, 7)),  # drop a unit dimension
        ((5, 7), (1, 5, 1, 7)),  # add unit dimensions
        ((2, 3, 4), (4, 6)),  # no common grouping but the whole
        ((2, 1, 3, 4), (2, 12)),
        ((3, 4, 1), (1, 12)),
        ((4, 6), (2, 2, 6)),
        ((2, 3, 4), (2, -1)),
    ],
)
def test_reshape_by_groups_of_dimensions(shape, newshape):
    A = tvm.placeholder(shape, name="A")
    a = random(shape, "float32")
    run([A], [topi.reshape(A, newshape)], [a], [a.reshape(newshape)])


def test_reshape_keeps_the_indices_of_dimensions_it_does_not_change():
    """A reshape reads its input at plain indices where a dimension is kept (no ravel and unravel
    of the whole index): the graph compiler's reshape chains around an elementwise operation
    then read a matrix product at its own indices, the form its epilogue fusion looks for."""
    A = tvm.placeholder((128, 32), name="A")
    R = topi.reshape(A, (1, 128, 32))
    assert str(R.op.body[0]) == "A[i1, i2]"
    B = topi.reshape(topi.sigmoid(R), (128, 32))
    assert str(B.op.body[0]) == "T_sigmoid[0, i0, i1]"
    a = random((128, 32), "float32")
    run([A], [B], [a], [1 / (1 + np.exp(-a))])
    # Merged leading dimensions: only they are unravelled, the last one is read as it is.
    C = tvm.placeholder((8, 128, 32), name="C")
    M = topi.reshape(C, (1024, 32))
    assert str(M.op.body[0]).endswith(", i1]") and str(M.op.body[0]).count("i1") == 1
    # Symbolic sizes kept as they are, merged with constant ones.
    n = tvm.var("n")
    S = tvm.placeholder((n, 3, 4), name="S")
    x = random((5, 3, 4), "float32")
    run([S], [topi.reshape(S, (n, 12)), topi.reshape(S, (n * 3, 4))], [x],
        [x.reshape(5, 12), x.reshape(15, 4)])  # fmt: skip


def test_reshape_groups_symbolic_sizes_by_their_factors():
    """Symbolic sizes merged or split with each other group as constants do: attention's
    (b, h, s, d) viewed as (b * h, s, d) reads its input at (n // h, n % h, i, j), not at the
    unravelled flat index (which divided every element's offset by s and h). A reshape whose
    sizes share no factors still computes the flat index."""
    b, h, s = tvm.size_var("b"), tvm.size_var("h"), tvm.size_var("s")
    Q = tvm.placeholder((b, h, s, 8), name="Q")
    merged = topi.reshape(Q, (b * h, s, 8))
    assert str(merged.op.body[0]) == "Q[floordiv(i0, h), floormod(i0, h), i1, i2]"
    split = topi.reshape(merged, (b, h, s, 8))
    assert str(split.op.body[0]) == "T_reshape[((i0 * h) + i1), i2, i3]"
    # associated differently: (b * h) * s against b * (h * s), and a constant factor moved
    P = tvm.placeholder((b * h, s), name="P")
    regrouped = topi.reshape(P, (b, h * s))
    assert str(topi.reshape(Q, (b, h * s * 8)).op.body[0]).startswith("Q[i0, ")  # b kept
    odd = topi.reshape(tvm.placeholder((b, 4, s), name="O"), (b, s, 4))  # (4, s) -> (s, 4)
    q = random((2, 3, 5, 8), "float32")
    p = random((6, 5), "float32")
    o = random((2, 4, 5), "float32")
    run([Q], [merged, split], [q], [q.reshape(6, 5, 8), q])
    run([Q, P], [regrouped], [q, p], [p.reshape(2, 15)])  # Q binds b and h
    run([odd.op.input_tensors[0]], [odd], [o], [o.reshape(2, 5, 4)])


def test_transform_errors():
    A = tvm.placeholder((2, 3), name="A")
    with pytest.raises(ValueError, match=r"cannot reshape \(2, 3\) \(6 elements\) into \(4,\)"):
        topi.reshape(A, (4,))
    with pytest.raises(ValueError, match="only one dimension of newshape may be -1"):
        topi.reshape(A, (-1, -1))
    with pytest.raises(ValueError, match="is not a permutation"):
        topi.transpose(A, (0, 0))
    with pytest.raises(ValueError, match="dimension 1 of"):
        topi.squeeze(A, 1)
    with pytest.raises(ValueError, match="does not match"):
        topi.concatenate([A, tvm.placeholder((3, 3))], axis=1)
    with pytest.raises(TypeError, match="tensor 1 is float64"):
        topi.concatenate([A, tvm.placeholder((2, 3), "float64")])
    with pytest.raises(ValueError, match="do not divide into 4"):
        topi.split(A, 4, axis=1)
    with pytest.raises(ValueError, match="strides must be nonzero"):
        topi.strided_slice(A, [0], [2], [0])
    with pytest.raises(TypeError, match="indices of take must be integers"):
        topi.take(A, tvm.placeholder((2,)))
    with pytest.raises(ValueError, match="mode must be 'clip', 'wrap' or 'fast'"):
        topi.take(A, tvm.placeholder((2,), "int32"), axis=0, mode="raise")


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_concatenate_stack_split(dtype):
    A = tvm.placeholder((2, 3), dtype, name="A")
    B = tvm.placeholder((2, 1), dtype, name="B")
    C = tvm.placeholder((2, 4), dtype, name="C")
    a, b, c = (random(s, dtype, k) for k, s in enumerate([(2, 3), (2, 1), (2, 4)]))
    parts = topi.split(C, [1, 3], axis=1)
    halves = topi.split(C, 2, axis=-1)
    outs = [
        topi.concatenate([A, B, C], axis=1),
        topi.concatenate([A, A], axis=0),
        topi.stack([A, A, A], axis=1),
        topi.stack([B], axis=-1),
        *parts,
        *halves,
    ]
    refs = [
        np.concatenate([a, b, c], 1),
        np.concatenate([a, a], 0),
        np.stack([a, a, a], 1),
        np.stack([b], -1),
        *np.split(c, [1, 3], axis=1),
        *np.split(c, 2, axis=-1),
    ]
    run([A, B, C], outs, [a, b, c], refs)


def test_concatenate_and_split_symbolic():
    n, m = tvm.var("n"), tvm.var("m")
    A = tvm.placeholder((n, 2), name="A")
    B = tvm.placeholder((m, 2), name="B")
    cat = topi.concatenate([A, B], axis=0)
    halves = topi.split(A, 2, axis=0)
    a, b = random((4, 2), "float32"), random((3, 2), "float32", 1)
    run([A, B], [cat, *halves], [a, b], [np.concatenate([a, b]), a[:2], a[2:]])


def test_split_of_a_size_variable_into_unequal_parts_is_refused():
    # floordiv(n, sections) parts dropped the remainder: 8 in 3 parts lost the last two
    thirds = tvm.kernel(lambda A: topi.split(A, 3))
    for got, want in zip(thirds(torch.arange(9.0)), torch.arange(9.0).split(3), strict=True):
        torch.testing.assert_close(got, want)
    with pytest.raises(ValueError, match=r"must divide into 3 equal parts and has 8 elements"):
        thirds(torch.arange(8.0))
    n = tvm.var("n")
    A = tvm.placeholder((n, 2), name="A")
    halves = topi.split(A, 2)
    f = tvm.build(tvm.create_schedule([h.op for h in halves]), [A, *halves])
    loaded = tvm.runtime.module_from_bytes(tvm.runtime.module_to_bytes(f))  # kept when saved
    out = [np.zeros((3, 2), "float32") for _ in range(2)]
    with pytest.raises(ValueError, match=r"splits dimension 0 of 'A' \(n\).* has 7 elements"):
        loaded(np.zeros((7, 2), "float32"), *out)


SLICES = [
    ([1, 0], [4, 6], [1, 2]),
    ([-1, -2], [-6, 0], [-1, -1]),
    ([0, 5], [100, -100], [2, -3]),
    ([3], [3], [1]),
]


@pytest.mark.parametrize(("begin", "end", "strides"), SLICES)
def test_strided_slice_matches_numpy(begin, end, strides):
    A = tvm.placeholder((5, 7), name="A")
    a = random((5, 7), "float32")
    S = topi.strided_slice(A, begin, end, strides)
    ref = a[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides, strict=True))]
    run([A], S, [a], ref)


def test_strided_slice_axes_and_symbolic():
    n = tvm.var("n")
    A = tvm.placeholder((3, n), name="A")
    S1 = topi.strided_slice(A, [1], [None], [2], axes=[1])
    S2 = topi.strided_slice(A, [-3], [100], axes=[-1])
    for w in (7, 2):
        a = random((3, w), "float32")
        run([A], [S1, S2], [a], [a[:, 1::2], a[:, -3:100]])


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_take_modes(index_dtype):
    A = tvm.placeholder((4, 5), name="A")
    I = tvm.placeholder((2, 3), index_dtype, name="I")
    a = random((4, 5), "float32")
    i = np.array([[0, 3, -1], [7, 2, -6]], index_dtype)
    outs = [
        topi.take(A, I, axis=0),
        topi.take(A, I, axis=1, mode="wrap"),
        topi.take(A, I),
        topi.take(A, 2, axis=1),
    ]
    refs = [
        np.take(a, i, axis=0, mode="clip"),
        np.take(a, i, axis=1, mode="wrap"),
        np.take(a, i, mode="clip"),
        a[:, 2],
    ]
    run([A, I], outs, [a, i], refs)


@pytest.mark.parametrize("index_dtype", ["uint8", "int8", "int16", "uint16", "uint32"])
@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_and_gather_with_narrow_index_dtypes_on_a_long_axis(index_dtype, mode):
    # 300 does not fit uint8/int8: the clamp and the modulus are taken in a wide type
    A = tvm.placeholder((2, 300), name="A")
    I = tvm.placeholder((6,), index_dtype, name="I")
    info = np.iinfo(index_dtype)
    i = np.array([0, 5, 100, 255, 299, info.max], dtype=np.int64)
    if info.min < 0:
        i[0] = -1
        i[1] = info.min
    i = i.astype(index_dtype)
    a = random((2, 300), "float32")
    wide = i.astype(np.int64)
    G = tvm.placeholder((2, 6), index_dtype, name="G")
    g = np.stack([i, i[::-1]]).astype(index_dtype)
    in_range = np.clip(g.astype(np.int64), 0, 299)
    run(
        [A, I, G],
        [topi.take(A, I, axis=1, mode=mode), topi.gather(A, 1, G)],
        [a, i, g],
        [np.take(a, wide, axis=1, mode=mode), np.take_along_axis(a, in_range, axis=1)],
    )


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_with_uint64_indices_past_int64(mode):
    # 2**63 and up read as negative in int64: they are clamped or wrapped unsigned
    A = tvm.placeholder((2, 10), name="A")
    I = tvm.placeholder((5,), "uint64", name="I")
    i = np.array([2**63, 2**64 - 1, 3, 12, 2**63 + 5], dtype=np.uint64)
    a = random((2, 10), "float32")
    where = np.minimum(i, 9) if mode == "clip" else i % np.uint64(10)
    G = tvm.placeholder((2, 5), "uint64", name="G")
    g = np.stack([i, i[::-1]])
    run(
        [A, I, G],
        [topi.take(A, I, axis=1, mode=mode), topi.gather(A, 1, G)],
        [a, i, g],
        [a[:, where.astype(np.int64)], np.take_along_axis(a, np.minimum(g, 9).astype(np.int64), 1)],
    )


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_from_an_empty_axis_is_refused(mode):
    # clip made the index n - 1 = -1 and wrap floormod(i, 0) = 0: a read outside the table
    # (a segfault with torch's empty tensor, whose data pointer is null)
    lookup = tvm.kernel(lambda E, I: topi.take(E, I, axis=0, mode=mode))
    for table in (torch.zeros(0, 4), np.zeros((0, 4), "float32")):
        ids = torch.tensor([0]) if isinstance(table, torch.Tensor) else np.array([0])
        with pytest.raises(ValueError, match=r"dimension 0 of 'E'.* has 0 .*empty axis"):
            lookup(table, ids)
    # no index: nothing to take, an empty result (NumPy's)
    assert lookup(np.zeros((0, 4), "float32"), np.zeros(0, "int64")).shape == (0, 4)
    flat = tvm.kernel(lambda E, I: topi.take(E, I, mode=mode))
    with pytest.raises(ValueError, match=r"dimension 1 of 'E'"):
        flat(np.zeros((3, 0), "float32"), np.array([1]))
    table = np.arange(8, dtype="float32").reshape(2, 4)
    ids = np.array([3, -1, 1])
    np.testing.assert_array_equal(lookup(table, ids), np.take(table, ids, axis=0, mode=mode))
    with pytest.raises(ValueError, match=r"cannot take from an empty axis: dimension 0"):
        topi.take(tvm.placeholder((0, 4)), tvm.placeholder((2,), "int32"), axis=0, mode=mode)


def test_take_past_int32_positions_of_a_large_table():
    # the clamped index was cut to int32: 2**31 + 5 wrapped negative and read outside the table
    # (np.zeros maps zero pages: only the pages written and read are touched)
    lookup = tvm.kernel(lambda E, I: topi.take(E, I, axis=0))
    table = np.zeros(2**31 + 10, np.int8)
    table[2**31 + 5] = 5
    table[3] = 3
    np.testing.assert_array_equal(lookup(table, np.array([3, 2**31 + 5, 2**32])), [3, 5, 0])


def test_take_embedding_lookup_symbolic():
    n = tvm.var("n")
    E = tvm.placeholder((50, 8), name="E")
    ids = tvm.placeholder((n,), "int64", name="ids")
    T = topi.take(E, ids, axis=0)
    e = random((50, 8), "float32")
    i = np.array([3, 49, 0, 3, 17], "int64")
    ref = torch.nn.functional.embedding(torch.from_numpy(i), torch.from_numpy(e)).numpy()
    run([E, ids], T, [e, i], ref)


def test_gather_matches_torch():
    D = tvm.placeholder((3, 4, 2), name="D")
    I = tvm.placeholder((3, 5, 2), "int64", name="I")
    d = random((3, 4, 2), "float32")
    i = np.random.default_rng(0).integers(0, 4, (3, 5, 2))
    ref = torch.gather(torch.from_numpy(d), 1, torch.from_numpy(i)).numpy()
    I0 = tvm.placeholder((2, 4, 2), "int32", name="I0")
    i0 = np.random.default_rng(1).integers(0, 3, (2, 4, 2)).astype("int32")
    ref0 = torch.gather(torch.from_numpy(d), 0, torch.from_numpy(i0).long()).numpy()
    run(
        [D, I, I0],
        [topi.gather(D, 1, I), topi.gather(D, 0, I0)],
        [d, i, i0],
        [ref, ref0],
    )


@pytest.mark.parametrize(
    ("src", "dst", "shape"),
    [
        ("NCHW", "NCHW4c", (2, 8, 3, 5)),
        ("NCHW4c", "NCHW", (2, 2, 3, 5, 4)),
        ("NCHW4c", "NCHW2c", (1, 2, 3, 3, 4)),
        ("NCHW", "NHWC", (2, 3, 4, 5)),
        ("OIHW", "OIHW2i4o", (8, 6, 3, 3)),
    ],
)
def test_layout_transform(src, dst, shape):
    A = tvm.placeholder(shape, name="A")
    a = random(shape, "float32")

    def to_plain(x, layout):  # an independent reference: NumPy reshapes and transposes
        if layout in ("NCHW", "OIHW"):
            return x
        if layout == "NHWC":
            return x.transpose(0, 3, 1, 2)
        if layout.startswith("NCHW"):
            n, cc, h, w, cb = x.shape
            return x.transpose(0, 1, 4, 2, 3).reshape(n, cc * cb, h, w)
        raise AssertionError(layout)

    def from_plain(x, layout):
        if layout in ("NCHW", "OIHW"):
            return x
        if layout == "NHWC":
            return x.transpose(0, 2, 3, 1)
        if layout.startswith("NCHW"):
            cb = int(layout[4:-1])
            n, c, h, w = x.shape
            return x.reshape(n, c // cb, cb, h, w).transpose(0, 1, 3, 4, 2)
        # OIHW{i}i{o}o
        ib, ob = 2, 4
        o, i, h, w = x.shape
        return x.reshape(o // ob, ob, i // ib, ib, h, w).transpose(0, 2, 4, 5, 3, 1)

    ref = from_plain(to_plain(a, src), dst)
    run([A], topi.layout_transform(A, src, dst), [a], ref)


def test_layout_transform_errors():
    A = tvm.placeholder((1, 6, 2, 2), name="A")
    with pytest.raises(ValueError, match="axis C of size 6 does not divide into blocks of 4"):
        topi.layout_transform(A, "NCHW", "NCHW4c")
    with pytest.raises(ValueError, match="differ in axes"):
        topi.layout_transform(A, "NCHW", "NCDW")
    with pytest.raises(ValueError, match="cannot parse layout"):
        topi.layout_transform(A, "NCHW", "NC-HW")


@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_flip_tile_repeat(dtype):
    n = tvm.var("n")
    A = tvm.placeholder((n, 3), dtype, name="A")
    a = random((4, 3), dtype, low=-9, high=9)
    outs = [
        topi.flip(A, 0),
        topi.flip(A, -1),
        topi.tile(A, (2, 1, 2)),
        topi.repeat(A, 3, 1),
        topi.repeat(A, 2, 0),
    ]
    refs = [
        np.flip(a, 0),
        np.flip(a, -1),
        np.tile(a, (2, 1, 2)),
        np.repeat(a, 3, 1),
        np.repeat(a, 2, 0),
    ]
    run([A], outs, [a], refs)


def test_strided_slice_size_mode_and_take_batch_dims():
    A = tvm.placeholder((5, 6), name="A")
    a = random((5, 6), "float32")
    run([A], topi.strided_slice(A, [1, 2], [3, -1], slice_mode="size"), [a], a[1:4, 2:])
    # a negative begin counts from the end, then size elements (TVM's rule), clamped
    for begin, size, ref in [(-2, 2, a[3:5]), (-1, 1, a[4:5]), (-7, 3, a[0:3]), (4, 9, a[4:5])]:
        run([A], topi.strided_slice(A, [begin], [size], slice_mode="size"), [a], ref)
    n = tvm.var("n")
    S = tvm.placeholder((n, 6), name="S")
    run([S], topi.strided_slice(S, [-2], [2], slice_mode="size"), [a], a[3:5])
    assert str(topi.strided_slice(S, [0], [None]).shape[0]) == "n"  # the whole axis is n
    with pytest.raises(NotImplementedError, match="batch_dims=0 only"):
        topi.take(A, tvm.placeholder((2,), "int32"), axis=0, batch_dims=1)
    with pytest.raises(ValueError, match="slice_mode of strided_slice must be 'end' or 'size'"):
        topi.strided_slice(A, [0], [1], slice_mode="begin")
