"""A GPT-2-style decoder: token and position embeddings, causal self-attention blocks (pre-norm,
GELU feed-forward) and a language-model head tied to the token embedding.

The input is a batch of token ids (int64); the causal mask is built in ``forward`` from
``arange`` positions, as many decoder implementations do, so a compiled model computes the
embedding lookup, the positions and the mask in its kernels, not only the matrix products.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class CausalBlock(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.norm1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden)
        self.ffn1 = nn.Linear(hidden, 4 * hidden)
        self.ffn2 = nn.Linear(4 * hidden, hidden)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(h, dim=-1)

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(b, s, self.heads, self.head_dim).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~mask, float("-inf"))
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.out(ctx)
        return x + self.ffn2(nn.functional.gelu(self.ffn1(self.norm2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(
        self,
        vocab: int = 8192,
        hidden: int = 768,
        heads: int = 12,
        layers: int = 2,
        max_positions: int = 1024,
    ) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_positions, hidden)
        self.blocks = nn.ModuleList(CausalBlock(hidden, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied, as GPT-2's
        nn.init.normal_(self.tokens.weight, std=0.02)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        s = ids.shape[1]
        where = torch.arange(s, device=ids.device)
        mask = where[:, None] >= where[None, :]
        x = self.tokens(ids) + self.positions(where)[None]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))
