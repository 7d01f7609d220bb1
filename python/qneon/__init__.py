"""qneon: bit-exact quantized TFLite inference, a drop-in for ``tflite_runtime``.

``from qneon import Interpreter`` (or ``from qneon.interpreter import
Interpreter``) runs ``.tflite`` models with TFLite's Python API; the
activation kernels (``softmax``, ``log_softmax``, ``logistic``, ``tanh``,
``cross_entropy``) run on numpy arrays.
"""

from . import _qneon
from .interpreter import Interpreter, OpResolverType, SignatureRunner
from .kernels import cross_entropy, log_softmax, logistic, softmax, tanh

__version__ = _qneon.__version__

__all__ = [
    "Interpreter",
    "OpResolverType",
    "SignatureRunner",
    "cross_entropy",
    "log_softmax",
    "logistic",
    "softmax",
    "tanh",
    "__version__",
]
