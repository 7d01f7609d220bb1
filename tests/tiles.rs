//! The tile contracts: every heavy op's work split into independent tiles
//! (what a thread pool would hand out) gives the bytes of one `run`, on
//! every backend (the scalar reference on the host; scalar, NEON and every
//! NEON GEMM path under qemu).
//!
//! * [`Gemm::run_tile`]: `M x N` tiles written through an output stride,
//!   split at random rows (single rows and ragged last tiles included) and
//!   at every multiple of the column grain, into the full matrix and into a
//!   private buffer whose padding must stay untouched.
//! * [`MatMul::run_batch_tile`]: ranges of output matrices (batch and
//!   head), each tile with its own scratch, against one `run` per matrix.
//! * row-wise ops (softmax, log-softmax, NoNorm) on row ranges and
//!   element-wise ops (logistic, tanh, quantize, dequantize, the binary ops
//!   through [`Operand::tile`]) on element ranges, as sub-slices.
//!
//! Outputs are pre-filled with a poison byte, different per run, so a byte
//! a tile forgets shows.

mod layer_oracle;

use core::ops::Range;
use layer_oracle::Rng;
use qneon::ops::{GemmPath, Operand};
use qneon::{
    Add, Backend, Error, FusedActivation, Gemm, LogSoftmax, Logistic, MatMul, Method, Mul, NoNorm,
    QuantElem, QuantParams, Requantization, Rounding, Softmax, Sub, Tanh,
};

/// Each backend of this target, and on NEON each GEMM path this CPU has
/// (`None` is the backend's own choice).
fn gemm_runs() -> Vec<(Backend, Option<GemmPath>)> {
    let mut runs = vec![(Backend::Scalar, None)];
    if Backend::Neon.is_available() {
        runs.push((Backend::Neon, None));
        runs.push((Backend::Neon, Some(GemmPath::Widening)));
        let cpu = qneon::CpuFeatures::detect();
        if cpu.dotprod {
            runs.push((Backend::Neon, Some(GemmPath::Dot)));
        }
        if cpu.dotprod && cpu.i8mm {
            runs.push((Backend::Neon, Some(GemmPath::Mmla)));
        }
    }
    runs
}

/// Random split points of `0..len` into consecutive ranges: single
/// elements, ragged ones, the whole range, as `rng` picks (always covering
/// `0..len` exactly).
fn random_split(rng: &mut Rng, len: usize, grain: usize) -> Vec<Range<usize>> {
    let mut cuts = vec![0];
    let mut at = 0;
    while at < len {
        let step = match rng.below(4) {
            0 => grain,
            1 => grain * rng.usize(1, 4),
            2 => len,
            _ => rng.usize(1, len.max(1)),
        };
        at = (at + step.max(1)).min(len);
        cuts.push(at);
    }
    cuts.windows(2).map(|w| w[0]..w[1]).collect()
}

// ---------------------------------------------------------------------------
// GEMM.

struct GemmCase {
    m: usize,
    n: usize,
    k: usize,
    x: Vec<i8>,
    gemm: Gemm,
}

impl GemmCase {
    fn random(rng: &mut Rng, m: usize, n: usize, k: usize) -> GemmCase {
        let input = QuantParams::new(rng.log_uniform(1e-3, 1.0), rng.range(-128, 127) as i32);
        let weight_scales: Vec<f32> = (0..n).map(|_| rng.log_uniform(1e-4, 1e-1)).collect();
        let typical = input.scale as f64 * 1e-2 * 74.0 * 74.0 * (k as f64).sqrt();
        let output = QuantParams::new(
            (typical / 48.0 * rng.log_uniform(0.3, 3.0) as f64) as f32,
            rng.range(-128, 127) as i32,
        );
        let bias: Vec<i32> = (0..n)
            .map(|_| rng.range(-(1 << 16), 1 << 16) as i32)
            .collect();
        let requantization = match rng.below(3) {
            0 => Requantization::Multiplier(Rounding::Single),
            1 => Requantization::Multiplier(Rounding::Double),
            _ => Requantization::RealF64,
        };
        let activation = match rng.below(3) {
            0 => FusedActivation::None,
            1 => FusedActivation::Relu,
            _ => FusedActivation::Relu6,
        };
        let gemm = Gemm::new(
            &rng.vec_i8(n * k),
            n,
            k,
            Some(&bias),
            input,
            &weight_scales,
            output,
            activation,
            requantization,
        )
        .unwrap();
        GemmCase {
            m,
            n,
            k,
            x: rng.vec_i8(m * k),
            gemm,
        }
    }

    fn run(&self, backend: Backend, path: Option<GemmPath>) -> Vec<i8> {
        let mut out = vec![0x3c; self.m * self.n];
        match path {
            Some(p) => self.gemm.run_neon_path(p, &self.x, &mut out, self.m),
            None => self.gemm.run_with(backend, &self.x, &mut out, self.m),
        }
        .unwrap();
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn tile(
        &self,
        backend: Backend,
        path: Option<GemmPath>,
        output: &mut [i8],
        stride: usize,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Result<(), Error> {
        match path {
            Some(p) => self
                .gemm
                .run_tile_neon_path(p, &self.x, output, stride, rows, cols),
            None => self
                .gemm
                .run_tile_with(backend, &self.x, output, stride, rows, cols),
        }
    }

    /// The full product from the tiles `rows x cols`, each written into the
    /// full output through the stride `n` (the tile's first element is
    /// `(rows.start, cols.start)`).
    fn tiled(
        &self,
        backend: Backend,
        path: Option<GemmPath>,
        rows: &[Range<usize>],
        cols: &[Range<usize>],
    ) -> Vec<i8> {
        let mut out = vec![0x5d; self.m * self.n];
        for r in rows {
            for c in cols {
                let at = r.start * self.n + c.start;
                self.tile(backend, path, &mut out[at..], self.n, r.clone(), c.clone())
                    .unwrap_or_else(|e| panic!("tile {r:?} x {c:?}: {e}"));
            }
        }
        out
    }

    fn describe(&self) -> String {
        format!("m={} n={} k={}", self.m, self.n, self.k)
    }
}

/// Column splits at the grain: every single-block tile, every split into
/// two at a grain multiple, and a random split.
fn column_splits(rng: &mut Rng, n: usize, grain: usize) -> Vec<Vec<Range<usize>>> {
    let mut splits = vec![(0..n)
        .step_by(grain)
        .map(|c| c..(c + grain).min(n))
        .collect::<Vec<_>>()];
    for cut in (grain..n).step_by(grain) {
        splits.push(vec![0..cut, cut..n]);
    }
    let mut cuts = vec![0];
    while *cuts.last().unwrap() < n {
        let next = cuts.last().unwrap() + grain * rng.usize(1, 3);
        cuts.push(next.min(n));
    }
    splits.push(cuts.windows(2).map(|w| w[0]..w[1]).collect());
    splits
}

fn check_gemm_tiles(rng: &mut Rng, case: &GemmCase) {
    let (_, grain_n) = case.gemm.tile_grain();
    for (backend, path) in gemm_runs() {
        let want = case.run(backend, path);
        let what = format!("{backend:?} {path:?} {}", case.describe());
        // Row tiles alone, column tiles alone, then both.
        let all_rows: Vec<Range<usize>> = core::iter::once(0..case.m).collect();
        let all_cols: Vec<Range<usize>> = core::iter::once(0..case.n).collect();
        for _ in 0..3 {
            let rows = random_split(rng, case.m, case.gemm.tile_grain().0);
            assert_eq!(
                case.tiled(backend, path, &rows, &all_cols),
                want,
                "{what} rows {rows:?}"
            );
        }
        let single_rows: Vec<_> = (0..case.m).map(|r| r..r + 1).collect();
        assert_eq!(
            case.tiled(backend, path, &single_rows, &all_cols),
            want,
            "{what} single rows"
        );
        for cols in column_splits(rng, case.n, grain_n) {
            assert_eq!(
                case.tiled(backend, path, &all_rows, &cols),
                want,
                "{what} cols {cols:?}"
            );
            let rows = random_split(rng, case.m, 1);
            assert_eq!(
                case.tiled(backend, path, &rows, &cols),
                want,
                "{what} rows {rows:?} cols {cols:?}"
            );
        }
        // One random tile into a private buffer with a wider stride: the
        // tile's bytes land at (r, c) - (rows.start, cols.start), the
        // padding between rows stays as it was.
        let rows = {
            let a = rng.usize(0, case.m - 1);
            a..rng.usize(a + 1, case.m)
        };
        let cols = {
            let blocks = case.n.div_ceil(grain_n);
            let a = rng.usize(0, blocks - 1);
            let b = rng.usize(a + 1, blocks);
            a * grain_n..(b * grain_n).min(case.n)
        };
        let stride = cols.len() + rng.usize(0, 5);
        let len = (rows.len() - 1) * stride + cols.len();
        let mut buf = vec![0x77; len + 3];
        case.tile(
            backend,
            path,
            &mut buf[..len],
            stride,
            rows.clone(),
            cols.clone(),
        )
        .unwrap();
        for (i, &b) in buf.iter().enumerate() {
            let (r, c) = (i / stride, i % stride);
            if i < len && c < cols.len() {
                let at = (rows.start + r) * case.n + cols.start + c;
                assert_eq!(
                    b, want[at],
                    "{what} private tile {rows:?} x {cols:?} at {i}"
                );
            } else {
                assert_eq!(
                    b, 0x77,
                    "{what} private tile {rows:?} x {cols:?} wrote padding {i}"
                );
            }
        }
    }
}

#[test]
fn gemm_i8_tiles_equal_run_random_shapes() {
    let mut rng = Rng::new(250);
    for _ in 0..40 {
        let (m, n, k) = (rng.usize(1, 21), rng.usize(1, 41), rng.usize(1, 70));
        let case = GemmCase::random(&mut rng, m, n, k);
        check_gemm_tiles(&mut rng, &case);
    }
    // Batch-1 fully connected (one row, many columns), rows of exactly the
    // kernels' tile heights, a deep input the sdot path reads in place.
    for (m, n, k) in [
        (1, 200, 96),
        (8, 24, 33),
        (4, 17, 16),
        (9, 16, 1040),
        (1, 9, 1),
        // A depth of exactly 8: whole 8-row tiles read in place by sdot.
        (24, 16, 8),
        (19, 9, 8),
    ] {
        let case = GemmCase::random(&mut rng, m, n, k);
        check_gemm_tiles(&mut rng, &case);
    }
}

#[test]
fn gemm_i8_tile_grain_is_the_packed_column_block() {
    let case = GemmCase::random(&mut Rng::new(251), 3, 20, 5);
    let (rows, cols) = case.gemm.tile_grain();
    assert_eq!(cols, 8);
    assert!([1, 4, 8].contains(&rows), "row grain {rows}");
}

#[test]
fn gemm_i8_empty_tiles_write_nothing() {
    let case = GemmCase::random(&mut Rng::new(252), 5, 20, 7);
    let mut out = vec![0x11; 100];
    for (backend, path) in gemm_runs() {
        case.tile(backend, path, &mut out, 20, 2..2, 0..20).unwrap();
        case.tile(backend, path, &mut out, 20, 0..5, 16..16)
            .unwrap();
        case.tile(backend, path, &mut [], 0, 5..5, 0..0).unwrap();
        assert!(out.iter().all(|&b| b == 0x11));
    }
}

#[test]
fn gemm_i8_tile_errors_on_bad_tiles() {
    let case = GemmCase::random(&mut Rng::new(253), 5, 20, 7);
    let mut out = vec![0; 5 * 20];
    for (backend, path) in gemm_runs() {
        let bad = |out: &mut [i8], stride, rows: Range<usize>, cols: Range<usize>| {
            let before = out.to_vec();
            let e = case
                .tile(backend, path, out, stride, rows.clone(), cols.clone())
                .expect_err(&format!(
                    "{backend:?} {path:?} {rows:?} x {cols:?} stride {stride}"
                ));
            assert_eq!(out, &before[..], "an error wrote to the output");
            e
        };
        // Columns off the grain, or beyond n; rows beyond m; reversed ranges.
        for cols in [4..12, 0..12, 8..21, 24..24, 9..9] {
            assert!(matches!(bad(&mut out, 20, 0..5, cols), Error::Tile { .. }));
        }
        for rows in [0..6, 6..6] {
            assert!(matches!(bad(&mut out, 20, rows, 0..20), Error::Tile { .. }));
        }
        #[allow(clippy::reversed_empty_ranges)]
        {
            assert!(matches!(bad(&mut out, 20, 3..2, 0..8), Error::Tile { .. }));
            assert!(matches!(bad(&mut out, 20, 0..2, 16..8), Error::Tile { .. }));
        }
        // A stride narrower than the tile, an output too short for it.
        assert!(matches!(bad(&mut out, 7, 0..2, 0..8), Error::Length { .. }));
        assert!(matches!(
            bad(&mut out[..47], 20, 0..3, 0..8),
            Error::Length { .. }
        ));
        assert!(matches!(
            bad(&mut out[..28], 20, 1..3, 0..16),
            Error::Length { .. }
        ));
        // An input that is not whole rows.
        let e = case
            .gemm
            .run_tile_with(backend, &case.x[..34], &mut out, 20, 0..1, 0..8)
            .unwrap_err();
        assert!(matches!(e, Error::RowLength { .. }), "{e}");
        // The exact fit is accepted.
        case.tile(backend, path, &mut out[..28], 20, 1..3, 0..8)
            .unwrap();
    }
}

// ---------------------------------------------------------------------------
// BATCH_MATMUL.

#[test]
fn matmul_i8_batch_tiles_equal_one_run_per_matrix() {
    let mut rng = Rng::new(260);
    for _ in 0..12 {
        let (m, n, k) = (rng.usize(1, 13), rng.usize(1, 21), rng.usize(1, 40));
        let (adj_x, adj_y) = (rng.below(2) == 0, rng.below(2) == 0);
        let q = |rng: &mut Rng| QuantParams::new(rng.log_uniform(0.01, 0.1), rng.i8() as i32);
        let out_q = QuantParams::new(
            rng.log_uniform(0.01, 0.1) * 0.01 * 74.0 * (k as f32).sqrt(),
            rng.i8() as i32,
        );
        let mm = MatMul::new(m, n, k, adj_x, adj_y, q(&mut rng), q(&mut rng), out_q, {
            if rng.below(2) == 0 {
                Rounding::Single
            } else {
                Rounding::Double
            }
        })
        .unwrap();
        // 3 left-hand matrices, 2 right-hand ones, 6 output matrices picked
        // as a broadcast batch would (each operand matrix used more than once).
        let lhs = rng.vec_i8(3 * m * k);
        let rhs = rng.vec_i8(2 * k * n);
        let pairs: Vec<(usize, usize)> = (0..6).map(|b| (b % 3, b / 3)).collect();
        let size = m * n;
        for backend in Backend::available() {
            let mut want = vec![0x21; pairs.len() * size];
            let mut bytes = vec![0x13; mm.scratch_bytes()];
            let mut words = vec![0x1357; mm.scratch_words()];
            for (out, &(a, b)) in want.chunks_exact_mut(size).zip(&pairs) {
                mm.run_with(
                    backend,
                    &lhs[a * m * k..(a + 1) * m * k],
                    &rhs[b * k * n..(b + 1) * k * n],
                    out,
                    &mut bytes,
                    &mut words,
                )
                .unwrap();
            }
            for tiles in [
                core::iter::once(0..6).collect(),
                vec![0..1, 1..2, 2..3, 3..4, 4..5, 5..6],
                random_split(&mut rng, 6, 1),
            ] {
                let mut got = vec![0x65; pairs.len() * size];
                // Tiles in reverse order, each with its own dirty scratch.
                for t in tiles.iter().rev() {
                    let mut bytes = vec![rng.i8(); mm.scratch_bytes()];
                    let mut words = vec![rng.range(-9, 9) as i32; mm.scratch_words()];
                    mm.run_batch_tile(
                        backend,
                        &lhs,
                        &rhs,
                        &pairs[t.clone()],
                        &mut got[t.start * size..t.end * size],
                        &mut bytes,
                        &mut words,
                    )
                    .unwrap();
                }
                assert_eq!(got, want, "{backend:?} m={m} n={n} k={k} tiles {tiles:?}");
            }
        }
        // Bad tiles: an operand index past the operands, an output that is
        // not one matrix per pair.
        let mut out = vec![0; 2 * size];
        let mut bytes = vec![0; mm.scratch_bytes()];
        let mut words = vec![0; mm.scratch_words()];
        for (pairs, out_len) in [(vec![(3, 0), (0, 0)], 2), (vec![(0, 2), (0, 0)], 2)] {
            let e = mm
                .run_batch_tile(
                    Backend::Scalar,
                    &lhs,
                    &rhs,
                    &pairs,
                    &mut out[..out_len * size],
                    &mut bytes,
                    &mut words,
                )
                .unwrap_err();
            assert!(matches!(e, Error::Tile { .. }), "{e}");
        }
        let e = mm
            .run_batch_tile(
                Backend::Scalar,
                &lhs,
                &rhs,
                &[(0, 0)],
                &mut out,
                &mut bytes,
                &mut words,
            )
            .unwrap_err();
        assert!(matches!(e, Error::Length { .. }), "{e}");
    }
}

// ---------------------------------------------------------------------------
// Row-wise and element-wise ops: a tile is a sub-slice (a range of rows, or
// of elements), run with the same prepared op.

/// Random input of `rows x row_len` elements of `T`.
fn random_elems<T: QuantElem + TryFrom<i32>>(rng: &mut Rng, len: usize) -> Vec<T> {
    (0..len)
        .map(|_| {
            let v = rng.range(T::MIN as i64, T::MAX as i64) as i32;
            T::try_from(v).ok().unwrap()
        })
        .collect()
}

/// `run(input, output)` on the whole buffer and on the given element
/// ranges of it: the same bytes.
fn check_split<T: QuantElem + core::fmt::Debug>(
    what: &str,
    input: &[T],
    poison: T,
    ranges: &[Range<usize>],
    run: impl Fn(&[T], &mut [T]),
) {
    let mut want = vec![poison; input.len()];
    run(input, &mut want);
    let mut got = vec![poison; input.len()];
    for r in ranges {
        run(&input[r.clone()], &mut got[r.clone()]);
    }
    assert_eq!(got, want, "{what}: ranges {ranges:?}");
}

fn row_ranges(rng: &mut Rng, rows: usize, row_len: usize) -> Vec<Vec<Range<usize>>> {
    let by_rows = |split: Vec<Range<usize>>| -> Vec<Range<usize>> {
        split
            .into_iter()
            .map(|r| r.start * row_len..r.end * row_len)
            .collect()
    };
    vec![
        by_rows((0..rows).map(|r| r..r + 1).collect()),
        by_rows(random_split(rng, rows, 2)),
        by_rows(random_split(rng, rows, 3)),
    ]
}

/// Checks every method of softmax and log-softmax that `T` has; returns
/// how many (op, method) pairs were prepared.
fn check_rows_op<T: QuantElem + TryFrom<i32> + core::fmt::Debug>(rng: &mut Rng) -> usize {
    let mut prepared = 0;
    let methods = [Method::FixedPoint, Method::Lut, Method::DequantF32];
    for row_len in [1, 5, 16, 33, 200] {
        let rows = rng.usize(1, 9);
        let input: Vec<T> = random_elems(rng, rows * row_len);
        let poison = T::try_from(7).ok().unwrap();
        let in_q = QuantParams::new(rng.log_uniform(0.01, 0.5), 3);
        for method in methods {
            let softmax = Softmax::<T>::new(in_q, 1.0, Softmax::<T>::output_quantization(), method);
            let log_softmax = LogSoftmax::<T>::output_quantization()
                .and_then(|out_q| LogSoftmax::<T>::new(in_q, out_q, method));
            prepared += softmax.is_ok() as usize + log_softmax.is_ok() as usize;
            for backend in Backend::available() {
                for ranges in row_ranges(rng, rows, row_len) {
                    let what =
                        format!("{} {method:?} {backend:?} rows {rows} x {row_len}", T::NAME);
                    if let Ok(op) = &softmax {
                        check_split(
                            &format!("softmax {what}"),
                            &input,
                            poison,
                            &ranges,
                            |x, y| op.run_with(backend, x, y, row_len).unwrap(),
                        );
                    }
                    if let Ok(op) = &log_softmax {
                        check_split(
                            &format!("log_softmax {what}"),
                            &input,
                            poison,
                            &ranges,
                            |x, y| op.run_with(backend, x, y, row_len).unwrap(),
                        );
                    }
                }
            }
        }
    }
    prepared
}

#[test]
fn softmax_and_log_softmax_row_tiles_equal_run() {
    let mut rng = Rng::new(270);
    // Five row lengths, each with every method of softmax (3) and
    // log-softmax (3 on 8-bit types, none on int16).
    assert_eq!(check_rows_op::<i8>(&mut rng), 5 * 6);
    assert_eq!(check_rows_op::<u8>(&mut rng), 5 * 6);
    assert!(check_rows_op::<i16>(&mut rng) >= 5 * 2);
}

#[test]
fn prepared_ops_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Gemm>();
    send_sync::<MatMul>();
    send_sync::<Softmax<i8>>();
    send_sync::<Softmax<i16>>();
    send_sync::<LogSoftmax<u8>>();
    send_sync::<Logistic<i16>>();
    send_sync::<Tanh<i8>>();
    send_sync::<NoNorm>();
    send_sync::<Add>();
    send_sync::<Sub>();
    send_sync::<Mul>();
}

/// Returns how many (op, method) pairs of logistic and tanh were prepared.
fn check_elements_op<T: QuantElem + TryFrom<i32> + core::fmt::Debug>(rng: &mut Rng) -> usize {
    let mut prepared = 0;
    let len = 301;
    let input: Vec<T> = random_elems(rng, len);
    let poison = T::try_from(9).ok().unwrap();
    let in_q = QuantParams::new(rng.log_uniform(0.01, 0.2), 1);
    let splits = [
        random_split(rng, len, 16),
        random_split(rng, len, 1),
        (0..len).map(|i| i..i + 1).collect(),
    ];
    for method in [Method::FixedPoint, Method::Lut, Method::DequantF32] {
        let logistic = Logistic::<T>::new(in_q, Logistic::<T>::output_quantization(), method);
        let tanh = Tanh::<T>::new(in_q, Tanh::<T>::output_quantization(), method);
        prepared += logistic.is_ok() as usize + tanh.is_ok() as usize;
        for backend in Backend::available() {
            for ranges in &splits {
                let what = format!("{} {method:?} {backend:?}", T::NAME);
                if let Ok(op) = &logistic {
                    check_split(
                        &format!("logistic {what}"),
                        &input,
                        poison,
                        ranges,
                        |x, y| op.run_with(backend, x, y).unwrap(),
                    );
                }
                if let Ok(op) = &tanh {
                    check_split(&format!("tanh {what}"), &input, poison, ranges, |x, y| {
                        op.run_with(backend, x, y).unwrap()
                    });
                }
            }
        }
    }
    // Quantize and dequantize.
    let q = QuantParams::new(0.037, 2);
    let floats: Vec<f32> = (0..len).map(|i| (i as f32 - 150.0) * 0.173).collect();
    for backend in Backend::available() {
        for ranges in &splits {
            let mut want = vec![poison; len];
            q.quantize_with(backend, &floats, &mut want).unwrap();
            let mut got = vec![poison; len];
            for r in ranges {
                q.quantize_with(backend, &floats[r.clone()], &mut got[r.clone()])
                    .unwrap();
            }
            assert_eq!(got, want, "quantize {} {backend:?} {ranges:?}", T::NAME);
            let mut want = vec![f32::NAN; len];
            q.dequantize_with(backend, &input, &mut want).unwrap();
            let mut got = vec![f32::NAN; len];
            for r in ranges {
                q.dequantize_with(backend, &input[r.clone()], &mut got[r.clone()])
                    .unwrap();
            }
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&got),
                bits(&want),
                "dequantize {} {backend:?}",
                T::NAME
            );
        }
    }
    prepared
}

#[test]
fn activation_quantize_and_dequantize_element_tiles_equal_run() {
    let mut rng = Rng::new(271);
    for prepared in [
        check_elements_op::<i8>(&mut rng),
        check_elements_op::<u8>(&mut rng),
        check_elements_op::<i16>(&mut rng),
    ] {
        assert!(prepared >= 4, "only {prepared} activation kernels prepared");
    }
}

#[test]
fn no_norm_row_tiles_equal_run() {
    let mut rng = Rng::new(272);
    for channels in [1, 7, 16, 40] {
        let gamma = rng.vec_i8(channels);
        let scales: Vec<f32> = (0..channels).map(|_| rng.log_uniform(1e-3, 1e-1)).collect();
        let beta: Vec<i32> = (0..channels)
            .map(|_| rng.range(-5000, 5000) as i32)
            .collect();
        let op = NoNorm::new(
            &gamma,
            &scales,
            &beta,
            QuantParams::new(0.05, -3),
            QuantParams::new(0.02, 5),
            FusedActivation::None,
        )
        .unwrap();
        let rows = 11;
        let input = rng.vec_i8(rows * channels);
        for backend in Backend::available() {
            for ranges in row_ranges(&mut rng, rows, channels) {
                check_split(
                    &format!("no_norm {backend:?} {channels}"),
                    &input,
                    0x33,
                    &ranges,
                    |x, y| op.run_with(backend, x, y).unwrap(),
                );
            }
        }
    }
}

/// A binary op on two operands into an output.
type BinaryRun<'a> = dyn Fn(Operand, Operand, &mut [i8]) -> Result<(), Error> + 'a;

/// One operand of each kind over a `rows x row_len` output.
fn operands(rng: &mut Rng, rows: usize, row_len: usize) -> [Vec<i8>; 3] {
    [
        rng.vec_i8(rows * row_len),
        vec![rng.i8()],
        rng.vec_i8(row_len),
    ]
}

fn operand(kind: usize, data: &[i8]) -> Operand<'_> {
    match kind {
        0 => Operand::Slice(data),
        1 => Operand::Scalar(data[0]),
        _ => Operand::Row(data),
    }
}

#[test]
fn binary_ops_tiles_through_operand_tile_equal_run() {
    let mut rng = Rng::new(273);
    let q = |s: f32, z: i32| QuantParams::new(s, z);
    let add = Add::new(
        q(0.05, 3),
        q(0.03, -7),
        q(0.08, 1),
        FusedActivation::None,
        Rounding::Double,
    )
    .unwrap();
    let sub = Sub::new(
        q(0.04, 0),
        q(0.06, 5),
        q(0.09, -2),
        FusedActivation::Relu,
        Rounding::Single,
    )
    .unwrap();
    let mul = Mul::new(
        q(0.05, 2),
        q(0.07, -1),
        q(0.1, 4),
        FusedActivation::None,
        Rounding::Double,
    )
    .unwrap();
    for (rows, row_len) in [(9, 13), (4, 32), (1, 70), (17, 1)] {
        let data = operands(&mut rng, rows, row_len);
        let len = rows * row_len;
        for (ka, kb) in [
            (0, 0),
            (0, 1),
            (1, 0),
            (0, 2),
            (2, 0),
            (2, 2),
            (1, 2),
            (1, 1),
        ] {
            let (a, b) = (operand(ka, &data[ka]), operand(kb, &data[kb]));
            // With a row operand a tile is a range of whole rows (the outer
            // index); otherwise any range of elements.
            let grain = if ka == 2 || kb == 2 { row_len } else { 1 };
            for backend in Backend::available() {
                let runs: [(&str, &BinaryRun); 3] = [
                    ("add", &|a, b, y| add.run_operands(backend, a, b, y)),
                    ("sub", &|a, b, y| sub.run_operands(backend, a, b, y)),
                    ("mul", &|a, b, y| mul.run_operands(backend, a, b, y)),
                ];
                for (name, run) in runs {
                    let mut want = vec![0x44; len];
                    run(a, b, &mut want).unwrap();
                    for _ in 0..3 {
                        let split: Vec<Range<usize>> = random_split(&mut rng, rows, 1)
                            .into_iter()
                            .map(|r| r.start * row_len..r.end * row_len)
                            .flat_map(|r| {
                                // Inside a row, element ranges where allowed.
                                if grain == 1 && r.len() > 2 {
                                    let mid = r.start + r.len() / 3;
                                    vec![r.start..mid, mid..r.end]
                                } else {
                                    vec![r]
                                }
                            })
                            .collect();
                        let mut got = vec![0x45; len];
                        for r in &split {
                            run(
                                a.tile(r.clone()).unwrap(),
                                b.tile(r.clone()).unwrap(),
                                &mut got[r.clone()],
                            )
                            .unwrap();
                        }
                        assert_eq!(got, want, "{name} {backend:?} operands {ka} {kb} {split:?}");
                    }
                }
            }
            // A row operand cannot start a tile inside a row; a slice cannot
            // give a range past its end.
            if row_len > 1 && (ka == 2 || kb == 2) {
                let row = if ka == 2 { a } else { b };
                assert!(matches!(row.tile(1..row_len), Err(Error::Tile { .. })));
            }
            if ka == 0 {
                assert!(matches!(a.tile(0..len + 1), Err(Error::Tile { .. })));
            }
        }
    }
}
