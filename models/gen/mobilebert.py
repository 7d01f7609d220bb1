"""MobileBert SQuAD models (24 layers and 1 layer) with seeded random weights,
converted to full-integer .tflite, with seeded inputs and reference outputs."""

import hashlib
import os
import time

import common
import numpy as np
import tensorflow as tf
from transformers import MobileBertConfig, TFMobileBertForQuestionAnswering

SEQ_LEN = 384
WEIGHT_SEED = 2019
CALIBRATION_SEED = 7
INPUT_SEED = 11
CALIBRATION_SAMPLES = 8
# BERT's special tokens: [CLS], [SEP]; [PAD] is id 0.
CLS, SEP = 101, 102
# Multiplies the word, position and token-type embeddings, and damps every
# layer's output NoNorm (see scale_for_depth).
EMBEDDING_GAIN = 300.0
LAYER_OUTPUT_GAIN = 0.62

REFERENCES = ["litert_ref", "litert_builtin", "litert_xnnpack", "tf219_ref", "tf219_builtin", "float_keras"]

# The reference input sets: (name, valid tokens, question tokens). Tokens past
# `valid` are padding: id 0, token type 0, attention mask 0.
INPUT_CASES = [("case0_full", SEQ_LEN, 24), ("case1_padded", 200, 16), ("case2_short", 57, 9)]


def token_batch(rng, valid, question):
    """One [1, SEQ_LEN] sample: [CLS] question [SEP] context [SEP] then padding."""
    ids = np.zeros(SEQ_LEN, np.int32)
    ids[:valid] = rng.integers(1000, 30522, size=valid)
    ids[0] = CLS
    ids[question + 1] = SEP
    ids[valid - 1] = SEP
    types = np.zeros(SEQ_LEN, np.int32)
    types[question + 2 : valid] = 1
    mask = np.zeros(SEQ_LEN, np.int32)
    mask[:valid] = 1
    return {"input_ids": ids[None], "attention_mask": mask[None], "token_type_ids": types[None]}


def calibration_samples():
    """Half full-length, half padded: without padded samples the mask path
    ((1 - mask) * -10000) is calibrated on zeros alone, its scale becomes
    ~1e-8 and padding stops masking."""
    rng = np.random.default_rng(CALIBRATION_SEED)
    samples = []
    for i in range(CALIBRATION_SAMPLES):
        valid = SEQ_LEN if i % 2 == 0 else int(rng.integers(48, 320))
        question = int(rng.integers(8, 40))
        samples.append(token_batch(rng, valid, question))
    return samples


def input_sets():
    rng = np.random.default_rng(INPUT_SEED)
    return [(name, token_batch(rng, valid, question)) for name, valid, question in INPUT_CASES]


def scale_for_depth(model):
    """NoNorm has no normalization: with the library's initializers the hidden
    state grows about 1.6x per layer (std ~1e4 at layer 24, one-hot attention)
    while the first layers see activations of ~0.1 (uniform attention). A
    trained model learns gains that keep it in range; here the embeddings are
    multiplied by EMBEDDING_GAIN and each layer's output NoNorm by
    LAYER_OUTPUT_GAIN, which keeps the hidden state std near 9 in every layer
    and attention rows peaked but not one-hot."""
    for v in model.weights:
        name = v.name
        if "/embeddings/" in name and name.split("/embeddings/")[1].split("/")[0] in (
            "word_embeddings",
            "position_embeddings",
            "token_type_embeddings",
        ):
            v.assign(v * EMBEDDING_GAIN)
        elif "/output/bottleneck/LayerNorm/weight" in name:
            v.assign(v * LAYER_OUTPUT_GAIN)


def perturb_constants(model, rng):
    """The library initializes NoNorm weights to 1 and every bias to 0; the
    converter then deletes those MUL / ADD ops. A trained checkpoint has none
    of these constants, so each constant-initialized variable gets seeded
    noise: gains 1 + 0.1 z, biases 0.02 z (z standard normal truncated at 2)."""
    for v in model.weights:
        a = v.numpy()
        if a.size > 1 and np.all(a == a.flat[0]):
            z = np.clip(rng.standard_normal(a.shape), -2.0, 2.0)
            a = a + (0.1 if a.flat[0] != 0.0 else 0.02) * z
            v.assign(a.astype(np.float32))


def build(num_layers):
    common.seed_everything(WEIGHT_SEED)
    config = MobileBertConfig(num_hidden_layers=num_layers)
    model = TFMobileBertForQuestionAnswering(config)
    sample = token_batch(np.random.default_rng(0), SEQ_LEN, 8)
    model(**{k: tf.constant(v) for k, v in sample.items()}, training=False)
    perturb_constants(model, np.random.default_rng(WEIGHT_SEED))
    scale_for_depth(model)
    digest = hashlib.sha256()
    for v in model.weights:
        digest.update(v.name.encode())
        digest.update(v.numpy().tobytes())
    return model, digest.hexdigest()


def serving_function(model):
    spec = [tf.TensorSpec([1, SEQ_LEN], tf.int32, name=n) for n in ("input_ids", "attention_mask", "token_type_ids")]

    @tf.function(input_signature=spec)
    def serve(input_ids, attention_mask, token_type_ids):
        out = model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            training=False,
        )
        return {"start_logits": out.start_logits, "end_logits": out.end_logits}

    return serve


def float_outputs(model, inputs):
    out = model(**{k: tf.constant(v) for k, v in inputs.items()}, training=False)
    return {"start_logits": out.start_logits.numpy(), "end_logits": out.end_logits.numpy()}


def attention_stats(model, inputs):
    """Per layer: mean over rows of the largest attention probability, and the
    hidden state's standard deviation (printed, to show the model's regime)."""
    out = model(**{k: tf.constant(v) for k, v in inputs.items()}, training=False,
                output_attentions=True, output_hidden_states=True)
    return [(float(a.numpy().max(-1).mean()), float(h.numpy().std()))
            for a, h in zip(out.attentions, out.hidden_states[1:])]


def generate(out_dir, layer_counts=(24, 1), log=print):
    data_dir = os.path.join(out_dir, "mobilebert_squad")
    inputs = input_sets()
    manifest = {
        "description": "MobileBert SQuAD (TFMobileBertForQuestionAnswering, MobileBertConfig() defaults, "
        "seeded random weights), full-integer quantized by tf.lite.TFLiteConverter",
        "sequence_length": SEQ_LEN,
        "references": {k: common.REFERENCES[k] for k in REFERENCES},
        "inputs": {},
        "models": {},
    }
    for name, batch in inputs:
        files = {}
        for k, v in batch.items():
            rel = f"mobilebert_squad/inputs/{name}.{k}.npy"
            common.write_npy(os.path.join(out_dir, rel), v)
            files[k] = rel
        manifest["inputs"][name] = files

    for layers in layer_counts:
        tag = f"{layers}l"
        t0 = time.time()
        model, weights_sha = build(layers)
        serve = serving_function(model)
        concrete = serve.get_concrete_function()
        t1 = time.time()
        tfl = common.convert(concrete, model, calibration_samples)
        t2 = time.time()
        rel_model = f"mobilebert_squad_{tag}.tflite"
        common.write_bytes(os.path.join(out_dir, rel_model), tfl)
        hist = common.op_histogram(tfl)
        log(f"[{tag}] build {t1 - t0:.1f} s, convert {t2 - t1:.1f} s, {len(tfl)} bytes, "
            f"{sum(hist.values())} ops, weights sha256 {weights_sha[:16]}")
        for key, n in hist.items():
            log(f"[{tag}]   {n:5d} {key}")
        stats = attention_stats(model, inputs[0][1])
        log(f"[{tag}] float, {inputs[0][0]}: per layer (max attention prob row mean, hidden std): "
            + " ".join(f"{p:.2f}/{s:.3g}" for p, s in stats))
        entry = {
            "model": rel_model,
            "num_hidden_layers": layers,
            "sha256": common.sha256(tfl),
            "float_weights_sha256": weights_sha,
            "op_histogram": hist,
            "op_totals": common.op_totals(hist),
            "tensors": common.tensor_details(tfl),
            "outputs": {},
        }
        for case, batch in inputs:
            per_ref = {}
            for ref in REFERENCES:
                if ref == "float_keras":
                    out = float_outputs(model, batch)
                else:
                    out = common.run_interpreter(ref, tfl, batch)
                files = {}
                for oname in ("start_logits", "end_logits"):
                    rel = f"mobilebert_squad/{tag}/{case}.{ref}.{oname}.npy"
                    common.write_npy(os.path.join(out_dir, rel), out[oname].astype(np.float32))
                    files[oname] = rel
                per_ref[ref] = files
            entry["outputs"][case] = per_ref
        manifest["models"][tag] = entry
        log(f"[{tag}] references done in {time.time() - t2:.1f} s")
        del model
        tf.keras.backend.clear_session()
    common.write_json(os.path.join(data_dir, "manifest.json"), manifest)
    return manifest
