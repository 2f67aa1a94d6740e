"""TC gather indexing (a tensor read indexed by another tensor's values), `where exists`, and
defs that fail on their own in a multi-def source; references are NumPy and PyTorch."""

import numpy as np
import pytest
import torch

from pytvmbridge import tc

RNG = np.random.default_rng(7)


def test_gather_1d_as_in_the_tc_docs():
    f = tc.define("def gather(float(N) T, int32(M) I) -> (O) { O(i) = T(I(i)) }")
    t = RNG.standard_normal(11).astype("float32")
    idx = RNG.integers(0, 11, size=23).astype("int32")
    np.testing.assert_array_equal(f(t, idx), t[idx])


@pytest.mark.parametrize("id_dtype", ["int32", "int64"])
def test_embedding_lookup_matches_torch(id_dtype):
    src = "def emb(float(V, D) W, ID(B, L) I) -> (O) { O(b, l, d) = W(I(b, l), d) }"
    emb = tc.define(src.replace("ID", id_dtype))
    w = torch.randn(50, 16)
    ids = torch.randint(0, 50, (4, 7), dtype=getattr(torch, id_dtype))
    out = emb(w, ids)
    torch.testing.assert_close(out, torch.nn.functional.embedding(ids.long(), w))


def test_index_select_both_axes():
    lib = tc.define("""
        def rows(float(N, M) A, int64(K) I) -> (O) { O(k, j) = A(I(k), j) }
        def cols(float(N, M) A, int64(K) I) -> (O) { O(i, k) = A(i, I(k)) }
    """)
    a = torch.randn(6, 9)
    i = torch.tensor([5, 0, 0, 3])
    torch.testing.assert_close(lib.rows(a, i), torch.index_select(a, 0, i))
    j = torch.tensor([8, 1, 4])
    torch.testing.assert_close(lib.cols(a, j), torch.index_select(a, 1, j))


def test_gather_of_an_expression_and_in_a_reduction():
    # B(C(i)) nested in arithmetic, and a gathered read summed over a reduction index.
    f = tc.define("""
        def f(float(N) B, int32(M) C, float(M, K) X) -> (O) {
            O(i) +=! B(C(i) + 1) * X(i, r_k)
        }""")
    b = RNG.standard_normal(8).astype("float32")
    c = RNG.integers(0, 7, size=5).astype("int32")
    x = RNG.standard_normal((5, 3)).astype("float32")
    np.testing.assert_allclose(f(b, c, x), b[c + 1] * x.sum(1), rtol=1e-5)


def test_out_of_range_gathered_indices_are_clamped():
    f = tc.define("def g(float(N) T, int64(M) I) -> (O) { O(i) = T(I(i)) }")
    t = np.arange(5, dtype="float32") * 10
    idx = np.array([-7, 0, 4, 5, 1 << 40, -(1 << 40)], dtype="int64")
    np.testing.assert_array_equal(f(t, idx), t[np.clip(idx, 0, 4)])


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64", "int8"])
def test_gathered_ids_of_every_integer_dtype_clamp_by_value(dtype):
    # uint64 ids of 2**63 and more are large, not negative: they read the last element
    f = tc.define(f"def g(float(N) T, {dtype}(M) I) -> (O) {{ O(i) = T(I(i)) }}")
    t = np.arange(5, dtype="float32") * 10
    info = np.iinfo(dtype)
    ids = sorted({int(info.min), 0, 3, 4, 5, int(info.max), int(info.max) // 2 + 1})
    idx = np.array(ids, dtype=dtype)
    want = t[np.clip(np.array(ids, dtype=object), 0, 4).astype(np.int64)]
    np.testing.assert_array_equal(f(t, idx), want)


def test_gathering_from_an_empty_dimension_is_a_value_error():
    f = tc.define("def g(float(N) T, int32(M) I) -> (O) { O(i) = T(I(i)) }")
    with pytest.raises(ValueError, match="'T'"):
        f(np.zeros(0, "float32"), np.zeros(3, "int32"))
    # No read happens when nothing is gathered.
    assert f(np.zeros(0, "float32"), np.zeros(0, "int32")).shape == (0,)


def test_a_float_gathered_index_is_refused():
    with pytest.raises(tc.TCError, match="must be an integer"):
        tc.define("def g(float(N) T, float(M) I) -> (O) { O(i) = T(I(i)) }")


def test_where_exists_gives_a_reduction_index_its_range():
    # r_k appears only in A(i + r_k): without the exists clause its range cannot be inferred.
    f = tc.define("""
        def window(float(N) A, float(K) W) -> (O) {
            O(i) +=! A(i + r_k) where exists W(r_k)
        }""")
    a = RNG.standard_normal(10).astype("float32")
    w = np.zeros(3, "float32")
    expected = np.array([a[i : i + 3].sum() for i in range(8)])
    np.testing.assert_allclose(f(a, w), expected, rtol=1e-5)


def test_where_exists_needs_a_tensor_read():
    with pytest.raises(tc.TCError, match="where exists"):
        tc.define("def f(float(N) A) -> (O) { O(i) = A(i) where exists i + 1 }")


def test_one_broken_def_leaves_the_others_usable():
    lib = tc.define("""
        def twice(float(N) A) -> (B) { B(i) = 2 * A(i) }
        def unknown_builtin(float(N) A) -> (B) { B(i) = no_such_fn(A(i)) }
        def bad_syntax(float(N) A) -> (B) { B(i) = A(i) <=> 1 }
        def thrice(float(N) A) -> (B) { B(i) = 3 * A(i) }
    """)
    a = np.arange(4, dtype="float32")
    np.testing.assert_array_equal(lib.twice(a), 2 * a)
    np.testing.assert_array_equal(lib.thrice(a), 3 * a)
    assert lib.names == ["twice", "thrice"]
    assert set(lib.errors) == {"unknown_builtin", "bad_syntax"}
    with pytest.raises(tc.TCError, match="no_such_fn") as info:
        lib.unknown_builtin(a)
    assert info.value.line == 3
    with pytest.raises(tc.TCError) as info:
        lib.bad_syntax(a)
    assert info.value.line == 4
    # Picking a broken def by name, or a source whose only def is broken, raises at once.
    src = "def f(float(N) A) -> (B) { B(i) = A(i) }\ndef g(float(N) A) -> (B) { B(i) = h(A(i)) }"
    with pytest.raises(tc.TCError, match="'h'"):
        tc.define(src, name="g")
    np.testing.assert_array_equal(tc.define(src, name="f")(a), a)
    with pytest.raises(tc.TCError):
        tc.define("def g(float(N) A) -> (B) { B(i) = h(A(i)) }")
