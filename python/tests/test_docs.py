"""The README's example and examples/python/label_image.py, run."""

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from conftest import MODELS, ROOT

README = ROOT / "python" / "README.md"
EXAMPLE = ROOT / "examples" / "python" / "label_image.py"
MODEL = MODELS / "nets" / "ds_cnn_kws.tflite"


def readme_example():
    text = README.read_text()
    (first, *_) = re.findall(r"```python\n(.*?)```", text, re.S)
    return first


def run_snippet(code, cwd):
    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_readme_example_runs(tmp_path):
    shutil.copy(MODEL, tmp_path / "model.tflite")
    out = run_snippet(readme_example(), tmp_path)
    assert out.strip().startswith("[[")


def test_readme_example_is_tflites_but_for_the_import(tmp_path):
    pytest.importorskip("ai_edge_litert.interpreter")
    shutil.copy(MODEL, tmp_path / "model.tflite")
    code = readme_example()
    theirs = code.replace("from qneon.interpreter import Interpreter",
                          "from ai_edge_litert.interpreter import Interpreter")
    assert theirs != code
    # The same program, the same printed outputs.
    assert run_snippet(code, tmp_path) == run_snippet(theirs, tmp_path)


def test_example_script_on_qneon():
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--model", str(MODEL), "--reps", "2",
         "--input", str(MODELS / "nets/refs/ds_cnn_kws/run0.input.0.npy")],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert re.search(r"^qneon: [0-9.]+ ms per invoke; top 3: class", result.stdout, re.M)


def test_example_script_on_both_runtimes_says_equal():
    pytest.importorskip("ai_edge_litert.interpreter")
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--model", str(MODEL), "--runtime", "both", "--reps", "2",
         "--input", str(MODELS / "nets/refs/ds_cnn_kws/run0.input.0.npy")],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "outputs equal: True" in result.stdout
    assert re.search(r"^litert: [0-9.]+ ms per invoke", result.stdout, re.M)
