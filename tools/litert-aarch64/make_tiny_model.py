"""Builds tiny_dense_softmax.tflite, the small full-integer int8 model that
`cargo xtask compare` measures when no --model is given: a seeded Keras
Dense(64 -> 32, relu), Dense(32 -> 16) and softmax, converted with int8
inputs, outputs and kernels (a calibration set drawn from the same seed).

Runs on the host with `tensorflow-cpu` 2.19 installed (not under qemu):

    python3 make_tiny_model.py OUT.tflite
"""

import sys

import numpy as np
import tensorflow as tf

SEED = 12


def build():
    tf.keras.utils.set_random_seed(SEED)
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(64,), batch_size=1, name="features"),
            tf.keras.layers.Dense(32, activation="relu", name="hidden"),
            tf.keras.layers.Dense(16, name="logits"),
            tf.keras.layers.Softmax(name="probabilities"),
        ]
    )
    calibration = np.random.default_rng(SEED).standard_normal((64, 1, 64)).astype(np.float32)

    def representative_dataset():
        for sample in calibration:
            yield [sample]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative_dataset
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    return converter.convert()


def main(argv):
    if len(argv) != 1:
        raise SystemExit("usage: make_tiny_model.py OUT.tflite")
    with open(argv[0], "wb") as f:
        f.write(build())


if __name__ == "__main__":
    main(sys.argv[1:])
