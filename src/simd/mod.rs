//! Element plumbing under every kernel: the one tail helper ([`tail`]), lane
//! masking, and on aarch64 the NEON loads, widenings, narrowings and stores
//! ([`neon`]) and the byte-table lookups ([`lookup`]).
//!
//! A leaf: it imports only [`crate::fixedpoint`] (the `Lane` trait).

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod lookup;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon;
// Kernels with their own block loops (and the 16-element block size) are
// NEON-only; the block walkers serve every backend.
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
pub(crate) mod tail;

/// A vector of `ELEMS` elements that loads from and stores to memory: what
/// [`keep_first`] needs to reach single lanes. Implemented for the scalar
/// `f32` lane and, on aarch64, `int32x4_t` and `float32x4_t`.
pub(crate) trait Vector: Copy {
    /// The element type.
    type Elem: Copy;
    /// Its zero.
    const ZERO: Self::Elem;
    /// Elements per vector.
    const ELEMS: usize;
    /// Loads `ELEMS` elements.
    ///
    /// # Safety
    /// `p` must be valid for reading `ELEMS` elements.
    unsafe fn load_elems(p: *const Self::Elem) -> Self;
    /// Stores `ELEMS` elements.
    ///
    /// # Safety
    /// `p` must be valid for writing `ELEMS` elements.
    unsafe fn store_elems(self, p: *mut Self::Elem);
}

impl Vector for f32 {
    type Elem = f32;
    const ZERO: f32 = 0.0;
    const ELEMS: usize = 1;
    #[inline(always)]
    unsafe fn load_elems(p: *const f32) -> f32 {
        // SAFETY: the caller guarantees one readable f32 at p.
        unsafe { p.read() }
    }
    #[inline(always)]
    unsafe fn store_elems(self, p: *mut f32) {
        // SAFETY: the caller guarantees one writable f32 at p.
        unsafe { p.write(self) }
    }
}

/// Sets the lanes of a 16-element block at index `>= valid` to zero: the
/// padding of a row's last block must not count in a sum.
#[inline(always)]
pub(crate) fn keep_first<V: Vector, const N: usize>(mut v: [V; N], valid: usize) -> [V; N] {
    const LANES: usize = 16;
    assert!(N * V::ELEMS == LANES);
    let mut buf = [V::ZERO; LANES];
    for (j, x) in v.iter().enumerate() {
        // SAFETY: j * ELEMS + ELEMS <= N * ELEMS = 16 = buf.len().
        unsafe { x.store_elems(buf.as_mut_ptr().add(j * V::ELEMS)) };
    }
    for x in buf.iter_mut().skip(valid) {
        *x = V::ZERO;
    }
    for (j, x) in v.iter_mut().enumerate() {
        // SAFETY: as above.
        *x = unsafe { V::load_elems(buf.as_ptr().add(j * V::ELEMS)) };
    }
    v
}
