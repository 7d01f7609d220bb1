#!/usr/bin/env python3
"""Regenerates tests/golden/gemmlowp_primitives.jsonl and gemmlowp_q31.jsonl.

Compiles vectors.cc (next to this file) against the gemmlowp headers that the
tensorflow pip wheel ships, runs it, and writes the two golden files with a
provenance header line. See README.md for what the vectors contain.

    python3 tests/golden/gen/gemmlowp/generate.py [--python PY] [--cxx CXX]

--python is an interpreter that can `import tensorflow` (default: the venv at
tests/golden/gen/.venv); this script itself needs only the standard library.

The vectors come from a build with the plain flags below. A second build
(-O0 -fwrapv, gemmlowp's constant checks and asserts on) must produce the very
same bytes, or nothing is written: results may not depend on the optimiser
or on signed-overflow undefined behaviour.
"""

import argparse
import collections
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
GOLDEN = REPO / "tests" / "golden"
SOURCE = HERE / "vectors.cc"

OUTPUTS = ("gemmlowp_primitives.jsonl", "gemmlowp_q31.jsonl")

# Scalar build: no -march, so detect_platform.h enables no SIMD path (and the
# raw type is std::int32_t throughout, which only the generic templates take).
REFERENCE_FLAGS = ["-O2", "-std=c++17"]
CROSSCHECK_FLAGS = ["-O0", "-std=c++17", "-fwrapv", "-DGEMMLOWP_ENABLE_FIXEDPOINT_CONSTANTS_CHECKS"]

# The gemmlowp commit TensorFlow pins (third_party/gemmlowp/workspace.bzl,
# GEMMLOWP_COMMIT). The wheel does not record it, so it is stated per version.
GEMMLOWP_COMMIT_BY_TF_VERSION = {
    "2.21.0": "fda83bdc38b118cc6b56753bd540caa49e570745",
}

TF_QUERY = r"""
import json
import importlib.metadata as md
import tensorflow as tf
dist, version = None, None
for name in ("tensorflow-cpu", "tensorflow", "tf-nightly-cpu", "tf-nightly"):
    try:
        version = md.version(name)
        dist = name
        break
    except md.PackageNotFoundError:
        pass
print(json.dumps({
    "include": tf.sysconfig.get_include(),
    "version": tf.__version__,
    "git_version": tf.version.GIT_VERSION,
    "distribution": dist,
    "distribution_version": version,
}))
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=str(REPO / "tests/golden/gen/.venv/bin/python"),
                    help="interpreter with tensorflow installed")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"), help="C++ compiler (default: $CXX or g++)")
    ap.add_argument("--out-dir", default=str(GOLDEN), help="where to write the .jsonl files")
    args = ap.parse_args()

    tf = json.loads(run([args.python, "-c", TF_QUERY], env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}).strip()
                    .splitlines()[-1])
    gemmlowp_dir = Path(tf["include"]) / "external" / "gemmlowp"
    header = gemmlowp_dir / "fixedpoint" / "fixedpoint.h"
    if not header.is_file():
        sys.exit(f"gemmlowp header not found in the tensorflow wheel: {header}")

    commit = GEMMLOWP_COMMIT_BY_TF_VERSION.get(tf["distribution_version"])
    if commit is None:
        print(f"warning: no known gemmlowp commit for tensorflow {tf['distribution_version']}; "
              "look it up in tensorflow's third_party/gemmlowp/workspace.bzl and add it", file=sys.stderr)

    cxx_version = run([args.cxx, "--version"]).splitlines()[0]
    cxx_target = run([args.cxx, "-dumpmachine"]).strip()

    with tempfile.TemporaryDirectory(prefix="qneon-gemmlowp-") as tmp:
        tmp = Path(tmp)
        bodies = {}
        info = None
        for name, flags in (("reference", REFERENCE_FLAGS), ("crosscheck", CROSSCHECK_FLAGS)):
            exe = tmp / f"vectors_{name}"
            run([args.cxx, *flags, "-I", str(gemmlowp_dir), str(SOURCE), "-o", str(exe)])
            if name == "reference":
                info = json.loads(run([str(exe), "--info"]))
            outs = [tmp / f"{name}_{o}" for o in OUTPUTS]
            run([str(exe), *map(str, outs)])
            bodies[name] = [p.read_bytes() for p in outs]
        if bodies["reference"] != bodies["crosscheck"]:
            for o, a, b in zip(OUTPUTS, bodies["reference"], bodies["crosscheck"]):
                if a != b:
                    keep = Path(tempfile.mkdtemp(prefix="qneon-gemmlowp-diff-"))
                    (keep / f"reference_{o}").write_bytes(a)
                    (keep / f"crosscheck_{o}").write_bytes(b)
                    print(f"{o}: reference and cross-check builds differ; both kept in {keep}", file=sys.stderr)
            sys.exit("refusing to write vectors whose values depend on the build")

    if info["gemmlowp_simd_macros"]:
        print(f"note: detect_platform.h enabled {info['gemmlowp_simd_macros']} "
              "(unused: the raw type is std::int32_t)", file=sys.stderr)

    out_dir = Path(args.out_dir)
    for name, body in zip(OUTPUTS, bodies["reference"]):
        records = collections.Counter()
        for line in body.decode().splitlines():
            records[json.loads(line)["fn"]] += 1
        provenance = {
            "reference": "gemmlowp fixedpoint/fixedpoint.h (scalar std::int32_t path), compiled and run",
            "gemmlowp_commit": commit or "unknown",
            "gemmlowp_commit_source": "tensorflow third_party/gemmlowp/workspace.bzl (GEMMLOWP_COMMIT)",
            "gemmlowp_header": "tensorflow/include/external/gemmlowp/fixedpoint/fixedpoint.h",
            "gemmlowp_header_sha256": sha256(header),
            "detect_platform_header_sha256": sha256(gemmlowp_dir / "internal" / "detect_platform.h"),
            "tensorflow_distribution": tf["distribution"],
            "tensorflow_version": tf["distribution_version"],
            "tensorflow_git_version": tf["git_version"],
            "generator": "tests/golden/gen/gemmlowp/vectors.cc",
            "generator_sha256": sha256(SOURCE),
            "driver": "tests/golden/gen/gemmlowp/generate.py",
            "compiler": cxx_version,
            "compiler_target": cxx_target,
            "host": platform.machine(),
            "cxxflags": " ".join(REFERENCE_FLAGS),
            "crosscheck_cxxflags": " ".join(CROSSCHECK_FLAGS),
            "crosscheck": "identical",
            "gemmlowp_simd_macros": info["gemmlowp_simd_macros"],
            "asserts": info["asserts"],
            "seed": info["seed"],
            "exp_integer_bits": info["exp_integer_bits"],
            "activation_integer_bits": info["activation_integer_bits"],
            "skipped_integer_bits": [],
            "records": dict(records),
        }
        text = json.dumps({"provenance": provenance}, separators=(",", ":")) + "\n" + body.decode()
        path = out_dir / name
        tmp_path = path.with_suffix(".jsonl.tmp")
        tmp_path.write_text(text)
        shutil.move(tmp_path, path)
        print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: "
              f"{len(text)} bytes, {dict(records)}")


if __name__ == "__main__":
    main()
