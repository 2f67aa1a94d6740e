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


def test_scaled_dot_product_attention_gradients_match_eager():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 5, 8, requires_grad=True) for _ in range(3))
    mask = torch.ones(5, 5, dtype=torch.bool).tril()

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = torch.compile(attend, backend="pytvmbridge")
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
