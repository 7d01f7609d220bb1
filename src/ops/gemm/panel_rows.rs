//! [`Gemm::run_panel_rows`]: the NEON entry point whose input rows a
//! source builds straight into the kernel's panel (a convolution's small
//! windows, `conv/patch_rows.rs`), apart from the matrix entry points.

use super::params::Tile;
use super::{neon, Gemm, GemmPath, OP};
use crate::backend::{Backend, CpuFeatures};
use crate::error::{Error, Result};

impl Gemm {
    /// With `backend` NEON, all channels of `m` input rows that `source` builds straight into
    /// the panel of the `sdot` or `smmla` kernel (a convolution's windows,
    /// read from its image), into `output` with rows `output_stride` apart:
    /// the bytes [`run_tile`](Self::run_tile) gives for the same rows as a
    /// matrix. `Ok(false)`, with nothing computed, for another backend, when this GEMM's NEON path
    /// has no panel (the widening one, on a CPU without dotprod) or its
    /// depth is past the panel's: the caller then passes the rows as a
    /// matrix. Errors as `run_tile`'s for the output.
    pub(crate) fn run_panel_rows<S: neon::source::PanelRows>(
        &self,
        backend: Backend,
        source: &S,
        m: usize,
        output: &mut [i8],
        output_stride: usize,
    ) -> Result<bool> {
        let (n, k) = (self.params.n, self.params.k);
        if backend != Backend::Neon || self.params.k_padded > neon::dot::PANEL_DEPTH {
            return Ok(false);
        }
        let rows = m.checked_mul(k).ok_or(Error::OutOfDomain {
            op: OP,
            what: "rows",
            value: m as f64,
            requirement: "rows times depth within usize",
        })?;
        let tile = Tile::checked(OP, (n, k), rows, output.len(), output_stride, 0..m, 0..n)?;
        if m == 0 {
            return Ok(true);
        }
        let cpu = CpuFeatures::detect();
        let view = self.params.view();
        match self.path {
            // SAFETY: the CPU has i8mm and dotprod (checked here); the
            // tile was checked above, the source holds its m rows (the
            // caller's promise, `PanelRows`) and the depth fits the panel.
            GemmPath::Mmla if cpu.i8mm && cpu.dotprod => unsafe {
                neon::mmla::gemm_mmla_panel_rows::<S>(&view, source, output, &tile)
            },
            // SAFETY: as above, with dotprod.
            GemmPath::Dot if cpu.dotprod => unsafe {
                neon::dot::gemm_dot_panel_rows::<S>(&view, source, output, &tile)
            },
            _ => return Ok(false),
        }
        Ok(true)
    }
}
