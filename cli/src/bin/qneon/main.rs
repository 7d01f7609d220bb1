//! `qneon`: runs `.tflite` models on the qneon kernels, and inspects them.
//!
//! ```text
//! qneon run MODEL.tflite [--input K=FILE.npy[,FILE.npy...]]... [--output-dir DIR]
//!           [--reset-every N]
//!           [--softmax lut|fixed|f32] [--rounding single|double]
//!           [--backend neon|scalar] [--profile] [--json FILE] [--reps N]
//! qneon inspect MODEL.tflite [--softmax ...] [--rounding ...]
//! ```
//!
//! `--input K=FILE`: `K` is the input's position (`0`), its tensor name
//! (`serving_default_input_ids:0`) or that name's signature part
//! (`input_ids`); the text is split at its FIRST `=` (tensor names never
//! contain `=`; a file path after it may). Inputs not given get seeded
//! values (see `inputs::seeded_input`). Comma-separated files make a
//! sequence: one invoke per file in order, the model's variable tensors
//! (LSTM / SVDF state) carried from one to the next, each step's outputs in
//! `DIR/step<k>/`; `--reset-every N` resets them before steps N, 2N, ...
//!
//! `qneon run` brackets every node's kernel with an instruction-count region
//! marker (`marker.rs`; nothing on the host, one no-op instruction on
//! aarch64), which `cargo xtask run` and `cargo xtask compare` count under
//! qemu; `--json` names each op's region.
//!
//! Exit status: 0 on success, 2 on a usage error (clap's), 1 on a model or
//! input error, with a message naming the problem on stderr.

mod args;
mod inputs;
mod inspect;
mod marker;
mod run;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

fn main() -> ExitCode {
    // Parsing the arguments is part of the run's set-up (`qneon run` moves
    // to region 0 for its invokes), not of an invoke.
    marker::region(marker::SETUP);
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Inspect(args) => inspect::inspect(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
