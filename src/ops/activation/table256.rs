//! 256-entry lookup tables for 8-bit logistic and tanh (`Method::Lut`).
//!
//! A [`Table256`] maps every input byte (`x as u8`; for `i8` the
//! two's-complement byte) to the output byte, so running the op is one lookup
//! per element. Two ways to fill it:
//!
//! * [`Table256::from_float`] (needs `std` for `f32::exp`/`f32::tanh`): the
//!   table TFLite's interpreter builds for int8/uint8 logistic and tanh
//!   (`LUTPopulate`): dequantize in `f32`, apply the function, multiply by
//!   `1 / output_scale` (computed in `f32`), round half away from zero, add the
//!   output zero point, clamp to the type.
//! * [`Table256::from_fixed_point`]: the scalar FixedPoint kernel run over all
//!   256 inputs, so bit-exact with `Method::FixedPoint` (and TFLite Micro) by
//!   construction.
//!
//! Lookups: [`lookup_u8`] here (scalar) and `table256_neon::lookup_u8` on
//! aarch64 (the table in 16 NEON registers, 64 bytes per iteration); the
//! family's `mod.rs` picks one by backend.

#[cfg(feature = "std")]
use super::params::Activation;
use super::params::ActivationParams;
use crate::elem::QuantElem;
use crate::ops::method::Method;
#[cfg(feature = "std")]
use crate::quant::QuantParams;

/// A 256-entry byte table: entry `b` is the output byte for input byte `b`.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Table256(pub(crate) [u8; 256]);

impl core::fmt::Debug for Table256 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Table256").field(&&self.0[..]).finish()
    }
}

impl Table256 {
    /// The table for `method` on `T` (`i8`, `u8`): TFLite's float-built
    /// table for [`Method::Lut`] (needs `std`: `f32::exp`/`tanh`), the
    /// FixedPoint kernel's for [`Method::LutFixedPoint`]; `None` for other
    /// methods, types, or `Method::Lut` without `std`.
    #[allow(unused_variables)]
    pub(crate) fn for_method<T: QuantElem>(
        method: Method,
        params: &ActivationParams,
        input: crate::quant::QuantParams,
        output: crate::quant::QuantParams,
    ) -> Option<Table256> {
        if T::MAX - T::MIN != 255 {
            return None;
        }
        match method {
            #[cfg(feature = "std")]
            Method::Lut => Some(Self::from_float::<T>(params.activation, input, output)),
            Method::LutFixedPoint => Some(Self::from_fixed_point::<T>(params)),
            _ => None,
        }
    }

    /// The table TFLite's interpreter fills for int8/uint8 logistic and tanh
    /// (`LUTPopulate`), step for step in `f32`. `T` is `i8` or `u8`; the
    /// quantization parameters are taken as given (validate them first).
    #[cfg(feature = "std")]
    pub(crate) fn from_float<T: QuantElem>(
        activation: Activation,
        input: QuantParams,
        output: QuantParams,
    ) -> Table256 {
        debug_assert!(T::MAX - T::MIN == 255, "Table256 is for 8-bit types");
        let inverse_scale = 1.0f32 / output.scale;
        let mut table = [0u8; 256];
        for v in T::MIN..=T::MAX {
            let dequantized: f32 = input.scale * ((v - input.zero_point) as f32);
            let transformed: f32 = match activation {
                Activation::Logistic => 1.0f32 / (1.0f32 + (-dequantized).exp()),
                Activation::Tanh => dequantized.tanh(),
            };
            // f32::round rounds half away from zero, as std::round (TfLiteRound).
            let rescaled = (transformed * inverse_scale).round();
            let quantized = (rescaled + output.zero_point as f32) as i32;
            let clamped = quantized.clamp(T::MIN, T::MAX);
            // The byte of v (two's complement for i8) and of the result.
            table[v as u8 as usize] = clamped as u8;
        }
        Table256(table)
    }

    /// The table the XNNPACK delegate builds for its qs8 / qu8 sigmoid and
    /// tanh (XNNPACK's reference operator run over every input byte), step
    /// for step: dequantize in `f32` as `(f32(q) - f32(zero_point)) *
    /// scale`; sigmoid as `e / (1 + e)` with `e = exp(f64(x))` in `f64`,
    /// rounded to `f32` (1 above `x = 100`, 0 below -100), tanh as `f32`
    /// `tanh`; quantize as `x * (1 / output_scale) + zero_point` in `f32`
    /// (the reciprocal rounded to `f32` first), rounded to nearest with ties
    /// to even, clamped to the type. `T` is `i8` or `u8`; the quantization
    /// is taken as given (validate it first).
    #[cfg(feature = "std")]
    pub(crate) fn from_xnnpack<T: QuantElem>(
        activation: Activation,
        input: QuantParams,
        output: QuantParams,
    ) -> Table256 {
        /// Beyond this magnitude XNNPACK's sigmoid returns its limit.
        const SIGMOID_SATURATION: f32 = 100.0;
        debug_assert!(T::MAX - T::MIN == 255, "Table256 is for 8-bit types");
        let inverse_scale = 1.0f32 / output.scale;
        let mut table = [0u8; 256];
        for v in T::MIN..=T::MAX {
            let x = (v as f32 - input.zero_point as f32) * input.scale;
            let y: f32 = match activation {
                Activation::Logistic if x > SIGMOID_SATURATION => 1.0,
                Activation::Logistic if x < -SIGMOID_SATURATION => 0.0,
                Activation::Logistic => {
                    let e = (x as f64).exp();
                    (e / (1.0 + e)) as f32
                }
                Activation::Tanh => x.tanh(),
            };
            let q = crate::quant::round_ties_even_f32(y * inverse_scale + output.zero_point as f32);
            let clamped = q.clamp(T::MIN as f32, T::MAX as f32) as i32;
            table[v as u8 as usize] = clamped as u8;
        }
        Table256(table)
    }

    /// The scalar FixedPoint kernel over all 256 inputs of `T` (`i8` or `u8`):
    /// a lookup through this table gives the bytes `Method::FixedPoint` gives.
    // With std, `Method::Lut` uses `from_float`; this one is then for tests.
    pub(crate) fn from_fixed_point<T: QuantElem>(params: &ActivationParams) -> Table256 {
        debug_assert!(T::MAX - T::MIN == 255, "Table256 is for 8-bit types");
        let mut inputs = [T::default(); 256];
        for (slot, v) in inputs.iter_mut().zip(T::MIN..=T::MAX) {
            *slot = T::from_i32(v);
        }
        let mut outputs = [T::default(); 256];
        super::scalar::activation::<T>(params, &inputs, &mut outputs);
        let mut table = [0u8; 256];
        for (x, y) in inputs.iter().zip(outputs.iter()) {
            table[x.to_i32() as u8 as usize] = y.to_i32() as u8;
        }
        Table256(table)
    }
}

/// Scalar lookup: `output[i] = table[input[i]]`. `input.len() == output.len()`
/// (checked by the caller; only the common length is written).
pub(crate) fn lookup_u8(table: &Table256, input: &[u8], output: &mut [u8]) {
    debug_assert_eq!(input.len(), output.len());
    for (x, y) in input.iter().zip(output.iter_mut()) {
        *y = table.0[*x as usize];
    }
}

/// Scalar lookup on `i8` data (the table is indexed by the two's-complement byte).
#[allow(dead_code)]
pub(crate) fn lookup_i8(table: &Table256, input: &[i8], output: &mut [i8]) {
    lookup_u8(
        table,
        bytemuck::cast_slice(input),
        bytemuck::cast_slice_mut(output),
    );
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// XNNPACK's table and TFLite's interpreter's are built from other
    /// float recipes (ties to even against away from zero, `f64` sigmoid
    /// against `f32`): over a sweep of input scales they stay within one
    /// step, and on a tie they part: logistic(0) = 0.5 exactly at output
    /// scale 1 gives XNNPACK's 0 and TFLite's 1.
    #[cfg(feature = "std")]
    #[test]
    fn xnnpack_table_parts_from_tflite_table_on_ties_only_by_one_step() {
        for activation in [Activation::Logistic, Activation::Tanh] {
            let output = match activation {
                Activation::Logistic => QuantParams::new(1.0 / 256.0, -128),
                Activation::Tanh => QuantParams::new(1.0 / 128.0, 0),
            };
            for k in 1..200 {
                let input = QuantParams::new(k as f32 / 512.0, (k % 7) - 3);
                let x = Table256::from_xnnpack::<i8>(activation, input, output);
                let t = Table256::from_float::<i8>(activation, input, output);
                for (a, b) in x.0.iter().zip(t.0.iter()) {
                    let (a, b) = (*a as i8 as i32, *b as i8 as i32);
                    assert!(
                        (a - b).abs() <= 1,
                        "{activation:?} scale {}: {a} vs {b}",
                        input.scale
                    );
                }
            }
        }
        let (input, output) = (QuantParams::new(0.1, 0), QuantParams::new(1.0, 0));
        let x = Table256::from_xnnpack::<i8>(Activation::Logistic, input, output);
        let t = Table256::from_float::<i8>(Activation::Logistic, input, output);
        assert_eq!((x.0[0], t.0[0]), (0, 1));
        // Saturation at |x| > 100: exactly 1 and 0.
        let wide = QuantParams::new(1.0, 0);
        let x = Table256::from_xnnpack::<i8>(
            Activation::Logistic,
            wide,
            QuantParams::new(1.0 / 256.0, -128),
        );
        assert_eq!((x.0[127] as i8, x.0[128] as i8), (127, -128));
    }
    use crate::backend::Backend;
    use crate::elem::ElemKind;
    use crate::error::Result;
    use crate::ops::activation::params::Activation;
    use crate::ops::activation::ActivationKernel;
    use crate::ops::{Logistic, Method, Tanh};
    use crate::quant::QuantParams;
    use std::vec::Vec;

    /// A lookup through `table` as the op runs it (`ActivationKernel::run`,
    /// the family's match of method and backend). The params are any valid
    /// ones of `T` (a table kernel does not read them).
    fn lookup<T: QuantElem>(
        backend: Backend,
        table: &Table256,
        input: &[T],
        output: &mut [T],
    ) -> Result<()> {
        let out = match T::KIND {
            ElemKind::I8 => QuantParams::new(1.0 / 256.0, -128),
            ElemKind::U8 => QuantParams::new(1.0 / 256.0, 0),
            ElemKind::I16 => QuantParams::new(1.0 / 32768.0, 0),
        };
        let params =
            ActivationParams::new::<T>(Activation::Logistic, QuantParams::new(0.1, 0), out)?;
        ActivationKernel::Table256(*table).run(&params, backend, input, output)
    }
    #[cfg(feature = "std")]
    use std::{format, string::String};

    /// xorshift64*: deterministic test data.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn fill(&mut self, buf: &mut [u8]) {
            for b in buf {
                *b = (self.next() >> 56) as u8;
            }
        }
    }

    fn random_table(rng: &mut Rng) -> Table256 {
        let mut t = [0u8; 256];
        rng.fill(&mut t);
        Table256(t)
    }

    #[test]
    fn scalar_lookup_is_the_table() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let t = random_table(&mut rng);
        let input: Vec<u8> = (0..=255u8).collect();
        let mut out = [0u8; 256];
        lookup_u8(&t, &input, &mut out);
        assert_eq!(out, t.0);
        let input_i8: Vec<i8> = (-128..=127i8).collect();
        let mut out_i8 = [0i8; 256];
        lookup_i8(&t, &input_i8, &mut out_i8);
        for (x, y) in input_i8.iter().zip(out_i8.iter()) {
            assert_eq!(*y as u8, t.0[*x as u8 as usize]);
        }
    }

    #[test]
    fn i16_is_unsupported() {
        let t = Table256([0; 256]);
        let mut out = [0i16; 4];
        assert!(lookup(Backend::Scalar, &t, &[0i16; 4], &mut out).is_err());
    }

    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    #[test]
    fn neon_equals_scalar() {
        use crate::ops::activation::table256_neon as neon_lut;
        assert!(Backend::Neon.is_available());
        let mut rng = Rng(0x0dd_b1a5_e5ba_11ad);
        // Every input byte, several tables (identity included).
        let mut identity = [0u8; 256];
        for (i, b) in identity.iter_mut().enumerate() {
            *b = i as u8;
        }
        let mut tables = std::vec![Table256(identity)];
        for _ in 0..8 {
            tables.push(random_table(&mut rng));
        }
        let all: Vec<u8> = (0..=255u8).cycle().take(256 * 3 + 5).collect();
        for t in &tables {
            let mut a = std::vec![0u8; all.len()];
            let mut b = std::vec![0u8; all.len()];
            lookup_u8(t, &all, &mut a);
            neon_lut::lookup_u8(t, &all, &mut b);
            assert_eq!(a, b);
        }
        // Lengths 0..=200 at offsets 0..16, guard bytes around the output.
        const GUARD: u8 = 0xa5;
        for len in 0..=200usize {
            let t = random_table(&mut rng);
            for off in 0..16usize {
                let mut src = std::vec![0u8; off + len + 16];
                rng.fill(&mut src);
                let mut want = std::vec![GUARD; off + len + 16];
                let mut got = std::vec![GUARD; off + len + 16];
                lookup_u8(&t, &src[off..off + len], &mut want[off..off + len]);
                neon_lut::lookup_u8(&t, &src[off..off + len], &mut got[off..off + len]);
                assert_eq!(want, got, "len {len} offset {off}");
                assert!(got[..off].iter().all(|&b| b == GUARD));
                assert!(got[off + len..].iter().all(|&b| b == GUARD));
            }
        }
        // Through the dispatcher, both 8-bit types.
        let t = random_table(&mut rng);
        let input_i8: Vec<i8> = (-128..=127i8).collect();
        let (mut a, mut b) = ([0i8; 256], [0i8; 256]);
        lookup(Backend::Scalar, &t, &input_i8, &mut a).unwrap();
        lookup(Backend::Neon, &t, &input_i8, &mut b).unwrap();
        assert_eq!(a, b);
    }

    const SCALES: [f32; 32] = [
        1e-4,
        0.001,
        0.0015,
        0.0025,
        1.0 / 256.0,
        0.006,
        0.01,
        0.015,
        0.025,
        0.04,
        0.0625,
        0.078_431_375,
        0.1,
        0.125,
        0.17,
        0.25,
        0.33,
        0.5,
        0.75,
        1.0,
        1.6,
        2.0,
        3.3,
        4.0,
        4.5,
        6.0,
        7.9,
        8.0,
        10.0,
        16.0,
        20.0,
        100.0,
    ];

    /// The fixed-point filling, looked up, equals the FixedPoint op on all 256 inputs.
    fn fixed_point_filling_case<T: QuantElem>(tanh: bool, zero_points: &[i32]) -> usize {
        let (out_scale, out_zp) = match (tanh, T::KIND) {
            (false, ElemKind::I8) => (1.0 / 256.0, -128),
            (false, _) => (1.0 / 256.0, 0),
            (true, ElemKind::I8) => (1.0 / 128.0, 0),
            (true, _) => (1.0 / 128.0, 128),
        };
        let q_out = QuantParams {
            scale: out_scale,
            zero_point: out_zp,
        };
        let inputs: Vec<T> = (T::MIN..=T::MAX).map(T::from_i32).collect();
        let mut cases = 0;
        for &scale in &SCALES {
            for &zp in zero_points {
                let q_in = QuantParams {
                    scale,
                    zero_point: zp,
                };
                let mut want = std::vec![T::default(); 256];
                let params = if tanh {
                    let op = Tanh::<T>::new(q_in, q_out, Method::FixedPoint).unwrap();
                    op.run_with(Backend::Scalar, &inputs, &mut want).unwrap();
                    *op.params()
                } else {
                    let op = Logistic::<T>::new(q_in, q_out, Method::FixedPoint).unwrap();
                    op.run_with(Backend::Scalar, &inputs, &mut want).unwrap();
                    *op.params()
                };
                let table = Table256::from_fixed_point::<T>(&params);
                for backend in Backend::available() {
                    let mut got = std::vec![T::default(); 256];
                    lookup(backend, &table, &inputs, &mut got).unwrap();
                    assert_eq!(
                        got,
                        want,
                        "{} tanh={tanh} scale {scale} zp {zp} {backend:?}",
                        T::NAME
                    );
                }
                cases += 1;
            }
        }
        cases
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "builds tables over many quantizations: too slow under Miri; scalar_lookup_is_the_table runs"
    )]
    fn fixed_point_filling_equals_fixed_point_kernel() {
        let zp_i8 = [-128, -100, -1, 0, 3, 50, 127];
        let zp_u8 = [0, 1, 100, 128, 200, 255];
        let n = fixed_point_filling_case::<i8>(false, &zp_i8)
            + fixed_point_filling_case::<i8>(true, &zp_i8)
            + fixed_point_filling_case::<u8>(false, &zp_u8)
            + fixed_point_filling_case::<u8>(true, &zp_u8);
        assert_eq!(n, SCALES.len() * 2 * (zp_i8.len() + zp_u8.len()));
    }

    #[cfg(feature = "std")]
    /// One golden case: `(in_scale, in_zp, out_scale, out_zp, input, output)`.
    type GoldenCase = (f32, i32, f32, i32, Vec<i32>, Vec<i32>);

    #[cfg(feature = "std")]
    fn load_golden(name: &str) -> Vec<GoldenCase> {
        use serde_json::Value;
        let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut lines = text.lines();
        let header: Value = serde_json::from_str(lines.next().expect("header")).unwrap();
        assert!(
            header.get("provenance").is_some(),
            "{name}: no provenance header"
        );
        let ints = |v: &Value| -> Vec<i32> {
            v.as_array()
                .expect("array")
                .iter()
                .map(|x| x.as_i64().expect("integer") as i32)
                .collect()
        };
        let mut cases = Vec::new();
        for line in lines.filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["status"].as_str(), Some("ok"), "{name}: {line:.200}");
            cases.push((
                v["in_scale"].as_f64().unwrap() as f32,
                v["in_zp"].as_i64().unwrap() as i32,
                v["out_scale"].as_f64().unwrap() as f32,
                v["out_zp"].as_i64().unwrap() as i32,
                ints(&v["input"]),
                ints(&v["output"]),
            ));
        }
        cases
    }

    /// Every case of a TFLite (optimized interpreter) golden file through the
    /// float filling; returns the mismatch descriptions and the case count.
    #[cfg(feature = "std")]
    fn float_filling_vs_golden<T: QuantElem>(
        file: &str,
        activation: Activation,
    ) -> (Vec<String>, usize) {
        let cases = load_golden(file);
        let mut mismatches = Vec::new();
        for (in_scale, in_zp, out_scale, out_zp, input, want) in &cases {
            let q_in = QuantParams {
                scale: *in_scale,
                zero_point: *in_zp,
            };
            let q_out = QuantParams {
                scale: *out_scale,
                zero_point: *out_zp,
            };
            let table = Table256::from_float::<T>(activation, q_in, q_out);
            let x: Vec<T> = input.iter().map(|&v| T::from_i32(v)).collect();
            for backend in Backend::available() {
                let mut y = std::vec![T::default(); x.len()];
                lookup(backend, &table, &x, &mut y).unwrap();
                for (i, (got, want)) in y.iter().zip(want.iter()).enumerate() {
                    if got.to_i32() != *want {
                        mismatches.push(format!(
                            "{file} in_scale {in_scale:e} in_zp {in_zp} {backend:?}: \
                             input {} got {} want {} (index {i})",
                            input[i],
                            got.to_i32(),
                            want
                        ));
                    }
                }
            }
        }
        (mismatches, cases.len())
    }

    #[cfg(feature = "std")]
    #[test]
    fn float_filling_equals_tflite_interpreter() {
        let mut all = Vec::new();
        let mut total = 0;
        for (file, activation, int8) in [
            ("logistic_int8_tflite_opt.jsonl", Activation::Logistic, true),
            ("tanh_int8_tflite_opt.jsonl", Activation::Tanh, true),
            (
                "logistic_uint8_tflite_opt.jsonl",
                Activation::Logistic,
                false,
            ),
            ("tanh_uint8_tflite_opt.jsonl", Activation::Tanh, false),
        ] {
            let (m, n) = if int8 {
                float_filling_vs_golden::<i8>(file, activation)
            } else {
                float_filling_vs_golden::<u8>(file, activation)
            };
            assert!(n >= 30, "{file}: only {n} cases");
            total += n;
            all.extend(m);
        }
        assert!(
            all.is_empty(),
            "{} mismatching elements over {total} cases:\n{}",
            all.len(),
            all.join("\n")
        );
    }
}
