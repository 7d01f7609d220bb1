//! Byte-table lookups on NEON: one 64-byte table chunk (four registers)
//! applied to 64 byte indices with `tbl`/`tbx`, the step of every kernel
//! that maps bytes through a table of 256 entries chunk by chunk (the exact
//! 8-bit softmax and log-softmax, their `Lut` methods).
//!
//! A leaf: it imports only `core::arch`.

use core::arch::aarch64::*;

/// Looks up one 64-byte table chunk for 16 x 4 indices: `tbl` (`FIRST`,
/// out-of-range indices read 0) or `tbx` (out-of-range indices keep `out`).
/// In asm, with the chunk loaded into v28..v31 where it is used: with
/// intrinsics LLVM hoists the loads of every chunk of every plane out of
/// the loop into more registers than there are, and spills.
///
/// # Safety
/// `table` must be valid for reading 64 bytes.
#[inline(always)]
pub(crate) unsafe fn lookup4<const FIRST: bool>(
    table: *const u8,
    d: &[uint8x16_t; 4],
    out: &mut [uint8x16_t; 4],
) {
    if FIRST {
        // SAFETY: the caller guarantees 64 readable bytes at `table`; the
        // asm writes only its outputs and v28..v31 (clobbered). The results
        // are `out`, not `lateout`: each is written while later indices are
        // still read.
        unsafe {
            core::arch::asm!(
                "ld1 {{v28.16b-v31.16b}}, [{t}]",
                "tbl {o0:v}.16b, {{v28.16b-v31.16b}}, {d0:v}.16b",
                "tbl {o1:v}.16b, {{v28.16b-v31.16b}}, {d1:v}.16b",
                "tbl {o2:v}.16b, {{v28.16b-v31.16b}}, {d2:v}.16b",
                "tbl {o3:v}.16b, {{v28.16b-v31.16b}}, {d3:v}.16b",
                t = in(reg) table,
                d0 = in(vreg) d[0], d1 = in(vreg) d[1], d2 = in(vreg) d[2], d3 = in(vreg) d[3],
                o0 = out(vreg) out[0], o1 = out(vreg) out[1],
                o2 = out(vreg) out[2], o3 = out(vreg) out[3],
                out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                options(readonly, nostack, preserves_flags),
            );
        }
    } else {
        // SAFETY: as above; `out` is read and written.
        unsafe {
            core::arch::asm!(
                "ld1 {{v28.16b-v31.16b}}, [{t}]",
                "tbx {o0:v}.16b, {{v28.16b-v31.16b}}, {d0:v}.16b",
                "tbx {o1:v}.16b, {{v28.16b-v31.16b}}, {d1:v}.16b",
                "tbx {o2:v}.16b, {{v28.16b-v31.16b}}, {d2:v}.16b",
                "tbx {o3:v}.16b, {{v28.16b-v31.16b}}, {d3:v}.16b",
                t = in(reg) table,
                d0 = in(vreg) d[0], d1 = in(vreg) d[1], d2 = in(vreg) d[2], d3 = in(vreg) d[3],
                o0 = inout(vreg) out[0], o1 = inout(vreg) out[1],
                o2 = inout(vreg) out[2], o3 = inout(vreg) out[3],
                out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                options(readonly, nostack, preserves_flags),
            );
        }
    }
}
