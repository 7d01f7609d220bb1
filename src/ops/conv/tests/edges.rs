//! The rounding ties where the three requantization paths part, and the
//! parameters `new()` refuses.

use std::vec;

use super::*;

/// A real multiplier of exactly 1/4 (Q0.31 mantissa 2^30, shift -1) puts
/// accumulators of 2 mod 4 on ties, where the three paths part: double
/// rounding's exact doubling high product (x / 2) then its power-of-two
/// divide rounds away from zero, single rounding's one shift toward
/// +infinity, XNNPACK to even.
#[test]
fn conv_ties_per_path() {
    let g = geometry(Padding::Valid, [1, 1, 1, 1], 1, [1, 1], [1, 1], [1, 1]);
    let want = |r: ConvRequantization, x: i8| -> i8 {
        let q = ConvQuantization {
            input: QuantParams::new(0.25, 0),
            weight_scales: &[1.0],
            output: QuantParams::new(1.0, 0),
            activation: FusedActivation::None,
            requantization: r,
        };
        let op = Conv2d::new(g, 1, &[1], None, &q).unwrap();
        let mut out = [0i8];
        op.run(&[x], &mut out).unwrap();
        out[0]
    };
    let [double, single, xnn] = PATHS;
    // -6 / 4 = -1.5: away from zero -2, up -1, even -2.
    assert_eq!(
        [want(double, -6), want(single, -6), want(xnn, -6)],
        [-2, -1, -2]
    );
    // -10 / 4 = -2.5: -3, -2, -2.
    assert_eq!(
        [want(double, -10), want(single, -10), want(xnn, -10)],
        [-3, -2, -2]
    );
    // 10 / 4 = 2.5: 3, 3, 2.
    assert_eq!(
        [want(double, 10), want(single, 10), want(xnn, 10)],
        [3, 3, 2]
    );
    // -7 / 4 = -1.75: no tie, -2 everywhere.
    assert_eq!(
        [want(double, -7), want(single, -7), want(xnn, -7)],
        [-2, -2, -2]
    );
}

#[test]
fn conv_bad_parameters_are_errors() {
    let g = geometry(Padding::Same, [1, 4, 4, 4], 4, [3, 3], [1, 1], [1, 1]);
    let w = vec![1i8; 4 * 9 * 4];
    let scales = [0.01f32; 4];
    let q = ConvQuantization {
        input: QuantParams::new(0.1, 0),
        weight_scales: &scales,
        output: QuantParams::new(0.2, 0),
        activation: FusedActivation::None,
        requantization: ConvRequantization::Multiplier(Rounding::Double),
    };
    assert!(Conv2d::new(g, 4, &w, None, &q).is_ok());
    let with = |f: &dyn Fn(&mut ConvGeometry)| {
        let mut g2 = g;
        f(&mut g2);
        g2
    };
    // Zero sizes, strides, dilations.
    for g2 in [
        with(&|g| g.batch = 0),
        with(&|g| g.input_height = 0),
        with(&|g| g.output_width = 0),
        with(&|g| g.kernel_width = 0),
        with(&|g| g.stride_height = 0),
        with(&|g| g.stride_width = 0),
        with(&|g| g.dilation_height = 0),
        with(&|g| g.dilation_width = 0),
    ] {
        assert!(matches!(
            Conv2d::new(g2, 4, &w, None, &q),
            Err(Error::ZeroDimension { .. })
        ));
    }
    // Overflowing counts and reach.
    let huge = with(&|g| g.input_height = usize::MAX / 2);
    assert!(matches!(
        Conv2d::new(huge, 4, &w, None, &q),
        Err(Error::OutOfDomain { .. })
    ));
    let far = with(&|g| g.stride_height = usize::MAX / 2);
    assert!(matches!(
        Conv2d::new(far, 4, &w, None, &q),
        Err(Error::OutOfDomain { .. })
    ));
    // Filter depth: zero, not dividing the input channels, groups not
    // dividing the output channels.
    assert!(Conv2d::new(g, 0, &w, None, &q).is_err());
    assert!(matches!(
        Conv2d::new(g, 3, &w, None, &q),
        Err(Error::Length { .. })
    ));
    let g3 = with(&|g| g.output_channels = 3);
    assert!(matches!(
        Conv2d::new(g3, 1, &[1i8; 27], None, &q),
        Err(Error::Length { .. })
    ));
    // Weights, bias, scales of the wrong length.
    assert!(matches!(
        Conv2d::new(g, 4, &w[1..], None, &q),
        Err(Error::Length { .. })
    ));
    assert!(matches!(
        Conv2d::new(g, 4, &w, Some(&[0; 3]), &q),
        Err(Error::Length { .. })
    ));
    let three = ConvQuantization {
        weight_scales: &scales[..3],
        ..q
    };
    assert!(matches!(
        Conv2d::new(g, 4, &w, None, &three),
        Err(Error::Length { .. })
    ));
    // Scales and zero points.
    for bad in [0.0f32, -1.0, f32::NAN, f32::INFINITY] {
        let qi = ConvQuantization {
            input: QuantParams::new(bad, 0),
            ..q
        };
        assert!(matches!(
            Conv2d::new(g, 4, &w, None, &qi),
            Err(Error::Scale { .. })
        ));
        let qo = ConvQuantization {
            output: QuantParams::new(bad, 0),
            ..q
        };
        assert!(matches!(
            Conv2d::new(g, 4, &w, None, &qo),
            Err(Error::Scale { .. })
        ));
        let ws = [bad; 4];
        let qw = ConvQuantization {
            weight_scales: &ws,
            ..q
        };
        assert!(matches!(
            Conv2d::new(g, 4, &w, None, &qw),
            Err(Error::Scale { .. })
        ));
    }
    for zp in [-129, 128] {
        let qi = ConvQuantization {
            input: QuantParams::new(0.1, zp),
            ..q
        };
        assert!(matches!(
            Conv2d::new(g, 4, &w, None, &qi),
            Err(Error::ZeroPoint { .. })
        ));
        let qo = ConvQuantization {
            output: QuantParams::new(0.1, zp),
            ..q
        };
        assert!(matches!(
            Conv2d::new(g, 4, &w, None, &qo),
            Err(Error::ZeroPoint { .. })
        ));
    }
    // Scales a path cannot represent.
    let big = ConvQuantization {
        input: QuantParams::new(1e6, 0),
        output: QuantParams::new(1e-6, 0),
        ..q
    };
    assert!(matches!(
        Conv2d::new(g, 4, &w, None, &big),
        Err(Error::Unsupported { .. })
    ));
    let xnn = ConvQuantization {
        input: QuantParams::new(300.0, 0),
        weight_scales: &[1.0],
        output: QuantParams::new(1.0, 0),
        requantization: ConvRequantization::XnnpackF32,
        ..q
    };
    assert!(matches!(
        Conv2d::new(g, 4, &w, None, &xnn),
        Err(Error::Unsupported { .. })
    ));

    // Depthwise: output channels must be input channels * multiplier.
    let dw = vec![1i8; 9 * 4];
    assert!(DepthwiseConv2d::new(g, 1, &dw, None, &q).is_ok());
    assert!(matches!(
        DepthwiseConv2d::new(g, 0, &dw, None, &q),
        Err(Error::ZeroDimension { .. })
    ));
    assert!(matches!(
        DepthwiseConv2d::new(g, 2, &dw, None, &q),
        Err(Error::Length { .. })
    ));
    assert!(matches!(
        DepthwiseConv2d::new(g, 1, &dw[1..], None, &q),
        Err(Error::Length { .. })
    ));

    // Run: buffer lengths, tiles and backends.
    let op = Conv2d::new(g, 4, &w, None, &q).unwrap();
    let (x, mut y) = (vec![0i8; 64], vec![0i8; 64]);
    assert!(matches!(op.run(&x[1..], &mut y), Err(Error::Length { .. })));
    assert!(matches!(op.run(&x, &mut y[1..]), Err(Error::Length { .. })));
    assert!(matches!(
        op.run_rows(Backend::Scalar, &x, &mut y, 0..5),
        Err(Error::Tile { .. })
    ));
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = 3..2;
    assert!(matches!(
        op.run_rows(Backend::Scalar, &x, &mut y, reversed),
        Err(Error::Tile { .. })
    ));
    assert!(op.run(&x, &mut y).is_ok());
}
