"""Build the worked example of `onnx2mcu quantize` and `validate`: a small float CNN that
tells four kinds of 12x12 pattern apart, made without torch, and its data set.

    python examples/make_stripes_cnn.py [OUT_DIR]      (default: examples/stripes)

writes OUT_DIR/stripes_cnn.onnx (float32), OUT_DIR/stripes.npz (200 samples keyed by the
input name, 'image': [200, 1, 12, 12] float32 in [-1, 1]) and OUT_DIR/stripes_labels.npy
(200 class indices: 0 horizontal stripes, 1 vertical stripes, 2 diagonal stripes, 3 a
checkerboard).

The network is Conv3x3(1->8) Relu MaxPool2 Conv1x1(8->16) Relu GlobalAveragePool Flatten
Gemm(16->4) Softmax. The first convolution holds oriented edge detectors (as a first layer
learns them), the 1x1 convolution mixes them with fixed random weights, and the Gemm is
fitted by multinomial logistic regression in numpy on a separate synthetic training set.
Deterministic: the same run always writes the same bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper

SIZE = 12
CLASSES = ("horizontal", "vertical", "diagonal", "checkerboard")
INPUT_NAME = "image"
DATASET_SAMPLES = 200


def pattern(kind: int, rng: np.random.Generator) -> NDArray[np.float32]:
    """One noisy 12x12 image of class `kind`, with a random period, phase and contrast."""
    rows, cols = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64)
    period = rng.uniform(3.0, 6.0)
    phase = rng.uniform(0.0, 2 * np.pi)
    along = (rows, cols, (rows + cols) / np.sqrt(2.0))
    if kind < 3:
        wave = np.sin(2 * np.pi * along[kind] / period + phase)
    else:
        wave = np.sin(2 * np.pi * rows / period + phase) * np.sin(2 * np.pi * cols / period)
    image = rng.uniform(0.2, 0.8) * wave + rng.normal(0.0, 0.5, wave.shape)
    return np.clip(image, -1.0, 1.0).astype(np.float32).reshape(1, SIZE, SIZE)


def make_samples(count: int, seed: int) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    rng = np.random.default_rng(seed)
    labels = np.arange(count, dtype=np.int64) % len(CLASSES)
    rng.shuffle(labels)
    return np.stack([pattern(int(k), rng) for k in labels]), labels


def edge_filters(rng: np.random.Generator) -> NDArray[np.float32]:
    """Eight 3x3 oriented edge detectors with a little noise: [8, 1, 3, 3]."""
    sobel = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], dtype=np.float64) / 4.0
    diagonal = np.array([[-2, -1, 0], [-1, 0, 1], [0, 1, 2]], dtype=np.float64) / 4.0
    bank = [sobel, sobel.T, diagonal, np.fliplr(diagonal)]
    bank += [-f for f in bank]
    filters = np.stack(bank) + rng.normal(0.0, 0.02, (8, 3, 3))
    return filters.reshape(8, 1, 3, 3).astype(np.float32)


def features(x: NDArray[np.float32], w1: NDArray[np.float32], b1: NDArray[np.float32],
             w2: NDArray[np.float32], b2: NDArray[np.float32]) -> NDArray[np.float64]:
    """The network up to the Gemm, in numpy: [N, 16]."""
    n = x.shape[0]
    padded = np.pad(x[:, 0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    conv = np.zeros((n, 8, SIZE, SIZE))
    for dy in range(3):
        for dx in range(3):
            window = padded[:, dy:dy + SIZE, dx:dx + SIZE]
            conv += w1[None, :, 0, dy, dx, None, None] * window[:, None]
    relu = np.maximum(conv + b1[None, :, None, None], 0.0)
    pooled = relu.reshape(n, 8, SIZE // 2, 2, SIZE // 2, 2).max(axis=(3, 5))
    mixed = np.einsum("oc,nchw->nohw", w2[:, :, 0, 0].astype(np.float64), pooled)
    return np.asarray(np.maximum(mixed + b2[None, :, None, None], 0.0).mean(axis=(2, 3)))


def fit_softmax_regression(f: NDArray[np.float64], labels: NDArray[np.int64],
                           steps: int = 3000, rate: float = 0.5
                           ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Multinomial logistic regression by full-batch gradient descent on standardised
    features; the standardisation is folded back into the returned weight [4, 16] and
    bias [4]."""
    # The floor keeps weak features from getting weights so large that one quantization
    # step of theirs would swing the logits.
    mean, std = f.mean(axis=0), np.maximum(f.std(axis=0), 0.1)
    z = (f - mean) / std
    onehot = np.eye(len(CLASSES))[labels]
    w = np.zeros((z.shape[1], len(CLASSES)))
    b = np.zeros(len(CLASSES))
    for _ in range(steps):
        logits = z @ w + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        grad = (p - onehot) / len(z)
        w -= rate * (z.T @ grad + 1e-3 * w)
        b -= rate * grad.sum(axis=0)
    weight = (w / std[:, None]).T
    bias = b - (mean / std) @ w
    return weight.astype(np.float32), bias.astype(np.float32)


def build_model(w1: NDArray[np.float32], b1: NDArray[np.float32], w2: NDArray[np.float32],
                b2: NDArray[np.float32], w3: NDArray[np.float32],
                b3: NDArray[np.float32]) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(a, n) for a, n in (
        (w1, "conv1.weight"), (b1, "conv1.bias"), (w2, "conv2.weight"), (b2, "conv2.bias"),
        (w3, "fc.weight"), (b3, "fc.bias"))]
    nodes = [
        helper.make_node("Conv", [INPUT_NAME, "conv1.weight", "conv1.bias"], ["c1"],
                         name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2",
                         kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc",
                         transB=1),
        helper.make_node("Softmax", ["logits"], ["scores"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "stripes_cnn",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, [1, 1, SIZE, SIZE])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, len(CLASSES)])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="onnx2mcu examples/make_stripes_cnn.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path(__file__).parent / "stripes"
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2026)
    w1 = edge_filters(rng)
    b1 = np.full(8, -0.05, dtype=np.float32)
    w2 = rng.normal(0.0, np.sqrt(2.0 / 8), (16, 8, 1, 1)).astype(np.float32)
    b2 = rng.normal(0.0, 0.02, 16).astype(np.float32)
    train_x, train_y = make_samples(800, seed=1)
    w3, b3 = fit_softmax_regression(features(train_x, w1, b1, w2, b2), train_y)
    onnx.save(build_model(w1, b1, w2, b2, w3, b3), str(out / "stripes_cnn.onnx"))
    data_x, data_y = make_samples(DATASET_SAMPLES, seed=2)
    np.savez_compressed(out / "stripes.npz", **{INPUT_NAME: data_x})
    np.save(out / "stripes_labels.npy", data_y)
    fitted = features(data_x, w1, b1, w2, b2) @ w3.T + b3
    accuracy = float(np.mean(np.argmax(fitted, axis=1) == data_y))
    print(f"wrote {out}/stripes_cnn.onnx, stripes.npz, stripes_labels.npy "
          f"(float accuracy on the data set {100 * accuracy:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
