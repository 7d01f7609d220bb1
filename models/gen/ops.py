"""Single-op test models: tiny tf.function graphs converted with full-integer
quantization, each with two seeded input sets and the outputs of LiteRT's
and TensorFlow 2.19's reference kernels (the convolutions also LiteRT's
optimized builtin kernels and its XNNPACK delegate).

Every case names the ops it exists for (`expect`); generation fails if the
converter did not produce them, so a converter that rewrites a graph
differently is noticed, not silently committed.
"""

import os
import zlib

import common
import numpy as np
import tensorflow as tf

REFERENCES = ["litert_ref", "tf219_ref"]
# The convolutions' three kernel paths differ in their requantization: each
# case also keeps LiteRT's optimized builtin kernels' and XNNPACK's outputs.
CONV_REFERENCES = REFERENCES + ["litert_builtin", "litert_xnnpack"]
# The XNNPACK delegate takes some of the other ops with arithmetic of its own
# (and leaves the rest to the builtin kernels): their cases keep its outputs.
XNNPACK_REFERENCES = REFERENCES + ["litert_xnnpack"]
RUNS = 2
CALIBRATION_SAMPLES = 16


class Case:
    def __init__(self, name, doc, inputs, body, expect, *, int16=False, per_tensor=False,
                 io=None, calibration=None, test_inputs=None, softmax_beta=None, references=None,
                 rewrite=None):
        """`inputs`: [(name, shape, dtype, (lo, hi))], the float range each
        representative sample is drawn from (uniform), or for int32 inputs
        the integer range. `body(**inputs)` returns {output name: tensor}.
        `io`: (input type, output type) of the converted model, default the
        activation type (int8, or int16 with `int16`). `calibration(rng)`
        replaces the uniform representative samples; `test_inputs(rng, run)`
        the default test inputs. `softmax_beta` rewrites the SOFTMAX beta after
        conversion (the converter never emits beta != 1 itself).
        `references`: the runtimes whose outputs are kept, default
        `REFERENCES`. `rewrite(model_bytes)` edits the converted model (types
        or quantizations the converter never emits)."""
        self.name = name
        self.doc = doc
        self.inputs = inputs
        self.body = body
        self.expect = expect
        self.int16 = int16
        self.per_tensor = per_tensor
        act = tf.int16 if int16 else tf.int8
        self.io = io or (act, act)
        self.calibration = calibration
        self.test_inputs = test_inputs
        self.softmax_beta = softmax_beta
        self.references = references or REFERENCES
        self.rewrite = rewrite

    def seed(self):
        return zlib.crc32(self.name.encode())

    def function(self):
        spec = [tf.TensorSpec(shape, dtype, name=name) for name, shape, dtype, _ in self.inputs]
        names = [name for name, _, _, _ in self.inputs]
        body = self.body

        @tf.function(input_signature=spec)
        def fn(*args):
            return body(**dict(zip(names, args)))

        return fn

    def representative(self):
        rng = np.random.default_rng(self.seed())
        if self.calibration is not None:
            return [self.calibration(rng) for _ in range(CALIBRATION_SAMPLES)]
        samples = []
        for _ in range(CALIBRATION_SAMPLES):
            sample = {}
            for name, shape, dtype, (lo, hi) in self.inputs:
                if dtype == tf.int32:
                    sample[name] = rng.integers(lo, hi + 1, size=shape).astype(np.int32)
                else:
                    sample[name] = rng.uniform(lo, hi, size=shape).astype(np.float32)
            samples.append(sample)
        return samples


def full_range(rng, shape, dtype):
    """Uniform over the whole integer range, with the first two elements the
    extremes (saturation paths)."""
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, size=shape).astype(dtype)
    flat = a.reshape(-1)
    flat[0] = info.min
    if flat.size > 1:
        flat[1] = info.max
    return a


def test_inputs(case, details, run):
    rng = np.random.default_rng(case.seed() + 1000 * (run + 1))
    if case.test_inputs is not None:
        return case.test_inputs(rng, run)
    ranges = {name: rng_ for name, _, _, rng_ in case.inputs}
    result = {}
    for d in details["inputs"]:
        dtype = np.dtype(d["dtype"])
        if dtype in (np.int8, np.int16, np.uint8):
            result[d["name"]] = full_range(rng, d["shape"], dtype)
        elif dtype == np.float32:
            # 1.5 times the calibrated range: values past it saturate.
            lo, hi = ranges[d["name"]]
            mid, half = (lo + hi) / 2, (hi - lo) / 2
            result[d["name"]] = rng.uniform(mid - 1.5 * half, mid + 1.5 * half, size=d["shape"]).astype(np.float32)
        elif dtype == np.int32:
            lo, hi = ranges[d["name"]]
            result[d["name"]] = rng.integers(lo, hi + 1, size=d["shape"]).astype(np.int32)
        else:
            raise ValueError(f"{case.name}: no test inputs for {dtype}")
    return result


def weights(seed, shape, std=1.0):
    return tf.constant(np.random.default_rng(seed).normal(0.0, std, size=shape).astype(np.float32))


F32, I32 = tf.float32, tf.int32


def fc_cases():
    w = weights(1, [16, 8], 0.3)
    b = weights(2, [8], 0.5)
    cases = []
    for per_tensor in (False, True):
        q = "per_tensor" if per_tensor else "per_channel"
        x = [("x", [4, 16], F32, (-3.0, 3.0))]
        cases += [
            Case(f"fc_{q}_bias", f"x @ W + b, {q} weights", x,
                 lambda x: {"y": tf.matmul(x, w) + b}, ["FULLY_CONNECTED"], per_tensor=per_tensor),
            Case(f"fc_{q}_no_bias", f"x @ W, {q} weights, no bias tensor", x,
                 lambda x: {"y": tf.matmul(x, w)}, ["FULLY_CONNECTED"], per_tensor=per_tensor),
            Case(f"fc_{q}_relu", f"relu(x @ W + b), {q} weights (fused RELU)", x,
                 lambda x: {"y": tf.nn.relu(tf.matmul(x, w) + b)}, ["FULLY_CONNECTED"], per_tensor=per_tensor),
            Case(f"fc_{q}_relu6", f"relu6(x @ W + b), {q} weights (fused RELU6)", x,
                 lambda x: {"y": tf.nn.relu6(tf.matmul(x, w) + b)}, ["FULLY_CONNECTED"], per_tensor=per_tensor),
        ]
    w3 = weights(3, [16, 12], 0.2)
    b3 = weights(4, [12], 0.1)
    cases.append(Case("fc_rank3_input", "[2, 6, 16] @ W[16, 12] + b: a rank-3 activation as in MobileBert",
                      [("x", [2, 6, 16], F32, (-2.0, 2.0))],
                      lambda x: {"y": tf.matmul(x, w3) + b3}, ["FULLY_CONNECTED"]))
    # Tiny input scale (range [0, 1e-3]: zero point -128) and tiny weights.
    wt = weights(5, [16, 8], 1e-3)
    bt = weights(6, [8], 1e-7)
    cases.append(Case("fc_tiny_scales", "input in [0, 1e-3] (zero point -128), weights ~1e-3",
                      [("x", [4, 16], F32, (0.0, 1e-3))],
                      lambda x: {"y": tf.matmul(x, wt) + bt}, ["FULLY_CONNECTED"]))
    # Output channels whose weight magnitudes span 1e-3 .. 30: per-channel
    # scales far apart; input range [-2000, 500].
    ww = np.random.default_rng(7).normal(0, 1, size=[16, 8]) * np.logspace(-3, np.log10(30), 8)
    ww = tf.constant(ww.astype(np.float32))
    bw = weights(8, [8], 5.0)
    # Batch 1 (a matrix times one column): LiteRT's aarch64 optimized
    # FULLY_CONNECTED takes its custom GEMV path there when the output has at
    # least 4 channels and the input at least 8 (its own rounding); the
    # narrow case stays below the 8 inputs.
    wg = weights(11, [256, 2048], 0.1)
    bg = weights(12, [2048], 0.3)
    cases.append(Case("fc_batch1_gemv", "[1, 256] @ W[256, 2048] + b, per-tensor weights: one row, as a classifier head",
                      [("x", [1, 256], F32, (-3.0, 3.0))],
                      lambda x: {"y": tf.matmul(x, wg) + bg}, ["FULLY_CONNECTED"], per_tensor=True))
    wn = weights(13, [6, 512], 0.5)
    cases.append(Case("fc_batch1_narrow", "[1, 6] @ W[6, 512]: one row of 6 inputs (fewer than 8)",
                      [("x", [1, 6], F32, (-3.0, 3.0))],
                      lambda x: {"y": tf.matmul(x, wn)}, ["FULLY_CONNECTED"], per_tensor=True))
    cases.append(Case("fc_wide_scales", "input in [-2000, 500], per-channel weight scales from ~1e-3 to ~30",
                      [("x", [4, 16], F32, (-2000.0, 500.0))],
                      lambda x: {"y": tf.matmul(x, ww) + bw}, ["FULLY_CONNECTED"]))

    def sparse_calibration(rng):
        # One nonzero feature per row: the calibrated output range is narrow,
        # so dense test inputs saturate the output.
        x = np.zeros([4, 16], np.float32)
        x[np.arange(4), rng.integers(0, 16, size=4)] = rng.uniform(-1, 1, size=4)
        x[0, 0], x[1, 1] = -1.0, 1.0
        return {"x": x}

    cases.append(Case("fc_saturating", "calibrated on one-hot rows, tested on dense rows: the output saturates",
                      [("x", [4, 16], F32, (-1.0, 1.0))],
                      lambda x: {"y": tf.matmul(x, w) + b}, ["FULLY_CONNECTED"], calibration=sparse_calibration))
    return cases


def binary_cases():
    cases = []
    ops = {"add": (tf.add, "ADD"), "mul": (tf.multiply, "MUL"), "sub": (tf.subtract, "SUB")}
    for key, (fn, op) in ops.items():
        cases += [
            Case(f"{key}_same_shape", f"{op} of two [2, 3, 8] inputs with different ranges",
                 [("x", [2, 3, 8], F32, (-1.0, 1.0)), ("y", [2, 3, 8], F32, (-4.0, 2.0))],
                 lambda x, y, fn=fn: {"z": fn(x, y)}, [op]),
            Case(f"{key}_broadcast_rank4", f"{op} of [2, 1, 3, 4] and [1, 5, 1, 4] (both operands broadcast)",
                 [("x", [2, 1, 3, 4], F32, (-1.0, 1.0)), ("y", [1, 5, 1, 4], F32, (0.0, 8.0))],
                 lambda x, y, fn=fn: {"z": fn(x, y)}, [op]),
            Case(f"{key}_broadcast_outer", f"{op} of [4, 1] and [1, 8]",
                 [("x", [4, 1], F32, (-3.0, 3.0)), ("y", [1, 8], F32, (-0.5, 0.5))],
                 lambda x, y, fn=fn: {"z": fn(x, y)}, [op]),
            Case(f"{key}_broadcast_row_const", f"{op} of [3, 8] and a constant [8] row",
                 [("x", [3, 8], F32, (-2.0, 2.0))],
                 lambda x, fn=fn: {"z": fn(x, tf.constant(np.linspace(-1.5, 2.5, 8).astype(np.float32)))}, [op]),
            Case(f"{key}_scalar_const", f"{op} of [2, 8] and a scalar constant",
                 [("x", [2, 8], F32, (-1.0, 3.0))],
                 lambda x, fn=fn: {"z": fn(x, tf.constant(2.5))}, [op]),
            Case(f"{key}_scalar_input", f"{op} of [2, 3, 4] and a rank-0 input",
                 [("x", [2, 3, 4], F32, (-1.0, 1.0)), ("s", [], F32, (-2.0, 2.0))],
                 lambda x, s, fn=fn: {"z": fn(x, s)}, [op]),
        ]
    cases += [
        Case("add_tiny_positive", "ADD of inputs in [0, 1e-4] and [0, 3e-4]: tiny scales, zero points -128",
             [("x", [16], F32, (0.0, 1e-4)), ("y", [16], F32, (0.0, 3e-4))],
             lambda x, y: {"z": x + y}, ["ADD"]),
        Case("add_saturating", "ADD calibrated on y ~ -x (narrow output range), tested on independent inputs",
             [("x", [2, 8], F32, (-4.0, 4.0)), ("y", [2, 8], F32, (-4.0, 4.0))],
             lambda x, y: {"z": x + y}, ["ADD"],
             calibration=lambda rng: (lambda x: {"x": x, "y": (-x + rng.uniform(-0.1, 0.1, x.shape)).astype(np.float32)})(
                 rng.uniform(-4, 4, [2, 8]).astype(np.float32))),
        Case("mul_negative_ranges", "MUL of x in [-5000, 0] (zero point 127) and y in [-1, 0]: output zero point -128",
             [("x", [2, 8], F32, (-5000.0, 0.0)), ("y", [2, 8], F32, (-1.0, 0.0))],
             lambda x, y: {"z": x * y}, ["MUL"]),
        Case("mul_tiny", "MUL of inputs in [-1e-3, 1e-3]: output scale ~7e-9",
             [("x", [2, 8], F32, (-1e-3, 1e-3)), ("y", [2, 8], F32, (-1e-3, 1e-3))],
             lambda x, y: {"z": x * y}, ["MUL"]),
        Case("sub_one_minus_x", "1 - x for x in [0, 1] (MobileBert's mask path)",
             [("x", [1, 16], F32, (0.0, 1.0))],
             lambda x: {"z": 1.0 - x}, ["SUB"]),
    ]
    return cases


def batch_matmul_cases():
    cases = []
    for adj_x in (False, True):
        for adj_y in (False, True):
            xs = [2, 8, 4] if adj_x else [2, 4, 8]
            ys = [2, 6, 8] if adj_y else [2, 8, 6]
            name = "batch_matmul" + ("_adj_x" if adj_x else "") + ("_adj_y" if adj_y else "")
            cases.append(Case(name, f"matmul of {xs} and {ys}, adj_x={adj_x}, adj_y={adj_y}",
                              [("x", xs, F32, (-2.0, 2.0)), ("y", ys, F32, (-1.0, 1.5))],
                              lambda x, y, ax=adj_x, ay=adj_y: {"z": tf.matmul(x, y, adjoint_a=ax, adjoint_b=ay)},
                              ["BATCH_MATMUL"]))
    cases.append(Case("batch_matmul_rank4", "attention-shaped matmul [1, 2, 6, 8] x [1, 2, 8, 6]",
                      [("x", [1, 2, 6, 8], F32, (-3.0, 3.0)), ("y", [1, 2, 8, 6], F32, (-3.0, 3.0))],
                      lambda x, y: {"z": tf.matmul(x, y)}, ["BATCH_MATMUL"]))
    return cases


def layout_cases():
    table = weights(9, [40, 8], 0.7)

    def indices(shape):
        return lambda rng, run: {"ids": rng.integers(0, 40, size=shape).astype(np.int32)}

    return [
        Case("transpose_rank4", "transpose [2, 3, 4, 5] by [0, 2, 1, 3]",
             [("x", [2, 3, 4, 5], F32, (-1.0, 1.0))],
             lambda x: {"y": tf.transpose(x, [0, 2, 1, 3])}, ["TRANSPOSE"]),
        Case("transpose_rank2", "transpose [6, 10]",
             [("x", [6, 10], F32, (-1.0, 1.0))],
             lambda x: {"y": tf.transpose(x)}, ["TRANSPOSE"]),
        Case("reshape", "reshape [2, 3, 8] to [6, 8]",
             [("x", [2, 3, 8], F32, (-1.0, 1.0))],
             lambda x: {"y": tf.reshape(x, [6, 8])}, ["RESHAPE"]),
        Case("gather_table", "rows of a constant [40, 8] table (int8 after quantization) by int32 ids [5]",
             [("ids", [5], I32, (0, 39))],
             lambda ids: {"y": tf.gather(table, ids)}, ["GATHER"], io=(None, tf.int8), test_inputs=indices([5])),
        Case("gather_table_2d_ids", "rows of a constant [40, 8] table by int32 ids [2, 3]",
             [("ids", [2, 3], I32, (0, 39))],
             lambda ids: {"y": tf.gather(table, ids)}, ["GATHER"], io=(None, tf.int8), test_inputs=indices([2, 3])),
        Case("gather_axis1", "columns 7, 0, 3, 3 of an int8 input [4, 10]",
             [("x", [4, 10], F32, (-2.0, 2.0))],
             lambda x: {"y": tf.gather(x, tf.constant([7, 0, 3, 3]), axis=1)}, ["GATHER"]),
        Case("strided_slice", "x[:, 1:9:2, 3:] of [4, 10, 6]",
             [("x", [4, 10, 6], F32, (-1.0, 1.0))],
             lambda x: {"y": x[:, 1:9:2, 3:]}, ["STRIDED_SLICE"]),
        Case("strided_slice_shrink_reverse", "x[1, :, ::-1] of [3, 4, 6] (shrink axis, negative stride)",
             [("x", [3, 4, 6], F32, (-1.0, 1.0))],
             lambda x: {"y": x[1, :, ::-1]}, ["STRIDED_SLICE"]),
        Case("strided_slice_shift", "x[:, 1:] of [1, 12, 4] (MobileBert's trigram shift)",
             [("x", [1, 12, 4], F32, (-1.0, 1.0))],
             lambda x: {"y": x[:, 1:]}, ["STRIDED_SLICE"]),
        Case("pad_shift", "pad [1, 12, 4] by one row before (MobileBert's trigram shift)",
             [("x", [1, 12, 4], F32, (-1.0, 1.0))],
             lambda x: {"y": tf.pad(x, [[0, 0], [1, 0], [0, 0]])}, ["PAD"]),
        Case("pad_positive_input", "pad [2, 5, 4] by [[1, 0], [2, 1], [0, 3]]; input in [0, 6] (zero point -128)",
             [("x", [2, 5, 4], F32, (0.0, 6.0))],
             lambda x: {"y": tf.pad(x, [[1, 0], [2, 1], [0, 3]])}, ["PAD"]),
        Case("concat_same_range", "concatenate two [2, 4] inputs in [-1, 1] on the last axis",
             [("x", [2, 4], F32, (-1.0, 1.0)), ("y", [2, 4], F32, (-1.0, 1.0))],
             lambda x, y: {"z": tf.concat([x, y], -1)}, ["CONCATENATION"]),
        Case("concat_three_ranges", "concatenate [1, 6, 4] inputs in [-1, 1], [0, 20], [-0.01, 0.01] on the last axis",
             [("x", [1, 6, 4], F32, (-1.0, 1.0)), ("y", [1, 6, 4], F32, (0.0, 20.0)),
              ("w", [1, 6, 4], F32, (-0.01, 0.01))],
             lambda x, y, w: {"z": tf.concat([x, y, w], -1)}, ["CONCATENATION"]),
        Case("split_two", "split [2, 8] into two on the last axis",
             [("x", [2, 8], F32, (-2.0, 2.0))],
             lambda x: dict(zip(("a", "b"), tf.split(x, 2, axis=-1))), ["SPLIT"]),
        Case("split_three_axis0", "split [6, 5] into three on axis 0",
             [("x", [6, 5], F32, (-2.0, 2.0))],
             lambda x: dict(zip(("a", "b", "c"), tf.split(x, 3, axis=0))), ["SPLIT"]),
        Case("space_to_depth_2", "space_to_depth [1, 6, 4, 3] by blocks of 2",
             [("x", [1, 6, 4, 3], F32, (-1.0, 1.0))],
             lambda x: {"y": tf.nn.space_to_depth(x, 2)}, ["SPACE_TO_DEPTH"]),
        Case("space_to_depth_3_batch2", "space_to_depth [2, 3, 9, 2] by blocks of 3",
             [("x", [2, 3, 9, 2], F32, (-1.0, 1.0))],
             lambda x: {"y": tf.nn.space_to_depth(x, 3)}, ["SPACE_TO_DEPTH"]),
    ]


def conversion_cases():
    def mask(rng, run):
        m = np.ones([1, 16], np.int32)
        m[0, 10 - 4 * run:] = 0
        return {"mask": m}

    def mask_calibration(rng):
        m = np.ones([1, 16], np.int32)
        m[0, int(rng.integers(4, 17)):] = 0
        return {"mask": m}

    return [
        Case("quantize_float_to_int8", "float input in [-3, 5] quantized to int8 (then reshaped)",
             [("x", [2, 8], F32, (-3.0, 5.0))],
             lambda x: {"y": tf.reshape(x, [16])}, ["QUANTIZE"], io=(tf.float32, tf.int8)),
        Case("requantize_int8", "concat(tanh(x), y), y in [-30, 30]: TANH's fixed output quantization (1/128, 0) "
             "is requantized (QUANTIZE int8->int8) to the concatenation's",
             [("x", [2, 4], F32, (-1.0, 1.0)), ("y", [2, 4], F32, (-30.0, 30.0))],
             lambda x, y: {"z": tf.concat([tf.tanh(x), y], -1)}, ["QUANTIZE", "TANH", "CONCATENATION"]),
        Case("dequantize_int8", "int8 input in [-3, 5] reshaped, output dequantized to float",
             [("x", [2, 8], F32, (-3.0, 5.0))],
             lambda x: {"y": tf.reshape(x, [16])}, ["DEQUANTIZE"], io=(tf.int8, tf.float32)),
        Case("cast_mask_path", "(1 - float(mask)) * -10000 for an int32 mask (MobileBert's additive mask)",
             [("mask", [1, 16], I32, (0, 1))],
             lambda mask: {"y": (1.0 - tf.cast(mask, tf.float32)) * -10000.0}, ["CAST", "QUANTIZE", "SUB", "MUL"],
             io=(None, tf.int8), calibration=mask_calibration, test_inputs=mask),
        Case("cast_int32_to_float", "float(ids) * 0.5 for int32 ids in [-100, 100], output int8",
             [("ids", [2, 6], I32, (-100, 100))],
             lambda ids: {"y": tf.cast(ids, tf.float32) * 0.5}, ["CAST"], io=(None, tf.int8)),
    ]


def activation_cases():
    cases = []
    for bits, int16 in (("int8", False), ("int16", True)):
        cases += [
            Case(f"softmax_{bits}", f"{bits} softmax of [4, 16] in [-8, 8]",
                 [("x", [4, 16], F32, (-8.0, 8.0))],
                 lambda x: {"y": tf.nn.softmax(x)}, ["SOFTMAX"], int16=int16),
            Case(f"softmax_{bits}_beta", f"{bits} softmax with beta 0.37 (set in the model after conversion) of [4, 16] in [-8, 8]",
                 [("x", [4, 16], F32, (-8.0, 8.0))],
                 lambda x: {"y": tf.nn.softmax(x)}, ["SOFTMAX"], int16=int16, softmax_beta=0.37),
            Case(f"logistic_{bits}", f"{bits} logistic of [4, 16] in [-8, 8]",
                 [("x", [4, 16], F32, (-8.0, 8.0))],
                 lambda x: {"y": tf.sigmoid(x)}, ["LOGISTIC"], int16=int16),
            Case(f"logistic_{bits}_wide", f"{bits} logistic of [4, 16] in [-100, 100] (saturates)",
                 [("x", [4, 16], F32, (-100.0, 100.0))],
                 lambda x: {"y": tf.sigmoid(x)}, ["LOGISTIC"], int16=int16),
            Case(f"tanh_{bits}", f"{bits} tanh of [4, 16] in [-4, 4]",
                 [("x", [4, 16], F32, (-4.0, 4.0))],
                 lambda x: {"y": tf.tanh(x)}, ["TANH"], int16=int16),
            Case(f"tanh_{bits}_tiny", f"{bits} tanh of [4, 16] in [-0.05, 0.05]",
                 [("x", [4, 16], F32, (-0.05, 0.05))],
                 lambda x: {"y": tf.tanh(x)}, ["TANH"], int16=int16),
        ]
    cases += [
        Case("softmax_int8_rank4_masked", "int8 softmax of [1, 2, 6, 16] in [-10000, 5] (an additive mask's range)",
             [("x", [1, 2, 6, 16], F32, (-10000.0, 5.0))],
             lambda x: {"y": tf.nn.softmax(x)}, ["SOFTMAX"]),
        Case("softmax_int8_wide", "int8 softmax of [4, 16] in [-100, 100]",
             [("x", [4, 16], F32, (-100.0, 100.0))],
             lambda x: {"y": tf.nn.softmax(x)}, ["SOFTMAX"]),
        Case("softmax_int8_tiny", "int8 softmax of [4, 16] in [-0.01, 0.01]",
             [("x", [4, 16], F32, (-0.01, 0.01))],
             lambda x: {"y": tf.nn.softmax(x)}, ["SOFTMAX"]),
        Case("softmax_int8_row384", "int8 softmax of [2, 384] in [-6, 6] (MobileBert's row length)",
             [("x", [2, 384], F32, (-6.0, 6.0))],
             lambda x: {"y": tf.nn.softmax(x)}, ["SOFTMAX"]),
        Case("log_softmax_int8", "int8 log-softmax of [4, 16] in [-8, 8]",
             [("x", [4, 16], F32, (-8.0, 8.0))],
             lambda x: {"y": tf.nn.log_softmax(x)}, ["LOG_SOFTMAX"]),
        Case("log_softmax_int8_wide", "int8 log-softmax of [4, 16] in [-60, 60]",
             [("x", [4, 16], F32, (-60.0, 60.0))],
             lambda x: {"y": tf.nn.log_softmax(x)}, ["LOG_SOFTMAX"]),
        # Every input byte once: the whole 256-entry table of each kernel
        # path (XNNPACK builds its own from float math).
        Case("logistic_int8_all_bytes", "int8 logistic of [2, 128] in [-8, 8], every input byte once",
             [("x", [2, 128], F32, (-8.0, 8.0))],
             lambda x: {"y": tf.sigmoid(x)}, ["LOGISTIC"], test_inputs=all_bytes([2, 128])),
        Case("tanh_int8_all_bytes", "int8 tanh of [2, 128] in [-3, 3], every input byte once",
             [("x", [2, 128], F32, (-3.0, 3.0))],
             lambda x: {"y": tf.tanh(x)}, ["TANH"], test_inputs=all_bytes([2, 128])),
    ]
    return cases


def all_bytes(shape):
    """Test inputs of every int8 value once: ascending in run 0, shuffled
    in run 1."""
    def make(rng, run):
        values = np.arange(-128, 128, dtype=np.int8)
        if run == 1:
            rng.shuffle(values)
        return {"x": values.reshape(shape)}
    return make


def rounding_cases():
    """Large enough that requantizing with one rounding (LiteRT 2.3.0's
    kernels) and with gemmlowp's two roundings (TensorFlow 2.19's) gives
    different bytes somewhere: the two differ for roughly one element in
    2^(right shift + 1). (ADD, SUB, MUL and BATCH_MATMUL are left out: at these sizes
    their outputs came out identical under both roundings.)"""
    w = weights(10, [64, 64], 0.2)
    b = weights(11, [64], 0.5)
    x = [("x", [32, 64], F32, (-1.0, 1.0))]
    return [
        Case("fc_per_channel_rounding", "[32, 64] @ W[64, 64] + b, per-channel weights, 2048 outputs", x,
             lambda x: {"y": tf.matmul(x, w) + b}, ["FULLY_CONNECTED"]),
        Case("fc_per_tensor_rounding", "[32, 64] @ W[64, 64] + b, per-tensor weights, 2048 outputs", x,
             lambda x: {"y": tf.matmul(x, w) + b}, ["FULLY_CONNECTED"], per_tensor=True),
    ]


def conv_cases():
    """CONV_2D and DEPTHWISE_CONV_2D at their edges: odd image sizes, 1x1
    and 3x3 kernels, stride 1 and 2 under SAME and VALID, dilation 2, depth
    multipliers 1, 2 and 8 (the last on one input channel, a first layer),
    fused RELU and RELU6, per-tensor and per-channel weights, a channel of
    zero weights, saturating outputs, and layers large enough that the
    paths' roundings part somewhere."""
    def conv(x_shape, k, cout, seed, *, stride=1, padding="SAME", dilation=1, act=None, zero_channel=None):
        w = np.random.default_rng(seed).normal(0.0, 0.4, size=[k[0], k[1], x_shape[-1], cout]).astype(np.float32)
        if zero_channel is not None:
            w[..., zero_channel] = 0.0
        w = tf.constant(w)
        b = weights(seed + 1, [cout], 0.5)

        def body(x):
            y = tf.nn.conv2d(x, w, strides=[1, stride, stride, 1], padding=padding,
                             dilations=[1, dilation, dilation, 1]) + b
            return {"y": act(y) if act else y}
        return body

    def depthwise(x_shape, k, multiplier, seed, *, stride=1, padding="SAME", dilation=1, act=None):
        w = weights(seed, [k[0], k[1], x_shape[-1], multiplier], 0.4)
        b = weights(seed + 1, [x_shape[-1] * multiplier], 0.5)

        def body(x):
            y = tf.nn.depthwise_conv2d(x, w, strides=[1, stride, stride, 1], padding=padding,
                                       dilations=[dilation, dilation]) + b
            return {"y": act(y) if act else y}
        return body

    def sparse_pixels(shape):
        # A few nonzero pixels: the calibrated output range is narrow, so
        # the full-range test inputs saturate the output.
        def calibration(rng):
            x = np.zeros(shape, np.float32)
            x[0, rng.integers(0, shape[1], 2), rng.integers(0, shape[2], 2), :] = rng.uniform(-0.5, 0.5, shape[-1])
            x[0, 0, 0, 0], x[0, 1, 1, 0] = -2.0, 2.0
            return {"x": x}
        return calibration

    C, D = ["CONV_2D"], ["DEPTHWISE_CONV_2D"]
    specs = [
        # (name, doc, input shape, body, expect, options)
        ("conv_1x1", "1x1 conv of [1, 5, 7, 8] to 12 channels + bias", [1, 5, 7, 8],
         conv([1, 5, 7, 8], [1, 1], 12, 20), C, {}),
        ("conv_3x3_same", "3x3 conv, stride 1, SAME, [1, 9, 7, 3] to 8 channels", [1, 9, 7, 3],
         conv([1, 9, 7, 3], [3, 3], 8, 22), C, {}),
        ("conv_3x3_stride2_same", "3x3 conv, stride 2, SAME, odd [1, 9, 7, 3] (padding 1 before, 1 after / 0, 1)",
         [1, 9, 7, 3], conv([1, 9, 7, 3], [3, 3], 8, 24, stride=2), C, {}),
        ("conv_3x3_valid", "3x3 conv, stride 1, VALID, [1, 9, 7, 4] to 6 channels", [1, 9, 7, 4],
         conv([1, 9, 7, 4], [3, 3], 6, 26, padding="VALID"), C, {}),
        ("conv_3x3_stride2_valid", "3x3 conv, stride 2, VALID, [1, 10, 9, 4] to 6 channels", [1, 10, 9, 4],
         conv([1, 10, 9, 4], [3, 3], 6, 28, stride=2, padding="VALID"), C, {}),
        ("conv_dilation2", "3x3 conv, dilation 2, SAME, [1, 11, 9, 3] to 5 channels", [1, 11, 9, 3],
         conv([1, 11, 9, 3], [3, 3], 5, 30, dilation=2), C, {}),
        ("conv_5x3_relu", "5x3 conv, stride 2, SAME, fused RELU, [1, 9, 8, 3] to 6 channels", [1, 9, 8, 3],
         conv([1, 9, 8, 3], [5, 3], 6, 32, stride=2, act=tf.nn.relu), C, {}),
        ("conv_3x3_relu6", "3x3 conv, stride 1, SAME, fused RELU6, [1, 7, 7, 4] to 8 channels", [1, 7, 7, 4],
         conv([1, 7, 7, 4], [3, 3], 8, 34, act=tf.nn.relu6), C, {}),
        ("conv_per_tensor", "3x3 conv, stride 2, SAME, per-tensor weights, [1, 9, 7, 3] to 8 channels", [1, 9, 7, 3],
         conv([1, 9, 7, 3], [3, 3], 8, 36, stride=2), C, {"per_tensor": True}),
        ("conv_zero_channel", "3x3 conv, SAME, output channel 2 of 6 with all-zero weights", [1, 7, 5, 3],
         conv([1, 7, 5, 3], [3, 3], 6, 38, zero_channel=2), C, {}),
        ("conv_saturating", "3x3 conv calibrated on a few nonzero pixels, tested on full-range inputs: saturates",
         [1, 7, 7, 3], conv([1, 7, 7, 3], [3, 3], 6, 40), C, {"calibration": sparse_pixels([1, 7, 7, 3])}),
        ("conv_rounding", "3x3 conv, SAME, [1, 16, 16, 16] to 32 channels: 8192 outputs, where the roundings part",
         [1, 16, 16, 16], conv([1, 16, 16, 16], [3, 3], 32, 42), C, {}),
        ("depthwise_3x3_same", "3x3 depthwise, multiplier 1, stride 1, SAME, [1, 9, 7, 8]", [1, 9, 7, 8],
         depthwise([1, 9, 7, 8], [3, 3], 1, 50), D, {}),
        ("depthwise_3x3_stride2_m2", "3x3 depthwise, multiplier 2, stride 2, SAME, odd [1, 9, 7, 4]", [1, 9, 7, 4],
         depthwise([1, 9, 7, 4], [3, 3], 2, 52, stride=2), D, {}),
        ("depthwise_m8_one_channel", "3x3 depthwise of one input channel, multiplier 8, stride 2, SAME, [1, 9, 9, 1]",
         [1, 9, 9, 1], depthwise([1, 9, 9, 1], [3, 3], 8, 54, stride=2), D, {}),
        ("depthwise_valid_dilation2", "3x3 depthwise, dilation 2, VALID, [1, 11, 10, 6]", [1, 11, 10, 6],
         depthwise([1, 11, 10, 6], [3, 3], 1, 56, padding="VALID", dilation=2), D, {}),
        ("depthwise_relu6", "3x3 depthwise, stride 2, SAME, fused RELU6, [1, 8, 9, 6]", [1, 8, 9, 6],
         depthwise([1, 8, 9, 6], [3, 3], 1, 58, stride=2, act=tf.nn.relu6), D, {}),
        ("depthwise_relu_per_tensor", "3x3 depthwise, fused RELU, per-tensor weights, [1, 7, 7, 6]", [1, 7, 7, 6],
         depthwise([1, 7, 7, 6], [3, 3], 1, 60, act=tf.nn.relu), D, {"per_tensor": True}),
        ("depthwise_5x5", "5x5 depthwise, stride 1, SAME, [1, 9, 7, 5]", [1, 9, 7, 5],
         depthwise([1, 9, 7, 5], [5, 5], 1, 62), D, {}),
        ("depthwise_rounding", "3x3 depthwise, SAME, [1, 24, 24, 32]: 18432 outputs, where the roundings part",
         [1, 24, 24, 32], depthwise([1, 24, 24, 32], [3, 3], 1, 64), D, {}),
    ]
    return [Case(name, doc, [("x", shape, F32, (-2.0, 2.0))], body, expect, references=CONV_REFERENCES, **opts)
            for name, doc, shape, body, expect, opts in specs]
def pool_cases():
    """AVERAGE_POOL_2D and MAX_POOL_2D over NHWC inputs: odd sizes, channel
    counts off multiples of 16, windows clipped at every edge (SAME), and
    the activations the converter fuses into the pool."""

    def pool(kind, size, stride, padding, act=None):
        op = tf.nn.avg_pool2d if kind == "avg" else tf.nn.max_pool2d

        def body(x):
            y = op(x, ksize=size, strides=stride, padding=padding)
            if act is not None:
                y = act(y)
            return {"y": y}

        return body

    cases = []
    for kind, op in (("avg", "AVERAGE_POOL_2D"), ("max", "MAX_POOL_2D")):
        what = "average" if kind == "avg" else "max"
        cases += [
            Case(f"{kind}_pool_2x2_s2_valid", f"{what} pool 2x2 stride 2 VALID of [1, 8, 8, 20]",
                 [("x", [1, 8, 8, 20], F32, (-4.0, 4.0))], pool(kind, 2, 2, "VALID"), [op]),
            Case(f"{kind}_pool_3x3_s1_same", f"{what} pool 3x3 stride 1 SAME of [1, 7, 9, 19] (every edge clipped)",
                 [("x", [1, 7, 9, 19], F32, (-4.0, 4.0))], pool(kind, 3, 1, "SAME"), [op]),
            Case(f"{kind}_pool_3x3_s2_same", f"{what} pool 3x3 stride 2 SAME of [2, 9, 11, 35] (odd sizes)",
                 [("x", [2, 9, 11, 35], F32, (-4.0, 4.0))], pool(kind, 3, 2, "SAME"), [op]),
            Case(f"{kind}_pool_3x3_s2_same_even", f"{what} pool 3x3 stride 2 SAME of [1, 10, 8, 16] (padding only after)",
                 [("x", [1, 10, 8, 16], F32, (-4.0, 4.0))], pool(kind, 3, 2, "SAME"), [op]),
            Case(f"{kind}_pool_3x3_s2_valid", f"{what} pool 3x3 stride 2 VALID of [1, 9, 10, 17]",
                 [("x", [1, 9, 10, 17], F32, (-4.0, 4.0))], pool(kind, 3, 2, "VALID"), [op]),
            Case(f"{kind}_pool_2x3_s1x2_same", f"{what} pool 2x3 stride (1, 2) SAME of [1, 5, 7, 3]",
                 [("x", [1, 5, 7, 3], F32, (-4.0, 4.0))], pool(kind, [2, 3], [1, 2], "SAME"), [op]),
            Case(f"{kind}_pool_global_6x6", f"{what} pool 6x6 VALID of [1, 6, 6, 40] (global, as before a classifier)",
                 [("x", [1, 6, 6, 40], F32, (-4.0, 4.0))], pool(kind, 6, 1, "VALID"), [op]),
            Case(f"{kind}_pool_3x3_s2_same_relu", f"relu({what} pool 3x3 stride 2 SAME) of [1, 9, 9, 24]",
                 [("x", [1, 9, 9, 24], F32, (-4.0, 4.0))], pool(kind, 3, 2, "SAME", tf.nn.relu), [op]),
            Case(f"{kind}_pool_2x2_s2_same_relu6", f"relu6({what} pool 2x2 stride 2 SAME) of [1, 7, 7, 18]",
                 [("x", [1, 7, 7, 18], F32, (-8.0, 8.0))], pool(kind, 2, 2, "SAME", tf.nn.relu6), [op]),
            Case(f"{kind}_pool_int16", f"int16 {what} pool 3x3 stride 2 SAME of [1, 9, 9, 20]",
                 [("x", [1, 9, 9, 20], F32, (-4.0, 4.0))], pool(kind, 3, 2, "SAME"), [op], int16=True),
        ]
    return cases


def mean_cases():
    """MEAN (tf.reduce_mean): over height and width of NHWC inputs with and
    without keep_dims (keep_dims with axes {1, 2} is the optimized kernels'
    height-width path, the rest their reference arithmetic), odd sizes and
    channel counts off multiples of 16, a single axis, the last axis. The
    converter calibrates the output's range apart from the input's, so
    input and output scales differ."""

    def mean(axes, keep):
        def body(x):
            return {"y": tf.reduce_mean(x, axis=axes, keepdims=keep)}

        return body

    return [
        Case("mean_hw_keep", "mean over H, W of [1, 7, 7, 40], keep_dims (MobileNet's global pool)",
             [("x", [1, 7, 7, 40], F32, (-4.0, 4.0))], mean([1, 2], True), ["MEAN"]),
        Case("mean_hw_keep_odd", "mean over H, W of [2, 9, 11, 35], keep_dims (odd sizes, 2 images)",
             [("x", [2, 9, 11, 35], F32, (-4.0, 4.0))], mean([1, 2], True), ["MEAN"]),
        Case("mean_hw", "mean over H, W of [1, 5, 9, 19] without keep_dims",
             [("x", [1, 5, 9, 19], F32, (-4.0, 4.0))], mean([1, 2], False), ["MEAN"]),
        Case("mean_h_keep", "mean over H alone of [2, 6, 5, 24], keep_dims",
             [("x", [2, 6, 5, 24], F32, (-4.0, 4.0))], mean([1], True), ["MEAN"]),
        Case("mean_last", "mean over the last axis of [3, 4, 50] without keep_dims",
             [("x", [3, 4, 50], F32, (-2.0, 6.0))], mean([-1], False), ["MEAN"]),
    ]


def relu_cases():
    """RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU and HARD_SWISH on their own: the converter
    calibrates the output range apart from the input's, so every case
    requantizes; sizes off multiples of 64 (the table kernel's block)."""

    def unary(f):
        def body(x):
            return {"y": f(x)}

        return body

    return [
        Case("relu", "relu of [1, 9, 9, 20]",
             [("x", [1, 9, 9, 20], F32, (-4.0, 4.0))], unary(tf.nn.relu), ["RELU"]),
        Case("relu6", "relu6 of [2, 7, 5, 13], inputs beyond 6",
             [("x", [2, 7, 5, 13], F32, (-3.0, 9.0))], unary(tf.nn.relu6), ["RELU6"]),
        Case("relu_n1_to_1", "clip to [-1, 1] of [3, 37]",
             [("x", [3, 37], F32, (-2.5, 2.0))], unary(lambda x: tf.clip_by_value(x, -1.0, 1.0)),
             ["RELU_N1_TO_1"]),
        Case("leaky_relu_0_2", "leaky relu alpha 0.2 of [1, 6, 6, 19]",
             [("x", [1, 6, 6, 19], F32, (-4.0, 4.0))], unary(lambda x: tf.nn.leaky_relu(x, alpha=0.2)),
             ["LEAKY_RELU"]),
        Case("hard_swish", "x * relu6(x + 3) / 6 of [1, 7, 7, 24] (MobileNetV3's activation)",
             [("x", [1, 7, 7, 24], F32, (-5.0, 5.0))], unary(lambda x: x * tf.nn.relu6(x + 3.0) * (1.0 / 6.0)),
             ["HARD_SWISH"]),
        Case("hard_swish_wide", "hard swish of [2, 45] over a wide range",
             [("x", [2, 45], F32, (-12.0, 20.0))], unary(lambda x: x * tf.nn.relu6(x + 3.0) * (1.0 / 6.0)),
             ["HARD_SWISH"]),
        Case("leaky_relu_0_01", "leaky relu alpha 0.01 of [5, 41]",
             [("x", [5, 41], F32, (-6.0, 3.0))], unary(lambda x: tf.nn.leaky_relu(x, alpha=0.01)),
             ["LEAKY_RELU"]),
    ]


def to_uint8(model_bytes, requantize=None):
    """The model with every int8 tensor made uint8 holding the same real
    values (zero points + 128, constant bytes + 128): TFLite's uint8 kernels,
    which the converter no longer emits. `requantize` maps a tensor name to
    a new (scale, zero point) for it (inputs quantized apart from the
    output, as CONCATENATION's rescaling path takes them)."""
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(model_bytes))
    inputs = {}
    for sig in model.signatureDefs or []:
        for t in list(sig.inputs) + list(sig.outputs):
            name = t.name.decode() if isinstance(t.name, bytes) else t.name
            inputs[t.tensorIndex] = name
    changed = 0
    for sg in model.subgraphs:
        for index, t in enumerate(sg.tensors):
            if t.type != schema.TensorType.INT8:
                continue
            t.type = schema.TensorType.UINT8
            q = t.quantization
            if q is not None and q.zeroPoint is not None:
                q.zeroPoint = [int(z) + 128 for z in q.zeroPoint]
            buf = model.buffers[t.buffer]
            if buf.data is not None and len(buf.data):
                buf.data = (np.asarray(buf.data, np.uint8) ^ 0x80).astype(np.uint8)
            name = inputs.get(index)
            if requantize and name in requantize:
                scale, zero_point = requantize[name]
                q.scale = [float(scale)]
                q.zeroPoint = [int(zero_point)]
            changed += 1
    if changed == 0:
        raise RuntimeError("no int8 tensor to make uint8")
    if requantize and not set(requantize) <= set(inputs.values()):
        raise RuntimeError(f"no signature tensors {sorted(set(requantize) - set(inputs.values()))}")
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


def small_op_cases():
    """MAXIMUM, MINIMUM (raw comparisons, TFLite's broadcasting to rank 5,
    constant and scalar operands, int16), PRELU (keras PReLU's alpha shared
    over height and width, full and row alphas), ARG_MAX / ARG_MIN (int32
    and int64 outputs, every axis kind, inputs full of ties), PADV2 (a
    constant pad value inside and outside the input's range) and
    CONCATENATION of differently quantized uint8 inputs (TFLite's rescaling
    path). The uint8 cases are int8 models made uint8 by `to_uint8` (the
    converter emits no uint8 kernels)."""

    def binary(f):
        def body(x, y):
            return {"z": f(x, y)}

        return body

    def unary(f):
        def body(x):
            return {"y": f(x)}

        return body

    def prelu(shape, seed):
        # keras PReLU's formula with its alpha as a constant (the converter
        # fuses it into one PRELU); alpha of both signs.
        alpha = np.random.default_rng(seed).uniform(-0.8, 1.6, size=shape).astype(np.float32)
        neg_alpha = tf.constant(-alpha)
        return unary(lambda x: tf.nn.relu(x) + tf.nn.relu(-x) * neg_alpha)

    def ties(shape, values):
        def make(rng, run):
            return {"x": rng.integers(-values, values, size=shape).astype(np.int8)}

        return make

    def same_range(shapes, lo, hi):
        # Every sample spans exactly [lo, hi] in each input: the converter
        # then gives the inputs one quantization and inserts no QUANTIZE.
        def make(rng):
            sample = {}
            for name, shape in shapes.items():
                a = rng.uniform(lo, hi, size=shape).astype(np.float32)
                a.reshape(-1)[:2] = [lo, hi]
                sample[name] = a
            return sample

        return make

    const19 = weights(41, [19], 1.5)
    row = weights(42, [1, 1, 7], 1.0)
    u8 = lambda case: case.__setattr__("rewrite", to_uint8) or case  # noqa: E731
    cases = [
        Case("maximum_same_shape", "maximum of two [1, 7, 7, 19] inputs",
             [("x", [1, 7, 7, 19], F32, (-3.0, 3.0)), ("y", [1, 7, 7, 19], F32, (-3.0, 3.0))],
             binary(tf.maximum), ["MAXIMUM"]),
        Case("maximum_broadcast_rank4", "maximum of [2, 1, 5, 7] and [1, 3, 1, 7]",
             [("x", [2, 1, 5, 7], F32, (-2.0, 2.0)), ("y", [1, 3, 1, 7], F32, (-2.0, 2.0))],
             binary(tf.maximum), ["MAXIMUM"]),
        Case("maximum_const_channels", "maximum of [1, 5, 6, 19] and a constant [19]",
             [("x", [1, 5, 6, 19], F32, (-3.0, 3.0))],
             unary(lambda x: tf.maximum(x, const19)), ["MAXIMUM"]),
        Case("maximum_scalar", "maximum of [3, 37] and the scalar -0.75",
             [("x", [3, 37], F32, (-2.0, 2.0))],
             unary(lambda x: tf.maximum(x, -0.75)), ["MAXIMUM"]),
        Case("minimum_same_shape", "minimum of two [2, 33] inputs",
             [("x", [2, 33], F32, (-3.0, 3.0)), ("y", [2, 33], F32, (-3.0, 3.0))],
             binary(tf.minimum), ["MINIMUM"]),
        Case("minimum_broadcast_rank5", "minimum of [2, 1, 3, 1, 5] and [1, 2, 1, 4, 5] (rank 5)",
             [("x", [2, 1, 3, 1, 5], F32, (-2.0, 2.0)), ("y", [1, 2, 1, 4, 5], F32, (-2.0, 2.0))],
             binary(tf.minimum), ["MINIMUM"]),
        Case("minimum_scalar_first", "minimum of the scalar 1.25 and [1, 4, 4, 21] (constant first operand)",
             [("x", [1, 4, 4, 21], F32, (-2.0, 3.0))],
             unary(lambda x: tf.minimum(1.25, x)), ["MINIMUM"]),
        Case("minimum_row", "minimum of [1, 6, 5, 7] and a constant [1, 1, 7]",
             [("x", [1, 6, 5, 7], F32, (-2.0, 2.0))],
             unary(lambda x: tf.minimum(x, row)), ["MINIMUM"]),
        Case("maximum_int16", "int16 maximum of [2, 3, 45] and [3, 1]",
             [("x", [2, 3, 45], F32, (-3.0, 3.0)), ("y", [3, 1], F32, (-3.0, 3.0))],
             binary(tf.maximum), ["MAXIMUM"], int16=True,
             calibration=same_range({"x": [2, 3, 45], "y": [3, 1]}, -3.0, 3.0)),
        Case("minimum_int16", "int16 minimum of two [4, 29] inputs",
             [("x", [4, 29], F32, (-3.0, 3.0)), ("y", [4, 29], F32, (-3.0, 3.0))],
             binary(tf.minimum), ["MINIMUM"], int16=True,
             calibration=same_range({"x": [4, 29], "y": [4, 29]}, -3.0, 3.0)),
        u8(Case("maximum_uint8", "uint8 maximum of [2, 1, 5, 7] and [1, 3, 1, 7] (an int8 model made uint8)",
                [("x", [2, 1, 5, 7], F32, (-2.0, 2.0)), ("y", [1, 3, 1, 7], F32, (-2.0, 2.0))],
                binary(tf.maximum), ["MAXIMUM"])),
        u8(Case("minimum_uint8", "uint8 minimum of [3, 37] and the scalar 0.5",
                [("x", [3, 37], F32, (-2.0, 2.0))],
                unary(lambda x: tf.minimum(x, 0.5)), ["MINIMUM"])),
        Case("prelu_shared_hw", "keras PReLU(shared_axes=[1, 2]) of [1, 8, 8, 19]: alpha [1, 1, 19]",
             [("x", [1, 8, 8, 19], F32, (-4.0, 4.0))], prelu([1, 1, 19], 43), ["PRELU"]),
        Case("prelu_shared_hw_batch2", "keras PReLU(shared_axes=[1, 2]) of [2, 7, 9, 13]",
             [("x", [2, 7, 9, 13], F32, (-3.0, 5.0))], prelu([1, 1, 13], 44), ["PRELU"]),
        Case("prelu_full_alpha", "keras PReLU() of [1, 5, 6, 7]: alpha [5, 6, 7], one per element",
             [("x", [1, 5, 6, 7], F32, (-4.0, 4.0))], prelu([5, 6, 7], 45), ["PRELU"]),
        Case("prelu_rows", "keras PReLU() of [4, 37]: alpha [37]",
             [("x", [4, 37], F32, (-6.0, 2.0))], prelu([37], 46), ["PRELU"]),
        u8(Case("prelu_uint8", "uint8 keras PReLU(shared_axes=[1, 2]) of [1, 6, 6, 21] (an int8 model made uint8)",
                [("x", [1, 6, 6, 21], F32, (-4.0, 4.0))], prelu([1, 1, 21], 47), ["PRELU"])),
        Case("arg_max_last_int32", "argmax over the last axis of [2, 5, 37], int32 output",
             [("x", [2, 5, 37], F32, (-3.0, 3.0))],
             unary(lambda x: tf.math.argmax(x, axis=-1, output_type=tf.int32)), ["ARG_MAX"], io=(tf.int8, None)),
        Case("arg_max_axis1_int64", "argmax over axis 1 of [3, 6, 4, 5], int64 output",
             [("x", [3, 6, 4, 5], F32, (-3.0, 3.0))],
             unary(lambda x: tf.math.argmax(x, axis=1)), ["ARG_MAX"], io=(tf.int8, None)),
        Case("arg_max_ties", "argmax over the last axis of [4, 9, 24] with values in -3..3 (ties: the first index)",
             [("x", [4, 9, 24], F32, (-3.0, 3.0))],
             unary(lambda x: tf.math.argmax(x, axis=-1, output_type=tf.int32)), ["ARG_MAX"], io=(tf.int8, None),
             test_inputs=ties([4, 9, 24], 3)),
        Case("arg_max_axis0_ties", "argmax over axis 0 of [5, 3, 8] with values in -2..2",
             [("x", [5, 3, 8], F32, (-3.0, 3.0))],
             unary(lambda x: tf.math.argmax(x, axis=0, output_type=tf.int32)), ["ARG_MAX"], io=(tf.int8, None),
             test_inputs=ties([5, 3, 8], 2)),
        Case("arg_min_last_ties", "argmin over the last axis of [3, 4, 30] with values in -3..3, int32 output",
             [("x", [3, 4, 30], F32, (-3.0, 3.0))],
             unary(lambda x: tf.math.argmin(x, axis=-1, output_type=tf.int32)), ["ARG_MIN"], io=(tf.int8, None),
             test_inputs=ties([3, 4, 30], 3)),
        Case("arg_min_axis2_int64", "argmin over axis 2 of [2, 3, 7, 5], int64 output",
             [("x", [2, 3, 7, 5], F32, (-3.0, 3.0))],
             unary(lambda x: tf.math.argmin(x, axis=2)), ["ARG_MIN"], io=(tf.int8, None)),
        u8(Case("arg_max_uint8", "uint8 argmax over the last axis of [6, 40] (an int8 model made uint8)",
                [("x", [6, 40], F32, (-3.0, 3.0))],
                unary(lambda x: tf.math.argmax(x, axis=-1, output_type=tf.int32)), ["ARG_MAX"],
                io=(tf.int8, None))),
        Case("padv2_value_inside", "pad [1, 5, 6, 7] by one pixel with 1.5 (PADV2)",
             [("x", [1, 5, 6, 7], F32, (-2.0, 4.0))],
             unary(lambda x: tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], constant_values=1.5)), ["PADV2"]),
        Case("padv2_value_outside", "pad [2, 5, 4] by [[1, 0], [2, 1], [0, 3]] with -10 (past the input's range)",
             [("x", [2, 5, 4], F32, (-1.0, 3.0))],
             unary(lambda x: tf.pad(x, [[1, 0], [2, 1], [0, 3]], constant_values=-10.0)), ["PADV2"]),
        u8(Case("padv2_uint8", "uint8 pad [1, 6, 3, 5] with -0.5 (an int8 model made uint8)",
                [("x", [1, 6, 3, 5], F32, (-2.0, 2.0))],
                unary(lambda x: tf.pad(x, [[0, 0], [2, 0], [1, 2], [0, 0]], constant_values=-0.5)), ["PADV2"])),
    ]
    # CONCATENATION's uint8 rescaling: inputs calibrated alike (one
    # CONCATENATION, no QUANTIZE), then requantized apart from the output.
    concat_inputs = [("a", [1, 5, 3, 4], F32, (-2.0, 2.0)), ("b", [1, 5, 3, 6], F32, (-2.0, 2.0)),
                     ("c", [1, 5, 3, 3], F32, (-2.0, 2.0))]
    concat = lambda a, b, c: {"z": tf.concat([a, b, c], -1)}  # noqa: E731
    cases += [
        Case("concat_uint8_rescale", "uint8 concatenation of [1, 5, 3, 4], [1, 5, 3, 6], [1, 5, 3, 3] on the last "
             "axis, inputs a and c quantized apart from the output (scale 0.021 zero point 101, scale 0.0093 zero "
             "point 250), b as the output (copied)",
             concat_inputs, concat, ["CONCATENATION"],
             rewrite=lambda m: to_uint8(m, {"a": (0.021, 101), "c": (0.0093, 250)})),
        Case("concat_uint8_rescale_axis1", "uint8 concatenation on axis 1 of [2, 3, 4, 2], [2, 5, 4, 2], "
             "every input quantized apart from the output",
             [("a", [2, 3, 4, 2], F32, (-2.0, 2.0)), ("b", [2, 5, 4, 2], F32, (-2.0, 2.0))],
             lambda a, b: {"z": tf.concat([a, b], 1)}, ["CONCATENATION"],
             rewrite=lambda m: to_uint8(m, {"a": (0.0117, 0), "b": (0.033, 128)})),
        Case("concat_uint8_rescale_tie", "uint8 concatenation of [1, 4, 8, 8] (every byte once) and [1, 4, 8, 3] "
             "on the last axis, a at scale 0.08474978 zero point 136 into an output at scale 0.014528548 zero point "
             "191: a's byte 133 lands on -17.5 with the product and the sum rounded apart and on -17.499987 fused",
             [("a", [1, 4, 8, 8], F32, (-2.0, 2.0)), ("b", [1, 4, 8, 3], F32, (-2.0, 2.0))],
             lambda a, b: {"z": tf.concat([a, b], -1)}, ["CONCATENATION"],
             rewrite=lambda m: to_uint8(m, {"a": (0.08474978, 136), "z": (0.014528548, 191)}),
             test_inputs=lambda rng, run: {
                 "a": rng.permutation(256).astype(np.uint8).reshape([1, 4, 8, 8]),
                 "b": rng.integers(0, 256, size=[1, 4, 8, 3]).astype(np.uint8)}),
    ]
    for case in cases:
        case.references = CONV_REFERENCES
    return cases


def transpose_conv_cases():
    """TRANSPOSE_CONV (tf.nn.conv2d_transpose) at its edges: the decoder's
    stride-2 upsample with 2x2, 3x3 and 4x4 kernels under SAME, stride 1,
    VALID, odd sizes, output sizes that are not input * stride (SAME's and
    VALID's extra row and column, an output_padding), unequal strides, a
    kernel smaller than its stride (which XNNPACK's delegate leaves to the
    builtin kernels), per-tensor weights, with and without bias, fused RELU
    and RELU6, 1 / 3 / 17 / 32 output channels, two images, and a layer large
    enough that the paths' roundings part."""
    def tconv(x_shape, k, out_shape, seed, *, stride=(2, 2), padding="SAME", bias=True, act=None):
        w = weights(seed, [k[0], k[1], out_shape[-1], x_shape[-1]], 0.4)
        b = weights(seed + 1, [out_shape[-1]], 0.5)

        def body(x):
            y = tf.nn.conv2d_transpose(x, w, out_shape, strides=[1, stride[0], stride[1], 1], padding=padding)
            if bias:
                y = y + b
            return {"y": act(y) if act else y}
        return body

    T = ["TRANSPOSE_CONV"]
    specs = [
        # (name, doc, input shape, kernel, output shape, options of tconv, Case options)
        ("tconv_3x3_s2_same", "3x3, stride 2, SAME, [1, 5, 6, 8] to [1, 10, 12, 17] + bias",
         [1, 5, 6, 8], [3, 3], [1, 10, 12, 17], {}, {}),
        ("tconv_4x4_s2_same", "4x4, stride 2, SAME, [1, 4, 5, 16] to [1, 8, 10, 32] + bias",
         [1, 4, 5, 16], [4, 4], [1, 8, 10, 32], {}, {}),
        ("tconv_2x2_s2_same", "2x2, stride 2, SAME (the decoder upsample), [1, 6, 5, 32] to [1, 12, 10, 16]",
         [1, 6, 5, 32], [2, 2], [1, 12, 10, 16], {}, {}),
        ("tconv_3x3_s1_same", "3x3, stride 1, SAME, [1, 7, 5, 3] to one channel [1, 7, 5, 1]",
         [1, 7, 5, 3], [3, 3], [1, 7, 5, 1], {"stride": (1, 1)}, {}),
        ("tconv_3x3_s2_valid", "3x3, stride 2, VALID, [1, 4, 5, 3] to [1, 9, 11, 3]",
         [1, 4, 5, 3], [3, 3], [1, 9, 11, 3], {"padding": "VALID"}, {}),
        ("tconv_3x3_s2_valid_extra", "3x3, stride 2, VALID, [1, 4, 5, 3] to [1, 10, 12, 17] (an output_padding of 1)",
         [1, 4, 5, 3], [3, 3], [1, 10, 12, 17], {"padding": "VALID"}, {}),
        ("tconv_3x3_s2_same_odd", "3x3, stride 2, SAME, [1, 5, 5, 4] to odd [1, 9, 9, 3] (not input * stride)",
         [1, 5, 5, 4], [3, 3], [1, 9, 9, 3], {}, {}),
        ("tconv_5x3_s2x1_same", "5x3, strides (2, 1), SAME, [1, 4, 6, 3] to [1, 8, 6, 17]",
         [1, 4, 6, 3], [5, 3], [1, 8, 6, 17], {"stride": (2, 1)}, {}),
        ("tconv_1x1_s2_same", "1x1, stride 2, SAME, [1, 4, 4, 8] to [1, 8, 8, 8]: a kernel below its stride",
         [1, 4, 4, 8], [1, 1], [1, 8, 8, 8], {}, {}),
        ("tconv_no_bias", "3x3, stride 2, SAME, no bias, [1, 5, 4, 6] to [1, 10, 8, 17]",
         [1, 5, 4, 6], [3, 3], [1, 10, 8, 17], {"bias": False}, {}),
        ("tconv_per_tensor", "3x3, stride 2, SAME, per-tensor weights, [1, 5, 6, 8] to [1, 10, 12, 17]",
         [1, 5, 6, 8], [3, 3], [1, 10, 12, 17], {}, {"per_tensor": True}),
        ("tconv_relu", "4x4, stride 2, SAME, fused RELU, [1, 3, 4, 5] to [1, 6, 8, 3]",
         [1, 3, 4, 5], [4, 4], [1, 6, 8, 3], {"act": tf.nn.relu}, {}),
        ("tconv_relu6", "3x3, stride 2, SAME, fused RELU6, [1, 4, 4, 8] to [1, 8, 8, 17]",
         [1, 4, 4, 8], [3, 3], [1, 8, 8, 17], {"act": tf.nn.relu6}, {}),
        ("tconv_batch2", "3x3, stride 2, SAME, two images [2, 3, 4, 3] to [2, 6, 8, 5]",
         [2, 3, 4, 3], [3, 3], [2, 6, 8, 5], {}, {}),
        ("tconv_rounding", "3x3, stride 2, SAME, [1, 8, 8, 32] to [1, 16, 16, 32]: 8192 outputs, where the roundings part",
         [1, 8, 8, 32], [3, 3], [1, 16, 16, 32], {}, {}),
    ]
    cases = [Case(name, doc, [("x", shape, F32, (-2.0, 2.0))], tconv(shape, k, out, 70 + 2 * i, **t), T,
                  references=CONV_REFERENCES, **opts)
             for i, (name, doc, shape, k, out, t, opts) in enumerate(specs)]
    # The converter calibrates a fused activation's output range to the
    # activation's, which makes the clamp a no-op; these two set the fused
    # activation after conversion on a layer calibrated without one (output
    # range about [-12, 12]), so that RELU and RELU6 clamp.
    for act, code in (("relu", 1), ("relu6", 3)):
        case = Case(f"tconv_set_{act}", f"3x3, stride 2, SAME, [1, 4, 5, 6] to [1, 8, 10, 17], "
                    f"fused {act.upper()} set after conversion (the clamp visible)",
                    [("x", [1, 4, 5, 6], F32, (-4.0, 4.0))],
                    tconv([1, 4, 5, 6], [3, 3], [1, 8, 10, 17], 100 + code), T, references=CONV_REFERENCES)
        case.rewrite = set_fused_activation(code)
        cases.append(case)
    return cases


def set_fused_activation(code):
    """A rewrite setting every TRANSPOSE_CONV's fused activation to `code`
    (1 RELU, 3 RELU6)."""
    def rewrite(model_bytes):
        from tensorflow.lite.python import schema_py_generated as schema
        from tensorflow.lite.tools import flatbuffer_utils

        model = flatbuffer_utils.read_model_from_bytearray(bytearray(model_bytes))
        changed = 0
        for sg in model.subgraphs:
            for op in sg.operators:
                c = model.operatorCodes[op.opcodeIndex]
                if max(c.builtinCode, c.deprecatedBuiltinCode) == schema.BuiltinOperator.TRANSPOSE_CONV:
                    op.builtinOptions.fusedActivationFunction = code
                    changed += 1
        if changed == 0:
            raise RuntimeError("no TRANSPOSE_CONV to set the activation of")
        return bytes(flatbuffer_utils.convert_object_to_bytearray(model))
    return rewrite


def resize_cases():
    """RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR: 2x upsampling (a
    detector's neck), non-integer factors, downscaling, a 1x1 input, two
    images, channel counts 3 / 17 / 32, int16, and each coordinate option
    as TensorFlow emits it: `tf.image.resize` (half_pixel_centers) and
    `tf.compat.v1.image.resize_*` (align_corners true or false, the legacy
    convention without either). Input and output share one quantization
    (the converter's rule for both ops)."""

    def resize(method, size, mode):
        def body(x):
            if mode == "half_pixel":
                y = tf.image.resize(x, size, method=method)
            elif method == "nearest":
                y = tf.compat.v1.image.resize_nearest_neighbor(x, size, align_corners=mode == "align")
            else:
                y = tf.compat.v1.image.resize_bilinear(x, size, align_corners=mode == "align")
            return {"y": y}

        return body

    def case(name, doc, shape, size, method, mode, **opts):
        op = "RESIZE_NEAREST_NEIGHBOR" if method == "nearest" else "RESIZE_BILINEAR"
        return Case(name, doc, [("x", shape, F32, (-4.0, 4.0))], resize(method, size, mode), [op],
                    references=XNNPACK_REFERENCES, **opts)

    cases = []
    for method, short in (("nearest", "nearest"), ("bilinear", "bilinear")):
        what = "nearest-neighbour" if method == "nearest" else "bilinear"
        cases += [
            case(f"resize_{short}_2x", f"{what} 2x upsampling of [1, 10, 10, 32] to 20x20 (legacy coordinates)",
                 [1, 10, 10, 32], [20, 20], method, "legacy"),
            case(f"resize_{short}_2x_half_pixel", f"{what} 2x upsampling of [1, 8, 6, 17] to 16x12 (tf.image.resize)",
                 [1, 8, 6, 17], [16, 12], method, "half_pixel"),
            case(f"resize_{short}_align_corners", f"{what} resize of [1, 7, 5, 17] to 12x9 with align_corners",
                 [1, 7, 5, 17], [12, 9], method, "align"),
            case(f"resize_{short}_7x5_to_12x9", f"{what} resize of [1, 7, 5, 3] to 12x9 (legacy coordinates)",
                 [1, 7, 5, 3], [12, 9], method, "legacy"),
            case(f"resize_{short}_7x5_to_12x9_half_pixel", f"{what} resize of [1, 7, 5, 32] to 12x9 (tf.image.resize)",
                 [1, 7, 5, 32], [12, 9], method, "half_pixel"),
            case(f"resize_{short}_down_half_pixel", f"{what} downscaling of [2, 9, 11, 17] to 4x5 (tf.image.resize, 2 images)",
                 [2, 9, 11, 17], [4, 5], method, "half_pixel"),
            case(f"resize_{short}_down_align_corners", f"{what} downscaling of [1, 9, 11, 3] to 4x5 with align_corners",
                 [1, 9, 11, 3], [4, 5], method, "align"),
            case(f"resize_{short}_1x1", f"{what} resize of a 1x1 input [2, 1, 1, 3] to 3x4 (legacy coordinates, 2 images)",
                 [2, 1, 1, 3], [3, 4], method, "legacy"),
            case(f"resize_{short}_int16", f"int16 {what} resize of [1, 7, 5, 17] to 12x9 (tf.image.resize)",
                 [1, 7, 5, 17], [12, 9], method, "half_pixel", int16=True),
        ]
    # uint8: the converter makes int8 ops only; these are its int8 models
    # with every int8 tensor made uint8 (zero points + 128), as older
    # uint8-quantized graphs carry them. LiteRT's uint8 bilinear kernels
    # compute in f32 (reference and optimized apart, aarch64 with fused
    # multiply-adds), XNNPACK in its Q11 integers.
    cases += [
        case("resize_bilinear_uint8_2x", "uint8 bilinear 2x upsampling of [1, 10, 10, 32] to 20x20 (legacy coordinates)",
             [1, 10, 10, 32], [20, 20], "bilinear", "legacy", rewrite=to_uint8),
        case("resize_bilinear_uint8_half_pixel", "uint8 bilinear resize of [1, 7, 5, 32] to 12x9 (tf.image.resize)",
             [1, 7, 5, 32], [12, 9], "bilinear", "half_pixel", rewrite=to_uint8),
        case("resize_bilinear_uint8_align_corners", "uint8 bilinear resize of [1, 7, 5, 17] to 12x9 with align_corners",
             [1, 7, 5, 17], [12, 9], "bilinear", "align", rewrite=to_uint8),
        case("resize_bilinear_uint8_down_half_pixel",
             "uint8 bilinear downscaling of [2, 9, 11, 17] to 4x5 (tf.image.resize, 2 images)",
             [2, 9, 11, 17], [4, 5], "bilinear", "half_pixel", rewrite=to_uint8),
        case("resize_nearest_uint8_down_26_to_22",
             "uint8 nearest-neighbour downscaling of [1, 26, 26, 3] to 22x22 (legacy coordinates)",
             [1, 26, 26, 3], [22, 22], "nearest", "legacy", rewrite=to_uint8),
    ]
    # Where LiteRT's two nearest-neighbour kernels part: output 11 of 22
    # maps to 11 * 26 / 22 = 13 exactly; the reference's f32 product gives
    # 12.99.. (row and column 12), the optimized Q16 scale 13.
    cases.append(case("resize_nearest_down_26_to_22",
                      "nearest-neighbour downscaling of [1, 26, 26, 3] to 22x22 (legacy coordinates; "
                      "LiteRT's reference and optimized kernels pick other source pixels)",
                      [1, 26, 26, 3], [22, 22], "nearest", "legacy"))
    return cases


def lstm_rewrite(*, time_major=False, cifg=False, cell_clip=None, peephole=False, layer_norm=False,
                 projection=None, seed=0):
    """Edits a converted model's UNIDIRECTIONAL_SEQUENCE_LSTM into what the
    converter does not emit from a Keras layer: time-major layout (input and
    output shapes [time, batch, features]), CIFG (the input gate's weights
    and bias dropped: the op then couples the input gate to the forget gate,
    so the model computes a different function, which is the point), a cell
    clip, and the optional parts TFLite's integer kernel takes: peephole
    (cell-to-gate) weights, layer normalization coefficients, a projection
    to `projection` outputs (fewer than the cells). The added weights come
    from a generator seeded with `seed`; the converter's weights stay, except
    that layer normalization requantizes the gate biases and a projection
    replaces the recurrent weights (their depth becomes the projection's
    size)."""
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    rng = np.random.default_rng(seed)

    def rewrite(model_bytes):
        model = flatbuffer_utils.read_model_from_bytearray(bytearray(model_bytes))
        sg = model.subgraphs[0]
        ops = [op for op in sg.operators
               if max(model.operatorCodes[op.opcodeIndex].builtinCode,
                      model.operatorCodes[op.opcodeIndex].deprecatedBuiltinCode)
               == schema.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM]
        if len(ops) != 1:
            raise RuntimeError("expected one UNIDIRECTIONAL_SEQUENCE_LSTM")
        op = ops[0]
        if time_major:
            op.builtinOptions.timeMajor = True
            for t in (op.inputs[0], op.outputs[0]):
                tensor = sg.tensors[t]
                for field in ("shape", "shapeSignature"):
                    dims = getattr(tensor, field)
                    if dims is not None and len(dims) == 3:
                        dims = list(dims)
                        dims[0], dims[1] = dims[1], dims[0]
                        setattr(tensor, field, np.array(dims, dtype=np.int32))
        if cifg:
            inputs = list(op.inputs)
            for i in (1, 5, 12):
                inputs[i] = -1
            op.inputs = np.array(inputs, dtype=np.int32)
        if cell_clip is not None:
            op.builtinOptions.cellClip = cell_clip
        if peephole or layer_norm or projection is not None:
            lstm_add_parts(model, sg, op, rng, schema, peephole=peephole, layer_norm=layer_norm,
                           projection=projection)
        return bytes(flatbuffer_utils.convert_object_to_bytearray(model))

    return rewrite


def lstm_add_parts(model, sg, op, rng, schema, *, peephole, layer_norm, projection):
    """Adds to a converted UNIDIRECTIONAL_SEQUENCE_LSTM (24 inputs, 5
    intermediates) what `lstm_rewrite` documents, quantized as TFLite's
    integer (8x8->16) kernel reads it: peephole and layer normalization
    weights int16 symmetric per tensor; with layer normalization the gate
    biases are added after the normalization, in the coefficients' scale /
    1024, and intermediates 0..3 carry the int16 scale of each gate's
    matmul result; a projection has int8 symmetric weights [outputs, cells]
    and an int32 bias in the weights' scale x the hidden state's
    (intermediate 4, which then quantizes the hidden state before the
    projection)."""
    inputs = list(op.inputs)
    n_cell = sg.tensors[inputs[4]].shape[0]
    state = sg.tensors[inputs[18]]
    batch = state.shape[0]

    def quant(scale, zero_point=0):
        q = schema.QuantizationParametersT()
        q.scale = np.array([scale], dtype=np.float32)
        q.zeroPoint = np.array([zero_point], dtype=np.int64)
        return q

    def set_data(tensor, array):
        buf = schema.BufferT()
        buf.data = np.frombuffer(array.tobytes(), dtype=np.uint8).copy()
        model.buffers.append(buf)
        tensor.buffer = len(model.buffers) - 1
        tensor.shape = np.array(array.shape, dtype=np.int32)

    def add_const(name, array, tensor_type, scale):
        t = schema.TensorT()
        t.name = name.encode()
        t.type = tensor_type
        t.quantization = quant(scale)
        set_data(t, array)
        sg.tensors.append(t)
        return len(sg.tensors) - 1

    def symmetric(values, bits):
        limit = 2 ** (bits - 1) - 1
        scale = float(np.max(np.abs(values))) / limit
        q = np.clip(np.round(values / scale), -limit, limit)
        return q.astype(np.int16 if bits == 16 else np.int8), scale

    gates = [g for g in range(4) if inputs[1 + g] >= 0]  # CIFG drops gate 0
    if peephole:
        # Cell-to-gate weights of the input (absent with CIFG), forget and output gates.
        for slot, g in ((9, 0), (10, 1), (11, 3)):
            if g in gates:
                w, scale = symmetric(rng.normal(0.0, 0.4, (n_cell,)), 16)
                inputs[slot] = add_const(f"cell_to_gate{g}_weights", w, schema.TensorType.INT16, scale)
    if layer_norm:
        # The gates' matmul results (no bias) in int16 at these scales.
        gate_scales = [3.0e-4, 3.5e-4, 4.0e-4, 3.2e-4]
        for g in gates:
            w, scale = symmetric(rng.normal(1.0, 0.2, (n_cell,)), 16)
            inputs[20 + g] = add_const(f"layer_norm_gate{g}_coefficients", w, schema.TensorType.INT16, scale)
            bias = sg.tensors[inputs[12 + g]]
            raw = np.frombuffer(bytes(model.buffers[bias.buffer].data), dtype=np.int32)
            real = raw.astype(np.float64) * float(bias.quantization.scale[0])
            bias_scale = scale / 1024.0
            bias.quantization = quant(bias_scale)
            set_data(bias, np.round(real / bias_scale).astype(np.int32))
        # Prepare reads all four scales with layer normalization, the
        # input gate's with CIFG too.
        for g in range(4):
            inter = sg.tensors[op.intermediates[g]]
            inter.type = schema.TensorType.INT16
            inter.quantization = quant(gate_scales[g])
    if projection is not None:
        if projection >= n_cell:
            raise RuntimeError("a projection here has fewer outputs than cells")
        hidden_scale = 1.0 / 128.0
        hidden = sg.tensors[op.intermediates[4]]
        hidden.type = schema.TensorType.INT8
        hidden.quantization = quant(hidden_scale)
        w, w_scale = symmetric(rng.normal(0.0, (1.0 / n_cell) ** 0.5, (projection, n_cell)), 8)
        inputs[16] = add_const("projection_weights", w, schema.TensorType.INT8, w_scale)
        bias_scale = w_scale * hidden_scale
        bias = np.round(rng.normal(0.0, 0.1, (projection,)) / bias_scale).astype(np.int32)
        inputs[17] = add_const("projection_bias", bias, schema.TensorType.INT32, bias_scale)
        # The recurrent weights now read the projected state.
        for g in gates:
            r, r_scale = symmetric(rng.normal(0.0, (1.0 / projection) ** 0.5, (n_cell, projection)), 8)
            rec = sg.tensors[inputs[5 + g]]
            rec.quantization = quant(r_scale)
            set_data(rec, r)
        # The output (and the output state, its copy) in a range the projection fills.
        out_q = (2.0 / 128.0, 0)
        state.shape = np.array([batch, projection], dtype=np.int32)
        state.quantization = quant(*out_q)
        out = sg.tensors[op.outputs[0]]
        for field in ("shape", "shapeSignature"):
            dims = getattr(out, field)
            if dims is not None and len(dims) == 3:
                dims = list(dims)
                dims[2] = projection
                setattr(out, field, np.array(dims, dtype=np.int32))
        out.quantization = quant(*out_q)
    op.inputs = np.array(inputs, dtype=np.int32)


LSTM_REFERENCES = ["litert_ref", "litert_builtin"]
# Invokes on one interpreter for a case's sequence reference (state carried).
LSTM_SEQUENCE_STEPS = 4


def lstm_cases():
    """UNIDIRECTIONAL_SEQUENCE_LSTM, TFLite's integer kernel (int8 input and
    output state, int16 cell state): Keras LSTM layers (return_sequences)
    with seeded weights, converted full-integer int8; batch 1 and 3, odd
    sizes, and rewrites of the converted op for time-major layout, CIFG and
    a cell clip. The op keeps its state between invokes: each case also has
    a sequence of `LSTM_SEQUENCE_STEPS` invokes on one interpreter (each
    step's output), the state carried. Layer normalization, projection and
    peephole weights, which the converter does not emit from a Keras layer,
    are added by `lstm_rewrite` with seeded values."""

    def layer_body(seed, shape, units):
        rng = np.random.default_rng(seed)
        features = shape[-1]
        layer = tf.keras.layers.LSTM(units, return_sequences=True)
        layer.build(tuple(shape))
        # Seeded weights, scaled as Glorot would (no global generator used).
        kernel = rng.normal(0.0, (2.0 / (features + 4 * units)) ** 0.5, (features, 4 * units))
        recurrent = rng.normal(0.0, (1.0 / units) ** 0.5, (units, 4 * units))
        bias = rng.normal(0.0, 0.3, (4 * units,))
        bias[units:2 * units] += 1.0  # forget gate bias, as unit_forget_bias
        layer.set_weights([kernel.astype(np.float32), recurrent.astype(np.float32),
                           bias.astype(np.float32)])

        def body(x):
            return {"y": layer(x)}

        return body, layer

    def case(name, doc, shape, units, rewrite=None):
        body, layer = layer_body(zlib.crc32(name.encode()), shape, units)
        c = Case(name, doc, [("x", shape, F32, (-2.0, 2.0))], body,
                 ["UNIDIRECTIONAL_SEQUENCE_LSTM"], references=LSTM_REFERENCES, rewrite=rewrite)
        c.sequence_steps = LSTM_SEQUENCE_STEPS
        c.trackables = [layer]
        return c

    return [
        case("lstm_basic", "Keras LSTM, 8 units, input [1, 4, 6]", [1, 4, 6], 8),
        case("lstm_batch3_odd", "Keras LSTM, 13 units, input [3, 5, 19] (batch-major, three rows)",
             [3, 5, 19], 13),
        case("lstm_time_major", "lstm_batch3_odd's layer shape rewritten time-major: input [5, 3, 19]",
             [3, 5, 19], 13, lstm_rewrite(time_major=True)),
        case("lstm_cifg", "Keras LSTM, 12 units, input [2, 6, 10], rewritten CIFG (input gate dropped)",
             [2, 6, 10], 12, lstm_rewrite(cifg=True)),
        case("lstm_cell_clip", "Keras LSTM, 16 units, input [1, 7, 24], cell clip 0.75",
             [1, 7, 24], 16, lstm_rewrite(cell_clip=0.75)),
        case("lstm_wide", "Keras LSTM, 48 units, input [2, 3, 70] (NEON depth tails)", [2, 3, 70], 48),
        case("lstm_peephole", "Keras LSTM, 12 units, input [2, 5, 9], with seeded peephole weights",
             [2, 5, 9], 12, lstm_rewrite(peephole=True, seed=2701)),
        case("lstm_projection", "Keras LSTM, 16 units, input [2, 5, 11], projected to 6 outputs",
             [2, 5, 11], 16, lstm_rewrite(projection=6, seed=2703)),
        case("lstm_peephole_projection", "Keras LSTM, 16 units, input [3, 4, 7], CIFG with peephole "
             "weights, projected to 10 outputs", [3, 4, 7], 16,
             lstm_rewrite(cifg=True, peephole=True, projection=10, seed=2704)),
        # Layer normalization: LiteRT's aarch64 build normalizes blocks of 16
        # cells with other rounding than its portable code (x86, reference)
        # and the rest of a row with the portable code, so the cell counts
        # give each case whole blocks and a tail.
        case("lstm_layer_norm", "Keras LSTM, 20 units, input [2, 5, 9], with seeded layer "
             "normalization coefficients", [2, 5, 9], 20, lstm_rewrite(layer_norm=True, seed=2705)),
        case("lstm_cifg_peephole_layer_norm", "Keras LSTM, 36 units, input [3, 4, 7], CIFG with "
             "peephole weights and layer normalization", [3, 4, 7], 36,
             lstm_rewrite(cifg=True, peephole=True, layer_norm=True, seed=2706)),
        case("lstm_layer_norm_projection", "Keras LSTM, 24 units, input [1, 6, 12], layer "
             "normalization, projected to 10 outputs", [1, 6, 12], 24,
             lstm_rewrite(layer_norm=True, projection=10, seed=2707)),
    ]


def lstm_sequence(case, tfl, details, out_dir, rel_dir):
    """The sequence reference of a stateful case: `case.sequence_steps`
    seeded full-range inputs invoked in order on one interpreter per
    reference (no reset), each step's outputs. Returns the manifest entry."""
    rng = np.random.default_rng(case.seed() + 7777)
    steps = []
    for step in range(case.sequence_steps):
        inputs = {}
        for d in details["inputs"]:
            inputs[d["name"]] = full_range(rng, d["shape"], np.dtype(d["dtype"]))
        steps.append(inputs)
    entry = {"inputs": [], "outputs": {}}
    for step, inputs in enumerate(steps):
        files = {}
        for name, array in inputs.items():
            rel = f"{rel_dir}/seq{step}.input.{common.file_name_part(name)}.npy"
            common.write_npy(os.path.join(out_dir, rel), array)
            files[name] = rel
        entry["inputs"].append(files)
    for ref in case.references:
        runner = common.make_interpreter(ref, tfl).get_signature_runner()
        for step, inputs in enumerate(steps):
            out = runner(**inputs)
            for name, array in out.items():
                rel = f"{rel_dir}/seq{step}.{ref}.{common.file_name_part(name)}.npy"
                common.write_npy(os.path.join(out_dir, rel), np.array(array))
                entry["outputs"].setdefault(name, {}).setdefault(ref, []).append(rel)
    return entry


def all_cases():
    delegated = (fc_cases() + binary_cases() + batch_matmul_cases() + layout_cases() + conversion_cases()
                 + activation_cases() + rounding_cases())
    pools = pool_cases()
    means = mean_cases()
    relus = relu_cases()
    for case in delegated + pools + means + relus:
        if case.references == REFERENCES:
            case.references = XNNPACK_REFERENCES
    cases = delegated + conv_cases() + pools + means + relus + small_op_cases()
    cases += transpose_conv_cases() + resize_cases() + lstm_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


def set_softmax_beta(model_bytes, beta):
    """Returns the model with every SOFTMAX's beta set to `beta`."""
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(model_bytes))
    changed = 0
    for sg in model.subgraphs:
        for op in sg.operators:
            code = model.operatorCodes[op.opcodeIndex]
            if max(code.builtinCode, code.deprecatedBuiltinCode) == schema.BuiltinOperator.SOFTMAX:
                op.builtinOptions.beta = beta
                changed += 1
    if changed == 0:
        raise RuntimeError("no SOFTMAX to set beta on")
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


def convert_case(case):
    fn = case.function()
    input_type, output_type = case.io
    # With a trackable object the converter writes a signature (named inputs
    # and outputs); without one it writes none.
    holder = tf.Module()
    holder.fn = fn
    if getattr(case, "trackables", None):
        # Variables the function captures (a Keras layer's weights).
        holder.trackables = case.trackables
    tfl = common.convert(fn.get_concrete_function(), holder, case.representative, int16=case.int16,
                         per_tensor=case.per_tensor, input_type=input_type, output_type=output_type)
    if case.softmax_beta is not None:
        tfl = set_softmax_beta(tfl, case.softmax_beta)
    if case.rewrite is not None:
        tfl = case.rewrite(tfl)
    return tfl


def generate(out_dir, log=print, only=None):
    manifest = {
        "description": "single-op models: tiny tf.function graphs, full-integer quantized by "
        "tf.lite.TFLiteConverter (tensorflow-cpu 2.19.1); per case the model, two input sets "
        "and each reference's outputs",
        "references": {k: common.REFERENCES[k] for k in CONV_REFERENCES},
        "cases": [],
    }
    for case in all_cases():
        if only and case.name not in only:
            continue
        tfl = convert_case(case)
        hist = common.op_histogram(tfl)
        totals = common.op_totals(hist)
        missing = [op for op in case.expect if op not in totals]
        if missing:
            raise RuntimeError(f"{case.name}: converter produced {hist}, not {missing}")
        details = common.tensor_details(tfl)
        rel_dir = f"ops/{case.name}"
        common.write_bytes(os.path.join(out_dir, rel_dir, "model.tflite"), tfl)
        entry = {
            "name": case.name,
            "description": case.doc,
            "model": f"{rel_dir}/model.tflite",
            "activations": "int16 (16x8 ops)" if case.int16 else "int8",
            "weights": "per-tensor" if case.per_tensor else "per-channel",
            "op_histogram": hist,
            "operators": common.operators(tfl),
            "tensors": details,
            "runs": [],
        }
        for run in range(RUNS):
            inputs = test_inputs(case, details, run)
            run_entry = {"name": f"run{run}", "inputs": {}, "outputs": {}}
            for name, array in inputs.items():
                rel = f"{rel_dir}/run{run}.input.{common.file_name_part(name)}.npy"
                common.write_npy(os.path.join(out_dir, rel), array)
                run_entry["inputs"][name] = rel
            for ref in case.references:
                out = common.run_interpreter(ref, tfl, inputs)
                for name, array in out.items():
                    rel = f"{rel_dir}/run{run}.{ref}.{common.file_name_part(name)}.npy"
                    common.write_npy(os.path.join(out_dir, rel), array)
                    run_entry["outputs"].setdefault(name, {})[ref] = rel
            entry["runs"].append(run_entry)
        if getattr(case, "sequence_steps", 0):
            entry["sequence"] = lstm_sequence(case, tfl, details, out_dir, rel_dir)
        manifest["cases"].append(entry)
        log(f"[ops] {case.name}: {len(tfl)} bytes, " + ", ".join(f"{n} {k}" for k, n in hist.items()))
    common.write_json(os.path.join(out_dir, "ops", "manifest.json"), manifest)
    return manifest
