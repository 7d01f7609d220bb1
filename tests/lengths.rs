//! Every op, element type and backend on every short length and alignment,
//! with the bytes around the output watched.
//!
//! For each case (op, element type, length or row shape) and each backend in
//! [`Backend::available()`] (on the host only scalar; on aarch64 scalar and
//! NEON, and NEON must be there), the input and the output are subslices of
//! larger buffers starting at every offset `0..16`, independently, so both
//! start at every alignment a 16-byte vector load or store can meet. Then:
//!
//! * (a) every output element is written and equals the scalar result computed
//!   on fresh, exactly sized buffers. The output buffer is poisoned with a
//!   sentinel chosen to differ from every expected output element, so an
//!   element left unwritten cannot pass;
//! * (b) nothing outside the output subslice changes: the whole larger
//!   buffer is poisoned and its margins (the offset before, 32 elements after)
//!   must still hold the sentinel;
//! * (c) the input buffer, margins included, is unchanged. Its margins hold
//!   the type's maximum, so a row op that read past its row would see a
//!   different row maximum and fail (a).
//!
//! Lengths are `0..=3*16+1` for element-wise ops; row ops use `row_len`
//! `1..=49` with 1, 2 and 3 rows, and the empty buffer with `row_len` 1 and 5.
//!
//! # Empty input
//!
//! What the crate does, asserted by `empty_buffers_and_errors`:
//! * element-wise ops (logistic, tanh, Q31 logistic/tanh) on empty slices
//!   return `Ok(())` and write nothing;
//! * row ops (softmax, log-softmax, Q31 softmax) on empty slices return
//!   `Ok(())` (zero rows) for any `row_len >= 1`, and
//!   `Err(Error::RowLength { len: 0, row: 0, .. })` for `row_len == 0`, as for
//!   non-empty buffers;
//! * a length mismatch is `Err(Error::LengthMismatch)`, a `row_len` that does
//!   not divide the length `Err(Error::RowLength)`, an unavailable backend
//!   `Err(Error::BackendUnavailable)`; in every error case the output is
//!   left untouched.

use qneon::q31;
use qneon::{Backend, Error, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh};
use std::fmt::Debug;

/// The NEON block size: lengths up to 3 blocks + 1 cover no block, partial
/// blocks, whole blocks and whole blocks plus a tail.
const BLOCK: usize = 16;
const MAX_LEN: usize = 3 * BLOCK + 1;
/// Offsets `0..OFFSETS` of the input and of the output subslices.
const OFFSETS: usize = 16;
/// Watched elements after each subslice.
const MARGIN: usize = 2 * BLOCK;

/// The backends to test; on aarch64 NEON must be among them.
fn backends() -> Vec<Backend> {
    if cfg!(target_arch = "aarch64") {
        assert!(
            Backend::Neon.is_available(),
            "compiled for aarch64 but Backend::Neon is not available: refusing to test scalar only"
        );
    }
    let v: Vec<Backend> = Backend::available().collect();
    assert_eq!(
        v.first(),
        Some(&Backend::Scalar),
        "scalar must always be available, and first"
    );
    v
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + ((self.next_u64() as u128 * (hi - lo + 1) as u128) >> 64) as i64
    }
}

/// The element types under test: the quantized ones and raw Q31 (`i32`).
trait Elem: Copy + PartialEq + Debug + 'static {
    const MIN: i64;
    const MAX: i64;
    fn from_i64(x: i64) -> Self;
}

macro_rules! elem {
    ($($t:ty)*) => {$(
        impl Elem for $t {
            const MIN: i64 = <$t>::MIN as i64;
            const MAX: i64 = <$t>::MAX as i64;
            fn from_i64(x: i64) -> Self {
                <$t>::try_from(x).expect("value in range")
            }
        }
    )*};
}
elem!(i8 u8 i16 i32);

/// A value of `T` that occurs nowhere in `values`.
fn sentinel_for<T: Elem>(values: &[T], rng: &mut Rng) -> T {
    let start = rng.range(T::MIN, T::MAX);
    let span = T::MAX - T::MIN + 1;
    (0..span)
        .map(|k| T::from_i64(T::MIN + (start - T::MIN + k) % span))
        .find(|s| !values.contains(s))
        .expect("fewer elements than values of the type")
}

type Runner<T> = Box<dyn Fn(Backend, &[T], &mut [T], usize) -> qneon::Result<()>>;
/// Makes an input of the given length.
type Gen<T> = Box<dyn Fn(usize, &mut Rng) -> Vec<T>>;

/// One operator on one element type.
struct Op<T> {
    name: String,
    /// Row-wise (softmax-like) rather than element-wise.
    rows: bool,
    run: Runner<T>,
    /// Fills an input of the given length.
    gen: Gen<T>,
}

/// (buffer length, row_len) pairs: element-wise ops take every length
/// `0..=MAX_LEN` (row_len ignored); row ops every row_len `1..=MAX_LEN` with
/// 1 to 3 rows, and the empty buffer with row_len 1 and 5.
fn shapes(rows: bool) -> Vec<(usize, usize)> {
    if rows {
        let mut v = vec![(0, 1), (0, 5)];
        for row_len in 1..=MAX_LEN {
            v.extend((1..=3).map(|n| (n * row_len, row_len)));
        }
        v
    } else {
        (0..=MAX_LEN).map(|n| (n, 1)).collect()
    }
}

/// Failures of one op: counted, the first few kept.
#[derive(Default)]
struct Failures {
    kept: Vec<String>,
    total: usize,
}

impl Failures {
    fn push(&mut self, msg: String) {
        self.total += 1;
        if self.kept.len() < 20 {
            self.kept.push(msg);
        }
    }
}

/// Runs every shape of `op` on every backend at every pair of offsets; returns
/// the number of runs checked.
fn check_op<T: Elem>(op: &Op<T>, rng: &mut Rng, fails: &mut Failures) -> usize {
    let backends = backends();
    let mut runs = 0;
    // Addresses mod 16 the subslices started at (input, output).
    let (mut in_align, mut out_align) = (
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    );
    for (len, row_len) in shapes(op.rows) {
        let input = (op.gen)(len, rng);
        let case = |b: Backend, i: usize, o: usize| {
            format!(
                "{} len {len} row_len {row_len} {} in+{i} out+{o}",
                op.name,
                b.name()
            )
        };

        // The reference: scalar on fresh, exactly sized buffers.
        let fresh_in = input.clone();
        let mut expected = vec![T::from_i64(0); len];
        if let Err(e) = (op.run)(Backend::Scalar, &fresh_in, &mut expected, row_len) {
            fails.push(format!(
                "{} len {len} row_len {row_len}: scalar reference failed: {e:?}",
                op.name
            ));
            continue;
        }
        assert_eq!(fresh_in, input);
        let sentinel = sentinel_for(&expected, rng);

        for &backend in &backends {
            for in_off in 0..OFFSETS {
                // Input margins hold the maximum: reading them would move a row's maximum.
                let mut big_in = vec![T::from_i64(T::MAX); in_off + len + MARGIN];
                big_in[in_off..in_off + len].copy_from_slice(&input);
                let before = big_in.clone();
                for out_off in 0..OFFSETS {
                    runs += 1;
                    let mut big_out = vec![sentinel; out_off + len + MARGIN];
                    in_align.insert(big_in[in_off..].as_ptr() as usize % 16);
                    out_align.insert(big_out[out_off..].as_ptr() as usize % 16);
                    let result = (op.run)(
                        backend,
                        &big_in[in_off..in_off + len],
                        &mut big_out[out_off..out_off + len],
                        row_len,
                    );
                    if let Err(e) = result {
                        fails.push(format!(
                            "{}: returned {e:?}",
                            case(backend, in_off, out_off)
                        ));
                        continue;
                    }
                    // (a) every element written, equal to the fresh scalar result.
                    let got = &big_out[out_off..out_off + len];
                    if got != &expected[..] {
                        let bad: Vec<String> = (0..len)
                            .filter(|&i| got[i] != expected[i])
                            .take(6)
                            .map(|i| {
                                let unwritten = if got[i] == sentinel {
                                    " (unwritten)"
                                } else {
                                    ""
                                };
                                format!("[{i}] got {:?} want {:?}{unwritten}", got[i], expected[i])
                            })
                            .collect();
                        fails.push(format!(
                            "{}: wrong output: {}; input {:?}",
                            case(backend, in_off, out_off),
                            bad.join(", "),
                            input
                        ));
                    }
                    // (b) nothing around the output subslice touched.
                    let touched: Vec<usize> = (0..big_out.len())
                        .filter(|&i| {
                            !(out_off..out_off + len).contains(&i) && big_out[i] != sentinel
                        })
                        .collect();
                    if !touched.is_empty() {
                        fails.push(format!(
                            "{}: wrote outside the output slice at buffer index(es) {:?} (slice is {}..{})",
                            case(backend, in_off, out_off),
                            touched,
                            out_off,
                            out_off + len
                        ));
                    }
                    // (c) input unchanged, margins included.
                    if big_in != before {
                        fails.push(format!(
                            "{}: modified its input buffer",
                            case(backend, in_off, out_off)
                        ));
                        big_in.copy_from_slice(&before);
                    }
                }
            }
        }
    }
    // Offsets 0..16 elements reach every 16-byte alignment the type can have.
    let alignments = 16 / std::mem::size_of::<T>();
    assert_eq!(
        (in_align.len(), out_align.len()),
        (alignments, alignments),
        "{}: alignments not all covered",
        op.name
    );
    runs
}

/// Checks every op; returns a report of the failures (empty if none).
fn check_ops<T: Elem>(ops: Vec<Op<T>>, seed: u64) -> String {
    let mut rng = Rng(seed);
    let mut report = String::new();
    for op in &ops {
        let mut fails = Failures::default();
        let runs = check_op(op, &mut rng, &mut fails);
        // Every shape, every backend, every pair of offsets.
        assert_eq!(
            runs,
            shapes(op.rows).len() * backends().len() * OFFSETS * OFFSETS,
            "{}: runs skipped",
            op.name
        );
        if fails.total > 0 {
            report += &format!(
                "\n{}: {} failure(s), first {}:\n  {}\n",
                op.name,
                fails.total,
                fails.kept.len(),
                fails.kept.join("\n  ")
            );
        }
    }
    report
}

/// Fails with every op's report, if any op failed.
fn assert_clean(reports: &[String]) {
    let report: String = reports.concat();
    assert!(report.is_empty(), "backends: {:?}\n{report}", backends());
}

// ---------------------------------------------------------------------------
// The ops.

/// Uniform over the type.
fn gen_uniform<T: Elem>() -> Gen<T> {
    Box::new(|len, rng| {
        (0..len)
            .map(|_| T::from_i64(rng.range(T::MIN, T::MAX)))
            .collect()
    })
}

/// Within `spread` below a random level: softmax rows with many non-zero outputs.
fn gen_band<T: Elem>(spread: i64) -> Gen<T> {
    Box::new(move |len, rng| {
        let top = rng.range(T::MIN, T::MAX);
        (0..len)
            .map(|_| T::from_i64((top - rng.range(0, spread)).max(T::MIN)))
            .collect()
    })
}

fn activation_ops<T: QuantElem + Elem>(scale: f32, zero_point: i32) -> Vec<Op<T>> {
    let q = QuantParams::new(scale, zero_point);
    let (logistic_out, tanh_out) = match T::NAME {
        "int8" => (
            QuantParams::new(1.0 / 256.0, -128),
            QuantParams::new(1.0 / 128.0, 0),
        ),
        "uint8" => (
            QuantParams::new(1.0 / 256.0, 0),
            QuantParams::new(1.0 / 128.0, 128),
        ),
        _ => (
            QuantParams::new(1.0 / 32768.0, 0),
            QuantParams::new(1.0 / 32768.0, 0),
        ),
    };
    let logistic = Logistic::<T>::new(q, logistic_out, Method::FixedPoint).unwrap();
    let tanh = Tanh::<T>::new(q, tanh_out, Method::FixedPoint).unwrap();
    vec![
        Op {
            name: format!("logistic {}", T::NAME),
            rows: false,
            run: Box::new(move |b, x, y, _| logistic.run_with(b, x, y)),
            gen: gen_uniform(),
        },
        Op {
            name: format!("tanh {}", T::NAME),
            rows: false,
            run: Box::new(move |b, x, y, _| tanh.run_with(b, x, y)),
            gen: gen_uniform(),
        },
    ]
}

fn softmax_op<T: QuantElem + Elem>(scale: f32, beta: f32, spread: i64) -> Op<T> {
    let out = match T::NAME {
        "int8" => QuantParams::new(1.0 / 256.0, -128),
        "uint8" => QuantParams::new(1.0 / 256.0, 0),
        _ => QuantParams::new(1.0 / 32768.0, 0),
    };
    let op = Softmax::<T>::new(
        QuantParams::new(scale, 0.max(<T as QuantElem>::MIN)),
        beta,
        out,
        Method::FixedPoint,
    )
    .unwrap();
    Op {
        name: format!("softmax {}", T::NAME),
        rows: true,
        run: Box::new(move |b, x, y, n| op.run_with(b, x, y, n)),
        gen: gen_band(spread),
    }
}

fn log_softmax_op<T: QuantElem + Elem>(scale: f32) -> Op<T> {
    let out = QuantParams::new(16.0 / 256.0, if T::NAME == "int8" { 127 } else { 255 });
    let op = LogSoftmax::<T>::new(
        QuantParams::new(scale, 0.max(<T as QuantElem>::MIN)),
        out,
        Method::FixedPoint,
    )
    .unwrap();
    Op {
        name: format!("log_softmax {}", T::NAME),
        rows: true,
        run: Box::new(move |b, x, y, n| op.run_with(b, x, y, n)),
        gen: gen_band(80),
    }
}

/// Integer-bit counts the Q31 ops are checked with: the extremes and softmax's 5.
const Q31_BITS: [u32; 3] = [0, 5, q31::MAX_INTEGER_BITS];

fn q31_ops() -> Vec<Op<i32>> {
    let mut v = Vec::new();
    for bits in Q31_BITS {
        // Values of every magnitude: a random i32 shifted right by a random amount.
        let gen = || -> Gen<i32> {
            Box::new(|len, rng| {
                (0..len)
                    .map(|_| (rng.next_u64() as i32) >> rng.range(0, 31))
                    .collect()
            })
        };
        v.push(Op {
            name: format!("q31 logistic (integer_bits {bits})"),
            rows: false,
            run: Box::new(move |b, x, y, _| q31::logistic_with(b, x, bits, y)),
            gen: gen(),
        });
        v.push(Op {
            name: format!("q31 tanh (integer_bits {bits})"),
            rows: false,
            run: Box::new(move |b, x, y, _| q31::tanh_with(b, x, bits, y)),
            gen: gen(),
        });
        v.push(Op {
            name: format!("q31 softmax (integer_bits {bits})"),
            rows: true,
            run: Box::new(move |b, x, y, n| q31::softmax_with(b, x, bits, y, n)),
            gen: gen(),
        });
    }
    v
}

#[test]
fn logistic_and_tanh_every_length_and_offset() {
    assert_clean(&[
        check_ops(activation_ops::<i8>(0.05, 3), 1),
        check_ops(activation_ops::<u8>(0.05, 130), 2),
        check_ops(activation_ops::<i16>(1.0 / 1024.0, -7), 3),
    ]);
}

#[test]
fn softmax_every_row_shape_and_offset() {
    assert_clean(&[
        check_ops(vec![softmax_op::<i8>(0.1, 1.0, 80)], 4),
        check_ops(vec![softmax_op::<u8>(0.1, 1.0, 80)], 5),
        check_ops(vec![softmax_op::<i16>(1e-3, 1.0, 8000)], 6),
    ]);
}

#[test]
fn log_softmax_every_row_shape_and_offset() {
    assert_clean(&[
        check_ops(vec![log_softmax_op::<i8>(0.1)], 7),
        check_ops(vec![log_softmax_op::<u8>(0.1)], 8),
    ]);
}

#[test]
fn q31_every_length_and_offset() {
    assert_clean(&[check_ops(q31_ops(), 9)]);
}

// ---------------------------------------------------------------------------
// Empty buffers and errors.

/// Runs `f` on an output poisoned with `poison` and returns the result;
/// asserts the output is untouched whenever `f` fails.
fn untouched_on_error<T: Elem>(
    what: &str,
    poison: T,
    len: usize,
    f: impl FnOnce(&mut [T]) -> qneon::Result<()>,
) -> qneon::Result<()> {
    let mut out = vec![poison; len];
    let r = f(&mut out);
    if r.is_err() {
        assert!(
            out.iter().all(|&x| x == poison),
            "{what}: failed with {r:?} but wrote to the output"
        );
    }
    r
}

#[test]
fn empty_buffers_and_errors() {
    for b in backends() {
        let q = QuantParams::new(0.1, 0);
        let logistic =
            Logistic::<i8>::new(q, QuantParams::new(1.0 / 256.0, -128), Method::FixedPoint)
                .unwrap();
        let tanh = Tanh::<i16>::new(
            QuantParams::new(1e-3, 0),
            QuantParams::new(1.0 / 32768.0, 0),
            Method::FixedPoint,
        )
        .unwrap();
        let softmax =
            Softmax::<u8>::new(q, 1.0, QuantParams::new(1.0 / 256.0, 0), Method::FixedPoint)
                .unwrap();
        let log_softmax =
            LogSoftmax::<i8>::new(q, QuantParams::new(16.0 / 256.0, 127), Method::FixedPoint)
                .unwrap();

        // Empty element-wise: Ok, nothing to write.
        assert_eq!(logistic.run_with(b, &[], &mut []), Ok(()));
        assert_eq!(tanh.run_with(b, &[], &mut []), Ok(()));
        assert_eq!(q31::logistic_with::<i32, i32>(b, &[], 5, &mut []), Ok(()));
        assert_eq!(q31::tanh_with::<i32, i32>(b, &[], 5, &mut []), Ok(()));

        // Empty rows: Ok for any row_len >= 1 (zero rows), RowLength for 0.
        for row_len in [1, 5, 384] {
            assert_eq!(
                softmax.run_with(b, &[], &mut [], row_len),
                Ok(()),
                "softmax, row_len {row_len}"
            );
            assert_eq!(
                log_softmax.run_with(b, &[], &mut [], row_len),
                Ok(()),
                "log_softmax, row_len {row_len}"
            );
            assert_eq!(
                q31::softmax_with::<i32, i32>(b, &[], 5, &mut [], row_len),
                Ok(()),
                "q31 softmax, row_len {row_len}"
            );
        }
        assert!(matches!(
            softmax.run_with(b, &[], &mut [], 0),
            Err(Error::RowLength { len: 0, row: 0, .. })
        ));
        assert!(matches!(
            log_softmax.run_with(b, &[], &mut [], 0),
            Err(Error::RowLength { len: 0, row: 0, .. })
        ));
        assert!(matches!(
            q31::softmax_with::<i32, i32>(b, &[], 5, &mut [], 0),
            Err(Error::RowLength { len: 0, row: 0, .. })
        ));

        // Errors leave the output alone.
        let x8 = [1u8, 2, 3, 4, 5, 6];
        let r = untouched_on_error("softmax row_len 0", 0xA5u8, 6, |y| {
            softmax.run_with(b, &x8, y, 0)
        });
        assert!(
            matches!(r, Err(Error::RowLength { len: 6, row: 0, .. })),
            "{r:?}"
        );
        let r = untouched_on_error("softmax row_len 4 of 6", 0xA5u8, 6, |y| {
            softmax.run_with(b, &x8, y, 4)
        });
        assert!(
            matches!(r, Err(Error::RowLength { len: 6, row: 4, .. })),
            "{r:?}"
        );
        let r = untouched_on_error("softmax 6 into 5", 0xA5u8, 5, |y| {
            softmax.run_with(b, &x8, y, 1)
        });
        assert!(
            matches!(
                r,
                Err(Error::LengthMismatch {
                    input: 6,
                    output: 5,
                    ..
                })
            ),
            "{r:?}"
        );
        let xi8 = [1i8, -2, 3];
        let r = untouched_on_error("logistic 3 into 4", 0x5Ai8, 4, |y| {
            logistic.run_with(b, &xi8, y)
        });
        assert!(
            matches!(
                r,
                Err(Error::LengthMismatch {
                    input: 3,
                    output: 4,
                    ..
                })
            ),
            "{r:?}"
        );
        let r = untouched_on_error("log_softmax 3 into 2", 0x5Ai8, 2, |y| {
            log_softmax.run_with(b, &xi8, y, 1)
        });
        assert!(
            matches!(
                r,
                Err(Error::LengthMismatch {
                    input: 3,
                    output: 2,
                    ..
                })
            ),
            "{r:?}"
        );
        let x32 = [1i32, i32::MIN, i32::MAX];
        let r = untouched_on_error("q31 softmax row_len 2 of 3", 77i32, 3, |y| {
            q31::softmax_with(b, &x32, 5, y, 2)
        });
        assert!(
            matches!(r, Err(Error::RowLength { len: 3, row: 2, .. })),
            "{r:?}"
        );
        let r = untouched_on_error("q31 tanh 3 into 0", 77i32, 0, |y| {
            q31::tanh_with(b, &x32, 5, y)
        });
        assert!(
            matches!(
                r,
                Err(Error::LengthMismatch {
                    input: 3,
                    output: 0,
                    ..
                })
            ),
            "{r:?}"
        );
        let r = untouched_on_error("q31 logistic integer_bits 29", 77i32, 3, |y| {
            q31::logistic_with(b, &x32, 29, y)
        });
        assert!(
            matches!(r, Err(Error::IntegerBits { value: 29, .. })),
            "{r:?}"
        );
    }

    // A backend that is not here is an error, and touches nothing.
    if !Backend::Neon.is_available() {
        let softmax = Softmax::<i8>::new(
            QuantParams::new(0.1, 0),
            1.0,
            QuantParams::new(1.0 / 256.0, -128),
            Method::FixedPoint,
        )
        .unwrap();
        let x = [1i8, 2, 3];
        let r = untouched_on_error("softmax on missing NEON", 0x5Ai8, 3, |y| {
            softmax.run_with(Backend::Neon, &x, y, 3)
        });
        assert_eq!(r, Err(Error::BackendUnavailable { backend: "neon" }));
        let r = untouched_on_error("q31 tanh on missing NEON", 77i32, 0, |y| {
            q31::tanh_with::<i32, i32>(Backend::Neon, &[], 5, y)
        });
        assert_eq!(
            r,
            Err(Error::BackendUnavailable { backend: "neon" }),
            "even for an empty buffer"
        );
    }
}

/// Optional extensions: detected at run time with `std` (qemu's `-cpu max`,
/// used by `cargo xtask test`, has both), never claimed off aarch64, and
/// never less than what the build was compiled for.
#[test]
fn cpu_features_are_detected() {
    let detected = qneon::CpuFeatures::detect();
    let compiled = qneon::CpuFeatures::compiled();
    assert!(detected.dotprod || !compiled.dotprod);
    assert!(detected.i8mm || !compiled.i8mm);
    if cfg!(target_arch = "aarch64") {
        // The runner is `qemu-aarch64 -cpu max`; on a board these may be absent,
        // so only require them when QNEON_EXPECT_DOTPROD says the CPU has them.
        if std::env::var_os("QNEON_EXPECT_DOTPROD").is_some() {
            assert!(detected.dotprod && detected.i8mm, "{detected:?}");
        }
    } else {
        assert_eq!(detected, qneon::CpuFeatures::default());
    }
}
