"""Attention through the torch.compile backend: values and gradients against eager PyTorch
(scaled_dot_product_attention's export-only decomposition, which hands the flash backward the
attention probabilities for its logsumexp, is left out, as Inductor leaves it out)."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import pytvmbridge.torch  # noqa: F401  (registers the backend)


def _grads(fn, *tensors):
    out = fn(*tensors)
    (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
    grads = [t.grad.clone() for t in tensors]
    for t in tensors:
        t.grad = None
    return out.detach(), grads


def _check_trains_as_eager(attend, q, k, v, **tolerance):
    """Compile ``attend`` under strict (nothing left to PyTorch, forward or backward); its
    output, gradients and no_grad output against eager's. Returns eager's output."""
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = torch.compile(attend, backend="pytvmbridge", options={"strict": True})
        out, grads = _grads(compiled, q, k, v)
        with torch.no_grad():
            inference = compiled(q, k, v)
    want_out, want = _grads(attend, q, k, v)
    torch.testing.assert_close(out, want_out, **tolerance)
    torch.testing.assert_close(inference, want_out, **tolerance)
    for got, ref in zip(grads, want, strict=True):
        assert not got.isnan().any()
        torch.testing.assert_close(got, ref, **tolerance)
    return want_out


def test_scaled_dot_product_attention_gradients_match_eager():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 5, 8, requires_grad=True) for _ in range(3))
    mask = torch.ones(5, 5, dtype=torch.bool).tril()

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = torch.compile(attend, backend="pytvmbridge", options={"strict": True})
        out, grads = _grads(compiled, q, k, v)
    want_out, want = _grads(attend, q, k, v)
    torch.testing.assert_close(out, want_out)
    assert out.is_contiguous()
    for got, ref in zip(grads, want, strict=True):
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dynamic", [False, True])
def test_multihead_attention_training_gradients_match_eager(dynamic):
    # dynamic=True: outputs eager lays out permuted (a head split, (b, h, l, e) stored as
    # (l, b, h, e)) keep eager's strides with symbolic sizes, so the view of them that
    # PyTorch runs later in the model works as in eager
    torch.manual_seed(1)
    mha = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = torch.compile(mha, backend="pytvmbridge", dynamic=dynamic)
    for batch, length in ((2, 5), (3, 7)) if dynamic else ((2, 5),):
        x = torch.randn(batch, length, 16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled(x, x, x, need_weights=False)[0].pow(2).sum().backward()
        got = {n: p.grad.clone() for n, p in mha.named_parameters()}
        mha.zero_grad()
        mha(x, x, x, need_weights=False)[0].pow(2).sum().backward()
        for name, p in mha.named_parameters():
            torch.testing.assert_close(got[name], p.grad, rtol=1e-4, atol=1e-5, msg=name)
        mha.zero_grad()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize(
    "kind", ["plain", "causal", "bool mask", "float mask", "scale"], ids=lambda k: k
)
def test_scaled_dot_product_attention_compiles_and_trains(kind, dtype):
    # PyTorch's rule for the CPU flash attention returns the probabilities where the op returns
    # the rows' log-sum-exp (which the flash backward reads): the backend left the op whole and
    # attention ran in PyTorch, in inference too. graph/decompositions.py gives the log-sum-exp,
    # and a rule for the flash backward, which autograd records before decompositions apply
    # (strict: both directions compile whole).
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 6, 8, dtype=dtype, requires_grad=True) for _ in range(3))
    kwargs = {
        "plain": {},
        "causal": {"is_causal": True},
        "bool mask": {"attn_mask": torch.rand(6, 6) > 0.3},
        "float mask": {"attn_mask": torch.randn(6, 6, dtype=dtype)},
        "scale": {"scale": 0.3},
    }[kind]
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {}

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, **kwargs)

    _check_trains_as_eager(attend, q, k, v, **tolerance)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_attention_rows_that_see_no_key_are_zero_as_in_eager(kind):
    # Left padding hides every key from the padded query rows: PyTorch's operator gives those
    # rows zeros (and zero gradients) where a softmax over -inf alone gives NaN
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, requires_grad=True) for _ in range(3))
    keep = torch.ones(2, 1, 5, 5, dtype=torch.bool)
    keep[0, :, :2] = False  # the first batch's first two query rows see nothing
    keep[1, :, :, 3:] = False
    mask = keep if kind == "bool" else torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    want_out = _check_trains_as_eager(attend, q, k, v, rtol=1e-5, atol=1e-5)
    assert torch.equal(want_out[0, :, :2], torch.zeros(3, 2, 4))  # eager's rule, checked


@pytest.mark.parametrize("kind", ["plain", "causal", "bool mask"])
def test_grouped_query_attention_compiles_and_trains(kind):
    # enable_gqa=True (Hugging Face's Llama, Mistral and Qwen2 without a padding mask): keys and
    # values with fewer heads than the queries, each serving a group of query heads. The
    # decomposition multiplied them as they came and the compile failed outright.
    torch.manual_seed(0)
    q = torch.randn(2, 6, 5, 8, requires_grad=True)
    k, v = (torch.randn(2, 2, 5, 8, requires_grad=True) for _ in range(2))
    kwargs = {
        "plain": {},
        "causal": {"is_causal": True},
        "bool mask": {"attn_mask": torch.rand(5, 5) > 0.3},
    }[kind]

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kwargs)

    _check_trains_as_eager(attend, q, k, v, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_fast_path_compiles(norm_first):
    # In eval mode without gradients nn.TransformerEncoderLayer takes PyTorch's fast path, one
    # operator (_transformer_encoder_layer_fwd) the backend left whole: the layer ran in PyTorch
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        32, 4, 64, batch_first=True, norm_first=norm_first, activation="gelu"
    ).eval()
    for dynamic in (False, True):  # symbolic batch and length compile too, whole
        torch._dynamo.reset()
        compiled = torch.compile(
            layer, backend="pytvmbridge", options={"strict": True}, dynamic=dynamic
        )
        with torch.no_grad():
            for shape in ((3, 7, 32), (2, 11, 32)) if dynamic else ((3, 7, 32),):
                x = torch.randn(shape)
                torch.testing.assert_close(compiled(x), layer(x), rtol=1e-4, atol=1e-4)
