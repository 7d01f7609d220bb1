#!/usr/bin/env python3
"""Golden-vector generator for qneon.

Builds single-op .tflite models (one input tensor -> SOFTMAX / LOG_SOFTMAX /
LOGISTIC / TANH -> one output tensor) with exact, hand-picked quantization
parameters, runs them through

  * tflm        the TFLite Micro Python interpreter (`tflite_micro.runtime`),
  * tflite_ref  `tf.lite.Interpreter` with the BUILTIN_REF op resolver
                (reference kernels),
  * tflite_opt  `tf.lite.Interpreter` with BUILTIN_WITHOUT_DEFAULT_DELEGATES
                (the default, optimized builtin kernels, no XNNPACK),

and writes one JSON-lines file per (op, dtype, impl) to tests/golden/.

Every interpreter runs in a child process ("worker"), because some reference
kernels abort the whole process (failed CHECK / assert) on some inputs.  When
a worker dies, the case it was running is recorded with "status": "abort" and
a fresh worker carries on with the remaining cases.  A kernel that refuses the
parameters (Prepare/Invoke error) gives "status": "rejected".

The case list is generated from a fixed seed and is identical for every
implementation of an (op, dtype) pair (except the full int16 sweep, written
for IMPL_FULL_SWEEP only), so files can be compared case by case.

Usage (from the repository root, inside the venv described in README.md):

    python tests/golden/gen/generate.py            # writes tests/golden/*.jsonl
    python tests/golden/gen/generate.py --only softmax_int8
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

SEED = 20240611
GENERATOR = "tests/golden/gen/generate.py"

GEN_DIR = os.path.dirname(os.path.abspath(__file__))
GOLDEN_DIR = os.path.dirname(GEN_DIR)

DTYPES = {
    "int8": (np.int8, -128, 127),
    "uint8": (np.uint8, 0, 255),
    "int16": (np.int16, -32768, 32767),
}

# Output quantization the kernels require (checked against the kernels'
# Prepare functions, see README.md).
OUT_QUANT = {
    ("softmax", "int8"): (1.0 / 256, -128),
    ("softmax", "uint8"): (1.0 / 256, 0),
    ("softmax", "int16"): (1.0 / 32768, 0),
    ("logistic", "int8"): (1.0 / 256, -128),
    ("logistic", "uint8"): (1.0 / 256, 0),
    ("logistic", "int16"): (1.0 / 32768, 0),
    ("tanh", "int8"): (1.0 / 128, 0),
    ("tanh", "uint8"): (1.0 / 128, 128),
    ("tanh", "int16"): (1.0 / 32768, 0),
    ("log_softmax", "int8"): (16.0 / 256, 127),
    ("log_softmax", "uint8"): (16.0 / 256, 255),
}

ALL_PAIRS = [
    ("softmax", "int8"), ("softmax", "uint8"), ("softmax", "int16"),
    ("log_softmax", "int8"), ("log_softmax", "uint8"),
    ("logistic", "int8"), ("logistic", "uint8"), ("logistic", "int16"),
    ("tanh", "int8"), ("tanh", "uint8"), ("tanh", "int16"),
]

# Which (op, dtype) pairs each implementation runs.  TFLM has no uint8
# kernels for these ops and no int16 LOG_SOFTMAX (they fail at Prepare/Invoke
# with "not supported"), TFLite has no int16 LOG_SOFTMAX.
IMPL_PAIRS = {
    "tflm": [p for p in ALL_PAIRS if p[1] != "uint8" and p != ("log_softmax", "int16")],
    "tflite_ref": list(ALL_PAIRS),
    "tflite_opt": list(ALL_PAIRS),
}
IMPLS = ["tflm", "tflite_ref", "tflite_opt"]

RESOLVERS = {
    "tflm": "tflite_micro.runtime.Interpreter (TFLM built-in op resolver, reference kernels)",
    "tflite_ref": "tf.lite.experimental.OpResolverType.BUILTIN_REF",
    "tflite_opt": "tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES",
}

# ---------------------------------------------------------------------------
# Flatbuffer model writer (TFLite schema v3), written by hand with the plain
# flatbuffers.Builder.  Field slots follow tensorflow/lite/schema/schema.fbs.
# ---------------------------------------------------------------------------

_BUILTIN_CODE = {"logistic": 14, "softmax": 25, "tanh": 28, "log_softmax": 50}
_OPTIONS_TYPE = {"softmax": 9, "log_softmax": 36}  # BuiltinOptions union tags
_TENSOR_TYPE = {"uint8": 3, "int16": 7, "int8": 9}
# Op versions the converter would emit for these types.
_OP_VERSION = {"uint8": 1, "int8": 2, "int16": 3}


def build_model(op, dtype, shape, in_scale, in_zp, out_scale, out_zp, beta=1.0):
    import flatbuffers

    b = flatbuffers.Builder(1024)

    def int_vec(values):
        return b.CreateNumpyVector(np.asarray(values, dtype=np.int32))

    def table_vec(offsets):
        b.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    def tensor(name, scale, zp):
        name_off = b.CreateString(name)
        scale_off = b.CreateNumpyVector(np.array([scale], dtype=np.float32))
        zp_off = b.CreateNumpyVector(np.array([zp], dtype=np.int64))
        b.StartObject(7)  # QuantizationParameters
        b.PrependUOffsetTRelativeSlot(2, scale_off, 0)  # scale
        b.PrependUOffsetTRelativeSlot(3, zp_off, 0)  # zero_point
        quant = b.EndObject()
        shape_off = int_vec(shape)
        b.StartObject(5)  # Tensor
        b.PrependUOffsetTRelativeSlot(0, shape_off, 0)  # shape
        b.PrependInt8Slot(1, _TENSOR_TYPE[dtype], 0)  # type
        b.PrependUint32Slot(2, 0, 0)  # buffer 0 (the empty sentinel)
        b.PrependUOffsetTRelativeSlot(3, name_off, 0)  # name
        b.PrependUOffsetTRelativeSlot(4, quant, 0)  # quantization
        return b.EndObject()

    t_in = tensor("input", in_scale, in_zp)
    t_out = tensor("output", out_scale, out_zp)

    options = None
    if op == "softmax":
        b.StartObject(1)  # SoftmaxOptions
        b.PrependFloat32Slot(0, float(beta), 0.0)
        options = b.EndObject()
    elif op == "log_softmax":
        b.StartObject(0)  # LogSoftmaxOptions
        options = b.EndObject()

    op_in = int_vec([0])
    op_out = int_vec([1])
    b.StartObject(5)  # Operator
    b.PrependUint32Slot(0, 0, 0)  # opcode_index
    b.PrependUOffsetTRelativeSlot(1, op_in, 0)
    b.PrependUOffsetTRelativeSlot(2, op_out, 0)
    if options is not None:
        b.PrependUint8Slot(3, _OPTIONS_TYPE[op], 0)
        b.PrependUOffsetTRelativeSlot(4, options, 0)
    operator = b.EndObject()

    tensors = table_vec([t_in, t_out])
    sg_in = int_vec([0])
    sg_out = int_vec([1])
    operators = table_vec([operator])
    sg_name = b.CreateString("main")
    b.StartObject(5)  # SubGraph
    b.PrependUOffsetTRelativeSlot(0, tensors, 0)
    b.PrependUOffsetTRelativeSlot(1, sg_in, 0)
    b.PrependUOffsetTRelativeSlot(2, sg_out, 0)
    b.PrependUOffsetTRelativeSlot(3, operators, 0)
    b.PrependUOffsetTRelativeSlot(4, sg_name, 0)
    subgraph = b.EndObject()

    code = _BUILTIN_CODE[op]
    version = _OP_VERSION[dtype]
    b.StartObject(4)  # OperatorCode
    b.PrependInt8Slot(0, min(code, 127), 0)  # deprecated_builtin_code
    b.PrependInt32Slot(2, version, 1)  # version
    b.PrependInt32Slot(3, code, 0)  # builtin_code
    opcode = b.EndObject()

    b.StartObject(0)  # Buffer 0: empty
    buffer0 = b.EndObject()

    opcodes = table_vec([opcode])
    subgraphs = table_vec([subgraph])
    buffers = table_vec([buffer0])
    desc = b.CreateString("qneon golden single-op model")
    b.StartObject(5)  # Model
    b.PrependUint32Slot(0, 3, 0)  # schema version
    b.PrependUOffsetTRelativeSlot(1, opcodes, 0)
    b.PrependUOffsetTRelativeSlot(2, subgraphs, 0)
    b.PrependUOffsetTRelativeSlot(3, desc, 0)
    b.PrependUOffsetTRelativeSlot(4, buffers, 0)
    model = b.EndObject()
    b.Finish(model, file_identifier=b"TFL3")
    return bytes(b.Output())


# ---------------------------------------------------------------------------
# Worker process: runs cases on one implementation.
# Protocol: 8-byte little-endian length + pickle, both directions.
# ---------------------------------------------------------------------------


def _send(stream, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def _recv(stream):
    head = stream.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    data = stream.read(n)
    if len(data) < n:
        return None
    return pickle.loads(data)


_NOISE = (
    "WARNING: All log messages before absl",
    "cpu_feature_guard",
    "To enable the following instructions",
    "oneDNN custom operations",
    "rebuild TensorFlow with the appropriate",
    "UserWarning",
    "tf.lite.Interpreter is deprecated",
    "TF 2.20",
    "LiteRT interpreter",
    "migration guide",
    "for details.",
    "warnings.warn",
    "INFO: Created TensorFlow Lite",
)


def clean_stderr(text, limit=400):
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not any(n in ln for n in _NOISE)]
    out = " | ".join(lines)
    return out[:limit]


def _read_from(path, pos):
    try:
        with open(path, "rb") as f:
            f.seek(pos)
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def worker_main(impl, stderr_path):
    # Keep the protocol on a private fd; anything native code prints to
    # stdout goes to stderr instead.
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    proto_in = sys.stdin.buffer

    import warnings

    warnings.filterwarnings("ignore")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tflite_micro

    versions = {"tflite_micro": tflite_micro.__version__}
    if impl == "tflm":
        from tflite_micro import runtime as tflm_runtime

        import importlib.metadata as md

        tf_version = None
        for dist in ("tensorflow-cpu", "tensorflow"):
            try:
                tf_version = md.version(dist)
                break
            except md.PackageNotFoundError:
                pass
        versions["tensorflow"] = tf_version
    else:
        import tensorflow as tf

        versions["tensorflow"] = tf.__version__
        resolver = {
            "tflite_ref": tf.lite.experimental.OpResolverType.BUILTIN_REF,
            "tflite_opt": tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        }[impl]
    _send(proto_out, {"hello": versions})

    def stderr_pos():
        sys.stderr.flush()
        return os.fstat(2).st_size

    while True:
        job = _recv(proto_in)
        if job is None:
            break
        for case in job["cases"]:
            pos = stderr_pos()
            res = {"id": case["id"]}
            x = np.frombuffer(case["input"], dtype=DTYPES[case["dtype"]][0]).reshape(case["shape"])
            try:
                if impl == "tflm":
                    arena = 4 * x.nbytes + (256 << 10)
                    it = tflm_runtime.Interpreter.from_bytes(case["model"], arena_size=arena)
                    qi = it.get_input_details(0)["quantization_parameters"]
                    qo = it.get_output_details(0)["quantization_parameters"]
                    res["in_q"] = (float(qi["scales"][0]), int(qi["zero_points"][0]))
                    res["out_q"] = (float(qo["scales"][0]), int(qo["zero_points"][0]))
                    it.set_input(x, 0)
                    it.invoke()
                    y = np.asarray(it.get_output(0))
                else:
                    it = tf.lite.Interpreter(
                        model_content=case["model"],
                        experimental_op_resolver_type=resolver,
                        num_threads=1,
                    )
                    it.allocate_tensors()
                    di = it.get_input_details()[0]
                    do = it.get_output_details()[0]
                    res["in_q"] = (float(di["quantization"][0]), int(di["quantization"][1]))
                    res["out_q"] = (float(do["quantization"][0]), int(do["quantization"][1]))
                    it.set_tensor(di["index"], x)
                    it.invoke()
                    y = np.array(it.get_tensor(do["index"]))
                if y.dtype != x.dtype or y.size != x.size:
                    raise RuntimeError("unexpected output %s %s" % (y.dtype, y.shape))
                res["status"] = "ok"
                res["output"] = y.reshape(-1).astype(np.int64).tolist()
            except Exception as e:  # Prepare/Invoke failure reported as exception
                res["status"] = "rejected"
                res["error"] = clean_stderr(str(e) + "\n" + _read_from(stderr_path, pos))
            res["stderr_pos"] = stderr_pos()
            _send(proto_out, res)


class Worker:
    """Parent-side handle of one worker process; restarts it after a crash."""

    def __init__(self, impl, tmpdir):
        self.impl = impl
        self.tmpdir = tmpdir
        self.proc = None
        self.restarts = 0
        self.versions = None
        self.n = 0

    def _start(self):
        self.n += 1
        self.err_path = os.path.join(self.tmpdir, "%s.%d.stderr" % (self.impl, self.n))
        self.err_file = open(self.err_path, "wb")
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", self.impl, "--stderr-file", self.err_path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err_file,
            env=env,
        )
        hello = _recv(self.proc.stdout)
        if hello is None:
            self.proc.wait()
            raise RuntimeError(
                "worker %s failed to start: %s" % (self.impl, _read_from(self.err_path, 0)[-2000:])
            )
        self.versions = hello["hello"]
        self.err_pos = 0

    def _died(self):
        rc = self.proc.wait()
        self.err_file.close()
        self.proc = None
        self.restarts += 1
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = "signal %d" % -rc
            what = "killed by %s" % name
        else:
            what = "exit code %d" % rc
        msg = clean_stderr(_read_from(self.err_path, self.err_pos))
        return what + (": " + msg if msg else "")

    def ensure(self):
        if self.proc is None:
            self._start()

    def run(self, cases):
        """Run cases (list of dicts); returns {id: result}."""
        results = {}
        pending = list(cases)
        while pending:
            self.ensure()
            try:
                _send(self.proc.stdin, {"cases": pending})
            except BrokenPipeError:
                pass
            done = 0
            for _ in pending:
                r = _recv(self.proc.stdout)
                if r is None:
                    break
                self.err_pos = r.pop("stderr_pos")
                results[r["id"]] = r
                done += 1
            if done == len(pending):
                break
            why = self._died()
            dead = pending[done]
            results[dead["id"]] = {"id": dead["id"], "status": "abort", "error": why}
            pending = pending[done + 1:]
        return results

    def close(self):
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.wait()
            self.err_file.close()
            self.proc = None


# ---------------------------------------------------------------------------
# Case generation
# ---------------------------------------------------------------------------

# Input scales: log-spread from 1e-3 to 20 plus the usual suspects.
SCALES_8 = [
    0.001, 0.0015, 0.0025, 1.0 / 256, 0.006, 0.01, 0.015, 0.025, 0.04,
    1.0 / 16, 20.0 / 255, 0.1, 0.125, 0.17, 0.25, 0.33, 0.5, 0.75, 1.0,
    1.6, 2.0, 3.3, 4.0, 4.5, 6.0, 7.9, 8.0, 10.0, 20.0,
]
ZPS = {
    "int8": [-128, -1, 0, 3, 50, 127],
    "uint8": [0, 128, 255, 100],
    "int16": [0],
}
# int16 softmax input scales (any positive scale is accepted, zp must be 0).
SCALES_16_SOFTMAX = [
    2.0 ** -15, 1e-4, 2.0 ** -12, 3e-4, 2.0 ** -10, 0.002, 1.0 / 256, 0.01,
    0.02, 1.0 / 16, 0.1, 0.3, 1.0, 4.0, 5.0, 5.1, 20.0,
]
# int16 logistic/tanh input scales (any positive scale accepted, zp must be 0;
# powers of two around 2^-12 take special paths in the optimized kernels).
SCALES_16_ACT = [
    1e-7, 1e-6, 1e-5, 2.0 ** -15, 2.0 ** -14, 5e-5, 2.0 ** -13, 1e-4, 2.0 ** -12,
    3e-4, 1.0 / 3000, 2.0 ** -11, 7e-4, 2.0 ** -10, 0.0015, 2.0 ** -9, 0.003,
    2.0 ** -8, 0.01, 2.0 ** -6, 0.05, 0.1, 0.5, 1.0, 4.0, 5.3, 5.4, 20.0,
]
FULL_SWEEP_SCALE_16 = 2.0 ** -12
# Implementations whose int16 logistic/tanh files hold the full 65536-value
# sweep (it is run on every implementation and compared, but only written
# here to keep the data small).
IMPL_FULL_SWEEP = ("tflite_opt",)
BETAS_EXTRA = [0.5, 2.0, 0.01, 10.0, 0.1, 3.0]
BETA_SCALES_8 = [0.001, 1.0 / 256, 0.04, 1.0 / 16, 0.1, 0.5, 1.0, 4.0, 10.0]
BETA_SCALES_16 = [1e-4, 2.0 ** -12, 0.002, 0.01, 0.1, 1.0]
ROW_LENS = [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127,
            128, 129, 255, 256, 383, 384, 385, 1000]
SPECIAL_LENS = [1, 2, 3, 4, 8, 16, 17, 64, 100, 255, 256]
SPECIAL_LENS_16 = [1, 2, 3, 4, 8, 17, 64, 255]
SPECIAL_KINDS = ["constant", "one_hot", "all_min", "all_max", "alternating",
                 "two_max", "one_hot_near", "ramp"]
CYCLE_KINDS = ["narrow", "one_hot", "sparse_high", "ramp", "alternating",
               "constant", "normal_wide", "two_max", "one_hot_near"]


def f32(x):
    """The float32 value of x as a Python float (exactly representable)."""
    return float(np.float32(x))


def make_row(kind, n, rng, lo, hi):
    span = hi - lo
    if kind == "uniform":
        r = rng.integers(lo, hi + 1, n)
    elif kind in ("normal", "normal_wide"):
        c = int(rng.integers(lo, hi + 1))
        top = span / 8 if kind == "normal" else span / 2
        sigma = math.exp(rng.uniform(0.0, math.log(max(top, 1.5))))
        r = np.rint(rng.normal(c, sigma, n))
    elif kind == "narrow":  # everything within a few quanta below a peak
        c = int(rng.integers(lo + 8, hi + 1))
        r = c - rng.integers(0, int(rng.integers(1, 9)), n)
    elif kind == "constant":
        r = np.full(n, int(rng.integers(lo, hi + 1)))
    elif kind == "one_hot":
        r = np.full(n, lo)
        r[rng.integers(0, n)] = hi
    elif kind == "one_hot_near":
        c = int(rng.integers(lo + 1, hi + 1))
        r = np.full(n, c - 1)
        r[rng.integers(0, n)] = c
    elif kind == "all_min":
        r = np.full(n, lo)
    elif kind == "all_max":
        r = np.full(n, hi)
    elif kind == "alternating":
        r = np.where(np.arange(n) % 2 == 0, lo, hi)
    elif kind == "two_max":
        r = rng.integers(lo, (lo + hi) // 2 + 1, n)
        r[rng.integers(0, n)] = hi
        r[rng.integers(0, n)] = hi
    elif kind == "sparse_high":
        r = rng.integers(lo, lo + span // 2 + 1, n)
        k = max(1, n // 16)
        r[rng.integers(0, n, k)] = rng.integers(hi - max(span // 32, 2), hi + 1, k)
    elif kind == "ramp":
        r = np.rint(np.linspace(lo, hi, n)) if n > 1 else np.array([hi])
    else:
        raise ValueError(kind)
    return np.clip(np.asarray(r, dtype=np.int64), lo, hi)


def near_tie_rows(op, dtype, scale, beta, n, count, rng, candidates=100000):
    """Rows whose exact (float64) result lies closest to a rounding tie of the
    output quantization, i.e. where float and fixed-point kernels can differ.
    Picked from random rows whose values span about 6 real units below the
    row max."""
    _, lo, hi = DTYPES[dtype]
    osc, ozp = OUT_QUANT[(op, dtype)]
    s = float(np.float32(scale)) * beta
    k = int(np.clip(np.ceil(6.0 / s), 1, hi - lo))
    top = rng.integers(lo + k, hi + 1, (candidates, 1))
    x = top - rng.integers(0, k + 1, (candidates, n))
    z = (x - x.max(axis=1, keepdims=True)) * s
    if op == "softmax":
        e = np.exp(z)
        v = e / e.sum(axis=1, keepdims=True) / osc
    else:
        v = (z - np.log(np.exp(z).sum(axis=1, keepdims=True))) / osc
    dist = np.abs(v - np.floor(v) - 0.5)
    # ignore values that saturate at either end of the output range
    q = np.floor(v + 0.5) + ozp
    dist[(q <= lo) | (q >= hi)] = 1.0
    best = np.argsort(dist.min(axis=1), kind="stable")[:count]
    return [x[i] for i in best]


def softmax_expsum(row, scale, beta):
    """Float estimate of the sum of exp(beta*scale*(x - max)) of a row."""
    d = (row.astype(np.float64) - row.max()) * float(np.float32(scale)) * beta
    return float(np.exp(d).sum())


class CaseSet:
    def __init__(self, op, dtype):
        self.op = op
        self.dtype = dtype
        self.cases = []

    def add(self, in_scale, in_zp, rows, beta=1.0, note=None, split_over=None, write_only=None):
        """rows: list of 1-D int arrays of equal length.

        split_over: for softmax-like ops, rows whose float exp-sum reaches this
        value are put into single-row cases of their own (they may abort)."""
        rows = [np.asarray(r, dtype=np.int64) for r in rows]
        groups = [rows]
        if split_over is not None and len(rows) > 1:
            safe = [r for r in rows if softmax_expsum(r, in_scale, beta) < split_over]
            risky = [r for r in rows if softmax_expsum(r, in_scale, beta) >= split_over]
            groups = ([safe] if safe else []) + [[r] for r in risky]
        for g in groups:
            self.cases.append({
                "op": self.op, "dtype": self.dtype,
                "in_scale": in_scale, "in_zp": in_zp, "beta": beta,
                "row_len": int(len(g[0])), "rows": np.stack(g), "note": note,
                "write_only": write_only,
            })


def gen_softmax_like(op, dtype, rng):
    """Cases for softmax / log_softmax."""
    cs = CaseSet(op, dtype)
    _, lo, hi = DTYPES[dtype]
    zps = ZPS[dtype]
    is16 = dtype == "int16"
    # Row sums of exps >= 512 abort the 8-bit fixed-point softmax (TFLite ref
    # and TFLM); keep such rows in single-row cases of their own.
    split = 400.0 if (op == "softmax" and not is16) else (3000.0 if op == "log_softmax" else None)
    scales = SCALES_16_SOFTMAX if is16 else SCALES_8

    def rows_of(kinds, n):
        return [make_row(k, n, rng, lo, hi) for k in kinds]

    kind_i = [0]

    def next_kind():
        k = CYCLE_KINDS[kind_i[0] % len(CYCLE_KINDS)]
        kind_i[0] += 1
        return k

    # 1. Every input scale (beta 1; for 8-bit softmax two zero points each):
    #    a short battery of cases.
    battery_lens = [5, 16, 33, 64, 100, 127, 7, 31, 128, 3, 65, 17]
    nzp = 2 if (op == "softmax" and not is16) else 1
    for i, s in enumerate(scales):
        for j in range(nzp):
            zp = zps[(nzp * i + j) % len(zps)]
            n1 = battery_lens[(nzp * i + j) % len(battery_lens)]
            cs.add(s, zp, rows_of(["uniform", "normal"], n1), split_over=split)
            cs.add(s, zp, rows_of(["normal", next_kind()], 8), split_over=split)
    # 2. Other betas (softmax only) on a subset of scales.
    if op == "softmax":
        bscales = BETA_SCALES_16 if is16 else BETA_SCALES_8
        for i, beta in enumerate(BETAS_EXTRA):
            for j, s in enumerate(bscales):
                zp = zps[(i + j) % len(zps)]
                n1 = battery_lens[(i * 3 + j) % len(battery_lens)]
                cs.add(s, zp, [make_row("normal", n1, rng, lo, hi)], beta=beta, split_over=split)
                cs.add(s, zp, rows_of([next_kind()], 17), beta=beta, split_over=split)
    # 3. Every row length (two rows each).
    s, zp = (2.0 ** -12, 0) if is16 else (0.1, zps[3 % len(zps)])
    for n in ROW_LENS:
        cs.add(s, zp, rows_of(["uniform", "normal"], n), split_over=split)
    # 4. Structured rows (constant, one-hot, all-min, all-max, alternating,
    #    ties, ramp) at several lengths.
    if is16:
        special = [(2.0 ** -12, 0, SPECIAL_LENS_16), (0.01, 0, [1, 3, 17, 255])]
    else:
        special = [(0.1, zps[len(zps) // 2], SPECIAL_LENS)]
        if op == "softmax":
            special.append((1.0, zps[-1], [1, 3, 17, 255]))
    for s, zp, lens in special:
        for n in lens:
            cs.add(s, zp, rows_of(SPECIAL_KINDS, n), split_over=split)
    # 5. Wide rows: sums of exps around and past 512 (abort in the 8-bit
    #    fixed-point softmax), including the exact boundary with equal values.
    if op == "log_softmax":
        cs.add(0.01, zps[2], [make_row("narrow", 1000, rng, lo, hi)], split_over=split)
    elif not is16:
        mid = (lo + hi) // 2
        for n in (511, 512):
            cs.add(0.1, zps[0], [np.full(n, mid)], split_over=split)
        cs.add(0.001, zps[1], [make_row("uniform", 600, rng, lo, hi)], split_over=split)
        cs.add(0.01, zps[2], [make_row("narrow", 1000, rng, lo, hi)], split_over=split)
        cs.add(10.0, zps[0], [make_row("uniform", 1000, rng, lo, hi)], split_over=split)
        cs.add(0.5, zps[0], [make_row("one_hot_near", 700, rng, lo, hi)], split_over=split)
    else:
        cs.add(2.0 ** -12, 0, [make_row("narrow", 1200, rng, lo, hi)])
        cs.add(0.002, 0, [np.full(1000, 1234)])
    # 6. Degenerate betas (softmax only): zero, negative, tiny, huge.
    if op == "softmax":
        s = 2.0 ** -12 if is16 else 0.1
        for beta in (0.0, -1.0, 1e-9, 1e-7, 1e-6, 1e-4, 1000.0):
            cs.add(s, zps[0], [make_row("uniform", 8, rng, lo, hi)], beta=beta)
    # 7. int8 log_softmax: 4096 values equal to the row max overflow the
    #    fixed-point sum of exps.
    if op == "log_softmax" and dtype == "int8":
        cs.add(0.1, zps[0], [np.full(4096, (lo + hi) // 2)], note="tflite_overflow")
    # 8. Near-tie rows: exact result within a hair of a rounding boundary,
    #    where fixed-point and float implementations part ways.
    if not is16:
        tie_params = [(0.1, 1.0), (1.0 / 16, 1.0), (0.5, 1.0), (0.02, 1.0), (0.25, 1.0),
                      (1.0, 1.0), (0.004, 1.0), (3.3, 1.0)]
        if op == "softmax":
            tie_params += [(0.1, 2.0), (0.5, 0.5), (0.04, 10.0), (1.0, 0.1)]
        for i, (s, beta) in enumerate(tie_params):
            zp = zps[i % len(zps)]
            for n in (2, 3, 4, 6, 8, 16):
                cs.add(s, zp, near_tie_rows(op, dtype, s, beta, n, 3, rng), beta=beta, split_over=split)
    # 9. Parameters the kernels reject (recorded with status "rejected").
    if is16:
        cs.add(2.0 ** -12, 5, [make_row("uniform", 4, rng, lo, hi)])
    return cs


def gen_activation(op, dtype, rng):
    """Cases for logistic / tanh: all input values per parameter set."""
    cs = CaseSet(op, dtype)
    _, lo, hi = DTYPES[dtype]
    if dtype != "int16":
        allv = np.arange(lo, hi + 1)
        zps = ZPS[dtype]
        for i, s in enumerate(SCALES_8):
            cs.add(s, zps[i % len(zps)], [allv])
        for s in (0.1, 8.0):  # every zero point at a few scales
            for zp in zps:
                cs.add(s, zp, [allv])
        return cs
    # int16 (zero point must be 0).  At 2^-12 the optimized kernels take a
    # separate fixed-point path: every input value in the tflite_opt files,
    # a random subset of 2048 values elsewhere (see IMPL_FULL_SWEEP).
    specials = np.array([lo, lo + 1, -4097, -4096, -4095, -2, -1, 0, 1, 2,
                         4095, 4096, 4097, hi - 1, hi])
    sub = np.sort(rng.choice(np.arange(lo, hi + 1), 2048, replace=False))
    for s in SCALES_16_ACT:
        if s == FULL_SWEEP_SCALE_16:
            cs.add(s, 0, [np.unique(np.concatenate([sub, specials]))])
            cs.add(s, 0, [np.arange(lo, hi + 1)], write_only=IMPL_FULL_SWEEP)
        else:
            stride = 127 if s in (2.0 ** -11, 2.0 ** -13) else 509
            v = np.unique(np.concatenate([np.arange(lo, hi + 1, stride), specials,
                                          rng.integers(lo, hi + 1, 64)]))
            cs.add(s, 0, [v])
    # rejected: non-zero input zero point
    cs.add(2.0 ** -12, 7, [np.array([lo, -1, 0, 1, hi])])
    return cs


def gen_cases(op, dtype):
    idx = ALL_PAIRS.index((op, dtype))
    rng = np.random.default_rng([SEED, idx])
    if op in ("softmax", "log_softmax"):
        return gen_softmax_like(op, dtype, rng).cases
    return gen_activation(op, dtype, rng).cases


def impl_note(impl, case):
    """Marks cases whose outputs are known to be wrong (kernel bugs/limits)."""
    notes = []
    if case["note"]:
        notes.append(case["note"])
    op, dtype = case["op"], case["dtype"]
    s = f32(case["in_scale"])
    beta = f32(case["beta"])
    if impl == "tflm" and dtype == "int8":
        # TFLM's fixed-point int8 logistic is off by several quanta from
        # scale 4 and garbage from scale 8; its int8 tanh is garbage from 8.
        if op == "logistic" and s >= 4.0:
            notes.append("tflm_logistic_large_scale")
        if op == "tanh" and s >= 8.0:
            notes.append("tflm_tanh_large_scale")
    if dtype == "int16":
        # The int16 input rescaling overflows (every implementation):
        # logistic/tanh above an input scale of ~16/3 (seen between 5.33334
        # and 5.334), softmax when in_scale*beta*65535/10 exceeds 32768.
        if op in ("logistic", "tanh") and s >= 5.334:
            notes.append("int16_large_scale_overflow")
        if op == "softmax" and s * beta * 65535.0 / 10.0 > 32768.0:
            notes.append("int16_large_scale_overflow")
    if op == "softmax" and beta < 0:
        notes.append("negative_beta")
    return ",".join(notes) if notes else None


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def case_payload(case, cid):
    op, dtype = case["op"], case["dtype"]
    osc, ozp = OUT_QUANT[(op, dtype)]
    x = case["rows"].astype(DTYPES[dtype][0])
    model = build_model(op, dtype, x.shape, case["in_scale"], case["in_zp"], osc, ozp, case["beta"])
    return {"id": cid, "dtype": dtype, "shape": x.shape, "input": x.tobytes(), "model": model}


def record(impl, case, res):
    op, dtype = case["op"], case["dtype"]
    osc, ozp = OUT_QUANT[(op, dtype)]
    in_q = res.get("in_q", (f32(case["in_scale"]), case["in_zp"]))
    out_q = res.get("out_q", (f32(osc), ozp))
    rec = {
        "op": op, "dtype": dtype, "impl": impl,
        "in_scale": in_q[0], "in_zp": in_q[1],
        "out_scale": out_q[0], "out_zp": out_q[1],
    }
    if op == "softmax":
        rec["beta"] = f32(case["beta"])
    rec["row_len"] = case["row_len"]
    rec["status"] = res["status"]
    note = impl_note(impl, case)
    if note:
        rec["note"] = note
    if res.get("error"):
        rec["error"] = res["error"]
    rec["input"] = case["rows"].reshape(-1).tolist()
    rec["output"] = res["output"] if res["status"] == "ok" else None
    return rec


def dump_line(obj):
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def run_impl(impl, pairs, case_lists, tmpdir, out_dir, date, log, sweeps):
    w = Worker(impl, tmpdir)
    summary = {}
    try:
        w.ensure()
        for op, dtype in pairs:
            t0 = time.time()
            cases = case_lists[(op, dtype)]
            payloads = [case_payload(c, i) for i, c in enumerate(cases)]
            results = {}
            for k in range(0, len(payloads), 64):
                results.update(w.run(payloads[k:k + 64]))
            header = {"provenance": {
                "generator": GENERATOR,
                "tensorflow": w.versions.get("tensorflow"),
                "tflite_micro": w.versions.get("tflite_micro"),
                "impl": impl,
                "resolver": RESOLVERS[impl],
                "seed": SEED,
                "generated": date,
            }}
            path = os.path.join(out_dir, "%s_%s_%s.jsonl" % (op, dtype, impl))
            counts = {}
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(dump_line(header) + "\n")
                for i, c in enumerate(cases):
                    if c["write_only"] is not None:
                        sweeps[(op, dtype, c["in_scale"], impl)] = results[i].get("output")
                        if impl not in c["write_only"]:
                            continue
                    rec = record(impl, c, results[i])
                    counts[rec["status"]] = counts.get(rec["status"], 0) + 1
                    f.write(dump_line(rec) + "\n")
            summary[(op, dtype)] = counts
            log("%-30s %5d cases %s  %.1fs" % (os.path.basename(path), sum(counts.values()), counts,
                                               time.time() - t0))
    finally:
        w.close()
    return summary, w.restarts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--stderr-file", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=GOLDEN_DIR, help="output directory (default: tests/golden)")
    ap.add_argument("--only", action="append", default=[],
                    help="restrict to OP_DTYPE (e.g. softmax_int8) and/or IMPL; repeatable")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes run in parallel")
    ap.add_argument("--date", default=None, help="value of provenance.generated (default: today, UTC)")
    args = ap.parse_args()

    if args.worker:
        worker_main(args.worker, args.stderr_file)
        return

    only_pairs = {o for o in args.only if o not in IMPLS}
    only_impls = {o for o in args.only if o in IMPLS}
    date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    os.makedirs(args.out, exist_ok=True)

    pairs = [p for p in ALL_PAIRS if not only_pairs or "%s_%s" % p in only_pairs]
    t0 = time.time()
    case_lists = {p: gen_cases(*p) for p in pairs}
    lock = threading.Lock()
    sweeps = {}

    def log(msg):
        with lock:
            print(msg, flush=True)

    log("generated %d case lists in %.1fs" % (len(case_lists), time.time() - t0))
    with tempfile.TemporaryDirectory(prefix="qneon-golden-") as tmpdir:
        jobs = []
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            for impl in IMPLS:
                if only_impls and impl not in only_impls:
                    continue
                ipairs = [p for p in IMPL_PAIRS[impl] if p in case_lists]
                if ipairs:
                    jobs.append((impl, ex.submit(run_impl, impl, ipairs, case_lists, tmpdir, args.out, date, log, sweeps)))
            for impl, fut in jobs:
                _, restarts = fut.result()
                log("%s: worker restarted %d times after aborts" % (impl, restarts))
    # Compare the unwritten full sweeps between implementations.
    keys = sorted({k[:3] for k in sweeps})
    for key in keys:
        outs = {k[3]: v for k, v in sweeps.items() if k[:3] == key}
        names = sorted(outs)
        same = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
                if outs[a] is not None and outs[a] == outs[b]]
        diff = {(a, b): int(np.sum(np.asarray(outs[a]) != np.asarray(outs[b])))
                for i, a in enumerate(names) for b in names[i + 1:]
                if outs[a] is not None and outs[b] is not None and outs[a] != outs[b]}
        log("full sweep %s_%s scale %r: identical %s; differing values %s" % (key[0], key[1], key[2], same, diff))
    log("done in %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
