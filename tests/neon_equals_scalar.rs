//! NEON must produce exactly the bytes of the scalar reference.
//!
//! Every test runs the same operator twice, once with [`Backend::Scalar`] and
//! once with [`Backend::Neon`], and compares the outputs bit for bit:
//!
//! * logistic and tanh on `i8`/`u8`: all 256 inputs for a grid of (input
//!   scale, zero point) pairs; scales log-spread over `1e-3..=30`, including
//!   the powers of two where the multiplier shift (and so the saturation
//!   radius) changes, exactly and one ulp either side; zero points at both
//!   extremes and in the middle. Each grid point also runs on the input minus
//!   its first 5 values, so every value meets a different lane and a tail.
//! * logistic and tanh on `i16`: all 65,536 inputs for a grid of scales
//!   (`2^-15..=2^-8`, `1e-4`, `1e-3`, `0.01`, `0.1`, `1`, ...) and zero points
//!   (`0`, `+-1000`, both extremes).
//! * softmax (`i8`, `u8`, `i16`; `i8` and `u8` also by `Method::Lut`) and
//!   log-softmax (`i8`, `u8`): rows of every
//!   length `1..=70` and `383`, `384`, `385` (several rows per call), for
//!   fixed extreme parameter sets (multiplier zero, negative shift, capped
//!   multiplier, ...) and random ones, in eleven row shapes; plus long rows
//!   (1024, 1040, 16,400 and 32,768). The number of rows is counted and
//!   asserted (over 10,000 in the file).
//! * raw Q31 logistic, tanh and softmax for every `integer_bits` in
//!   `0..=MAX_INTEGER_BITS`: boundary raw values and random ones, and softmax
//!   rows of lengths `1..=40`, `384` and `1040`, including rows that hold
//!   `i32::MIN` and `i32::MAX` together.
//! * `run()` (the best backend) is NEON here and gives the scalar bytes.
//!
//! A failing case is collected, not thrown at once, so a run reports every
//! failing grid point (the first few in detail, with a row re-run alone to
//! show whether it fails in isolation). A panic inside a kernel (e.g. a
//! `debug_assert`, on in the test profile) is a failure of that case.
//!
//! Randomness is a fixed-seed generator; set `QNEON_SEED` to explore others
//! (the seed is printed with every failure).

// The NEON backend exists only on aarch64, so on every other target there is
// nothing to cross-validate and this file is deliberately empty (no tests, not
// skipped tests). On aarch64 each test first asserts that NEON is available: a
// build without the NEON kernels fails loudly instead of comparing scalar with
// itself.
#![cfg(target_arch = "aarch64")]

use qneon::q31;
use qneon::{Backend, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh};
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};

// ---------------------------------------------------------------------------
// Shared helpers.

fn require_neon() {
    assert!(
        Backend::Neon.is_available(),
        "compiled for aarch64 but Backend::Neon is not available (NEON kernels not built in?): \
         refusing to pass without cross-validating anything"
    );
    assert_eq!(
        Backend::best(),
        Backend::Neon,
        "Backend::best() must be NEON on aarch64"
    );
}

/// SplitMix64: small, fast, deterministic.
struct Rng(u64);

impl Rng {
    fn new(stream: u64) -> Rng {
        Rng(seed() ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        debug_assert!(lo <= hi);
        (lo as i64 + self.below((hi as i64 - lo as i64 + 1) as u64) as i64) as i32
    }
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn log_uniform(&mut self, lo: f64, hi: f64) -> f32 {
        (lo.ln() + self.unit() * (hi / lo).ln()).exp() as f32
    }
    fn i32(&mut self) -> i32 {
        self.next_u64() as i32
    }
}

fn seed() -> u64 {
    std::env::var("QNEON_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_5EED_5EED)
}

/// Failing cases of one test: all counted, the first few of each kind (key)
/// kept in detail.
struct Failures {
    test: &'static str,
    kept: Vec<String>,
    keys: std::collections::BTreeMap<String, usize>,
    total: usize,
}

impl Failures {
    const KEEP: usize = 16;

    fn new(test: &'static str) -> Failures {
        Failures {
            test,
            kept: Vec::new(),
            keys: Default::default(),
            total: 0,
        }
    }
    fn push(&mut self, msg: String) {
        self.push_keyed(msg.clone(), msg);
    }
    /// Counts a failure; keeps its message if it is the first of its `key`.
    fn push_keyed(&mut self, key: String, msg: String) {
        self.total += 1;
        let seen = self.keys.entry(key).or_insert(0);
        *seen += 1;
        if *seen == 1 && self.kept.len() < Self::KEEP {
            self.kept.push(msg);
        }
    }
    fn finish(self) {
        if self.total > 0 {
            let mut kinds: Vec<String> = self
                .keys
                .iter()
                .take(40)
                .map(|(k, n)| format!("  {n} x {k}"))
                .collect();
            if self.keys.len() > 40 {
                kinds.push(format!("  ... and {} more kinds", self.keys.len() - 40));
            }
            panic!(
                "{}: {} failing case(s) (seed {}) of {} kind(s):\n{}\n\nfirst case of each kind (up to {}):\n\n{}",
                self.test,
                self.total,
                seed(),
                self.keys.len(),
                kinds.join("\n"),
                Self::KEEP,
                self.kept.join("\n\n")
            );
        }
    }
}

thread_local! {
    /// Set while [`guarded`] runs: its panics are reported as failures, so the
    /// panic hook stays quiet about them (no backtrace per caught case).
    static CATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Where the last caught panic happened.
    static LOCATION: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Runs `f`, turning a panic into an `Err` with its message.
fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CATCHING.with(|c| c.get()) {
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                LOCATION.with(|l| *l.borrow_mut() = at);
            } else {
                default(info);
            }
        }));
    });
    CATCHING.with(|c| c.set(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(false));
    result.map_err(|e| {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "<non-string panic>".into());
        msg + &LOCATION.with(|l| l.take())
    })
}

/// An element-wise op on one backend.
type ElemFn<'a, T> = dyn Fn(Backend, &[T], &mut [T]) -> qneon::Result<()> + 'a;
/// A row op on one backend (the last argument is `row_len`).
type RowFn<'a, T> = dyn Fn(Backend, &[T], &mut [T], usize) -> qneon::Result<()> + 'a;
type RowRunner<T> = Box<RowFn<'static, T>>;
/// Builds a row op for (input quantization, beta): its runner and `diff_min`.
type RowBuilder<'a, T> = dyn Fn(QuantParams, f32) -> qneon::Result<(RowRunner<T>, i32)> + 'a;

/// The outcome of running one backend: a panic, an error, or the output.
type Outcome<T> = Result<Result<Vec<T>, qneon::Error>, String>;

fn run_backend<T: Copy + Default>(backend: Backend, input: &[T], f: &ElemFn<T>) -> Outcome<T> {
    guarded(|| {
        let mut out = vec![T::default(); input.len()];
        f(backend, input, &mut out).map(|()| out)
    })
}

/// Describes why two outcomes are not the same successful output, or `None`.
fn outcome_problem<T: PartialEq + Copy>(scalar: &Outcome<T>, neon: &Outcome<T>) -> Option<String> {
    fn describe<T>(o: &Outcome<T>) -> String {
        match o {
            Ok(Ok(_)) => "ok".into(),
            Ok(Err(e)) => format!("returned {e:?}"),
            Err(p) => format!("panicked: {p}"),
        }
    }
    match (scalar, neon) {
        (Ok(Ok(s)), Ok(Ok(n))) if s == n => None,
        (Ok(Ok(_)), Ok(Ok(_))) => Some("outputs differ".into()),
        _ => Some(format!(
            "scalar {}; neon {}",
            describe(scalar),
            describe(neon)
        )),
    }
}

/// An element the comparisons can print: the quantized types and raw Q31.
trait Elem: Copy + Default + PartialEq + 'static {
    fn wide(self) -> i64;
}

macro_rules! elem {
    ($($t:ty)*) => {$(
        impl Elem for $t {
            fn wide(self) -> i64 {
                self as i64
            }
        }
    )*};
}
elem!(i8 u8 i16 i32);

fn widen<T: Elem>(v: &[T]) -> Vec<i64> {
    v.iter().map(|x| x.wide()).collect()
}

/// The f32 one ulp away from `x` (positive, normal `x`).
fn ulp_step(x: f32, up: bool) -> f32 {
    f32::from_bits(if up { x.to_bits() + 1 } else { x.to_bits() - 1 })
}

// ---------------------------------------------------------------------------
// Logistic and tanh, every input.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Act {
    Logistic,
    Tanh,
}

/// TFLite's fixed output quantization.
fn act_output<T: QuantElem>(act: Act) -> QuantParams {
    match (act, T::NAME) {
        (Act::Logistic, "int8") => QuantParams::new(1.0 / 256.0, -128),
        (Act::Logistic, "uint8") => QuantParams::new(1.0 / 256.0, 0),
        (Act::Tanh, "int8") => QuantParams::new(1.0 / 128.0, 0),
        (Act::Tanh, "uint8") => QuantParams::new(1.0 / 128.0, 128),
        _ => QuantParams::new(1.0 / 32768.0, 0),
    }
}

fn run_act<T: QuantElem>(
    act: Act,
    q: QuantParams,
    backend: Backend,
    x: &[T],
    y: &mut [T],
) -> qneon::Result<()> {
    let out = act_output::<T>(act);
    match act {
        Act::Logistic => Logistic::<T>::new(q, out, Method::FixedPoint)?.run_with(backend, x, y),
        Act::Tanh => Tanh::<T>::new(q, out, Method::FixedPoint)?.run_with(backend, x, y),
    }
}

/// Compares NEON with scalar on every input of `T` for each (scale, zero point)
/// and both functions; returns the number of grid points.
fn activation_grid<T: QuantElem>(
    acts: &[Act],
    scales: &[f32],
    zero_points: &[i32],
    fails: &mut Failures,
) -> usize {
    let all: Vec<T> = (T::MIN..=T::MAX).map(T::from_i32).collect();
    let mut points = 0;
    for &act in acts {
        for &scale in scales {
            for &zp in zero_points {
                points += 1;
                let q = QuantParams::new(scale, zp);
                let f = |b: Backend, x: &[T], y: &mut [T]| run_act(act, q, b, x, y);
                // The full range, then without its first 5 values: every value
                // in another lane, and a partial last block.
                for input in [&all[..], &all[5..]] {
                    let s = run_backend(Backend::Scalar, input, &f);
                    let n = run_backend(Backend::Neon, input, &f);
                    let Some(problem) = outcome_problem(&s, &n) else {
                        continue;
                    };
                    let mut msg = format!(
                        "{act:?} {}: input scale {scale:e} ({:#010x}), zero point {zp}, {} inputs from {}: {problem}",
                        T::NAME,
                        scale.to_bits(),
                        input.len(),
                        input[0].to_i32()
                    );
                    if let (Ok(Ok(s)), Ok(Ok(n))) = (&s, &n) {
                        let diffs: Vec<_> = (0..input.len()).filter(|&i| s[i] != n[i]).collect();
                        let _ = write!(msg, "; {} of {} differ:", diffs.len(), input.len());
                        for &i in diffs.iter().take(8) {
                            let _ = write!(
                                msg,
                                " [x={} scalar={} neon={}]",
                                input[i].to_i32(),
                                s[i].to_i32(),
                                n[i].to_i32()
                            );
                        }
                    }
                    let problem_kind = problem.split(" at src").next().unwrap_or("").to_string();
                    fails.push_keyed(
                        format!("{act:?} {} scale {scale:e}: {problem_kind}", T::NAME),
                        msg,
                    );
                }
            }
        }
    }
    points
}

/// Input scales for 8-bit logistic/tanh: log-spread over `1e-3..=30`, every
/// power of two from 2^-9 to 16 exactly and one ulp either side (the
/// multiplier shift, hence the radius, changes there; 4, 8 and 16 are where
/// the radius widening of the 8-bit path kicks in), and random ones.
fn scales_8bit() -> Vec<f32> {
    let mut v: Vec<f32> = vec![
        1e-3, 1.5e-3, 2.5e-3, 4e-3, 6e-3, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2,
        0.3, 0.4, 0.6, 0.75, 1.2, 1.5, 2.5, 3.0, 3.5, 5.0, 6.0, 7.0, 10.0, 12.0, 20.0, 24.0, 30.0,
    ];
    for e in -9..=4 {
        let p = (e as f32).exp2();
        v.extend([ulp_step(p, false), p, ulp_step(p, true)]);
    }
    let mut rng = Rng::new(1);
    v.extend((0..8).map(|_| rng.log_uniform(1e-3, 30.0)));
    v
}

#[test]
fn logistic_and_tanh_i8_every_input() {
    require_neon();
    let mut fails = Failures::new("logistic/tanh i8");
    let scales = scales_8bit();
    assert!([4.0f32, 8.0, 16.0].iter().all(|s| scales.contains(s)));
    let zps = [-128, -127, -100, -1, 0, 1, 50, 126, 127];
    let points = activation_grid::<i8>(&[Act::Logistic, Act::Tanh], &scales, &zps, &mut fails);
    fails.finish();
    assert!(points >= 2 * 50, "only {points} grid points");
}

#[test]
fn logistic_and_tanh_u8_every_input() {
    require_neon();
    let mut fails = Failures::new("logistic/tanh u8");
    let scales = scales_8bit();
    let zps = [0, 1, 64, 127, 128, 129, 200, 254, 255];
    let points = activation_grid::<u8>(&[Act::Logistic, Act::Tanh], &scales, &zps, &mut fails);
    fails.finish();
    assert!(points >= 2 * 50, "only {points} grid points");
}

/// Input scales for int16: every power of two 2^-15..=2^-8, the decimal
/// scales 1e-4, 1e-3, 0.01, 0.1 and 1, a few in between, and 4..=30.
fn scales_16bit() -> Vec<f32> {
    let mut v: Vec<f32> = (-15..=-8).map(|e| (e as f32).exp2()).collect();
    v.extend([
        1e-4, 1e-3, 0.01, 0.1, 1.0, 3.0e-5, 4.7e-4, 3.3e-3, 0.05, 0.25, 0.5,
    ]);
    // Beyond the usual int16 range: where the shift reaches 30 and 31 and the
    // radius shrinks to its minimum steps.
    v.extend([4.0, 8.0, 16.0, 30.0]);
    v
}

const ZPS_16BIT: [i32; 5] = [0, 1000, -1000, -32768, 32767];

#[test]
fn logistic_i16_every_input() {
    require_neon();
    let mut fails = Failures::new("logistic i16");
    let points = activation_grid::<i16>(&[Act::Logistic], &scales_16bit(), &ZPS_16BIT, &mut fails);
    fails.finish();
    assert!(points >= 50, "only {points} grid points");
}

#[test]
fn tanh_i16_every_input() {
    require_neon();
    let mut fails = Failures::new("tanh i16");
    let points = activation_grid::<i16>(&[Act::Tanh], &scales_16bit(), &ZPS_16BIT, &mut fails);
    fails.finish();
    assert!(points >= 50, "only {points} grid points");
}

// ---------------------------------------------------------------------------
// Softmax and log-softmax rows.

/// Row lengths of the short-row sweep: every length 1..=70 and around 384.
fn row_lengths() -> Vec<usize> {
    (1..=70).chain([383, 384, 385]).collect()
}
const ROW_LENGTHS: usize = 73;

/// Long rows: the NEON exp cache's stack size exactly (1024) and just past it
/// (heap), past the 16,384 elements after which the NEON `u32` sum lanes are
/// flushed, and 32,768 (sums far beyond TFLite's 32-bit accumulator).
const LONG_LENGTHS: [usize; 4] = [1024, 1040, 16400, 32768];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    /// Uniform over the type.
    Random,
    /// Within a few `diff_min`s below a random maximum (many non-zero exps).
    NearMax,
    /// Differences exactly at, and one either side of, `diff_min` and 0.
    Threshold,
    Constant,
    /// The type's minimum everywhere but one maximum.
    OneHot,
    /// One maximum, the rest random below it.
    OneHotRandom,
    AllMin,
    AllMax,
    /// min, max, min, max, ...
    AlternatingMinMax,
    /// max, max - 1, max, max - 1, ...
    AlternatingMaxMaxMinus1,
    /// Four distinct random levels.
    FewLevels,
}

const SHAPES: [Shape; 11] = [
    Shape::Random,
    Shape::NearMax,
    Shape::Threshold,
    Shape::Constant,
    Shape::OneHot,
    Shape::OneHotRandom,
    Shape::AllMin,
    Shape::AllMax,
    Shape::AlternatingMinMax,
    Shape::AlternatingMaxMaxMinus1,
    Shape::FewLevels,
];

/// A row of `len` values of `T` in the given shape; `diff_min` (<= 0) is the
/// op's cut-off in input steps.
fn make_row<T: QuantElem>(shape: Shape, len: usize, diff_min: i32, rng: &mut Rng) -> Vec<T> {
    let (lo, hi) = (T::MIN, T::MAX);
    let clamp = |x: i64| x.clamp(lo as i64, hi as i64) as i32;
    let band = (2 * diff_min.unsigned_abs() as i64 + 3).min((hi - lo) as i64) as i32;
    // The row and, for shapes built below a chosen maximum, that maximum (planted
    // at a random position so that it is the row's maximum).
    let (mut v, plant): (Vec<i32>, Option<i32>) = match shape {
        Shape::Random => ((0..len).map(|_| rng.range(lo, hi)).collect(), None),
        Shape::NearMax => {
            let m = rng.range(lo, hi);
            (
                (0..len)
                    .map(|_| clamp(m as i64 - rng.range(0, band) as i64))
                    .collect(),
                Some(m),
            )
        }
        Shape::Threshold => {
            // A maximum high enough that max + diff_min is representable when it can be.
            let m = if rng.below(2) == 0 {
                hi
            } else {
                rng.range(clamp(lo as i64 - diff_min as i64), hi)
            };
            let d = diff_min as i64;
            let choices = [0, -1, d + 1, d, d - 1, d / 2, d - 2];
            (
                (0..len)
                    .map(|_| clamp(m as i64 + choices[rng.below(choices.len() as u64) as usize]))
                    .collect(),
                Some(m),
            )
        }
        Shape::Constant => (vec![rng.range(lo, hi); len], None),
        Shape::OneHot => (vec![lo; len], Some(hi)),
        Shape::OneHotRandom => {
            let m = rng.range(lo, hi);
            ((0..len).map(|_| rng.range(lo, m)).collect(), Some(m))
        }
        Shape::AllMin => (vec![lo; len], None),
        Shape::AllMax => (vec![hi; len], None),
        Shape::AlternatingMinMax => (
            (0..len).map(|i| if i % 2 == 0 { lo } else { hi }).collect(),
            None,
        ),
        Shape::AlternatingMaxMaxMinus1 => (
            (0..len)
                .map(|i| if i % 2 == 0 { hi } else { hi - 1 })
                .collect(),
            None,
        ),
        Shape::FewLevels => {
            let levels: Vec<i32> = (0..4).map(|_| rng.range(lo, hi)).collect();
            (
                (0..len).map(|_| levels[rng.below(4) as usize]).collect(),
                None,
            )
        }
    };
    if let Some(m) = plant {
        v[rng.below(len as u64) as usize] = m;
    }
    v.into_iter().map(T::from_i32).collect()
}

/// Runs a row op on `rows` (concatenated, `row_len` each) with both backends
/// and reports the first differing row, re-run alone, in detail.
fn compare_rows<T: Elem>(
    label: &dyn Fn() -> String,
    f: &RowFn<'_, T>,
    input: &[T],
    row_len: usize,
    row_names: &dyn Fn(usize) -> String,
    fails: &mut Failures,
) {
    let g = |b: Backend, x: &[T], y: &mut [T]| f(b, x, y, row_len);
    let s = run_backend(Backend::Scalar, input, &g);
    let n = run_backend(Backend::Neon, input, &g);
    let Some(problem) = outcome_problem(&s, &n) else {
        return;
    };
    let key = format!(
        "{}: {}",
        label(),
        problem.split(" at src").next().unwrap_or("")
    );
    let mut msg = format!(
        "{}; {} rows of {row_len}: {problem}",
        label(),
        input.len() / row_len
    );
    if let (Ok(Ok(s)), Ok(Ok(n))) = (&s, &n) {
        let first = (0..input.len()).find(|&i| s[i] != n[i]).unwrap();
        let r = first / row_len;
        let row = &input[r * row_len..(r + 1) * row_len];
        let (s_row, n_row) = (
            &s[r * row_len..(r + 1) * row_len],
            &n[r * row_len..(r + 1) * row_len],
        );
        let alone = outcome_problem(
            &run_backend(Backend::Scalar, row, &g),
            &run_backend(Backend::Neon, row, &g),
        );
        let bad: Vec<usize> = (0..row_len).filter(|&i| s_row[i] != n_row[i]).collect();
        let _ = write!(
            msg,
            "\n  first differing row: #{r} ({}), {} of {row_len} elements differ, {}",
            row_names(r),
            bad.len(),
            match alone {
                Some(p) => format!("also alone ({p})"),
                None => "but NOT when run alone".into(),
            }
        );
        for &i in bad.iter().take(6) {
            let _ = write!(
                msg,
                "\n  [{i}] x={} scalar={} neon={}",
                row[i].wide(),
                s_row[i].wide(),
                n_row[i].wide()
            );
        }
        if row_len <= 64 {
            let _ = write!(msg, "\n  row = {:?}", widen(row));
        }
    }
    fails.push_keyed(key, msg);
}

/// (input scale, beta) for softmax: the extremes by construction, then random.
/// * 1e-20: `beta * scale * 2^26` below 2^-32, multiplier 0;
/// * 1e-12 .. 1e-9: product below 1/2, a negative multiplier shift;
/// * 1e-8, 1e-6 (beta 0.1): products of 0.67 and 6.7, shifts 0 and 3;
/// * 10 .. 1e3 with large beta: the multiplier is capped at 2^31 - 1.
const SOFTMAX_FIXED: [(f32, f32); 18] = [
    (1e-20, 1.0),
    (1e-12, 1.0),
    (1e-9, 0.1),
    (1e-8, 1.0),
    (1e-6, 0.1),
    (1e-6, 10.0),
    (2e-5, 0.5),
    (1e-4, 1.0),
    (1e-3, 3.0),
    (0.01, 1.0),
    (0.05, 0.7),
    (0.1, 1.0),
    (0.25, 2.0),
    (1.0, 1.0),
    (4.0, 1.0),
    (10.0, 10.0),
    (1e3, 0.1),
    (1e3, 10.0),
];
const SOFTMAX_RANDOM: usize = 18;
const SOFTMAX_PARAM_SETS: usize = SOFTMAX_FIXED.len() + SOFTMAX_RANDOM;
/// Parameter sets of the long rows (each: every long length, as rows of the long shapes).
const LONG_PARAM_SETS: usize = 6;
const LONG_SHAPES: [Shape; 4] = [
    Shape::Random,
    Shape::NearMax,
    Shape::AllMax,
    Shape::Threshold,
];

/// Rows checked by each softmax / log-softmax test.
const ROWS_PER_ROW_TEST: usize = ROW_LENGTHS * SOFTMAX_PARAM_SETS * SHAPES.len()
    + LONG_PARAM_SETS * LONG_LENGTHS.len() * LONG_SHAPES.len();
/// Rows checked by the Q31 softmax test (per integer_bits, times 29).
const Q31_ROW_LENGTHS: usize = 42;
const Q31_ROWS: usize = (q31::MAX_INTEGER_BITS as usize + 1) * Q31_ROW_LENGTHS * Q31_SHAPES.len();
/// Three softmax types, two log-softmax types, and Q31.
const _: () = assert!(5 * ROWS_PER_ROW_TEST + Q31_ROWS >= 10_000);

fn softmax_params(rng: &mut Rng) -> Vec<(f32, f32)> {
    let mut v = SOFTMAX_FIXED.to_vec();
    v.extend((0..SOFTMAX_RANDOM).map(|_| (rng.log_uniform(1e-6, 1e3), rng.log_uniform(0.1, 10.0))));
    v
}

/// Input zero points cycled through the parameter sets (softmax ignores the
/// input zero point; it must not matter).
fn zero_point_for<T: QuantElem>(i: usize, rng: &mut Rng) -> i32 {
    match i % 4 {
        0 => T::MIN,
        1 => T::MAX,
        2 => (T::MIN + T::MAX) / 2,
        _ => rng.range(T::MIN, T::MAX),
    }
}

/// What the softmax parameter grid covered, checked so that the grid cannot
/// silently drift away from the regimes it is meant to test.
#[derive(Default)]
struct Regimes {
    zero_multiplier: bool,
    negative_shift: bool,
    capped: bool,
    diff_min_zero: bool,
}

/// Sweeps one row op over the lengths, parameter sets and shapes; returns the
/// number of rows compared.
fn sweep_rows<T: QuantElem + Elem>(
    op: &'static str,
    params: &[(f32, f32)],
    // Builds the op for (input quantization, beta): a runner and its diff_min.
    build: &RowBuilder<'_, T>,
    rng: &mut Rng,
    fails: &mut Failures,
) -> usize {
    let mut rows = 0;
    let mut sets = Vec::new();
    for (i, &(scale, beta)) in params.iter().enumerate() {
        let q = QuantParams::new(scale, zero_point_for::<T>(i, rng));
        match build(q, beta) {
            Ok((run, diff_min)) => sets.push((q, beta, run, diff_min)),
            Err(e) => fails.push(format!(
                "{op} {}: new({q:?}, beta {beta}) failed: {e:?}",
                T::NAME
            )),
        }
    }
    for len in row_lengths() {
        for (q, beta, run, diff_min) in &sets {
            let mut input = Vec::with_capacity(len * SHAPES.len());
            for shape in SHAPES {
                input.extend(make_row::<T>(shape, len, *diff_min, rng));
            }
            rows += SHAPES.len();
            let label = || {
                format!(
                    "{op} {}: input {q:?}, beta {beta}, diff_min {diff_min}",
                    T::NAME
                )
            };
            compare_rows(
                &label,
                &**run,
                &input,
                len,
                &|r| format!("{:?}", SHAPES[r]),
                fails,
            );
        }
    }
    // Long rows: the shapes as rows of one call, a few parameter sets.
    let step = sets.len().div_ceil(LONG_PARAM_SETS).max(1);
    for (q, beta, run, diff_min) in sets.iter().step_by(step).take(LONG_PARAM_SETS) {
        for len in LONG_LENGTHS {
            let mut input = Vec::with_capacity(len * LONG_SHAPES.len());
            for shape in LONG_SHAPES {
                input.extend(make_row::<T>(shape, len, *diff_min, rng));
            }
            rows += LONG_SHAPES.len();
            let label = || {
                format!(
                    "{op} {}: input {q:?}, beta {beta}, diff_min {diff_min}",
                    T::NAME
                )
            };
            compare_rows(
                &label,
                &**run,
                &input,
                len,
                &|r| format!("{:?}", LONG_SHAPES[r]),
                fails,
            );
        }
    }
    rows
}

fn softmax_sweep<T: QuantElem + Elem>(stream: u64) {
    require_neon();
    let mut rng = Rng::new(stream);
    let mut fails = Failures::new("softmax");
    let params = softmax_params(&mut rng);
    let out = match T::NAME {
        "int8" => QuantParams::new(1.0 / 256.0, -128),
        "uint8" => QuantParams::new(1.0 / 256.0, 0),
        _ => QuantParams::new(1.0 / 32768.0, 0),
    };
    let regimes = std::cell::RefCell::new(Regimes::default());
    let build = |q: QuantParams, beta: f32| -> qneon::Result<(RowRunner<T>, i32)> {
        let op = Softmax::<T>::new(q, beta, out, Method::FixedPoint)?;
        let p = *op.params();
        let mut r = regimes.borrow_mut();
        r.zero_multiplier |= p.input_multiplier == 0;
        r.negative_shift |= p.input_shift < 0 && p.input_multiplier != 0;
        r.capped |= p.input_multiplier == i32::MAX;
        r.diff_min_zero |= p.diff_min == 0;
        let run: RowRunner<T> = Box::new(move |b, x, y, n| op.run_with(b, x, y, n));
        Ok((run, p.diff_min))
    };
    let rows = sweep_rows::<T>("softmax", &params, &build, &mut rng, &mut fails);
    fails.finish();
    assert_eq!(rows, ROWS_PER_ROW_TEST);
    let r = regimes.borrow();
    assert!(
        r.zero_multiplier && r.negative_shift && r.capped && r.diff_min_zero,
        "grid lost a regime"
    );
}

/// `Method::Lut` softmax (int8/uint8) over the same grid: split register
/// tables, the full 256-entry tables of small scales, and every number of
/// output-table chunks. Rows are shaped with `Method::FixedPoint`'s cut-off.
fn softmax_lut_sweep<T: QuantElem + Elem>(stream: u64) {
    require_neon();
    let mut rng = Rng::new(stream);
    let mut fails = Failures::new("softmax lut");
    let params = softmax_params(&mut rng);
    let out = QuantParams::new(1.0 / 256.0, T::MIN);
    let build = |q: QuantParams, beta: f32| -> qneon::Result<(RowRunner<T>, i32)> {
        let diff_min = Softmax::<T>::new(q, beta, out, Method::FixedPoint)?
            .params()
            .diff_min;
        let op = Softmax::<T>::new(q, beta, out, Method::Lut)?;
        let run: RowRunner<T> = Box::new(move |b, x, y, n| op.run_with(b, x, y, n));
        Ok((run, diff_min))
    };
    let rows = sweep_rows::<T>("softmax lut", &params, &build, &mut rng, &mut fails);
    fails.finish();
    assert_eq!(rows, ROWS_PER_ROW_TEST);
}

fn log_softmax_sweep<T: QuantElem + Elem>(stream: u64) {
    require_neon();
    let mut rng = Rng::new(stream);
    let mut fails = Failures::new("log_softmax");
    // Log-softmax has beta 1: the same scale extremes, beta folded in.
    let params: Vec<(f32, f32)> = softmax_params(&mut rng)
        .into_iter()
        .map(|(s, b)| (s * b, 1.0))
        .collect();
    let out = QuantParams::new(16.0 / 256.0, if T::NAME == "int8" { 127 } else { 255 });
    let regimes = std::cell::RefCell::new(Regimes::default());
    let build = |q: QuantParams, _beta: f32| -> qneon::Result<(RowRunner<T>, i32)> {
        let op = LogSoftmax::<T>::new(q, out, Method::FixedPoint)?;
        let p = *op.params();
        let mut r = regimes.borrow_mut();
        r.zero_multiplier |= p.input_multiplier == 0;
        r.negative_shift |= p.input_shift < 0 && p.input_multiplier != 0;
        r.capped |= p.input_multiplier == i32::MAX;
        r.diff_min_zero |= p.diff_min == 0;
        let run: RowRunner<T> = Box::new(move |b, x, y, n| op.run_with(b, x, y, n));
        Ok((run, p.diff_min))
    };
    let rows = sweep_rows::<T>("log_softmax", &params, &build, &mut rng, &mut fails);
    fails.finish();
    assert_eq!(rows, ROWS_PER_ROW_TEST);
    let r = regimes.borrow();
    assert!(
        r.zero_multiplier && r.negative_shift && r.capped && r.diff_min_zero,
        "grid lost a regime"
    );
}

#[test]
fn softmax_i8_rows() {
    softmax_sweep::<i8>(10);
}

#[test]
fn softmax_u8_rows() {
    softmax_sweep::<u8>(11);
}

#[test]
fn softmax_i16_rows() {
    softmax_sweep::<i16>(12);
}

#[test]
fn softmax_lut_i8_rows() {
    softmax_lut_sweep::<i8>(15);
}

#[test]
fn softmax_lut_u8_rows() {
    softmax_lut_sweep::<u8>(16);
}

#[test]
fn log_softmax_i8_rows() {
    log_softmax_sweep::<i8>(13);
}

#[test]
fn log_softmax_u8_rows() {
    log_softmax_sweep::<u8>(14);
}

// ---------------------------------------------------------------------------
// Raw Q31.

/// Raw values that sit on a boundary: the extremes, 0 +- 1, and every power of
/// two +- 1 with both signs (which includes +-1.0 and +-32.0 at every
/// integer-bit count).
fn q31_boundaries() -> Vec<i32> {
    let mut v = vec![
        i32::MIN,
        i32::MIN + 1,
        i32::MIN + 2,
        -2,
        -1,
        0,
        1,
        2,
        i32::MAX - 1,
        i32::MAX,
    ];
    for k in 0..31 {
        let p = 1i64 << k;
        for x in [p - 1, p, p + 1, -p - 1, -p, -p + 1] {
            v.push(x.clamp(i32::MIN as i64, i32::MAX as i64) as i32);
        }
    }
    v
}

/// A random raw value of random magnitude (uniform over bit lengths, then
/// uniform within), so small values are as common as large ones.
fn q31_random(rng: &mut Rng) -> i32 {
    if rng.below(4) == 0 {
        return rng.i32();
    }
    let bits = rng.below(32) as u32;
    let mag = (rng.next_u64() >> (64 - 31)) as i64 >> (31 - bits.min(31));
    (if rng.below(2) == 0 { mag } else { -mag - 1 }) as i32
}

fn q31_values(rng: &mut Rng) -> Vec<i32> {
    let mut v = q31_boundaries();
    v.extend((0..12_000).map(|_| q31_random(rng)));
    // 12,000 + the boundaries is not a multiple of 16: the tail path runs too.
    assert_ne!(v.len() % 16, 0);
    v
}

#[test]
fn q31_logistic_and_tanh_every_integer_bits() {
    require_neon();
    let mut rng = Rng::new(20);
    let mut fails = Failures::new("q31 logistic/tanh");
    let values = q31_values(&mut rng);
    for bits in 0..=q31::MAX_INTEGER_BITS {
        type F = fn(Backend, &[i32], u32, &mut [i32]) -> qneon::Result<()>;
        let ops: [(&str, F); 2] = [
            ("logistic", |b, x, i, y| q31::logistic_with(b, x, i, y)),
            ("tanh", |b, x, i, y| q31::tanh_with(b, x, i, y)),
        ];
        for (name, op) in ops {
            let g = |b: Backend, x: &[i32], y: &mut [i32]| op(b, x, bits, y);
            let s = run_backend(Backend::Scalar, &values, &g);
            let n = run_backend(Backend::Neon, &values, &g);
            if let Some(problem) = outcome_problem(&s, &n) {
                let mut msg = format!("q31 {name}, integer_bits {bits}: {problem}");
                if let (Ok(Ok(s)), Ok(Ok(n))) = (&s, &n) {
                    let bad: Vec<usize> = (0..values.len()).filter(|&i| s[i] != n[i]).collect();
                    let _ = write!(msg, "; {} of {} differ:", bad.len(), values.len());
                    for &i in bad.iter().take(8) {
                        let _ = write!(msg, " [x={} scalar={} neon={}]", values[i], s[i], n[i]);
                    }
                } else {
                    // Find one value that fails on its own.
                    for &x in &values {
                        let a = run_backend(Backend::Scalar, &[x], &g);
                        let b = run_backend(Backend::Neon, &[x], &g);
                        if let Some(p) = outcome_problem(&a, &b) {
                            let _ = write!(msg, "; e.g. the single value {x}: {p}");
                            break;
                        }
                    }
                }
                fails.push(msg);
            }
        }
    }
    fails.finish();
}

#[derive(Clone, Copy, Debug)]
enum Q31Shape {
    /// Uniform over i32.
    Random,
    /// Random magnitudes (small differences, many non-zero exps).
    RandomMagnitude,
    /// Random values with i32::MIN and i32::MAX planted in the row.
    WithMinAndMax,
    Constant,
    /// i32::MIN everywhere, one i32::MAX.
    OneHot,
    AllMin,
    AllMax,
    /// MIN, MAX, MIN, MAX, ...
    AlternatingMinMax,
    /// Just below the maximum: i32::MAX minus small amounts.
    NearMax,
}

const Q31_SHAPES: [Q31Shape; 9] = [
    Q31Shape::Random,
    Q31Shape::RandomMagnitude,
    Q31Shape::WithMinAndMax,
    Q31Shape::Constant,
    Q31Shape::OneHot,
    Q31Shape::AllMin,
    Q31Shape::AllMax,
    Q31Shape::AlternatingMinMax,
    Q31Shape::NearMax,
];

fn q31_row(shape: Q31Shape, len: usize, bits: u32, rng: &mut Rng) -> Vec<i32> {
    let one = 1i64 << (31 - bits); // raw 1.0
    match shape {
        Q31Shape::Random => (0..len).map(|_| rng.i32()).collect(),
        Q31Shape::RandomMagnitude => (0..len).map(|_| q31_random(rng)).collect(),
        Q31Shape::WithMinAndMax => {
            let mut v: Vec<i32> = (0..len).map(|_| q31_random(rng)).collect();
            v[rng.below(len as u64) as usize] = i32::MIN;
            v[rng.below(len as u64) as usize] = i32::MAX;
            if len >= 2 && !v.contains(&i32::MIN) {
                let i = v.iter().position(|&x| x != i32::MAX).unwrap_or(0);
                v[i] = i32::MIN;
            }
            v
        }
        Q31Shape::Constant => vec![rng.i32(); len],
        Q31Shape::OneHot => {
            let mut v = vec![i32::MIN; len];
            v[rng.below(len as u64) as usize] = i32::MAX;
            v
        }
        Q31Shape::AllMin => vec![i32::MIN; len],
        Q31Shape::AllMax => vec![i32::MAX; len],
        Q31Shape::AlternatingMinMax => (0..len)
            .map(|i| if i % 2 == 0 { i32::MIN } else { i32::MAX })
            .collect(),
        Q31Shape::NearMax => (0..len)
            .map(|_| {
                (i32::MAX as i64 - rng.below((40 * one) as u64) as i64).max(i32::MIN as i64) as i32
            })
            .collect(),
    }
}

#[test]
fn q31_softmax_every_integer_bits() {
    require_neon();
    let mut rng = Rng::new(21);
    let mut fails = Failures::new("q31 softmax");
    let mut rows = 0;
    let mut min_and_max_rows = 0;
    for bits in 0..=q31::MAX_INTEGER_BITS {
        let run = move |b: Backend, x: &[i32], y: &mut [i32], n: usize| {
            q31::softmax_with(b, x, bits, y, n)
        };
        for len in (1..=40).chain([384, 1040]) {
            let mut input = Vec::new();
            for shape in Q31_SHAPES {
                let row = q31_row(shape, len, bits, &mut rng);
                min_and_max_rows += (row.contains(&i32::MIN) && row.contains(&i32::MAX)) as usize;
                input.extend(row);
            }
            rows += Q31_SHAPES.len();
            let label = || format!("q31 softmax, integer_bits {bits}");
            compare_rows::<i32>(
                &label,
                &run,
                &input,
                len,
                &|r| format!("{:?}", Q31_SHAPES[r]),
                &mut fails,
            );
        }
    }
    fails.finish();
    assert_eq!(rows, Q31_ROWS);
    assert!(
        min_and_max_rows >= 29 * 41 * 3,
        "only {min_and_max_rows} rows held both i32::MIN and i32::MAX"
    );
}

// ---------------------------------------------------------------------------
// `run()` picks NEON.

fn random_input<T: QuantElem>(len: usize, rng: &mut Rng) -> Vec<T> {
    (0..len)
        .map(|_| T::from_i32(rng.range(T::MIN, T::MAX)))
        .collect()
}

/// `run()` of every op on `T` reports NEON and gives the scalar bytes.
fn run_is_neon<T: QuantElem + Elem>(rng: &mut Rng) -> usize {
    let mut checked = 0;
    for _ in 0..6 {
        let (row_len, rows) = (1 + rng.below(80) as usize, 1 + rng.below(3) as usize);
        let x = random_input::<T>(row_len * rows, rng);
        let q = QuantParams::new(rng.log_uniform(1e-3, 10.0), rng.range(T::MIN, T::MAX));
        let both = |run: &dyn Fn(&mut [T]) -> qneon::Result<()>,
                    scalar: &dyn Fn(&mut [T]) -> qneon::Result<()>| {
            let (mut a, mut b) = (vec![T::default(); x.len()], vec![T::default(); x.len()]);
            run(&mut a).unwrap();
            scalar(&mut b).unwrap();
            assert_eq!(
                widen(&a),
                widen(&b),
                "run() differs from scalar: {} input {q:?}, x = {:?}",
                T::NAME,
                widen(&x)
            );
        };

        let out = match T::NAME {
            "int8" => QuantParams::new(1.0 / 256.0, -128),
            "uint8" => QuantParams::new(1.0 / 256.0, 0),
            _ => QuantParams::new(1.0 / 32768.0, 0),
        };
        let sm = Softmax::<T>::new(q, rng.log_uniform(0.1, 10.0), out, Method::FixedPoint).unwrap();
        assert_eq!(
            sm.backend(),
            Backend::Neon,
            "Softmax<{}>::run() does not use NEON",
            T::NAME
        );
        both(&|y| sm.run(&x, y, row_len), &|y| {
            sm.run_with(Backend::Scalar, &x, y, row_len)
        });

        let lg = Logistic::<T>::new(q, act_output::<T>(Act::Logistic), Method::FixedPoint).unwrap();
        assert_eq!(
            lg.backend(),
            Backend::Neon,
            "Logistic<{}>::run() does not use NEON",
            T::NAME
        );
        both(&|y| lg.run(&x, y), &|y| lg.run_with(Backend::Scalar, &x, y));

        let th = Tanh::<T>::new(q, act_output::<T>(Act::Tanh), Method::FixedPoint).unwrap();
        assert_eq!(
            th.backend(),
            Backend::Neon,
            "Tanh<{}>::run() does not use NEON",
            T::NAME
        );
        both(&|y| th.run(&x, y), &|y| th.run_with(Backend::Scalar, &x, y));
        checked += 3;

        if T::NAME != "int16" {
            let out = QuantParams::new(16.0 / 256.0, if T::NAME == "int8" { 127 } else { 255 });
            let ls = LogSoftmax::<T>::new(q, out, Method::FixedPoint).unwrap();
            assert_eq!(
                ls.backend(),
                Backend::Neon,
                "LogSoftmax<{}>::run() does not use NEON",
                T::NAME
            );
            both(&|y| ls.run(&x, y, row_len), &|y| {
                ls.run_with(Backend::Scalar, &x, y, row_len)
            });
            checked += 1;
        }
    }
    checked
}

#[test]
fn run_uses_neon_and_matches_scalar() {
    require_neon();
    let mut rng = Rng::new(30);
    let checked =
        run_is_neon::<i8>(&mut rng) + run_is_neon::<u8>(&mut rng) + run_is_neon::<i16>(&mut rng);
    assert_eq!(checked, 6 * (4 + 4 + 3));

    // The Q31 entry points without a backend use the best one, NEON here.
    for _ in 0..6 {
        let bits = rng.below(q31::MAX_INTEGER_BITS as u64 + 1) as u32;
        let (row_len, rows) = (1 + rng.below(80) as usize, 1 + rng.below(3) as usize);
        let x: Vec<i32> = (0..row_len * rows).map(|_| q31_random(&mut rng)).collect();
        let (mut a, mut b) = (vec![0i32; x.len()], vec![0i32; x.len()]);
        q31::softmax(&x, bits, &mut a, row_len).unwrap();
        q31::softmax_with(Backend::Scalar, &x, bits, &mut b, row_len).unwrap();
        assert_eq!(
            a, b,
            "q31::softmax (best) differs from scalar, integer_bits {bits}, x = {x:?}"
        );
        q31::logistic(&x, bits, &mut a).unwrap();
        q31::logistic_with(Backend::Scalar, &x, bits, &mut b).unwrap();
        assert_eq!(
            a, b,
            "q31::logistic (best) differs from scalar, integer_bits {bits}, x = {x:?}"
        );
        q31::tanh(&x, bits, &mut a).unwrap();
        q31::tanh_with(Backend::Scalar, &x, bits, &mut b).unwrap();
        assert_eq!(
            a, b,
            "q31::tanh (best) differs from scalar, integer_bits {bits}, x = {x:?}"
        );
    }
}
