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
    generate_svdf(root, out_dir, log)
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


# Single-op SVDFs for the runtime's SVDF tests: keyword_scrambled's first
# SVDF operator (int8 input, int16 time weights and state, RELU option)
# cut out with its five tensors, then given seeded weights and scales and
# the shapes below. Each case is run as sequences of SVDF_STEPS invokes on
# one interpreter. int8 state is TFLite Micro's alone (LiteRT 2.3 corrupts
# its heap on it), so every case here has int16 state; LiteRT's integer
# SVDF fails to invoke unless the fused activation is RELU, so every case
# has RELU.
# (name, batch, input_size, units, rank, memory, bias, fused activation, input zero point)
SVDF_CASES = [
    ("svdf_b1_i96_u64_r1_m8", 1, 96, 64, 1, 8, True, 1, -128),
    ("svdf_b2_i20_u6_r2_m4", 2, 20, 6, 2, 4, True, 1, 3),
    ("svdf_b3_i7_u5_r3_m10_nobias", 3, 7, 5, 3, 10, False, 1, 0),
    ("svdf_b1_i16_u4_r4_m1", 1, 16, 4, 4, 1, True, 1, -5),
    ("svdf_b2_i33_u3_r1_m32", 2, 33, 3, 1, 32, True, 1, 17),
]
SVDF_STEPS = 4
SVDF_SEQUENCES = 2
SVDF_SEED = 2727


def svdf_model(original, case, rng, mutate=None):
    """keyword_scrambled's first SVDF alone, reshaped and re-weighted;
    `mutate(model, op, tensors)` breaks it for the malformed cases."""
    import copy

    name, batch, input_size, units, rank, memory, with_bias, activation, input_zp = case
    filters = units * rank
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(original))
    sg = model.subgraphs[0]
    op = copy.deepcopy(sg.operators[1])
    x, wf, wt, bias, state = [int(i) for i in op.inputs]
    y = int(op.outputs[0])
    op.builtinOptions.rank = rank
    op.builtinOptions.fusedActivationFunction = activation
    if not with_bias:
        op.inputs = np.array([x, wf, wt, -1, state], dtype=np.int32)
    sg.operators = [op]
    sg.inputs = np.array([x], dtype=np.int32)
    sg.outputs = np.array([y], dtype=np.int32)
    model.signatureDefs = []
    # Scales that keep a step's values inside the types: the feature dot
    # product of about sqrt(input_size) * 64 * 64 lands near 2,000 state
    # steps, the time sums near 40 output steps.
    s_x, s_wf, s_wt = 0.05, 0.01, 0.0005
    s_state = s_x * s_wf * (input_size ** 0.5) * 4096 / 2000
    s_y = s_state * s_wt * ((memory * rank) ** 0.5) * 2000 * 8000 / 40
    tensors = sg.tensors

    def set_tensor(t, shape, scale, zero_point, data=None):
        tensors[t].shape = np.array(shape, dtype=np.int32)
        tensors[t].shapeSignature = None
        tensors[t].quantization.scale = np.array([scale], dtype=np.float32)
        tensors[t].quantization.zeroPoint = np.array([zero_point], dtype=np.int64)
        if data is not None:
            model.buffers[tensors[t].buffer].data = np.frombuffer(data.tobytes(), dtype=np.uint8)

    set_tensor(x, [batch, input_size], s_x, input_zp)
    set_tensor(wf, [filters, input_size], s_wf, 0,
               rng.integers(-127, 127, size=(filters, input_size), endpoint=True).astype(np.int8))
    set_tensor(wt, [filters, memory], s_wt, 0,
               rng.integers(-8000, 8000, size=(filters, memory), endpoint=True).astype(np.int16))
    # LiteRT and TFLite Micro expect the bias in units of s_state * s_wt.
    set_tensor(bias, [units], float(np.float32(s_state) * np.float32(s_wt)), 0,
               rng.integers(-20000, 20000, size=(units,), endpoint=True).astype(np.int32))
    set_tensor(state, [batch, memory * filters], s_state, 0)
    set_tensor(y, [batch, units], s_y, int(rng.integers(-20, 20, endpoint=True)))
    if mutate is not None:
        mutate(model, op, {"input": x, "weights_feature": wf, "weights_time": wt, "bias": bias,
                           "state": state, "output": y})
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


def _set(field, value):
    def mutate(model, op, t):
        setattr(op.builtinOptions, field, value)
    return mutate


def _tensor(name, **changes):
    def mutate(model, op, t):
        tensor = model.subgraphs[0].tensors[t[name]]
        for key, value in changes.items():
            if key == "shape":
                tensor.shape = np.array(value, dtype=np.int32)
            elif key == "scale":
                tensor.quantization.scale = np.array([value], dtype=np.float32)
            else:
                setattr(tensor, key, value)
    return mutate


# Models TFLite's SVDF Prepare refuses, cut from the svdf_b2_i20_u6_r2_m4
# case (batch 2, input 20, 12 filters, rank 2, memory 4) and broken one way
# each; the runtime must refuse each with an error naming SVDF and the
# words listed. (name, mutation, words)
SVDF_MALFORMED = [
    ("rank_0", _set("rank", 0), ["SVDF", "rank 0"]),
    ("rank_5", _set("rank", 5), ["SVDF", "not a multiple of rank 5"]),
    ("activation_none", _set("fusedActivationFunction", 0), ["SVDF", "requires RELU"]),
    ("state_not_variable", _tensor("state", isVariable=False), ["SVDF", "state", "not a variable"]),
    ("state_shape", _tensor("state", shape=[2, 47]), ["SVDF", "state", "[2, 47]", "[2, 48]"]),
    ("bias_shape", _tensor("bias", shape=[2, 3]), ["SVDF", "bias", "[2, 3]", "[6]"]),
    ("bias_scale", _tensor("bias", scale=1.0), ["SVDF", "bias", "scale"]),
    ("time_weights_rows", _tensor("weights_time", shape=[6, 8]), ["SVDF", "time weights", "6 rows"]),
    ("feature_columns", _tensor("weights_feature", shape=[24, 10]), ["SVDF", "columns"]),
    ("output_shape", _tensor("output", shape=[2, 5]), ["SVDF", "output", "[2, 6]"]),
    ("state_int8_time_int16", _tensor("state", type=9), ["SVDF", "no kernel for dtypes"]),
]


def generate_svdf(root, out_dir, log=print):
    original = open(os.path.join(root, "tflite_micro", "keyword_scrambled.tflite"), "rb").read()
    manifest = {
        "description": "single-op SVDF models cut from keyword_scrambled's first SVDF (int8 input, "
        "int16 time weights and state) with seeded weights, scales and shapes; per case "
        f"{SVDF_SEQUENCES} sequences of {SVDF_STEPS} invokes on one interpreter without reset, "
        "full-range inputs, the outputs of each LiteRT kernel path after each step",
        "references": {k: common.REFERENCES[k] for k in REFERENCES},
        "cases": [],
    }
    rng = np.random.default_rng(SVDF_SEED)
    for case in SVDF_CASES:
        name, batch, input_size, units, rank, memory, with_bias, activation, input_zp = case
        model_bytes = svdf_model(original, case, rng)
        rel_model = f"tflite_micro/refs/svdf/{name}.tflite"
        common.write_bytes(os.path.join(out_dir, rel_model), model_bytes)
        interp = litert.Interpreter(model_content=model_bytes)
        interp.allocate_tensors()
        in_details = interp.get_input_details()
        entry = {"name": name, "model": rel_model, "batch": batch, "input_size": input_size,
                 "units": units, "rank": rank, "memory": memory, "bias": with_bias,
                 "fused_activation": activation, "sequences": []}
        for s in range(SVDF_SEQUENCES):
            steps = [[full_range(rng, d) for d in in_details] for _ in range(SVDF_STEPS)]
            per_ref = {ref: run_sequence(ref, model_bytes, steps) for ref in REFERENCES}
            seq = {"name": f"seq{s}", "steps": []}
            for k, inputs in enumerate(steps):
                step = {"inputs": [], "outputs": {}}
                rel = f"tflite_micro/refs/svdf/{name}/seq{s}.step{k}.input.0.npy"
                common.write_npy(os.path.join(out_dir, rel), inputs[0])
                step["inputs"].append(rel)
                for ref in REFERENCES:
                    rel = f"tflite_micro/refs/svdf/{name}/seq{s}.step{k}.{ref}.0.npy"
                    common.write_npy(os.path.join(out_dir, rel), per_ref[ref][k][0])
                    step["outputs"][ref] = [rel]
                seq["steps"].append(step)
            entry["sequences"].append(seq)
        manifest["cases"].append(entry)
        log(f"[published] {name}: {SVDF_SEQUENCES} sequences of {SVDF_STEPS} steps")
    base = next(c for c in SVDF_CASES if c[0] == "svdf_b2_i20_u6_r2_m4")
    manifest["malformed"] = []
    for name, mutate, words in SVDF_MALFORMED:
        rel = f"tflite_micro/refs/svdf/malformed/{name}.tflite"
        common.write_bytes(os.path.join(out_dir, rel),
                           svdf_model(original, base, np.random.default_rng(SVDF_SEED), mutate))
        manifest["malformed"].append({"name": name, "model": rel, "words": words})
    log(f"[published] {len(SVDF_MALFORMED)} malformed SVDFs")
    common.write_json(os.path.join(out_dir, "tflite_micro", "refs", "svdf", "manifest.json"), manifest)
    return manifest
