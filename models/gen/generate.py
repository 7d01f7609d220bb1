#!/usr/bin/env python3
"""Builds the committed .tflite models and their reference data (see
models/README.md).

    python models/gen/generate.py            # rewrite the files under models/
    python models/gen/generate.py --check    # rebuild into a temporary directory and
                                             # compare byte for byte with models/
"""

import argparse
import filecmp
import os
import sys
import tempfile
import time

# Python's string hashing is randomized per process unless PYTHONHASHSEED is
# set; nothing here is known to depend on it, but a fixed value removes the
# question. Re-executes itself once with it set.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Progress lines appear as they happen when the output goes to a file.
sys.stdout.reconfigure(line_buffering=True)

import common  # noqa: E402,F401  (sets the TensorFlow environment first)
import mobilebert  # noqa: E402
import nets  # noqa: E402
import ops  # noqa: E402
import published  # noqa: E402

MODELS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = ("mobilebert", "ops", "published", "nets")


def generated_files(root, parts):
    """Relative paths of every file the given parts write under `root`."""
    found = []
    for part in parts:
        if part == "mobilebert":
            for name in sorted(os.listdir(root)):
                if name.startswith("mobilebert_squad_") and name.endswith(".tflite"):
                    found.append(name)
            sub = "mobilebert_squad"
        elif part == "published":
            sub = os.path.join("tflite_micro", "refs")
        elif part == "nets":
            sub = "nets"
        else:
            sub = "ops"
        base = os.path.join(root, sub)
        if os.path.isdir(base):
            for dirpath, _, names in os.walk(base):
                for name in names:
                    found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(found)


def generate(out_dir, parts, layer_counts):
    t0 = time.time()
    if "mobilebert" in parts:
        mobilebert.generate(out_dir, layer_counts)
    if "ops" in parts:
        ops.generate(out_dir)
    if "published" in parts:
        published.generate(out_dir)
    if "nets" in parts:
        nets.generate(out_dir)
    print(f"generated in {time.time() - t0:.1f} s")


def check(parts, layer_counts):
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp, parts, layer_counts)
        fresh = generated_files(tmp, parts)
        committed = generated_files(MODELS_DIR, parts)
        problems = []
        for rel in sorted(set(fresh) | set(committed)):
            if rel not in committed:
                problems.append(f"missing from models/: {rel}")
            elif rel not in fresh:
                problems.append(f"not made by the generator: {rel}")
            elif not filecmp.cmp(os.path.join(tmp, rel), os.path.join(MODELS_DIR, rel), shallow=False):
                problems.append(f"differs: {rel}")
        for p in problems:
            print(p)
        print(f"check: {len(fresh)} files generated, {len(committed)} committed, {len(problems)} differences")
        return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="rebuild into a temporary directory and compare byte for byte with models/")
    parser.add_argument("--out", default=MODELS_DIR, help="output directory (default: models/)")
    parser.add_argument("--only", choices=PARTS, action="append",
                        help="build only this part (repeatable; default: all)")
    parser.add_argument("--layers", type=int, action="append",
                        help="MobileBert layer counts (default: 24 and 1); for experiments only")
    args = parser.parse_args()
    parts = tuple(args.only or PARTS)
    layer_counts = tuple(args.layers or (24, 1))
    if args.check:
        return check(parts, layer_counts)
    generate(args.out, parts, layer_counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
