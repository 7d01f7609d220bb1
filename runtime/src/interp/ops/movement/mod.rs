//! Data movement: RESHAPE (with SQUEEZE and EXPAND_DIMS), TRANSPOSE, GATHER,
//! STRIDED_SLICE, PAD, PADV2, CONCATENATION, SPLIT, SPACE_TO_DEPTH and
//! DEPTH_TO_SPACE, a file per op (or pair) with its `Prepare` and its copy
//! plan. No arithmetic: every copy is a [`StridedCopy`] planned at load
//! (GATHER's indices are read at run time), so one implementation serves
//! every dtype.
//!
//! [`StridedCopy`]: super::strided_copy::StridedCopy

pub(crate) mod bands;
pub(crate) mod concat_split;
pub(crate) mod depth_space;
pub(crate) mod gather;
pub(crate) mod pad;
pub(crate) mod reshape;
pub(crate) mod strided_slice;
pub(crate) mod transpose;

use std::ops::Range;

use qneon::Backend;
use qneon_tflite::BuiltinOp;

use super::buffers::Io;
use super::kernel::{Kernel, Registration};
use super::strided_copy::StridedCopy;

/// The ops this family prepares. They move bytes, alike in every kernel
/// set, so they prepare under XNNPACK too; CONCATENATION also requantizes
/// differently quantized inputs, but LiteRT's XNNPACK delegate takes it
/// only when every input has the output's scale and zero point (pure
/// data movement) and leaves the others to the builtin kernel, whose
/// arithmetic this family's is (uint8 only: int8 and int16 inputs must be
/// quantized as the output; the x86-64 build's rounding, as the XNNPACK
/// references were made there).
pub(crate) const OPS: &[Registration] = &[
    Registration::new(BuiltinOp::RESHAPE, "RESHAPE", reshape::prepare).xnnpack(),
    Registration::new(BuiltinOp::TRANSPOSE, "TRANSPOSE", transpose::prepare).xnnpack(),
    Registration::new(BuiltinOp::GATHER, "GATHER", gather::prepare).xnnpack(),
    Registration::new(
        BuiltinOp::STRIDED_SLICE,
        "STRIDED_SLICE",
        strided_slice::prepare,
    )
    .xnnpack(),
    Registration::new(BuiltinOp::PAD, "PAD", pad::prepare).xnnpack(),
    Registration::new(BuiltinOp::PADV2, "PADV2", pad::prepare).xnnpack(),
    Registration::new(
        BuiltinOp::CONCATENATION,
        "CONCATENATION",
        concat_split::prepare_concatenation,
    )
    .xnnpack()
    .arithmetic(concat_split::describe_concatenation),
    Registration::new(BuiltinOp::SPLIT, "SPLIT", concat_split::prepare_split).xnnpack(),
    Registration::new(BuiltinOp::SQUEEZE, "SQUEEZE", reshape::prepare_squeeze).xnnpack(),
    Registration::new(
        BuiltinOp::EXPAND_DIMS,
        "EXPAND_DIMS",
        reshape::prepare_expand_dims,
    )
    .xnnpack(),
    Registration::new(
        BuiltinOp::SPACE_TO_DEPTH,
        "SPACE_TO_DEPTH",
        depth_space::prepare_space_to_depth,
    )
    .xnnpack(),
    Registration::new(
        BuiltinOp::DEPTH_TO_SPACE,
        "DEPTH_TO_SPACE",
        depth_space::prepare_depth_to_space,
    )
    .xnnpack(),
];

/// TRANSPOSE and STRIDED_SLICE: input 0 to output 0 through the planned copy.
impl Kernel for StridedCopy {
    fn run_tiles(&self, _: Backend, _: Range<usize>, io: &mut Io<'_>) -> Result<(), String> {
        self.run(io.ins[0], io.outs[0]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::concat_split::join_parts;
    use super::pad::pad;
    use crate::interp::ops::strided_copy::{broadcast, broadcast_shape, copied as run};

    #[test]
    fn pad_broadcast_and_join() {
        let copy = pad(&[2, 2], &[1, 0], &[3, 3], 1).unwrap();
        let out = run(&copy, &[1, 2, 3, 4], 9);
        assert_eq!(out, vec![0xEE, 0xEE, 0xEE, 1, 2, 0xEE, 3, 4, 0xEE]);
        let copy = broadcast(&[3], &[2, 3], 1).unwrap();
        assert_eq!(run(&copy, &[1, 2, 3], 6), vec![1, 2, 3, 1, 2, 3]);
        let copy = broadcast(&[2, 1], &[2, 3], 1).unwrap();
        assert_eq!(run(&copy, &[1, 2], 6), vec![1, 1, 1, 2, 2, 2]);
        assert!(broadcast_shape(&[2, 3], &[4, 3]).is_err());
        assert_eq!(broadcast_shape(&[1, 4, 1], &[3]).unwrap(), vec![1, 4, 3]);
        let parts = join_parts(2, 1, &[1, 2], true).unwrap();
        let mut joined = vec![0; 6];
        parts[0].run(&[1, 2], &mut joined);
        parts[1].run(&[3, 4, 5, 6], &mut joined);
        assert_eq!(joined, vec![1, 3, 4, 2, 5, 6]);
    }
}
