"""Whole CNNs made here: the shapes of the int8 vision and keyword models
people deploy, built from Keras layers with seeded weights (no downloads)
and full-integer quantized by TensorFlow's converter (int8 inputs and
outputs). Small inputs and 10 classes keep them quick to run in tests; the
layer structure is the published architectures'.

Writes `nets/<name>.tflite` and `nets/refs/`: per model two seeded
full-range input sets and each LiteRT kernel path's outputs on them, by
tensor index in the model's order (as `published.py` does).
"""

import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

import common
import published

REFERENCES = ["litert_ref", "litert_xnnpack"]
RUNS = 2
SEED = 2026
CLASSES = 10
CALIBRATION_SAMPLES = 16

layers = tf.keras.layers


def mobilenet_v1():
    """MobileNet v1, width 0.25, 96x96x3 (as person_detect, in colour)."""
    return tf.keras.applications.MobileNet(
        input_shape=(96, 96, 3), alpha=0.25, weights=None, classes=CLASSES, dropout=0.0)


def mobilenet_v3_small():
    """MobileNetV3-small (hard-swish, squeeze-and-excitation), 96x96x3."""
    return tf.keras.applications.MobileNetV3Small(
        input_shape=(96, 96, 3), alpha=1.0, weights=None, classes=CLASSES, dropout_rate=0.0,
        include_preprocessing=False)


def efficientnet_lite0():
    """EfficientNet-lite0's shape: MBConv blocks (1x1 expansion, 3x3 or 5x5
    depthwise, 1x1 projection, residual ADD) with RELU6 and no
    squeeze-and-excitation, its stage table at half the repeats, 96x96x3."""
    x = inputs = layers.Input((96, 96, 3))

    def conv_bn(x, filters, kernel, stride=1, act=True):
        x = layers.Conv2D(filters, kernel, stride, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        return layers.ReLU(6.0)(x) if act else x

    x = conv_bn(x, 32, 3, 2)
    # (expansion, channels, repeats, stride, kernel): lite0's stages, with
    # repeats 1, 1, 1, 2, 2, 2, 1 (lite0: 1, 2, 2, 3, 3, 4, 1).
    stages = [(1, 16, 1, 1, 3), (6, 24, 1, 2, 3), (6, 40, 1, 2, 5), (6, 80, 2, 2, 3),
              (6, 112, 2, 1, 5), (6, 192, 2, 2, 5), (6, 320, 1, 1, 3)]
    channels = 32
    for expansion, out, repeats, stride, kernel in stages:
        for r in range(repeats):
            s = stride if r == 0 else 1
            y = x
            if expansion != 1:
                y = conv_bn(y, channels * expansion, 1)
            y = layers.DepthwiseConv2D(kernel, s, padding="same", use_bias=False)(y)
            y = layers.BatchNormalization()(y)
            y = layers.ReLU(6.0)(y)
            y = conv_bn(y, out, 1, act=False)
            x = layers.Add()([x, y]) if s == 1 and channels == out else y
            channels = out
    x = conv_bn(x, 640, 1)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(CLASSES, activation="softmax")(x)
    return tf.keras.Model(inputs, x, name="efficientnet_lite0_shaped")


def ds_cnn():
    """DS-CNN (the keyword spotter of "Hello Edge"): a 10x4 stride-2 CONV_2D
    over 49 frames x 10 MFCCs, four depthwise-separable blocks of 64
    channels, average pooling over the whole map, FULLY_CONNECTED, SOFTMAX
    (12 keywords)."""
    x = inputs = layers.Input((49, 10, 1))
    x = layers.Conv2D(64, (10, 4), (2, 2), padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    for _ in range(4):
        x = layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
        x = layers.Conv2D(64, 1, use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
    x = layers.AveragePooling2D(pool_size=(25, 5))(x)
    x = layers.Flatten()(x)
    x = layers.Dense(12, activation="softmax")(x)
    return tf.keras.Model(inputs, x, name="ds_cnn")


def yolov8n():
    """A YOLOv8n-shaped detector, 96x96x3, width 1/4: CONV_2D + BN + SiLU
    (x * sigmoid(x): LOGISTIC, MUL) blocks, C2f blocks (split, bottlenecks,
    CONCATENATION), SPPF (three 5x5 MAX_POOL_2D, CONCATENATION), an FPN /
    PAN neck (2x RESIZE_NEAREST_NEIGHBOR, CONCATENATION) and a
    decoupled head per scale: box logits through the DFL SOFTMAX over 16
    bins and the integral, class scores through LOGISTIC (the outputs a
    threshold filters)."""
    x = inputs = layers.Input((96, 96, 3))

    def conv(x, c, k=3, s=1):
        x = layers.Conv2D(c, k, s, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        return layers.Multiply()([x, layers.Activation("sigmoid")(x)])

    def c2f(x, c, n, shortcut=True):
        x = conv(x, c, 1)
        a, b = layers.Lambda(lambda t: tf.split(t, 2, axis=-1))(x)
        parts = [a, b]
        for _ in range(n):
            y = conv(conv(parts[-1], c // 2), c // 2)
            parts.append(layers.Add()([parts[-1], y]) if shortcut else y)
        return conv(layers.Concatenate()(parts), c, 1)

    def sppf(x, c):
        x = conv(x, c // 2, 1)
        p1 = layers.MaxPooling2D(5, 1, padding="same")(x)
        p2 = layers.MaxPooling2D(5, 1, padding="same")(p1)
        p3 = layers.MaxPooling2D(5, 1, padding="same")(p2)
        return conv(layers.Concatenate()([x, p1, p2, p3]), c, 1)

    x = conv(x, 16, 3, 2)
    x = conv(x, 32, 3, 2)
    x = c2f(x, 32, 1)
    x = conv(x, 64, 3, 2)
    p3 = c2f(x, 64, 1)
    x = conv(p3, 96, 3, 2)
    p4 = c2f(x, 96, 1)
    x = conv(p4, 128, 3, 2)
    x = c2f(x, 128, 1)
    p5 = sppf(x, 128)
    up = layers.UpSampling2D(2, interpolation="nearest")(p5)
    n4 = c2f(layers.Concatenate()([up, p4]), 96, 1, shortcut=False)
    up = layers.UpSampling2D(2, interpolation="nearest")(n4)
    n3 = c2f(layers.Concatenate()([up, p3]), 64, 1, shortcut=False)
    down = conv(n3, 64, 3, 2)
    m4 = c2f(layers.Concatenate()([down, n4]), 96, 1, shortcut=False)
    bins = 16
    boxes, scores = [], []
    for feature in (n3, m4):
        b = conv(conv(feature, 32), 32)
        b = layers.Conv2D(4 * bins, 1)(b)
        b = layers.Reshape((-1, 4, bins))(b)
        # The DFL: a softmax over each side's 16 bins, then its mean bin.
        b = layers.Softmax(axis=-1)(b)
        b = layers.Dense(1, use_bias=False, kernel_initializer=tf.keras.initializers.Constant(
            np.arange(bins, dtype=np.float32)[:, None]))(b)
        boxes.append(layers.Reshape((-1, 4))(b))
        c = conv(conv(feature, 32), 32)
        c = layers.Conv2D(CLASSES, 1)(c)
        scores.append(layers.Reshape((-1, CLASSES))(c))
    boxes = layers.Concatenate(axis=1)(boxes)
    scores = layers.Activation("sigmoid")(layers.Concatenate(axis=1)(scores))
    return tf.keras.Model(inputs, [boxes, scores], name="yolov8n_shaped")


def deeplab_v3():
    """A DeepLab v3-shaped segmenter, 96x96x3: a MobileNetV2-style encoder
    (inverted residuals, RELU6) to output stride 16, ASPP (a 1x1 branch,
    dilated 3x3 branches at rates 2 and 4, and an image-pooling branch:
    MEAN, 1x1 CONV_2D, RESIZE_BILINEAR back), and a decoder that upsamples by
    RESIZE_BILINEAR to the input size (8 classes per pixel)."""
    x = inputs = layers.Input((96, 96, 3))

    def conv_bn(x, c, k=1, s=1, rate=1, act=True):
        x = layers.Conv2D(c, k, s, padding="same", dilation_rate=rate, use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        return layers.ReLU(6.0)(x) if act else x

    def inverted(x, c, s, expansion=6):
        y = conv_bn(x, x.shape[-1] * expansion)
        y = layers.DepthwiseConv2D(3, s, padding="same", use_bias=False)(y)
        y = layers.BatchNormalization()(y)
        y = layers.ReLU(6.0)(y)
        y = conv_bn(y, c, act=False)
        return layers.Add()([x, y]) if s == 1 and x.shape[-1] == c else y

    x = conv_bn(x, 16, 3, 2)
    for c, s in [(16, 1), (24, 2), (24, 1), (32, 2), (32, 1), (64, 2), (64, 1), (96, 1)]:
        x = inverted(x, c, s)
    size = x.shape[1:3]
    branches = [conv_bn(x, 64), conv_bn(x, 64, 3, rate=2), conv_bn(x, 64, 3, rate=4)]
    pooled = layers.GlobalAveragePooling2D(keepdims=True)(x)
    pooled = conv_bn(pooled, 64)
    branches.append(layers.Resizing(*size, interpolation="bilinear")(pooled))
    x = conv_bn(layers.Concatenate()(branches), 64)
    x = layers.Conv2D(8, 1)(x)
    x = layers.Resizing(96, 96, interpolation="bilinear")(x)
    return tf.keras.Model(inputs, x, name="deeplab_v3_shaped")


# Name, builder, what the converted model must hold.
NETS = [
    ("mobilenet_v1_025_96", mobilenet_v1, ["CONV_2D", "DEPTHWISE_CONV_2D", "SOFTMAX"]),
    ("mobilenet_v3_small_96", mobilenet_v3_small, ["CONV_2D", "DEPTHWISE_CONV_2D", "HARD_SWISH", "MUL"]),
    ("efficientnet_lite0_shaped_96", efficientnet_lite0, ["CONV_2D", "DEPTHWISE_CONV_2D", "ADD"]),
    ("ds_cnn_kws", ds_cnn, ["CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "FULLY_CONNECTED"]),
    ("yolov8n_shaped_96", yolov8n, ["CONV_2D", "LOGISTIC", "MUL", "CONCATENATION", "MAX_POOL_2D",
                                    "RESIZE_NEAREST_NEIGHBOR", "SOFTMAX"]),
    ("deeplab_v3_shaped_96", deeplab_v3, ["CONV_2D", "DEPTHWISE_CONV_2D", "MEAN", "RESIZE_BILINEAR",
                                          "CONCATENATION"]),
]


def convert(model, seed):
    """Full-integer int8 conversion, calibrated on seeded uniform inputs in
    [-1, 1]."""
    shape = model.input_shape[1:]
    rng = np.random.default_rng(seed)
    samples = [rng.uniform(-1.0, 1.0, size=(1, *shape)).astype(np.float32)
               for _ in range(CALIBRATION_SAMPLES)]
    # A batch of 1, fixed: the graph then needs no shape arithmetic (a
    # Keras reshape of an unknown batch converts to SHAPE / PACK ops).
    fn = tf.function(lambda x: model(x, training=False))
    concrete = fn.get_concrete_function(tf.TensorSpec((1, *shape), tf.float32))
    conv = tf.lite.TFLiteConverter.from_concrete_functions([concrete], model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([s] for s in samples)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    return conv.convert()


def loads_in(reference, path):
    """Whether LiteRT's `reference` kernels prepare the model at `path`: in
    a child process, since a kernel that refuses one aborts the process
    (LiteRT 2.3's reference kernels do on some of these models)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import common; "
            "common.make_interpreter(sys.argv[2], open(sys.argv[3], 'rb').read())")
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-c", code, here, reference, path],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return done.returncode == 0


def generate(out_dir, log=print):
    manifest = {
        "description": "CNNs built here (Keras layers, seeded weights, 10 or 12 classes, small "
        "inputs), full-integer int8 by tf.lite.TFLiteConverter (tensorflow-cpu 2.19.1): seeded "
        "full-range inputs and each LiteRT kernel path's outputs; inputs and outputs by tensor "
        "index in the model's order",
        "references": {k: common.REFERENCES[k] for k in REFERENCES},
        "models": [],
    }
    for index, (name, build, expect) in enumerate(NETS):
        common.seed_everything(SEED + index)
        tflite = convert(build(), SEED + index)
        totals = common.op_totals(common.op_histogram(tflite))
        missing = [op for op in expect if op not in totals]
        if missing:
            raise RuntimeError(f"{name}: the converter made {totals}, without {missing}")
        rel_model = f"nets/{name}.tflite"
        common.write_bytes(os.path.join(out_dir, rel_model), tflite)
        references = [r for r in REFERENCES if loads_in(r, os.path.join(out_dir, rel_model))]
        interp = common.make_interpreter("litert_xnnpack", tflite)
        entry = {
            "model": rel_model,
            "sha256": common.sha256(tflite),
            "op_histogram": common.op_histogram(tflite),
            "aborts": {r: "the process aborts while LiteRT prepares the model" for r in REFERENCES
                       if r not in references},
            "runs": [],
        }
        rng = np.random.default_rng(SEED + 100 + index)
        for run in range(RUNS):
            inputs = [published.full_range(rng, d) for d in interp.get_input_details()]
            run_entry = {"name": f"run{run}", "inputs": [], "outputs": {}}
            for i, array in enumerate(inputs):
                rel = f"nets/refs/{name}/run{run}.input.{i}.npy"
                common.write_npy(os.path.join(out_dir, rel), array)
                run_entry["inputs"].append(rel)
            for ref in references:
                files = []
                for i, array in enumerate(published.run_by_index(ref, tflite, inputs)):
                    rel = f"nets/refs/{name}/run{run}.{ref}.{i}.npy"
                    common.write_npy(os.path.join(out_dir, rel), array)
                    files.append(rel)
                run_entry["outputs"][ref] = files
            entry["runs"].append(run_entry)
        manifest["models"].append(entry)
        log(f"[nets] {name}: {len(tflite)} bytes, " + ", ".join(f"{n} {op}" for op, n in totals.items()))
    common.write_json(os.path.join(out_dir, "nets", "refs", "manifest.json"), manifest)
    return manifest
