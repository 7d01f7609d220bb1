//! RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR against formulas written
//! here from TFLite's and XNNPACK's definitions, over every small shape
//! and option, on every backend; the tiles; the errors of `new()`.

use qneon::{
    Backend, BilinearArithmetic, Error, NearestIndexing, QuantElem, QuantParams, ResizeBilinear,
    ResizeCoordinates, ResizeNearestNeighbor, ResizeShape, Rounding,
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

/// Random values over the whole type, every 5th one an extreme.
fn data<T: QuantElem>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = Lcg(seed);
    let span = (T::MAX - T::MIN + 1) as u32;
    (0..len)
        .map(|i| match i % 5 {
            1 => T::from_i32(T::MIN),
            3 => T::from_i32(T::MAX),
            _ => T::from_i32(T::MIN + (rng.next() % span) as i32),
        })
        .collect()
}

fn q() -> QuantParams {
    QuantParams::new(0.05, 3)
}

const OPTIONS: [ResizeCoordinates; 4] = [
    ResizeCoordinates {
        align_corners: false,
        half_pixel_centers: false,
    },
    ResizeCoordinates {
        align_corners: true,
        half_pixel_centers: false,
    },
    ResizeCoordinates {
        align_corners: false,
        half_pixel_centers: true,
    },
    ResizeCoordinates {
        align_corners: true,
        half_pixel_centers: true,
    },
];

/// Every (input, output) size pair up to `max` per axis, a few channel
/// counts and two images: the shapes of the sweeps.
fn shapes(max: usize) -> Vec<ResizeShape> {
    let mut v = Vec::new();
    for (i, (ih, iw)) in [(1, 1), (1, 3), (2, 2), (3, 5), (4, 4), (5, 7)]
        .into_iter()
        .enumerate()
    {
        for oh in 1..=max {
            for ow in [1, 2, 5, 8, 12] {
                let channels = [1, 3, 8, 17, 32][(i + oh) % 5];
                let batch = 1 + (oh % 2);
                v.push(ResizeShape::new([batch, ih, iw, channels], (oh, ow)).unwrap());
            }
        }
    }
    v
}

/// TFLite's `GetNearestNeighbor`, transcribed with std's `f32` functions.
fn tflite_nearest(o: usize, input: usize, output: usize, c: ResizeCoordinates) -> usize {
    let scale = if c.align_corners && output > 1 {
        (input - 1) as f32 / (output - 1) as f32
    } else {
        input as f32 / output as f32
    };
    let offset = if c.half_pixel_centers { 0.5f32 } else { 0.0 };
    let x = (o as f32 + offset) * scale;
    let i = if c.align_corners {
        x.round()
    } else {
        x.floor()
    } as i64;
    let mut i = i.min(input as i64 - 1);
    if c.half_pixel_centers {
        i = i.max(0);
    }
    i as usize
}

fn naive_nearest<T: QuantElem>(
    s: &ResizeShape,
    input: &[T],
    pick: impl Fn(usize, usize, usize) -> usize,
) -> Vec<T> {
    let mut out = Vec::new();
    for b in 0..s.batch {
        for oy in 0..s.output_height {
            let iy = pick(oy, s.input_height, s.output_height);
            for ox in 0..s.output_width {
                let ix = pick(ox, s.input_width, s.output_width);
                let at = ((b * s.input_height + iy) * s.input_width + ix) * s.channels;
                out.extend_from_slice(&input[at..at + s.channels]);
            }
        }
    }
    out
}

/// Runs `op` whole on every backend, and as tiles of 1 and 3 rows: each
/// gives `expected`.
fn check_everywhere<T: QuantElem>(
    what: &str,
    rows: usize,
    expected: &[T],
    run: impl Fn(Backend, &mut [T], std::ops::Range<usize>) -> Result<(), Error>,
) {
    let row_len = expected.len() / rows;
    for backend in Backend::available() {
        let mut out = vec![T::from_i32(0); expected.len()];
        run(backend, &mut out, 0..rows).unwrap();
        assert!(out == expected, "{what} ({})", backend.name());
        for tile in [1, 3] {
            let mut tiled = vec![T::from_i32(0); expected.len()];
            for start in (0..rows).step_by(tile) {
                let end = (start + tile).min(rows);
                run(
                    backend,
                    &mut tiled[start * row_len..end * row_len],
                    start..end,
                )
                .unwrap();
            }
            assert!(
                tiled == expected,
                "{what} tiles of {tile} ({})",
                backend.name()
            );
        }
    }
}

#[test]
fn nearest_float_indexing_equals_tflite_formula_for_every_option() {
    for (n, s) in shapes(13).iter().enumerate() {
        for c in OPTIONS {
            let input = data::<i8>(s.input_len().unwrap(), n as u64);
            let expected = naive_nearest(s, &input, |o, i, out| tflite_nearest(o, i, out, c));
            let op =
                ResizeNearestNeighbor::<i8>::new(*s, c, NearestIndexing::Float, q(), q()).unwrap();
            check_everywhere(
                &format!("{s:?} {c:?}"),
                op.output_rows(),
                &expected,
                |b, o, r| op.run_rows_with(b, &input, o, r),
            );
        }
    }
}

#[test]
fn nearest_fixed16_indexing_is_exact_floor_and_parts_from_float_where_measured() {
    // LiteRT's optimized 8-bit kernel: Q16 scale raised by one unit. For
    // these sizes it is the exact floor(o * input / output).
    let none = ResizeCoordinates::default();
    for input in 1..40usize {
        for output in 1..70usize {
            let s = ResizeShape::new([1, input, 1, 1], (output, 1)).unwrap();
            let op = ResizeNearestNeighbor::<u8>::new(s, none, NearestIndexing::Fixed16, q(), q())
                .unwrap();
            for (o, &i) in op.source_indices().0.iter().enumerate() {
                assert_eq!(i as usize, o * input / output, "{input} -> {output} at {o}");
            }
        }
    }
    // The reference's f32 product falls below the integer: 26 -> 22 at
    // output 11 (11 * 26 / 22 = 13 exactly; f32 gives 12.99..).
    let s = ResizeShape::new([1, 26, 1, 1], (22, 1)).unwrap();
    let index = |indexing| {
        let op = ResizeNearestNeighbor::<i8>::new(s, none, indexing, q(), q()).unwrap();
        op.source_indices().0[11]
    };
    assert_eq!(index(NearestIndexing::Fixed16), 13);
    assert_eq!(index(NearestIndexing::Float), 12);
    assert_eq!(tflite_nearest(11, 26, 22, none), 12);
}

#[test]
fn nearest_int16_and_uint8_copy_whole_pixels() {
    let s = ResizeShape::new([2, 3, 5, 17], (6, 10)).unwrap();
    let c = ResizeCoordinates {
        align_corners: false,
        half_pixel_centers: true,
    };
    let input = data::<i16>(s.input_len().unwrap(), 9);
    let expected = naive_nearest(&s, &input, |o, i, out| tflite_nearest(o, i, out, c));
    let op = ResizeNearestNeighbor::<i16>::new(s, c, NearestIndexing::Float, q(), q()).unwrap();
    check_everywhere("int16", op.output_rows(), &expected, |b, o, r| {
        op.run_rows_with(b, &input, o, r)
    });
    let input = data::<u8>(s.input_len().unwrap(), 10);
    let expected = naive_nearest(&s, &input, |o, i, out| o * i / out);
    let none = ResizeCoordinates::default();
    let op = ResizeNearestNeighbor::<u8>::new(s, none, NearestIndexing::Fixed16, q(), q()).unwrap();
    check_everywhere("uint8", op.output_rows(), &expected, |b, o, r| {
        op.run_rows_with(b, &input, o, r)
    });
}

/// TFLite's `ResizeBilinearInteger` by definition: Q10 coordinates from the
/// rounded Q10 scale, the Q20 sum of the four products in `i64`, rounded.
fn tflite_bilinear_q10<T: QuantElem>(
    s: &ResizeShape,
    input: &[T],
    c: ResizeCoordinates,
    rounding: Rounding,
) -> Vec<T> {
    let axis = |o: i64, input: i64, output: i64| -> (usize, usize, i64) {
        let scale = if c.align_corners && output > 1 {
            (1024 * (input - 1) + (output - 1) / 2) / (output - 1)
        } else {
            (1024 * input + output / 2) / output
        };
        let v = if c.half_pixel_centers {
            o * scale + scale / 2 - 512
        } else {
            o * scale
        };
        let lo = std::cmp::max(v / 1024, 0);
        let hi = std::cmp::min((v + 1023) / 1024, input - 1);
        (lo as usize, hi as usize, v - 1024 * lo)
    };
    let mut out = Vec::new();
    let at = |b: usize, y: usize, x: usize, ch: usize| {
        input[((b * s.input_height + y) * s.input_width + x) * s.channels + ch].to_i32() as i64
    };
    for b in 0..s.batch {
        for oy in 0..s.output_height {
            let (y0, y1, fy) = axis(oy as i64, s.input_height as i64, s.output_height as i64);
            for ox in 0..s.output_width {
                let (x0, x1, fx) = axis(ox as i64, s.input_width as i64, s.output_width as i64);
                for ch in 0..s.channels {
                    let sum = at(b, y0, x0, ch) * (1024 - fy) * (1024 - fx)
                        + at(b, y1, x0, ch) * fy * (1024 - fx)
                        + at(b, y0, x1, ch) * (1024 - fy) * fx
                        + at(b, y1, x1, ch) * fy * fx;
                    let v = match rounding {
                        Rounding::Single => (sum + (1 << 19)) >> 20,
                        Rounding::Double => {
                            // Half away from zero.
                            let m = (sum.abs() + (1 << 19)) >> 20;
                            if sum < 0 {
                                -m
                            } else {
                                m
                            }
                        }
                    };
                    out.push(T::from_i32(v as i32));
                }
            }
        }
    }
    out
}

const BILINEAR_OPTIONS: [ResizeCoordinates; 3] = [OPTIONS[0], OPTIONS[1], OPTIONS[2]];

#[test]
fn bilinear_q10_equals_tflite_formula_int8_and_int16_both_roundings() {
    for (n, s) in shapes(13).iter().enumerate() {
        for c in BILINEAR_OPTIONS {
            for rounding in [Rounding::Single, Rounding::Double] {
                let arithmetic = BilinearArithmetic::Integer10 { rounding };
                let what = format!("{s:?} {c:?} {rounding:?}");
                let input = data::<i8>(s.input_len().unwrap(), n as u64);
                let expected = tflite_bilinear_q10(s, &input, c, rounding);
                let op = ResizeBilinear::<i8>::new(*s, c, arithmetic, q(), q()).unwrap();
                check_everywhere(&what, op.output_rows(), &expected, |b, o, r| {
                    op.run_rows_with(b, &input, o, r)
                });
                if n % 4 == 0 {
                    let input = data::<i16>(s.input_len().unwrap(), n as u64);
                    let expected = tflite_bilinear_q10(s, &input, c, rounding);
                    let op = ResizeBilinear::<i16>::new(*s, c, arithmetic, q(), q()).unwrap();
                    check_everywhere(&what, op.output_rows(), &expected, |b, o, r| {
                        op.run_rows_with(b, &input, o, r)
                    });
                }
            }
        }
    }
}

#[test]
fn bilinear_q10_roundings_differ_on_negative_ties() {
    // 1x2 -> 1x4 legacy: output column 1 sits half way (Q10 fraction 512)
    // between -1 and 0: Q20 sum -2^19, a tie.
    let s = ResizeShape::new([1, 1, 2, 1], (1, 4)).unwrap();
    let c = ResizeCoordinates::default();
    let input = [-1i8, 0];
    let run = |rounding| {
        let op =
            ResizeBilinear::<i8>::new(s, c, BilinearArithmetic::Integer10 { rounding }, q(), q())
                .unwrap();
        let mut out = [0i8; 4];
        op.run(&input, &mut out).unwrap();
        out
    };
    assert_eq!(run(Rounding::Single), [-1, 0, 0, 0]);
    assert_eq!(run(Rounding::Double), [-1, -1, 0, 0]);
}

/// XNNPACK's resize-bilinear by definition: f32 source coordinates
/// (legacy and align_corners: `o * scale` clamped; half-pixel: `o *
/// scale + (0.5 * scale - 0.5)` clamped to the input), Q11 fractions
/// rounded to even, then its integer steps.
fn xnnpack_bilinear<T: QuantElem>(s: &ResizeShape, input: &[T], c: ResizeCoordinates) -> Vec<T> {
    let axis = |o: usize, input: usize, output: usize| -> (usize, usize, i32) {
        let adjust = (c.align_corners && output != 1) as usize;
        let scale = (input - adjust) as f32 / (output - adjust) as f32;
        let max = (input - 1) as f32;
        let v = if c.align_corners || !c.half_pixel_centers {
            (o as f32 * scale).min(max)
        } else {
            (o as f32 * scale + (0.5 * scale - 0.5)).clamp(0.0, max)
        };
        let lo = v as usize;
        let alpha = v - lo as f32;
        (
            lo,
            (lo + 1).min(input - 1),
            (alpha * 2048.0).round_ties_even() as i32,
        )
    };
    let at = |b: usize, y: usize, x: usize, ch: usize| {
        input[((b * s.input_height + y) * s.input_width + x) * s.channels + ch].to_i32()
    };
    let mut out = Vec::new();
    for b in 0..s.batch {
        for oy in 0..s.output_height {
            let (y0, y1, ay) = axis(oy, s.input_height, s.output_height);
            for ox in 0..s.output_width {
                let (x0, x1, ax) = axis(ox, s.input_width, s.output_width);
                for ch in 0..s.channels {
                    let (tl, tr) = (at(b, y0, x0, ch), at(b, y0, x1, ch));
                    let (bl, br) = (at(b, y1, x0, ch), at(b, y1, x1, ch));
                    let top = tl * 2048 + (tr - tl) * ax;
                    let bottom = bl * 2048 + (br - bl) * ax;
                    let acc = top * 2048 + (bottom - top) * ay;
                    out.push(T::from_i32((acc + (1 << 21)) >> 22));
                }
            }
        }
    }
    out
}

#[test]
fn bilinear_xnnpack_q11_equals_its_formula_int8_and_uint8() {
    for (n, s) in shapes(13).iter().enumerate() {
        for c in BILINEAR_OPTIONS {
            let what = format!("{s:?} {c:?}");
            let arithmetic = BilinearArithmetic::XnnpackQ11;
            let input = data::<i8>(s.input_len().unwrap(), n as u64);
            let expected = xnnpack_bilinear(s, &input, c);
            let op = ResizeBilinear::<i8>::new(*s, c, arithmetic, q(), q()).unwrap();
            check_everywhere(&what, op.output_rows(), &expected, |b, o, r| {
                op.run_rows_with(b, &input, o, r)
            });
            let input = data::<u8>(s.input_len().unwrap(), n as u64 + 7);
            let expected = xnnpack_bilinear(s, &input, c);
            let op = ResizeBilinear::<u8>::new(*s, c, arithmetic, q(), q()).unwrap();
            check_everywhere(&what, op.output_rows(), &expected, |b, o, r| {
                op.run_rows_with(b, &input, o, r)
            });
        }
    }
}

/// How the `f32` formula below is evaluated.
#[derive(Clone, Copy, PartialEq)]
enum FloatOrder {
    /// The reference kernel: products left to right in its corner order.
    Reference,
    /// The optimized kernel: the four weights first.
    Weights,
    /// The optimized kernel as LiteRT's aarch64 build contracts it.
    WeightsFused,
}

/// TFLite's two `f32` uint8 kernels by definition, `+ 0.5` and truncated.
fn tflite_bilinear_f32(
    s: &ResizeShape,
    input: &[u8],
    c: ResizeCoordinates,
    order: FloatOrder,
) -> Vec<u8> {
    let axis = |o: usize, input: usize, output: usize| -> (usize, usize, f32) {
        let scale = if c.align_corners && output > 1 {
            (input - 1) as f32 / (output - 1) as f32
        } else {
            input as f32 / output as f32
        };
        let v = match (c.half_pixel_centers, order) {
            (true, FloatOrder::WeightsFused) => (o as f32 + 0.5).mul_add(scale, -0.5),
            (true, _) => (o as f32 + 0.5) * scale - 0.5,
            (false, _) => o as f32 * scale,
        };
        let lo = (v.floor() as i64).max(0) as usize;
        let hi = (v.ceil() as i64).min(input as i64 - 1) as usize;
        (lo, hi, v - lo as f32)
    };
    let at = |b: usize, y: usize, x: usize, ch: usize| {
        input[((b * s.input_height + y) * s.input_width + x) * s.channels + ch] as f32
    };
    let mut out = Vec::new();
    for b in 0..s.batch {
        for oy in 0..s.output_height {
            let (y0, y1, dy) = axis(oy, s.input_height, s.output_height);
            for ox in 0..s.output_width {
                let (x0, x1, dx) = axis(ox, s.input_width, s.output_width);
                for ch in 0..s.channels {
                    let w = [
                        (1.0 - dy) * (1.0 - dx),
                        (1.0 - dy) * dx,
                        dy * (1.0 - dx),
                        dy * dx,
                    ];
                    let v = if order == FloatOrder::WeightsFused {
                        let sum = at(b, y0, x0, ch).mul_add(w[0], at(b, y0, x1, ch) * w[1]);
                        let sum = at(b, y1, x0, ch).mul_add(w[2], sum);
                        at(b, y1, x1, ch).mul_add(w[3], sum) + 0.5
                    } else if order == FloatOrder::Weights {
                        at(b, y0, x0, ch) * w[0]
                            + at(b, y0, x1, ch) * w[1]
                            + at(b, y1, x0, ch) * w[2]
                            + at(b, y1, x1, ch) * w[3]
                            + 0.5
                    } else {
                        at(b, y0, x0, ch) * (1.0 - dy) * (1.0 - dx)
                            + at(b, y1, x0, ch) * dy * (1.0 - dx)
                            + at(b, y0, x1, ch) * (1.0 - dy) * dx
                            + at(b, y1, x1, ch) * dy * dx
                            + 0.5
                    };
                    out.push(v as u8);
                }
            }
        }
    }
    out
}

#[test]
fn bilinear_uint8_float_kernels_equal_their_formulas() {
    for (n, s) in shapes(9).iter().enumerate() {
        for c in BILINEAR_OPTIONS {
            let input = data::<u8>(s.input_len().unwrap(), n as u64);
            for (arithmetic, order) in [
                (BilinearArithmetic::Float, FloatOrder::Reference),
                (
                    BilinearArithmetic::FloatWeights { fused: false },
                    FloatOrder::Weights,
                ),
                (
                    BilinearArithmetic::FloatWeights { fused: true },
                    FloatOrder::WeightsFused,
                ),
            ] {
                let expected = tflite_bilinear_f32(s, &input, c, order);
                let op = ResizeBilinear::<u8>::new(*s, c, arithmetic, q(), q()).unwrap();
                check_everywhere(
                    &format!("{s:?} {c:?} {arithmetic:?}"),
                    op.output_rows(),
                    &expected,
                    |b, o, r| op.run_rows_with(b, &input, o, r),
                );
            }
        }
    }
}

#[test]
fn bilinear_uint8_float_orders_differ_somewhere() {
    // The three evaluations are not the same function: a sweep finds
    // bytes where each pair parts (so the test above tells them apart).
    let (mut reference_weights, mut weights_fused) = (0, 0);
    for (n, s) in shapes(9).iter().enumerate() {
        for c in BILINEAR_OPTIONS {
            let input = data::<u8>(s.input_len().unwrap(), n as u64);
            let f = |order| tflite_bilinear_f32(s, &input, c, order);
            let reference = f(FloatOrder::Reference);
            let weights = f(FloatOrder::Weights);
            let fused = f(FloatOrder::WeightsFused);
            let differ = |a: &[u8], b: &[u8]| a.iter().zip(b).filter(|(x, y)| x != y).count();
            reference_weights += differ(&reference, &weights);
            weights_fused += differ(&weights, &fused);
        }
    }
    assert!(
        reference_weights > 0 && weights_fused > 0,
        "{reference_weights} {weights_fused}"
    );
}

#[test]
fn resize_new_refuses_what_tflite_refuses() {
    let s = ResizeShape::new([1, 4, 4, 3], (8, 8)).unwrap();
    let both = OPTIONS[3];
    let q10 = BilinearArithmetic::Integer10 {
        rounding: Rounding::Single,
    };
    assert!(matches!(
        ResizeBilinear::<i8>::new(s, both, q10, q(), q()),
        Err(Error::Unsupported { .. })
    ));
    let other = QuantParams::new(0.1, 3);
    assert!(matches!(
        ResizeBilinear::<i8>::new(s, OPTIONS[0], q10, q(), other),
        Err(Error::OutputQuantization { .. })
    ));
    assert!(matches!(
        ResizeNearestNeighbor::<i8>::new(s, OPTIONS[0], NearestIndexing::Float, q(), other),
        Err(Error::OutputQuantization { .. })
    ));
    assert!(matches!(
        ResizeBilinear::<i16>::new(s, OPTIONS[0], BilinearArithmetic::XnnpackQ11, q(), q()),
        Err(Error::Unsupported { .. })
    ));
    assert!(matches!(
        ResizeShape::new([1, 0, 4, 3], (8, 8)),
        Err(Error::ZeroDimension { .. })
    ));
    assert!(matches!(
        ResizeShape::new([1, 4, 4, 3], (8, 0)),
        Err(Error::ZeroDimension { .. })
    ));
    assert!(matches!(
        ResizeShape::new([1, 4, 4, 3], (1 << 21, 1)),
        Err(Error::OutOfDomain { .. })
    ));
    // 1 pixel to 2000: TFLite's rounded Q10 scale (1) reaches source pixel
    // 1 at the last outputs, past the input.
    let s = ResizeShape::new([1, 1, 1, 1], (2000, 1)).unwrap();
    assert!(matches!(
        ResizeBilinear::<i8>::new(s, OPTIONS[0], q10, q(), q()),
        Err(Error::OutOfDomain { .. })
    ));
    // Lengths are checked at run time.
    let s = ResizeShape::new([1, 2, 2, 3], (4, 4)).unwrap();
    let op = ResizeBilinear::<i8>::new(s, OPTIONS[0], q10, q(), q()).unwrap();
    let mut out = vec![0i8; 47];
    assert!(op.run(&[0; 12], &mut out).is_err());
    assert!(op
        .run_rows_with(Backend::Scalar, &[0; 12], &mut out, 0..5)
        .is_err());
}
