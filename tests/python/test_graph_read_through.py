"""Linear layers on 3-d inputs without reshapes (graph/linear.py) and batched products reading
their operands through view chains (graph/read_through.py): values against eager PyTorch."""

import itertools

import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from pytvmbridge.graph import backend, compile_graph
from pytvmbridge.graph.linear import fold_linear_views
from pytvmbridge.graph.read_through import _view_map, plan_read_through

aten = torch.ops.aten
_DECOMP = torch._decomp.core_aten_decompositions()


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize(
    ("shape", "width", "bias"),
    [((2, 5, 16), 64, True), ((2, 5, 16), 64, False), ((2, 3, 4, 16), 32, True),
     ((3, 5, 16), 10, True)],
)  # fmt: skip
def test_linear_on_3d_input_is_one_node_and_matches_eager(shape, width, bias):
    """view -> addmm (or mm) -> view becomes aten.linear on the input itself; the compiled
    graph matches eager, also after the weight changes (packed or transposed once)."""

    def f(x, w, b):
        return torch.tanh(torch.nn.functional.linear(x, w, b if bias else None))

    x, w, b = torch.randn(*shape), torch.randn(width, shape[-1]), torch.randn(width)
    gm = make_fx(f, decomposition_table=_DECOMP)(x, w, b)
    assert fold_linear_views(gm) == 1
    assert aten.linear.default in _targets(gm)
    assert not {aten.addmm.default, aten.mm.default, aten.view.default} & set(_targets(gm))
    torch.testing.assert_close(gm(x, w, b), f(x, w, b))

    cg = compile_graph(make_fx(f, decomposition_table=_DECOMP)(x, w, b), [x, w, b])
    assert 1 not in cg.tensor_inputs  # the weight is passed folded (packed or transposed)
    torch.testing.assert_close(cg(x, w, b), f(x, w, b), rtol=1e-4, atol=1e-4)
    w.mul_(-0.5)
    torch.testing.assert_close(cg(x, w, b), f(x, w, b), rtol=1e-4, atol=1e-4)
    # Without weight folding the linear node runs as it is, reading W as PyTorch holds it.
    cg = compile_graph(make_fx(f, decomposition_table=_DECOMP)(x, w, b), [x, w, b],
                       fold_weights=False)  # fmt: skip
    torch.testing.assert_close(cg(x, w, b), f(x, w, b), rtol=1e-4, atol=1e-4)


def test_linear_whose_2d_product_is_also_used_is_left_alone():
    def f(x, w, b):
        m = torch.ops.aten.addmm(b, x.view(-1, 8), w.t())
        return m.view(2, 3, 4), m.sum()

    x, w, b = torch.randn(2, 3, 8), torch.randn(4, 8), torch.randn(4)
    gm = make_fx(f)(x, w, b)
    assert fold_linear_views(gm) == 0
    cg = compile_graph(make_fx(f)(x, w, b), [x, w, b])
    for got, want in zip(cg(x, w, b), f(x, w, b), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_linear_with_dynamic_batch_compiles_once():
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU()).eval()
    torch._dynamo.reset()
    before = backend.compile_count
    with torch.no_grad():
        compiled = torch.compile(model, backend="pytvmbridge", dynamic=True)
        for batch in (2, 3, 6):
            x = torch.randn(batch, 7, 16)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert backend.compile_count - before == 1


@pytest.mark.parametrize(
    ("src", "dst"),
    [((8, 12, 5, 4), (96, 5, 4)), ((96, 5, 4), (8, 12, 5, 4)), ((2, 3, 20), (2, 3, 4, 5)),
     ((6, 1, 4), (6, 4)), ((6, 4), (6, 1, 4)), ((2, 3, 4, 5), (6, 20))],
)  # fmt: skip
def test_view_index_map_matches_reshape(src, dst):
    """Each index of the view maps to the source element NumPy's reshape puts there."""
    mapping = _view_map(list(src), list(dst))
    assert mapping is not None
    data = np.arange(np.prod(src)).reshape(src)
    view = data.reshape(dst)
    for index in itertools.product(*(range(d) for d in dst)):
        assert data[tuple(mapping(list(index)))] == view[index]


def test_view_that_regroups_both_sides_is_not_mapped():
    assert _view_map([4, 6], [6, 4]) is None


def _attention(qkv, heads, dim):
    b, s, _ = qkv.shape
    q, k, v = (t.reshape(b, s, heads, dim).transpose(1, 2) for t in qkv.split(heads * dim, -1))
    probs = torch.softmax(q @ k.transpose(-1, -2) / dim**0.5, -1)
    return (probs @ v).transpose(1, 2).reshape(b, s, heads * dim)


@pytest.mark.parametrize(("seq", "heads", "dim"), [(5, 2, 4), (64, 2, 16), (32, 3, 32)])
def test_attention_products_read_the_qkv_output_in_place(seq, heads, dim):
    """Both products of attention read the QKV tensor through the head views (k's columns
    strided: copied into panels, q and v in place); values match eager, also compiled whole
    with a linear layer in front."""
    qkv = torch.randn(2, seq, 3 * heads * dim)
    gm = make_fx(lambda t: _attention(t, heads, dim), decomposition_table=_DECOMP)(qkv)
    assert len(plan_read_through(gm)) == 2
    cg = compile_graph(gm, [qkv])
    torch.testing.assert_close(cg(qkv), _attention(qkv, heads, dim), rtol=1e-4, atol=1e-4)

    proj = torch.nn.Linear(8, 3 * heads * dim).eval()

    def layer(x):
        return _attention(proj(x), heads, dim)

    x = torch.randn(2, seq, 8)
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(layer, backend="pytvmbridge")
        torch.testing.assert_close(compiled(x), layer(x), rtol=1e-4, atol=1e-4)


def test_batched_product_of_transposed_operands():
    """Both operands transposed views of computed tensors (a strided row operand read in
    place, a streamed one whose columns are strided); a plain bmm is left to the default."""

    def f(a, b):
        return torch.bmm(torch.relu(a).transpose(1, 2), torch.exp(b).transpose(1, 2))

    a, b = torch.randn(3, 6, 5), torch.randn(3, 7, 6)
    gm = make_fx(f, decomposition_table=_DECOMP)(a, b)
    assert len(plan_read_through(gm)) == 1
    cg = compile_graph(gm, [a, b])
    torch.testing.assert_close(cg(a, b), f(a, b), rtol=1e-4, atol=1e-4)
    plain = make_fx(torch.bmm)(a.transpose(1, 2).contiguous(), b.transpose(1, 2).contiguous())
    assert plan_read_through(plain) == {}
