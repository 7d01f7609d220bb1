//! Verification of one tensor and its quantization parameters.

use super::{index_in, At, Walker};
use crate::dtype::TensorType;
use crate::error::{Error, Place, QuantizationProblem, Result};
use crate::generated::tflite as fb;
use crate::model::{Quantization, Tensor};

impl<'a> Walker<'a, '_> {
    pub(super) fn tensor(
        &mut self,
        subgraph_index: usize,
        index: usize,
        tensor: &fb::TensorRef<'a>,
        buffers: &[&'a [u8]],
    ) -> Result<Tensor<'a>> {
        let at = Place::Tensor {
            subgraph: subgraph_index,
            tensor: index,
        };
        let code = tensor.type_().at(at)?;
        let dtype = TensorType::from_code(code).ok_or(Error::UnknownTensorType { at, code })?;

        let stored_shape: Vec<i32> = match tensor.shape().at(at)? {
            Some(shape) => {
                self.spend(shape.len())?;
                shape.iter().collect()
            }
            None => Vec::new(),
        };
        let mut shape = Vec::with_capacity(stored_shape.len());
        for &dim in &stored_shape {
            match usize::try_from(dim) {
                Ok(dim) => shape.push(dim),
                Err(_) => {
                    return Err(Error::NegativeDimension {
                        at,
                        shape: stored_shape,
                    })
                }
            }
        }
        let element_count = shape
            .iter()
            .try_fold(1usize, |count, &dim| count.checked_mul(dim));
        let Some(element_count) = element_count else {
            return Err(Error::ShapeOverflow {
                at,
                shape: stored_shape,
            });
        };
        let byte_size = match dtype.element_bits() {
            Some(_) => match dtype.byte_size(element_count) {
                Some(bytes) => Some(bytes),
                None => {
                    return Err(Error::ShapeOverflow {
                        at,
                        shape: stored_shape,
                    })
                }
            },
            None => None,
        };

        let shape_signature: Option<Vec<i32>> = match tensor.shape_signature().at(at)? {
            Some(signature) => {
                self.spend(signature.len())?;
                Some(signature.iter().collect())
            }
            None => None,
        };
        if let Some(signature) = &shape_signature {
            if signature.iter().any(|&dim| dim < -1) {
                return Err(Error::BadShapeSignature {
                    at,
                    shape: stored_shape,
                    signature: signature.clone(),
                });
            }
        }

        let buffer = index_in(
            at,
            "tensor buffer",
            tensor.buffer().at(at)?.into(),
            buffers.len(),
        )?;
        let data = Some(buffers[buffer]).filter(|data| !data.is_empty());
        let is_sparse = tensor.sparsity().at(at)?.is_some();
        if let (Some(data), Some(expected), false) = (data, byte_size, is_sparse) {
            if data.len() != expected {
                return Err(Error::BufferSize {
                    at,
                    buffer,
                    expected,
                    got: data.len(),
                });
            }
        }

        if data.is_none() {
            let bytes = byte_size.unwrap_or(0);
            if bytes > self.options.max_tensor_bytes {
                return Err(Error::TensorOverBudget {
                    at,
                    bytes,
                    limit: self.options.max_tensor_bytes,
                });
            }
        }

        let quantization = match tensor.quantization().at(at)? {
            Some(quantization) => self.quantization(at, &quantization, &shape)?,
            None => None,
        };

        Ok(Tensor {
            subgraph: subgraph_index,
            index,
            name: tensor.name().at(at)?.unwrap_or(""),
            dtype,
            shape,
            shape_signature,
            element_count,
            byte_size,
            buffer,
            data,
            quantization,
            is_variable: tensor.is_variable().at(at)?,
            is_sparse,
        })
    }

    fn float_vector(&mut self, vector: Option<planus::Vector<'a, f32>>) -> Result<Vec<f32>> {
        let Some(vector) = vector else {
            return Ok(Vec::new());
        };
        self.spend(vector.len())?;
        Ok(vector.iter().collect())
    }

    /// TFLite's rules: no scales means not quantized; scales need as many
    /// zero points; more than one scale quantizes along `quantized_dimension`,
    /// one scale per index of that axis.
    ///
    /// Two files TFLite Micro loads are accepted as it does. Per-axis
    /// weights may carry one zero point for all their scales (it is repeated
    /// here, so [`Quantization::zero_points`] still has one per scale). And
    /// converters have written rank-1 bias tensors with one scale per element
    /// but the `quantized_dimension` of their 4-D filter (TFLite Micro's
    /// person_detect: 3 on a rank 1 tensor); TFLite Micro never reads the
    /// dimension there, and the one axis such a tensor has is the only one
    /// its scales can follow, so that axis is taken.
    fn quantization(
        &mut self,
        at: Place,
        quantization: &fb::QuantizationParametersRef<'a>,
        shape: &[usize],
    ) -> Result<Option<Quantization>> {
        let scales = self.float_vector(quantization.scale().at(at)?)?;
        if scales.is_empty() {
            return Ok(None);
        }
        let mut zero_points: Vec<i64> = match quantization.zero_point().at(at)? {
            Some(zero_points) => {
                self.spend(zero_points.len())?;
                zero_points.iter().collect()
            }
            None => {
                return Err(Error::BadQuantization {
                    at,
                    problem: QuantizationProblem::MissingZeroPoints,
                })
            }
        };
        if scales.len() > 1 && zero_points.len() == 1 {
            zero_points.resize(scales.len(), zero_points[0]);
        }
        if zero_points.len() != scales.len() {
            return Err(Error::BadQuantization {
                at,
                problem: QuantizationProblem::LengthMismatch {
                    scales: scales.len(),
                    zero_points: zero_points.len(),
                },
            });
        }
        let axis = if scales.len() > 1 {
            let stored_axis = quantization.quantized_dimension().at(at)?;
            let only_axis_fits = shape.len() == 1 && shape[0] == scales.len();
            let axis = usize::try_from(stored_axis)
                .ok()
                .filter(|&axis| axis < shape.len())
                .or(only_axis_fits.then_some(0))
                .ok_or(Error::BadQuantization {
                    at,
                    problem: QuantizationProblem::AxisOutOfRange {
                        axis: stored_axis,
                        rank: shape.len(),
                    },
                })?;
            if shape[axis] != scales.len() {
                return Err(Error::BadQuantization {
                    at,
                    problem: QuantizationProblem::AxisSizeMismatch {
                        axis,
                        dim: shape[axis],
                        scales: scales.len(),
                    },
                });
            }
            Some(axis)
        } else {
            None
        };
        Ok(Some(Quantization {
            scales,
            zero_points,
            axis,
            min: self.float_vector(quantization.min().at(at)?)?,
            max: self.float_vector(quantization.max().at(at)?)?,
        }))
    }
}
