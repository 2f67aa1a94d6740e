"""A small UNet of the kind diffusion and segmentation models use: blocks of two 3x3
convolutions with group norm and SiLU, stride-2 convolutions down, a transposed convolution and
a bilinear upsampling on the way up, skip connections concatenated.

Group norm, the transposed convolution, `F.interpolate` and the concatenations are what this
model adds to the benchmark set (the ResNets and MobileNet have none of them).
"""

from __future__ import annotations

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, groups: int = 8) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(groups, cout), nn.SiLU(),
            nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(groups, cout), nn.SiLU(),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class UNet(nn.Module):
    def __init__(self, in_channels: int = 3, base: int = 32, out_channels: int = 3) -> None:
        super().__init__()
        self.enc1 = Block(in_channels, base)
        self.down1 = nn.Conv2d(base, base, 3, stride=2, padding=1)
        self.enc2 = Block(base, 2 * base)
        self.down2 = nn.Conv2d(2 * base, 2 * base, 3, stride=2, padding=1)
        self.mid = Block(2 * base, 4 * base)
        self.up2 = nn.Sequential(
            nn.Upsample(scale_factor=2, mode="bilinear"), nn.Conv2d(4 * base, 2 * base, 1)
        )
        self.dec2 = Block(4 * base, 2 * base)
        self.up1 = nn.ConvTranspose2d(2 * base, base, 2, stride=2)
        self.dec1 = Block(2 * base, base)
        self.out = nn.Conv2d(base, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.enc1(x)
        h2 = self.enc2(self.down1(h1))
        m = self.mid(self.down2(h2))
        y = self.dec2(torch.cat([self.up2(m), h2], 1))
        y = self.dec1(torch.cat([self.up1(y), h1], 1))
        return self.out(y)
