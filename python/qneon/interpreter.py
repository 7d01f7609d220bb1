"""qneon's ``Interpreter``: TFLite's Python ``Interpreter`` API on qneon's runtime.

``from qneon.interpreter import Interpreter`` in place of
``from tflite_runtime.interpreter import Interpreter`` (or
``ai_edge_litert.interpreter``) is the whole change: the same constructor,
details dicts, ``set_tensor`` / ``invoke`` / ``get_tensor``, ``tensor`` views
and signature runners, and the same exceptions (``ValueError`` for bad
arguments, ``RuntimeError`` for a failed invoke).

Where qneon differs, and why:

* ``experimental_op_resolver_type`` picks which of TFLite's kernel sets the
  outputs equal byte for byte: ``BUILTIN_REF`` the reference kernels,
  ``BUILTIN`` / ``BUILTIN_WITHOUT_DEFAULT_DELEGATES`` the optimized builtin
  kernels (as LiteRT's aarch64 build runs them), the default (``AUTO``)
  the XNNPACK delegate's (as LiteRT's aarch64 build runs it).
* ``num_threads`` is checked as TFLite checks it and becomes the runtime's
  thread count (``None`` / ``-1``: one thread); the bytes are the same at
  every count.
* Shapes are fixed at load: ``resize_tensor_input`` to another shape is a
  ``ValueError`` (to the same shape it does nothing).
* ``set_tensor`` takes model inputs only (TFLite writes any tensor).
* ``tensor(index)()`` of an input is a view that the next ``invoke`` reads;
  of an output, a view of the last ``invoke``'s result (refreshed by each
  ``invoke``). Intermediate tensors can be read with ``get_tensor`` only
  while the runtime keeps them (their memory is reused within an invoke).
"""

import enum

import numpy as np

from . import _qneon

__all__ = ["Interpreter", "OpResolverType", "SignatureRunner"]


class OpResolverType(enum.Enum):
    """TFLite's resolver types (same names and values as ``tflite_runtime``)."""

    AUTO = 0
    BUILTIN = 1
    BUILTIN_REF = 2
    BUILTIN_WITHOUT_DEFAULT_DELEGATES = 3


# Which kernel set's bytes each resolver type gives (qneon's ``--kernels``).
_KERNELS = {
    OpResolverType.AUTO: "xnnpack",
    OpResolverType.BUILTIN: "optimized",
    OpResolverType.BUILTIN_REF: "reference",
    OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES: "optimized",
}

# TFLite's dtype names (as the runtime reports them) to numpy's types.
_DTYPES = {
    "FLOAT32": np.float32,
    "FLOAT16": np.float16,
    "FLOAT64": np.float64,
    "INT8": np.int8,
    "UINT8": np.uint8,
    "INT16": np.int16,
    "UINT16": np.uint16,
    "INT32": np.int32,
    "UINT32": np.uint32,
    "INT64": np.int64,
    "UINT64": np.uint64,
    "BOOL": np.bool_,
    "COMPLEX64": np.complex64,
    "COMPLEX128": np.complex128,
    "STRING": np.object_,
}


def _resolver_kernels(resolver):
    if isinstance(resolver, OpResolverType):
        return _KERNELS[resolver]
    # Another package's enum (tflite_runtime's, ai_edge_litert's): by name.
    name = getattr(resolver, "name", None)
    for member in OpResolverType:
        if member.name == name:
            return _KERNELS[member]
    raise ValueError(
        "Unrecognized passed in op resolver type: {}".format(resolver))


class _Tensor:
    """One tensor's facts, and its details dict as TFLite writes it."""

    def __init__(self, row):
        (self.index, self.name, dtype_name, shape, shape_signature, scales,
         zero_points, quantized_dimension) = row
        self.dtype_name = dtype_name
        self.dtype = _DTYPES.get(dtype_name)
        self.shape = tuple(shape)
        self.shape_signature = tuple(shape_signature)
        self.scales = list(scales)
        self.zero_points = list(zero_points)
        self.quantized_dimension = quantized_dimension
        itemsize = np.dtype(self.dtype).itemsize if self.dtype not in (None, np.object_) else 0
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * itemsize

    def details(self):
        if len(self.scales) == 1:
            quantization = (float(self.scales[0]), int(self.zero_points[0]))
        else:
            quantization = (0.0, 0)
        return {
            "name": self.name,
            "index": self.index,
            "shape": np.array(self.shape, dtype=np.int32),
            "shape_signature": np.array(self.shape_signature, dtype=np.int32),
            "dtype": self.dtype,
            "quantization": quantization,
            "quantization_parameters": {
                "scales": np.array(self.scales, dtype=np.float32),
                "zero_points": np.array(self.zero_points, dtype=np.int32),
                "quantized_dimension": int(self.quantized_dimension),
                "block_size": 0,
            },
            "sparsity_parameters": {},
        }


class Interpreter:
    """Runs a ``.tflite`` model; TFLite's ``Interpreter`` API.

    Args:
      model_path: path of the ``.tflite`` file.
      model_content: the file's bytes (instead of ``model_path``).
      experimental_delegates: not supported (a ``ValueError`` unless empty).
      experimental_preserve_all_tensors: not supported (a ``ValueError`` if
        true); the other ``experimental_*`` flags are accepted and not used.
      num_threads: ``None``, ``-1`` (one thread) or at least 1: the threads
        an invoke runs on.
      experimental_op_resolver_type: an ``OpResolverType`` (this module's or
        TFLite's): which kernel set's bytes the outputs equal.
      softmax: qneon's method for SOFTMAX, LOG_SOFTMAX, LOGISTIC and TANH
        (``"fixed"``, ``"lut"``, ``"f32"``); default: the resolver's.
      rounding: ``"single"`` (default) or ``"double"``: the requantizing
        ops' rounding.
      backend: ``"neon"`` or ``"scalar"``; default the best the CPU has
        (never changes a byte).
      memory_budget: most bytes the model may need at run time (default
        1 GiB).
    """

    def __init__(self,
                 model_path=None,
                 model_content=None,
                 experimental_delegates=None,
                 num_threads=None,
                 experimental_op_resolver_type=OpResolverType.AUTO,
                 experimental_preserve_all_tensors=False,
                 experimental_disable_delegate_clustering=False,
                 experimental_default_delegate_latest_features=False,
                 *,
                 softmax=None,
                 rounding="single",
                 backend=None,
                 memory_budget=None):
        if num_threads is not None:
            if not isinstance(num_threads, int):
                raise ValueError("type of num_threads should be int")
            if num_threads < 1 and num_threads != -1:
                raise ValueError("num_threads should >= 1")
        if experimental_delegates:
            raise ValueError("qneon runs no TFLite delegates")
        if experimental_preserve_all_tensors:
            raise ValueError("qneon cannot preserve all tensors: intermediate tensors share "
                             "memory within an invoke (read model inputs and outputs)")
        if model_path is None and model_content is None:
            raise ValueError("`model_path` or `model_content` must be specified.")
        if model_path is not None and model_content is not None:
            raise ValueError("`model_path` and `model_content` are exclusive.")
        threads = None if num_threads in (None, -1) else num_threads
        self._model = _qneon.Model(
            model_path=None if model_path is None else str(model_path),
            model_content=None if model_content is None else bytes(model_content),
            kernels=_resolver_kernels(experimental_op_resolver_type),
            softmax=softmax,
            rounding=rounding,
            backend=backend,
            memory_budget=memory_budget,
            num_threads=threads,
        )
        self._tensors = [_Tensor(row) for row in self._model.tensors()]
        self._inputs = list(self._model.inputs())
        self._outputs = list(self._model.outputs())
        self._input_position = {t: p for p, t in enumerate(self._inputs)}
        self._signatures = {
            key: (subgraph, dict(inputs), dict(outputs))
            for key, subgraph, inputs, outputs in self._model.signatures()
        }
        # The numpy side of the model's inputs and outputs: what set_tensor
        # writes and tensor() views. Made by allocate_tensors.
        self._buffers = None

    # -- details -----------------------------------------------------------

    def _check_index(self, tensor_index):
        if not 0 <= tensor_index < len(self._tensors):
            raise ValueError("Invalid tensor index {} exceeds max tensor index {}".format(
                tensor_index, len(self._tensors)))

    def _tensor_details(self, tensor_index, subgraph_index=0):
        if subgraph_index != 0:
            raise ValueError("qneon runs subgraph 0 only, not {}".format(subgraph_index))
        self._check_index(tensor_index)
        return self._tensors[tensor_index].details()

    def get_input_details(self):
        """The details dict of every model input, in order."""
        return [self._tensor_details(t) for t in self._inputs]

    def get_output_details(self):
        """The details dict of every model output, in order."""
        return [self._tensor_details(t) for t in self._outputs]

    def get_tensor_details(self):
        """The details dict of every tensor of the model."""
        return [t.details() for t in self._tensors]

    # -- lifecycle ---------------------------------------------------------

    def allocate_tensors(self):
        """Makes the arena, the variables' state and the input and output buffers."""
        self._model.allocate()
        if self._buffers is None:
            self._buffers = {}
            for t in self._inputs + self._outputs:
                info = self._tensors[t]
                if info.dtype in (None, np.object_):
                    raise ValueError("tensor {} ({}) has dtype {}, which qneon cannot hand to numpy"
                                     .format(t, info.name, info.dtype_name))
                self._buffers[t] = np.zeros(info.shape, dtype=info.dtype)

    def _ensure_allocated(self, what):
        if self._buffers is None:
            raise ValueError(
                "Cannot {}: Tensor is unallocated. Try calling allocate_tensors() first".format(what))

    def set_tensor(self, tensor_index, value):
        """Copies ``value`` into model input ``tensor_index`` (dtype and shape checked)."""
        self._check_index(tensor_index)
        info = self._tensors[tensor_index]
        if tensor_index not in self._input_position:
            raise ValueError(
                "Cannot set tensor: tensor {} ({}) is not an input of the model; inputs are {}"
                .format(tensor_index, info.name, self._inputs))
        self._ensure_allocated("set tensor")
        value = np.asarray(value)
        if value.dtype != np.dtype(info.dtype):
            raise ValueError(
                "Cannot set tensor: Got value of type {} but expected type {} for input {}, name: {} "
                .format(_dtype_name(value.dtype), info.dtype_name, tensor_index, info.name))
        if value.shape != info.shape:
            raise ValueError(
                "Cannot set tensor: Dimension mismatch. Got shape {} but expected {} for input {} ({})"
                .format(list(value.shape), list(info.shape), tensor_index, info.name))
        np.copyto(self._buffers[tensor_index], value)

    def resize_tensor_input(self, input_index, tensor_size, strict=False):
        """qneon plans every shape at load: the same shape is accepted, any other a ValueError."""
        self._check_index(input_index)
        info = self._tensors[input_index]
        if input_index not in self._input_position:
            raise ValueError("tensor {} ({}) is not an input of the model".format(
                input_index, info.name))
        size = tuple(int(d) for d in np.asarray(tensor_size).reshape(-1))
        if size != info.shape:
            raise ValueError(
                "qneon cannot resize input {} ({}) from {} to {}: shapes are planned once, "
                "at load; convert the model with the shape to run".format(
                    input_index, info.name, list(info.shape), list(size)))

    def invoke(self):
        """Runs the model on the inputs set (the GIL is released meanwhile)."""
        if self._buffers is None:
            raise RuntimeError("Invoke called on model that is not ready.")
        for position, t in enumerate(self._inputs):
            self._model.set_input(position, _bytes_view(self._buffers[t]))
        self._model.invoke()
        for t in self._outputs:
            self._model.read_tensor(t, _bytes_view(self._buffers[t]))

    def get_tensor(self, tensor_index, subgraph_index=0):
        """A copy of tensor ``tensor_index``'s value."""
        if subgraph_index != 0:
            raise ValueError("qneon runs subgraph 0 only, not {}".format(subgraph_index))
        self._check_index(tensor_index)
        if self._buffers is not None and tensor_index in self._buffers:
            return self._buffers[tensor_index].copy()
        info = self._tensors[tensor_index]
        if info.dtype in (None, np.object_):
            raise ValueError("tensor {} ({}) has dtype {}, which qneon cannot hand to numpy".format(
                tensor_index, info.name, info.dtype_name))
        out = np.zeros(info.shape, dtype=info.dtype)
        if not self._model.read_tensor(tensor_index, _bytes_view(out)):
            raise ValueError("Tensor {} ({}) has no data: it is unused, or allocate_tensors() "
                             "has not been called".format(tensor_index, info.name))
        return out

    def tensor(self, tensor_index):
        """A function returning a numpy view of input or output ``tensor_index``."""
        self._check_index(tensor_index)
        if tensor_index not in self._input_position and tensor_index not in self._outputs:
            raise ValueError("qneon views model inputs and outputs only; use get_tensor({})"
                             .format(tensor_index))

        def view():
            self._ensure_allocated("view tensor")
            return self._buffers[tensor_index]

        return view

    def reset_all_variables(self):
        """Sets every variable tensor (recurrent state) back to its initial value."""
        self._model.allocate()
        self._model.reset_variables()

    # -- signatures --------------------------------------------------------

    def get_signature_list(self):
        """``{key: {"inputs": [names], "outputs": [names]}}`` of the model's signature defs."""
        return {
            key: {"inputs": sorted(inputs), "outputs": sorted(outputs)}
            for key, (_, inputs, outputs) in self._signatures.items()
        }

    def get_signature_runner(self, signature_key=None):
        """A callable running signature ``signature_key`` (the only one when ``None``)."""
        if signature_key is None:
            if len(self._signatures) != 1:
                raise ValueError(
                    "SignatureDef signature_key is None and model has {} Signatures. "
                    "None is only allowed when the model has 1 SignatureDef".format(
                        len(self._signatures)))
            signature_key = next(iter(self._signatures))
        if signature_key not in self._signatures:
            raise ValueError('Invalid signature_key provided: "{}".'.format(signature_key))
        return SignatureRunner(self, signature_key)

    def _get_ops_details(self):
        raise ValueError("qneon does not report ops details")


class SignatureRunner:
    """Runs one signature: inputs by name in, ``{name: array}`` out."""

    def __init__(self, interpreter, signature_key):
        subgraph, inputs, outputs = interpreter._signatures[signature_key]
        if subgraph != 0:
            raise ValueError("signature {} runs subgraph {}; qneon runs subgraph 0 only".format(
                signature_key, subgraph))
        self._interpreter = interpreter
        self._inputs = inputs
        self._outputs = outputs
        interpreter.allocate_tensors()

    def get_input_details(self):
        return {name: self._interpreter._tensor_details(t) for name, t in self._inputs.items()}

    def get_output_details(self):
        return {name: self._interpreter._tensor_details(t) for name, t in self._outputs.items()}

    def allocate_tensors(self):
        self._interpreter.allocate_tensors()

    def invoke(self, **kwargs):
        return self(**kwargs)

    def __call__(self, **kwargs):
        if len(kwargs) != len(self._inputs):
            raise ValueError(
                "Invalid number of inputs provided for running a SignatureDef, "
                "expected {} vs provided {}".format(len(self._inputs), len(kwargs)))
        for name, value in kwargs.items():
            if name not in self._inputs:
                raise ValueError("Invalid Input name ({}) for SignatureDef".format(name))
            self._interpreter.set_tensor(self._inputs[name], value)
        self._interpreter.invoke()
        return {name: self._interpreter.get_tensor(t) for name, t in self._outputs.items()}


def _bytes_view(array):
    """The bytes of a C-contiguous array, as a flat uint8 view (no copy)."""
    return array.reshape(-1).view(np.uint8)


def _dtype_name(dtype):
    for name, numpy_type in _DTYPES.items():
        if np.dtype(numpy_type) == dtype:
            return name
    return str(dtype)
