//! `--data`: the distribution of the 8- and 16-bit inputs. The table-driven
//! kernels' cost depends on it (how far a row's values spread decides how
//! many table chunks they touch and whether a row's cut-off falls inside
//! it), so the bench measures both the attention-like logits and rows
//! where every value of the type is equally likely.

use qneon::{QuantElem, QuantParams};

use crate::cases::{logits, Rng};

/// The input distributions `--data` accepts.
pub(crate) const DATA: [&str; 2] = ["logits", "uniform"];

/// Inputs of the 8- and 16-bit types: `logits` (N(0, 3) in real units,
/// see [`logits`]) or `uniform` ([`full_range`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Data {
    Logits,
    Uniform,
}

pub(crate) fn parse_data(name: &str) -> Result<Data, String> {
    match name {
        "logits" => Ok(Data::Logits),
        "uniform" => Ok(Data::Uniform),
        other => Err(format!("unknown data {other} ({})", DATA.join(", "))),
    }
}

impl Data {
    /// `n` inputs of type `T` quantized with `q` (used by `logits` only).
    pub(crate) fn generate<T: QuantElem + TryFrom<i32>>(
        self,
        n: usize,
        q: QuantParams,
        seed: u64,
    ) -> Vec<T> {
        match self {
            Data::Logits => logits(n, q, seed),
            Data::Uniform => full_range(n, seed),
        }
    }
}

/// `n` values with every value of `T` (`T::MIN..=T::MAX`) equally likely.
pub(crate) fn full_range<T: QuantElem + TryFrom<i32>>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = Rng(seed);
    let span = (T::MAX as i64 - T::MIN as i64 + 1) as u64;
    (0..n)
        .map(|_| {
            // The top bits of the 64-bit output: the modulo bias is below
            // 2^-47 for spans up to 2^16.
            let v = T::MIN as i64 + ((rng.next_u64() >> 1) % span) as i64;
            T::try_from(v as i32).ok().expect("within the type")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value occurs, about equally often.
    #[test]
    fn full_range_covers_every_int8_value_evenly() {
        let v = full_range::<i8>(256 * 1000, 7);
        let mut counts = [0u32; 256];
        for x in v {
            counts[(x as i32 + 128) as usize] += 1;
        }
        let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*lo > 850 && *hi < 1150, "counts from {lo} to {hi}");
    }

    #[test]
    fn full_range_reaches_both_ends_of_int16() {
        let v = full_range::<i16>(1 << 20, 9);
        assert!(v.contains(&i16::MIN) && v.contains(&i16::MAX));
    }

    #[test]
    fn parses_the_names() {
        assert_eq!(parse_data("logits"), Ok(Data::Logits));
        assert_eq!(parse_data("uniform"), Ok(Data::Uniform));
        assert!(parse_data("normal").is_err());
    }
}
