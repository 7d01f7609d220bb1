#!/usr/bin/env python3
"""Sanity checks for the golden files written by generate.py.

    python tests/golden/gen/check.py [DIR]

* format: header line, required fields, value ranges, float32-exact scales;
* numbers: dequantized outputs against float softmax / log-softmax /
  logistic / tanh (max error per file), monotonicity of logistic / tanh;
* cross-implementation agreement for the same (op, dtype);
* emulations that tell which algorithm a kernel uses: the float
  exp-lookup-table softmax (TFLite optimized 8-bit softmax) and the float
  formula for 8-bit logistic / tanh.

Exits non-zero on a format error; numeric findings are reported.
"""

from __future__ import annotations

import glob
import json
import os
import sys

import numpy as np

GOLDEN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}
OPS = ("softmax", "log_softmax", "logistic", "tanh")
IMPLS = ("tflm", "tflite_ref", "tflite_opt")
CASE_KEYS = {"op", "dtype", "impl", "in_scale", "in_zp", "out_scale", "out_zp", "row_len",
             "status", "input", "output"}
OPTIONAL_KEYS = {"beta", "note", "error"}
PROVENANCE_KEYS = {"generator", "tensorflow", "tflite_micro", "impl", "resolver", "seed", "generated"}

errors = []


def fail(msg):
    errors.append(msg)


def load(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    head = json.loads(lines[0])
    cases = [json.loads(ln) for ln in lines[1:]]
    return head, cases


def is_f32(v):
    return isinstance(v, float) and float(np.float32(v)) == v


def check_format(path, head, cases):
    name = os.path.basename(path)[: -len(".jsonl")]
    prov = head.get("provenance")
    if not isinstance(prov, dict) or set(prov) != PROVENANCE_KEYS:
        fail("%s: bad provenance header %r" % (name, head))
        return
    for i, c in enumerate(cases):
        where = "%s line %d" % (name, i + 2)
        keys = set(c)
        if not CASE_KEYS <= keys or keys - CASE_KEYS - OPTIONAL_KEYS:
            fail("%s: keys %s" % (where, sorted(keys)))
            continue
        if "%s_%s_%s" % (c["op"], c["dtype"], c["impl"]) != name or c["impl"] != prov["impl"]:
            fail("%s: op/dtype/impl do not match the file name" % where)
        if c["op"] == "softmax" and "beta" not in c:
            fail("%s: softmax without beta" % where)
        for k in ("in_scale", "out_scale"):
            if not is_f32(c[k]) or not c[k] > 0:
                fail("%s: %s=%r is not a positive float32 value" % (where, k, c[k]))
        if "beta" in c and not is_f32(c["beta"]):
            fail("%s: beta not float32" % where)
        lo, hi = RANGES[c["dtype"]]
        x = c["input"]
        n = c["row_len"]
        if n < 1 or len(x) == 0 or len(x) % n:
            fail("%s: input length %d vs row_len %d" % (where, len(x), n))
        if min(x) < lo or max(x) > hi:
            fail("%s: input out of range" % where)
        if c["status"] == "ok":
            y = c["output"]
            if not isinstance(y, list) or len(y) != len(x):
                fail("%s: output length" % where)
            elif min(y) < lo or max(y) > hi:
                fail("%s: output out of range" % where)
        elif c["status"] in ("abort", "rejected"):
            if c["output"] is not None:
                fail("%s: %s with output" % (where, c["status"]))
        else:
            fail("%s: unknown status %r" % (where, c["status"]))


def reference(c):
    """Exact float64 result of the op on the dequantized input, as a 2-D array."""
    x = (np.asarray(c["input"], np.float64) - c["in_zp"]) * c["in_scale"]
    x = x.reshape(-1, c["row_len"])
    if c["op"] == "softmax":
        z = c["beta"] * x
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)
    if c["op"] == "log_softmax":
        z = x - x.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    if c["op"] == "logistic":
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-x))
    return np.tanh(x)


def dequant_out(c):
    y = (np.asarray(c["output"], np.float64) - c["out_zp"]) * c["out_scale"]
    return y.reshape(-1, c["row_len"])


def numeric_report(name, cases):
    worst = (0.0, None)
    nonmono = 0
    for c in cases:
        if c["status"] != "ok" or c.get("note"):
            continue
        r = reference(c)
        y = dequant_out(c)
        lo, hi = RANGES[c["dtype"]]
        # clip the float reference to the representable output range
        r = np.clip(r, (lo - c["out_zp"]) * c["out_scale"], (hi - c["out_zp"]) * c["out_scale"])
        err = float(np.max(np.abs(r - y)))
        if err > worst[0]:
            worst = (err, c)
        if c["op"] in ("logistic", "tanh"):
            order = np.argsort(c["input"], kind="stable")
            out = np.asarray(c["output"])[order]
            if np.any(np.diff(out) < 0):
                nonmono += 1
    e, c = worst
    where = ""
    if c is not None:
        where = " (in_scale=%g in_zp=%d%s row_len=%d)" % (
            c["in_scale"], c["in_zp"], " beta=%g" % c["beta"] if "beta" in c else "", c["row_len"])
    extra = "; NON-MONOTONIC cases: %d" % nonmono if nonmono else ""
    return "max |dequant(out) - exact| = %.5f%s%s" % (e, where, extra)


def emulate_softmax_float_lut(c):
    """TFLite optimized 8-bit softmax: float32 table exp(-scale*beta*d), float
    sum, reciprocal, round-half-away, add zero point, clamp."""
    lo, hi = RANGES[c["dtype"]]
    x = np.asarray(c["input"], np.int64).reshape(-1, c["row_len"])
    k = np.float32(-np.float32(c["in_scale"]) * np.float32(c["beta"]))
    arg = (k * np.arange(256, dtype=np.float32)).astype(np.float32)
    # expf via float64 (correctly rounded, as glibc's expf nearly always is)
    table = np.exp(arg.astype(np.float64)).astype(np.float32)
    out = []
    for row in x:
        t = table[row.max() - row]
        s = np.add.accumulate(t, dtype=np.float32)[-1]
        inv = np.float32(1.0) / np.float32(s * np.float32(c["out_scale"]))
        p = (t * inv).astype(np.float32)
        q = np.sign(p) * np.floor(np.abs(p) + 0.5)
        out.append(np.clip(q + c["out_zp"], lo, hi))
    return np.concatenate(out).astype(np.int64)


def emulate_log_softmax_float_lut(c):
    """Float-table log-softmax: the exp table of the 8-bit softmax (beta 1),
    float sum, logf, then x*in_scale/out_scale - (in_scale*max + log(sum))/out_scale,
    rounded half-to-even, plus zero point, clamped."""
    lo, hi = RANGES[c["dtype"]]
    x = np.asarray(c["input"], np.int64).reshape(-1, c["row_len"])
    s_in = np.float32(c["in_scale"])
    osc = np.float32(c["out_scale"])
    arg = (np.float32(-s_in) * np.arange(256, dtype=np.float32)).astype(np.float32)
    table = np.exp(arg.astype(np.float64)).astype(np.float32)
    ratio = np.float32(s_in / osc)
    out = []
    for row in x:
        m = row.max()
        total = np.add.accumulate(table[m - row], dtype=np.float32)[-1]
        lse = np.float32(np.log(np.float64(total)))
        pre = np.float32(np.float32(np.float32(s_in * np.float32(m)) + lse) / osc)
        lp = (np.float32(ratio) * row.astype(np.float32)).astype(np.float32) - pre
        out.append(np.clip(np.rint(lp.astype(np.float32)) + c["out_zp"], lo, hi))
    return np.concatenate(out).astype(np.int64)


def emulate_act_float(c):
    """8-bit logistic/tanh evaluated in float32 per value (TFLite's LUT build)."""
    lo, hi = RANGES[c["dtype"]]
    v = np.asarray(c["input"], np.int64)
    d = np.float32(c["in_scale"]) * (v - c["in_zp"]).astype(np.float32)
    with np.errstate(over="ignore"):
        if c["op"] == "logistic":
            e = np.exp(-d.astype(np.float64)).astype(np.float32)
            t = (np.float32(1) / (np.float32(1) + e)).astype(np.float32)
        else:
            t = np.tanh(d.astype(np.float64)).astype(np.float32)
    r = t * np.float32(1.0 / c["out_scale"])
    q = np.sign(r) * np.floor(np.abs(r) + 0.5)
    return np.clip(q + c["out_zp"], lo, hi).astype(np.int64)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else GOLDEN_DIR
    names = {"%s_%s_%s.jsonl" % (op, dt, impl) for op in OPS for dt in RANGES for impl in IMPLS}
    paths = sorted(p for p in glob.glob(os.path.join(d, "*.jsonl")) if os.path.basename(p) in names)
    data = {}
    total = 0
    for p in paths:
        head, cases = load(p)
        check_format(p, head, cases)
        name = os.path.basename(p)[: -len(".jsonl")]
        data[name] = (head, cases)
        size = os.path.getsize(p)
        total += size
        st = {}
        for c in cases:
            st[c["status"]] = st.get(c["status"], 0) + 1
        print("%-34s %7.1f KiB %4d cases %s" % (name, size / 1024, len(cases), st))
    print("total %.2f MiB in %d files" % (total / 2 ** 20, len(paths)))

    print("\n== numeric sanity (cases without a note) ==")
    for name, (_, cases) in data.items():
        print("%-34s %s" % (name, numeric_report(name, cases)))

    print("\n== cross-implementation agreement (same case list) ==")
    for op in OPS:
        for dt in RANGES:
            have = [i for i in IMPLS if "%s_%s_%s" % (op, dt, i) in data]
            for a in range(len(have)):
                for b in range(a + 1, len(have)):
                    ca = data["%s_%s_%s" % (op, dt, have[a])][1]
                    cb = data["%s_%s_%s" % (op, dt, have[b])][1]
                    ka = {(json.dumps(c["input"]), c["in_scale"], c["in_zp"], c.get("beta")): c for c in ca}
                    same = diff_cases = diff_vals = status_diff = 0
                    examples = []
                    for c in cb:
                        o = ka.get((json.dumps(c["input"]), c["in_scale"], c["in_zp"], c.get("beta")))
                        if o is None:
                            continue
                        if o["status"] != c["status"]:
                            status_diff += 1
                        elif c["status"] == "ok":
                            nd = int(np.sum(np.asarray(o["output"]) != np.asarray(c["output"])))
                            if nd:
                                diff_cases += 1
                                diff_vals += nd
                                if len(examples) < 4:
                                    examples.append("s=%g zp=%d%s n=%d" % (
                                        c["in_scale"], c["in_zp"],
                                        " b=%g" % c["beta"] if "beta" in c else "", c["row_len"]))
                            else:
                                same += 1
                    print("%-12s %-5s %-10s vs %-10s identical %4d, differ %4d cases (%d values), "
                          "status differs %d %s" % (op, dt, have[a], have[b], same, diff_cases, diff_vals,
                                                    status_diff, "; e.g. " + ", ".join(examples) if examples else ""))

    print("\n== emulation: float exp-LUT softmax (8-bit) ==")
    for name, (_, cases) in data.items():
        if not name.startswith("softmax_") or "int16" in name:
            continue
        match = mism = 0
        for c in cases:
            if c["status"] != "ok":
                continue
            if np.array_equal(emulate_softmax_float_lut(c), np.asarray(c["output"])):
                match += 1
            else:
                mism += 1
        print("%-34s float-LUT emulation matches %d / %d ok cases" % (name, match, match + mism))

    print("\n== emulation: float exp-LUT log-softmax (8-bit) ==")
    for name, (_, cases) in data.items():
        if not name.startswith("log_softmax_"):
            continue
        match = mism = vals = 0
        for c in cases:
            if c["status"] != "ok":
                continue
            nd = int(np.sum(emulate_log_softmax_float_lut(c) != np.asarray(c["output"])))
            match += nd == 0
            mism += nd != 0
            vals += nd
        print("%-34s float-LUT emulation matches %d / %d ok cases (%d values differ)" % (
            name, match, match + mism, vals))

    print("\n== emulation: float32 formula for 8-bit logistic / tanh ==")
    for name, (_, cases) in data.items():
        if not (name.startswith("logistic_") or name.startswith("tanh_")) or "int16" in name:
            continue
        match = mism = vals = 0
        bad = []
        for c in cases:
            if c["status"] != "ok":
                continue
            nd = int(np.sum(emulate_act_float(c) != np.asarray(c["output"])))
            if nd:
                mism += 1
                vals += nd
                bad.append("%g/%d:%d" % (c["in_scale"], c["in_zp"], nd))
            else:
                match += 1
        print("%-34s matches %d / %d cases; differing values %d %s" % (
            name, match, match + mism, vals, ("[scale/zp:count " + " ".join(bad[:12]) + "]") if bad else ""))

    if errors:
        print("\nFORMAT ERRORS:")
        for e in errors[:50]:
            print("  " + e)
        sys.exit(1)
    print("\nformat OK")


if __name__ == "__main__":
    main()
