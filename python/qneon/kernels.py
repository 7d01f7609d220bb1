"""qneon's activation kernels and cross-entropy on numpy arrays.

Quantized inputs (int8, uint8, int16) take their ``scale`` and ``zero_point``
and give an array of the same dtype in TFLite's output quantization of the
op (the only one TFLite's kernels accept):

=============  ======================  =====================  ==============
op             int8                    uint8                  int16
=============  ======================  =====================  ==============
softmax        1/256, -128             1/256, 0               1/32768, 0
logistic       1/256, -128             1/256, 0               1/32768, 0
tanh           1/128, 0                1/128, 128             1/32768, 0
log_softmax    16/256, 127             16/256, 255            (not supported)
=============  ======================  =====================  ==============

``method`` is qneon's: ``"fixed"`` (TFLite's reference kernels, bit for bit),
``"lut"`` (TFLite's optimized kernels' tables, bit for bit), ``"f32"``
(dequantize, float math, requantize: within one step). float32 inputs run the
float kernels (``scale``, ``zero_point`` and ``method`` are not used).

The input is read in place when it is C-contiguous with ``axis`` last (no
copy); the result is one new array.
"""

import numpy as np

from . import _qneon

__all__ = ["softmax", "log_softmax", "logistic", "tanh", "cross_entropy"]


def _rows_last(x, axis):
    """``x`` with ``axis`` moved last, C-contiguous (a copy only when needed)."""
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("expected an array of at least one dimension, got a scalar")
    axis = axis % x.ndim
    if axis != x.ndim - 1:
        x = np.moveaxis(x, axis, -1)
    return np.ascontiguousarray(x), axis


def _rows_back(y, axis, ndim):
    return y if axis == ndim - 1 else np.moveaxis(y, -1, axis)


def softmax(x, scale=None, zero_point=None, method="fixed", axis=-1, beta=1.0, backend=None):
    """Softmax of ``x`` along ``axis``: ``exp(beta x) / sum exp(beta x)``."""
    rows, axis = _rows_last(x, axis)
    y = _qneon.softmax(rows, scale, zero_point, beta=beta, method=method, backend=backend)
    return _rows_back(y, axis, rows.ndim)


def log_softmax(x, scale=None, zero_point=None, method="fixed", axis=-1, backend=None):
    """Log-softmax of ``x`` along ``axis`` (int8, uint8 or float32)."""
    rows, axis = _rows_last(x, axis)
    y = _qneon.log_softmax(rows, scale, zero_point, method=method, backend=backend)
    return _rows_back(y, axis, rows.ndim)


def logistic(x, scale=None, zero_point=None, method="fixed", backend=None):
    """Logistic (sigmoid) of every element of ``x``."""
    x = np.ascontiguousarray(x)
    return _qneon.logistic(x, scale, zero_point, method=method, backend=backend)


def tanh(x, scale=None, zero_point=None, method="fixed", backend=None):
    """Hyperbolic tangent of every element of ``x``."""
    x = np.ascontiguousarray(x)
    return _qneon.tanh(x, scale, zero_point, method=method, backend=backend)


def cross_entropy(logits, targets, scale=None, zero_point=None, reduction="mean",
                  ignore_index=-100, label_smoothing=0.0):
    """PyTorch's ``cross_entropy`` on numpy logits, fused (no probabilities written).

    ``logits``: ``[N, C]`` or ``[N, C, d1, ...]`` (classes on axis 1), float32,
    or int8 / uint8 with their ``scale`` and ``zero_point``. ``targets``:
    ``[N]`` or ``[N, d1, ...]`` class indices. ``reduction``: ``"mean"``,
    ``"sum"`` (a float) or ``"none"`` (an array shaped like ``targets``).
    """
    logits = np.ascontiguousarray(logits)
    if logits.ndim < 2:
        raise ValueError("cross_entropy: logits need shape [N, C, ...], got {}".format(
            list(logits.shape)))
    targets = np.ascontiguousarray(targets, dtype=np.int64)
    classes = logits.shape[1]
    inner = int(np.prod(logits.shape[2:], dtype=np.int64))
    expected = (logits.shape[0],) + logits.shape[2:]
    if targets.shape != expected:
        raise ValueError("cross_entropy: targets of shape {} for logits of shape {} "
                         "(expected {})".format(list(targets.shape), list(logits.shape),
                                                list(expected)))
    out = _qneon.cross_entropy(logits, targets.reshape(-1), classes, inner, scale, zero_point,
                               reduction=reduction, ignore_index=ignore_index,
                               label_smoothing=label_smoothing)
    if reduction == "none":
        return out.reshape(targets.shape)
    return float(out[0])
