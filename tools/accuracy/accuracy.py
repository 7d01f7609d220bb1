#!/usr/bin/env python3
"""Accuracy of qneon on the committed MobileBert against the float model,
and its bytes against TFLite's references (NumPy only):

    cargo build --release -p qneon-cli
    python3 tools/accuracy/accuracy.py [--model 24l|1l] [--qneon target/release/qneon]

For each input set of models/mobilebert_squad/manifest.json and each qneon
configuration (softmax method x rounding), runs `qneon run --output-dir`,
then prints, over the valid (unmasked) positions: the cosine of qneon's
logits with the float model's, whether the argmax position agrees, and the
number of output values that differ from the bit-exact target of that
configuration (litert_ref for fixed/single, tf219_ref for fixed/double).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "models")

# (label, qneon options, the reference it must equal byte for byte or None)
CONFIGS = [
    ("fixed, single", ["--softmax", "fixed", "--rounding", "single"], "litert_ref"),
    ("fixed, double", ["--softmax", "fixed", "--rounding", "double"], "tf219_ref"),
    ("lut, single", ["--softmax", "lut", "--rounding", "single"], None),
    ("f32, single", ["--softmax", "f32", "--rounding", "single"], None),
]


def cosine(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="24l", choices=["24l", "1l"])
    parser.add_argument("--qneon", default=os.path.join(ROOT, "target", "release", "qneon"))
    args = parser.parse_args()
    manifest = json.load(open(os.path.join(MODELS, "mobilebert_squad", "manifest.json")))
    entry = manifest["models"][args.model]
    model = os.path.join(MODELS, entry["model"])
    outputs = entry["tensors"]["outputs"]
    print(f"| configuration | input set | cosine start / end | argmax start / end agrees | values differing from its TFLite target |")
    print("| --- | --- | --- | --- | --- |")
    for label, options, target in CONFIGS:
        for case, inputs in manifest["inputs"].items():
            mask = np.load(os.path.join(MODELS, inputs["attention_mask"])).astype(bool).ravel()
            with tempfile.TemporaryDirectory() as out:
                command = [args.qneon, "run", model, "--output-dir", out] + options
                for name, rel in inputs.items():
                    command += ["--input", f"{name}={os.path.join(MODELS, rel)}"]
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
                meta = json.load(open(os.path.join(out, "outputs.json")))
                cos, agree, differ = [], [], 0
                for name in ("start_logits", "end_logits"):
                    tensor = next(o["tensor"] for o in outputs if o["name"] == name)
                    index = next(m["index"] for m in meta if m["name"] == tensor)
                    ours = np.load(os.path.join(out, f"{index}.npy")).ravel()
                    refs = entry["outputs"][case]
                    flt = np.load(os.path.join(MODELS, refs["float_keras"][name])).ravel()
                    a, f = ours[mask].astype(np.float64), flt[mask].astype(np.float64)
                    cos.append(f"{cosine(a, f):.4f}")
                    agree.append("yes" if np.argmax(a) == np.argmax(f) else "no")
                    if target:
                        ref = np.load(os.path.join(MODELS, refs[target][name])).ravel()
                        differ += int((ours != ref).sum())
                exact = f"{differ} (vs {target})" if target else "-"
                print(f"| {label} | {case} | {' / '.join(cos)} | {' / '.join(agree)} | {exact} |")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
