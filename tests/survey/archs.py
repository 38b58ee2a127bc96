"""The fresh-model survey's architectures: small torch nn.Modules, random weights, written
as timm, torchvision and the papers' reference code write them (the same operators in the
same order), at small widths and inputs so that each model keeps a few hundred KB of
weights at most. None of them is in tests/corpus/ (make_corpus.py's ARCHITECTURES).

ARCHITECTURES maps a name to (factory, input shape, family); family is "cnn", "sequence"
(recurrent) or "transformer" (attention or LayerNorm-heavy: NNCF's ModelType.TRANSFORMER
is also tried on those).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


def make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def conv_bn(cin: int, cout: int, k: int = 3, s: int = 1, groups: int = 1,
            act: type[nn.Module] | None = nn.ReLU, dilation: int = 1) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, dilation * (k // 2), dilation,
                                         groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    """timm's SqueezeExcite: mean over H, W (keepdim), reduce conv, act, expand conv, gate."""

    def __init__(self, c: int, rd: int, act: type[nn.Module] = nn.ReLU,
                 gate: Callable[[torch.Tensor], torch.Tensor] = torch.sigmoid) -> None:
        super().__init__()
        self.conv_reduce = nn.Conv2d(c, rd, 1)
        self.act = act()
        self.conv_expand = nn.Conv2d(rd, c, 1)
        self.gate = gate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean((2, 3), keepdim=True)
        return x * self.gate(self.conv_expand(self.act(self.conv_reduce(s))))


# ---------------------------------------------------------------- timm-style CNNs


class LCNet(nn.Module):
    """timm's LCNet (PP-LCNet): depthwise-separable blocks with HardSwish, 3x3 then 5x5
    kernels, SE (ReLU, hardsigmoid) in the last blocks; a 1x1 conv head without BN after
    global pooling, HardSwish, flatten, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 8, 3, 2, act=nn.Hardswish)
        cfg = [(3, 8, 16, 1, False), (3, 16, 16, 2, False), (3, 16, 32, 1, False),
               (5, 32, 32, 2, False), (5, 32, 64, 1, True), (5, 64, 64, 2, True)]
        blocks = []
        for k, cin, cout, s, se in cfg:
            layers: list[nn.Module] = [conv_bn(cin, cin, k, s, groups=cin, act=nn.Hardswish)]
            if se:
                layers.append(SqueezeExcite(cin, cin // 4, nn.ReLU, F.hardsigmoid))
            layers.append(conv_bn(cin, cout, 1, act=nn.Hardswish))
            blocks.append(nn.Sequential(*layers))
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.conv_head = nn.Conv2d(64, 128, 1)
        self.act = nn.Hardswish()
        self.fc = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.blocks(self.stem(x)))
        return self.fc(self.act(self.conv_head(x)).flatten(1))


class UniversalInvertedResidual(nn.Module):
    """MobileNetV4's UIB: optional start depthwise, 1x1 expand, optional middle depthwise
    (stride), 1x1 project, residual when shapes allow."""

    def __init__(self, cin: int, cout: int, start_k: int, mid_k: int, s: int,
                 expand: float) -> None:
        super().__init__()
        mid = make_divisible(cin * expand)
        self.dw_start = conv_bn(cin, cin, start_k, s if not mid_k else 1, cin, None) \
            if start_k else nn.Identity()
        self.pw_exp = conv_bn(cin, mid, 1)
        self.dw_mid = conv_bn(mid, mid, mid_k, s, mid) if mid_k else nn.Identity()
        self.pw_proj = conv_bn(mid, cout, 1, act=None)
        self.residual = s == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pw_proj(self.dw_mid(self.pw_exp(self.dw_start(x))))
        return x + y if self.residual else y


class MobileNetV4ConvSmall(nn.Module):
    """timm's mobilenetv4_conv_small, narrowed: conv stem, FusedIB (3x3 expand, 1x1
    project), UIB blocks (ExtraDW, IB, ConvNext-like, FFN), 1x1 conv, global pool, 1x1
    conv head with ReLU, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2)
        self.fused = nn.Sequential(conv_bn(16, 32, 3, 2), conv_bn(32, 16, 1, act=None))
        self.blocks = nn.Sequential(
            UniversalInvertedResidual(16, 24, 5, 5, 2, 3.0),   # ExtraDW
            UniversalInvertedResidual(24, 24, 0, 3, 1, 2.0),   # IB
            UniversalInvertedResidual(24, 32, 3, 0, 2, 4.0),   # ConvNext-like
            UniversalInvertedResidual(32, 32, 0, 0, 1, 2.0),   # FFN
            UniversalInvertedResidual(32, 32, 3, 3, 1, 2.0),   # ExtraDW, residual
        )
        self.final = conv_bn(32, 96, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.conv_head = nn.Conv2d(96, 128, 1, bias=False)
        self.norm_head = nn.BatchNorm2d(128)
        self.fc = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.final(self.blocks(self.fused(self.stem(x)))))
        x = F.relu(self.norm_head(self.conv_head(x)))
        return self.fc(x.flatten(1))


def hard_sigmoid_relu6(x: torch.Tensor) -> torch.Tensor:
    """GhostNet's own hard_sigmoid: relu6(x + 3) / 6."""
    return F.relu6(x + 3.0) / 6.0


class GhostModule(nn.Module):
    """GhostNet's ghost module: a primary 1x1 conv, a cheap depthwise 3x3 on its output,
    both concatenated and sliced to the output width."""

    def __init__(self, cin: int, cout: int, relu: bool = True) -> None:
        super().__init__()
        self.cout = cout
        init = math.ceil(cout / 2)
        act = nn.ReLU if relu else None
        self.primary = conv_bn(cin, init, 1, act=act)
        self.cheap = conv_bn(init, init, 3, 1, init, act=act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1 = self.primary(x)
        out = torch.cat([x1, self.cheap(x1)], dim=1)
        return out[:, :self.cout, :, :]


class GhostBottleneck(nn.Module):
    def __init__(self, cin: int, mid: int, cout: int, k: int, s: int, se: bool) -> None:
        super().__init__()
        self.ghost1 = GhostModule(cin, mid)
        self.dw = conv_bn(mid, mid, k, s, mid, None) if s > 1 else nn.Identity()
        self.se = SqueezeExcite(mid, make_divisible(mid // 4, 4), nn.ReLU,
                                hard_sigmoid_relu6) if se else nn.Identity()
        self.ghost2 = GhostModule(mid, cout, relu=False)
        self.shortcut = nn.Identity() if cin == cout and s == 1 else nn.Sequential(
            conv_bn(cin, cin, k, s, cin, None), conv_bn(cin, cout, 1, act=None))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ghost2(self.se(self.dw(self.ghost1(x))))
        return y + self.shortcut(x)


class GhostNet(nn.Module):
    """GhostNet (huawei-noah / timm ghostnet_050-like): ghost bottlenecks, odd output
    widths sliced from the concatenation, SE with relu6(x+3)/6, 1x1 head conv after
    pooling, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 8, 3, 2)
        self.blocks = nn.Sequential(
            GhostBottleneck(8, 8, 8, 3, 1, False),
            GhostBottleneck(8, 24, 12, 3, 2, False),
            GhostBottleneck(12, 36, 12, 3, 1, False),
            GhostBottleneck(12, 36, 20, 5, 2, True),
            GhostBottleneck(20, 60, 20, 5, 1, True),
            GhostBottleneck(20, 60, 40, 3, 2, False),
        )
        self.final = conv_bn(40, 120, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.conv_head = nn.Conv2d(120, 160, 1)
        self.fc = nn.Linear(160, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.final(self.blocks(self.stem(x))))
        return self.fc(F.relu(self.conv_head(x)).flatten(1))


class MixedConv(nn.Module):
    """timm's MixedConv2d: channels split in groups, each convolved with its own kernel
    size (depthwise when groups == channels), concatenated."""

    def __init__(self, cin: int, cout: int, kernels: tuple[int, ...], s: int = 1,
                 depthwise: bool = False) -> None:
        super().__init__()
        n = len(kernels)
        self.splits_in = [cin // n + (1 if i < cin % n else 0) for i in range(n)]
        splits_out = [cout // n + (1 if i < cout % n else 0) for i in range(n)]
        self.convs = nn.ModuleList(
            nn.Conv2d(ci, co, k, s, k // 2, groups=ci if depthwise else 1, bias=False)
            for k, ci, co in zip(kernels, self.splits_in, splits_out, strict=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = torch.split(x, self.splits_in, 1)
        return torch.cat([c(p) for c, p in zip(self.convs, parts, strict=True)], 1)


class MixBlock(nn.Module):
    def __init__(self, cin: int, cout: int, kernels: tuple[int, ...], s: int,
                 expand: int, exp_groups: int) -> None:
        super().__init__()
        mid = cin * expand
        self.conv_pw = MixedConv(cin, mid, (1,) * exp_groups) if exp_groups > 1 else \
            nn.Conv2d(cin, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.conv_dw = MixedConv(mid, mid, kernels, s, depthwise=True)
        self.bn2 = nn.BatchNorm2d(mid)
        self.se = SqueezeExcite(mid, max(1, cin // 4), nn.SiLU)
        self.conv_pwl = MixedConv(mid, cout, (1, 1)) if exp_groups > 1 else \
            nn.Conv2d(mid, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.residual = s == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.silu(self.bn1(self.conv_pw(x)))
        y = self.se(F.silu(self.bn2(self.conv_dw(y))))
        y = self.bn3(self.conv_pwl(y))
        return x + y if self.residual else y


class MixNet(nn.Module):
    """timm's MixNet-S, narrowed: grouped (split) 1x1 expansions, mixed depthwise kernels
    3/5/7(/9), SE with SiLU, split/concat everywhere."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2)
        self.blocks = nn.Sequential(
            MixBlock(16, 16, (3,), 1, 1, 1),
            MixBlock(16, 24, (3, 5, 7), 2, 3, 2),
            MixBlock(24, 24, (3, 5, 7), 1, 3, 2),
            MixBlock(24, 32, (3, 5, 7, 9), 2, 3, 1),
            MixBlock(32, 32, (3, 5), 1, 3, 2),
        )
        self.head = conv_bn(32, 128, 1)
        self.fc = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(x.mean((2, 3)))


class MBConv(nn.Module):
    """EfficientNet's MBConv: 1x1 expand BN SiLU, depthwise BN SiLU, SE (SiLU, sigmoid),
    1x1 project BN, residual."""

    def __init__(self, cin: int, cout: int, k: int, s: int, expand: int) -> None:
        super().__init__()
        mid = cin * expand
        self.expand = conv_bn(cin, mid, 1, act=nn.SiLU) if expand != 1 else nn.Identity()
        self.dw = conv_bn(mid, mid, k, s, mid, nn.SiLU)
        self.se = SqueezeExcite(mid, max(1, cin // 4), nn.SiLU)
        self.project = conv_bn(mid, cout, 1, act=None)
        self.residual = s == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.project(self.se(self.dw(self.expand(x))))
        return x + y if self.residual else y


class TinyNet(nn.Module):
    """timm's tinynet_e / EfficientNet-B0 layout, narrowed: conv stem SiLU, MBConv stages
    (3x3 and 5x5, expansion 1 then 6), 1x1 head SiLU, global pool, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2, act=nn.SiLU)
        self.blocks = nn.Sequential(
            MBConv(16, 8, 3, 1, 1), MBConv(8, 16, 3, 2, 6), MBConv(16, 16, 3, 1, 6),
            MBConv(16, 24, 5, 2, 6), MBConv(24, 24, 5, 1, 6), MBConv(24, 40, 3, 2, 4))
        self.head = conv_bn(40, 128, 1, act=nn.SiLU)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.pool(self.head(self.blocks(self.stem(x)))).flatten(1))


class TimmAttention(nn.Module):
    """timm's Attention: one qkv Linear, reshape/permute into heads,
    F.scaled_dot_product_attention (timm's fused_attn path), projection."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        x = F.scaled_dot_product_attention(q, k, v)
        return self.proj(x.transpose(1, 2).reshape(b, n, c))


class TransformerBlock(nn.Module):
    """Pre-norm transformer block (timm's Block): LN, attention, residual; LN, MLP with
    the given activation, residual."""

    def __init__(self, dim: int, heads: int, mlp: int, act: type[nn.Module]) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = TimmAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), act(), nn.Linear(mlp, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class MobileViTBlock(nn.Module):
    """timm's MobileViTBlock: local 3x3 conv and 1x1 to the transformer width, unfold into
    2x2 patches (reshape/transpose), transformer blocks (LN, MHA, SiLU MLP), fold back,
    1x1 projection, concatenation with the input, 3x3 fusion conv."""

    def __init__(self, c: int, d: int, depth: int) -> None:
        super().__init__()
        self.conv_kxk = conv_bn(c, c, 3, act=nn.SiLU)
        self.conv_1x1 = nn.Conv2d(c, d, 1, bias=False)
        self.transformer = nn.Sequential(*[TransformerBlock(d, 2, 2 * d, nn.SiLU)
                                           for _ in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.conv_proj = conv_bn(d, c, 1, act=nn.SiLU)
        self.conv_fusion = conv_bn(2 * c, c, 3, act=nn.SiLU)
        self.ph = self.pw = 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.conv_1x1(self.conv_kxk(x))
        b, c, h, w = x.shape
        nh, nw = h // self.ph, w // self.pw
        n, p = nh * nw, self.ph * self.pw
        x = x.reshape(b * c * nh, self.ph, nw, self.pw).transpose(1, 2)
        x = x.reshape(b, c, n, p).transpose(1, 3).reshape(b * p, n, -1)
        x = self.norm(self.transformer(x))
        x = x.contiguous().view(b, p, n, -1)
        x = x.transpose(1, 3).reshape(b * c * nh, nw, self.ph, self.pw)
        x = x.transpose(1, 2).reshape(b, c, nh * self.ph, nw * self.pw)
        x = self.conv_proj(x)
        return self.conv_fusion(torch.cat((shortcut, x), dim=1))


class InvertedResidualSiLU(nn.Module):
    """MobileViT's MV2 block (SiLU)."""

    def __init__(self, cin: int, cout: int, s: int, expand: int = 2) -> None:
        super().__init__()
        mid = cin * expand
        self.conv = nn.Sequential(conv_bn(cin, mid, 1, act=nn.SiLU),
                                  conv_bn(mid, mid, 3, s, mid, nn.SiLU),
                                  conv_bn(mid, cout, 1, act=None))
        self.residual = s == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return x + y if self.residual else y


class MobileViT(nn.Module):
    """MobileViT-XXS layout, narrowed: stem, MV2 blocks, one MobileViT block at 8x8,
    1x1 head, global pool, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2, act=nn.SiLU)
        self.mv2 = nn.Sequential(InvertedResidualSiLU(16, 16, 1), InvertedResidualSiLU(16, 24, 2))
        self.vit = MobileViTBlock(24, 32, 2)
        self.head = conv_bn(24, 64, 1, act=nn.SiLU)
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.head(self.vit(self.mv2(self.stem(x))))
        return self.fc(x.mean((2, 3)))


class LayerNorm2d(nn.LayerNorm):
    """timm's LayerNorm2d: LayerNorm over the channels of an NCHW tensor (permute, F.layer_norm,
    permute back)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """ConvNeXt block: depthwise 7x7, channels-last LayerNorm, Linear 4x, GELU, Linear,
    layer scale (gamma), residual."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.conv_dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.rand(dim) * 0.5 + 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.conv_dw(x).permute(0, 2, 3, 1)
        x = self.fc2(self.act(self.fc1(self.norm(x))))
        x = x.mul(self.gamma)
        return x.permute(0, 3, 1, 2) + shortcut


class ConvNeXt(nn.Module):
    """ConvNeXt-atto layout, narrowed: 4x4 stride-4 patchify stem with LayerNorm2d,
    stages of ConvNeXt blocks, LayerNorm2d + 2x2 stride-2 downsampling, global pool,
    LayerNorm, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 4, 4), LayerNorm2d(16, eps=1e-6))
        self.stage1 = nn.Sequential(ConvNeXtBlock(16), ConvNeXtBlock(16))
        self.down = nn.Sequential(LayerNorm2d(16, eps=1e-6), nn.Conv2d(16, 32, 2, 2))
        self.stage2 = nn.Sequential(ConvNeXtBlock(32), ConvNeXtBlock(32))
        self.norm = nn.LayerNorm(32, eps=1e-6)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.fc(self.norm(x.mean((2, 3))))


class LiteMLA(nn.Module):
    """EfficientViT's (MIT) context module: qkv by 1x1 conv, multi-scale aggregation
    (depthwise 5x5 then grouped 1x1), ReLU kernel, linear attention with v padded by a row
    of ones (F.pad value 1), division by that last row plus eps, 1x1 projection with BN."""

    def __init__(self, c: int, dim: int = 8) -> None:
        super().__init__()
        heads = c // dim
        self.dim = dim
        self.qkv = nn.Conv2d(c, 3 * heads * dim, 1, bias=False)
        self.aggreg = nn.Sequential(
            nn.Conv2d(3 * heads * dim, 3 * heads * dim, 5, padding=2, groups=3 * heads * dim,
                      bias=False),
            nn.Conv2d(3 * heads * dim, 3 * heads * dim, 1, groups=3 * heads, bias=False))
        self.proj = conv_bn(2 * heads * dim, c, 1, act=None)
        self.eps = 1e-15

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, h, w = x.shape
        qkv = self.qkv(x)
        multi = torch.cat([qkv, self.aggreg(qkv)], dim=1)
        multi = multi.reshape(b, -1, 3 * self.dim, h * w).transpose(-1, -2)
        q, k, v = multi[..., :self.dim], multi[..., self.dim:2 * self.dim], \
            multi[..., 2 * self.dim:]
        q, k = F.relu(q), F.relu(k)
        v = F.pad(v, (0, 1), mode="constant", value=1.0)
        kv = torch.matmul(k.transpose(-1, -2), v)
        out = torch.matmul(q, kv)
        out = out[..., :-1] / (out[..., -1:] + self.eps)
        out = out.transpose(-1, -2).reshape(b, -1, h, w)
        return self.proj(out)


class MBConvHS(nn.Module):
    """EfficientViT's MBConv (hardswish, no SE): 1x1 expand, depthwise, 1x1 project."""

    def __init__(self, cin: int, cout: int, s: int, expand: int = 4) -> None:
        super().__init__()
        mid = cin * expand
        self.inverted = conv_bn(cin, mid, 1, act=nn.Hardswish)
        self.depth = conv_bn(mid, mid, 3, s, mid, nn.Hardswish)
        self.point = conv_bn(mid, cout, 1, act=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.point(self.depth(self.inverted(x)))


class EfficientViT(nn.Module):
    """EfficientViT-B0 (MIT) layout, narrowed: a TF-"same" stem (ZeroPad2d, unpadded
    stride-2 conv), depthwise-separable and MBConv stages with hardswish, EfficientViT
    blocks (LiteMLA context module + MBConv local module, both residual), global pool,
    linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.pad = nn.ZeroPad2d((0, 1, 0, 1))
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 0, bias=False), nn.BatchNorm2d(8),
                                  nn.Hardswish())
        self.ds = nn.Sequential(conv_bn(8, 8, 3, 1, 8, nn.Hardswish), conv_bn(8, 8, 1, act=None))
        self.stage1 = MBConvHS(8, 16, 2)
        self.stage2 = MBConvHS(16, 32, 2)
        self.context = nn.ModuleList([LiteMLA(32), LiteMLA(32)])
        self.local = nn.ModuleList([MBConvHS(32, 32, 1), MBConvHS(32, 32, 1)])
        self.head = conv_bn(32, 64, 1, act=nn.Hardswish)
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(self.pad(x))
        x = x + self.ds(x)
        x = self.stage2(self.stage1(x))
        for context, local in zip(self.context, self.local, strict=True):
            x = x + context(x)
            x = x + local(x)
        return self.fc(self.head(x).mean((2, 3)))


class RegNetYBlock(nn.Module):
    """RegNetY's bottleneck: 1x1 BN ReLU, grouped 3x3 (group width 8) BN ReLU, SE
    (reduce to a quarter of the input width, ReLU, sigmoid), 1x1 BN, shortcut, ReLU."""

    def __init__(self, cin: int, cout: int, s: int, group_width: int = 8) -> None:
        super().__init__()
        self.conv1 = conv_bn(cin, cout, 1)
        self.conv2 = conv_bn(cout, cout, 3, s, cout // group_width)
        self.se = SqueezeExcite(cout, max(1, cin // 4), nn.ReLU)
        self.conv3 = conv_bn(cout, cout, 1, act=None)
        self.downsample = conv_bn(cin, cout, 1, s, act=None) \
            if s != 1 or cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv3(self.se(self.conv2(self.conv1(x))))
        return F.relu(y + self.downsample(x))


class RegNetY(nn.Module):
    """RegNetY-200MF layout, narrowed: stem, four stages of Y blocks, global pool, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2)
        self.stages = nn.Sequential(RegNetYBlock(16, 16, 2), RegNetYBlock(16, 32, 2),
                                    RegNetYBlock(32, 32, 1), RegNetYBlock(32, 64, 2))
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1).flatten(1))


class Fire(nn.Module):
    """SqueezeNet's Fire module: squeeze 1x1 ReLU, expand 1x1 and 3x3 with ReLU, concat."""

    def __init__(self, cin: int, squeeze: int, e1: int, e3: int) -> None:
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.expand1x1 = nn.Conv2d(squeeze, e1, 1)
        self.expand3x3 = nn.Conv2d(squeeze, e3, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.expand1x1(x)), F.relu(self.expand3x3(x))], 1)


class SqueezeNet10(nn.Module):
    """torchvision's SqueezeNet 1.0 at a quarter width: 7x7 stride-2 conv, ceil-mode max
    pooling, Fire modules, final 1x1 conv with ReLU, global average pool, flatten."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 24, 7, 2), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(24, 4, 16, 16), Fire(32, 4, 16, 16), Fire(32, 8, 32, 32),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(64, 8, 32, 32), Fire(64, 12, 48, 48), Fire(96, 12, 48, 48),
            Fire(96, 16, 64, 64),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(128, 16, 64, 64))
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(128, 10, 1),
                                        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.classifier(self.features(x)), 1)


class TvSqueezeExcitation(nn.Module):
    """torchvision's SqueezeExcitation as MobileNetV3 uses it: adaptive_avg_pool2d, fc1,
    ReLU, fc2, hardsigmoid, scale."""

    def __init__(self, c: int, squeeze: int) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(self.avgpool(x)))))
        return s * x


class Bneck(nn.Module):
    def __init__(self, cin: int, k: int, exp: int, cout: int, se: bool, hs: bool,
                 s: int) -> None:
        super().__init__()
        act = nn.Hardswish if hs else nn.ReLU
        layers: list[nn.Module] = []
        if exp != cin:
            layers.append(conv_bn(cin, exp, 1, act=act))
        layers.append(conv_bn(exp, exp, k, s, exp, act))
        if se:
            layers.append(TvSqueezeExcitation(exp, make_divisible(exp // 4, 8)))
        layers.append(conv_bn(exp, cout, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.residual = s == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return y + x if self.residual else y


class MobileNetV3LargeSlice(nn.Module):
    """torchvision's MobileNetV3-Large at width 0.35-ish, a slice of its bneck table
    (ReLU 3x3, ReLU 5x5 with SE, hardswish 3x3, hardswish 5x5 with SE), its classifier
    (Linear, hardswish, dropout, Linear)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2, act=nn.Hardswish)
        cfg = [(16, 3, 16, 16, False, False, 1), (16, 3, 24, 16, False, False, 2),
               (16, 3, 40, 16, False, False, 1), (16, 5, 40, 16, True, False, 2),
               (16, 5, 64, 16, True, False, 1), (16, 3, 96, 32, False, True, 2),
               (32, 3, 80, 32, False, True, 1), (32, 3, 128, 40, True, True, 1),
               (40, 5, 160, 56, True, True, 2)]
        self.blocks = nn.Sequential(*[Bneck(*c) for c in cfg])
        self.last = conv_bn(56, 160, 1, act=nn.Hardswish)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(160, 256), nn.Hardswish(), nn.Dropout(0.2),
                                        nn.Linear(256, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.last(self.blocks(self.stem(x))))
        return self.classifier(torch.flatten(x, 1))


# ---------------------------------------------------------------- hand-made heads and nets


class ASPPSegmenter(nn.Module):
    """DeepLabV3-style: a small strided backbone, ASPP (1x1, 3x3 at dilations 2 and 4,
    image pooling with bilinear upsampling back), concat, 1x1 projection, classifier,
    bilinear Resize to the input size."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(conv_bn(3, 16, 3, 2), conv_bn(16, 32, 3, 2),
                                      conv_bn(32, 32, 3, 1))
        self.aspp = nn.ModuleList([conv_bn(32, 16, 1), conv_bn(32, 16, 3, dilation=2),
                                   conv_bn(32, 16, 3, dilation=4)])
        self.pool_conv = conv_bn(32, 16, 1)
        self.project = conv_bn(64, 16, 1)
        self.classifier = nn.Conv2d(16, 5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[-2:]
        f = self.backbone(x)
        pooled = self.pool_conv(F.adaptive_avg_pool2d(f, 1))
        pooled = F.interpolate(pooled, size=f.shape[-2:], mode="bilinear", align_corners=False)
        y = self.project(torch.cat([*(b(f) for b in self.aspp), pooled], 1))
        return F.interpolate(self.classifier(y), size=size, mode="bilinear",
                             align_corners=False)


class YoloConv(nn.Sequential):
    def __init__(self, cin: int, cout: int, k: int = 1, s: int = 1, p: int | None = None) -> None:
        super().__init__(nn.Conv2d(cin, cout, k, s, k // 2 if p is None else p, bias=False),
                         nn.BatchNorm2d(cout), nn.SiLU())


class Bottleneck(nn.Module):
    def __init__(self, c: int, shortcut: bool = True) -> None:
        super().__init__()
        self.cv1 = YoloConv(c, c, 1)
        self.cv2 = YoloConv(c, c, 3)
        self.add = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """YOLOv5's CSP bottleneck C3: two 1x1 branches, bottlenecks on one, concat, 1x1."""

    def __init__(self, cin: int, cout: int, n: int = 1, shortcut: bool = True) -> None:
        super().__init__()
        c = cout // 2
        self.cv1 = YoloConv(cin, c)
        self.cv2 = YoloConv(cin, c)
        self.cv3 = YoloConv(2 * c, cout)
        self.m = nn.Sequential(*[Bottleneck(c, shortcut) for _ in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cv3(torch.cat([self.m(self.cv1(x)), self.cv2(x)], 1))


class SPPF(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        c = cin // 2
        self.cv1 = YoloConv(cin, c)
        self.cv2 = YoloConv(4 * c, cout)
        self.m = nn.MaxPool2d(5, 1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat([x, y1, y2, self.m(y2)], 1))


class YoloDetector(nn.Module):
    """A YOLOv5n-style detector at a tenth of the width: CSP (C3) backbone with SiLU, SPPF,
    a PAN neck (nearest upsampling, concat, strided conv), three detection outputs
    (3 anchors x (5 + 3 classes) channels each)."""

    def __init__(self) -> None:
        super().__init__()
        self.b0 = YoloConv(3, 8, 6, 2, 2)
        self.b1 = nn.Sequential(YoloConv(8, 16, 3, 2), C3(16, 16))
        self.b2 = nn.Sequential(YoloConv(16, 32, 3, 2), C3(32, 32))       # P3 /8
        self.b3 = nn.Sequential(YoloConv(32, 48, 3, 2), C3(48, 48))       # P4 /16
        self.b4 = nn.Sequential(YoloConv(48, 64, 3, 2), C3(64, 64), SPPF(64, 64))  # P5 /32
        self.lat5 = YoloConv(64, 48)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.c4 = C3(96, 48, shortcut=False)
        self.lat4 = YoloConv(48, 32)
        self.c3 = C3(64, 32, shortcut=False)
        self.down3 = YoloConv(32, 32, 3, 2)
        self.c4b = C3(64, 48, shortcut=False)
        self.down4 = YoloConv(48, 48, 3, 2)
        self.c5b = C3(96, 64, shortcut=False)
        self.detect = nn.ModuleList([nn.Conv2d(c, 3 * 8, 1) for c in (32, 48, 64)])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        p3 = self.b2(self.b1(self.b0(x)))
        p4 = self.b3(p3)
        p5 = self.b4(p4)
        h5 = self.lat5(p5)
        n4 = self.lat4(self.c4(torch.cat([self.up(h5), p4], 1)))
        o3 = self.c3(torch.cat([self.up(n4), p3], 1))
        o4 = self.c4b(torch.cat([self.down3(o3), n4], 1))
        o5 = self.c5b(torch.cat([self.down4(o4), h5], 1))
        return tuple(d(o) for d, o in zip(self.detect, (o3, o4, o5), strict=True))


class ESPCN(nn.Module):
    """ESPCN super-resolution (x3): 5x5 conv tanh, 3x3 conv tanh, 3x3 conv to r*r
    channels, PixelShuffle (DepthToSpace), clamp to [0, 1]."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 16, 3, padding=1)
        self.conv3 = nn.Conv2d(16, 9, 3, padding=1)
        self.shuffle = nn.PixelShuffle(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.tanh(self.conv2(torch.tanh(self.conv1(x))))
        return torch.clamp(self.shuffle(self.conv3(x)), 0.0, 1.0)


class TemporalBlock(nn.Module):
    """The TCN paper's TemporalBlock (locuslab/TCN): two causal dilated Conv1d (padded,
    then chomped), ReLU, dropout, residual with a 1x1 downsample, ReLU."""

    def __init__(self, cin: int, cout: int, k: int, dilation: int) -> None:
        super().__init__()
        self.pad = (k - 1) * dilation
        self.conv1 = nn.Conv1d(cin, cout, k, padding=self.pad, dilation=dilation)
        self.conv2 = nn.Conv1d(cout, cout, k, padding=self.pad, dilation=dilation)
        self.dropout = nn.Dropout(0.1)
        self.downsample = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dropout(F.relu(self.conv1(x)[:, :, :-self.pad]))
        y = self.dropout(F.relu(self.conv2(y)[:, :, :-self.pad]))
        res = x if self.downsample is None else self.downsample(x)
        return F.relu(y + res)


class TCN(nn.Module):
    """A TCN keyword classifier on 40 MFCCs x 49 frames: temporal blocks at dilations
    1, 2, 4, the last frame to a linear classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(TemporalBlock(40, 32, 3, 1), TemporalBlock(32, 32, 3, 2),
                                    TemporalBlock(32, 32, 3, 4))
        self.fc = nn.Linear(32, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.blocks(x)[:, :, -1])


class CRNN(nn.Module):
    """A text-recognition CRNN on a 1x32x64 line image: conv/BN/ReLU/max-pool stages to
    height 1, squeeze, permute to a sequence, a bidirectional GRU, per-step linear,
    log_softmax (CTC)."""

    def __init__(self) -> None:
        super().__init__()
        self.cnn = nn.Sequential(
            conv_bn(1, 16, 3), nn.MaxPool2d(2, 2),
            conv_bn(16, 32, 3), nn.MaxPool2d(2, 2),
            conv_bn(32, 32, 3), nn.MaxPool2d((2, 1), (2, 1)),
            conv_bn(32, 32, 3), nn.MaxPool2d((4, 1), (4, 1)))
        self.rnn = nn.GRU(32, 24, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(48, 20)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.cnn(x).squeeze(2).permute(0, 2, 1)  # (b, w, c)
        y, _ = self.rnn(f)
        return F.log_softmax(self.fc(y), dim=-1)


class ConformerBlock(nn.Module):
    """A Conformer block (torchaudio's ConformerLayer order): half-step FFN (LayerNorm,
    Linear, SiLU, Linear), MHA (nn.MultiheadAttention), convolution module (LayerNorm,
    pointwise Conv1d, GLU, depthwise Conv1d, BatchNorm1d, SiLU, pointwise Conv1d),
    half-step FFN, final LayerNorm."""

    def __init__(self, d: int, heads: int, k: int) -> None:
        super().__init__()

        def ffn() -> nn.Sequential:
            return nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(),
                                 nn.Dropout(0.0), nn.Linear(4 * d, d))

        self.ffn1, self.ffn2 = ffn(), ffn()
        self.attn_norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        self.conv_norm = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
        self.final_norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 0.5 * self.ffn1(x)
        y = self.attn_norm(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        y = self.conv_norm(x).transpose(1, 2)
        y = F.glu(self.pw1(y), dim=1)
        y = self.pw2(F.silu(self.bn(self.dw(y))))
        x = x + y.transpose(1, 2)
        x = x + 0.5 * self.ffn2(x)
        return self.final_norm(x)


class Conformer(nn.Module):
    """A one-block Conformer keyword classifier on 32 frames x 40 features: input Linear,
    Conformer block, mean over time, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(40, 32)
        self.block = ConformerBlock(32, 4, 7)
        self.fc = nn.Linear(32, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.block(self.inp(x)).mean(1))


class BiLstmClassifier(nn.Module):
    """A two-layer bidirectional LSTM on 24 frames x 40 features, classifying the last
    step's output."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(40, 24, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(48, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


class KeywordTransformer(nn.Module):
    """KWT (Keyword Transformer): each of 32 MFCC frames (40 coefficients) a patch,
    linear patch embedding, a class token concatenated, a learned positional embedding,
    nn.TransformerEncoder (2 pre-norm layers, GELU), LayerNorm of the class token,
    linear."""

    def __init__(self) -> None:
        super().__init__()
        d = 32
        self.embed = nn.Linear(40, d)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.1)
        self.pos = nn.Parameter(torch.randn(1, 33, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, 2, 64, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x.transpose(1, 2))  # (b, 40, 32) MFCC x frames -> (b, 32, d)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.encoder(x)
        return self.fc(self.norm(x[:, 0]))


ARCHITECTURES: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...], str]] = {
    "lcnet": (LCNet, (1, 3, 32, 32), "cnn"),
    "mobilenetv4_conv_small": (MobileNetV4ConvSmall, (1, 3, 32, 32), "cnn"),
    "ghostnet": (GhostNet, (1, 3, 32, 32), "cnn"),
    "mixnet": (MixNet, (1, 3, 32, 32), "cnn"),
    "tinynet": (TinyNet, (1, 3, 32, 32), "cnn"),
    "mobilevit": (MobileViT, (1, 3, 32, 32), "transformer"),
    "convnext": (ConvNeXt, (1, 3, 32, 32), "transformer"),
    "efficientvit": (EfficientViT, (1, 3, 32, 32), "transformer"),
    "regnety": (RegNetY, (1, 3, 32, 32), "cnn"),
    "squeezenet10": (SqueezeNet10, (1, 3, 64, 64), "cnn"),
    "mobilenetv3_large": (MobileNetV3LargeSlice, (1, 3, 32, 32), "cnn"),
    "aspp_seg": (ASPPSegmenter, (1, 3, 32, 32), "cnn"),
    "yolo_det": (YoloDetector, (1, 3, 64, 64), "cnn"),
    "espcn_sr": (ESPCN, (1, 1, 16, 16), "cnn"),
    "tcn": (TCN, (1, 40, 49), "cnn"),
    "crnn": (CRNN, (1, 1, 32, 64), "sequence"),
    "conformer": (Conformer, (1, 32, 40), "transformer"),
    "bilstm": (BiLstmClassifier, (1, 24, 40), "sequence"),
    "kwt": (KeywordTransformer, (1, 40, 32), "transformer"),
}


def build(arch: str) -> tuple[nn.Module, tuple[int, ...]]:
    """The architecture with seeded random weights and trained-looking BatchNorm
    statistics, in eval mode, and its input shape."""
    factory, shape, _ = ARCHITECTURES[arch]
    torch.manual_seed(0)
    net = factory().eval()
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
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
