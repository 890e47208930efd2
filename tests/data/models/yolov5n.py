"""YOLOv5n (v6.0) in plain torch, to count its memory on fake tensors.

Written from the published architecture (ultralytics/yolov5 ``models/yolov5s.yaml`` with
the ``n`` multipliers: depth 0.33, width 0.25; ``models/common.py`` Conv, C3, SPPF;
``models/yolo.py`` Detect with 3 anchors per level and 80 classes): no code copied, no
weights. About 1.87 M parameters, as the README's 1.9 M.
"""

from __future__ import annotations

import torch
from torch import nn


class Conv(nn.Module):
    """Conv2d without bias, batch norm, SiLU."""

    def __init__(self, cin: int, cout: int, k: int = 1, s: int = 1, p: int | None = None) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2 if p is None else p, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """conv -> bn -> SiLU."""
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    """1x1 then 3x3 convolution, with a residual when asked."""

    def __init__(self, c: int, shortcut: bool) -> None:
        super().__init__()
        self.cv1, self.cv2, self.add = Conv(c, c, 1), Conv(c, c, 3), shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Residual bottleneck."""
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """CSP block: two 1x1 branches, n bottlenecks on one, concatenated, 1x1 out."""

    def __init__(self, cin: int, cout: int, n: int, shortcut: bool = True) -> None:
        super().__init__()
        c = cout // 2
        self.cv1, self.cv2, self.cv3 = Conv(cin, c), Conv(cin, c), Conv(2 * c, cout)
        self.m = nn.Sequential(*(Bottleneck(c, shortcut) for _ in range(n)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """CSP merge of the two branches."""
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class SPPF(nn.Module):
    """Spatial pyramid pooling, fast: three chained 5x5 max pools, concatenated."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        c = cin // 2
        self.cv1, self.cv2 = Conv(cin, c), Conv(4 * c, cout)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Pool three times and merge."""
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat((x, y1, y2, self.pool(y2)), 1))


class YOLOv5n(nn.Module):
    """Backbone (CSP-Darknet), PANet neck and the three-level detect head."""

    def __init__(self, classes: int = 80, anchors: int = 3) -> None:
        super().__init__()
        self.no, self.na = classes + 5, anchors
        self.b0, self.b1, self.b2 = Conv(3, 16, 6, 2, 2), Conv(16, 32, 3, 2), C3(32, 32, 1)
        self.b3, self.b4 = Conv(32, 64, 3, 2), C3(64, 64, 2)
        self.b5, self.b6 = Conv(64, 128, 3, 2), C3(128, 128, 3)
        self.b7, self.b8, self.b9 = Conv(128, 256, 3, 2), C3(256, 256, 1), SPPF(256, 256)
        self.h10, self.h13 = Conv(256, 128), C3(256, 128, 1, False)
        self.h14, self.h17 = Conv(128, 64), C3(128, 64, 1, False)
        self.h18, self.h20 = Conv(64, 64, 3, 2), C3(128, 128, 1, False)
        self.h21, self.h23 = Conv(128, 128, 3, 2), C3(256, 256, 1, False)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.detect = nn.ModuleList(nn.Conv2d(c, self.no * anchors, 1) for c in (64, 128, 256))

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Raw per-level predictions (batch, anchors, height, width, 5 + classes)."""
        p3 = self.b4(self.b3(self.b2(self.b1(self.b0(x)))))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        h10 = self.h10(p5)
        h14 = self.h14(self.h13(torch.cat((self.up(h10), p4), 1)))
        out3 = self.h17(torch.cat((self.up(h14), p3), 1))
        out4 = self.h20(torch.cat((self.h18(out3), h14), 1))
        out5 = self.h23(torch.cat((self.h21(out4), h10), 1))
        outs = []
        for head, y in zip(self.detect, (out3, out4, out5), strict=True):
            b, _, h, w = y.shape
            z = head(y).view(b, self.na, self.no, h, w).permute(0, 1, 3, 4, 2).contiguous()
            outs.append(z)
        return outs


def build() -> nn.Module:
    """YOLOv5n for 80 classes."""
    return YOLOv5n()
