//! Shared by the integration tests: the golden-file loader and helpers.
//! (Each test binary includes this module; not every one uses every item.)
#![allow(dead_code)]

use qneon::QuantElem;
use serde_json::Value;
use std::path::PathBuf;

pub fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// One case of a golden file.
pub struct Case {
    pub line: usize,
    pub in_scale: f32,
    pub in_zp: i32,
    pub out_scale: f32,
    pub out_zp: i32,
    pub beta: f32,
    pub row_len: usize,
    pub status: String,
    pub note: Option<String>,
    pub input: Vec<i32>,
    pub output: Option<Vec<i32>>,
}

pub fn load(name: &str) -> Vec<Case> {
    let path = golden_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines().enumerate();
    let (_, header) = lines.next().expect("empty golden file");
    let header: Value = serde_json::from_str(header).expect("header is JSON");
    assert!(
        header.get("provenance").is_some(),
        "{name}: first line must be the provenance header"
    );
    let ints = |v: &Value| -> Vec<i32> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|x| x.as_i64().expect("integer") as i32)
            .collect()
    };
    lines
        .map(|(i, l)| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1));
            let input = ints(&v["input"]);
            Case {
                line: i + 1,
                in_scale: v["in_scale"].as_f64().unwrap() as f32,
                in_zp: v["in_zp"].as_i64().unwrap() as i32,
                out_scale: v["out_scale"].as_f64().unwrap() as f32,
                out_zp: v["out_zp"].as_i64().unwrap() as i32,
                beta: v.get("beta").and_then(Value::as_f64).unwrap_or(1.0) as f32,
                row_len: v
                    .get("row_len")
                    .and_then(Value::as_u64)
                    .map_or(input.len(), |r| r as usize),
                status: v
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("ok")
                    .to_string(),
                note: v.get("note").and_then(Value::as_str).map(str::to_string),
                output: v.get("output").filter(|o| !o.is_null()).map(ints),
                input,
            }
        })
        .collect()
}

pub fn to_elems<T: QuantElem + TryFrom<i32>>(v: &[i32]) -> Vec<T> {
    v.iter()
        .map(|&x| T::try_from(x).ok().expect("golden value fits the type"))
        .collect()
}

pub fn widen<T: QuantElem>(v: &[T]) -> Vec<i32> {
    v.iter().map(|x| x.to_i32()).collect()
}

/// Exact, correctly rounded (half away from zero) quantization of `p / out_scale + zp`.
pub fn quantize<T: QuantElem>(p: f64, out_scale: f32, out_zp: i32) -> i32 {
    ((p / out_scale as f64).round() as i64 + out_zp as i64).clamp(T::MIN as i64, T::MAX as i64)
        as i32
}

/// xorshift64*: deterministic test data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// `0..n` (modulo: slightly biased, fine for test data).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `[lo, hi)` (rounded to `f32`).
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        (lo as f64 + (hi as f64 - lo as f64) * self.unit()) as f32
    }

    /// Any `i16`, from the top bits.
    pub fn i16(&mut self) -> i16 {
        (self.next() >> 48) as u16 as i16
    }
}
