"""Shared helpers of qneon's Python tests: where the committed models and
their references are, and the runtimes to compare.

The models and their LiteRT outputs are the ones the Rust tests read
(``models/*/manifest.json``); the wheel holds none of them.
"""

import json
import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"

# Set by `cargo xtask test` for the run under qemu, where each invoke is
# ~20x slower: the 24-layer MobileBert (and the second backend) are left to
# the host run.
UNDER_EMULATION = os.environ.get("QNEON_PYTEST_EMULATED") == "1"


def manifest(relative):
    with open(MODELS / relative) as f:
        return json.load(f)


def npy(relative):
    return np.load(MODELS / relative)


def model_path(relative):
    return str(MODELS / relative)


def litert():
    """ai_edge_litert's Interpreter module, or a skip where it is not installed."""
    return pytest.importorskip("ai_edge_litert.interpreter")
