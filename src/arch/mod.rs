//! Per-target loops and dispatch.
//!
//! The arithmetic lives in [`crate::fixedpoint`] and [`crate::ops`], written
//! once over [`Lane`](crate::fixedpoint::Lane). A backend only differs in how
//! it loads, widens, narrows and stores elements and how it walks rows:
//!
//! * [`Backend::Scalar`]: one `i32` lane at a time; always compiled; the reference
//!   every other backend is tested against.
//! * [`Backend::Neon`]: aarch64 Advanced SIMD (baseline there, so no run-time
//!   detection). Requesting it elsewhere is [`Error::BackendUnavailable`].
//!
//! Kernel names are the same in every backend module (`softmax`, `activation`,
//! `log_softmax`, `q31_*`) so the dispatch below is symmetric.

/// Calls `$f_i8`, `$f_u8` or `$f_i16` with the slices viewed as the concrete
/// element type behind `$t` (`QuantElem` is sealed to those three). Defined
/// before the backend modules so that every one of them can use it.
#[allow(unused_macros)]
macro_rules! dispatch_type {
    ($t:ty, $input:expr, $output:expr, $f_i8:expr, $f_u8:expr, $f_i16:expr) => {{
        use $crate::ops::cast_same;
        if let Some((i, o)) = cast_same::<$t, i8>($input, $output) {
            ($f_i8)(i, o)
        } else if let Some((i, o)) = cast_same::<$t, u8>($input, $output) {
            ($f_u8)(i, o)
        } else if let Some((i, o)) = cast_same::<$t, i16>($input, $output) {
            ($f_i16)(i, o)
        } else {
            unreachable!("QuantElem is sealed to i8, u8 and i16")
        }
    }};
}

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon_elementwise;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon_f32q;
#[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "alloc"))]
pub(crate) mod neon_gemm;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon_lut;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon_softmax_lut;
pub(crate) mod scalar;
pub(crate) mod scalar_gemm;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod tail;

use crate::error::{Error, Result};
use crate::ops::{ActivationParams, LogSoftmaxParams, QuantElem, SoftmaxParams};

/// The instruction set a kernel runs on. It never changes a result byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Portable scalar code, the reference.
    Scalar,
    /// aarch64 NEON (Advanced SIMD).
    Neon,
}

impl Backend {
    /// The fastest backend available on this target.
    pub fn best() -> Backend {
        if Backend::Neon.is_available() {
            Backend::Neon
        } else {
            Backend::Scalar
        }
    }

    /// Whether this backend's kernels exist in this build for this CPU.
    pub fn is_available(self) -> bool {
        match self {
            Backend::Scalar => true,
            Backend::Neon => NEON_KERNELS,
        }
    }

    /// Every backend available here, scalar first.
    pub fn available() -> impl Iterator<Item = Backend> {
        [Backend::Scalar, Backend::Neon]
            .into_iter()
            .filter(|b| b.is_available())
    }

    /// A short lowercase name (`"scalar"`, `"neon"`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Scalar => "scalar",
            Backend::Neon => "neon",
        }
    }

    /// Parses [`name`](Self::name) (case-insensitive).
    pub fn from_name(name: &str) -> Option<Backend> {
        [Backend::Scalar, Backend::Neon]
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(name))
    }
}

/// Optional aarch64 extensions later kernels can use (the int8 GEMM's `sdot`
/// and `smmla`). NEON itself is baseline on aarch64 and needs no detection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuFeatures {
    /// The dot-product instructions (`sdot`/`udot`, FEAT_DotProd).
    pub dotprod: bool,
    /// The int8 matrix multiply instructions (`smmla`, FEAT_I8MM).
    pub i8mm: bool,
}

impl CpuFeatures {
    /// The extensions of the CPU this runs on: detected at run time with the
    /// `std` feature (from the OS's hardware capabilities), otherwise what the
    /// build targets at compile time (`-C target-feature=+dotprod,+i8mm`).
    /// Always none off aarch64.
    pub fn detect() -> CpuFeatures {
        #[cfg(all(target_arch = "aarch64", feature = "std"))]
        {
            CpuFeatures {
                dotprod: std::arch::is_aarch64_feature_detected!("dotprod"),
                i8mm: std::arch::is_aarch64_feature_detected!("i8mm"),
            }
        }
        #[cfg(not(all(target_arch = "aarch64", feature = "std")))]
        {
            Self::compiled()
        }
    }

    /// The extensions enabled at compile time for this build.
    pub const fn compiled() -> CpuFeatures {
        CpuFeatures {
            dotprod: cfg!(all(target_arch = "aarch64", target_feature = "dotprod")),
            i8mm: cfg!(all(target_arch = "aarch64", target_feature = "i8mm")),
        }
    }
}

/// NEON kernels are compiled in: aarch64 has NEON as a baseline feature.
const NEON_KERNELS: bool = cfg!(all(target_arch = "aarch64", target_feature = "neon"));

fn unavailable(backend: Backend) -> Error {
    Error::BackendUnavailable {
        backend: backend.name(),
    }
}

/// Defines a dispatch function per kernel: the same kernel name in every
/// backend module, so the match is the same everywhere.
macro_rules! dispatch {
    ($(
        $name:ident [$($generics:tt)*] ($($arg:ident: $ty:ty),*) => [$($turbofish:tt)*];
    )*) => {$(
        pub(crate) fn $name<$($generics)*>(backend: Backend, $($arg: $ty),*) -> Result<()> {
            match backend {
                Backend::Scalar => {
                    scalar::$name::<$($turbofish)*>($($arg),*);
                    Ok(())
                }
                #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
                Backend::Neon => {
                    neon::$name::<$($turbofish)*>($($arg),*);
                    Ok(())
                }
                #[allow(unreachable_patterns)]
                b => Err(unavailable(b)),
            }
        }
    )*};
}

dispatch! {
    softmax[T: QuantElem](p: &SoftmaxParams, input: &[T], output: &mut [T], row_len: usize) => [T];
    log_softmax[T: QuantElem](p: &LogSoftmaxParams, input: &[T], output: &mut [T], row_len: usize) => [T];
    activation[T: QuantElem](p: &ActivationParams, input: &[T], output: &mut [T]) => [T];
    q31_softmax[const I: u32](input: &[i32], output: &mut [i32], row_len: usize) => [I];
    q31_logistic[const I: u32](input: &[i32], output: &mut [i32]) => [I];
    q31_tanh[const I: u32, const I_PLUS_1: u32](input: &[i32], output: &mut [i32]) => [I, I_PLUS_1];
}
