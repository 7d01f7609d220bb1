//! Timing: the median of `--reps` runs of every selected case on every
//! backend.

use qneon::Backend;
use std::time::{Duration, Instant};

use crate::args::{Args, Shape};
use crate::cases::Case;

pub(crate) struct Row {
    pub(crate) op: &'static str,
    pub(crate) method: &'static str,
    pub(crate) dtype: &'static str,
    /// The backend that ran (`run_with` fails rather than fall back).
    pub(crate) backend: Backend,
    /// Elements per repetition.
    pub(crate) elements: usize,
    /// Bytes of input per element.
    pub(crate) elem_bytes: usize,
    /// Median wall time of one repetition.
    pub(crate) median: Duration,
}

/// Rows done and rows planned, for the progress lines on stderr.
pub(crate) struct Progress {
    pub(crate) done: usize,
    pub(crate) total: usize,
}

/// Runs `f` `reps` times and returns the median duration of one run.
pub(crate) fn time(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[times.len() / 2]
}

/// Times every case on every backend. The input is made only if a case
/// needs it (generating it under qemu costs more than some kernels).
pub(crate) fn run_cases<T: Copy + Default>(
    args: &Args,
    shape: &Shape,
    dtype: &'static str,
    cases: &[Case<'_, T>],
    input: impl FnOnce(usize) -> Vec<T>,
    progress: &mut Progress,
    out: &mut Vec<Row>,
) -> Result<(), String> {
    if cases.is_empty() {
        return Ok(());
    }
    let n = shape.rows * shape.cols;
    let input = input(n);
    let mut output = vec![T::default(); n];
    for &backend in &args.backends {
        for case in cases {
            progress.done += 1;
            eprintln!(
                "[{}/{}] {} {dtype} {} {}",
                progress.done,
                progress.total,
                case.op,
                case.method,
                backend.name()
            );
            let mut failure = None;
            let median = time(args.reps, || {
                if let Err(e) = (case.kernel)(backend, &input, &mut output, shape.cols) {
                    failure = Some(e);
                }
            });
            if let Some(e) = failure {
                return Err(format!(
                    "{} {dtype} {} {}: {e}",
                    case.op,
                    case.method,
                    backend.name()
                ));
            }
            out.push(Row {
                op: case.op,
                method: case.method,
                dtype,
                backend,
                elements: n,
                elem_bytes: size_of::<T>(),
                median,
            });
        }
    }
    Ok(())
}
