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

The stateful models (`STATEFUL`: variable tensors carry LSTM / SVDF state
from one invoke to the next) get sequences instead: per input set, STEPS
invokes on one interpreter without a reset, each step's inputs and every
reference's outputs, listed in `tflite_micro/refs/sequences.json` (the
stateless manifest stays as it was).
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
# The stateful published models: each input set is a sequence of STEPS invokes.
# keyword_scrambled_8bit is not here: LiteRT 2.3 corrupts its heap on it.
STATEFUL = [
    "trained_lstm_int8.tflite",
    "dtln_noise_suppression.tflite",
    "micro_speech_lstm.tflite",
    "keyword_scrambled.tflite",
]
STEPS = 3
# How each sequence draws its inputs: full range, then codes within NARROW of
# the zero point, then codes within NARROW of 0.
SEQUENCE_DRAWS = ["full_range", "near_zero_point", "near_code_zero"]
NARROW = 8
SEQUENCE_SEED = 27
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


def near_zero_point(rng, detail):
    """Uniform over the NARROW codes either side of the input's zero point
    (clipped to the type): full-range inputs saturate some of the recurrent
    models' outputs, which then no longer show their state."""
    info = np.iinfo(detail["dtype"])
    zero = int(detail["quantization"][1])
    low, high = max(info.min, zero - NARROW), min(info.max, zero + NARROW)
    return rng.integers(low, high, size=detail["shape"], endpoint=True, dtype=np.int64).astype(detail["dtype"])


def near_code_zero(rng, detail):
    """Uniform over the codes within NARROW of code 0 (the middle of a signed
    type's range, away from a zero point at its bottom)."""
    return rng.integers(-NARROW, NARROW, size=detail["shape"], endpoint=True, dtype=np.int64).astype(
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
    generate_sequences(root, out_dir, log)
    return manifest


def run_sequence(reference, model_bytes, steps):
    """One interpreter, invoked once per step in order with no reset between:
    the outputs of every step."""
    interp = common.make_interpreter(reference, model_bytes)
    outputs = []
    for inputs in steps:
        for d, array in zip(interp.get_input_details(), inputs):
            interp.set_tensor(d["index"], array)
        interp.invoke()
        outputs.append([np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()])
    return outputs


def generate_sequences(root, out_dir, log=print):
    manifest = {
        "description": "published TFLite Micro models with state (variable tensors): per input set a "
        f"sequence of {STEPS} invokes on one interpreter without reset; seeded inputs and "
        "the outputs of each LiteRT kernel path after each step; inputs and outputs by tensor index in "
        "the model's order. seq0 draws full-range inputs, seq1 codes within "
        f"{NARROW} of the input's zero point, seq2 codes within {NARROW} of 0. Step 0 is a single invoke from the initial (zero) state.",
        "references": {k: common.REFERENCES[k] for k in REFERENCES},
        "steps": STEPS,
        "models": [],
    }
    for file in STATEFUL:
        original = open(os.path.join(root, "tflite_micro", file), "rb").read()
        model_bytes, patched = litert_copy(original)
        interp = litert.Interpreter(model_content=model_bytes)
        interp.allocate_tensors()
        in_details = interp.get_input_details()
        stem = file[: -len(".tflite")]
        entry = {
            "model": f"tflite_micro/{file}",
            "sha256": common.sha256(original),
            "litert_copy": (f"{patched} rank-1 tensors' quantized_dimension set to 0" if patched
                            else "unchanged"),
            "op_histogram": common.op_histogram(original),
            "sequences": [],
        }
        rng = np.random.default_rng(SEQUENCE_SEED)
        for run, draw_name in enumerate(SEQUENCE_DRAWS):
            draw = globals()[draw_name]
            steps = [[draw(rng, d) for d in in_details] for _ in range(STEPS)]
            per_ref = {ref: run_sequence(ref, model_bytes, steps) for ref in REFERENCES}
            seq = {"name": f"seq{run}", "draw": draw_name, "steps": []}
            for k, inputs in enumerate(steps):
                step = {"inputs": [], "outputs": {}}
                for i, array in enumerate(inputs):
                    rel = f"tflite_micro/refs/{stem}/seq{run}.step{k}.input.{i}.npy"
                    common.write_npy(os.path.join(out_dir, rel), array)
                    step["inputs"].append(rel)
                for ref in REFERENCES:
                    files = []
                    for i, array in enumerate(per_ref[ref][k]):
                        rel = f"tflite_micro/refs/{stem}/seq{run}.step{k}.{ref}.{i}.npy"
                        common.write_npy(os.path.join(out_dir, rel), array)
                        files.append(rel)
                    step["outputs"][ref] = files
                seq["steps"].append(step)
            entry["sequences"].append(seq)
        manifest["models"].append(entry)
        log(f"[published] {file}: {len(SEQUENCE_DRAWS)} sequences of {STEPS} steps x {len(REFERENCES)} references"
            + (f" (LiteRT copy: {entry['litert_copy']})" if patched else ""))
    common.write_json(os.path.join(out_dir, "tflite_micro", "refs", "sequences.json"), manifest)
    return manifest
