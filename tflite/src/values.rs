//! Reading constant data as numbers without assuming its alignment.

use std::borrow::Cow;

use crate::dtype::TensorType;
use crate::error::{Error, Result};
use crate::model::Tensor;

/// A number type that tensor data can be read as.
pub trait Element: bytemuck::Pod {
    /// The tensor type stored as this number type.
    const DTYPE: TensorType;
    /// Reads one value from `size_of::<Self>()` little-endian bytes.
    fn from_le_slice(bytes: &[u8]) -> Self;
}

macro_rules! element {
    ($($number:ty => $dtype:ident),* $(,)?) => {$(
        impl Element for $number {
            const DTYPE: TensorType = TensorType::$dtype;
            fn from_le_slice(bytes: &[u8]) -> Self {
                let mut array = [0; core::mem::size_of::<$number>()];
                array.copy_from_slice(bytes);
                <$number>::from_le_bytes(array)
            }
        }
    )*};
}

element! {
    i8 => Int8,
    u8 => Uint8,
    i16 => Int16,
    u16 => Uint16,
    i32 => Int32,
    u32 => Uint32,
    i64 => Int64,
    u64 => Uint64,
    f32 => Float32,
    f64 => Float64,
}

/// Reads little-endian `bytes` as `T` values: borrowed when the host is
/// little-endian and the slice is aligned for `T`, copied otherwise (a
/// buffer at an odd place in the file, or a file read into memory without
/// alignment). `None` when the length is not a multiple of `T`'s size.
pub fn values<T: Element>(bytes: &[u8]) -> Option<Cow<'_, [T]>> {
    let size = core::mem::size_of::<T>();
    if !bytes.len().is_multiple_of(size) {
        return None;
    }
    if cfg!(target_endian = "little") {
        if let Ok(borrowed) = bytemuck::try_cast_slice(bytes) {
            return Some(Cow::Borrowed(borrowed));
        }
    }
    Some(Cow::Owned(
        bytes.chunks_exact(size).map(T::from_le_slice).collect(),
    ))
}

impl<'a> Tensor<'a> {
    /// The constant data as `T` values (see [`values`]); `Ok(None)` for a
    /// tensor without data. Refuses a `T` that is not the tensor's type,
    /// and sparse tensors (whose data are compressed).
    pub fn constant_values<T: Element>(&self) -> Result<Option<Cow<'a, [T]>>> {
        if self.dtype() != T::DTYPE || self.is_sparse() {
            return Err(Error::ElementType {
                at: self.place(),
                dtype: self.dtype(),
                requested: T::DTYPE,
                sparse: self.is_sparse(),
            });
        }
        match self.data() {
            None => Ok(None),
            // `parse` checked the length against the type and shape.
            Some(data) => Ok(values(data)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_slices_are_borrowed_and_misaligned_ones_copied() {
        let storage = [0x0102_0304_u32, 0x0506_0708, 0x090a_0b0c];
        let bytes: &[u8] = bytemuck::cast_slice(&storage);
        let aligned = values::<u32>(&bytes[..8]).unwrap();
        assert!(matches!(aligned, Cow::Borrowed(_)) || cfg!(target_endian = "big"));
        assert_eq!(&aligned[..], &storage[..2]);
        let misaligned = values::<u16>(&bytes[1..9]).unwrap();
        assert!(matches!(misaligned, Cow::Owned(_)));
        let expected: Vec<u16> = bytes[1..9]
            .chunks_exact(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
            .collect();
        assert_eq!(&misaligned[..], &expected[..]);
        assert!(values::<i32>(&bytes[..7]).is_none());
    }
}
