"""The Interpreter API against ai_edge_litert's on the same models: the
details dicts, signatures, views and copies, variables, and the exceptions
of bad input."""

import threading
import time

import numpy as np
import pytest

import qneon
from qneon.interpreter import Interpreter, OpResolverType
from conftest import UNDER_EMULATION, litert, manifest, model_path, npy

ADD = model_path("ops/add_same_shape/model.tflite")
# Per-channel weights (quantization_parameters with many scales) and an
# int32 bias among the tensors.
FC_PER_CHANNEL = model_path("ops/fc_per_channel_bias/model.tflite")
# Variable tensors (SVDF state), int16 tensors.
KEYWORD = model_path("tflite_micro/keyword_scrambled.tflite")
MOBILEBERT = model_path("mobilebert_squad_1l.tflite")


def assert_details_equal(ours, theirs):
    assert list(ours.keys()) == list(theirs.keys())
    for key in theirs:
        a, b = ours[key], theirs[key]
        if isinstance(b, np.ndarray):
            assert isinstance(a, np.ndarray), key
            assert a.dtype == b.dtype, key
            np.testing.assert_array_equal(a, b, err_msg=key)
        elif isinstance(b, dict):
            assert_details_equal(a, b)
        elif isinstance(b, tuple):
            assert type(a) is tuple and len(a) == len(b), key
            for x, y in zip(a, b):
                assert type(x) is type(y), key
                assert x == y, key
        else:
            assert type(a) is type(b), key
            assert a == b, key


def test_both_imports_are_the_same_class():
    from qneon import Interpreter as top

    assert top is Interpreter


@pytest.mark.parametrize("path", [ADD, FC_PER_CHANNEL, KEYWORD, MOBILEBERT])
def test_details_equal_litert(path):
    lite = litert()
    ours = Interpreter(model_path=path)
    theirs = lite.Interpreter(model_path=path)
    for get in ("get_input_details", "get_output_details"):
        a, b = getattr(ours, get)(), getattr(theirs, get)()
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_details_equal(x, y)
    # Every tensor TFLite reports by index (it also lists intermediates
    # qneon does not keep: compare the ones both have).
    theirs_all = {d["index"]: d for d in theirs.get_tensor_details()}
    for d in ours.get_tensor_details():
        if d["index"] in theirs_all:
            b = theirs_all[d["index"]]
            assert d["name"] == b["name"]
            assert d["dtype"] == b["dtype"]
            np.testing.assert_array_equal(d["shape"], b["shape"])
            np.testing.assert_array_equal(d["quantization_parameters"]["scales"],
                                          b["quantization_parameters"]["scales"])
            np.testing.assert_array_equal(d["quantization_parameters"]["zero_points"],
                                          b["quantization_parameters"]["zero_points"])
            assert (d["quantization_parameters"]["quantized_dimension"]
                    == b["quantization_parameters"]["quantized_dimension"])


@pytest.mark.parametrize("path", [ADD, MOBILEBERT])
def test_signatures_equal_litert(path):
    lite = litert()
    ours = Interpreter(model_path=path)
    theirs = lite.Interpreter(model_path=path)
    assert ours.get_signature_list() == theirs.get_signature_list()
    a = ours.get_signature_runner()
    b = theirs.get_signature_runner()
    for get in ("get_input_details", "get_output_details"):
        x, y = getattr(a, get)(), getattr(b, get)()
        assert list(x) == list(y)
        for name in y:
            assert_details_equal(x[name], y[name])


def fill_inputs(interpreter, seed=0):
    rng = np.random.default_rng(seed)
    values = []
    for d in interpreter.get_input_details():
        info = np.iinfo(d["dtype"])
        x = rng.integers(info.min, info.max, size=d["shape"], endpoint=True).astype(d["dtype"])
        interpreter.set_tensor(d["index"], x)
        values.append(x)
    return values


def test_signature_runner_equals_set_invoke_get():
    interpreter = Interpreter(model_path=ADD)
    interpreter.allocate_tensors()
    x, y = fill_inputs(interpreter, seed=3)
    interpreter.invoke()
    out = interpreter.get_output_details()[0]["index"]
    expected = interpreter.get_tensor(out)
    runner = interpreter.get_signature_runner("serving_default")
    by_name = {d["name"]: v for d, v in zip(interpreter.get_input_details(), (x, y))}
    result = runner(x=by_name["serving_default_x:0"], y=by_name["serving_default_y:0"])
    assert list(result) == ["z"]
    np.testing.assert_array_equal(result["z"], expected)
    with pytest.raises(ValueError, match="expected 2 vs provided 1"):
        runner(x=by_name["serving_default_x:0"])
    with pytest.raises(ValueError, match="Invalid Input name"):
        runner(x=by_name["serving_default_x:0"], w=by_name["serving_default_y:0"])
    with pytest.raises(ValueError, match="Invalid signature_key"):
        interpreter.get_signature_runner("nope")


def test_get_tensor_is_a_copy_and_tensor_a_view():
    interpreter = Interpreter(model_path=ADD)
    interpreter.allocate_tensors()
    fill_inputs(interpreter, seed=1)
    interpreter.invoke()
    out = interpreter.get_output_details()[0]["index"]
    copy = interpreter.get_tensor(out)
    view = interpreter.tensor(out)
    assert np.shares_memory(view(), view())
    assert not np.shares_memory(copy, view())
    before = copy.copy()
    copy[...] = 0
    np.testing.assert_array_equal(interpreter.get_tensor(out), before)
    # A write through an input's view is what the next invoke reads.
    first = interpreter.get_input_details()[0]["index"]
    interpreter.tensor(first)()[...] = interpreter.get_tensor(first) // 2
    interpreter.invoke()
    after = view()
    reference = Interpreter(model_path=ADD)
    reference.allocate_tensors()
    for d in interpreter.get_input_details():
        reference.set_tensor(d["index"], interpreter.get_tensor(d["index"]))
    reference.invoke()
    np.testing.assert_array_equal(after, reference.get_tensor(out))
    assert not np.array_equal(after, before)


def test_outputs_equal_litert_on_random_inputs():
    lite = litert()
    for path, resolver in [(ADD, "BUILTIN_REF"), (FC_PER_CHANNEL, "BUILTIN_REF")]:
        ours = Interpreter(model_path=path,
                           experimental_op_resolver_type=OpResolverType[resolver])
        theirs = lite.Interpreter(model_path=path,
                                  experimental_op_resolver_type=lite.OpResolverType[resolver])
        ours.allocate_tensors()
        theirs.allocate_tensors()
        for x, d in zip(fill_inputs(ours, seed=7), theirs.get_input_details()):
            theirs.set_tensor(d["index"], x)
        ours.invoke()
        theirs.invoke()
        for d in theirs.get_output_details():
            np.testing.assert_array_equal(ours.get_tensor(d["index"]), theirs.get_tensor(d["index"]))


def test_reset_all_variables_restarts_the_sequence():
    # An SVDF with int16 state: its outputs depend on the invokes before.
    svdf = manifest("tflite_micro/refs/svdf/manifest.json")["cases"][0]
    steps = svdf["sequences"][0]["steps"]
    interpreter = Interpreter(model_path=model_path(svdf["model"]),
                              experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    x = interpreter.get_input_details()[0]["index"]
    out = interpreter.get_output_details()[0]["index"]

    def step(i):
        interpreter.set_tensor(x, npy(steps[i]["inputs"][0]))
        interpreter.invoke()
        return interpreter.get_tensor(out)

    first = npy(steps[0]["outputs"]["litert_ref"][0])
    np.testing.assert_array_equal(step(0), first)
    for i in range(1, len(steps)):
        step(i)
    # The state carries over: step 0's input now gives another output...
    assert not np.array_equal(step(0), first)
    # ...and after a reset, step 0's output again.
    interpreter.reset_all_variables()
    np.testing.assert_array_equal(step(0), first)


def test_resize_to_the_same_shape_is_accepted_and_to_another_refused():
    interpreter = Interpreter(model_path=ADD)
    d = interpreter.get_input_details()[0]
    interpreter.resize_tensor_input(d["index"], d["shape"])
    with pytest.raises(ValueError, match="cannot resize"):
        interpreter.resize_tensor_input(d["index"], [3, 3])


def test_resolver_types_pick_the_kernel_sets():
    expected = {
        OpResolverType.AUTO: "xnnpack",
        OpResolverType.BUILTIN: "optimized",
        OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES: "optimized",
        OpResolverType.BUILTIN_REF: "reference",
    }
    for resolver, kernels in expected.items():
        interpreter = Interpreter(model_path=ADD, experimental_op_resolver_type=resolver)
        assert interpreter._model.options()[0] == kernels
    assert Interpreter(model_path=ADD)._model.options()[0] == "xnnpack"
    chosen = Interpreter(model_path=ADD, softmax="f32", rounding="double", backend="scalar")
    assert chosen._model.options()[1:] == ("f32", "double", "scalar")


# -- bad input: the exception TFLite raises, with a message --------------------


def raised(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 (the type is what is compared)
        return type(e)
    return None


BAD_CONSTRUCTIONS = {
    "missing file": dict(model_path="/nonexistent/model.tflite"),
    "not a model": dict(model_content=b"not a flatbuffer" * 8),
    "no model": dict(),
    "zero threads": dict(model_path=ADD, num_threads=0),
}

QNEON_ONLY_REFUSALS = {
    "a delegate": dict(model_path=ADD, experimental_delegates=[object()]),
    "preserve all tensors": dict(model_path=ADD, experimental_preserve_all_tensors=True),
}


@pytest.mark.parametrize("case", sorted(QNEON_ONLY_REFUSALS))
def test_what_qneon_cannot_do_is_a_value_error(case):
    with pytest.raises(ValueError, match="qneon"):
        Interpreter(**QNEON_ONLY_REFUSALS[case])


@pytest.mark.parametrize("case", sorted(BAD_CONSTRUCTIONS))
def test_bad_construction_raises_value_error(case):
    kwargs = BAD_CONSTRUCTIONS[case]
    with pytest.raises(ValueError) as info:
        Interpreter(**kwargs)
    assert str(info.value)


@pytest.mark.parametrize("case", sorted(BAD_CONSTRUCTIONS))
def test_bad_construction_raises_what_litert_raises(case):
    lite = litert()
    kwargs = BAD_CONSTRUCTIONS[case]
    assert raised(lambda: Interpreter(**kwargs)) is raised(lambda: lite.Interpreter(**kwargs))


def test_truncated_and_corrupted_files_are_value_errors():
    content = open(ADD, "rb").read()
    for cut in (0, 8, 64, len(content) // 2, len(content) - 1):
        with pytest.raises(ValueError):
            Interpreter(model_content=content[:cut])
    rng = np.random.default_rng(11)
    for _ in range(50):
        flipped = bytearray(content)
        i = int(rng.integers(0, len(flipped)))
        flipped[i] ^= 1 << int(rng.integers(0, 8))
        try:
            Interpreter(model_content=bytes(flipped)).allocate_tensors()
        except ValueError as e:
            assert str(e)


def test_set_tensor_checks_dtype_shape_and_index():
    interpreter = Interpreter(model_path=ADD)
    d = interpreter.get_input_details()[0]
    out = interpreter.get_output_details()[0]["index"]
    good = np.zeros(d["shape"], np.int8)
    with pytest.raises(ValueError, match="allocate_tensors"):
        interpreter.set_tensor(d["index"], good)
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match="FLOAT32 but expected type INT8"):
        interpreter.set_tensor(d["index"], good.astype(np.float32))
    with pytest.raises(ValueError, match="Dimension mismatch"):
        interpreter.set_tensor(d["index"], np.zeros([7], np.int8))
    with pytest.raises(ValueError, match="not an input"):
        interpreter.set_tensor(out, good)
    with pytest.raises(ValueError, match="Invalid tensor index 999"):
        interpreter.set_tensor(999, good)
    with pytest.raises(ValueError, match="Invalid tensor index"):
        interpreter.get_tensor(-1)
    interpreter.set_tensor(d["index"], good)


def test_bad_set_tensor_raises_what_litert_raises():
    lite = litert()
    ours, theirs = Interpreter(model_path=ADD), lite.Interpreter(model_path=ADD)
    for interpreter in (ours, theirs):
        interpreter.allocate_tensors()
    d = ours.get_input_details()[0]
    for value in (np.zeros(d["shape"], np.float32), np.zeros([7], np.int8),
                  np.zeros([2, 3, 9], np.int8)):
        assert raised(lambda: ours.set_tensor(d["index"], value)) is ValueError
        assert raised(lambda: theirs.set_tensor(d["index"], value)) is ValueError
    assert raised(lambda: ours.set_tensor(999, value)) is raised(lambda: theirs.set_tensor(999, value))


def test_invoke_before_allocate_is_a_runtime_error():
    interpreter = Interpreter(model_path=ADD)
    with pytest.raises(RuntimeError, match="not ready"):
        interpreter.invoke()
    lite = pytest.importorskip("ai_edge_litert.interpreter")
    with pytest.raises(RuntimeError):
        lite.Interpreter(model_path=ADD).invoke()


def test_invoke_failure_is_a_runtime_error_naming_the_op():
    # Token ids outside MobileBert's vocabulary: its GATHER refuses them.
    interpreter = Interpreter(model_path=MOBILEBERT)
    interpreter.allocate_tensors()
    for d in interpreter.get_input_details():
        interpreter.set_tensor(d["index"], np.full(d["shape"], 10**9, d["dtype"]))
    with pytest.raises(RuntimeError, match="GATHER"):
        interpreter.invoke()
    # The interpreter stays usable.
    mobilebert_inputs(interpreter)
    interpreter.invoke()


def mobilebert_inputs(interpreter):
    case = manifest("mobilebert_squad/manifest.json")["inputs"]["case0_full"]
    names = {d["name"]: d["index"] for d in interpreter.get_input_details()}
    for name, file in case.items():
        (index,) = [i for n, i in names.items() if n.startswith("serving_default_" + name)]
        interpreter.set_tensor(index, npy(file))


def test_num_threads_is_accepted():
    for threads in (None, -1, 1, 4):
        interpreter = Interpreter(model_path=ADD, num_threads=threads)
        interpreter.allocate_tensors()
        fill_inputs(interpreter)
        interpreter.invoke()
    with pytest.raises(ValueError):
        Interpreter(model_path=ADD, num_threads=-2)
    with pytest.raises(ValueError):
        Interpreter(model_path=ADD, num_threads=1.5)
    with pytest.raises(ValueError):
        Interpreter(model_path=ADD, num_threads=257)


def test_num_threads_gives_the_same_bytes():
    outputs = []
    for threads in (1, 2, 4):
        interpreter = Interpreter(model_path=MOBILEBERT, num_threads=threads)
        interpreter.allocate_tensors()
        mobilebert_inputs(interpreter)
        interpreter.invoke()
        outputs.append([interpreter.get_tensor(d["index"])
                        for d in interpreter.get_output_details()])
    for other in outputs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(outputs[0], other))


def test_qneon_options_are_checked():
    with pytest.raises(ValueError, match="softmax"):
        Interpreter(model_path=ADD, softmax="nope")
    with pytest.raises(ValueError, match="rounding"):
        Interpreter(model_path=ADD, rounding="triple")
    with pytest.raises(ValueError, match="backend"):
        Interpreter(model_path=ADD, backend="avx")
    with pytest.raises(ValueError, match="budget|needs"):
        Interpreter(model_path=MOBILEBERT, memory_budget=1024)


# -- threads -------------------------------------------------------------------


def test_invoke_releases_the_gil():
    interpreter = Interpreter(model_path=MOBILEBERT)
    interpreter.allocate_tensors()
    mobilebert_inputs(interpreter)
    interpreter.invoke()
    start = time.perf_counter()
    interpreter.invoke()
    one = time.perf_counter() - start
    reps = max(1, int(0.3 / max(one, 1e-6)))
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(1)

    worker = threading.Thread(target=lambda: [interpreter.invoke() for _ in range(reps)])
    counter = threading.Thread(target=count)
    worker.start()
    counter.start()
    worker.join()
    done.set()
    counter.join()
    # While the worker is inside invoke (most of its time), the counter runs
    # only if invoke released the GIL: with it held, the counter would tick
    # between invokes at most.
    assert len(ticks) > 10 * reps


def test_interpreters_in_parallel_threads_give_the_same_outputs():
    lite_free = Interpreter(model_path=ADD)
    lite_free.allocate_tensors()
    inputs = fill_inputs(lite_free, seed=9)
    lite_free.invoke()
    expected = lite_free.get_tensor(lite_free.get_output_details()[0]["index"])
    results = []

    def run():
        interpreter = Interpreter(model_path=ADD)
        interpreter.allocate_tensors()
        for d, x in zip(interpreter.get_input_details(), inputs):
            interpreter.set_tensor(d["index"], x)
        for _ in range(20):
            interpreter.invoke()
        results.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    for r in results:
        np.testing.assert_array_equal(r, expected)
