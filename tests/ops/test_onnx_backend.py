"""onnx's own backend test runner, driving onnx2mcu through the onnx.backend.base.Backend
interface (codegen.onnx_backend): every node test whose operators, operator versions and
dtypes onnx2mcu supports is in scope, and must pass."""

from __future__ import annotations

import warnings

import onnx.backend.test
from onnx.backend.test.loader import load_node_model_tests

import codegen.onnx_backend as backend

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    NODE_TESTS = load_node_model_tests()
IN_SCOPE = sorted(c.name for c in NODE_TESTS if backend.is_compatible(c.model))

# Node tests the runner must find in scope; the set may grow as operators are added.
EXPECTED_IN_SCOPE = {
    "test_qlinearconv", "test_maxpool_2d_uint8", "test_clip_default_int8_min",
    "test_qlinearmatmul_2D_uint8_float32", "test_qlinearmatmul_3D_int8_float16",
    "test_matmulinteger", "test_convinteger_with_padding", "test_concat_3d_axis_1",
    "test_identity", "test_transpose_default", "test_reshape_negative_dim", "test_squeeze",
    "test_unsqueeze_two_axes", "test_flatten_axis2",
}


def test_scope_is_what_onnx2mcu_supports() -> None:
    assert set(IN_SCOPE) >= EXPECTED_IN_SCOPE, sorted(EXPECTED_IN_SCOPE - set(IN_SCOPE))
    print(f"{len(IN_SCOPE)} of {len(NODE_TESTS)} onnx node tests are in scope")


BACKEND_TEST = onnx.backend.test.BackendTest(backend, __name__)
for name in IN_SCOPE:
    BACKEND_TEST.include(f"^{name}_cpu$")
# Only the node tests in scope: drop the runner's thousands of skipped placeholders.
OnnxBackendNodeModelTest = BACKEND_TEST.test_cases["OnnxBackendNodeModelTest"]
for attribute in list(vars(OnnxBackendNodeModelTest)):
    if attribute.startswith("test_") and attribute.removesuffix("_cpu") not in IN_SCOPE:
        delattr(OnnxBackendNodeModelTest, attribute)
