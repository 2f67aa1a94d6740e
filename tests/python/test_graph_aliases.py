"""Outputs that eager returns as views of another output or of an input (``return y, y[0]``,
``y.t()``, ``x.view(-1)``) come back as views from the compiled graph too: same values,
shapes, strides and storage offsets, and the same sharing of storage between outputs and
inputs, so an in-place update of one shows in the other as in eager. Checked for the
``torch.compile`` backend (with and without gradients), ``compile_graph`` itself and
``pytvmbridge.torch.compile`` (also after ``load``)."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import pytvmbridge.torch as ptt
from pytvmbridge.graph import compile_graph


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def _sharing(outputs, inputs):
    """Which outputs share storage with which outputs and inputs (the aliasing pattern)."""
    every = list(outputs) + list(inputs)
    return [[_storage(a) == _storage(b) for b in every] for a in outputs]


def _check(got, want, got_inputs, want_inputs):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)
        assert (g.shape, g.stride(), g.storage_offset()) == (
            w.shape,
            w.stride(),
            w.storage_offset(),
        )
        assert g._is_view() == w._is_view()
    assert _sharing(got, got_inputs) == _sharing(want, want_inputs)


def chain(x):
    y = torch.relu(x) * 2.0
    return y, y[0], y.t(), y.t()[1:], y.unsqueeze(0).expand(2, 3, 4), y.reshape(2, 6)


def of_input(x):
    return torch.relu(x) + 1.0, x.t(), x[1], x.view(-1)


def slices(x):
    y = torch.sigmoid(x)
    return y, y[:, 1:3], y[0, 2:], y.transpose(0, 1)


@pytest.mark.parametrize("fn", [chain, of_input, slices])
@pytest.mark.parametrize("grad", [False, True])
def test_backend_returns_views_like_eager(fn, grad):
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    x_got, x_want = x.clone().requires_grad_(grad), x.clone().requires_grad_(grad)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="pytvmbridge", options={"strict": True})
    got, want = compiled(x_got), fn(x_want)
    _check(got, want, [x_got], [x_want])
    if grad:
        sum((o * (k + 1)).sum() for k, o in enumerate(got)).backward()
        sum((o * (k + 1)).sum() for k, o in enumerate(want)).backward()
        torch.testing.assert_close(x_got.grad, x_want.grad)


def test_in_place_update_of_an_output_shows_in_its_view():
    torch._dynamo.reset()
    compiled = torch.compile(chain, backend="pytvmbridge", options={"strict": True})
    x = torch.randn(3, 4)
    y, row, yt, *_ = compiled(x)
    y.add_(100.0)
    torch.testing.assert_close(row, y[0])
    torch.testing.assert_close(yt, y.t())


def test_compile_graph_records_the_views_and_keeps_them_out_of_the_kernel():
    x = torch.randn(3, 4)
    cg = compile_graph(make_fx(chain)(x), [x])
    assert cg.output_of[0] == 0 and all(i is None for i in cg.output_of[1:])
    assert sorted(cg.output_replays) == [1, 2, 3, 4, 5]
    got, want = cg(x), chain(x)
    _check(got, want, [x], [x])


def test_views_can_be_switched_off():
    x = torch.randn(3, 4)
    cg = compile_graph(make_fx(chain)(x), [x], alias_outputs=False)
    assert not cg.output_replays
    got = cg(x)
    for g, w in zip(got, chain(x), strict=True):
        torch.testing.assert_close(g, w)
    assert _storage(got[1]) != _storage(got[0])  # copies, as the option asks


class Views(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = torch.tanh(self.lin(x))
        return y, y[0], y.t(), x.t()


def test_pytorchtvm_compile_returns_views_after_load_too(tmp_path):
    torch.manual_seed(1)
    model = Views().eval()
    option = {"input_infos": [("x", ("batch", 4))], "export_dir": str(tmp_path)}
    compiled = ptt.compile(model, option)
    assert set(compiled.plan["views"]) == {"1", "2", "3"}
    loaded = ptt.load(tmp_path)
    for batch in (2, 5):
        x = torch.randn(batch, 4)
        with torch.no_grad():
            want = model(x)
            _check(compiled(x), want, [x], [x])
            _check(loaded(x), want, [x], [x])


class Flatten(torch.nn.Module):
    def forward(self, x):
        return x.reshape(-1), x + 1


def test_pytorchtvm_reshape_of_an_input_passed_transposed(tmp_path):
    # Traced with a row-major input, the reshape is recorded as a view; an input passed
    # transposed cannot be viewed so, and gets eager's reshape: a copy of the values
    compiled = ptt.compile(
        Flatten().eval(), {"input_infos": [("x", (4, 3))], "export_dir": str(tmp_path)}
    )
    x = torch.arange(12.0).reshape(3, 4).t()
    for model in (compiled, ptt.load(tmp_path)):
        flat, plus = model(x)
        torch.testing.assert_close(flat, torch.tensor([0.0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]))
        torch.testing.assert_close(plus, x + 1)
    row_major = torch.arange(12.0).reshape(4, 3)
    flat = compiled(row_major)[0]  # still a view where eager's is
    assert flat.data_ptr() == row_major.data_ptr() and flat.shape == (12,)


def test_pytorchtvm_views_under_torch_compile_and_export():
    torch.manual_seed(2)
    model = Views().eval()
    compiled = ptt.compile(model, {"input_infos": [("x", ("batch", 4))]})
    x = torch.randn(3, 4)
    with torch.no_grad():
        want = model(x)
        torch._dynamo.reset()
        _check(torch.compile(compiled, fullgraph=True, backend="aot_eager")(x), want, [x], [x])
        exported = torch.export.export(compiled, (x,)).module()
        for g, w in zip(exported(x), want, strict=True):
            torch.testing.assert_close(g, w)


def test_scripting_a_model_that_returns_views_says_what_to_use():
    compiled = ptt.compile(Views().eval(), {"input_infos": [("x", (3, 4))]})
    with pytest.raises(NotImplementedError, match=r"returns views.*torch\.jit\.trace"):
        torch.jit.script(compiled)


class ViewsAroundPyTorch(torch.nn.Module):
    """Views of a compiled output, of an output computed in PyTorch (logcumsumexp), and of an
    input."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = torch.relu(self.lin(x))
        c = torch.logcumsumexp(y, 1)
        return y, y.t(), c[0], c * 2.0, x[:, 1:]


def test_views_in_a_model_with_operators_left_to_pytorch(tmp_path):
    torch.manual_seed(3)
    model = ViewsAroundPyTorch().eval()
    option = {"input_infos": [("x", ("batch", 4))], "export_dir": str(tmp_path)}
    compiled = ptt.compile(model, option)
    assert compiled.plan["fallback_ops"] == ["aten::logcumsumexp.default"]
    loaded = ptt.load(tmp_path)
    x = torch.randn(3, 4)
    with torch.no_grad():
        want = model(x)
        _check(compiled(x), want, [x], [x])
        _check(loaded(x), want, [x], [x])
        torch._dynamo.reset()
        _check(torch.compile(model, backend="pytvmbridge")(x), want, [x], [x])
