"""Decompositions the graph backend adds to PyTorch's core ATen table: fused attention operators
that would otherwise stay whole, and so run in PyTorch, spelled in the operators the compiler
has (matrix products, softmax, layer norm).

- ``_scaled_dot_product_flash_attention_for_cpu`` (what ``F.scaled_dot_product_attention``
  becomes on a CPU): PyTorch's own rule for it returns the attention probabilities where the op
  returns the log-sum-exp of each row, which the flash backward then reads (wrong gradients), so
  the backend left the op out and attention ran in PyTorch, in inference too. This one returns
  the log-sum-exp, and its backward is derived from its parts.
- ``_transformer_encoder_layer_fwd`` (``nn.TransformerEncoderLayer``'s fast path, taken in
  eval mode without gradients): the layer in full, the attention as above.

Each gives ``NotImplemented`` (the operator stays as it is) where it does not apply: dropout
(random) and an encoder layer with a mask (the fast path then works on nested tensors). Under
symbolic sizes the layer compiles too: BERT-base at batch 8, sequence 128 under
``dynamic=True``, 71 ms against the fast path's 85 (it had kept the fast path while its
attention and linear layers over symbolic sizes took 96-121 ms).

Example:
    >>> import torch
    >>> q = k = v = torch.randn(1, 2, 4, 8)
    >>> out, lse = sdpa_flash_cpu(q, k, v)
    >>> torch.allclose(out, torch.nn.functional.scaled_dot_product_attention(q, k, v), atol=1e-6)
    True
    >>> lse.shape
    torch.Size([1, 2, 4])
"""

from __future__ import annotations

import math
from typing import Any

import torch

aten = torch.ops.aten


def _heads_of(query: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
    """Keys or values with fewer heads than the queries (grouped-query attention,
    ``enable_gqa=True``), each head repeated for its group of query heads."""
    groups = query.shape[-3] // kv.shape[-3]
    if groups == 1:
        return kv
    grouped = kv.unsqueeze(-3).expand(*kv.shape[:-2], groups, *kv.shape[-2:])
    return grouped.reshape(*kv.shape[:-3], query.shape[-3], *kv.shape[-2:])


def _group_sum(grad: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
    """The gradient of a key or value from its repeats' (``_heads_of``'s derivative)."""
    groups = grad.shape[-3] // kv.shape[-3]
    if groups == 1:
        return grad
    return grad.reshape(*kv.shape[:-2], groups, *grad.shape[-2:]).sum(dim=-3)


def _scores(
    query: torch.Tensor,
    key: torch.Tensor,
    is_causal: bool,
    attn_mask: torch.Tensor | None,
    scale: float | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The scaled, masked scores (-inf where a key is hidden) and, given a mask, the query
    rows it hides every key from (broadcastable to the scores, last axis 1)."""
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = torch.matmul(query, _heads_of(query, key).transpose(-2, -1)) * scale
    if is_causal:
        rows, cols = scores.shape[-2], scores.shape[-1]
        keep = torch.ones(rows, cols, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is None:
        return scores, None
    if attn_mask.dtype == torch.bool:  # F.scaled_dot_product_attention's own conversion
        attn_mask = torch.zeros_like(attn_mask, dtype=scores.dtype).masked_fill(
            ~attn_mask, float("-inf")
        )
    # Found from the mask, smaller than the scores by the heads it broadcasts over.
    hidden = (attn_mask == float("-inf")).all(dim=-1, keepdim=True)
    return scores + attn_mask, hidden


def sdpa_flash_cpu(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> Any:
    """(output, logsumexp) of ``aten._scaled_dot_product_flash_attention_for_cpu``; the
    log-sum-exp per row of the scores, in float32 for 16-bit inputs, as the op gives it."""
    if dropout_p != 0.0:
        return NotImplemented
    scores, hidden = _scores(query, key, is_causal, attn_mask, scale)
    acc = torch.promote_types(query.dtype, torch.float32)
    value = _heads_of(query, value)
    if hidden is None:
        lse = torch.logsumexp(scores.to(acc), dim=-1)
        return torch.matmul(torch.softmax(scores, dim=-1), value), lse
    # A query row whose mask hides every key (left padding, say) gets zeros from the operator,
    # and a log-sum-exp of 0, where a softmax over -inf alone gives NaN: such rows are
    # softmaxed over zeros, then cleared.
    scores = scores.masked_fill(hidden, 0.0)
    lse = torch.logsumexp(scores.to(acc), dim=-1).masked_fill(hidden.squeeze(-1), 0.0)
    probs = torch.softmax(scores, dim=-1).masked_fill(hidden, 0.0)
    return torch.matmul(probs, value), lse


def sdpa_flash_cpu_backward(
    grad_out: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    out: torch.Tensor,
    logsumexp: torch.Tensor,
    dropout_p: float,
    is_causal: bool,
    *,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> Any:
    """(grad_query, grad_key, grad_value) of the CPU flash attention, from its saved output
    and log-sum-exp: the probabilities are recomputed as ``exp(scores - logsumexp)`` (zero
    in rows the mask hides whole, whose log-sum-exp is 0 and scores -inf), then the softmax's
    and the two products' derivatives. Autograd records this operator for the forward's
    derivative before any decomposition applies, so without this rule training graphs left
    every attention's backward in PyTorch."""
    if dropout_p != 0.0:
        return NotImplemented
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores, _ = _scores(query, key, is_causal, attn_mask, scale)
    acc = logsumexp.dtype  # float32 for 16-bit inputs
    probs = torch.exp(scores.to(acc) - logsumexp.unsqueeze(-1)).to(query.dtype)
    grad_value = _group_sum(torch.matmul(probs.transpose(-2, -1), grad_out), value)
    grad_probs = torch.matmul(grad_out, _heads_of(query, value).transpose(-2, -1))
    # softmax's derivative: sum_j P_ij dP_ij is the row's dot of the output and its gradient
    row_dot = (grad_out.to(acc) * out.to(acc)).sum(dim=-1, keepdim=True)
    grad_scores = (probs.to(acc) * (grad_probs.to(acc) - row_dot)).to(query.dtype) * scale
    grad_query = torch.matmul(grad_scores, _heads_of(query, key))
    grad_key = _group_sum(torch.matmul(grad_scores.transpose(-2, -1), query), key)
    return grad_query, grad_key, grad_value


def transformer_encoder_layer_fwd(
    src: torch.Tensor,
    embed_dim: int,
    num_heads: int,
    qkv_weight: torch.Tensor,
    qkv_bias: torch.Tensor,
    proj_weight: torch.Tensor,
    proj_bias: torch.Tensor,
    use_gelu: bool,
    norm_first: bool,
    eps: float,
    norm_weight_1: torch.Tensor,
    norm_bias_1: torch.Tensor,
    norm_weight_2: torch.Tensor,
    norm_bias_2: torch.Tensor,
    ffn_weight_1: torch.Tensor,
    ffn_bias_1: torch.Tensor,
    ffn_weight_2: torch.Tensor,
    ffn_bias_2: torch.Tensor,
    mask: torch.Tensor | None = None,
    mask_type: int | None = None,
) -> Any:
    """``nn.TransformerEncoderLayer``'s fast path (batch first, no dropout in eval)."""
    if mask is not None or src.dim() != 3:
        return NotImplemented
    F = torch.nn.functional
    batch, length, _ = src.shape
    head = embed_dim // num_heads

    def attention(x: torch.Tensor) -> torch.Tensor:
        qkv = F.linear(x, qkv_weight, qkv_bias)
        q, k, v = (
            t.reshape(batch, length, num_heads, head).transpose(1, 2)
            for t in qkv.split(embed_dim, dim=-1)
        )
        out, _ = sdpa_flash_cpu(q, k, v)
        out = out.transpose(1, 2).reshape(batch, length, embed_dim)
        return F.linear(out, proj_weight, proj_bias)

    def feed_forward(x: torch.Tensor) -> torch.Tensor:
        hidden = F.linear(x, ffn_weight_1, ffn_bias_1)
        hidden = F.gelu(hidden) if use_gelu else F.relu(hidden)
        return F.linear(hidden, ffn_weight_2, ffn_bias_2)

    def norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (embed_dim,), weight, bias, eps)

    x = src
    if norm_first:
        x = x + attention(norm(x, norm_weight_1, norm_bias_1))
        return x + feed_forward(norm(x, norm_weight_2, norm_bias_2))
    x = norm(x + attention(x), norm_weight_1, norm_bias_1)
    return norm(x + feed_forward(x), norm_weight_2, norm_bias_2)


def extra_decompositions() -> dict[Any, Any]:
    """The decompositions above, by operator."""
    return {
        aten._scaled_dot_product_flash_attention_for_cpu.default: sdpa_flash_cpu,
        aten._scaled_dot_product_flash_attention_for_cpu_backward.default: (
            sdpa_flash_cpu_backward
        ),
        aten._transformer_encoder_layer_fwd.default: transformer_encoder_layer_fwd,
    }


__all__ = [
    "extra_decompositions",
    "sdpa_flash_cpu",
    "sdpa_flash_cpu_backward",
    "transformer_encoder_layer_fwd",
]
