"""The README's example and examples/python/label_image.py, run (in this
process: under qemu a child Python would need the emulator again)."""

import contextlib
import io
import re
import runpy
import shutil
import sys

import pytest

from conftest import MODELS, ROOT

README = ROOT / "python" / "README.md"
# The repository's README shows the same five lines in its Python section.
READMES = [README, ROOT / "README.md"]
EXAMPLE = ROOT / "examples" / "python" / "label_image.py"
MODEL = MODELS / "nets" / "ds_cnn_kws.tflite"
INPUT = MODELS / "nets" / "refs" / "ds_cnn_kws" / "run0.input.0.npy"


def readme_example(readme=README):
    text = readme.read_text()
    (first, *_) = re.findall(r"```python\n(.*?)```", text, re.S)
    return first


def run_snippet(code, cwd, monkeypatch):
    monkeypatch.chdir(cwd)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "__main__"})
    return out.getvalue()


def run_example(args, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE)] + args)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(EXAMPLE), run_name="__main__")
    return exit_info.value.code, out.getvalue()


@pytest.mark.parametrize("readme", READMES, ids=["python-README", "README"])
def test_readme_example_runs(readme, tmp_path, monkeypatch):
    shutil.copy(MODEL, tmp_path / "model.tflite")
    out = run_snippet(readme_example(readme), tmp_path, monkeypatch)
    assert out.strip().startswith("[[")


@pytest.mark.parametrize("readme", READMES, ids=["python-README", "README"])
def test_readme_example_is_tflites_but_for_the_import(readme, tmp_path, monkeypatch):
    pytest.importorskip("ai_edge_litert.interpreter")
    shutil.copy(MODEL, tmp_path / "model.tflite")
    code = readme_example(readme)
    theirs = code.replace("from qneon.interpreter import Interpreter",
                          "from ai_edge_litert.interpreter import Interpreter")
    assert theirs != code
    # The same program, the same printed outputs.
    assert run_snippet(code, tmp_path, monkeypatch) == run_snippet(theirs, tmp_path, monkeypatch)


def test_example_script_on_qneon(monkeypatch):
    code, out = run_example(["--model", str(MODEL), "--reps", "2", "--input", str(INPUT)],
                            monkeypatch)
    assert code == 0
    assert re.search(r"^qneon: [0-9.]+ ms per invoke; top 3: class", out, re.M)


def test_example_script_on_both_runtimes_says_equal(monkeypatch):
    pytest.importorskip("ai_edge_litert.interpreter")
    code, out = run_example(["--model", str(MODEL), "--runtime", "both", "--reps", "2",
                             "--input", str(INPUT)], monkeypatch)
    assert code == 0, out
    assert "outputs equal: True" in out
    assert re.search(r"^litert: [0-9.]+ ms per invoke", out, re.M)
