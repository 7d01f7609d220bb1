#!/usr/bin/env python3
"""Classify with a .tflite model on qneon, on LiteRT, or on both.

The script is written against TFLite's Python API: the runtime is chosen
by one flag (``--runtime``), and the only line that differs is the import.
With ``--runtime both`` it runs the model on each, prints whether every
output is equal byte for byte, and each one's time per invoke.

  python examples/python/label_image.py --model models/nets/mobilenet_v1_025_96.tflite \\
      --input models/nets/refs/mobilenet_v1_025_96/run0.input.0.npy --runtime both

Without ``--input`` a seeded random input is used.
"""

import argparse
import time

import numpy as np


def load_interpreter(runtime, model, resolver):
    if runtime == "qneon":
        from qneon.interpreter import Interpreter, OpResolverType
    else:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    return Interpreter(model_path=model, num_threads=1,
                       experimental_op_resolver_type=OpResolverType[resolver])


def run(runtime, args, inputs):
    interpreter = load_interpreter(runtime, args.model, args.resolver)
    interpreter.allocate_tensors()
    details = interpreter.get_input_details()
    for d, x in zip(details, inputs):
        interpreter.set_tensor(d["index"], x)
    interpreter.invoke()  # the first invoke, not timed
    start = time.perf_counter()
    for _ in range(args.reps):
        interpreter.invoke()
    seconds = (time.perf_counter() - start) / args.reps
    outputs = [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
    return outputs, seconds


def make_inputs(args):
    # The input details are the same on both runtimes (the tests check it):
    # read them from qneon's, which needs no delegate.
    from qneon.interpreter import Interpreter

    details = Interpreter(model_path=args.model).get_input_details()
    if args.input:
        arrays = [np.load(path) for path in args.input]
        return [a.reshape(d["shape"]).astype(d["dtype"]) for a, d in zip(arrays, details)]
    rng = np.random.default_rng(args.seed)
    inputs = []
    for d in details:
        info = np.iinfo(d["dtype"])
        inputs.append(rng.integers(info.min, info.max, size=d["shape"], endpoint=True)
                      .astype(d["dtype"]))
    return inputs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the .tflite file")
    parser.add_argument("--input", action="append", help=".npy input (once per model input)")
    parser.add_argument("--runtime", choices=["qneon", "litert", "both"], default="qneon")
    parser.add_argument("--resolver", default="AUTO",
                        choices=["AUTO", "BUILTIN", "BUILTIN_REF",
                                 "BUILTIN_WITHOUT_DEFAULT_DELEGATES"],
                        help="TFLite's op resolver type (qneon: whose bytes to give)")
    parser.add_argument("--reps", type=int, default=10, help="timed invokes")
    parser.add_argument("--top", type=int, default=3, help="classes to print")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    inputs = make_inputs(args)
    runtimes = ["qneon", "litert"] if args.runtime == "both" else [args.runtime]
    results = {name: run(name, args, inputs) for name in runtimes}
    for name, (outputs, seconds) in results.items():
        scores = outputs[0].reshape(-1)
        top = np.argsort(-scores.astype(np.int64), kind="stable")[: args.top]
        print("{}: {:.3f} ms per invoke; top {}: {}".format(
            name, seconds * 1e3, args.top,
            ", ".join("class {} ({})".format(int(i), scores[i]) for i in top)))
    if len(results) == 2:
        (ours, _), (theirs, _) = results["qneon"], results["litert"]
        equal = all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(ours, theirs))
        print("outputs equal: {}".format(equal))
        return 0 if equal else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
