//! Region markers for the instruction-count profile.
//!
//! `cargo xtask run` runs this binary under `qemu-aarch64` with the counting
//! plugin in `tools/qemu-insn/`. The plugin attributes every executed guest
//! instruction to the current *region*, and [`region`] switches it: the
//! runner calls `region(op_id)` before an op and `region(OUTSIDE)` after
//! it, so each op's instructions are counted exactly, in one run, without
//! repeating anything (no R vs 2R differencing). Region ids are the op ids
//! of the runner's JSON; 0 ([`OUTSIDE`]) is loading, set-up and I/O.
//!
//! The marker is the single instruction `movz xzr, #(0xA000 | id)`. It
//! writes the zero register, so on hardware it does nothing but take an
//! issue slot, and compilers never emit it, so the plugin cannot mistake
//! ordinary code for a marker. On other architectures [`region`] compiles to
//! nothing.

/// The region of everything outside the ops: loading, set-up, I/O.
pub const OUTSIDE: u8 = 0;

/// Makes `id` the current instruction-count region (see the module doc).
///
/// Inlined, a constant `id` leaves exactly one instruction; a run-time `id`
/// goes through a jump table of 256 markers (a few instructions more, which
/// the plugin counts like any others). The marker is an ordinary `asm!`
/// block that may touch memory, so the compiler does not move the op's
/// loads and stores across it: the region boundary is where the call is.
#[inline(always)]
pub fn region(id: u8) {
    #[cfg(target_arch = "aarch64")]
    {
        // One arm per id: the immediate of `movz` must be a constant.
        macro_rules! row {
            ($hi:literal, $lo:expr) => {
                match $lo {
                    0 => marker!($hi, 0),
                    1 => marker!($hi, 1),
                    2 => marker!($hi, 2),
                    3 => marker!($hi, 3),
                    4 => marker!($hi, 4),
                    5 => marker!($hi, 5),
                    6 => marker!($hi, 6),
                    7 => marker!($hi, 7),
                    8 => marker!($hi, 8),
                    9 => marker!($hi, 9),
                    10 => marker!($hi, 10),
                    11 => marker!($hi, 11),
                    12 => marker!($hi, 12),
                    13 => marker!($hi, 13),
                    14 => marker!($hi, 14),
                    _ => marker!($hi, 15),
                }
            };
        }
        macro_rules! marker {
            ($hi:literal, $lo:literal) => {
                // SAFETY: `movz xzr, #imm` writes only the zero register: no
                // register, flag, stack or memory state changes. Memory is
                // deliberately not declared untouched (no `nomem`), so the
                // compiler keeps memory accesses on their side of it.
                unsafe {
                    core::arch::asm!(
                        "movz xzr, #{imm}",
                        imm = const 0xA000 | ($hi << 4) | $lo,
                        options(nostack, preserves_flags),
                    )
                }
            };
        }
        let lo = id & 0xF;
        match id >> 4 {
            0 => row!(0, lo),
            1 => row!(1, lo),
            2 => row!(2, lo),
            3 => row!(3, lo),
            4 => row!(4, lo),
            5 => row!(5, lo),
            6 => row!(6, lo),
            7 => row!(7, lo),
            8 => row!(8, lo),
            9 => row!(9, lo),
            10 => row!(10, lo),
            11 => row!(11, lo),
            12 => row!(12, lo),
            13 => row!(13, lo),
            14 => row!(14, lo),
            _ => row!(15, lo),
        }
    }
    #[cfg(not(target_arch = "aarch64"))]
    let _ = id;
}
