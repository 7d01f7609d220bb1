//! The kernels a step takes from its backend: the gate products, the
//! 16-bit nonlinearities, the gate requantization, the cell update and the
//! hidden state. The scalar ones (`scalar.rs`, `params.rs`) are the
//! reference; the NEON ones (`neon.rs`) equal them bit for bit.

use super::params::{self, LayerNorm, LayerNormKernel, LstmParams, MatVec};
use super::scalar;
use crate::backend::{unavailable, Backend};
use crate::error::Result;
use crate::quant::Rounding;

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use super::neon;

/// [`LstmParams::update_cell`]'s signature: the parameters, then the cell
/// state, input gate, forget gate (overwritten) and cell gate.
type UpdateCell = fn(&LstmParams, &mut [i16], &[i16], &mut [i16], &[i16]);

/// The backend's kernels of a step: the gate products and the 16-bit
/// nonlinearities, the requantization into the gates, the cell update and
/// the hidden state, the layer normalization (peephole and the
/// projection's output stage are the shared scalar code of `params.rs`).
#[derive(Clone, Copy)]
pub(crate) struct Kernels {
    /// Raw int32 products (`scalar::mat_vec`'s contract).
    pub(crate) mat_vec: fn(&MatVec, &[i8], &mut [i32]),
    /// Q3.12 to Q0.15 logistic in place.
    pub(crate) sigmoid: fn(&mut [i16]),
    /// tanh in place at the given integer bits, Q0.15 out.
    pub(crate) tanh: fn(&mut [i16], u32),
    /// [`MatVec::accumulate_i16`]'s contract.
    pub(crate) accumulate: fn(&MatVec, &[i32], &mut [i16], Rounding),
    /// [`LstmParams::update_cell`]'s contract.
    pub(crate) update_cell: UpdateCell,
    /// [`LstmParams::hidden`]'s contract.
    pub(crate) hidden: fn(&LstmParams, &[i16], &[i16], &mut [i8]),
    /// [`LayerNorm::apply`]'s contract.
    pub(crate) layer_norm: LayerNormKernel,
}

impl Kernels {
    /// `backend`'s kernels, or an error if it is not available here.
    pub(crate) fn for_backend(backend: Backend) -> Result<Kernels> {
        match backend {
            Backend::Scalar => Ok(Kernels {
                mat_vec: scalar::mat_vec,
                sigmoid: params::sigmoid_in_place,
                tanh: params::tanh_in_place,
                accumulate: MatVec::accumulate_i16,
                update_cell: LstmParams::update_cell,
                hidden: LstmParams::hidden,
                layer_norm: LayerNorm::apply,
            }),
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => Ok(Kernels {
                mat_vec: neon::mat_vec,
                sigmoid: neon::sigmoid_in_place,
                tanh: neon::tanh_in_place,
                accumulate: neon::accumulate_i16,
                update_cell: neon::update_cell,
                hidden: neon::hidden,
                layer_norm: neon::layer_norm,
            }),
            #[allow(unreachable_patterns)]
            b => Err(unavailable(b)),
        }
    }
}
