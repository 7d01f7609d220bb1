//! The NEON `Method::Lut` softmax's path for rows of at most 16 bytes (four
//! rows per group, reciprocals on four lanes, outputs by arithmetic) equals
//! the scalar kernel: every row length 1..=16, row counts that leave every
//! tail of a group and every window that would pass the end, split and full
//! exp tables, outputs that need one and several table chunks, constant
//! rows, the extremes of the type, and offsets into the slices.

use qneon::{Backend, Method, QuantElem, QuantParams, Softmax};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn output_params<T: QuantElem>() -> QuantParams {
    QuantParams::new(1.0 / 256.0, T::MIN)
}

fn case<T: QuantElem + std::fmt::Debug>(
    rng: &mut Rng,
    scale: f32,
    row_len: usize,
    rows: usize,
    spread: u64,
) {
    let op = Softmax::<T>::new(
        QuantParams::new(scale, 0),
        1.0,
        output_params::<T>(),
        Method::Lut,
    )
    .unwrap();
    // A prefix, so the slices start at every offset mod 16.
    let offset = (rng.next() % 16) as usize;
    let total = offset + rows * row_len;
    let base = (rng.next() % 256) as i32 + T::MIN;
    let x: Vec<T> = (0..total)
        .map(|_| {
            let v = match rng.next() % 8 {
                0 => T::MIN,
                1 => T::MAX,
                _ => base + (rng.next() % (spread + 1)) as i32 - spread as i32 / 2,
            };
            T::from_i32(v.clamp(T::MIN, T::MAX))
        })
        .collect();
    let mut want = vec![T::from_i32(0); total - offset];
    op.run_with(Backend::Scalar, &x[offset..], &mut want, row_len)
        .unwrap();
    let mut got = vec![T::from_i32(T::MAX); total];
    op.run_with(Backend::Neon, &x[offset..], &mut got[offset..], row_len)
        .unwrap();
    assert_eq!(
        &got[offset..],
        &want[..],
        "{} scale {scale} row_len {row_len} rows {rows} spread {spread}",
        T::NAME
    );
    assert!(
        got[..offset].iter().all(|v| v.to_i32() == T::MAX),
        "wrote before the output"
    );
}

fn all<T: QuantElem + std::fmt::Debug>(seed: u64) {
    if !Backend::Neon.is_available() {
        return;
    }
    let mut rng = Rng(seed);
    // beta * scale below the split tables' 0.09 (full tables, several output
    // chunks), at it, and above (split, one chunk).
    for scale in [0.001f32, 0.02, 0.05, 0.0866, 0.09, 0.1, 0.25, 1.0, 8.0] {
        for row_len in 1..=16 {
            for rows in 1..=13 {
                for spread in [0u64, 3, 40, 255] {
                    case::<T>(&mut rng, scale, row_len, rows, spread);
                }
            }
            case::<T>(&mut rng, scale, row_len, 4096 / row_len, 255);
        }
    }
}

#[test]
fn int8_short_rows_equal_the_scalar_kernel() {
    all::<i8>(1);
}

#[test]
fn uint8_short_rows_equal_the_scalar_kernel() {
    all::<u8>(2);
}
