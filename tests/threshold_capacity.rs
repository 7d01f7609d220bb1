//! The thresholded ops' hit buffers at every capacity around the number of
//! hits: `Ok(n)` with exactly the hits of `run` + filter when they fit, the
//! slots past them untouched; `Error::Capacity` with the number needed
//! otherwise, the buffer holding the first hits. Inputs where many pass (up
//! to every element), so that the NEON kernels' unchecked writes (taken
//! while a whole 64-byte block's hits fit) and their checked ones both run,
//! at every length 0..=70 (int8/uint8 logistic, at offsets 0..=3, every
//! 8-bit input among them) and past several blocks; softmax rows of 1..=70
//! and 384 through the `Method::Lut` kernel (no top-k) and the others.

use qneon::{
    Backend, Error, Hit, Logistic, Method, QuantElem, QuantParams, RowHit, Softmax,
    ThresholdedLogistic, ThresholdedSoftmax,
};

/// The backends under test; on aarch64 NEON must be among them.
fn backends() -> Vec<Backend> {
    let b: Vec<Backend> = Backend::available().collect();
    #[cfg(target_arch = "aarch64")]
    assert!(b.contains(&Backend::Neon), "NEON must run on aarch64");
    b
}

/// xorshift64, deterministic.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Mostly near the top of the type's range (where outputs pass), some
    /// anywhere; the first 256 elements of every input are every value.
    fn input<T: QuantElem + TryFrom<i32>>(&mut self, n: usize) -> Vec<T> {
        (0..n)
            .map(|i| {
                let v = if i < 256 && n >= 256 {
                    T::MIN + ((i * 97) % 256) as i32
                } else if self.next().is_multiple_of(4) {
                    T::MIN + (self.next() % 256) as i32
                } else {
                    T::MAX - (self.next() % 48) as i32
                };
                T::try_from(v).ok().unwrap()
            })
            .collect()
    }
}

/// The capacities tried for `needed` hits: every one up to `needed + 66`
/// for small counts, else those around the ends and the 64-hit steps.
fn capacities(needed: usize) -> Vec<usize> {
    if needed <= 140 {
        return (0..=needed + 66).collect();
    }
    let mut c: Vec<usize> = (0..70).collect();
    c.extend((needed.saturating_sub(70)..=needed + 66).filter(|&k| k >= 70));
    c.extend((64..needed).step_by(61));
    c.sort_unstable();
    c.dedup();
    c
}

/// Runs `run(buffer)` at every capacity and checks the outcome against
/// `want`; `sentinel` marks untouched slots.
fn check_capacities<H: Copy + PartialEq + core::fmt::Debug>(
    want: &[H],
    sentinel: H,
    what: &str,
    mut run: impl FnMut(&mut [H]) -> Result<usize, Error>,
) -> usize {
    let mut cases = 0;
    for cap in capacities(want.len()) {
        let mut buf = vec![sentinel; cap + 3];
        match run(&mut buf[..cap]) {
            Ok(n) => {
                assert!(
                    cap >= want.len(),
                    "{what} cap {cap}: Ok({n}) for {}",
                    want.len()
                );
                assert_eq!(n, want.len(), "{what} cap {cap}");
                assert_eq!(&buf[..n], want, "{what} cap {cap}");
                assert!(buf[n..].iter().all(|h| *h == sentinel), "{what} cap {cap}");
            }
            Err(Error::Capacity {
                capacity, needed, ..
            }) => {
                assert!(cap < want.len(), "{what} cap {cap}: capacity error");
                assert_eq!((capacity, needed), (cap, want.len()), "{what}");
                assert_eq!(&buf[..cap], &want[..cap], "{what} cap {cap}");
                assert!(
                    buf[cap..].iter().all(|h| *h == sentinel),
                    "{what} cap {cap}"
                );
            }
            Err(e) => panic!("{what} cap {cap}: {e}"),
        }
        cases += 1;
    }
    cases
}

fn logistic_capacities<T: QuantElem + TryFrom<i32>>(in_zp: i32) {
    let out = Logistic::<T>::output_quantization();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut cases = 0;
    for method in [Method::Lut, Method::FixedPoint] {
        for (scale, threshold) in [(0.1f32, 0.6f32), (0.05, 0.0), (0.02, 0.5), (0.1, 0.99)] {
            let q_in = QuantParams::new(scale, in_zp);
            let op = Logistic::<T>::new(q_in, out, method).unwrap();
            let th = ThresholdedLogistic::<T>::new(q_in, out, method, threshold).unwrap();
            let lens = (0..=70).chain([127, 128, 129, 256, 300, 1000]);
            for len in lens {
                let buf = rng.input::<T>(len + 3);
                for offset in 0..=3 {
                    if offset > 0 && len > 70 {
                        break;
                    }
                    let x = &buf[offset..offset + len];
                    for b in backends() {
                        let mut y = vec![T::default(); len];
                        op.run_with(b, x, &mut y).unwrap();
                        let want: Vec<Hit<T>> = y
                            .iter()
                            .enumerate()
                            .filter(|(_, q)| {
                                (q.to_i32() - out.zero_point) as f64 * out.scale as f64
                                    >= threshold as f64
                            })
                            .map(|(i, &value)| Hit {
                                index: i as u32,
                                value,
                            })
                            .collect();
                        let sentinel = Hit {
                            index: u32::MAX,
                            value: T::default(),
                        };
                        let what = format!("{method} {b:?} t {threshold} len {len} +{offset}");
                        cases += check_capacities(&want, sentinel, &what, |h| th.run_with(b, x, h));
                    }
                }
            }
        }
    }
    assert!(cases > 10_000, "{cases}");
}

#[test]
fn logistic_i8_every_capacity() {
    logistic_capacities::<i8>(0);
}

#[test]
fn logistic_u8_every_capacity() {
    logistic_capacities::<u8>(128);
}

fn softmax_capacities<T: QuantElem + TryFrom<i32>>(in_zp: i32) {
    let out = Softmax::<T>::output_quantization();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut cases = 0;
    for method in [Method::Lut, Method::FixedPoint] {
        // Split and full Lut tables; thresholds where most, some and
        // (t = 0) all elements pass.
        for (scale, threshold) in [(0.1f32, 0.0f32), (0.1, 0.002), (0.03, 0.004), (0.5, 0.05)] {
            let q_in = QuantParams::new(scale, in_zp);
            let op = Softmax::<T>::new(q_in, 1.0, out, method).unwrap();
            let th = ThresholdedSoftmax::<T>::new(q_in, 1.0, out, method, Some(threshold), None)
                .unwrap();
            for (row_len, rows) in (1..=70).map(|l| (l, 1 + l % 3)).chain([(384, 3)]) {
                let x = rng.input::<T>(row_len * rows);
                for b in backends() {
                    let mut y = vec![T::default(); x.len()];
                    op.run_with(b, &x, &mut y, row_len).unwrap();
                    let want: Vec<RowHit<T>> = y
                        .iter()
                        .enumerate()
                        .filter(|(_, q)| {
                            (q.to_i32() - out.zero_point) as f64 * out.scale as f64
                                >= threshold as f64
                        })
                        .map(|(i, &value)| RowHit {
                            row: (i / row_len) as u32,
                            index: (i % row_len) as u32,
                            value,
                        })
                        .collect();
                    let sentinel = RowHit {
                        row: u32::MAX,
                        index: 0,
                        value: T::default(),
                    };
                    let what = format!("{method} {b:?} scale {scale} t {threshold} len {row_len}");
                    cases += check_capacities(&want, sentinel, &what, |h| {
                        th.run_with(b, &x, row_len, h)
                    });
                }
            }
        }
    }
    assert!(cases > 5_000, "{cases}");
}

#[test]
fn softmax_i8_every_capacity() {
    softmax_capacities::<i8>(0);
}

#[test]
fn softmax_u8_every_capacity() {
    softmax_capacities::<u8>(128);
}
