"""A model with data-dependent control flow: the branch taken depends on a tensor's value, so
Dynamo breaks the graph there (two compiled graphs around a Python ``if``)."""

from __future__ import annotations

import torch
from torch import nn


class GatedNet(nn.Module):
    def __init__(self, features: int = 256, num_classes: int = 10) -> None:
        super().__init__()
        self.encode = nn.Linear(features, features)
        self.small = nn.Linear(features, num_classes)
        self.large = nn.Sequential(
            nn.Linear(features, 2 * features), nn.Tanh(), nn.Linear(2 * features, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.encode(x))
        if h.mean() > 0.2:  # data-dependent: a graph break
            return torch.sigmoid(self.small(h))
        return torch.sigmoid(self.large(h))
