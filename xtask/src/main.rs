//! Project automation for qneon: `cargo xtask <command>`.
//!
//! Everything aarch64 is cross-compiled and run under `qemu-aarch64`; see
//! `.cargo/config.toml` for the linker and runner. Run `cargo xtask help`.

mod asm;
mod bench;
mod capi;
mod capi_gen;
mod capi_ops;
mod compare;
mod counts;
mod expect;
mod fuzz;
mod mca;
mod miri;
mod msrv;
mod pattern;
mod plot;
mod plugin;
mod python;
mod report;
mod run;
mod scaling;
mod setup;
mod test;
mod util;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  setup [--mca]         install missing cross tools (rustup target, gcc,
                        libc, qemu-user) and the Python venv of `cargo
                        xtask python` (target/python/venv: maturin,
                        pytest, numpy, ai-edge-litert, pinned); --mca also
                        installs llvm-mca-16
  test [--host] [-- FILTER...]
                        host tests, aarch64 tests under qemu, the library
                        built in every feature combination (host, and
                        bare-metal aarch64 without std), the no_std API
                        tests, the C API (cargo xtask capi), asm checks, benches
                        build, binaries' smoke runs; ends with `N passed,
                        M failed`. --host runs the host parts only; FILTERs
                        go to both `cargo test` runs
  bench [--mca] [--jobs N] [--filter TEXT]
                        instructions per element of every op, type, method,
                        backend and shape under qemu (tools/qemu-insn plugin,
                        R and 2R repetitions): writes target/bench/insns.json,
                        insns.md and insns.svg (--filter: its rows replace
                        theirs in the previous insns.json); --mca adds
                        llvm-mca cycles per element of the NEON inner loops
  bench --docs          rewrite the performance section of
                        docs/PERFORMANCE.md and docs/insns.svg from
                        target/bench/insns.json
  bench --run [--insn] [-- ARG...]
                        run qneon-bench ARGs under qemu (--insn: count guest
                        instructions)
  run [--model FILE [--input K=FILE.npy]...] [--all | --config BACKEND-METHOD...]
      [--rounding single|double] [--cpu CPU] [--threshold T]
      [--kernels reference|optimized|xnnpack]
                        the main job: a .tflite model run by `qneon run`
                        under qemu -cpu CPU (default max) once per
                        configuration, with the tools/qemu-insn plugin
                        counting each op's marked region: prints
                        instructions per op type (calls, work, share), the
                        costliest ops, the model against 2 x MACs / 16 and
                        softmax's share (target <= 3% with neon lut); writes
                        target/run/profile.json (per op type and per op)
                        and profile.md. Default model: the 24-layer int8
                        MobileBert on its first SQuAD input set; default
                        configurations neon-lut, neon-fixed, scalar-lut;
                        --all adds neon-f32, scalar-fixed, scalar-f32;
                        --threshold T passes `qneon run --threshold T` on
                        (fused nodes show as THRESHOLDED_<op>); --kernels K
                        passes `qneon run --kernels K` on (which of TFLite's
                        kernel paths every op's bytes follow)
  run --threads N[,N...] [--model FILE [--input K=FILE.npy]...] [--config C]
                        one configuration (default neon-lut) run with
                        `qneon run --threads N` and --threads 1, counted per
                        guest thread: per op the busiest thread, the mean
                        and their ratio (balance); the critical path (sum of
                        busiest + the inputs and the loop between ops) and its
                        speedup over 1 thread; the same output bytes at
                        every count. target/run/threads-CONFIG.json and .md
  run ... --hot         also profile each run by block (qemu-insn `blocks=`):
                        per op, instructions per function and thread
                        (target/run/runs/CONFIG.hot.md)
  run --scaling [--threads N,...] [--model FILE [--input K=FILE.npy]...] [--cpu CPU]
                        the scaling table: MobileBert 1l, person_detect and
                        MobileNetV2 (or the --model given) at --threads 1, 2,
                        4, 8 as `run --threads` measures them, under -cpu
                        neoverse-n1 by default; merged by model into
                        target/run/scaling.json
  scaling-docs          rewrite docs/PERFORMANCE.md between
                        <!-- scaling:begin --> and <!-- scaling:end --> from
                        target/run/scaling.json and the TFLite rows of
                        target/compare/threads.json on the same -cpu
  run --docs            rewrite docs/PERFORMANCE.md between
                        <!-- run:begin --> and <!-- run:end --> from
                        target/run/profile.json
  asm                   check the disassembly of kernels against
                        asm_tests/expect.toml, and that its entries cover
                        every row of qneon::catalogue
  compare [--model FILE]... [--cpu CPU] [--reps R] [--jobs N]
                        TFLite's own aarch64 build (LiteRT: XNNPACK and
                        builtin kernels) on int8 .tflite models under qemu
                        -cpu CPU (default neoverse-n1; or max,sme=off) with
                        the tools/qemu-insn plugin: instructions per
                        inference from R and 2R invocations (default R 3);
                        outputs in target/compare/<model>/<resolver>/, rows
                        in target/compare/compare.json; qneon run on the
                        same models and inputs, counted the same way
                        (--softmax lut), bit-exact per method (lut vs the
                        builtin kernels, fixed vs LiteRT's reference
                        kernels), per op type, max |qneon - XNNPACK|.
                        Default models: the .tflite files in models/ (not
                        sub-folders), else a small fixture
  compare --threads N[,N...] [--model FILE]... [--cpu CPU] [--reps R] [--jobs J]
                        TFLite + XNNPACK with num_threads N (and 1) counted
                        per guest thread: per-thread instructions per
                        inference ((2R - R) / R), the busiest thread as the
                        critical path (spin-waiting included); rows merged
                        into target/compare/threads.json
  compare --setup       only set up the aarch64 Python and LiteRT wheels in
                        target/litert-aarch64/ (done lazily otherwise)
  compare --refs-only --model FILE [--input NAME_OR_INDEX=FILE.npy]...
          --out DIR [--cpu CPU] [--resolver builtin|xnnpack]
                        LiteRT's outputs for the given inputs (missing ones
                        seeded random) into DIR: the builtin kernels (the
                        default) or the XNNPACK delegate of the aarch64
                        build; an input given several files is a sequence
                        (one interpreter, one invoke per file, outputs in
                        DIR/step<k>/)
  fuzz [--seconds N] [TARGET...] [-- LIBFUZZER-OPTION...]
                        the cargo-fuzz targets of fuzz/ (nightly, installed
                        with cargo-fuzz if missing), built with
                        AddressSanitizer and run N seconds each (default
                        60), one at a time, from the seeds in fuzz/seeds/
                        and the working corpus in fuzz/corpus/; prints
                        executions and coverage per target, fails if any
                        crashed (inputs in fuzz/artifacts/, logs in
                        target/fuzz/)
  miri [-- FILTER...]   the library's unit tests and the tests that reach
                        every unsafe block on this host under Miri
                        (nightly, the miri component added if missing),
                        slow tests skipped; FILTERs go to every run
  msrv                  build the library and check the workspace with the
                        toolchain of `rust-version` (installed by rustup if
                        missing), in target/msrv
  capi [--host]         the C API: the committed generated sources and
                        capi/include/qneon.h are current, and capi/examples/softmax.c built against
                        the static library (host cc; aarch64 gcc under qemu
                        unless --host) prints the library's bytes
  capi-header           regenerate the C API's per-type functions from
                        qneon::catalogue, then capi/include/qneon.h
                        (cbindgen)
  python build [--host] the Python package's wheels (python/, maturin,
                        abi3) for the host and aarch64 (cross-built) in
                        target/python/wheels/; --host: the host's only
  python test [--host]  the wheels, then python/tests (pytest) on the host
                        against ai_edge_litert and under qemu -cpu
                        neoverse-n1 on the arm64 Python of `compare
                        --setup`; --host skips the aarch64 half
  help                  show this message
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::FAILURE;
    };
    let result = match command.as_str() {
        // The cross tools, then the Python package's build and test tools
        // (`cargo xtask python`).
        "setup" => setup::cli(rest).and_then(|()| python::ensure_venv()),
        "test" => test::cli(rest),
        "bench" => bench::cli(rest),
        "run" => run::cli(rest),
        "scaling-docs" => scaling::cli(rest),
        "asm" => asm::cli(rest),
        "capi" => capi::cli(rest),
        "capi-header" => capi::header_cli(rest),
        "compare" => compare::cli(rest),
        "msrv" => msrv::cli(rest),
        "fuzz" => fuzz::cli(rest),
        "miri" => miri::cli(rest),
        "python" => python::cli(rest),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`\n\n{USAGE}").into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Already explained in the command's own output.
        Err(err) if err.is::<util::Reported>() => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("xtask: error: {err}");
            ExitCode::FAILURE
        }
    }
}
