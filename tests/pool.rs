//! AVERAGE_POOL_2D and MAX_POOL_2D against a naive formula written here, on
//! every backend: odd sizes, SAME with stride 2, windows clipped at every
//! edge, explicit padding offsets, channel counts off multiples of 16, the
//! extremes of each type; and the errors of `new()` and `run()`.

use qneon::{
    AveragePool2d, Backend, Error, FusedActivation, MaxPool2d, Padding, Pool2dShape, QuantElem,
    QuantParams,
};

/// A reproducible generator (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }
}

/// Random values over the whole type, every 7th one an extreme.
fn data<T: QuantElem>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = Lcg(seed);
    let span = (T::MAX - T::MIN + 1) as u32;
    (0..len)
        .map(|i| match i % 7 {
            3 => T::from_i32(T::MIN),
            5 => T::from_i32(T::MAX),
            _ => T::from_i32(T::MIN + (rng.next() % span) as i32),
        })
        .collect()
}

/// The pooling by definition: every window position inside the input taken
/// (positions as signed numbers), the average as the real quotient rounded
/// half away from zero, then the clamp.
fn naive<T: QuantElem>(s: &Pool2dShape, input: &[T], average: bool, range: (i32, i32)) -> Vec<T> {
    let mut out = Vec::new();
    for b in 0..s.batch {
        for oy in 0..s.output_height {
            for ox in 0..s.output_width {
                for c in 0..s.channels {
                    let (mut sum, mut count, mut max) = (0i64, 0i64, i64::MIN);
                    for fy in 0..s.filter_height {
                        for fx in 0..s.filter_width {
                            let y = (oy * s.stride_height + fy) as i64 - s.pad_top as i64;
                            let x = (ox * s.stride_width + fx) as i64 - s.pad_left as i64;
                            if y < 0
                                || x < 0
                                || y >= s.input_height as i64
                                || x >= s.input_width as i64
                            {
                                continue;
                            }
                            let i = ((b * s.input_height + y as usize) * s.input_width
                                + x as usize)
                                * s.channels
                                + c;
                            let v = input[i].to_i32() as i64;
                            sum += v;
                            count += 1;
                            max = max.max(v);
                        }
                    }
                    assert!(count > 0, "empty window in {s:?}");
                    let v = if average {
                        (sum as f64 / count as f64).round() as i64
                    } else {
                        max
                    };
                    out.push(T::from_i32((v as i32).clamp(range.0, range.1)));
                }
            }
        }
    }
    out
}

/// Both ops on `shape` against [`naive`], every backend, with outputs
/// pre-poisoned so unwritten elements show.
fn check<T: QuantElem>(shape: Pool2dShape, q: QuantParams, act: FusedActivation, seed: u64) {
    let input = data::<T>(shape.input_len().unwrap(), seed);
    let len = shape.output_len().unwrap();
    let avg = AveragePool2d::<T>::new(shape, q, q, act).unwrap();
    let max = MaxPool2d::<T>::new(shape, q, q, act).unwrap();
    assert_eq!(avg.activation_range(), max.activation_range());
    let range = avg.activation_range();
    let expected_avg = naive(&shape, &input, true, range);
    let expected_max = naive(&shape, &input, false, range);
    for backend in Backend::available() {
        let mut out = vec![T::from_i32(T::MAX - 1); len];
        avg.run_with(backend, &input, &mut out).unwrap();
        assert_eq!(
            out,
            expected_avg,
            "average {} {shape:?} {act:?}",
            backend.name()
        );
        let mut out = vec![T::from_i32(T::MAX - 1); len];
        max.run_with(backend, &input, &mut out).unwrap();
        assert_eq!(
            out,
            expected_max,
            "max {} {shape:?} {act:?}",
            backend.name()
        );
    }
}

fn sweep<T: QuantElem>(q: QuantParams) {
    let mut seed = 1u64;
    for (h, w) in [(1, 1), (2, 5), (5, 3), (7, 9), (9, 6)] {
        for filter in [(1, 1), (2, 2), (3, 3), (2, 3), (4, 1), (5, 5)] {
            for stride in [(1, 1), (2, 2), (1, 2), (3, 2)] {
                for padding in [Padding::Same, Padding::Valid] {
                    for channels in [1, 16, 17, 35] {
                        let Ok(shape) =
                            Pool2dShape::with_padding([2, h, w, channels], filter, stride, padding)
                        else {
                            // A VALID window larger than the input.
                            assert!(padding == Padding::Valid && (filter.0 > h || filter.1 > w));
                            continue;
                        };
                        let act = [
                            FusedActivation::None,
                            FusedActivation::Relu,
                            FusedActivation::Relu6,
                        ][seed as usize % 3];
                        check::<T>(shape, q, act, seed);
                        seed += 1;
                    }
                }
            }
        }
    }
}

#[test]
fn pool_i8_every_backend_equals_naive_formula_same_and_valid() {
    sweep::<i8>(QuantParams::new(0.05, -3));
}

#[test]
fn pool_u8_every_backend_equals_naive_formula_same_and_valid() {
    sweep::<u8>(QuantParams::new(0.05, 120));
}

#[test]
fn pool_i16_every_backend_equals_naive_formula_same_and_valid() {
    sweep::<i16>(QuantParams::new(0.0005, 0));
}

/// Padding offsets TFLite never computes but the shape allows: the largest
/// (filter - 1 before, so the first window holds one row or column) and
/// windows that run past the end.
#[test]
fn pool_explicit_padding_clips_windows_at_every_edge() {
    let q = QuantParams::new(0.1, 0);
    for (pad_top, pad_left, out_h, out_w) in
        [(2, 2, 4, 4), (0, 2, 3, 4), (2, 0, 4, 3), (1, 1, 3, 4)]
    {
        let shape = Pool2dShape {
            batch: 1,
            input_height: 5,
            input_width: 6,
            channels: 19,
            filter_height: 3,
            filter_width: 3,
            stride_height: 2,
            stride_width: 2,
            pad_top,
            pad_left,
            output_height: out_h,
            output_width: out_w,
        };
        check::<i8>(shape, q, FusedActivation::None, 7);
        check::<u8>(shape, QuantParams::new(0.1, 128), FusedActivation::Relu, 8);
    }
}

/// Windows of one value everywhere: the average is that value exactly (no
/// rounding drift), at the type's extremes and with the largest windows
/// `new()` accepts for int16.
#[test]
fn pool_constant_input_averages_to_itself_at_the_extremes() {
    fn constant<T: QuantElem>(v: i32, filter: usize) {
        let size = filter + 2;
        let shape =
            Pool2dShape::with_padding([1, size, size, 18], (filter, filter), (1, 1), Padding::Same)
                .unwrap();
        let q = QuantParams::new(0.5, 0);
        let avg = AveragePool2d::<T>::new(shape, q, q, FusedActivation::None).unwrap();
        let input = vec![T::from_i32(v); shape.input_len().unwrap()];
        for backend in Backend::available() {
            let mut out = vec![T::default(); shape.output_len().unwrap()];
            avg.run_with(backend, &input, &mut out).unwrap();
            assert!(
                out.iter().all(|&o| o.to_i32() == v),
                "{v} {}",
                backend.name()
            );
        }
    }
    // 15 x 15 = 225 and 16 x 16 = 256: either side of the 8-bit NEON
    // kernels' 16-bit window sums (at most 255 elements).
    for filter in [1, 4, 9, 15, 16] {
        constant::<i8>(-128, filter);
        constant::<i8>(127, filter);
        constant::<u8>(255, filter);
        constant::<i16>(-32768, filter);
        constant::<i16>(32767, filter);
    }
}

/// Windows of more than 255 elements (the 8-bit NEON kernels' sums leave
/// their 16-bit lanes) and of exactly 255, on random data with extremes.
#[test]
fn pool_large_windows_equal_naive_formula() {
    for (filter, stride) in [((16, 17), (2, 3)), ((15, 17), (1, 1)), ((17, 17), (4, 4))] {
        for padding in [Padding::Same, Padding::Valid] {
            let shape =
                Pool2dShape::with_padding([1, 18, 19, 20], filter, stride, padding).unwrap();
            check::<i8>(shape, QuantParams::new(0.1, -7), FusedActivation::None, 11);
            check::<u8>(shape, QuantParams::new(0.1, 9), FusedActivation::Relu, 12);
        }
    }
}

/// Ties of the average: sums halfway between two outputs round away from
/// zero (TFLite's `(sum ± count / 2) / count`), both signs.
#[test]
fn pool_average_ties_round_away_from_zero() {
    // A 1x2 window over [a, b]: the average (a + b) / 2.
    let shape = Pool2dShape::with_padding([1, 1, 2, 1], (1, 2), (1, 2), Padding::Valid).unwrap();
    let q = QuantParams::new(1.0, 0);
    let avg = AveragePool2d::<i8>::new(shape, q, q, FusedActivation::None).unwrap();
    for (pair, expected) in [
        ([1i8, 2], 2i8),
        ([-1, -2], -2),
        ([3, 4], 4),
        ([-3, -4], -4),
        ([-1, 2], 1),
        ([1, -2], -1),
    ] {
        for backend in Backend::available() {
            let mut out = [0i8];
            avg.run_with(backend, &pair, &mut out).unwrap();
            assert_eq!(out[0], expected, "{pair:?} {}", backend.name());
        }
    }
}

#[test]
fn pool_new_refuses_what_tflite_refuses() {
    let shape = Pool2dShape::with_padding([1, 4, 4, 3], (2, 2), (2, 2), Padding::Same).unwrap();
    let q = QuantParams::new(0.1, 5);
    let act = FusedActivation::None;
    // Output quantization must equal the input's.
    for out in [QuantParams::new(0.2, 5), QuantParams::new(0.1, 4)] {
        assert!(matches!(
            AveragePool2d::<i8>::new(shape, q, out, act),
            Err(Error::OutputQuantization {
                op: "average_pool_2d",
                ..
            })
        ));
        assert!(matches!(
            MaxPool2d::<i8>::new(shape, q, out, act),
            Err(Error::OutputQuantization {
                op: "max_pool_2d",
                ..
            })
        ));
    }
    // int16 zero points are 0.
    assert!(matches!(
        AveragePool2d::<i16>::new(shape, q, q, act),
        Err(Error::OutputQuantization { .. })
    ));
    assert!(matches!(
        AveragePool2d::<u8>::new(
            shape,
            QuantParams::new(0.1, -1),
            QuantParams::new(0.1, -1),
            act
        ),
        Err(Error::ZeroPoint { .. })
    ));
    assert!(matches!(
        MaxPool2d::<i8>::new(
            shape,
            QuantParams::new(0.0, 0),
            QuantParams::new(0.0, 0),
            act
        ),
        Err(Error::Scale { .. })
    ));
    // Zero dimensions.
    for zero in 0..4 {
        let mut s = shape;
        match zero {
            0 => s.channels = 0,
            1 => s.stride_width = 0,
            2 => s.filter_height = 0,
            _ => s.output_width = 0,
        }
        assert!(matches!(
            MaxPool2d::<i8>::new(s, q, q, act),
            Err(Error::ZeroDimension { .. })
        ));
    }
    // A window entirely in the padding (TFLite fails at run time there).
    let mut s = shape;
    s.pad_top = 2;
    assert!(matches!(
        AveragePool2d::<i8>::new(s, q, q, act),
        Err(Error::OutOfDomain {
            what: "padding",
            ..
        })
    ));
    let mut s = shape;
    s.output_height = 3;
    assert!(matches!(
        AveragePool2d::<i8>::new(s, q, q, act),
        Err(Error::OutOfDomain {
            what: "padding",
            ..
        })
    ));
    // Sizes whose element count overflows.
    let mut s = shape;
    s.batch = usize::MAX / 2;
    assert!(matches!(
        MaxPool2d::<i8>::new(s, q, q, act),
        Err(Error::OutOfDomain { .. })
    ));
    // An int16 window whose sum could pass i32.
    let big =
        Pool2dShape::with_padding([1, 300, 300, 1], (300, 300), (1, 1), Padding::Valid).unwrap();
    let q16 = QuantParams::new(0.1, 0);
    assert!(matches!(
        AveragePool2d::<i16>::new(big, q16, q16, act),
        Err(Error::OutOfDomain {
            what: "filter area",
            ..
        })
    ));
    assert!(AveragePool2d::<i8>::new(big, q16, q16, act).is_ok());
}

#[test]
fn pool_run_checks_lengths_and_backend() {
    let shape = Pool2dShape::with_padding([1, 5, 5, 3], (3, 3), (2, 2), Padding::Same).unwrap();
    let q = QuantParams::new(0.1, 0);
    let avg = AveragePool2d::<i8>::new(shape, q, q, FusedActivation::None).unwrap();
    let input = vec![0i8; 75];
    let mut output = vec![0i8; 27];
    avg.run(&input, &mut output).unwrap();
    assert!(matches!(
        avg.run(&input[1..], &mut output),
        Err(Error::Length { what: "input", .. })
    ));
    assert!(matches!(
        avg.run(&input, &mut output[1..]),
        Err(Error::Length { what: "output", .. })
    ));
    if !Backend::Neon.is_available() {
        assert!(matches!(
            avg.run_with(Backend::Neon, &input, &mut output),
            Err(Error::BackendUnavailable { .. })
        ));
    }
}

/// Bands of output rows (across images) give `run`'s bytes, whatever the
/// split; ranges past the rows or reversed are errors.
#[test]
fn pool_row_tiles_equal_run() {
    let shape = Pool2dShape::with_padding([3, 9, 7, 21], (3, 3), (2, 2), Padding::Same).unwrap();
    let q = QuantParams::new(0.1, 3);
    let input = data::<i8>(shape.input_len().unwrap(), 99);
    let avg = AveragePool2d::<i8>::new(shape, q, q, FusedActivation::Relu).unwrap();
    let max = MaxPool2d::<i8>::new(shape, q, q, FusedActivation::None).unwrap();
    let row = shape.output_width * shape.channels;
    assert_eq!(avg.output_rows(), 15);
    for backend in Backend::available() {
        let mut whole = vec![0i8; shape.output_len().unwrap()];
        avg.run_with(backend, &input, &mut whole).unwrap();
        let mut whole_max = whole.clone();
        max.run_with(backend, &input, &mut whole_max).unwrap();
        for cuts in [
            vec![0, 15],
            vec![0, 1, 15],
            vec![0, 4, 5, 11, 15],
            (0..=15).collect(),
        ] {
            let mut tiled = vec![0i8; whole.len()];
            let mut tiled_max = vec![0i8; whole.len()];
            for pair in cuts.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                avg.run_rows_with(backend, &input, &mut tiled[a * row..b * row], a..b)
                    .unwrap();
                max.run_rows_with(backend, &input, &mut tiled_max[a * row..b * row], a..b)
                    .unwrap();
            }
            assert_eq!(tiled, whole, "{cuts:?} {}", backend.name());
            assert_eq!(tiled_max, whole_max, "{cuts:?} {}", backend.name());
        }
        let mut band = vec![0i8; 2 * row];
        assert!(matches!(
            avg.run_rows_with(backend, &input, &mut band, 14..16),
            Err(Error::Tile { limit: 15, .. })
        ));
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 3..1;
        assert!(matches!(
            avg.run_rows_with(backend, &input, &mut band, reversed),
            Err(Error::Tile { .. })
        ));
        assert!(matches!(
            avg.run_rows_with(backend, &input, &mut band, 0..3),
            Err(Error::Length { what: "output", .. })
        ));
    }
}
