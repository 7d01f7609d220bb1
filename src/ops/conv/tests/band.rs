//! Bands of output rows (`run_band`, `run_band_with_scratch`): every cut of
//! the rows into bands gives the whole run's rows on every backend, and a
//! band of the wrong length or past the rows is an error. Likewise ranges
//! of a pointwise layer's output channels (`run_channels`).

use core::ops::Range;
use std::vec;

use super::*;

/// The cuts a split layer meets: halves, thirds, single rows, an empty band.
fn cuts(rows: usize) -> Vec<Vec<Range<usize>>> {
    let mut all = vec![vec![0..rows]];
    for parts in [2, 3, 4] {
        all.push(
            (0..parts)
                .map(|i| i * rows / parts..(i + 1) * rows / parts)
                .collect(),
        );
    }
    all.push((0..rows).map(|r| r..r + 1).collect());
    all.push(vec![0..0, 0..rows, rows..rows]);
    all
}

/// Runs `band_run` for every cut of `rows` rows of `row_len` elements on
/// every backend, each band into its own slice, and checks the bands
/// against `whole`, the whole run's output.
pub(super) fn bands_equal_whole(
    whole: &[i8],
    rows: usize,
    label: &str,
    band_run: impl Fn(Backend, &mut [i8], Range<usize>) -> Result<()>,
) {
    let row_len = whole.len() / rows;
    for backend in Backend::available() {
        for cut in cuts(rows) {
            for band_rows in cut {
                let mut band = vec![0x44u8 as i8; band_rows.len() * row_len];
                band_run(backend, &mut band, band_rows.clone()).unwrap();
                let expected = &whole[band_rows.start * row_len..band_rows.end * row_len];
                assert_eq!(
                    band,
                    expected,
                    "{label} {} rows {band_rows:?}",
                    backend.name()
                );
            }
        }
    }
}

/// Runs `channel_run` for cuts of the `channels` output channels (the
/// last dimension of `whole`, the whole run's output) at multiples of
/// `grain` on every backend, each range into a tile of its own, and checks
/// each tile against those channels of every pixel of `whole`.
pub(super) fn channels_equal_whole(
    whole: &[i8],
    channels: usize,
    grain: usize,
    label: &str,
    channel_run: impl Fn(Backend, &mut [i8], Range<usize>) -> Result<()>,
) {
    let pixels = whole.len() / channels;
    let blocks = channels.div_ceil(grain);
    let mut cuts: Vec<Vec<Range<usize>>> = vec![vec![0..channels]];
    for parts in [2, 3, 5] {
        cuts.push(
            (0..parts)
                .map(|i| {
                    (i * blocks / parts * grain).min(channels)
                        ..((i + 1) * blocks / parts * grain).min(channels)
                })
                .collect(),
        );
    }
    cuts.push(
        (0..blocks)
            .map(|b| b * grain..((b + 1) * grain).min(channels))
            .collect(),
    );
    for backend in Backend::available() {
        for cut in &cuts {
            for range in cut {
                let mut tile = vec![0x44u8 as i8; pixels * range.len()];
                channel_run(backend, &mut tile, range.clone()).unwrap();
                let expected: Vec<i8> = (0..pixels)
                    .flat_map(|p| {
                        whole[p * channels + range.start..p * channels + range.end]
                            .iter()
                            .copied()
                    })
                    .collect();
                assert_eq!(
                    tile,
                    expected,
                    "{label} {} channels {range:?}",
                    backend.name()
                );
            }
        }
        // Off the grain, past the channels, or a tile of the wrong length.
        if grain > 1 && channels > grain {
            let mut tile = vec![0i8; pixels * (channels - 1)];
            let err = channel_run(backend, &mut tile, 1..channels);
            assert!(matches!(err, Err(Error::Tile { .. })), "{label}: {err:?}");
        }
        let mut tile = vec![0i8; pixels * (grain + 1)];
        let err = channel_run(backend, &mut tile, 0..grain);
        assert!(matches!(err, Err(Error::Length { .. })), "{label}: {err:?}");
        let mut tile = vec![0i8; pixels];
        let err = channel_run(backend, &mut tile, channels..channels + 1);
        assert!(matches!(err, Err(Error::Tile { .. })), "{label}: {err:?}");
    }
}

fn quantization(scales: &[f32]) -> ConvQuantization<'_> {
    ConvQuantization {
        input: QuantParams::new(0.047, -7),
        weight_scales: scales,
        output: QuantParams::new(0.11, 5),
        activation: FusedActivation::Relu6,
        requantization: ConvRequantization::Multiplier(Rounding::Single),
    }
}

#[test]
fn conv_band_of_the_wrong_length_or_past_the_rows_is_an_error() {
    let g = geometry(Padding::Same, [1, 6, 5, 3], 4, [3, 3], [1, 1], [1, 1]);
    let scales = [0.003f32];
    let q = quantization(&scales);
    let op = Conv2d::new(g, 3, &[1i8; 4 * 9 * 3], None, &q).unwrap();
    let input = [3i8; 6 * 5 * 3];
    let row = 5 * 4;
    let mut scratch = vec![0i8; op.scratch_bytes()];
    let mut short = vec![0i8; 2 * row - 1];
    let err = op.run_band(Backend::Scalar, &input, &mut short, 1..3);
    assert!(matches!(err, Err(Error::Length { .. })), "{err:?}");
    let err = op.run_band_with_scratch(Backend::Scalar, &input, &mut short, 1..3, &mut scratch);
    assert!(matches!(err, Err(Error::Length { .. })), "{err:?}");
    let mut two = vec![0i8; 2 * row];
    let err = op.run_band(Backend::Scalar, &input, &mut two, 5..7);
    assert!(matches!(err, Err(Error::Tile { .. })), "{err:?}");
    #[allow(clippy::reversed_empty_ranges)]
    let err = op.run_band(Backend::Scalar, &input, &mut two, 3..1);
    assert!(matches!(err, Err(Error::Tile { .. })), "{err:?}");
    let err = op.run_band(Backend::Scalar, &input[1..], &mut two, 1..3);
    assert!(matches!(err, Err(Error::Length { .. })), "{err:?}");
    assert!(op.run_band(Backend::Scalar, &input, &mut two, 4..6).is_ok());
}

#[test]
fn depthwise_band_of_the_wrong_length_or_past_the_rows_is_an_error() {
    let g = geometry(Padding::Same, [2, 4, 5, 3], 6, [3, 3], [1, 1], [1, 1]);
    let scales = [0.003f32];
    let q = quantization(&scales);
    let op = DepthwiseConv2d::new(g, 2, &[1i8; 9 * 6], None, &q).unwrap();
    let input = [3i8; 2 * 4 * 5 * 3];
    let row = 5 * 6;
    let mut long = vec![0i8; 3 * row + 1];
    let err = op.run_band(Backend::Scalar, &input, &mut long, 2..5);
    assert!(matches!(err, Err(Error::Length { .. })), "{err:?}");
    let mut one = vec![0i8; row];
    let err = op.run_band(Backend::Scalar, &input, &mut one, 8..9);
    assert!(matches!(err, Err(Error::Tile { .. })), "{err:?}");
    // The last row of the second image.
    assert!(op.run_band(Backend::Scalar, &input, &mut one, 7..8).is_ok());
}
