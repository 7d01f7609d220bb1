"""The tie-heavy MUL case of litert_aarch64_xnnpack/mul_ties/: a copy of
models/ops/mul_same_shape/model.tflite with power-of-two quantization
(x: 0.5 zp 3, y: 0.25 zp -5, z: 0.5 zp -1; product ratio 1/4), so that
products land on halves, and two seeded input sets. Run from the repository
root with TensorFlow 2.19's flatbuffer_utils and numpy:

    python3 models/litert_aarch64_xnnpack/mul_ties/make_mul_ties.py

The references: runN.z.npy from LiteRT 2.3's aarch64 build with XNNPACK
(cargo xtask compare --refs-only --resolver xnnpack --model
models/litert_aarch64_xnnpack/mul_ties/model.tflite --input x=...runN.input.x.npy
--input y=...runN.input.y.npy --out DIR), runN.x86_xnnpack.z.npy from
LiteRT 2.3's x86_64 wheel (Interpreter, default resolver, 1 thread).
"""

import numpy as np
from tensorflow.lite.tools import flatbuffer_utils

HERE = "models/litert_aarch64_xnnpack/mul_ties"

model = flatbuffer_utils.read_model("models/ops/mul_same_shape/model.tflite")
graph = model.subgraphs[0]
mul = graph.operators[0]
# inputs[0] is x, inputs[1] is y (the converter's order).
for tensor, (scale, zero_point) in {
    mul.inputs[0]: (0.5, 3),
    mul.inputs[1]: (0.25, -5),
    mul.outputs[0]: (0.5, -1),
}.items():
    graph.tensors[tensor].quantization.scale = np.array([scale], dtype=np.float32)
    graph.tensors[tensor].quantization.zeroPoint = np.array([zero_point], dtype=np.int64)
flatbuffer_utils.write_model(model, f"{HERE}/model.tflite")
rng = np.random.default_rng(26)
for run in ["run0", "run1"]:
    for name in ["x", "y"]:
        values = rng.integers(-128, 128, size=(2, 3, 8), dtype=np.int8)
        np.save(f"{HERE}/{run}.input.{name}.npy", values)
