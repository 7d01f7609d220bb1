"""Runs a .tflite model with LiteRT (the `ai-edge-litert` wheel) and saves
its outputs; meant to run under `qemu-aarch64` with the emulated aarch64
Python that `cargo xtask compare --setup` unpacks.

    run_litert.py --model M.tflite --resolver xnnpack|builtin|ref
                  [--input NAME_OR_INDEX=FILE.npy]... [--seed S]
                  [--invokes N] [--threads T] --out DIR
    run_litert.py --probe

An input given several files (--input 0=a.npy --input 0=b.npy ...) makes a
sequence: one invoke per file on the same interpreter (the state carried),
the outputs after step k in DIR/step<k>/.

Otherwise the model is loaded once and invoked N times on the same inputs; everything
else the script does is the same whatever N is, so the difference of the
instruction counts of an N run and a 2N run is the cost of N invocations.

DIR receives output_<i>.npy for every model output (after the last
invocation), input_<i>.npy for every input that was generated rather than
read from a file, and run.json describing both (names, dtypes, shapes,
quantization, files).

--threads T is the interpreter's num_threads (default 1): XNNPACK then
splits each operator over a pthreadpool of T threads, the calling one
included, each a guest thread of its own under qemu.

--probe prints, as JSON, the AT_HWCAP / AT_HWCAP2 words and the MIDR_EL1
value the emulated CPU reports, which the xtask turns into the
/proc/cpuinfo that XNNPACK's CPU detection reads.
"""

import argparse
import gc
import itertools
import json
import os
import struct
import sys

# Linux auxiliary vector keys (elf.h).
AT_HWCAP = 16
AT_HWCAP2 = 26


def probe():
    """The emulated CPU's hwcap words and MIDR_EL1, as a dict."""
    hwcap = {AT_HWCAP: 0, AT_HWCAP2: 0}
    with open("/proc/self/auxv", "rb") as f:
        auxv = f.read()
    for offset in range(0, len(auxv) - 15, 16):
        key, value = struct.unpack_from("<QQ", auxv, offset)
        if key in hwcap:
            hwcap[key] = value
    return {
        "hwcap": hwcap[AT_HWCAP],
        "hwcap2": hwcap[AT_HWCAP2],
        "midr": read_midr(),
    }


def read_midr():
    """MIDR_EL1, read the way user space may on Linux (the kernel, and
    qemu's user mode, emulate EL0 reads of the ID registers when hwcap
    `cpuid` is set): a two-instruction function in an executable page."""
    import ctypes
    import mmap

    mrs_x0_midr_el1 = 0xD5380000
    ret = 0xD65F03C0
    page = mmap.mmap(
        -1,
        mmap.PAGESIZE,
        prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC,
    )
    page.write(struct.pack("<II", mrs_x0_midr_el1, ret))
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    return ctypes.CFUNCTYPE(ctypes.c_uint64)(address)()


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--model")
    parser.add_argument(
        "--resolver", choices=["xnnpack", "builtin", "ref"], default="xnnpack"
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME_OR_INDEX=FILE.npy",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--invokes", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if not args.probe:
        if not args.model or not args.out:
            parser.error("--model and --out are required (or give --probe)")
        if args.invokes < 1:
            parser.error("--invokes must be at least 1")
        if args.threads < 1:
            parser.error("--threads must be at least 1")
        if not 0 <= args.seed < 2**64:
            parser.error("--seed must be in 0 .. 2**64 - 1")
    return args


def make_interpreter(model, resolver, threads):
    from ai_edge_litert import interpreter as litert

    kinds = {
        # The default delegates (XNNPACK) over the optimized builtin kernels.
        "xnnpack": litert.OpResolverType.BUILTIN,
        "builtin": litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        "ref": litert.OpResolverType.BUILTIN_REF,
    }
    return litert.Interpreter(
        model_path=model,
        num_threads=threads,
        experimental_op_resolver_type=kinds[resolver],
    )


def quantization(detail):
    q = detail["quantization_parameters"]
    return {
        "scales": [float(s) for s in q["scales"]],
        "zero_points": [int(z) for z in q["zero_points"]],
        "quantized_dimension": int(q["quantized_dimension"]),
    }


def describe(detail, file):
    return {
        "index": int(detail["index"]),
        "name": detail["name"],
        "dtype": detail["dtype"].__name__,
        "shape": [int(d) for d in detail["shape"]],
        "quantization": quantization(detail),
        "file": file,
    }


def splitmix64(np, seed, start, count):
    """Outputs start+1 ... start+count of SplitMix64 seeded with `seed`
    (its k-th output mixes seed + k * 0x9E3779B97F4A7C15), as uint64.

    numpy.random is avoided on purpose: importing it seeds numpy's global
    generator from OS entropy, and the instructions that takes vary from
    run to run, which would make counts unrepeatable. This generator is
    also easy to reproduce outside Python."""
    with np.errstate(over="ignore"):
        k = np.arange(start + 1, start + count + 1, dtype=np.uint64)
        z = np.uint64(seed) + k * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def random_input(np, bits, detail):
    """Values valid for the tensor from 64-bit random words `bits` (one per
    element): for 8- and 16-bit integers the top 8 or 16 bits (the full
    range), for wider integers and booleans the top bit (0 or 1: valid
    token ids, masks and segment ids alike), for floats uniform in [-1, 1)
    from the top 53 bits."""
    dtype = np.dtype(detail["dtype"])
    shape = tuple(int(d) for d in detail["shape"])
    if dtype.kind in "iu" and dtype.itemsize <= 2:
        width = 8 * dtype.itemsize
        top = (bits >> np.uint64(64 - width)).astype(f"uint{width}")
        return top.view(dtype).reshape(shape)
    if dtype.kind in "iub":
        return (bits >> np.uint64(63)).astype(dtype).reshape(shape)
    if dtype.kind == "f":
        unit = (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53
        return (2.0 * unit - 1.0).astype(dtype).reshape(shape)
    raise SystemExit(f"run_litert: no random values for input dtype {dtype}")


def short_name(name):
    """A tensor name without the converter's decoration:
    `serving_default_input_ids:0` -> `input_ids`."""
    base, colon, suffix = name.rpartition(":")
    if colon and suffix.isdigit():
        name = base
    prefix = "serving_default_"
    return name[len(prefix):] if name.startswith(prefix) else name


def find_input(details, key):
    """The position of the input named `key` (its full tensor name, else its
    short name), or at position `key`."""
    for matches in (lambda d: d["name"] == key, lambda d: short_name(d["name"]) == key):
        found = [i for i, d in enumerate(details) if matches(d)]
        if len(found) == 1:
            return found[0]
    if key.isdigit() and int(key) < len(details):
        return int(key)
    names = ", ".join(f"{i}={d['name']!r}" for i, d in enumerate(details))
    raise SystemExit(f"run_litert: no input {key!r}; the model has {names}")


def load_inputs(np, details, specs, seed):
    """Per input, its arrays (one per step: several when the input was given
    several files, a sequence; one when generated, seeded random) and the
    names of the files they came from (None when generated)."""
    given = {}
    for spec in specs:
        key, sep, path = spec.partition("=")
        if not sep or not path:
            raise SystemExit(f"run_litert: --input wants NAME_OR_INDEX=FILE.npy, got {spec!r}")
        given.setdefault(find_input(details, key), []).append(path)
    steps = {len(paths) for paths in given.values()}
    if len(steps) > 1:
        raise SystemExit(
            "run_litert: a sequence needs the same number of files for every given input, "
            f"got {sorted(steps)}"
        )
    arrays = []
    # One SplitMix64 stream over all inputs in order: input i takes the
    # words after those of inputs 0 .. i-1.
    drawn = 0
    for position, detail in enumerate(details):
        size = int(np.prod(detail["shape"]))
        if position in given:
            expected = (tuple(int(d) for d in detail["shape"]), np.dtype(detail["dtype"]))
            step_arrays = []
            for path in given[position]:
                array = np.load(path, allow_pickle=False)
                # A scalar input may be stored as one element ([1] for []),
                # as the generator's files do: same dtype and element count.
                if array.dtype == expected[1] and array.size == size:
                    array = array.reshape(expected[0])
                if (array.shape, array.dtype) != expected:
                    raise SystemExit(
                        f"run_litert: {path} holds {array.dtype}{list(array.shape)}, "
                        f"input {detail['name']!r} wants {expected[1]}{list(expected[0])}"
                    )
                step_arrays.append(array)
            arrays.append((step_arrays, [os.path.basename(p) for p in given[position]]))
        else:
            bits = splitmix64(np, seed, drawn, size)
            arrays.append(([random_input(np, bits, detail)], None))
        # Counted for every input, given or not, so that an input's random
        # values do not depend on which others came from files.
        drawn += size
    return arrays


def invoke_repeatedly(interpreter, count):
    """Invokes the model `count` times with as little Python per call as
    possible, so that the cost of invocations R+1 .. 2R is the model's.

    `Interpreter.invoke()` is a Python method that checks that no numpy
    view into the interpreter's buffers is alive and then calls the native
    `Invoke`; the check is made once here and the native method called
    directly (an attribute of the pinned wheel's Python wrapper, with the
    public method as fallback). The Python code on the way is interpreted,
    and 3.11 specialises it after some executions, at a cost that would be
    charged to whichever invocations it falls in. And a garbage collection
    triggered inside the loop would be charged to the invocations, so the
    collector is off while it runs."""
    if hasattr(interpreter, "_interpreter") and hasattr(interpreter, "_ensure_safe"):
        # Before taking the bound method: the check counts references to
        # the native object, and the bound method is one more (a harmless
        # one: it is not a view into a buffer).
        interpreter._ensure_safe()
        native = interpreter._interpreter.Invoke
    else:
        native = interpreter.invoke
    gc.disable()
    # repeat() rather than range(): range() allocates an int object per
    # step beyond 256, a cost per invocation that grows with N.
    for _ in itertools.repeat(None, count):
        native()
    gc.enable()


def run(args):
    import numpy as np

    interpreter = make_interpreter(args.model, args.resolver, args.threads)
    interpreter.allocate_tensors()
    input_details = interpreter.get_input_details()
    output_details = interpreter.get_output_details()
    inputs = load_inputs(np, input_details, args.input, args.seed)
    steps = max(len(arrays) for arrays, _ in inputs) if inputs else 1
    if steps > 1 and args.invokes != 1:
        raise SystemExit("run_litert: a sequence of input files invokes once per step (--invokes 1)")

    os.makedirs(args.out, exist_ok=True)
    # A sequence: one interpreter, never reset, one invoke per step; the
    # outputs after step k go to DIR/step<k>/ (generated inputs stay the
    # same at every step).
    described_outputs = []
    for step in range(steps):
        for detail, (arrays, _) in zip(input_details, inputs):
            interpreter.set_tensor(detail["index"], arrays[min(step, len(arrays) - 1)])
        invoke_repeatedly(interpreter, args.invokes)
        step_dir = args.out if steps == 1 else os.path.join(args.out, f"step{step}")
        os.makedirs(step_dir, exist_ok=True)
        for position, detail in enumerate(output_details):
            file = f"output_{position}.npy"
            np.save(os.path.join(step_dir, file), interpreter.get_tensor(detail["index"]))
            if step == 0:
                described_outputs.append(describe(detail, file))

    described_inputs = []
    for position, (detail, (arrays, source_files)) in enumerate(zip(input_details, inputs)):
        if source_files is None:
            file = f"input_{position}.npy"
            np.save(os.path.join(args.out, file), arrays[0])
            entry = describe(detail, file)
            entry["source"] = f"splitmix64 seed {args.seed}"
        else:
            entry = describe(detail, source_files[0])
            entry["source"] = "given"
            if steps > 1:
                entry["files"] = source_files
        described_inputs.append(entry)

    from ai_edge_litert import __version__ as litert_version

    summary = {
        "model": os.path.basename(args.model),
        "resolver": args.resolver,
        "invokes": args.invokes,
        "threads": args.threads,
        "steps": steps,
        "litert": litert_version,
        "numpy": np.__version__,
        "inputs": described_inputs,
        "outputs": described_outputs,
    }
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")


def main(argv):
    args = parse_args(argv)
    if args.probe:
        print(json.dumps(probe()))
    else:
        run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
