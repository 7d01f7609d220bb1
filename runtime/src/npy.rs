//! NumPy `.npy` files (format versions 1, 2 and 3): little-endian, C order,
//! the element types of TFLite tensors. A small reader and writer: a model's
//! inputs and outputs are flat arrays, and the header is a short Python dict
//! literal that is parsed here field by field, each one checked.

use qneon_tflite::TensorType;

const MAGIC: &[u8] = b"\x93NUMPY";

/// An array: element type, shape, and its little-endian row-major bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyArray {
    /// Element type.
    pub dtype: TensorType,
    /// Shape (empty for a scalar).
    pub shape: Vec<usize>,
    /// The data, `product(shape) * element size` bytes.
    pub data: Vec<u8>,
}

/// The `descr` of a type, and the type of a `descr`.
fn descr(dtype: TensorType) -> Option<&'static str> {
    Some(match dtype {
        TensorType::Int8 => "|i1",
        TensorType::Uint8 => "|u1",
        TensorType::Bool => "|b1",
        TensorType::Int16 => "<i2",
        TensorType::Int32 => "<i4",
        TensorType::Int64 => "<i8",
        TensorType::Float32 => "<f4",
        TensorType::Float64 => "<f8",
        _ => return None,
    })
}

fn dtype_of(descr: &str) -> Option<TensorType> {
    Some(match descr {
        "|i1" | "<i1" | "i1" => TensorType::Int8,
        "|u1" | "<u1" | "u1" => TensorType::Uint8,
        "|b1" => TensorType::Bool,
        "<i2" => TensorType::Int16,
        "<i4" => TensorType::Int32,
        "<i8" => TensorType::Int64,
        "<f4" => TensorType::Float32,
        "<f8" => TensorType::Float64,
        _ => return None,
    })
}

/// Bytes per element of the types [`descr`] knows.
fn element_bytes(dtype: TensorType) -> usize {
    match dtype {
        TensorType::Int16 => 2,
        TensorType::Int32 | TensorType::Float32 => 4,
        TensorType::Int64 | TensorType::Float64 => 8,
        _ => 1,
    }
}

/// The value after `key` in the header dict, up to its end (a quoted string,
/// a tuple in parentheses, or a bare word).
fn field<'h>(header: &'h str, key: &str) -> Result<&'h str, String> {
    let quoted = format!("'{key}'");
    let at = header
        .find(&quoted)
        .ok_or_else(|| format!("header has no {quoted}"))?;
    let rest = header[at + quoted.len()..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| format!("header: no ':' after {quoted}"))?
        .trim_start();
    let end = if let Some(inner) = rest.strip_prefix('\'') {
        inner.find('\'').map(|e| e + 2)
    } else if rest.starts_with('(') {
        rest.find(')').map(|e| e + 1)
    } else {
        rest.find([',', '}'])
    };
    end.map(|e| rest[..e].trim())
        .ok_or_else(|| format!("header: {quoted} has no end"))
}

impl NpyArray {
    /// Parses a whole `.npy` file; an error says what is wrong.
    pub fn parse(bytes: &[u8]) -> Result<NpyArray, String> {
        if bytes.len() < 10 || &bytes[..6] != MAGIC {
            return Err("not a .npy file (bad magic)".to_string());
        }
        let (header_len, header_start) = match bytes[6] {
            1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
            2 | 3 => {
                if bytes.len() < 12 {
                    return Err("truncated header length".to_string());
                }
                (
                    u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                    12,
                )
            }
            v => return Err(format!("unknown .npy version {v}")),
        };
        let data_start = header_start
            .checked_add(header_len)
            .filter(|&end| end <= bytes.len())
            .ok_or("header longer than the file")?;
        let header = std::str::from_utf8(&bytes[header_start..data_start])
            .map_err(|_| "header is not UTF-8".to_string())?;
        let descr_field = field(header, "descr")?;
        let descr_value = descr_field.trim_matches('\'');
        let dtype = dtype_of(descr_value).ok_or_else(|| {
            format!("unsupported dtype {descr_value:?} (little-endian ints, floats)")
        })?;
        match field(header, "fortran_order")? {
            "False" => {}
            "True" => return Err("Fortran-order arrays are not supported".to_string()),
            other => return Err(format!("bad fortran_order {other:?}")),
        }
        let shape_field = field(header, "shape")?;
        let inner = shape_field
            .strip_prefix('(')
            .and_then(|s| s.strip_suffix(')'))
            .ok_or_else(|| format!("bad shape {shape_field:?}"))?;
        let shape: Vec<usize> = inner
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<usize>()
                    .map_err(|_| format!("bad dimension {s:?}"))
            })
            .collect::<Result<_, _>>()?;
        let len = shape
            .iter()
            .try_fold(element_bytes(dtype), |acc, &d| acc.checked_mul(d))
            .ok_or("shape overflows")?;
        let data = &bytes[data_start..];
        if data.len() != len {
            return Err(format!(
                "shape {shape:?} of {descr_value} needs {len} data bytes, the file has {}",
                data.len()
            ));
        }
        Ok(NpyArray {
            dtype,
            shape,
            data: data.to_vec(),
        })
    }

    /// Reads and parses a file.
    pub fn read(path: &std::path::Path) -> Result<NpyArray, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        NpyArray::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The file's bytes (version 1.0; the header padded so that the data
    /// start at a multiple of 64). `None` for a type `.npy` cannot hold here.
    pub fn to_bytes(&self) -> Option<Vec<u8>> {
        let descr = descr(self.dtype)?;
        let shape = match self.shape.len() {
            1 => format!("({},)", self.shape[0]),
            _ => format!(
                "({})",
                self.shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        let unpadded = 10 + header.len() + 1;
        header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
        header.push('\n');
        let mut out = Vec::with_capacity(10 + header.len() + self.data.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&u16::try_from(header.len()).ok()?.to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&self.data);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_bad_files() {
        for (dtype, shape) in [
            (TensorType::Int8, vec![2, 3]),
            (TensorType::Float32, vec![4]),
            (TensorType::Int32, vec![]),
            (TensorType::Int16, vec![1, 0, 2]),
        ] {
            let len = shape.iter().product::<usize>() * element_bytes(dtype);
            let array = NpyArray {
                dtype,
                shape,
                data: (0..len).map(|i| i as u8).collect(),
            };
            let bytes = array.to_bytes().unwrap();
            assert_eq!(
                (10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize) % 64,
                0
            );
            assert_eq!(NpyArray::parse(&bytes).unwrap(), array);
            // Truncated data, and a missing byte anywhere in the header.
            assert!(NpyArray::parse(&bytes[..bytes.len() - 1]).is_err() || len == 0);
            assert!(NpyArray::parse(&bytes[..9]).is_err());
        }
        let good = NpyArray {
            dtype: TensorType::Int8,
            shape: vec![2],
            data: vec![1, 2],
        }
        .to_bytes()
        .unwrap();
        let text = String::from_utf8_lossy(&good).replace("|i1", ">i4");
        assert!(NpyArray::parse(text.as_bytes()).is_err());
        let fortran = String::from_utf8_lossy(&good).replace("False", "True ");
        assert!(NpyArray::parse(fortran.as_bytes()).is_err());
    }

    #[test]
    fn reads_numpy_written_files() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/ops/reshape");
        let input = NpyArray::read(&dir.join("run0.input.x.npy")).unwrap();
        assert_eq!(input.dtype, TensorType::Int8);
        assert_eq!(input.data.len(), input.shape.iter().product::<usize>());
    }
}
