//! Rows of exactly 64 bytes of the `Method::Lut` NEON kernel: one block per
//! row, loaded once for all three passes.

use super::output::output_table;
use crate::ops::softmax_rows::lut::SoftmaxLut;
use crate::ops::softmax_rows::neon::blocks::{load_post, STEP};
use crate::ops::softmax_rows::neon::sums::{block_sum_split, load_tables};
use core::arch::aarch64::*;

/// Rows of exactly 64 bytes (split tables, one output chunk): each row is
/// one block, loaded once and kept in registers for all three passes, with
/// no loop, mask or flush per pass. Its `d = max - x` serve both the sum
/// and the output lookup; the sum of 64 terms fits u16 lanes, so each byte
/// half is summed by one `uaddlp`, three `uadalp` and one `uaddlv`. The
/// split tables are loaded once for all rows: with no loop inside a row,
/// there are registers enough to keep them beside the row and its output
/// table (no spills in the row loop, checked on the disassembly).
#[inline(never)]
pub(super) fn rows64<const SIGNED: bool>(p: &SoftmaxLut, input: &[u8], output: &mut [u8]) {
    let rows = input.len().min(output.len()) / STEP;
    let mut src = input.as_ptr();
    let mut dst = output.as_mut_ptr();
    let tables = load_tables(p);
    for _ in 0..rows {
        // SAFETY: src points at row `r < rows` of input, whose 64 bytes are
        // in bounds (rows * 64 <= input.len()).
        let b = unsafe { load_post(&mut src) };
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        let d = unsafe {
            let max = if SIGNED {
                let s = |v| vreinterpretq_s8_u8(v);
                vmaxvq_s8(vmaxq_s8(vmaxq_s8(s(b.0), s(b.1)), vmaxq_s8(s(b.2), s(b.3)))) as u8
            } else {
                vmaxvq_u8(vmaxq_u8(vmaxq_u8(b.0, b.1), vmaxq_u8(b.2, b.3)))
            };
            let maxv = vdupq_n_u8(max);
            [
                vsubq_u8(maxv, b.0),
                vsubq_u8(maxv, b.1),
                vsubq_u8(maxv, b.2),
                vsubq_u8(maxv, b.3),
            ]
        };
        let sum = block_sum_split(&tables, &d);
        let (multiplier, shift) = p.row_multiplier_short(sum);
        let [table] = output_table::<1>(p, multiplier, shift as i16);
        // SAFETY: register arithmetic; for int8, q - 128 is q ^ 0x80.
        let y = d.map(|d| unsafe {
            let q = vqtbl4q_u8(table, d);
            if SIGNED {
                veorq_u8(q, vdupq_n_u8(0x80))
            } else {
                q
            }
        });
        // SAFETY: dst points at row `r < rows` of output (rows * 64 <=
        // output.len()); the asm writes only those 64 bytes and the pointer.
        unsafe {
            core::arch::asm!(
                "st1 {{v0.16b-v3.16b}}, [{dst}], #64",
                dst = inout(reg) dst,
                in("v0") y[0], in("v1") y[1], in("v2") y[2], in("v3") y[3],
                options(nostack, preserves_flags),
            );
        }
    }
}
