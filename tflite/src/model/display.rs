//! Display (one-line summaries) and Debug (data slices shown by length) of
//! the model views.

use super::{Model, Operator, Quantization, Tensor};
use crate::options::Options;

impl std::fmt::Display for Quantization {
    /// `scale 0.5 zero_point -1`, or `3 scales along axis 0 (0.01..0.03), zero points [0, 0, 0]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.axis, self.per_tensor()) {
            (None, Some((scale, zero_point))) => {
                write!(f, "scale {scale} zero_point {zero_point}")
            }
            _ => {
                let low = self.scales.iter().copied().fold(f32::INFINITY, f32::min);
                let high = self
                    .scales
                    .iter()
                    .copied()
                    .fold(f32::NEG_INFINITY, f32::max);
                write!(f, "{} scales", self.scales.len())?;
                if let Some(axis) = self.axis {
                    write!(f, " along axis {axis}")?;
                }
                write!(f, " ({low}..{high})")?;
                let first_zero_point = self.zero_points.first().copied().unwrap_or(0);
                if self.zero_points.iter().all(|&z| z == first_zero_point) {
                    write!(f, ", zero points all {first_zero_point}")
                } else {
                    write!(f, ", zero points vary")
                }
            }
        }
    }
}

impl std::fmt::Display for Tensor<'_> {
    /// `#1 weights INT8 [3, 4] const 12 B, 3 scales along axis 0 (...)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "#{} {:?} {} {:?}",
            self.index, self.name, self.dtype, self.shape
        )?;
        if let Some(signature) = &self.shape_signature {
            if signature.iter().any(|&dim| dim < 0) {
                write!(f, " (signature {signature:?})")?;
            }
        }
        match (self.data, self.byte_size) {
            (Some(data), _) => write!(f, " const {} B (buffer {})", data.len(), self.buffer)?,
            (None, Some(bytes)) => write!(f, " {bytes} B")?,
            (None, None) => {}
        }
        if self.is_variable {
            f.write_str(" variable")?;
        }
        if self.is_sparse {
            f.write_str(" sparse")?;
        }
        if let Some(quantization) = &self.quantization {
            write!(f, ", {quantization}")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Operator<'_> {
    /// `#0 FULLY_CONNECTED v4 (0, 1, 2) -> (3) activation=RELU ...`; `-`
    /// marks an omitted optional tensor.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |indices: &[Option<usize>]| {
            indices
                .iter()
                .map(|index| match index {
                    Some(index) => index.to_string(),
                    None => "-".to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(
            f,
            "#{} {} v{} ({}) -> ({})",
            self.index,
            self.op,
            self.version,
            list(&self.inputs),
            list(&self.outputs)
        )?;
        if self.options != Options::None {
            write!(f, " {}", self.options)?;
        }
        if let Some(custom) = self.custom_options {
            write!(f, " custom options {} B", custom.len())?;
        }
        Ok(())
    }
}

/// Shows a byte slice by its length: a model's data can be megabytes.
struct Length<'a>(&'a [u8]);

impl std::fmt::Debug for Length<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} bytes>", self.0.len())
    }
}

impl std::fmt::Debug for Model<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let buffers: Vec<Length<'_>> = self.buffers.iter().map(|data| Length(data)).collect();
        f.debug_struct("Model")
            .field("bytes", &Length(self.bytes))
            .field("version", &self.version)
            .field("description", &self.description)
            .field("operator_codes", &self.operator_codes)
            .field("buffers", &buffers)
            .field("subgraphs", &self.subgraphs)
            .field("metadata", &self.metadata)
            .field("non_constant_bytes", &self.non_constant_bytes)
            .finish()
    }
}

impl std::fmt::Debug for Tensor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("subgraph", &self.subgraph)
            .field("index", &self.index)
            .field("name", &self.name)
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .field("shape_signature", &self.shape_signature)
            .field("element_count", &self.element_count)
            .field("byte_size", &self.byte_size)
            .field("buffer", &self.buffer)
            .field("data", &self.data.map(Length))
            .field("quantization", &self.quantization)
            .field("is_variable", &self.is_variable)
            .field("is_sparse", &self.is_sparse)
            .finish()
    }
}

impl std::fmt::Debug for Operator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator")
            .field("index", &self.index)
            .field("opcode_index", &self.opcode_index)
            .field("op", &self.op)
            .field("version", &self.version)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("intermediates", &self.intermediates)
            .field("options", &self.options)
            .field("custom_options", &self.custom_options.map(Length))
            .finish()
    }
}
