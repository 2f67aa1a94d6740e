"""A BERT-style transformer encoder layer: self-attention, layer norm, GELU feed-forward."""

from __future__ import annotations

import math

import torch
from torch import nn


class BertLayer(nn.Module):
    def __init__(self, hidden: int = 768, heads: int = 12, ffn: int | None = None) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden)
        self.ffn1 = nn.Linear(hidden, ffn or 4 * hidden)
        self.ffn2 = nn.Linear(ffn or 4 * hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=-1)

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(b, s, self.heads, self.head_dim).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        ctx = torch.softmax(scores, dim=-1) @ v
        ctx = ctx.transpose(1, 2).reshape(b, s, h)
        x = self.norm1(x + self.out(ctx))
        return self.norm2(x + self.ffn2(nn.functional.gelu(self.ffn1(x))))
