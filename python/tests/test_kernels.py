"""qneon.softmax / log_softmax / logistic / tanh / cross_entropy on numpy
arrays: against TFLite's outputs for the single-op models (the same inputs
through the kernel alone), against float math, and on bad input."""

import numpy as np
import pytest

import qneon
from conftest import manifest, npy

OPS = manifest("ops/manifest.json")
FUNCTIONS = {
    "SOFTMAX": qneon.softmax,
    "LOG_SOFTMAX": qneon.log_softmax,
    "LOGISTIC": qneon.logistic,
    "TANH": qneon.tanh,
}
ACTIVATION_CASES = [c for c in OPS["cases"]
                    if len(c["operators"]) == 1 and c["operators"][0]["op"] in FUNCTIONS
                    and "sequence" not in c]


def call(case, x, method):
    op = case["operators"][0]
    q = op["inputs"][0]["quantization"]
    kwargs = dict(scale=q["scale"], zero_point=q["zero_point"], method=method)
    if op["op"] == "SOFTMAX":
        kwargs["beta"] = op["options"]["beta"]
    return FUNCTIONS[op["op"]](x, **kwargs)


def only_output(run):
    (refs,) = run["outputs"].values()
    return refs


@pytest.mark.parametrize("case", ACTIVATION_CASES, ids=lambda c: c["name"])
def test_fixed_point_equals_reference_kernels(case):
    # int16 runs TFLite's int16 kernels' tables (Method::Lut) in its
    # reference build too.
    dtype = case["operators"][0]["inputs"][0]["dtype"]
    method = "lut" if dtype == "int16" else "fixed"
    for run in case["runs"]:
        (x,) = (npy(f) for f in run["inputs"].values())
        expected = npy(only_output(run)["litert_ref"])
        y = call(case, x, method)
        assert y.dtype == x.dtype and y.shape == x.shape
        np.testing.assert_array_equal(y, expected.reshape(y.shape))


@pytest.mark.parametrize("backend", ["scalar", None])
def test_backends_agree(backend):
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, size=(7, 33), dtype=np.int8)
    for f in (qneon.softmax, qneon.log_softmax, qneon.logistic, qneon.tanh):
        np.testing.assert_array_equal(f(x, 0.1, -3, backend=backend),
                                      f(x, 0.1, -3, backend="scalar"))


def test_axis_and_layout():
    rng = np.random.default_rng(2)
    x = rng.integers(-128, 128, size=(4, 10, 6), dtype=np.int8)
    last = qneon.softmax(np.moveaxis(x, 1, -1), 0.05, 0)
    np.testing.assert_array_equal(qneon.softmax(x, 0.05, 0, axis=1), np.moveaxis(last, -1, 1))
    # A strided view gives what its copy gives.
    view = x[:, ::2, :]
    np.testing.assert_array_equal(qneon.softmax(view, 0.05, 0), qneon.softmax(view.copy(), 0.05, 0))


def test_quantized_outputs_are_near_float_math():
    rng = np.random.default_rng(3)
    scale, zero_point = 0.07, 5
    for dtype in (np.int8, np.uint8):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(16, 40), endpoint=True).astype(dtype)
        real = (x.astype(np.float64) - zero_point) * scale
        e = np.exp(real - real.max(axis=-1, keepdims=True))
        soft = e / e.sum(axis=-1, keepdims=True)
        y = qneon.softmax(x, scale, zero_point)
        out_zero = info.min
        assert np.abs((y.astype(np.float64) - out_zero) / 256 - soft).max() <= 1.01 / 256
        y = qneon.logistic(x, scale, zero_point)
        assert np.abs((y.astype(np.float64) - out_zero) / 256 - 1 / (1 + np.exp(-real))).max() <= 1.01 / 256
        tanh_zero = 0 if dtype == np.int8 else 128
        y = qneon.tanh(x, scale, zero_point)
        assert np.abs((y.astype(np.float64) - tanh_zero) / 128 - np.tanh(real)).max() <= 1.01 / 128
        log_zero = info.max
        y = qneon.log_softmax(x, scale, zero_point)
        logs = np.log(soft)
        inside = logs > -16 + 1 / 16
        assert np.abs(((y.astype(np.float64) - log_zero) * 16 / 256 - logs)[inside]).max() <= 1.01 * 16 / 256


def test_float32_kernels_match_numpy():
    rng = np.random.default_rng(4)
    x = rng.normal(0, 3, size=(8, 50)).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    soft = e / e.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(qneon.softmax(x), soft, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(qneon.softmax(x, beta=0.5),
                               np.exp(0.5 * x) / np.exp(0.5 * x).sum(axis=-1, keepdims=True),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(qneon.log_softmax(x), np.log(soft), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(qneon.logistic(x), 1 / (1 + np.exp(-x.astype(np.float64))),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(qneon.tanh(x), np.tanh(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
    assert qneon.softmax(x).dtype == np.float32


def test_cross_entropy_matches_the_formula():
    rng = np.random.default_rng(5)
    logits = rng.normal(0, 2, size=(6, 9, 3)).astype(np.float32)
    targets = rng.integers(0, 9, size=(6, 3))
    targets[0, 0] = -100
    x = logits.astype(np.float64)
    log_p = x - x.max(axis=1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(axis=1, keepdims=True))
    nll = -np.take_along_axis(log_p, np.maximum(targets, 0)[:, None, :], axis=1)[:, 0, :]
    nll[0, 0] = 0
    per = qneon.cross_entropy(logits, targets, reduction="none")
    assert per.shape == targets.shape
    np.testing.assert_allclose(per, nll, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(qneon.cross_entropy(logits, targets, reduction="sum"), nll.sum(), rtol=1e-5)
    np.testing.assert_allclose(qneon.cross_entropy(logits, targets), nll.sum() / 17, rtol=1e-5)
    # Quantized logits: the loss of their dequantized values.
    q = rng.integers(-128, 128, size=(5, 7), dtype=np.int8)
    t = rng.integers(0, 7, size=5)
    real = ((q.astype(np.float32) - 3) * np.float32(0.1)).astype(np.float32)
    np.testing.assert_allclose(qneon.cross_entropy(q, t, scale=0.1, zero_point=3),
                               qneon.cross_entropy(real, t), rtol=1e-5)


def test_bad_input_raises():
    x = np.zeros((2, 4), np.int8)
    with pytest.raises(ValueError, match="scale"):
        qneon.softmax(x)
    with pytest.raises(ValueError):
        qneon.softmax(x, -1.0, 0)
    with pytest.raises(ValueError):
        qneon.softmax(x, 0.1, 500)
    with pytest.raises(ValueError, match="method"):
        qneon.softmax(x, 0.1, 0, method="magic")
    with pytest.raises(TypeError, match="int8, uint8, int16 or float32"):
        qneon.softmax(np.zeros((2, 4), np.int32), 0.1, 0)
    with pytest.raises(ValueError):
        qneon.softmax(np.int8(3), 0.1, 0)
    with pytest.raises(ValueError):
        qneon.log_softmax(np.zeros((2, 4), np.int16), 0.1, 0)
    with pytest.raises(ValueError, match="targets"):
        qneon.cross_entropy(np.zeros((3, 4), np.float32), np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="reduction"):
        qneon.cross_entropy(np.zeros((3, 4), np.float32), np.zeros(3, np.int64), reduction="avg")
    with pytest.raises(ValueError):
        qneon.cross_entropy(np.zeros((3, 4), np.int8), np.zeros(3, np.int64))
    # Empty rows are no work and no error.
    assert qneon.softmax(np.zeros((0, 4), np.int8), 0.1, 0).shape == (0, 4)
