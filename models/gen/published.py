"""Reference outputs of TFLite's runtimes on the published TFLite Micro
models (`models/tflite_micro/`), for the models that run without state:
seeded inputs, and each x86 LiteRT kernel path's outputs on them.

The models are committed as published; this writes only
`tflite_micro/refs/`. LiteRT 2.3 refuses a quantized tensor whose
`quantized_dimension` is not an axis of it (person_detect's 14 rank-1
per-channel biases say axis 3), which TFLite Micro accepts: for LiteRT only,
such a rank-1 tensor's `quantized_dimension` is set to 0, its only axis, in a
copy of the model (the scales then mean what TFLite Micro reads them as).
Nothing else is changed.
"""

import os

import numpy as np

import common
from common import litert
from tensorflow.lite.tools import flatbuffer_utils

# The stateless published models and the number of input sets for each.
MODELS = [
    "person_detect.tflite",
    "micro_speech_quantized.tflite",
    "mobilenet_v2_quantized_1x3x224x224.tflite",
]
REFERENCES = ["litert_ref", "litert_builtin", "litert_xnnpack"]
RUNS = 2
SEED = 26


def litert_copy(model_bytes):
    """The model with each rank-1 tensor's out-of-range
    `quantized_dimension` set to 0, and how many tensors that changed."""
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(model_bytes))
    changed = 0
    for sg in model.subgraphs:
        for t in sg.tensors:
            q = t.quantization
            if q is None or q.scale is None or not len(q.scale):
                continue
            rank = len(t.shape) if t.shape is not None else 0
            if rank == 1 and q.quantizedDimension and q.quantizedDimension >= rank:
                q.quantizedDimension = 0
                changed += 1
    if not changed:
        return bytes(model_bytes), 0
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model)), changed


def full_range(rng, detail):
    """Uniform over the input type's whole range (every code equally likely)."""
    info = np.iinfo(detail["dtype"])
    return rng.integers(info.min, info.max, size=detail["shape"], endpoint=True, dtype=np.int64).astype(
        detail["dtype"])


def run_by_index(reference, model_bytes, inputs):
    interp = common.make_interpreter(reference, model_bytes)
    for d, array in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], array)
    interp.invoke()
    return [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]


def generate(out_dir, log=print):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    manifest = {
        "description": "published TFLite Micro models (stateless ones): seeded full-range inputs and the "
        "outputs of each LiteRT kernel path; inputs and outputs by tensor index in the model's order",
        "references": {k: common.REFERENCES[k] for k in REFERENCES},
        "models": [],
    }
    for file in MODELS:
        original = open(os.path.join(root, "tflite_micro", file), "rb").read()
        model_bytes, patched = litert_copy(original)
        interp = litert.Interpreter(model_content=model_bytes)
        interp.allocate_tensors()
        in_details, out_details = interp.get_input_details(), interp.get_output_details()
        stem = file[: -len(".tflite")]
        entry = {
            "model": f"tflite_micro/{file}",
            "sha256": common.sha256(original),
            "litert_copy": (f"{patched} rank-1 tensors' quantized_dimension set to 0" if patched
                            else "unchanged"),
            "op_histogram": common.op_histogram(original),
            "runs": [],
        }
        rng = np.random.default_rng(SEED)
        for run in range(RUNS):
            inputs = [full_range(rng, d) for d in in_details]
            run_entry = {"name": f"run{run}", "inputs": [], "outputs": {}}
            for i, array in enumerate(inputs):
                rel = f"tflite_micro/refs/{stem}/run{run}.input.{i}.npy"
                common.write_npy(os.path.join(out_dir, rel), array)
                run_entry["inputs"].append(rel)
            for ref in REFERENCES:
                outs = run_by_index(ref, model_bytes, inputs)
                files = []
                for i, array in enumerate(outs):
                    rel = f"tflite_micro/refs/{stem}/run{run}.{ref}.{i}.npy"
                    common.write_npy(os.path.join(out_dir, rel), array)
                    files.append(rel)
                run_entry["outputs"][ref] = files
            entry["runs"].append(run_entry)
        manifest["models"].append(entry)
        log(f"[published] {file}: {RUNS} runs x {len(REFERENCES)} references"
            + (f" (LiteRT copy: {entry['litert_copy']})" if patched else ""))
    common.write_json(os.path.join(out_dir, "tflite_micro", "refs", "manifest.json"), manifest)
    return manifest
