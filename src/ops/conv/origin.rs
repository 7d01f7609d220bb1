//! Where a convolution's output slice starts: at row 0 (the whole output,
//! what `run_rows` passes) or at a band's first row (`run_band`). A type,
//! not a number, so that the whole-output loops are compiled with a
//! constant 0 and run exactly the instructions they ran before bands
//! existed; the band's loops subtract its first row.

/// The output row at the start of an output slice.
pub(crate) trait FirstRow: Copy {
    /// The row (0 for the whole output).
    fn row(self) -> usize;
}

/// The slice is the whole output.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Whole;

impl FirstRow for Whole {
    #[inline(always)]
    fn row(self) -> usize {
        0
    }
}

/// The slice holds the output's rows from this one on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BandFrom(pub usize);

impl FirstRow for BandFrom {
    #[inline(always)]
    fn row(self) -> usize {
        self.0
    }
}
