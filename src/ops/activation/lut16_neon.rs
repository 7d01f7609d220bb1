//! int16 logistic and tanh, `Method::Lut`, NEON backend: a gather from a
//! table of every output.
//!
//! The op maps each of the 65,536 int16 inputs to exactly one output, so
//! `new()` runs the scalar kernel ([`Activation16::apply`], the oracle) on all
//! of them once and keeps the results: 65,536 `i16` (128 KiB, on the heap,
//! shared between clones). `run()` is then one gather per element, whatever
//! TFLite's kernel for the scale (the interpolated `sigmoid_table_uint16`, the
//! 64-bit product, or gemmlowp's 16-bit fixed point at `2^-12` / `2^-11`),
//! and the NEON backend equals the scalar one by construction.
//!
//! Why a gather and not TFLite's interpolation in vector registers: NEON has
//! no gather, and its table instructions reach 64 bytes, so the 256
//! interpolation nodes (`ua`, `ub - ua`, two bytes each) take four 256-byte
//! `tbl`/`tbx` chains per 16 elements, on top of the 32-bit rescale, the
//! interpolation and the sign fix: about 65 instructions per 16 elements
//! counted on paper, against 3 per element here (load the input, load its
//! output, store it). The 16-bit fixed point of the `2^-12` scales costs
//! far more in vector form (gemmlowp's `exp` and three Newton steps).

#![cfg_attr(not(feature = "std"), allow(dead_code))]

use super::lut16::Activation16;
use super::params::Activation;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// Every output of one prepared op: entry `q as u16` is the output for input
/// `q`, Q0.15 (65,536 entries, 128 KiB).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct OutputTable16(Arc<[i16; 65536]>);

impl core::fmt::Debug for OutputTable16 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("OutputTable16(65536 outputs)")
    }
}

impl OutputTable16 {
    /// The scalar kernel on every input.
    pub(crate) fn new(kernel: &Activation16, activation: Activation) -> OutputTable16 {
        let inputs: Vec<i16> = (0..=u16::MAX).map(|u| u as i16).collect();
        let mut outputs = alloc::vec![0i16; 65536];
        kernel.run(activation, &inputs, &mut outputs);
        let table: Arc<[i16]> = outputs.into();
        match table.try_into() {
            Ok(table) => OutputTable16(table),
            // 65,536 entries by construction.
            Err(_) => unreachable!("65536 outputs"),
        }
    }

    /// The table, for the kernel.
    pub(crate) fn entries(&self) -> &[i16; 65536] {
        &self.0
    }
}

/// `output[i] = table[input[i]]` over the common length, 32 elements per
/// iteration: per element one `ldrh` of the input, one `ldrh` of the table
/// (`[table, index, lsl #1]`), one `strh`. Indexing by `u16` into 65,536
/// entries needs no bounds check.
#[inline(never)]
pub(crate) fn gather_i16(table: &[i16; 65536], input: &[i16], output: &mut [i16]) {
    let n = input.len().min(output.len());
    let (input, output) = (&input[..n], &mut output[..n]);
    let mut blocks_in = input.chunks_exact(32);
    let mut blocks_out = output.chunks_exact_mut(32);
    for (x, y) in (&mut blocks_in).zip(&mut blocks_out) {
        for k in 0..32 {
            y[k] = table[x[k] as u16 as usize];
        }
    }
    for (x, y) in blocks_in
        .remainder()
        .iter()
        .zip(blocks_out.into_remainder())
    {
        *y = table[*x as u16 as usize];
    }
}
