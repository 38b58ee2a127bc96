"""What lowering refuses before any C is written: a kernel parameter that is not finite
(float) or beyond the 32-bit integers the parameter structs hold (issue 35: strides of
2^62 reached an int field and failed the build)."""

from __future__ import annotations

import pytest

from codegen.backend.lowering import check_finite
from codegen.core.ir import Node
from codegen.core.program import CFloat, CInts, CStruct, KernelCall
from codegen.errors import ModelError

NODE = Node("conv1", "QLinearConv", "", ("x",), ("y",))


def call(params: CStruct) -> KernelCall:
    return KernelCall("q8_k", "conv1", ("x",), ("y",), params)


@pytest.mark.parametrize("params, needle", [
    (CStruct("p", (("stride", 2**62),)), "p.stride = 4611686018427387904"),
    (CStruct("p", (("dims", CInts((1, 2**33))),)), "p.dims = 8589934592"),
    (CStruct("p", (("inner", CStruct("q", (("pad", -2**31 - 1),))),)), "p.inner.pad = "),
])
def test_an_integer_beyond_32_bits_is_refused_naming_the_node(params: CStruct,
                                                              needle: str) -> None:
    with pytest.raises(ModelError) as refusal:
        check_finite(NODE, call(params))
    assert str(refusal.value).startswith("node 'conv1' (QLinearConv") and needle in \
        str(refusal.value)


def test_32_bit_values_of_both_signs_pass() -> None:
    check_finite(NODE, call(CStruct("p", (("a", -2**31), ("b", 2**32 - 1),
                                          ("c", CInts((0, 2**31 - 1))), ("on", True),
                                          ("scale", CFloat(0.5))))))
