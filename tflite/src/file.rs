//! Reading a model file into 16-byte aligned memory.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Alignment of [`ModelBytes`], in bytes: that of the widest element type
/// (complex128) and the alignment converters give buffers within the file.
const ALIGNMENT: usize = 16;

/// A whole model file in memory, aligned to 16 bytes, so that constant
/// buffers (aligned to 16 within the file by converters) are aligned in
/// memory too and [`crate::values`] can borrow them.
///
/// A memory-mapped file is equally good input to [`crate::Model::parse`]
/// (maps are page-aligned); this is the portable fallback.
#[derive(Clone)]
pub struct ModelBytes {
    /// `u128` only for its alignment; `len` bytes of it are the file.
    storage: Vec<u128>,
    len: usize,
}

impl ModelBytes {
    /// Reads the file at `path` with one read, refusing files longer than
    /// `max_len` bytes before allocating.
    pub fn read(path: impl AsRef<Path>, max_len: usize) -> io::Result<ModelBytes> {
        let mut file = File::open(path)?;
        let file_len = file.metadata()?.len();
        let len = usize::try_from(file_len)
            .ok()
            .filter(|&len| len <= max_len)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("model file of {file_len} bytes is over the limit of {max_len}"),
                )
            })?;
        let mut model = ModelBytes {
            storage: vec![0; len.div_ceil(ALIGNMENT)],
            len,
        };
        file.read_exact(model.as_bytes_mut())?;
        Ok(model)
    }

    /// Copies `bytes` into aligned memory.
    pub fn copy_from(bytes: &[u8]) -> ModelBytes {
        let mut model = ModelBytes {
            storage: vec![0; bytes.len().div_ceil(ALIGNMENT)],
            len: bytes.len(),
        };
        model.as_bytes_mut().copy_from_slice(bytes);
        model
    }

    /// The file's bytes; the slice starts at a 16-byte aligned address.
    pub fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.storage)[..self.len]
    }

    fn as_bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.storage)[..self.len]
    }
}

impl std::fmt::Debug for ModelBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ModelBytes({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_aligned_and_equal() {
        for len in [0, 1, 15, 16, 17, 100] {
            let bytes: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let model = ModelBytes::copy_from(&bytes);
            assert_eq!(model.as_bytes(), &bytes[..]);
            assert_eq!(model.as_bytes().as_ptr() as usize % ALIGNMENT, 0);
        }
    }

    #[test]
    fn reads_whole_files_and_refuses_long_ones() {
        let path = std::env::temp_dir().join(format!("qneon-tflite-read-{}", std::process::id()));
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let model = ModelBytes::read(&path, 1000).unwrap();
        assert_eq!(model.as_bytes(), &bytes[..]);
        let too_long = ModelBytes::read(&path, 999).unwrap_err();
        assert_eq!(too_long.kind(), io::ErrorKind::InvalidData);
        std::fs::remove_file(&path).unwrap();
    }
}
