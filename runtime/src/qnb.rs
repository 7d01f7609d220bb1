//! The `.qnb` model file: named, quantized tensors plus integer metadata, laid out
//! so that a loaded file is used in place (zero-copy `bytemuck` casts).
//!
//! [`QnbWriter`] builds a file; [`Qnb::parse`] validates one completely (nothing is
//! trusted: a truncated or corrupted file gives an [`Error::ModelFile`] naming the
//! problem and the byte offset of the offending field) and then hands out typed,
//! shape-checked slices that point into the file's bytes.
//!
//! # Byte layout (version 1)
//!
//! All integers and floats are little-endian. `f32` is IEEE 754 binary32.
//!
//! **Header**, 64 bytes at offset 0:
//!
//! | offset | type      | field                                                         |
//! |-------:|-----------|---------------------------------------------------------------|
//! |      0 | `[u8; 8]` | magic, `b"QNEONQNB"`                                          |
//! |      8 | `u32`     | version, `1`                                                  |
//! |     12 | `u32`     | header length, `64`                                           |
//! |     16 | `u64`     | file length in bytes (the whole file, header included)        |
//! |     24 | `u32`     | `meta_count`, number of metadata entries                      |
//! |     28 | `u32`     | `tensor_count`, number of tensor entries                      |
//! |     32 | `u64`     | checksum: FNV-1a 64 of the whole file, these 8 bytes as zeros |
//! |     40 | `[u8;24]` | reserved, zero                                                |
//!
//! **Metadata table** at offset 64: `meta_count` entries of 72 bytes:
//!
//! | offset | type       | field                       |
//! |-------:|------------|-----------------------------|
//! |      0 | `[u8; 64]` | key (a *name*, see below)   |
//! |     64 | `i64`      | value                       |
//!
//! **Tensor table** right after it, at `64 + 72 * meta_count`: `tensor_count` entries
//! of 160 bytes:
//!
//! | offset | type       | field                                                            |
//! |-------:|------------|------------------------------------------------------------------|
//! |      0 | `[u8; 64]` | tensor name (a *name*)                                           |
//! |     64 | `u32`      | dtype code: 0 `i8`, 1 `u8`, 2 `i16`, 3 `i32`, 4 `f32`            |
//! |     68 | `u32`      | rank, 0 to 6 (rank 0 is a scalar: one element)                   |
//! |     72 | `[u64; 6]` | dimensions, outermost first; entries past `rank` are zero        |
//! |    120 | `u32`      | quantization kind: 0 none, 1 per-tensor, 2 per-channel on axis 0 |
//! |    124 | `i32`      | zero point (per-tensor; else 0)                                  |
//! |    128 | `f32`      | scale (per-tensor; else all bits 0)                              |
//! |    132 | `u32`      | reserved, zero                                                   |
//! |    136 | `u64`      | offset of the per-channel scales (per-channel; else 0)           |
//! |    144 | `u64`      | offset of the data                                               |
//! |    152 | `u64`      | length of the data in bytes                                      |
//!
//! A *name* is 1 to 63 bytes of UTF-8 followed by a NUL, the rest of the 64-byte field
//! zero. Tensor names are unique, metadata keys are unique.
//!
//! **Data regions** follow the tables. Each tensor's data is `data length` bytes
//! (= product of the dimensions × the dtype's size) of row-major elements; a
//! per-channel tensor also has a region of `dims[0]` `f32` scales. Every region starts
//! at a multiple of [`ALIGN`] (64) bytes, lies at or after the end of the tensor table
//! and within the file, and no two regions overlap. Bytes between regions (the writer
//! puts zeros there) belong to no tensor. As the file buffer itself must start at an
//! [`ALIGN`]-aligned address ([`AlignedBytes`] provides one), every tensor can be cast
//! in place to its element type.
//!
//! **Quantization.** Per-tensor: `real = scale * (q - zero_point)`, the scale finite
//! and > 0, the zero point within the dtype's range. Per-channel: symmetric (zero
//! point 0), one finite, > 0 scale per index of axis 0, rank at least 1. `f32`
//! tensors carry none.
//!
//! **Checksum.** FNV-1a 64 over every byte of the file in order, with the 8 checksum
//! bytes (offsets 32..40) read as zeros: start from `0xcbf2_9ce4_8422_2325`; for each
//! byte `b`: `h = (h ^ b) * 0x0000_0100_0000_01b3 (mod 2^64)`. Each step is a
//! bijection of `h`, so changing any one byte always changes the result: every
//! single-bit flip is detected.
//!
//! Validation never panics and allocates at most in proportion to the file length.

use std::string::String;
use std::vec::Vec;

use crate::error::{Error, Result};

/// The first 8 bytes of every `.qnb` file.
pub const MAGIC: [u8; 8] = *b"QNEONQNB";
/// The format version this code reads and writes.
pub const VERSION: u32 = 1;
/// Alignment in bytes of every data region and of the file buffer.
pub const ALIGN: usize = 64;
/// Header length in bytes.
pub const HEADER_LEN: usize = 64;
/// Metadata entry length in bytes.
pub const META_ENTRY_LEN: usize = 72;
/// Tensor entry length in bytes.
pub const TENSOR_ENTRY_LEN: usize = 160;
/// Length of a name field (a name is at most `NAME_LEN - 1` bytes plus its NUL).
pub const NAME_LEN: usize = 64;
/// Largest tensor rank.
pub const MAX_RANK: usize = 6;
/// Byte offset of the checksum in the header.
pub const CHECKSUM_OFFSET: usize = 32;

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `bytes`, continuing from `h` (start with the offset basis).
fn fnv1a64_update(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    }
    h
}

/// FNV-1a 64 of `bytes` (also the runner's output checksum).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_update(FNV_OFFSET_BASIS, bytes)
}

/// The file checksum: FNV-1a 64 of `bytes` with bytes 32..40 read as zeros.
/// `bytes` must be at least the 64-byte header long (else `None`).
pub fn checksum(bytes: &[u8]) -> Option<u64> {
    if bytes.len() < HEADER_LEN {
        return None;
    }
    let h = fnv1a64_update(FNV_OFFSET_BASIS, &bytes[..CHECKSUM_OFFSET]);
    let h = fnv1a64_update(h, &[0; 8]);
    Some(fnv1a64_update(h, &bytes[CHECKSUM_OFFSET + 8..]))
}

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    /// `i8`, code 0.
    I8,
    /// `u8`, code 1.
    U8,
    /// `i16`, code 2.
    I16,
    /// `i32`, code 3.
    I32,
    /// `f32`, code 4.
    F32,
}

impl DType {
    /// The code stored in the file.
    pub const fn code(self) -> u32 {
        match self {
            DType::I8 => 0,
            DType::U8 => 1,
            DType::I16 => 2,
            DType::I32 => 3,
            DType::F32 => 4,
        }
    }

    /// The dtype of a code, if valid.
    pub const fn from_code(code: u32) -> Option<DType> {
        match code {
            0 => Some(DType::I8),
            1 => Some(DType::U8),
            2 => Some(DType::I16),
            3 => Some(DType::I32),
            4 => Some(DType::F32),
            _ => None,
        }
    }

    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 => 1,
            DType::I16 => 2,
            DType::I32 | DType::F32 => 4,
        }
    }

    /// The Rust name of the type.
    pub const fn name(self) -> &'static str {
        match self {
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::F32 => "f32",
        }
    }

    /// The range a zero point must lie in (`None` for `f32`, which is not quantized).
    pub const fn zero_point_range(self) -> Option<(i32, i32)> {
        match self {
            DType::I8 => Some((i8::MIN as i32, i8::MAX as i32)),
            DType::U8 => Some((0, u8::MAX as i32)),
            DType::I16 => Some((i16::MIN as i32, i16::MAX as i32)),
            DType::I32 => Some((i32::MIN, i32::MAX)),
            DType::F32 => None,
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i8 {}
    impl Sealed for u8 {}
    impl Sealed for i16 {}
    impl Sealed for i32 {}
    impl Sealed for f32 {}
}

/// Implemented for `i8`, `u8`, `i16`, `i32` and `f32` (sealed); maps a Rust type to its
/// [`DType`].
pub trait Element: bytemuck::Pod + sealed::Sealed {
    /// The dtype of `Self`.
    const DTYPE: DType;
}

impl Element for i8 {
    const DTYPE: DType = DType::I8;
}
impl Element for u8 {
    const DTYPE: DType = DType::U8;
}
impl Element for i16 {
    const DTYPE: DType = DType::I16;
}
impl Element for i32 {
    const DTYPE: DType = DType::I32;
}
impl Element for f32 {
    const DTYPE: DType = DType::F32;
}

/// Quantization of a tensor: how its integers map to real numbers.
#[derive(Clone, Debug, PartialEq)]
pub enum Quant {
    /// Not quantized (always for `f32`).
    None,
    /// `real = scale * (q - zero_point)`.
    PerTensor {
        /// Finite and > 0.
        scale: f32,
        /// Within the dtype's range.
        zero_point: i32,
    },
    /// Symmetric per-channel along axis 0 (zero point 0), one scale per row.
    PerChannel {
        /// `shape[0]` scales, each finite and > 0.
        scales: Vec<f32>,
    },
}

const QUANT_NONE: u32 = 0;
const QUANT_PER_TENSOR: u32 = 1;
const QUANT_PER_CHANNEL: u32 = 2;

fn scale_ok(s: f32) -> bool {
    s.is_finite() && s > 0.0
}

/// Rounds `x` up to a multiple of [`ALIGN`].
const fn align_up(x: usize) -> usize {
    x.div_ceil(ALIGN) * ALIGN
}

// ---------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------

struct WTensor {
    name: String,
    dtype: DType,
    shape: Vec<usize>,
    quant: Quant,
    data: Vec<u8>,
}

/// Builds a `.qnb` file in memory. Every call validates its arguments, so
/// [`to_bytes`](Self::to_bytes) always produces a file [`Qnb::parse`] accepts.
#[derive(Default)]
pub struct QnbWriter {
    meta: Vec<(String, i64)>,
    tensors: Vec<WTensor>,
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::ModelWrite {
            problem: "empty name",
        });
    }
    if name.len() >= NAME_LEN {
        return Err(Error::ModelWrite {
            problem: "name longer than 63 bytes",
        });
    }
    if name.as_bytes().contains(&0) {
        return Err(Error::ModelWrite {
            problem: "name contains a NUL byte",
        });
    }
    Ok(())
}

impl QnbWriter {
    /// An empty file.
    pub fn new() -> QnbWriter {
        QnbWriter::default()
    }

    /// Integer metadata (model configuration: `"seq_len"`, `"hidden"`, ...). Keys unique.
    pub fn meta(&mut self, key: &str, value: i64) -> Result<()> {
        check_name(key)?;
        if self.meta.iter().any(|(k, _)| k == key) {
            return Err(Error::ModelWrite {
                problem: "duplicate metadata key",
            });
        }
        if self.meta.len() >= u32::MAX as usize {
            return Err(Error::ModelWrite {
                problem: "too many metadata entries",
            });
        }
        self.meta.push((String::from(key), value));
        Ok(())
    }

    /// Appends a tensor; checks name uniqueness, shape product == `data.len()`, quant
    /// params valid (see the module docs).
    pub fn tensor<T: Element>(
        &mut self,
        name: &str,
        shape: &[usize],
        quant: Quant,
        data: &[T],
    ) -> Result<()> {
        check_name(name)?;
        if self.tensors.iter().any(|t| t.name == name) {
            return Err(Error::ModelWrite {
                problem: "duplicate tensor name",
            });
        }
        if self.tensors.len() >= u32::MAX as usize {
            return Err(Error::ModelWrite {
                problem: "too many tensors",
            });
        }
        if shape.len() > MAX_RANK {
            return Err(Error::ModelWrite {
                problem: "rank above 6",
            });
        }
        let count = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or(Error::ModelWrite {
                problem: "shape product overflows",
            })?;
        if count != data.len() {
            return Err(Error::Kernel(qneon::Error::Length {
                op: "qnb writer",
                what: "tensor data",
                expected: count,
                got: data.len(),
            }));
        }
        let dtype = T::DTYPE;
        match &quant {
            Quant::None => {}
            Quant::PerTensor { scale, zero_point } => {
                let Some((min, max)) = dtype.zero_point_range() else {
                    return Err(Error::ModelWrite {
                        problem: "f32 tensors cannot be quantized",
                    });
                };
                if !scale_ok(*scale) {
                    return Err(Error::Kernel(qneon::Error::Scale {
                        what: "tensor scale",
                        value: f64::from(*scale),
                    }));
                }
                if !(min..=max).contains(zero_point) {
                    return Err(Error::Kernel(qneon::Error::ZeroPoint {
                        what: "tensor zero point",
                        value: *zero_point,
                        min,
                        max,
                    }));
                }
            }
            Quant::PerChannel { scales } => {
                if dtype == DType::F32 {
                    return Err(Error::ModelWrite {
                        problem: "f32 tensors cannot be quantized",
                    });
                }
                let Some(&rows) = shape.first() else {
                    return Err(Error::ModelWrite {
                        problem: "per-channel quantization needs rank >= 1",
                    });
                };
                if scales.len() != rows {
                    return Err(Error::Kernel(qneon::Error::Length {
                        op: "qnb writer",
                        what: "per-channel scales",
                        expected: rows,
                        got: scales.len(),
                    }));
                }
                if let Some(&bad) = scales.iter().find(|&&s| !scale_ok(s)) {
                    return Err(Error::Kernel(qneon::Error::Scale {
                        what: "per-channel scale",
                        value: f64::from(bad),
                    }));
                }
            }
        }
        self.tensors.push(WTensor {
            name: String::from(name),
            dtype,
            shape: Vec::from(shape),
            quant,
            data: Vec::from(bytemuck::cast_slice::<T, u8>(data)),
        });
        Ok(())
    }

    /// The file's bytes: header, tables, then each tensor's per-channel scales (if any)
    /// and data, each region at the next multiple of [`ALIGN`].
    pub fn to_bytes(&self) -> Vec<u8> {
        let tables_end =
            HEADER_LEN + META_ENTRY_LEN * self.meta.len() + TENSOR_ENTRY_LEN * self.tensors.len();
        // Place the regions first, so the table entries can name their offsets.
        let mut pos = tables_end;
        let mut places = Vec::with_capacity(self.tensors.len());
        for t in &self.tensors {
            let scales_off = if let Quant::PerChannel { scales } = &t.quant {
                let off = align_up(pos);
                pos = off + 4 * scales.len();
                off
            } else {
                0
            };
            let data_off = align_up(pos);
            pos = data_off + t.data.len();
            places.push((scales_off, data_off));
        }
        let file_len = pos;

        let mut out = Vec::with_capacity(file_len);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        out.extend_from_slice(&(file_len as u64).to_le_bytes());
        out.extend_from_slice(&(self.meta.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u32).to_le_bytes());
        out.extend_from_slice(&[0; 8]); // checksum, filled in last
        out.extend_from_slice(&[0; 24]);
        debug_assert_eq!(out.len(), HEADER_LEN);

        let put_name = |out: &mut Vec<u8>, name: &str| {
            let mut field = [0u8; NAME_LEN];
            field[..name.len()].copy_from_slice(name.as_bytes());
            out.extend_from_slice(&field);
        };
        for (key, value) in &self.meta {
            put_name(&mut out, key);
            out.extend_from_slice(&value.to_le_bytes());
        }
        for (t, &(scales_off, data_off)) in self.tensors.iter().zip(&places) {
            put_name(&mut out, &t.name);
            out.extend_from_slice(&t.dtype.code().to_le_bytes());
            out.extend_from_slice(&(t.shape.len() as u32).to_le_bytes());
            for i in 0..MAX_RANK {
                let d = t.shape.get(i).copied().unwrap_or(0);
                out.extend_from_slice(&(d as u64).to_le_bytes());
            }
            let (kind, zp, scale) = match &t.quant {
                Quant::None => (QUANT_NONE, 0, 0.0f32),
                Quant::PerTensor { scale, zero_point } => (QUANT_PER_TENSOR, *zero_point, *scale),
                Quant::PerChannel { .. } => (QUANT_PER_CHANNEL, 0, 0.0),
            };
            out.extend_from_slice(&kind.to_le_bytes());
            out.extend_from_slice(&zp.to_le_bytes());
            out.extend_from_slice(&scale.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&(scales_off as u64).to_le_bytes());
            out.extend_from_slice(&(data_off as u64).to_le_bytes());
            out.extend_from_slice(&(t.data.len() as u64).to_le_bytes());
        }
        debug_assert_eq!(out.len(), tables_end);

        for (t, &(scales_off, data_off)) in self.tensors.iter().zip(&places) {
            if let Quant::PerChannel { scales } = &t.quant {
                out.resize(scales_off, 0);
                for s in scales {
                    out.extend_from_slice(&s.to_le_bytes());
                }
            }
            out.resize(data_off, 0);
            out.extend_from_slice(&t.data);
        }
        debug_assert_eq!(out.len(), file_len);

        let sum = checksum(&out).unwrap_or(0);
        out[CHECKSUM_OFFSET..CHECKSUM_OFFSET + 8].copy_from_slice(&sum.to_le_bytes());
        out
    }
}

// ---------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------

/// One validated tensor entry.
#[derive(Clone, Debug)]
struct Entry<'a> {
    name: &'a str,
    dtype: DType,
    rank: usize,
    shape: [usize; MAX_RANK],
    quant: Quant,
    data: &'a [u8],
}

/// A parsed, fully validated file borrowing its bytes (zero-copy).
#[derive(Clone, Debug)]
pub struct Qnb<'a> {
    meta: Vec<(&'a str, i64)>,
    tensors: Vec<Entry<'a>>,
}

/// A tensor's elements (pointing into the file's bytes) and quantization.
#[derive(Clone, Debug)]
pub struct TensorRef<'a, T> {
    /// The elements, row-major.
    pub data: &'a [T],
    /// How they map to real numbers.
    pub quant: Quant,
}

fn file_err(problem: &'static str, offset: usize) -> Error {
    Error::ModelFile {
        problem,
        offset: offset as u64,
    }
}

/// Little-endian field readers over a buffer already checked to hold them.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn array<const N: usize>(&self, at: usize) -> Result<[u8; N]> {
        self.0
            .get(at..at + N)
            .and_then(|s| s.try_into().ok())
            .ok_or(file_err("truncated", at))
    }
    fn u32(&self, at: usize) -> Result<u32> {
        self.array(at).map(u32::from_le_bytes)
    }
    fn i32(&self, at: usize) -> Result<i32> {
        self.array(at).map(i32::from_le_bytes)
    }
    fn u64(&self, at: usize) -> Result<u64> {
        self.array(at).map(u64::from_le_bytes)
    }
    fn i64(&self, at: usize) -> Result<i64> {
        self.array(at).map(i64::from_le_bytes)
    }
    fn f32(&self, at: usize) -> Result<f32> {
        self.array(at).map(f32::from_le_bytes)
    }
    /// A `u64` file offset or length as a `usize` no larger than `limit`.
    fn offset(&self, at: usize, limit: usize, problem: &'static str) -> Result<usize> {
        usize::try_from(self.u64(at)?)
            .ok()
            .filter(|&v| v <= limit)
            .ok_or(file_err(problem, at))
    }
    /// The name field at `at`: 1..=63 bytes of UTF-8, a NUL, then zeros.
    fn name(&self, at: usize) -> Result<&'a str> {
        let field = self
            .0
            .get(at..at + NAME_LEN)
            .ok_or(file_err("truncated", at))?;
        let len = field
            .iter()
            .position(|&b| b == 0)
            .ok_or(file_err("name is not NUL-terminated", at))?;
        if len == 0 {
            return Err(file_err("empty name", at));
        }
        if field[len..].iter().any(|&b| b != 0) {
            return Err(file_err("nonzero bytes after the name's NUL", at));
        }
        core::str::from_utf8(&field[..len]).map_err(|_| file_err("name is not valid UTF-8", at))
    }
}

/// Fails if two names in `names` (with the offsets of their fields) are equal.
fn check_unique(names: &mut [(&str, usize)], problem: &'static str) -> Result<()> {
    names.sort_unstable();
    for w in names.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(file_err(problem, w[0].1.max(w[1].1)));
        }
    }
    Ok(())
}

impl<'a> Qnb<'a> {
    /// Validates everything: that `bytes` starts at an [`ALIGN`]-aligned address (so
    /// casts are zero-copy), magic, version, header and table sizes, the checksum of
    /// the whole file (so a flipped bit anywhere, also inside tensor data, is
    /// detected), metadata, and every tensor's name, dtype, shape, offsets (aligned,
    /// in bounds, non-overlapping), length and quant params (finite, > 0 scales, zero
    /// points in the dtype's range, per-channel scale count == `shape[0]`).
    pub fn parse(bytes: &'a [u8]) -> Result<Qnb<'a>> {
        if !(bytes.as_ptr() as usize).is_multiple_of(ALIGN) {
            return Err(file_err(
                "buffer does not start at a 64-byte aligned address (load it with AlignedBytes)",
                0,
            ));
        }
        if bytes.len() < HEADER_LEN {
            return Err(file_err(
                "truncated: shorter than the 64-byte header",
                bytes.len(),
            ));
        }
        let f = Fields(bytes);
        if f.array::<8>(0)? != MAGIC {
            return Err(file_err("bad magic (not a .qnb file)", 0));
        }
        if f.u32(8)? != VERSION {
            return Err(file_err("unsupported version", 8));
        }
        if f.u32(12)? != HEADER_LEN as u32 {
            return Err(file_err("header length is not 64", 12));
        }
        let file_len = f.u64(16)?;
        if file_len > bytes.len() as u64 {
            return Err(file_err(
                "truncated: shorter than the file length in the header",
                bytes.len(),
            ));
        }
        if file_len < bytes.len() as u64 {
            return Err(file_err("longer than the file length in the header", 16));
        }
        if checksum(bytes) != Some(f.u64(CHECKSUM_OFFSET)?) {
            return Err(file_err(
                "checksum mismatch (the file is corrupted)",
                CHECKSUM_OFFSET,
            ));
        }
        if bytes[40..HEADER_LEN].iter().any(|&b| b != 0) {
            return Err(file_err("reserved header bytes are not zero", 40));
        }

        // Table sizes: the counts are u32, so this cannot overflow u64; checking
        // against the length first bounds every allocation below by the file size.
        let meta_count = f.u32(24)? as u64;
        let tensor_count = f.u32(28)? as u64;
        let tables_end = HEADER_LEN as u64
            + META_ENTRY_LEN as u64 * meta_count
            + TENSOR_ENTRY_LEN as u64 * tensor_count;
        if tables_end > bytes.len() as u64 {
            return Err(file_err(
                "metadata and tensor tables extend past the end of the file",
                24,
            ));
        }
        let (meta_count, tensor_count, tables_end) = (
            meta_count as usize,
            tensor_count as usize,
            tables_end as usize,
        );
        let len = bytes.len();

        let mut meta = Vec::with_capacity(meta_count);
        let mut keys = Vec::with_capacity(meta_count);
        for i in 0..meta_count {
            let at = HEADER_LEN + META_ENTRY_LEN * i;
            let key = f.name(at)?;
            meta.push((key, f.i64(at + NAME_LEN)?));
            keys.push((key, at));
        }
        check_unique(&mut keys, "duplicate metadata key")?;

        let table = HEADER_LEN + META_ENTRY_LEN * meta_count;
        let mut tensors = Vec::with_capacity(tensor_count);
        let mut names = Vec::with_capacity(tensor_count);
        // (start, end, field offset) of every region, for the overlap check.
        let mut regions: Vec<(usize, usize, usize)> = Vec::with_capacity(2 * tensor_count);
        for i in 0..tensor_count {
            let at = table + TENSOR_ENTRY_LEN * i;
            let name = f.name(at)?;
            names.push((name, at));

            let dtype =
                DType::from_code(f.u32(at + 64)?).ok_or(file_err("unknown dtype code", at + 64))?;
            let rank = f.u32(at + 68)? as usize;
            if rank > MAX_RANK {
                return Err(file_err("rank above 6", at + 68));
            }
            let mut shape = [0usize; MAX_RANK];
            let mut count = 1usize;
            for (d, dim) in shape.iter_mut().enumerate() {
                let dat = at + 72 + 8 * d;
                let v = f.u64(dat)?;
                if d >= rank {
                    if v != 0 {
                        return Err(file_err("dimension past the rank is not zero", dat));
                    }
                    continue;
                }
                // Each dimension and the product are bounded by the file length
                // (zero-size dimensions aside), so nothing overflows.
                *dim = usize::try_from(v)
                    .ok()
                    .filter(|&v| v <= len)
                    .ok_or(file_err("dimension larger than the file", dat))?;
                count = count
                    .checked_mul(*dim)
                    .filter(|&c| c <= len)
                    .ok_or(file_err(
                        "shape has more elements than the file has bytes",
                        dat,
                    ))?;
            }

            let data_off = f.offset(at + 144, len, "data offset past the end of the file")?;
            let data_len = f.offset(at + 152, len, "data length larger than the file")?;
            if data_len != count * dtype.size() {
                return Err(file_err(
                    "data length does not match shape times element size",
                    at + 152,
                ));
            }
            let data = region(bytes, data_off, data_len, tables_end, at + 144)?;
            regions.push((data_off, data_off + data_len, at + 144));

            let kind = f.u32(at + 120)?;
            let zero_point = f.i32(at + 124)?;
            let scale = f.f32(at + 128)?;
            if f.u32(at + 132)? != 0 {
                return Err(file_err(
                    "reserved tensor entry field is not zero",
                    at + 132,
                ));
            }
            let scales_off = f.u64(at + 136)?;
            if !matches!(kind, QUANT_NONE | QUANT_PER_TENSOR | QUANT_PER_CHANNEL) {
                return Err(file_err("unknown quantization kind", at + 120));
            }
            if kind != QUANT_NONE && dtype == DType::F32 {
                return Err(file_err("f32 tensor has quantization", at + 120));
            }
            if kind != QUANT_PER_TENSOR {
                if zero_point != 0 {
                    return Err(file_err(
                        "zero point is not 0 (only per-tensor quantization has one)",
                        at + 124,
                    ));
                }
                if scale.to_bits() != 0 {
                    return Err(file_err(
                        "scale field is not 0 (only per-tensor quantization has one)",
                        at + 128,
                    ));
                }
            }
            if kind != QUANT_PER_CHANNEL && scales_off != 0 {
                return Err(file_err(
                    "per-channel scale offset is not 0 (not per-channel)",
                    at + 136,
                ));
            }
            let quant = match kind {
                QUANT_NONE => Quant::None,
                QUANT_PER_TENSOR => {
                    if !scale_ok(scale) {
                        return Err(file_err("scale is not finite and > 0", at + 128));
                    }
                    let (min, max) = dtype.zero_point_range().unwrap_or((0, 0));
                    if !(min..=max).contains(&zero_point) {
                        return Err(file_err("zero point outside the dtype's range", at + 124));
                    }
                    Quant::PerTensor { scale, zero_point }
                }
                QUANT_PER_CHANNEL => {
                    if rank == 0 {
                        return Err(file_err(
                            "per-channel quantization of a rank-0 tensor",
                            at + 68,
                        ));
                    }
                    let rows = shape[0];
                    // rows <= len, so 4 * rows cannot overflow on 64-bit; checked anyway.
                    let n = rows
                        .checked_mul(4)
                        .ok_or(file_err("per-channel scales larger than the file", at + 72))?;
                    let off = usize::try_from(scales_off)
                        .ok()
                        .filter(|&v| v <= len)
                        .ok_or(file_err(
                            "per-channel scale offset past the end of the file",
                            at + 136,
                        ))?;
                    let raw = region(bytes, off, n, tables_end, at + 136)?;
                    regions.push((off, off + n, at + 136));
                    let mut scales = Vec::with_capacity(rows);
                    for c in raw.chunks_exact(4) {
                        let s = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                        if !scale_ok(s) {
                            return Err(file_err(
                                "per-channel scale is not finite and > 0",
                                at + 136,
                            ));
                        }
                        scales.push(s);
                    }
                    Quant::PerChannel { scales }
                }
                _ => return Err(file_err("unknown quantization kind", at + 120)),
            };
            tensors.push(Entry {
                name,
                dtype,
                rank,
                shape,
                quant,
                data,
            });
        }
        check_unique(&mut names, "duplicate tensor name")?;

        // Empty regions hold nothing, so they overlap nothing.
        regions.retain(|r| r.0 < r.1);
        regions.sort_unstable();
        for w in regions.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(file_err("data regions overlap", w[0].2.max(w[1].2)));
            }
        }

        Ok(Qnb { meta, tensors })
    }

    /// The metadata value of `key`.
    pub fn meta(&self, key: &'static str) -> Result<i64> {
        self.meta
            .iter()
            .find(|(k, _)| *k == key)
            .map(|&(_, v)| v)
            .ok_or(Error::ModelMeta { key })
    }

    /// All metadata, in file order.
    pub fn metas(&self) -> impl Iterator<Item = (&str, i64)> {
        self.meta.iter().map(|&(k, v)| (k, v))
    }

    /// The tensor `name`, checked to have element type `T` and exactly `shape`.
    pub fn tensor<T: Element>(
        &self,
        name: &'static str,
        shape: &[usize],
    ) -> Result<TensorRef<'a, T>> {
        let e = self.entry(name).ok_or(Error::ModelTensor {
            name,
            problem: "not in the model file",
        })?;
        if e.dtype != T::DTYPE {
            return Err(Error::ModelTensor {
                name,
                problem: match e.dtype {
                    DType::I8 => "has element type i8, another was requested",
                    DType::U8 => "has element type u8, another was requested",
                    DType::I16 => "has element type i16, another was requested",
                    DType::I32 => "has element type i32, another was requested",
                    DType::F32 => "has element type f32, another was requested",
                },
            });
        }
        if &e.shape[..e.rank] != shape {
            return Err(Error::ModelTensor {
                name,
                problem: "has another shape than requested",
            });
        }
        // Cannot fail: parse checked the buffer and region alignment and the length.
        let data = bytemuck::try_cast_slice(e.data).map_err(|_| Error::ModelTensor {
            name,
            problem: "data cannot be cast in place",
        })?;
        Ok(TensorRef {
            data,
            quant: e.quant.clone(),
        })
    }

    /// The dtype and shape of tensor `name`, if present.
    pub fn info(&self, name: &str) -> Option<(DType, &[usize])> {
        self.entry(name).map(|e| (e.dtype, &e.shape[..e.rank]))
    }

    /// Names of all tensors, in file order (for listing/debugging).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.iter().map(|e| e.name)
    }

    fn entry(&self, name: &str) -> Option<&Entry<'a>> {
        self.tensors.iter().find(|e| e.name == name)
    }
}

/// The region `off..off + n` of `bytes`, checked to be aligned, after the tables and
/// inside the file; errors name the offset field at `field`.
fn region(bytes: &[u8], off: usize, n: usize, tables_end: usize, field: usize) -> Result<&[u8]> {
    if !off.is_multiple_of(ALIGN) {
        return Err(file_err("region offset is not a multiple of 64", field));
    }
    if off < tables_end {
        return Err(file_err("region starts inside the header or tables", field));
    }
    off.checked_add(n)
        .and_then(|end| bytes.get(off..end))
        .ok_or(file_err("region extends past the end of the file", field))
}

// ---------------------------------------------------------------------------
// Aligned storage
// ---------------------------------------------------------------------------

/// An owned byte buffer whose start is [`ALIGN`]-aligned (file contents for
/// [`Qnb::parse`]).
///
/// It over-allocates by `ALIGN - 1` bytes and starts at the first aligned address;
/// the heap block never moves (the buffer is never grown), so the start stays aligned
/// when the `AlignedBytes` itself is moved.
pub struct AlignedBytes {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBytes {
    /// A zeroed buffer of `len` bytes.
    pub fn zeroed(len: usize) -> AlignedBytes {
        // Saturating: a length that close to usize::MAX fails to allocate anyway.
        let buf = std::vec![0u8; len.saturating_add(ALIGN - 1)];
        let start = (ALIGN - buf.as_ptr() as usize % ALIGN) % ALIGN;
        AlignedBytes { buf, start, len }
    }

    /// An aligned copy of `bytes`.
    pub fn copy_from(bytes: &[u8]) -> AlignedBytes {
        let mut a = AlignedBytes::zeroed(bytes.len());
        a.copy_from_slice(bytes);
        a
    }

    /// The contents of the file at `path`.
    pub fn read(path: impl AsRef<std::path::Path>) -> std::io::Result<AlignedBytes> {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let len = usize::try_from(file.metadata()?.len())
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "file too large"))?;
        let mut a = AlignedBytes::zeroed(len);
        file.read_exact(&mut a)?;
        // The file must not have grown since its length was read.
        let mut probe = [0u8; 1];
        if file.read(&mut probe)? != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "file changed while being read",
            ));
        }
        Ok(a)
    }
}

impl core::ops::Deref for AlignedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl core::ops::DerefMut for AlignedBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

impl core::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AlignedBytes")
            .field("len", &self.len)
            .finish()
    }
}
