#!/usr/bin/env python3
"""Compares the committed reference outputs with each other (NumPy only, no
TensorFlow needed):

    python models/gen/compare.py [models_dir]

For MobileBert: every runtime against litert_ref (max |difference| in output
units and in quantization steps of the output), and the quantized models
against the float model (cosine of the logits, argmax agreement). For the
single-op models: cases where tf219_ref differs from litert_ref.
"""

import json
import os
import sys

import numpy as np


def load(root, rel):
    return np.load(os.path.join(root, rel), allow_pickle=False)


def output_scale(entry, name):
    for t in entry["tensors"]["outputs"]:
        if t["name"] == name and "scale" in t:
            return t["scale"][0]
    return None


def step_of(entry, root, case, name):
    """The logits' quantization step: the DEQUANTIZE input's scale is not a
    signature detail, so it is the smallest nonzero gap between output values."""
    a = np.unique(load(root, entry["outputs"][case]["litert_ref"][name]).astype(np.float64))
    gaps = np.diff(a)
    return float(gaps[gaps > 0].min()) if gaps.size else float("nan")


def mobilebert(root):
    path = os.path.join(root, "mobilebert_squad", "manifest.json")
    if not os.path.exists(path):
        return
    manifest = json.load(open(path))
    for tag, entry in manifest["models"].items():
        print(f"== MobileBert {tag} ({entry['model']})")
        for case, refs in entry["outputs"].items():
            for name in ("start_logits", "end_logits"):
                base = load(root, refs["litert_ref"][name]).astype(np.float64)
                step = step_of(entry, root, case, name)
                mask = load(root, manifest["inputs"][case]["attention_mask"]).astype(bool)
                parts = []
                for ref, files in refs.items():
                    if ref == "litert_ref":
                        continue
                    other = load(root, files[name]).astype(np.float64)
                    d = np.abs(other - base)
                    if ref == "float_keras":
                        for label, q in (("litert_ref", base), ("tf219_ref", load(root, refs["tf219_ref"][name]))):
                            q = np.asarray(q, np.float64)
                            f, qv = other[mask], q[mask]
                            cos = float(f @ qv / (np.linalg.norm(f) * np.linalg.norm(qv)))
                            # Quantized logits tie often: the float argmax
                            # agrees when it is one of the quantized maxima.
                            agree = qv[f.argmax()] == qv.max()
                            ties = int((qv == qv.max()).sum())
                            parts.append(f"float vs {label}: cos {cos:.4f}, argmax {'agrees' if agree else 'DIFFERS'}"
                                         f" (float {f.argmax()}, quantized max at {ties} position(s))")
                    else:
                        parts.append(f"{ref}: max {d.max():.6g} ({d.max() / step:.1f} steps), {int((d > 0).sum())} differ")
                print(f"  {case} {name} (step {step:.6g}): " + "; ".join(parts))


def ops(root):
    path = os.path.join(root, "ops", "manifest.json")
    if not os.path.exists(path):
        return
    manifest = json.load(open(path))
    print("== single-op models: tf219_ref vs litert_ref")
    for case in manifest["cases"]:
        diffs = []
        for run in case["runs"]:
            for name, files in run["outputs"].items():
                a = load(root, files["litert_ref"]).astype(np.float64)
                b = load(root, files["tf219_ref"]).astype(np.float64)
                d = np.abs(a - b)
                if d.max() > 0:
                    diffs.append(f"{run['name']}.{name}: max {d.max():.6g}, {int((d > 0).sum())}/{d.size} differ")
        print(f"  {case['name']}: " + ("; ".join(diffs) if diffs else "identical"))


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    mobilebert(root)
    ops(root)
