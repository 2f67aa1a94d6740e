"""MobileNetV2 (Sandler et al.): inverted residuals with depthwise convolutions and ReLU6."""

from __future__ import annotations

import torch
from torch import nn


def _cbr(cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU6(inplace=True),
    )


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers = [] if expand == 1 else [_cbr(cin, hidden, 1)]
        layers += [
            _cbr(hidden, hidden, 3, stride, groups=hidden),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


def _div8(v: float) -> int:
    return max(8, int(v + 4) // 8 * 8)


class MobileNetV2(nn.Module):
    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))  # fmt: skip

    def __init__(
        self,
        width_mult: float = 1.0,
        num_classes: int = 1000,
        settings: tuple[tuple[int, int, int, int], ...] | None = None,
    ) -> None:
        """``settings`` (expand, channels, repeats, stride per stage) shortens it for tests."""
        super().__init__()
        cin = _div8(32 * width_mult)
        layers: list[nn.Module] = [_cbr(3, cin, 3, 2)]
        for t, c, n, s in settings or self.SETTINGS:
            cout = _div8(c * width_mult)
            for i in range(n):
                layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        last = _div8(1280 * max(1.0, width_mult))
        layers.append(_cbr(cin, last, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(last, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.features(x).mean((2, 3))
        return self.classifier(y)
