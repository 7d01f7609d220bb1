//! The last instructions of the `sdot` kernels' asm output stage: the
//! requantized values, already narrowed to 16 bits with saturation, plus
//! the output zero point, narrowed to bytes and clamped ([`Narrow`]).
//!
//! In general that is the 16-bit saturating add of the zero point, the
//! narrow to bytes and the activation clamp (`smax`, `smin`). With an
//! output zero point of -128 and a lower bound of -128 (RELU and RELU6
//! outputs quantized from 0 upward), `sat8(sat16(s - 128))` equals
//! `clamp(s, 0, 255) - 128` for every 16-bit `s`: one unsigned saturating
//! narrow (`sqxtun`) then flipping the top bit (`eor` 0x80), 3
//! instructions per 16 bytes where the general sequence spends 6. An upper
//! bound below 127 is then an unsigned `umin` by `act_max + 128` before the
//! flip; a bound of 127 clamps nothing.

/// The constants of a block's run: pointers to its 16 channels' Q0.31
/// multipliers and non-positive right shifts (`srshl` amounts), the output
/// zero point and activation clamp.
pub(super) struct RunStage {
    pub(super) multiplier: *const i32,
    pub(super) neg_right_shift: *const i32,
    pub(super) zero_point: i16,
    pub(super) act_min: i8,
    pub(super) act_max: i8,
}

/// Which sequence a block's stage ends with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Narrow {
    /// `sqadd` the zero point (v12), `sqxtn`, `smax` v13, `smin` v14.
    General,
    /// Zero point and lower bound -128, upper bound 127: `sqxtun`, `eor`
    /// v13 (0x80 bytes).
    Z128,
    /// Zero point and lower bound -128, upper bound below 127: `sqxtun`,
    /// `umin` v14 (`act_max + 128` bytes), `eor` v13.
    Z128Upper,
}

impl RunStage {
    /// The sequence this stage ends with.
    pub(super) fn narrow(&self) -> Narrow {
        if self.zero_point != -128 || self.act_min != -128 {
            Narrow::General
        } else if self.act_max == 127 {
            Narrow::Z128
        } else {
            Narrow::Z128Upper
        }
    }

    /// The bytes v13 and v14 hold (each `dup` from the low byte of a
    /// general register): the clamp's bounds, or 0x80 and the unsigned
    /// upper bound.
    pub(super) fn clamp_bytes(&self) -> (i32, i32) {
        match self.narrow() {
            Narrow::General => (self.act_min as i32, self.act_max as i32),
            _ => (0x80, self.act_max as i32 + 128),
        }
    }
}

/// The template lines of one [`Narrow`] (`general`, `z128`, `z128_upper`)
/// taking 16-bit values in `v$a` (8 lanes) and `v$b` (the next 8) to 16
/// bytes in `v$d`. Clobbers `v$a` and `v$b` in the general sequence.
#[rustfmt::skip]
macro_rules! narrow16 {
    (general, $d:literal, $a:literal, $b:literal) => {
        concat!(
            "sqadd v", $a, ".8h, v", $a, ".8h, v12.8h\n",
            "sqadd v", $b, ".8h, v", $b, ".8h, v12.8h\n",
            "sqxtn v", $d, ".8b, v", $a, ".8h\n",
            "sqxtn2 v", $d, ".16b, v", $b, ".8h\n",
            "smax v", $d, ".16b, v", $d, ".16b, v13.16b\n",
            "smin v", $d, ".16b, v", $d, ".16b, v14.16b",
        )
    };
    (z128, $d:literal, $a:literal, $b:literal) => {
        concat!(
            "sqxtun v", $d, ".8b, v", $a, ".8h\n",
            "sqxtun2 v", $d, ".16b, v", $b, ".8h\n",
            "eor v", $d, ".16b, v", $d, ".16b, v13.16b",
        )
    };
    (z128_upper, $d:literal, $a:literal, $b:literal) => {
        concat!(
            "sqxtun v", $d, ".8b, v", $a, ".8h\n",
            "sqxtun2 v", $d, ".16b, v", $b, ".8h\n",
            "umin v", $d, ".16b, v", $d, ".16b, v14.16b\n",
            "eor v", $d, ".16b, v", $d, ".16b, v13.16b",
        )
    };
}

/// [`narrow16`] of the 8 lanes of `v$a` to 8 bytes in `v$d`.
#[rustfmt::skip]
macro_rules! narrow8 {
    (general, $d:literal, $a:literal) => {
        concat!(
            "sqadd v", $a, ".8h, v", $a, ".8h, v12.8h\n",
            "sqxtn v", $d, ".8b, v", $a, ".8h\n",
            "smax v", $d, ".8b, v", $d, ".8b, v13.8b\n",
            "smin v", $d, ".8b, v", $d, ".8b, v14.8b",
        )
    };
    (z128, $d:literal, $a:literal) => {
        concat!(
            "sqxtun v", $d, ".8b, v", $a, ".8h\n",
            "eor v", $d, ".8b, v", $d, ".8b, v13.8b",
        )
    };
    (z128_upper, $d:literal, $a:literal) => {
        concat!(
            "sqxtun v", $d, ".8b, v", $a, ".8h\n",
            "umin v", $d, ".8b, v", $d, ".8b, v14.8b\n",
            "eor v", $d, ".8b, v", $d, ".8b, v13.8b",
        )
    };
}

/// Runs `$body!(mode)` with the mode ident of `$narrow` (a [`Narrow`]).
macro_rules! by_narrow {
    ($narrow:expr, $body:ident) => {
        match $narrow {
            $crate::ops::conv::depthwise::narrow::Narrow::General => $body!(general),
            $crate::ops::conv::depthwise::narrow::Narrow::Z128 => $body!(z128),
            $crate::ops::conv::depthwise::narrow::Narrow::Z128Upper => $body!(z128_upper),
        }
    };
}

pub(super) use {by_narrow, narrow16, narrow8};
