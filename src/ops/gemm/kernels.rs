//! What other op families may use of the GEMM, and nothing else: the packed
//! weight layout's block sizes, the NEON packing and kernels, and the view
//! and tile they run on. The batch matrix product (`ops/batch_matmul/`)
//! packs its right-hand side at run time into this layout and runs these
//! kernels on it, so that both ops share one set of loops and output stages.
//!
//! The GEMM's files stay private to the family; this module is the one door
//! into them. It only re-exports: nothing inside `gemm/` imports it.

pub(crate) use super::pack::{KC, NR};

/// The NEON side: packing, the three kernel paths, and the view and tile
/// they take.
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon {
    pub(crate) use crate::ops::gemm::neon::pack::{block_sums, pack_columns, pack_rows};
    pub(crate) use crate::ops::gemm::neon::source::{
        DotLayout, PairLayout, PanelLayout, PanelRows,
    };
    pub(crate) use crate::ops::gemm::neon::{dot, mmla, widening};
    pub(crate) use crate::ops::gemm::params::{GemmView, Tile};
}
