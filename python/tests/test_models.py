"""Every committed model through the Python API: outputs equal, byte for
byte, the committed LiteRT outputs of the kernel set each resolver type
stands for (the manifests and settings of the Rust tests in runtime/tests/).

Resolver type -> reference:
  BUILTIN_REF -> litert_ref (LiteRT 2.3's reference kernels);
  BUILTIN     -> litert_aarch64_builtin (LiteRT's aarch64 builtin kernels);
  AUTO        -> litert_xnnpack (the XNNPACK delegate), its aarch64 build's
                 outputs where they differ from the x86 build's.
"""

import numpy as np
import pytest

from qneon.interpreter import Interpreter, OpResolverType
from conftest import UNDER_EMULATION, manifest, model_path, npy

OPS = manifest("ops/manifest.json")
AARCH64_BUILTIN = manifest("litert_aarch64_builtin/manifest.json")
AARCH64_XNNPACK = manifest("litert_aarch64_xnnpack/manifest.json")
NETS = manifest("nets/refs/manifest.json")
PUBLISHED = manifest("tflite_micro/refs/manifest.json")
MOBILEBERT = manifest("mobilebert_squad/manifest.json")

# Stateless single-op cases (the LSTM ones are sequences).
CASES = [c for c in OPS["cases"] if "sequence" not in c]

# Ops the XNNPACK path may not build: a model with one may be refused at
# load, naming the op and XNNPACK (as `xnnpack_ops.rs` checks).
XNNPACK_NOT_BUILT = ("AVERAGE_POOL_2D", "MAX_POOL_2D")


def run_by_tensor_names(interpreter, case, run):
    """Sets the run's inputs (by signature name), invokes, and returns each
    output by signature name."""
    tensors = case["tensors"]
    index = {d["name"]: d["index"] for d in interpreter.get_input_details()}
    index.update({d["name"]: d["index"] for d in interpreter.get_output_details()})
    shapes = {d["name"]: tuple(d["shape"]) for d in interpreter.get_input_details()}
    interpreter.allocate_tensors()
    for entry in tensors["inputs"]:
        # A scalar input's file holds one element as shape [1].
        value = npy(run["inputs"][entry["name"]]).reshape(shapes[entry["tensor"]])
        interpreter.set_tensor(index[entry["tensor"]], value)
    interpreter.invoke()
    return {e["name"]: interpreter.get_tensor(index[e["tensor"]]) for e in tensors["outputs"]}


def assert_bytes_equal(ours, expected, what):
    assert ours.dtype == expected.dtype, what
    assert ours.shape == expected.shape, what
    differ = np.flatnonzero(ours.reshape(-1) != expected.reshape(-1))
    assert differ.size == 0, "{}: {} of {} values differ, first at {}: ours {} theirs {}".format(
        what, differ.size, ours.size, differ[:1], ours.reshape(-1)[differ[:1]],
        expected.reshape(-1)[differ[:1]])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_single_op_reference_kernels(case):
    interpreter = Interpreter(model_path=model_path(case["model"]),
                              experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    for run in case["runs"]:
        outputs = run_by_tensor_names(interpreter, case, run)
        for name, ours in outputs.items():
            expected = npy(run["outputs"][name]["litert_ref"])
            assert_bytes_equal(ours, expected, "{} {} {}".format(case["name"], run["name"], name))


@pytest.mark.parametrize("case", [c for c in CASES if c["name"] in AARCH64_BUILTIN["ops"]["cases"]],
                         ids=lambda c: c["name"])
def test_single_op_builtin_kernels(case):
    interpreter = Interpreter(model_path=model_path(case["model"]),
                              experimental_op_resolver_type=OpResolverType.BUILTIN)
    files = AARCH64_BUILTIN["ops"]["cases"][case["name"]]
    for run in case["runs"]:
        outputs = run_by_tensor_names(interpreter, case, run)
        for name, ours in outputs.items():
            expected = npy(files[run["name"]][name])
            assert_bytes_equal(ours, expected, "{} {} {}".format(case["name"], run["name"], name))


def has_xnnpack_outputs(case):
    return any("litert_xnnpack" in refs for refs in case["runs"][0]["outputs"].values())


# The convolutions against XNNPACK are checked case by case by cnn_ops.rs,
# not as a family (as xnnpack_ops.rs leaves them out).
XNNPACK_CASES = [c for c in CASES if has_xnnpack_outputs(c)
                 and not c["name"].startswith(("conv_", "depthwise_"))]


@pytest.mark.parametrize("case", XNNPACK_CASES, ids=lambda c: c["name"])
def test_single_op_xnnpack_default_resolver(case):
    try:
        interpreter = Interpreter(model_path=model_path(case["model"]))
    except ValueError as e:
        ops = {o["op"] for o in case["operators"]}
        assert ops & set(XNNPACK_NOT_BUILT) and "XNNPACK" in str(e), str(e)
        return
    arm = AARCH64_XNNPACK["ops"]["cases"].get(case["name"], {})
    for run in case["runs"]:
        outputs = run_by_tensor_names(interpreter, case, run)
        for name, ours in outputs.items():
            file = arm.get(run["name"], {}).get(name) or run["outputs"][name]["litert_xnnpack"]
            assert_bytes_equal(ours, npy(file), "{} {} {}".format(case["name"], run["name"], name))


def run_by_position(interpreter, inputs):
    interpreter.allocate_tensors()
    for d, file in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(d["index"], npy(file))
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def net_stem(model):
    return model["model"].rsplit("/", 1)[-1][: -len(".tflite")]


RESOLVERS = ["BUILTIN_REF", "BUILTIN", "AUTO"]


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("model", NETS["models"], ids=net_stem)
def test_generated_nets(model, resolver):
    stem = net_stem(model)
    checked = 0
    interpreter = Interpreter(model_path=model_path(model["model"]),
                              experimental_op_resolver_type=OpResolverType[resolver])
    for i, run in enumerate(model["runs"]):
        if resolver == "BUILTIN":
            files = AARCH64_BUILTIN["nets"][stem]["runs"][i]
        elif resolver == "AUTO":
            arm = AARCH64_XNNPACK["nets"].get(stem)
            files = arm["runs"][i] if isinstance(arm, dict) else run["outputs"]["litert_xnnpack"]
        else:
            files = run["outputs"].get("litert_ref")
            if files is None:
                # LiteRT's reference kernels abort on this net (recorded).
                assert "litert_ref" in model.get("aborts", {})
                continue
        for j, (ours, file) in enumerate(zip(run_by_position(interpreter, run["inputs"]), files)):
            assert_bytes_equal(ours, npy(file), "{} {} output {}".format(stem, run["name"], j))
            checked += 1
    if resolver != "BUILTIN_REF":
        assert checked > 0


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("model", PUBLISHED["models"], ids=net_stem)
def test_published_models(model, resolver):
    stem = net_stem(model)
    interpreter = Interpreter(model_path=model_path(model["model"]),
                              experimental_op_resolver_type=OpResolverType[resolver])
    for i, run in enumerate(model["runs"]):
        if resolver == "BUILTIN":
            files = AARCH64_BUILTIN["tflite_micro"][stem]["runs"][i]
        else:
            files = run["outputs"]["litert_ref" if resolver == "BUILTIN_REF" else "litert_xnnpack"]
        for j, (ours, file) in enumerate(zip(run_by_position(interpreter, run["inputs"]), files)):
            assert_bytes_equal(ours, npy(file), "{} {} output {}".format(stem, run["name"], j))


SVDF = manifest("tflite_micro/refs/svdf/manifest.json")


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("case", SVDF["cases"], ids=lambda c: c["name"])
def test_svdf_sequences(case, resolver):
    # Each sequence on a fresh interpreter, as recorded; then a reset gives
    # step 0's output again.
    reference = {"BUILTIN_REF": "litert_ref", "BUILTIN": "litert_builtin",
                 "AUTO": "litert_xnnpack"}[resolver]
    for sequence in case["sequences"]:
        interpreter = Interpreter(model_path=model_path(case["model"]),
                                  experimental_op_resolver_type=OpResolverType[resolver])
        steps = sequence["steps"]
        for k, step in enumerate(steps):
            for ours, file in zip(run_by_position(interpreter, step["inputs"]),
                                  step["outputs"][reference]):
                assert_bytes_equal(ours, npy(file), "{} {} step {}".format(
                    case["name"], sequence["name"], k))
        interpreter.reset_all_variables()
        for ours, file in zip(run_by_position(interpreter, steps[0]["inputs"]),
                              steps[0]["outputs"][reference]):
            assert_bytes_equal(ours, npy(file), "{} {} step 0 after reset".format(
                case["name"], sequence["name"]))


# Every input set on 1 layer; the first on 24 layers (each 24-layer run
# costs ~10 s on the host's scalar backend; runtime/tests/mobilebert.rs
# runs all of them).
MOBILEBERT_RUNS = ([("1l", case) for case in MOBILEBERT["inputs"]]
                   + [("24l", next(iter(MOBILEBERT["inputs"])))])


@pytest.mark.parametrize("resolver", ["BUILTIN_REF", "BUILTIN", "AUTO"])
@pytest.mark.parametrize("layers,case", MOBILEBERT_RUNS, ids=lambda v: v)
def test_mobilebert(layers, case, resolver):
    if layers == "24l" and UNDER_EMULATION:
        pytest.skip("the 24-layer model runs on the host only (minutes under emulation)")
    model = MOBILEBERT["models"][layers]
    if resolver == "BUILTIN":
        if layers not in AARCH64_BUILTIN["models"]:
            pytest.skip("no LiteRT aarch64 builtin outputs for {}".format(layers))
        files = AARCH64_BUILTIN["models"][layers]["outputs"][case]
    elif resolver == "AUTO":
        files = AARCH64_XNNPACK["models"][layers]["outputs"][case]
    else:
        files = model["outputs"][case]["litert_ref"]
    interpreter = Interpreter(model_path=model_path(model["model"]),
                              experimental_op_resolver_type=OpResolverType[resolver])
    runner = interpreter.get_signature_runner()
    inputs = {name: npy(file) for name, file in MOBILEBERT["inputs"][case].items()}
    ours = runner(**inputs)
    for name, file in files.items():
        assert_bytes_equal(ours[name], npy(file), "{} {} {}".format(layers, case, name))
