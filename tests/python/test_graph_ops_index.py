"""Indexing, casts, integer tensors and constructed tensors compile in the graph backend (no
operator left to PyTorch under strict) and match eager PyTorch: embedding, index_select, gather,
advanced indexing, flip, repeat, arange, full, ``_to_copy`` and arithmetic that mixes integer,
bool and floating tensors (PyTorch's type promotion)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

STRICT = {"strict": True}


def _compiled(fn, *args, dynamic=None):
    torch._dynamo.reset()
    return torch.compile(fn, backend="pytvmbridge", options=STRICT, dynamic=dynamic)


def _check(fn, *args, **close):
    want = fn(*args)
    got = _compiled(fn)(*args)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=close.get("rtol", 1e-6), atol=close.get("atol", 0))


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5), (2, 1, 13)])
def test_embedding_matches_eager_with_negative_free_ids(shape):
    torch.manual_seed(0)
    table = torch.nn.Embedding(11, 6)
    ids = torch.randint(0, 11, shape)
    with torch.no_grad():
        _check(table, ids)


def test_embedding_of_a_transformer_input_with_positions():
    """Token plus position embeddings, layer norm: a BERT front end in one kernel."""
    torch.manual_seed(1)
    tokens, positions = torch.nn.Embedding(50, 16), torch.nn.Embedding(32, 16)
    norm = torch.nn.LayerNorm(16)

    def front(ids):
        where = torch.arange(ids.shape[1])
        return norm(tokens(ids) + positions(where)[None])

    ids = torch.randint(0, 50, (3, 9))
    with torch.no_grad():
        _check(front, ids, rtol=1e-5, atol=1e-5)


def test_embedding_with_dynamic_sequence_length():
    torch.manual_seed(2)
    table = torch.nn.Embedding(20, 8)
    compiled = _compiled(lambda ids: table(ids) * 2.0)
    with torch.no_grad():
        for length in (5, 9, 2):
            ids = torch.randint(0, 20, (2, length))
            torch._dynamo.mark_dynamic(ids, 1)
            torch.testing.assert_close(compiled(ids), table(ids) * 2.0)


def test_out_of_range_ids_are_clamped_not_read_outside():
    """PyTorch raises on an id past the table; a kernel cannot raise, and must not read
    outside the table: -1 counts from the end as in PyTorch, the rest clamps to an end."""
    weight = torch.arange(12.0).reshape(4, 3)
    compiled = _compiled(lambda w, i: F.embedding(i, w))
    got = compiled(weight, torch.tensor([0, -1, 3, 7, -9]))
    want = weight[torch.tensor([0, 3, 3, 3, 0])]
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_and_gather(dim):
    torch.manual_seed(3)
    x = torch.randn(5, 7, 3)
    index = torch.tensor([2, 0, 2, 1, 0])  # index_select takes no negative index either
    picks = torch.randint(0, x.shape[dim], (3, 4, 2))  # gather takes no negative index

    def f(x, index, picks):
        return x.index_select(dim, index).sum(), torch.gather(x, dim, picks)

    want = f(x, index, picks)
    got = _compiled(f)(x, index, picks)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "pick",
    [
        lambda x, i, j: x[i],
        lambda x, i, j: x[:, i],
        lambda x, i, j: x[i, j],
        lambda x, i, j: x[:, i, j],
        lambda x, i, j: x[i, :, j],  # separated: the broadcast dimensions go first
        lambda x, i, j: x[i[:, None], j],  # broadcast against each other
        lambda x, i, j: x[..., j],
    ],
    ids=["first", "second", "pair", "pair-after-slice", "separated", "broadcast", "last"],
)
def test_advanced_indexing_places_dimensions_as_pytorch(pick):
    torch.manual_seed(4)
    x = torch.randn(6, 7, 8)
    i, j = torch.tensor([0, 5, -2]), torch.tensor([3, 0, 1])
    _check(lambda x, i, j: pick(x, i, j) * 1.0, x, i, j)


def test_flip_repeat_roll_tril_and_reflection_pad():
    torch.manual_seed(5)
    x = torch.randn(3, 4, 5, 6)

    def f(x):
        return (
            x.flip(-1, 1) + x.roll(2, -1),
            x.repeat(2, 1, 1, 3),
            x.tril(1),
            F.pad(x, (2, 1, 1, 2), mode="reflect"),
            F.pad(x, (1, 1, 2, 0), mode="replicate"),
        )

    torch.testing.assert_close(_compiled(f)(x), f(x))


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("scale", [2, 3])
def test_nearest_upsampling_through_its_decomposition(mode, scale):
    torch.manual_seed(6)
    x = torch.randn(2, 3, 5, 7)
    _check(lambda x: F.interpolate(x, scale_factor=scale, mode=mode), x)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16, torch.int32])
def test_casts(dtype):
    x = torch.tensor([-2.7, -0.5, -0.0, 0.0, 0.4, 1.5, 2.5, 250.0, float("nan")])
    x = x[:-1] if not dtype.is_floating_point else x  # NaN to an integer is undefined

    def f(x):
        y = x.to(dtype)
        return y, y.float() * 2, (x != 0).to(dtype), x.bool()

    want = f(x)
    got = _compiled(f)(x)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True)


def test_integer_and_bool_arithmetic_promotes_as_pytorch():
    torch.manual_seed(7)
    x = torch.randn(4, 9)
    positions = torch.arange(9)
    mask = x > 0

    def f(x, positions, mask):
        return (
            x + positions,  # int64 + float32 -> float32
            x * mask,  # bool read as 0/1
            positions // 2 - positions % 3,  # integer floor division and remainder
            torch.div(positions - 4, 3, rounding_mode="trunc"),
            positions / 4,  # true division of integers -> float32
            mask.sum(-1),  # bool sum -> int64
            (positions > 3.5) & mask,  # int compared with a float
            torch.where(mask, positions, -1),  # int64 where
            torch.maximum(positions, torch.tensor(4)) * 3,
        )

    want = f(x, positions, mask)
    got = _compiled(f)(x, positions, mask)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32])
def test_arange_and_full(dtype):
    def f(x):
        n = x.shape[-1]
        a = torch.arange(n, dtype=dtype)
        b = torch.arange(2, 3 * n + 2, 3, dtype=dtype)
        c = torch.full((2, n), 7, dtype=dtype)
        return x + a, b, c + torch.full_like(x, 3).to(dtype)[:2], torch.zeros_like(x)

    x = torch.randn(3, 11, dtype=dtype if dtype.is_floating_point else torch.float32)
    want = f(x)
    got = _compiled(f)(x)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w)


def test_float_arange_rounds_once_as_pytorch():
    """start + i * step in double, rounded once: 0.1 steps do not drift."""
    f = lambda x: x + torch.arange(0.0, 10.0, 0.1)  # noqa: E731
    _check(f, torch.zeros(100))


def test_arange_of_a_dynamic_size():
    compiled = _compiled(lambda x: x * torch.arange(x.shape[0])[:, None])
    for rows in (4, 7, 1):
        x = torch.randn(rows, 3)
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(compiled(x), x * torch.arange(rows)[:, None])


def test_cross_entropy_with_ignored_labels():
    torch.manual_seed(8)
    logits = torch.randn(6, 5)
    labels = torch.tensor([0, 4, -100, 2, 2, -100])
    _check(lambda x, y: F.cross_entropy(x, y, ignore_index=-100), logits, labels, rtol=1e-5)


def test_training_graph_with_embedding_keeps_correct_gradients():
    """The forward compiles; embedding's backward may stay in PyTorch, gradients match."""
    torch.manual_seed(9)
    model = torch.nn.Sequential(torch.nn.Embedding(30, 8), torch.nn.Linear(8, 3))
    ids = torch.randint(0, 30, (4, 5))
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="pytvmbridge")
    got = compiled(ids).square().sum()
    got.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want = model(ids).square().sum()
    want.backward()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    for g, p in zip(grads, model.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad, rtol=1e-5, atol=1e-5)


def test_floor_and_trunc_division_of_floats_bit_for_bit():
    """PyTorch's floor division is not floor(a / b) (``1 // 0.1`` is 9.0, a / b rounds to
    10): the fmod-based rule, signed zeros, infinities, NaN and division by zero included."""
    vals = [1.0, -1.0, 0.0, -0.0, 7.5, -7.5, 1e30, float("inf"), -float("inf"), float("nan"), 0.3]
    divisors = [0.1, -0.1, 0.0, -0.0, 2.0, -3.0, float("inf"), 0.7, 1e-30]
    a, b = torch.meshgrid(torch.tensor(vals), torch.tensor(divisors), indexing="ij")
    a, b = a.reshape(-1), b.reshape(-1)

    def f(a, b):
        return (
            torch.div(a, b, rounding_mode="floor"),
            torch.div(a, b, rounding_mode="trunc"),
            a // 0.1,
            torch.div(a.half(), b.half(), rounding_mode="floor"),
        )

    want = f(a, b)
    got = _compiled(f)(a, b)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, equal_nan=True, rtol=0, atol=0)
        assert torch.equal(torch.signbit(g[~w.isnan()]), torch.signbit(w[~w.isnan()]))


def test_bfloat16_constructed_tensors_keep_their_fractions():
    def f(x):
        return (
            torch.arange(0, 2, 0.5, dtype=torch.bfloat16),
            torch.arange(0, 30, 1.3, dtype=torch.bfloat16),
            x + torch.full_like(x, 0.5),
            torch.full((4, 4), float("-inf"), dtype=torch.bfloat16).triu(1),
        )

    x = torch.zeros(3, dtype=torch.bfloat16)
    for g, w in zip(_compiled(f)(x), f(x), strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w)


def test_python_ints_wrap_into_narrow_integer_dtypes_as_pytorch():
    """PyTorch converts a Python int to the tensor's dtype with wraparound: uint8 + (-1) adds
    255, int8 % 300 takes 44."""
    u = torch.tensor([0, 1, 200], dtype=torch.uint8)
    i8 = torch.tensor([100, -100, 5], dtype=torch.int8)
    i32 = torch.tensor([1, -5, 7], dtype=torch.int32)

    def f(u, i8, i32):
        return (
            u + (-1), u * -1, u > -1, u < 300, u % 300, torch.where(u > 0, u, -1),
            i8 + 1000, i8 * 300, i8 // 1000, torch.fmod(i8, 1000),
            torch.remainder(i8 * 2, 300) + 1, i32 + 2**40, i32 < 2**40,
        )  # fmt: skip

    for g, w in zip(_compiled(f)(u, i8, i32), f(u, i8, i32), strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w)


def test_subtracting_a_bool_tensor_raises_as_in_eager():
    """PyTorch refuses ``-`` of a bool tensor at run time; the node stays in PyTorch, which
    raises, instead of computing it."""
    f = lambda p, q: q - p  # noqa: E731
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="pytvmbridge")
    with pytest.raises(RuntimeError, match="bool tensor is not supported"):
        compiled(torch.tensor([True, False]), torch.tensor([3, 4]))


def test_exported_model_with_casts_compiles_as_one_kernel():
    """``.float()``/``.long()`` in ``pytvmbridge.torch.compile``: export checks each cast's
    source metadata with a node that has no traced value; it is dropped, so the model compiles
    whole under strict."""
    import pytvmbridge.torch_compile as ptc

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x.float()) + x.long().float()

    torch.manual_seed(10)
    model = Model().eval()
    compiled = ptc.compile(model, {"input_infos": [("x", ("b", 4))], "strict": True})
    x = torch.randn(3, 4) * 3
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))


def test_flat_argmax_over_symbolic_sizes_stays_in_pytorch():
    """A flat index over several symbolic sizes may pass int32 (4 x 2**30 elements): left to
    PyTorch; along one axis it compiles."""
    x = torch.randn(6, 5)
    torch._dynamo.reset()
    flat = torch.compile(lambda t: t.argmax(), backend="pytvmbridge", dynamic=True)
    torch.testing.assert_close(flat(x), x.argmax())
    torch._dynamo.reset()
    strict = torch.compile(
        lambda t: t.argmax(), backend="pytvmbridge", dynamic=True, options=STRICT
    )
    with pytest.raises(Exception, match="argmax"):
        strict(x)
    torch._dynamo.reset()
    along = torch.compile(
        lambda t: t.argmax(1), backend="pytvmbridge", dynamic=True, options=STRICT
    )
    torch.testing.assert_close(along(x), x.argmax(1))


def test_scatter_of_a_few_positions_per_row():
    """scatter with a short index axis (max.dim's backward scatters one position per row),
    from a tensor and from a number, into a tensor larger than the index off the axis."""
    torch.manual_seed(12)
    x = torch.randn(4, 6, 5)
    i = torch.randint(0, 6, (4, 3, 5))
    j = torch.randint(0, 5, (4, 6, 1))
    k = torch.tensor([[[1], [4]]]).expand(4, 2, 3)

    def f(x, i, j, k):
        return (
            x.scatter(1, i[:, :1], 7.0),
            torch.zeros_like(x).scatter(1, i[:, :1], x[:, :1] * 2),
            x.scatter(-1, j, -1.0),
            x.scatter(1, k, x[:, :2, :3]),
        )

    torch.testing.assert_close(_compiled(f)(x, i, j, k), f(x, i, j, k))


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.max(-1)[0],
        lambda t: t.min(1)[0] * 2,
        lambda t: t.atanh(),
        lambda t: t.cumprod(1),
    ],
    ids=["max.dim", "min.dim", "atanh", "cumprod"],
)
def test_training_graphs_compile_whole(fn):
    """Their backward graphs scatter into zeros, start from an empty tensor, or find each
    row's first zero with a bool cumulative sum and max.dim: all compiled under strict."""
    t = torch.tensor([[0.5, 0.0, 0.2, 0.7, -0.5], [0.2, -0.3, 0.1, 0.6, 0.4]], requires_grad=True)
    t2 = t.detach().clone().requires_grad_()
    _compiled(fn)(t).square().sum().backward()
    fn(t2).square().sum().backward()
    torch.testing.assert_close(t.grad, t2.grad)


def test_integer_and_bool_cumulative_sums_and_extremes():
    x = torch.randint(-3, 4, (3, 20))
    m = x > 0

    def f(x, m):
        return (
            x.cumsum(1), m.cumsum(-1), x.to(torch.int8).cumsum(0), x.cumprod(1),
            *m.max(1), *(x > 2).min(0), *(x > 9).max(1), torch.relu(x - 1),
        )  # fmt: skip

    for g, w in zip(_compiled(f)(x, m), f(x, m), strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w)


def test_copy_back_and_slice_assignment():
    """Functionalised ``copy_`` (running statistics written back: InstanceNorm tracking them,
    in training) and ``slice_scatter`` (circular padding, slice assignment)."""
    torch.manual_seed(13)
    norm = torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True).train()
    reference = torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True).train()
    reference.load_state_dict(norm.state_dict())
    compiled = _compiled(norm)
    for _ in range(3):
        x = torch.randn(2, 4, 5, 5, requires_grad=True)
        x2 = x.detach().clone().requires_grad_()
        compiled(x).square().sum().backward()
        reference(x2).square().sum().backward()
        torch.testing.assert_close(x.grad, x2.grad)
        torch.testing.assert_close(norm.running_mean, reference.running_mean)
        torch.testing.assert_close(norm.running_var, reference.running_var)
    conv = torch.nn.Conv1d(3, 4, 3, padding=1, padding_mode="circular").eval()

    def f(t, s):
        return (
            F.pad(t, (2, 1, 1, 2), mode="circular"),
            torch.slice_scatter(t, t[:, :, :3] * 2, 2, 1, 7, 2),
            conv(s),
        )

    t, s = torch.randn(2, 3, 6, 8), torch.randn(2, 3, 9)
    with torch.no_grad():
        torch.testing.assert_close(_compiled(f)(t, s), f(t, s))


def test_symbolic_bound_beside_integer_positions():
    def f(x):
        return (torch.arange(x.shape[0]) + 1).clamp(max=x.shape[0] - 1) * 2, x * (x.shape[0] - 1)

    compiled = _compiled(f)
    for n in (7, 9):
        x = torch.randn(n)
        torch._dynamo.mark_dynamic(x, 0)
        for g, w in zip(compiled(x), f(x), strict=True):
            torch.testing.assert_close(g, w)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_mixed_float_dtypes_that_widen_compile(dtype):
    """T5's RMS norm: float32 statistics of a 16-bit input, multiplied back into it; half *
    float32 is float32, float32 + float64 is float64 (each operand widened exactly). A 0-d
    float32 beside a 16-bit tensor keeps the 16-bit dtype with the value unrounded: refused."""
    torch.manual_seed(16)
    weight = torch.linspace(0.5, 1.5, 32).to(dtype)

    def rms_norm(hs):
        var = hs.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return weight * (hs * torch.rsqrt(var + 1e-6)).to(dtype)

    x = torch.randn(2, 5, 32).to(dtype)
    got = _compiled(rms_norm)(x)
    assert got.dtype == dtype
    torch.testing.assert_close(got, rms_norm(x), rtol=0, atol=0)

    def mixed(a, b, c):
        return a * b, a + c, b - c, a > b, torch.maximum(a, c), torch.where(a > 0, a, c)

    a, b, c = torch.randn(4, 5).to(dtype), torch.randn(4, 5), torch.randn(4, 5).double()
    for g, w in zip(_compiled(mixed)(a, b, c), mixed(a, b, c), strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w)
    with pytest.raises(Exception, match="maximum"):
        _compiled(lambda t: torch.maximum(t, torch.tensor(0.7)))(a)


def test_sums_and_products_of_bools_are_or_and_and():
    """isfinite and logaddexp decompose into a product of two masks; ``+`` and max of bools
    are "or"."""
    x = torch.tensor([0.5, -2.0, float("inf"), float("nan"), 3.0, -float("inf")])

    def f(a):
        return (
            (a > 0) * (a < 2), torch.isfinite(a), torch.logaddexp(a, a + 1),
            ((a > 0) + (a < -1)).float(), torch.maximum(a > 0, a < -1),
        )  # fmt: skip

    for g, w in zip(_compiled(f)(x), f(x), strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sixteen_bit_remainder_by_a_number(dtype):
    """The number is rounded to the tensor's dtype first (0.7 in bfloat16 is 0.69921875)."""
    a = torch.linspace(-7, 7, 2001).to(dtype)

    def f(t):
        return t % 0.7, torch.remainder(t, -0.7), torch.fmod(t, 0.3)

    for g, w in zip(_compiled(f)(a), f(a), strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
        assert torch.equal(torch.signbit(g), torch.signbit(w))


def test_integer_extremes_sum_dtypes_and_roll_over_a_dynamic_length():
    x = torch.randint(-50, 50, (4, 9))
    x[1, 3] = x[1, 7] = 49  # a tie: the first index

    def f(t):
        return (
            t.argmax(-1), t.argmin(0), *t.max(1), *t.min(0), t.max(), t.amax(-1),
            t.amin((0, 1)), torch.eq(t, 0).int().argmax(-1) - 1, t.to(torch.int8).max(1).values,
            (t > 0).sum(-1, dtype=torch.int32), t.float().mean(-1, dtype=torch.float64),
        )  # fmt: skip

    for g, w in zip(_compiled(f)(x), f(x), strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w)
    rolled = _compiled(lambda t: t.roll(3, -1) * 2)
    for n in (17, 40, 23):  # the second length makes it symbolic: roll's index % n
        t = torch.randn(3, n)
        torch.testing.assert_close(rolled(t), t.roll(3, -1) * 2)


def test_strict_says_why_an_operator_stays_in_pytorch():
    cases = [
        (lambda t: torch.erfinv(t), torch.zeros(3), "not in pytvmbridge's table"),
        (lambda t: t.prod(-1), torch.ones(2, 3, dtype=torch.int32), "dtype int32"),
        (lambda t: torch.maximum(t, torch.tensor(0.7)), torch.ones(3).half(), "mixes floating"),
    ]
    for fn, x, reason in cases:
        with pytest.raises(Exception, match=reason):
            _compiled(fn)(x)


def test_slices_bounded_by_symbolic_sizes():
    """Positional embeddings cut to the sequence (pos[:, :s]), a UNet's crop of a skip
    connection to the other branch's size, a slice from a size's half: one kernel each."""
    pos = torch.randn(1, 64, 8)

    def positions(x):
        return x + pos[:, : x.shape[1]]

    def crop(a, b):
        return a[:, :, : b.shape[2], : b.shape[3]] + b

    def second_half(x):
        return x[:, x.shape[1] // 2 :] * 2

    compiled = [_compiled(positions), _compiled(crop), _compiled(second_half)]
    for s in (10, 17, 33):
        x = torch.randn(2, s, 8)
        torch._dynamo.mark_dynamic(x, 1)
        a, b = torch.randn(1, 3, s + 2, s + 3), torch.randn(1, 3, s, s)
        for t in (a, b):
            torch._dynamo.mark_dynamic(t, 2)
            torch._dynamo.mark_dynamic(t, 3)
        torch.testing.assert_close(compiled[0](x), positions(x))
        torch.testing.assert_close(compiled[1](a, b), crop(a, b))
        torch.testing.assert_close(compiled[2](x), second_half(x))


@pytest.mark.parametrize(
    "pick",
    [
        lambda x: x.reshape(4, 6)[torch.tensor([0, 0, 3, 1])],
        lambda x: x.reshape(4, 6).index_select(1, torch.tensor([5, 0, 2])) * 2,
        lambda x: F.interpolate(x.reshape(1, 2, 3, 4), size=(5, 7)) + 1,
        lambda x: F.interpolate(x.reshape(1, 2, 3, 4), size=(5, 7), mode="bilinear"),
        lambda x: torch.roll(x.reshape(2, 3, 4), shifts=(1, -2), dims=(1, 2)).reshape(6, 4) * 3,
        lambda x: x.reshape(6, 4)[1:][torch.tensor([0, 4, 2])],  # the slice's offset, inlined
        lambda x: F.interpolate(x.reshape(1, 2, 3, 4)[:, :, 1:], size=(5, 5), mode="bilinear"),
    ],
    ids=["index", "index_select", "nearest", "bilinear", "roll", "slice", "sliced bilinear"],
)
def test_positions_into_a_reshaped_tensor(pick):
    """The reshape is inlined into the gather: the loaded int64 positions stand in for its
    axis variables (Swin's roll, Segformer's upsampling of a reshaped sequence)."""
    x = torch.randn(24)
    _check(pick, x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize(
    "args",
    [
        ((4, 3, 3), (10, 2, 1), 1),  # overlapping windows
        ((2, 2), (1, 5), None),
        ((40,), (1,), 0),
        ((3, 5), (0, 2), 2),  # a zero stride repeats
    ],
    ids=["windows", "strided", "flat", "zero stride"],
)
def test_as_strided_reads_storage_positions_as_eager(args, layout):
    """Storage positions are mapped back through the operand's traced strides, so a
    transposed operand's positions mean what they mean in eager."""
    size, stride, offset = args
    x = torch.randn(4, 10) if layout == "contiguous" else torch.randn(10, 4).t()
    if offset is None:
        _check(lambda t: (t * 2).as_strided(size, stride) + 1, x)
    else:
        _check(lambda t: (t * 2).as_strided(size, stride, offset) + 1, x)


def test_adaptive_pooling_of_a_channels_last_tensor():
    # PyTorch's decomposition restrides the pooled size-1 dimensions with as_strided
    x = torch.randn(2, 3, 16, 16).contiguous(memory_format=torch.channels_last)
    _check(torch.nn.AdaptiveAvgPool2d((1, 1)), x, rtol=1e-5, atol=1e-6)


def test_as_strided_of_an_operand_with_gaps_stays_in_pytorch():
    # a column slice's storage holds positions that are none of its elements
    x = torch.randn(4, 10)

    def fn(t):
        return t[:, :5].as_strided((3, 3), (10, 1), 2) * 2

    with pytest.raises(Exception, match="as_strided"):
        _compiled(fn)(x)
    torch._dynamo.reset()
    relaxed = torch.compile(fn, backend="pytvmbridge")
    torch.testing.assert_close(relaxed(x), fn(x))


def _write_cache(cache, positions, new):
    out = cache.clone()
    out.index_copy_(2, positions, new)  # Hugging Face's StaticCache update
    return out * 1


def _assign_rows(x, rows, values):
    out = x.clone()
    out[:, rows] = values
    return out + 1


@pytest.mark.parametrize(
    "fn,args",
    [
        (_write_cache, (torch.randn(1, 2, 8, 4), torch.tensor([3]), torch.randn(1, 2, 1, 4))),
        (_write_cache, (torch.randn(2, 2, 9, 3), torch.tensor([0, 5, 8]), torch.randn(2, 2, 3, 3))),
        (_assign_rows, (torch.randn(3, 6), torch.tensor([1, -1]), torch.tensor(2.5))),
        (_assign_rows, (torch.randn(3, 6), torch.tensor([4, 2]), torch.randn(3, 1))),
        (_assign_rows, (torch.randint(0, 9, (3, 6)), torch.tensor([1, 0]), torch.tensor(7))),
        (
            lambda x, i, v: x.index_put((i,), v, accumulate=True) * 2,
            (torch.randn(5, 3), torch.tensor([1, 1, 4]), torch.randn(3, 3)),
        ),
    ],
    ids=["decode", "prefill", "scalar", "broadcast", "int64", "accumulate repeated"],
)
def test_index_put_of_a_few_positions(fn, args):
    _check(fn, *args, rtol=1e-6, atol=1e-6)
