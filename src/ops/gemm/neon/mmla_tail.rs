//! The last row tile of a panel group on the `smmla` path when it has 1 to
//! 7 rows (small-M layers: a CNN's 6 x 6, 3 x 3 or 1 x 1 output pixels):
//! only its `ceil(mr / 2)` row pairs are multiplied, against the block's
//! weights paired once for the group ([`super::mmla_tiles::pair_weights`]),
//! so a step has no `zip`s: per 16 depth bytes two 4-register loads of
//! weights, two loads of row pairs and 8 `smmla`s per row pair (14
//! instructions with the loop for 1 row pair against the whole tile's 42
//! on packed weights).
//!
//! The panel is `fill_pairs`'s (see `source::PairLayout`): depths `16 i..16
//! i + 8` of row pair `p` at `128 i + 16 p`, depths `16 i + 8..16 i + 16` 64
//! bytes on. Paired weights in v0-v7 (`pair_weights`' order: channel pairs
//! 0-3 of the low depths, then of the high ones), row pairs from v8, row
//! pair `p`'s 2 x 2 blocks in v(16 + 4p)..v(19 + 4p), as in `mmla_panel`.

use core::arch::aarch64::*;

/// The 4 `smmla`s of one row pair (`x`) against the 4 paired channel pairs
/// `w0`-`w3`, into blocks `a0`-`a3`.
#[rustfmt::skip]
macro_rules! quad {
    ([$a0:literal, $a1:literal, $a2:literal, $a3:literal], $x:literal, [$w0:literal, $w1:literal, $w2:literal, $w3:literal]) => {
        concat!(
            "smmla v", $a0, ".4s, v", $x, ".16b, v", $w0, ".16b\n",
            "smmla v", $a1, ".4s, v", $x, ".16b, v", $w1, ".16b\n",
            "smmla v", $a2, ".4s, v", $x, ".16b, v", $w2, ".16b\n",
            "smmla v", $a3, ".4s, v", $x, ".16b, v", $w3, ".16b\n",
        )
    };
}

/// `chunks` whole steps and with `half` a half step on the row pairs
/// `(blocks, low register, high register)`: the low depths' row pairs
/// loaded as `$lo`, the high depths' as `$hi`.
macro_rules! tail_asm {
    ($x:expr, $w:expr, $chunks:expr, $half:expr, $lo:literal, $hi:literal, [$(($a:tt, $xl:literal, $xh:literal)),+]; $($regs:tt)*) => {
        core::arch::asm!(
            "cbz {chunks}, 5f",
            "2:",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}], #64",
            "ld1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{w}], #64",
            // A register post-index: an immediate one must equal the
            // bytes loaded, and fewer than 4 row pairs load less than 64.
            concat!("ld1 {{", $lo, "}}, [{x}], {step}"),
            concat!("ld1 {{", $hi, "}}, [{x}], {step}"),
            $(quad!($a, $xl, [0, 1, 2, 3]),)+
            $(quad!($a, $xh, [4, 5, 6, 7]),)+
            "subs {chunks}, {chunks}, #1",
            "b.ne 2b",
            "5:",
            "cbz {half}, 6f",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}]",
            concat!("ld1 {{", $lo, "}}, [{x}]"),
            $(quad!($a, $xl, [0, 1, 2, 3]),)+
            "6:",
            w = inout(reg) $w => _,
            x = inout(reg) $x => _,
            chunks = inout(reg) $chunks => _,
            half = in(reg) usize::from($half),
            step = in(reg) 64usize,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            $($regs)*
            options(readonly, nostack),
        )
    };
}

/// `chunks` whole steps of 16 depth bytes, then with `half` a half step,
/// on the first `rp` row pairs (1 to 4) of a tile's panel `x` and a paired
/// weight block `w`: `blocks[p][j]` is the 2 x 2 block of row pair `p` and
/// channel pair `j` (blocks past `rp` are left as they are).
///
/// # Safety
/// The CPU must have i8mm; `1 <= rp <= 4`; `x` and `w` must each be valid
/// for reading `128 (chunks + half)` bytes.
#[inline(always)]
pub(super) unsafe fn mmla_tail_pairs(
    blocks: &mut [[int32x4_t; 4]; 4],
    rp: usize,
    x: *const i8,
    w: *const i8,
    chunks: usize,
    half: bool,
) {
    debug_assert!((1..=4).contains(&rp));
    let [b0, b1, b2, b3] = blocks;
    // SAFETY: reads at most 128 (chunks + half) bytes at each of x and w
    // (the caller's guarantee); smmla needs i8mm, which every caller
    // (`gemm_mmla`) enables. No stack, no writes to memory.
    unsafe {
        match rp {
            1 => tail_asm!(
                x, w, chunks, half, "v8.16b", "v9.16b",
                [([16, 17, 18, 19], 8, 9)];
                out("v8") _, out("v9") _,
                inout("v16") b0[0], inout("v17") b0[1], inout("v18") b0[2], inout("v19") b0[3],
            ),
            2 => tail_asm!(
                x, w, chunks, half, "v8.16b, v9.16b", "v10.16b, v11.16b",
                [([16, 17, 18, 19], 8, 10), ([20, 21, 22, 23], 9, 11)];
                out("v8") _, out("v9") _, out("v10") _, out("v11") _,
                inout("v16") b0[0], inout("v17") b0[1], inout("v18") b0[2], inout("v19") b0[3],
                inout("v20") b1[0], inout("v21") b1[1], inout("v22") b1[2], inout("v23") b1[3],
            ),
            3 => tail_asm!(
                x, w, chunks, half, "v8.16b, v9.16b, v10.16b", "v11.16b, v12.16b, v13.16b",
                [([16, 17, 18, 19], 8, 11), ([20, 21, 22, 23], 9, 12), ([24, 25, 26, 27], 10, 13)];
                out("v8") _, out("v9") _, out("v10") _, out("v11") _,
                out("v12") _, out("v13") _,
                inout("v16") b0[0], inout("v17") b0[1], inout("v18") b0[2], inout("v19") b0[3],
                inout("v20") b1[0], inout("v21") b1[1], inout("v22") b1[2], inout("v23") b1[3],
                inout("v24") b2[0], inout("v25") b2[1], inout("v26") b2[2], inout("v27") b2[3],
            ),
            _ => tail_asm!(
                x, w, chunks, half,
                "v8.16b, v9.16b, v10.16b, v11.16b", "v12.16b, v13.16b, v14.16b, v15.16b",
                [
                    ([16, 17, 18, 19], 8, 12),
                    ([20, 21, 22, 23], 9, 13),
                    ([24, 25, 26, 27], 10, 14),
                    ([28, 29, 30, 31], 11, 15)
                ];
                out("v8") _, out("v9") _, out("v10") _, out("v11") _,
                out("v12") _, out("v13") _, out("v14") _, out("v15") _,
                inout("v16") b0[0], inout("v17") b0[1], inout("v18") b0[2], inout("v19") b0[3],
                inout("v20") b1[0], inout("v21") b1[1], inout("v22") b1[2], inout("v23") b1[3],
                inout("v24") b2[0], inout("v25") b2[1], inout("v26") b2[2], inout("v27") b2[3],
                inout("v28") b3[0], inout("v29") b3[1], inout("v30") b3[2], inout("v31") b3[3],
            ),
        }
    }
}
