//! What other op families may use of softmax, and nothing else: the
//! prepared forms of each method and the NEON passes that give a row's
//! maximum and sum of exps. The thresholded softmax (`ops/threshold/`)
//! decides which outputs pass a threshold from exactly these quantities,
//! so it must compute them as softmax does, bit for bit, rather than keep
//! a copy that could drift.
//!
//! The kernel files stay private to the family (a family's inner layout
//! is its own to change); this module is the one door into them, so a
//! reader sees at a glance what the rest of the crate depends on. It only
//! re-exports: it imports the kernel files and nothing imports it back
//! from inside `softmax/`.

pub(crate) use super::exact::SoftmaxExact;
pub(crate) use super::f32::SoftmaxF32;
pub(crate) use super::lut::SoftmaxLut;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) use super::lut_neon::{exact_row_max_sum, rows_max_sum};
pub(crate) use super::params::SoftmaxParams;
