#!/usr/bin/env python3
"""Probes how LiteRT's reference FULLY_CONNECTED rounds near a tie (NumPy
and the ai-edge-litert wheel of gen/requirements.txt):

    python3 models/gen/probe_fc_rounding.py

The 1-layer MobileBert's first FULLY_CONNECTED (the embedding
transformation) sees, at position i, the int8 embedding rows of the token ids
at i+1, i and i-1 side by side, so its accumulator for channel c is a sum of
three table lookups. The script finds token ids whose accumulator lands
where two candidate rules disagree -- single rounding with TFLite's 31-bit
multiplier, `(acc * M + 2^(tot-1)) >> tot`, and rounding `acc * real` with
the unquantized f64 multiplier -- runs LiteRT's reference kernels on them and
prints which rule LiteRT followed.
"""

import math
import os

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quantize_multiplier(real):
    mantissa, shift = math.frexp(real)
    m = int(round(mantissa * 2**31))
    if m == 2**31:
        m //= 2
        shift += 1
    return m, shift


def main():
    it = Interpreter(
        model_path=os.path.join(MODELS, "mobilebert_squad_1l.tflite"),
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
        num_threads=1,
    )
    it.allocate_tensors()
    inputs = {d["name"]: d for d in it.get_input_details()}
    details = {t["index"]: t for t in it.get_tensor_details()}
    ops = it._get_ops_details()
    fc = next(o for o in ops if o["op_name"] == "FULLY_CONNECTED")
    gather = next(o for o in ops if o["op_name"] == "GATHER")
    x_index, w_index = int(fc["inputs"][0]), int(fc["inputs"][1])
    y_index = int(fc["outputs"][0])
    table = it.get_tensor(int(gather["inputs"][0])).astype(np.int64)
    weights = it.get_tensor(w_index).astype(np.int64)
    xq = details[x_index]["quantization_parameters"]
    wq = details[w_index]["quantization_parameters"]
    yq = details[y_index]["quantization_parameters"]
    zx, zo = int(xq["zero_points"][0]), int(yq["zero_points"][0])
    depth = table.shape[1]
    rng = np.random.default_rng(1)
    ids = rng.integers(1000, 30000, 384)

    def run(token_ids):
        it.set_tensor(inputs["serving_default_input_ids:0"]["index"], token_ids.reshape(1, 384).astype(np.int32))
        it.set_tensor(inputs["serving_default_attention_mask:0"]["index"], np.ones((1, 384), np.int32))
        it.set_tensor(inputs["serving_default_token_type_ids:0"]["index"], np.zeros((1, 384), np.int32))
        it.invoke()

    for c in range(weights.shape[0]):
        real = float(np.float32(xq["scales"][0])) * float(np.float32(wq["scales"][c])) / float(np.float32(yq["scales"][0]))
        m, shift = quantize_multiplier(real)
        total = 31 - shift
        # Segments of the FC input at position i: ids i+1, i, i-1 (checked below).
        parts = [(table - zx) @ weights[c, s * depth:(s + 1) * depth] for s in range(3)]
        accs = np.arange(sum(p.min() for p in parts), sum(p.max() for p in parts) + 1, dtype=np.int64)
        single = (accs * m + (1 << (total - 1))) >> total
        exact = np.floor(accs * real + 0.5).astype(np.int64)
        in_range = (single + zo > -128) & (single + zo < 127) & (exact + zo > -128) & (exact + zo < 127)
        for target in accs[(single != exact) & in_range][:20]:
            for current in rng.integers(1000, 30000, 100):
                need = target - parts[1][current] - parts[0]
                hits = np.nonzero(np.isin(need, parts[2]))[0]
                if not len(hits):
                    continue
                following = int(hits[0])
                previous = int(np.nonzero(parts[2] == need[following])[0][0])
                probe = ids.copy()
                probe[199], probe[200], probe[201] = previous, current, following
                run(probe)
                x = it.get_tensor(x_index).reshape(384, -1).astype(np.int64)
                acc = int(((x[200] - zx) * weights[c]).sum())
                assert acc == target, "the FC input is not laid out as assumed"
                litert = int(it.get_tensor(y_index).reshape(384, -1)[200, c]) - zo
                ours = int(((acc * m + (1 << (total - 1))) >> total))
                print(f"channel {c}: acc {acc}, acc * real = {acc * real:.10f}; "
                      f"31-bit single rounding {ours}, rounding acc * real {math.floor(acc * real + 0.5)}, "
                      f"LiteRT {litert}")
                return


if __name__ == "__main__":
    main()
