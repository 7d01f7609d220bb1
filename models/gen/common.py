"""Shared pieces of the model generator: environment set-up, conversion,
interpreters for every reference runtime, model inspection and file writing.

Import this module before TensorFlow: it sets the environment variables that
TensorFlow reads when it is first imported.
"""

import hashlib
import json
import os
import random

# Before TensorFlow is imported: transformers' TF models need the Keras 2 API
# (tf-keras); deterministic kernels; no GPU probing; quiet logs.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from ai_edge_litert import interpreter as litert  # noqa: E402
from tensorflow.lite.python import schema_py_generated as schema  # noqa: E402
from tensorflow.lite.tools import flatbuffer_utils  # noqa: E402

# One thread everywhere: float reductions in a fixed order, so the float
# reference outputs and the converter's calibration statistics do not depend
# on how work was split between threads.
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)


def seed_everything(seed):
    """Seeds Python's, NumPy's and TensorFlow's global generators (Keras'
    unseeded initializers draw from these)."""
    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)
    tf.keras.utils.set_random_seed(seed)


# Every runtime a reference output comes from. The key names the output files.
REFERENCES = {
    "litert_ref": "ai-edge-litert 2.3.0 (x86_64 wheel), "
    "experimental_op_resolver_type=OpResolverType.BUILTIN_REF (reference kernels), 1 thread",
    "litert_builtin": "ai-edge-litert 2.3.0 (x86_64 wheel), "
    "OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES (optimized builtin kernels, no XNNPACK), 1 thread",
    "litert_xnnpack": "ai-edge-litert 2.3.0 (x86_64 wheel), default resolver "
    "(OpResolverType.AUTO: builtin kernels with the XNNPACK delegate), 1 thread",
    "tf219_ref": "tensorflow-cpu 2.19.1 bundled tf.lite.Interpreter, "
    "experimental_op_resolver_type=OpResolverType.BUILTIN_REF (reference kernels), 1 thread",
    "tf219_builtin": "tensorflow-cpu 2.19.1 bundled tf.lite.Interpreter, "
    "OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES (optimized builtin kernels, no XNNPACK), 1 thread",
    "float_keras": "the unquantized model in TensorFlow 2.19.1 (Keras 2), float32, 1 thread",
}


def make_interpreter(reference, model_bytes):
    if reference.startswith("litert_"):
        module, types = litert, litert.OpResolverType
    elif reference.startswith("tf219_"):
        module, types = tf.lite, tf.lite.experimental.OpResolverType
    else:
        raise ValueError(f"not an interpreter reference: {reference}")
    resolver = {
        "ref": types.BUILTIN_REF,
        "builtin": types.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        "xnnpack": types.AUTO,
    }[reference.split("_", 1)[1]]
    interp = module.Interpreter(
        model_content=bytes(model_bytes),
        experimental_op_resolver_type=resolver,
        num_threads=1,
    )
    interp.allocate_tensors()
    return interp


def run_interpreter(reference, model_bytes, inputs):
    """Runs the model's only signature; `inputs` maps signature input names
    to arrays. Returns {signature output name: array}."""
    interp = make_interpreter(reference, model_bytes)
    runner = interp.get_signature_runner()
    out = runner(**inputs)
    return {k: np.array(v) for k, v in out.items()}


def convert(concrete_fn, trackable, representative, *, int16=False, per_tensor=False,
            input_type=None, output_type=None):
    """Full-integer post-training quantization of one concrete function.

    `representative` returns a list of dicts keyed by input name: a dict, not
    a list, because a list is matched to the inputs in sorted-name order.
    """
    conv = tf.lite.TFLiteConverter.from_concrete_functions([concrete_fn], trackable)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    samples = representative()

    def dataset():
        for sample in samples:
            yield {k: tf.constant(v) for k, v in sample.items()}

    conv.representative_dataset = dataset
    if int16:
        conv.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
        ]
    else:
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if per_tensor:
        conv._experimental_disable_per_channel = True
    if input_type is not None:
        conv.inference_input_type = input_type
    if output_type is not None:
        conv.inference_output_type = output_type
    return conv.convert()


_OP_NAMES = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
_TYPE_NAMES = {v: k.lower() for k, v in vars(schema.TensorType).items() if not k.startswith("_")}


def _tensor_type(subgraph, index):
    return "-" if index < 0 else _TYPE_NAMES[subgraph.tensors[index].type]


def op_histogram(model_bytes):
    """{"OP in_types->out_types": count} over every operator of the model."""
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(model_bytes))
    hist = {}
    for sg in model.subgraphs:
        for op in sg.operators:
            code = model.operatorCodes[op.opcodeIndex]
            name = _OP_NAMES[max(code.builtinCode, code.deprecatedBuiltinCode)]
            ins = ",".join(_tensor_type(sg, i) for i in op.inputs)
            outs = ",".join(_tensor_type(sg, i) for i in op.outputs)
            key = f"{name} {ins}->{outs}"
            hist[key] = hist.get(key, 0) + 1
    return dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))


def operators(model_bytes):
    """Every operator in execution order: its builtin options (scalar fields)
    and the dtype, shape and quantization of its inputs and outputs."""
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(model_bytes))
    result = []
    for sg in model.subgraphs:
        def tensor(index):
            if index < 0:
                return None
            t = sg.tensors[index]
            entry = {"name": t.name.decode() if isinstance(t.name, bytes) else t.name,
                     "dtype": _TYPE_NAMES[t.type],
                     "shape": [int(x) for x in (t.shape if t.shape is not None else [])]}
            q = t.quantization
            if q is not None and q.scale is not None and len(q.scale):
                scales = [float(x) for x in q.scale]
                if len(scales) == 1:
                    entry["quantization"] = {"scale": scales[0], "zero_point": int(q.zeroPoint[0])}
                else:
                    entry["quantization"] = {"axis": int(q.quantizedDimension), "scales": scales,
                                             "zero_points": [int(z) for z in q.zeroPoint]}
            entry["constant"] = bool(model.buffers[t.buffer].data is not None and len(model.buffers[t.buffer].data))
            return entry

        for op in sg.operators:
            code = model.operatorCodes[op.opcodeIndex]
            options = {}
            if op.builtinOptions is not None:
                for k, v in sorted(vars(op.builtinOptions).items()):
                    if isinstance(v, (bool, int, float)):
                        options[k] = v
            result.append({
                "op": _OP_NAMES[max(code.builtinCode, code.deprecatedBuiltinCode)],
                "options": options,
                "inputs": [tensor(i) for i in op.inputs],
                "outputs": [tensor(i) for i in op.outputs],
            })
    return result


def op_totals(hist):
    totals = {}
    for key, n in hist.items():
        op = key.split(" ", 1)[0]
        totals[op] = totals.get(op, 0) + n
    return dict(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))


def tensor_details(model_bytes):
    """Signature inputs and outputs: name, tensor name, dtype, shape, quantization."""
    interp = litert.Interpreter(model_content=bytes(model_bytes))
    sig = interp.get_signature_list()
    (key,) = sig.keys()
    details = {d["index"]: d for d in interp.get_tensor_details()}
    runner = interp.get_signature_runner(key)
    result = {"signature": key, "inputs": [], "outputs": []}
    for kind, getter in (("inputs", runner.get_input_details), ("outputs", runner.get_output_details)):
        for name, d in getter().items():
            q = d["quantization_parameters"]
            entry = {
                "name": name,
                "tensor": details[d["index"]]["name"],
                "dtype": np.dtype(d["dtype"]).name,
                "shape": [int(x) for x in d["shape"]],
            }
            if len(q["scales"]):
                entry["scale"] = [float(s) for s in q["scales"]]
                entry["zero_point"] = [int(z) for z in q["zero_points"]]
            result[kind].append(entry)
    return result


def file_name_part(name):
    """A tensor or signature name as a file-name part (':' and '/' are not kept)."""
    return name.replace(":", "_").replace("/", "_")


def write_bytes(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_npy(path, array):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(value, f, indent=1, sort_keys=False)
        f.write("\n")


def sha256(data):
    return hashlib.sha256(data).hexdigest()
