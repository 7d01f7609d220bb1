//! Tensor element types: the format's `TensorType` numbers, names and sizes.

use core::fmt;

/// The element type of a tensor (`TensorType`, a `byte` in the file); the
/// discriminants are the format's codes.
///
/// Every value of the format up to 22 is known; a file with a larger one is
/// rejected by [`crate::Model::parse`] ([`crate::Error::UnknownTensorType`]),
/// because the byte size of its tensors cannot be known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
#[non_exhaustive]
#[repr(i8)]
pub enum TensorType {
    Float32 = 0,
    Float16 = 1,
    Int32 = 2,
    Uint8 = 3,
    Int64 = 4,
    /// Variable-length strings; the buffer holds a count and offsets.
    String = 5,
    Bool = 6,
    Int16 = 7,
    Complex64 = 8,
    Int8 = 9,
    Float64 = 10,
    Complex128 = 11,
    Uint64 = 12,
    /// A handle to a resource (hash table, variable); no data of its own.
    Resource = 13,
    /// A handle to a variant (tensor list); no data of its own.
    Variant = 14,
    Uint32 = 15,
    Uint16 = 16,
    /// 4-bit signed integers, two per byte in constant buffers.
    Int4 = 17,
    BFloat16 = 18,
    /// 2-bit signed integers, four per byte in constant buffers.
    Int2 = 19,
    /// 4-bit unsigned integers, two per byte in constant buffers.
    Uint4 = 20,
    Float8E4M3FN = 21,
    Float8E5M2 = 22,
}

/// Every type, at the index of its code.
const ALL: [TensorType; 23] = [
    TensorType::Float32,
    TensorType::Float16,
    TensorType::Int32,
    TensorType::Uint8,
    TensorType::Int64,
    TensorType::String,
    TensorType::Bool,
    TensorType::Int16,
    TensorType::Complex64,
    TensorType::Int8,
    TensorType::Float64,
    TensorType::Complex128,
    TensorType::Uint64,
    TensorType::Resource,
    TensorType::Variant,
    TensorType::Uint32,
    TensorType::Uint16,
    TensorType::Int4,
    TensorType::BFloat16,
    TensorType::Int2,
    TensorType::Uint4,
    TensorType::Float8E4M3FN,
    TensorType::Float8E5M2,
];

impl TensorType {
    /// The type of a format code, or `None` for a code this crate does not know.
    pub fn from_code(code: i8) -> Option<TensorType> {
        usize::try_from(code)
            .ok()
            .and_then(|index| ALL.get(index).copied())
    }

    /// The format code (`TensorType` value).
    pub fn code(self) -> i8 {
        self as i8
    }

    /// The format's name (`"INT8"`).
    pub fn name(self) -> &'static str {
        match self {
            TensorType::Float32 => "FLOAT32",
            TensorType::Float16 => "FLOAT16",
            TensorType::Int32 => "INT32",
            TensorType::Uint8 => "UINT8",
            TensorType::Int64 => "INT64",
            TensorType::String => "STRING",
            TensorType::Bool => "BOOL",
            TensorType::Int16 => "INT16",
            TensorType::Complex64 => "COMPLEX64",
            TensorType::Int8 => "INT8",
            TensorType::Float64 => "FLOAT64",
            TensorType::Complex128 => "COMPLEX128",
            TensorType::Uint64 => "UINT64",
            TensorType::Resource => "RESOURCE",
            TensorType::Variant => "VARIANT",
            TensorType::Uint32 => "UINT32",
            TensorType::Uint16 => "UINT16",
            TensorType::Int4 => "INT4",
            TensorType::BFloat16 => "BFLOAT16",
            TensorType::Int2 => "INT2",
            TensorType::Uint4 => "UINT4",
            TensorType::Float8E4M3FN => "FLOAT8_E4M3FN",
            TensorType::Float8E5M2 => "FLOAT8_E5M2",
        }
    }

    /// Bits per element as stored in a constant buffer, or `None` for types
    /// whose size is not a function of the element count (STRING, RESOURCE,
    /// VARIANT).
    pub fn element_bits(self) -> Option<u32> {
        Some(match self {
            TensorType::Int2 => 2,
            TensorType::Int4 | TensorType::Uint4 => 4,
            TensorType::Uint8
            | TensorType::Int8
            | TensorType::Bool
            | TensorType::Float8E4M3FN
            | TensorType::Float8E5M2 => 8,
            TensorType::Float16 | TensorType::BFloat16 | TensorType::Int16 | TensorType::Uint16 => {
                16
            }
            TensorType::Float32 | TensorType::Int32 | TensorType::Uint32 => 32,
            TensorType::Int64
            | TensorType::Uint64
            | TensorType::Float64
            | TensorType::Complex64 => 64,
            TensorType::Complex128 => 128,
            TensorType::String | TensorType::Resource | TensorType::Variant => return None,
        })
    }

    /// Bytes taken by `count` elements stored densely (sub-byte types packed,
    /// rounded up to whole bytes); `None` when the type has no fixed element
    /// size or the size overflows `usize`.
    pub fn byte_size(self, count: usize) -> Option<usize> {
        let bits = self.element_bits()? as usize;
        let total_bits = count.checked_mul(bits)?;
        // Rounds up without overflowing at usize::MAX.
        Some(total_bits / 8 + usize::from(total_bits % 8 != 0))
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_match_the_format() {
        for code in 0..ALL.len() as i8 {
            let dtype = TensorType::from_code(code).unwrap();
            assert_eq!(dtype.code(), code);
        }
        assert_eq!(TensorType::from_code(0), Some(TensorType::Float32));
        assert_eq!(TensorType::from_code(3), Some(TensorType::Uint8));
        assert_eq!(TensorType::from_code(7), Some(TensorType::Int16));
        assert_eq!(TensorType::from_code(9), Some(TensorType::Int8));
        assert_eq!(TensorType::from_code(17), Some(TensorType::Int4));
        assert_eq!(TensorType::from_code(22), Some(TensorType::Float8E5M2));
        assert_eq!(TensorType::from_code(23), None);
        assert_eq!(TensorType::from_code(-1), None);
    }

    #[test]
    fn byte_sizes_pack_sub_byte_types_and_refuse_overflow() {
        assert_eq!(TensorType::Int8.byte_size(7), Some(7));
        assert_eq!(TensorType::Float32.byte_size(3), Some(12));
        assert_eq!(TensorType::Complex128.byte_size(2), Some(32));
        assert_eq!(TensorType::Int4.byte_size(3), Some(2));
        assert_eq!(TensorType::Int2.byte_size(5), Some(2));
        assert_eq!(TensorType::String.byte_size(1), None);
        assert_eq!(TensorType::Int32.byte_size(usize::MAX / 2), None);
        assert_eq!(
            TensorType::Int8.byte_size(usize::MAX / 8),
            Some(usize::MAX / 8)
        );
        assert_eq!(TensorType::Int8.byte_size(usize::MAX / 8 + 1), None);
    }
}
