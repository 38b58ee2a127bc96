"""auto_pad SAME_UPPER/SAME_LOWER/VALID over every small (size, kernel, stride), including
kernel < stride, where ORT's padding differs from a naive reading of the spec."""

from __future__ import annotations

import itertools

import pytest
from conftest import SANITIZE
from modelgen import ConvConfig, conv_batch_model

import codegen


def padding_configs(mode: str) -> list[ConvConfig]:
    configs = []
    for i, (size, k, s) in enumerate(itertools.product(range(1, 12), range(1, 5), range(1, 6))):
        if mode == "VALID" and k > size:
            continue
        configs.append(ConvConfig(
            x_dtype="uint8", w_dtype="uint8", batch=1, channels=2, out_channels=2,
            spatial=(size,) if i % 2 else (2, size), kernel=(k,) if i % 2 else (1, k),
            group=1, strides=(s,) if i % 2 else (1, s), dilations=(1,) if i % 2 else (1, 1),
            pads=None, auto_pad=mode, per_channel=False, bias=False, big_bias=False,
            kernel_shape_attr=False, seed=i))
    return configs


@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_auto_pad_matches_ort(mode: str) -> None:
    configs = padding_configs(mode)
    # One model per 60 convolutions keeps the number of compilations small.
    for start in range(0, len(configs), 60):
        chunk = configs[start:start + 60]
        report = codegen.verify(conv_batch_model(chunk), samples=1, cflags=SANITIZE)
        bad = [chunk[int(o.name[1:])].describe() for o in report.outputs if o.mismatches]
        assert not bad, bad
