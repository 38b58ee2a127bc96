"""The fresh-model survey's second batch: 16 more small torch nn.Modules, random weights,
written as torchvision, timm, torchaudio and the papers' reference code write them, at small
widths and inputs. None of them is in tests/corpus/ or in the first batch (archs.py).

    /tmp/torch-venv/bin/python tests/survey/make_models.py /tmp/survey/models2 --batch 2

ARCHITECTURES has archs.py's form: name -> (factory, input shape, family), family "cnn",
"sequence" (recurrent) or "transformer" (attention, LayerNorm or GroupNorm-heavy).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from archs import conv_bn
from torch import nn

# ---------------------------------------------------------------- classic CNNs


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock: 3x3 BN ReLU, 3x3 BN, a 1x1 BN downsample when the
    shape changes, add, ReLU."""

    def __init__(self, cin: int, cout: int, s: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, s, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, s, bias=False),
                                        nn.BatchNorm2d(cout)) \
            if s != 1 or cin != cout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    """torchvision's resnet18 at an eighth of the width: 7x7 stride-2 stem, 3x3 stride-2
    max pooling, four stages of two BasicBlocks, adaptive average pooling, flatten, fc."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths = (8, 16, 32, 64)
        layers = []
        cin = 8
        for i, w in enumerate(widths):
            layers.append(nn.Sequential(BasicBlock(cin, w, 1 if i == 0 else 2),
                                        BasicBlock(w, w, 1)))
            cin = w
        self.layers = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.avgpool(self.layers(x)), 1))


class DenseLayer(nn.Module):
    """torchvision's _DenseLayer (pre-activation): concat the inputs, BN ReLU 1x1
    (bn_size x growth), BN ReLU 3x3 (growth)."""

    def __init__(self, cin: int, growth: int, bn_size: int = 4) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, 1, 1, bias=False)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        x = torch.cat(features, 1)
        x = self.conv1(F.relu(self.norm1(x)))
        return self.conv2(F.relu(self.norm2(x)))


class DenseBlock(nn.Module):
    def __init__(self, layers: int, cin: int, growth: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(cin + i * growth, growth) for i in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class DenseNet(nn.Module):
    """DenseNet-BC (torchvision's layout, CIFAR stem): 3x3 conv, dense blocks of four
    layers (growth 8) joined by transitions (BN ReLU 1x1 conv, 2x2 average pooling),
    final BN ReLU, adaptive average pooling, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv0 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.block1 = DenseBlock(4, 16, 8)
        self.trans1 = nn.Sequential(nn.BatchNorm2d(48), nn.ReLU(), nn.Conv2d(48, 24, 1, bias=False),
                                    nn.AvgPool2d(2, 2))
        self.block2 = DenseBlock(4, 24, 8)
        self.trans2 = nn.Sequential(nn.BatchNorm2d(56), nn.ReLU(), nn.Conv2d(56, 28, 1, bias=False),
                                    nn.AvgPool2d(2, 2))
        self.block3 = DenseBlock(4, 28, 8)
        self.norm5 = nn.BatchNorm2d(60)
        self.classifier = nn.Linear(60, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.trans1(self.block1(self.conv0(x)))
        x = self.block3(self.trans2(self.block2(x)))
        x = F.adaptive_avg_pool2d(F.relu(self.norm5(x)), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class BasicConv2d(nn.Module):
    """torchvision's GoogLeNet BasicConv2d: conv without bias, BN (eps 0.001), ReLU."""

    def __init__(self, cin: int, cout: int, k: int, s: int = 1, p: int = 0) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, p, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=0.001)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.conv(x)), inplace=True)


class Inception(nn.Module):
    """The Inception-v1 module: 1x1; 1x1 then 3x3; 1x1 then 5x5 (the paper's 5x5);
    3x3 stride-1 ceil-mode max pooling then 1x1; concatenated."""

    def __init__(self, cin: int, c1: int, c3r: int, c3: int, c5r: int, c5: int,
                 pool: int) -> None:
        super().__init__()
        self.branch1 = BasicConv2d(cin, c1, 1)
        self.branch2 = nn.Sequential(BasicConv2d(cin, c3r, 1), BasicConv2d(c3r, c3, 3, p=1))
        self.branch3 = nn.Sequential(BasicConv2d(cin, c5r, 1), BasicConv2d(c5r, c5, 5, p=2))
        self.branch4 = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True),
                                     BasicConv2d(cin, pool, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)


class InceptionV1(nn.Module):
    """GoogLeNet at an eighth of the width: 3x3 stride-2 stem, ceil-mode 3x3 stride-2 max
    pooling, 1x1 and 3x3 convs, inception 3a/3b, max pooling, 4a, adaptive average pooling,
    dropout, fc."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = BasicConv2d(3, 8, 3, 2, 1)
        self.maxpool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv2 = BasicConv2d(8, 8, 1)
        self.conv3 = BasicConv2d(8, 24, 3, p=1)
        self.inception3a = Inception(24, 8, 12, 16, 2, 4, 4)
        self.inception3b = Inception(32, 16, 16, 24, 4, 12, 8)
        self.maxpool3 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.inception4a = Inception(60, 24, 12, 26, 2, 6, 8)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv3(self.conv2(self.maxpool1(self.conv1(x))))
        x = self.maxpool3(self.inception3b(self.inception3a(x)))
        x = self.avgpool(self.inception4a(x))
        return self.fc(self.dropout(torch.flatten(x, 1)))


class HRNetLite(nn.Module):
    """HRNet's multi-resolution pattern, small: a stride-4 stem, three parallel branches
    (1/4, 1/8, 1/16) of BasicBlocks, HRNet's fuse layers (higher to lower by strided 3x3
    BN convs, ReLU between two of them; lower to higher by 1x1 BN conv and nearest
    upsampling by 2 or 4; summed, ReLU), and the segmentation head (bilinear upsampling of
    every branch to the highest resolution, concat, 1x1 BN ReLU, 1x1 classifier)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 16, 3, 2), conv_bn(16, 16, 3, 2))
        self.c = (16, 24, 32)
        self.trans1 = conv_bn(16, 24, 3, 2)
        self.trans2 = conv_bn(24, 32, 3, 2)
        self.stage2 = nn.ModuleList([BasicBlock(16, 16, 1), BasicBlock(24, 24, 1)])
        self.fuse2 = nn.ModuleDict({
            "0_1": nn.Sequential(nn.Conv2d(24, 16, 1, bias=False), nn.BatchNorm2d(16),
                                 nn.Upsample(scale_factor=2, mode="nearest")),
            "1_0": conv_bn(16, 24, 3, 2, act=None)})
        self.stage3 = nn.ModuleList([BasicBlock(c, c, 1) for c in self.c])
        fuse3: dict[str, nn.Module] = {}
        for i in range(3):
            for j in range(3):
                if j > i:   # lower resolution j into i: 1x1 BN, upsample
                    fuse3[f"{i}_{j}"] = nn.Sequential(
                        nn.Conv2d(self.c[j], self.c[i], 1, bias=False), nn.BatchNorm2d(self.c[i]),
                        nn.Upsample(scale_factor=2 ** (j - i), mode="nearest"))
                elif j < i:  # higher resolution j into i: strided 3x3s
                    steps: list[nn.Module] = []
                    for k in range(i - j):
                        last = k == i - j - 1
                        steps.append(conv_bn(self.c[j], self.c[i] if last else self.c[j], 3, 2,
                                             act=None if last else nn.ReLU))
                    fuse3[f"{i}_{j}"] = nn.Sequential(*steps)
        self.fuse3 = nn.ModuleDict(fuse3)
        self.head = nn.Sequential(conv_bn(sum(self.c), 32, 1), nn.Conv2d(32, 5, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x0 = self.stem(x)
        x1 = self.trans1(x0)
        x0, x1 = self.stage2[0](x0), self.stage2[1](x1)
        y0 = F.relu(x0 + self.fuse2["0_1"](x1))
        y1 = F.relu(self.fuse2["1_0"](x0) + x1)
        xs = [y0, y1, self.trans2(y1)]
        xs = [block(v) for block, v in zip(self.stage3, xs, strict=True)]
        fused = []
        for i in range(3):
            y = xs[i]
            for j in range(3):
                if j != i:
                    y = y + self.fuse3[f"{i}_{j}"](xs[j])
            fused.append(F.relu(y))
        size = fused[0].shape[-2:]
        ups = [fused[0]] + [F.interpolate(f, size=size, mode="bilinear", align_corners=False)
                            for f in fused[1:]]
        return self.head(torch.cat(ups, 1))


class FPNDetector(nn.Module):
    """A RetinaNet/SSDLite-style detector, small: a strided conv backbone giving C3-C5,
    FPN (1x1 laterals, top-down nearest F.interpolate to the lateral's size, add, 3x3
    smoothing), a head shared over the levels (3x3 ReLU, class and box 3x3 convs), each
    level's outputs permuted to (batch, anchors, k) and concatenated; sigmoid scores."""

    def __init__(self) -> None:
        super().__init__()
        self.anchors, self.classes = 3, 4
        self.stem = nn.Sequential(conv_bn(3, 8, 3, 2), conv_bn(8, 16, 3, 2))
        self.c3 = conv_bn(16, 24, 3, 2)
        self.c4 = conv_bn(24, 32, 3, 2)
        self.c5 = conv_bn(32, 48, 3, 2)
        self.lateral = nn.ModuleList([nn.Conv2d(c, 24, 1) for c in (24, 32, 48)])
        self.smooth = nn.ModuleList([nn.Conv2d(24, 24, 3, padding=1) for _ in range(3)])
        self.tower = nn.Sequential(nn.Conv2d(24, 24, 3, padding=1), nn.ReLU())
        self.cls = nn.Conv2d(24, self.anchors * self.classes, 3, padding=1)
        self.box = nn.Conv2d(24, self.anchors * 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        c3 = self.c3(self.stem(x))
        c4 = self.c4(c3)
        c5 = self.c5(c4)
        lat = [conv(c) for conv, c in zip(self.lateral, (c3, c4, c5), strict=True)]
        p5 = lat[2]
        p4 = lat[1] + F.interpolate(p5, size=lat[1].shape[-2:], mode="nearest")
        p3 = lat[0] + F.interpolate(p4, size=lat[0].shape[-2:], mode="nearest")
        levels = [s(p) for s, p in zip(self.smooth, (p3, p4, p5), strict=True)]
        scores, boxes = [], []
        for p in levels:
            t = self.tower(p)
            b = t.shape[0]
            scores.append(self.cls(t).permute(0, 2, 3, 1).reshape(b, -1, self.classes))
            boxes.append(self.box(t).permute(0, 2, 3, 1).reshape(b, -1, 4))
        return torch.sigmoid(torch.cat(scores, 1)), torch.cat(boxes, 1)


class FSRCNN(nn.Module):
    """FSRCNN (x2): 5x5 feature extraction, 1x1 shrinking, 3x3 mapping layers, 1x1
    expanding, each with a per-channel PReLU; a 9x9 stride-2 ConvTranspose2d
    (output_padding 1) as the upscaler."""

    def __init__(self, d: int = 32, s: int = 8, m: int = 3) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(1, d, 5, padding=2), nn.PReLU(d),
                                   nn.Conv2d(d, s, 1), nn.PReLU(s)]
        for _ in range(m):
            layers += [nn.Conv2d(s, s, 3, padding=1), nn.PReLU(s)]
        layers += [nn.Conv2d(s, d, 1), nn.PReLU(d)]
        self.body = nn.Sequential(*layers)
        self.deconv = nn.ConvTranspose2d(d, 1, 9, 2, 4, output_padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(self.body(x))


class InvertedResidual(nn.Module):
    """torchvision's MobileNetV2 InvertedResidual: 1x1 expand BN ReLU6 (unless t is 1),
    depthwise 3x3 BN ReLU6, 1x1 project BN, residual when shapes allow."""

    def __init__(self, cin: int, cout: int, s: int, t: int) -> None:
        super().__init__()
        mid = cin * t
        layers: list[nn.Module] = [conv_bn(cin, mid, 1, act=nn.ReLU6)] if t != 1 else []
        layers += [conv_bn(mid, mid, 3, s, mid, nn.ReLU6), conv_bn(mid, cout, 1, act=None)]
        self.conv = nn.Sequential(*layers)
        self.residual = s == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.residual else self.conv(x)


class FOMO(nn.Module):
    """Edge Impulse's FOMO: MobileNetV2 (alpha 0.35, ReLU6) cut at stride 8, a 1x1 conv
    ReLU, a 1x1 conv to classes + background, softmax over the channel axis of the NCHW
    grid."""

    def __init__(self) -> None:
        super().__init__()
        ir = InvertedResidual
        self.features = nn.Sequential(conv_bn(3, 16, 3, 2, act=nn.ReLU6), ir(16, 8, 1, 1),
                                      ir(8, 8, 2, 6), ir(8, 8, 1, 6), ir(8, 16, 2, 6),
                                      ir(16, 16, 1, 6), ir(16, 16, 1, 6))
        self.head = nn.Sequential(nn.Conv2d(16, 32, 1), nn.ReLU(), nn.Conv2d(32, 4, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.head(self.features(x)), dim=1)


# ---------------------------------------------------------------- audio and time series


class Wav2Letter(nn.Module):
    """torchaudio's Wav2Letter (input_type "mfcc") with 250 -> 32 and 2000 -> 64 channels:
    Conv1d k48 s2, seven Conv1d k7, Conv1d k32, two 1x1 Conv1d, each with ReLU, then
    log_softmax over the class axis (dim 1)."""

    def __init__(self, features: int = 40, classes: int = 29) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv1d(features, 32, 48, 2, 23), nn.ReLU(inplace=True)]
        for _ in range(7):
            layers += [nn.Conv1d(32, 32, 7, 1, 3), nn.ReLU(inplace=True)]
        layers += [nn.Conv1d(32, 64, 32, 1, 16), nn.ReLU(inplace=True),
                   nn.Conv1d(64, 64, 1), nn.ReLU(inplace=True),
                   nn.Conv1d(64, classes, 1), nn.ReLU(inplace=True)]
        self.acoustic_model = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(self.acoustic_model(x), dim=1)


class CnnLstmHar(nn.Module):
    """A human-activity-recognition CNN-LSTM on 9 IMU channels x 128 samples (UCI HAR):
    two Conv1d BN ReLU max-pool stages, permute to (batch, time, channels), an LSTM, the
    last step to a linear classifier over 6 activities."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(9, 32, 5, padding=2), nn.BatchNorm1d(32), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(32, 32, 5, padding=2), nn.BatchNorm1d(32), nn.ReLU(), nn.MaxPool1d(2))
        self.lstm = nn.LSTM(32, 32, batch_first=True)
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(32, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(self.conv(x).permute(0, 2, 1))
        return self.fc(self.dropout(y[:, -1, :]))


class GruAttentionKws(nn.Module):
    """A keyword spotter on 49 frames x 40 MFCCs: a GRU, additive attention pooling
    (Linear tanh Linear scores, softmax over time, weighted sum), linear."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(40, 32, batch_first=True)
        self.att_hidden = nn.Linear(32, 32)
        self.att_score = nn.Linear(32, 1, bias=False)
        self.fc = nn.Linear(32, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(x)
        weights = torch.softmax(self.att_score(torch.tanh(self.att_hidden(h))), dim=1)
        return self.fc((weights * h).sum(dim=1))


class SubSpectralNorm(nn.Module):
    """BC-ResNet's SubSpectralNorm: the frequency axis cut into S sub-bands, each with its
    own BatchNorm (reshape to C*S channels, BatchNorm2d, reshape back)."""

    def __init__(self, c: int, sub_bands: int) -> None:
        super().__init__()
        self.s = sub_bands
        self.bn = nn.BatchNorm2d(c * sub_bands)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, f, t = x.shape
        x = self.bn(x.view(b, c * self.s, f // self.s, t))
        return x.view(b, c, f, t)


class BCResBlock(nn.Module):
    """BC-ResNet's block: (transition: 1x1 BN ReLU to the new width) frequency-depthwise
    3x1 conv + SubSpectralNorm (f2), mean over frequency, temporal-depthwise 1x3 conv BN
    SiLU, 1x1 conv, dropout (f1), broadcast over frequency: relu(x + f2 + f1) (normal) or
    relu(f2 + f1) (transition)."""

    def __init__(self, cin: int, cout: int, stride: int, dilation: int) -> None:
        super().__init__()
        self.transition = cin != cout
        self.pre = conv_bn(cin, cout, 1) if self.transition else nn.Identity()
        self.f2 = nn.Sequential(nn.Conv2d(cout, cout, (3, 1), (stride, 1), (1, 0), groups=cout,
                                          bias=False), SubSpectralNorm(cout, 5))
        self.f1 = nn.Sequential(
            nn.Conv2d(cout, cout, (1, 3), 1, (0, dilation), (1, dilation), groups=cout,
                      bias=False),
            nn.BatchNorm2d(cout), nn.SiLU(), nn.Conv2d(cout, cout, 1, bias=False),
            nn.Dropout2d(0.1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.f2(self.pre(x))
        aux = x
        x = self.f1(x.mean(2, keepdim=True))
        x = x + aux
        if not self.transition:
            x = x + shortcut
        return F.relu(x)


class BCResNet(nn.Module):
    """BC-ResNet-1 (Qualcomm's broadcasted residual KWS) on 40 mel bands x 32 frames:
    5x5 stride-(2,1) stem, transition and normal blocks with frequency strides and temporal
    dilations, depthwise 5x5 (no padding) over frequency, 1x1, mean over frequency and time,
    1x1 classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 16, 5, (2, 1), 2)
        self.blocks = nn.Sequential(
            BCResBlock(16, 8, 1, 1), BCResBlock(8, 8, 1, 1),
            BCResBlock(8, 12, 2, 2), BCResBlock(12, 12, 1, 2),
            BCResBlock(12, 16, 1, 4), BCResBlock(16, 16, 1, 4),
            BCResBlock(16, 20, 1, 8), BCResBlock(20, 20, 1, 8))
        self.dw = nn.Conv2d(20, 20, 5, groups=20, padding=(0, 2))
        self.pw = nn.Conv2d(20, 32, 1, bias=False)
        self.classifier = nn.Conv2d(32, 12, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pw(self.dw(self.blocks(self.stem(x))))
        return self.classifier(x.mean((2, 3), keepdim=True)).flatten(1)


# ---------------------------------------------------------------- transformers and MLPs


class VitAttention(nn.Module):
    """timm's Attention on its non-fused path: qkv Linear, heads, q * scale @ k^T, softmax,
    @ v, projection."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class VitBlock(nn.Module):
    def __init__(self, dim: int, heads: int, mlp: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = VitAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViTTiny(nn.Module):
    """ViT-Tiny's layout, small: 4x4 patch-embedding conv, flatten, transpose, a class
    token, learned position embedding, pre-norm blocks (explicit softmax attention, GELU
    MLP), LayerNorm, the class token to the head."""

    def __init__(self, dim: int = 48) -> None:
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, 4, 4)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, 65, dim) * 0.02)
        self.blocks = nn.Sequential(*[VitBlock(dim, 3, 2 * dim) for _ in range(3)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        return self.head(self.norm(self.blocks(x))[:, 0])


class MixerBlock(nn.Module):
    """MLP-Mixer's block: LayerNorm, token-mixing MLP on the transposed tokens (GELU),
    residual; LayerNorm, channel-mixing MLP (GELU), residual."""

    def __init__(self, tokens: int, dim: int, token_mlp: int, channel_mlp: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp_tokens = nn.Sequential(nn.Linear(tokens, token_mlp), nn.GELU(),
                                        nn.Linear(token_mlp, tokens))
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp_channels = nn.Sequential(nn.Linear(dim, channel_mlp), nn.GELU(),
                                          nn.Linear(channel_mlp, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.mlp_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.mlp_channels(self.norm2(x))


class MLPMixer(nn.Module):
    """MLP-Mixer (timm's layout), small: 4x4 patch-embedding conv to 64 tokens, mixer
    blocks, LayerNorm, mean over tokens, linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 4, 4)
        self.blocks = nn.Sequential(*[MixerBlock(64, 32, 32, 64) for _ in range(3)])
        self.norm = nn.LayerNorm(32, eps=1e-6)
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(dim=1))


class PoolFormerBlock(nn.Module):
    """PoolFormer's block: GroupNorm(1, C), pooling token mixer (3x3 average pooling
    without the padding in the count, minus the input), layer scale, residual; GroupNorm,
    1x1 conv MLP with GELU, layer scale, residual."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(1, dim)
        self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        self.norm2 = nn.GroupNorm(1, dim)
        self.mlp = nn.Sequential(nn.Conv2d(dim, 4 * dim, 1), nn.GELU(), nn.Conv2d(4 * dim, dim, 1))
        self.layer_scale_1 = nn.Parameter(torch.rand(dim) * 0.5 + 0.1)
        self.layer_scale_2 = nn.Parameter(torch.rand(dim) * 0.5 + 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm1(x)
        x = x + self.layer_scale_1.unsqueeze(-1).unsqueeze(-1) * (self.pool(y) - y)
        return x + self.layer_scale_2.unsqueeze(-1).unsqueeze(-1) * self.mlp(self.norm2(x))


class PoolFormer(nn.Module):
    """PoolFormer-S12's layout, small: 7x7 stride-4 stem (padding 2), stages of
    PoolFormer blocks joined by a 3x3 stride-2 conv, GroupNorm, mean over H, W, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 7, 4, 2)
        self.stage1 = nn.Sequential(PoolFormerBlock(16), PoolFormerBlock(16))
        self.down = nn.Conv2d(16, 32, 3, 2, 1)
        self.stage2 = nn.Sequential(PoolFormerBlock(32), PoolFormerBlock(32))
        self.norm = nn.GroupNorm(1, 32)
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.head(self.norm(x).mean([-2, -1]))


def window_partition(x: torch.Tensor, ws: int) -> torch.Tensor:
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, c)


def window_reverse(windows: torch.Tensor, ws: int, h: int, w: int) -> torch.Tensor:
    c = windows.shape[-1]
    x = windows.view(-1, h // ws, w // ws, ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, h, w, c)


class WindowAttention(nn.Module):
    """Swin's window attention: qkv Linear, q * scale @ k^T, a relative-position bias
    gathered from a learned table, the shifted windows' mask added, softmax, @ v, proj."""

    index: torch.Tensor

    def __init__(self, dim: int, ws: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws),
                                            indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (ws - 1)
        self.register_buffer("index", rel[:, :, 0] * (2 * ws - 1) + rel[:, :, 1],
                             persistent=False)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        attn = attn + bias.unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(-1, nw, self.heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.heads, n, n)
        attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class SwinBlock(nn.Module):
    """Swin's block on (batch, H, W, C): LayerNorm, cyclic shift (torch.roll), window
    partition, window attention (masked when shifted), reverse, roll back, residual;
    LayerNorm, GELU MLP, residual."""

    mask: torch.Tensor | None

    def __init__(self, dim: int, res: int, ws: int, heads: int, shift: int) -> None:
        super().__init__()
        self.res, self.ws, self.shift = res, ws, shift
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, ws, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        mask: torch.Tensor | None = None
        if shift:
            img = torch.zeros(1, res, res, 1)
            cnt = 0
            for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                    img[:, hs, wsl, :] = cnt
                    cnt += 1
            ids = window_partition(img, ws).squeeze(-1)
            diff = ids.unsqueeze(1) - ids.unsqueeze(2)
            mask = diff.masked_fill(diff != 0, -100.0)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, h, w, _ = x.shape
        y = self.norm1(x)
        if self.shift:
            y = torch.roll(y, shifts=(-self.shift, -self.shift), dims=(1, 2))
        y = window_reverse(self.attn(window_partition(y, self.ws), self.mask), self.ws, h, w)
        if self.shift:
            y = torch.roll(y, shifts=(self.shift, self.shift), dims=(1, 2))
        x = x + y
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    """Swin's patch merging: the four 2x2 neighbours by strided slicing, concatenated,
    LayerNorm, Linear 4C -> 2C without bias."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]],
                      -1)
        return self.reduction(self.norm(x))


class SwinTiny(nn.Module):
    """Swin-T's layout, small: 2x2 patch-embedding conv, permute to channels-last,
    LayerNorm, a regular and a shifted window block (window 4, shift 2) at 16x16, patch
    merging, two more at 8x8, LayerNorm, mean over H, W, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.patch_embed = nn.Conv2d(3, 16, 2, 2)
        self.embed_norm = nn.LayerNorm(16)
        self.stage1 = nn.Sequential(SwinBlock(16, 16, 4, 2, 0), SwinBlock(16, 16, 4, 2, 2))
        self.merge = PatchMerging(16)
        self.stage2 = nn.Sequential(SwinBlock(32, 8, 4, 4, 0), SwinBlock(32, 8, 4, 4, 2))
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed_norm(self.patch_embed(x).permute(0, 2, 3, 1))
        x = self.stage2(self.merge(self.stage1(x)))
        return self.head(self.norm(x).mean((1, 2)))


class LinearNorm(nn.Module):
    """LeViT's LinearNorm: Linear without bias, BatchNorm1d over the flattened tokens."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.linear = nn.Linear(cin, cout, bias=False)
        self.bn = nn.BatchNorm1d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        return self.bn(x.flatten(0, 1)).reshape_as(x)


class LevitAttention(nn.Module):
    """LeViT's attention: LinearNorm qkv, per-head split of q, k (key_dim) and v (d),
    q @ k^T * scale plus learned attention biases gathered by relative offset, softmax,
    @ v, hardswish, LinearNorm projection."""

    attention_bias_idxs: torch.Tensor

    def __init__(self, dim: int, key_dim: int, heads: int, ratio: int, res: int) -> None:
        super().__init__()
        self.heads, self.key_dim, self.d = heads, key_dim, ratio * key_dim
        self.scale = key_dim ** -0.5
        self.qkv = LinearNorm(dim, heads * (2 * key_dim + self.d))
        self.proj = nn.Sequential(nn.Hardswish(), LinearNorm(heads * self.d, dim))
        pos = torch.stack(torch.meshgrid(torch.arange(res), torch.arange(res),
                                         indexing="ij")).flatten(1)
        rel = (pos[..., :, None] - pos[..., None, :]).abs()
        self.attention_biases = nn.Parameter(torch.randn(heads, res * res) * 0.1)
        self.register_buffer("attention_bias_idxs", rel[0] * res + rel[1], persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, self.heads, -1).split(
            [self.key_dim, self.key_dim, self.d], dim=3)
        q, k, v = q.permute(0, 2, 1, 3), k.permute(0, 2, 3, 1), v.permute(0, 2, 1, 3)
        attn = q @ k * self.scale + self.attention_biases[:, self.attention_bias_idxs]
        x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, self.heads * self.d)
        return self.proj(x)


class LeViT(nn.Module):
    """LeViT-128S's layout, small: a stride-4 stem of conv-BN with hardswish between,
    flatten to tokens, residual attention and LinearNorm-hardswish MLP blocks, mean over
    tokens, BatchNorm1d + Linear classifier and distillation heads averaged."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 16, 3, 2, act=nn.Hardswish),
                                  conv_bn(16, dim, 3, 2, act=None))
        self.attn = nn.ModuleList([LevitAttention(dim, 8, 2, 2, 8) for _ in range(2)])
        self.mlp = nn.ModuleList([nn.Sequential(LinearNorm(dim, 2 * dim), nn.Hardswish(),
                                                LinearNorm(2 * dim, dim)) for _ in range(2)])
        self.head = nn.Sequential(nn.BatchNorm1d(dim), nn.Linear(dim, 10))
        self.head_dist = nn.Sequential(nn.BatchNorm1d(dim), nn.Linear(dim, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x).flatten(2).transpose(1, 2)
        for attn, mlp in zip(self.attn, self.mlp, strict=True):
            x = x + attn(x)
            x = x + mlp(x)
        x = x.mean(1)
        return (self.head(x) + self.head_dist(x)) / 2


ARCHITECTURES: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...], str]] = {
    "resnet18": (ResNet18, (1, 3, 32, 32), "cnn"),
    "densenet": (DenseNet, (1, 3, 32, 32), "cnn"),
    "inception_v1": (InceptionV1, (1, 3, 32, 32), "cnn"),
    "hrnet_lite": (HRNetLite, (1, 3, 64, 64), "cnn"),
    "fpn_det": (FPNDetector, (1, 3, 64, 64), "cnn"),
    "fsrcnn": (FSRCNN, (1, 1, 16, 16), "cnn"),
    "fomo": (FOMO, (1, 3, 64, 64), "cnn"),
    "wav2letter": (Wav2Letter, (1, 40, 64), "cnn"),
    "cnn_lstm_har": (CnnLstmHar, (1, 9, 128), "sequence"),
    "gru_attn_kws": (GruAttentionKws, (1, 49, 40), "sequence"),
    "bc_resnet": (BCResNet, (1, 1, 40, 32), "cnn"),
    "vit_tiny": (ViTTiny, (1, 3, 32, 32), "transformer"),
    "mlp_mixer": (MLPMixer, (1, 3, 32, 32), "transformer"),
    "poolformer": (PoolFormer, (1, 3, 32, 32), "transformer"),
    "swin": (SwinTiny, (1, 3, 32, 32), "transformer"),
    "levit": (LeViT, (1, 3, 32, 32), "transformer"),
}


def build(arch: str) -> tuple[nn.Module, tuple[int, ...]]:
    """As archs.build: seeded random weights, trained-looking BatchNorm statistics (and
    GroupNorm affine parameters), eval mode; and the input shape."""
    factory, shape, _ = ARCHITECTURES[arch]
    torch.manual_seed(0)
    net = factory().eval()
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
                assert module.running_mean is not None and module.running_var is not None
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
            if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d, nn.GroupNorm)):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    return net, shape


if __name__ == "__main__":
    for name in ARCHITECTURES:
        model, shape = build(name)
        out = model(torch.randn(shape))
        params = sum(p.numel() for p in model.parameters())
        shapes = [tuple(o.shape) for o in out] if isinstance(out, tuple) else tuple(out.shape)
        print(f"{name:24s} params {params:7d} ({params / 1024:.0f} KB int8)  out {shapes}")
