"""Every C interface on every zoo architecture, on the host and in QEMU: --io quantized,
--io both, --arena caller and --arena-section, each bit-exact against ORT.

`make test-interfaces` (ONNX2MCU_INTERFACE_MATRIX=1) runs it: the 32 zoo models (8
architectures x 4 quantizations) x 4 interfaces x (host, cortex-m4f, cortex-m0plus).
`make test` leaves it out for time and runs tests/targets/test_firmware_component.py: every
architecture on the host in one interface or another, and QEMU for a few."""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import SANITIZE, skip_where_ort_differs
from zoo import ZOO_CASES, case_id, quantized_model

import codegen
from codegen.backend.interface import Interface

if os.environ.get("ONNX2MCU_INTERFACE_MATRIX") != "1":
    pytest.skip("the interface matrix runs with make test-interfaces", allow_module_level=True)
CROSS_TOOLS = shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")
INTERFACES = {
    "io-quantized": Interface(io="quantized"),
    "io-both": Interface(io="both"),
    "arena-caller": Interface(arena="caller"),
    "arena-section": Interface(arena_section=".model_arena"),
}
BOARDS = ["host", "cortex-m4f", "cortex-m0plus"]


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("interface", sorted(INTERFACES))
@pytest.mark.parametrize("case", ZOO_CASES, ids=case_id)
def test_every_interface_is_bit_exact(case: tuple[str, str], interface: str,
                                      board: str) -> None:
    if board != "host" and not CROSS_TOOLS:
        pytest.skip("needs arm-none-eabi-gcc and qemu-system-arm")
    model = quantized_model(*case)
    options = {} if board == "host" else {"board": board}
    skip_where_ort_differs(model, **options)
    report = codegen.verify(model, samples=1, seed=11, interface=INTERFACES[interface],
                            cflags=SANITIZE if board == "host" else (), **options)
    assert report.ok, report.outputs
