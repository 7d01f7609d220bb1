//! The instruction sets kernels run on, and the optional CPU extensions.
//!
//! * [`Backend::Scalar`]: one `i32` lane at a time; always compiled; the
//!   reference every other backend is tested against.
//! * [`Backend::Neon`]: aarch64 Advanced SIMD (baseline there, so no run-time
//!   detection). Requesting it elsewhere is [`Error::BackendUnavailable`].
//!
//! A leaf: it imports only [`crate::error`].

use core::fmt;
use core::str::FromStr;

use crate::error::Error;

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

    /// Parses [`name`](Self::name) (case-insensitive), as
    /// [`FromStr`](core::str::FromStr) does.
    pub fn from_name(name: &str) -> Option<Backend> {
        [Backend::Scalar, Backend::Neon]
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Backend {
    /// [`Backend::name`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = Error;

    /// `"scalar"` or `"neon"`, in any case ([`Error::UnknownName`] otherwise);
    /// the inverse of [`Display`](fmt::Display). Whether the backend is
    /// available here is [`Backend::is_available`].
    fn from_str(s: &str) -> Result<Backend, Error> {
        Backend::from_name(s).ok_or(Error::UnknownName {
            what: "backend",
            accepted: "scalar, neon",
        })
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

/// The error for a backend that is not compiled into this build.
pub(crate) fn unavailable(backend: Backend) -> Error {
    Error::BackendUnavailable {
        backend: backend.name(),
    }
}
