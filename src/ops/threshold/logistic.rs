//! [`ThresholdedLogistic`]: logistic and a probability threshold in one pass.
//!
//! `new()` runs the wrapped [`Logistic`]'s own kernel (scalar backend, the
//! reference) over every input (256, or 65,536 for int16) and keeps the
//! smallest input whose output passes: a bound on the raw input. `run()`
//! compares each input against it and computes outputs only for the
//! candidates: int8/uint8 look theirs up in the 256 outputs `new()` made;
//! int16 candidates are gathered 64 at a time and run through the wrapped
//! op on the requested backend.

use super::{check_index_range, check_threshold, code_bound, scan, Hit, Sink};
use crate::backend::Backend;
use crate::elem::QuantElem;
use crate::error::Result;
use crate::ops::{Logistic, Method};
use crate::quant::QuantParams;

/// The op's name in errors.
const OP: &str = "thresholded logistic";

/// int16 candidates gathered per call of the wrapped kernel.
const GATHER: usize = 64;

/// Quantized logistic keeping only the outputs at or above a probability
/// threshold, as `(index, value)` hits.
///
/// The hits are exactly those of [`Logistic::run`] followed by keeping the
/// outputs `q` with `(q - zero_point) * scale >= threshold`, in input order,
/// for every type, [`Method`] and backend (see the
/// [module docs](crate::ops::threshold) for the algorithm). `run` computes
/// no output for an input below the bound `new()` derived, and writes only
/// the hits.
///
/// ```
/// use qneon::{Hit, Logistic, Method, QuantParams, ThresholdedLogistic};
/// let q_in = QuantParams::new(0.05, 0);
/// let q_out = Logistic::<i8>::output_quantization();
/// let op = ThresholdedLogistic::<i8>::new(q_in, q_out, Method::Lut, 0.5)?;
/// let scores = [-100i8, 0, 3, 120, -5];
/// let mut hits = [Hit::default(); 5];
/// let n = op.run(&scores, &mut hits)?;
/// // logistic(0) = 0.5 passes; logistic(-5 * 0.05) does not.
/// assert_eq!(hits[..n].iter().map(|h| h.index).collect::<Vec<_>>(), [1, 2, 3]);
/// # Ok::<(), qneon::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ThresholdedLogistic<T: QuantElem> {
    op: Logistic<T>,
    threshold: f32,
    /// The smallest passing output code (`T::MAX + 1` if none passes).
    code_bound: i32,
    /// The smallest input whose output passes (`T::MAX + 1` if none).
    input_bound: i32,
    /// Every input at or above `input_bound` passes (the output does not
    /// decrease from there): candidates need no check.
    monotone: bool,
    /// int8/uint8: the output of every input, by the input's byte.
    table: [T; 256],
    /// `table` as bytes, for the NEON kernels (which see int8 and uint8
    /// alike as bytes).
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    table_bytes: [u8; 256],
    backend: Backend,
}

impl<T: QuantElem> ThresholdedLogistic<T> {
    /// Validates as [`Logistic::new`] does, and the threshold (a probability
    /// in `[0, 1]`; [`Error::OutOfDomain`](crate::Error::OutOfDomain)
    /// otherwise, NaN included), and prepares the bound.
    pub fn new(
        input: QuantParams,
        output: QuantParams,
        method: Method,
        threshold: f32,
    ) -> Result<Self> {
        let op = Logistic::<T>::new(input, output, method)?;
        let threshold = check_threshold(OP, threshold)?;
        let code_bound = code_bound::<T>(output, threshold);
        let mut table = [T::default(); 256];
        let mut input_bound = T::MAX + 1;
        let mut monotone = true;
        // Every input in order, in chunks through the reference kernel.
        let mut x = T::MIN;
        while x <= T::MAX {
            let n = GATHER.min((T::MAX - x + 1) as usize);
            let mut xs = [T::default(); GATHER];
            let mut ys = [T::default(); GATHER];
            for (k, v) in xs[..n].iter_mut().enumerate() {
                *v = T::from_i32(x + k as i32);
            }
            op.run_with(Backend::Scalar, &xs[..n], &mut ys[..n])?;
            for (k, &y) in ys[..n].iter().enumerate() {
                let xk = x + k as i32;
                let passes = y.to_i32() >= code_bound;
                if passes && input_bound > T::MAX {
                    input_bound = xk;
                }
                if !passes && input_bound <= T::MAX {
                    monotone = false;
                }
                if T::MAX - T::MIN == 255 {
                    table[(xk as u8) as usize] = y;
                }
            }
            x += n as i32;
        }
        let table_bytes = table.map(|y| y.to_i32() as u8);
        Ok(ThresholdedLogistic {
            op,
            threshold,
            code_bound,
            input_bound,
            monotone,
            table,
            table_bytes,
            backend: Backend::best(),
        })
    }

    /// The wrapped op (what `run` equals when followed by the filter).
    pub fn logistic(&self) -> &Logistic<T> {
        &self.op
    }

    /// The threshold `new()` was given.
    pub fn threshold(&self) -> f32 {
        self.threshold
    }

    /// The smallest output code that passes (`T::MAX + 1` if none does).
    pub fn code_bound(&self) -> i32 {
        self.code_bound
    }

    /// The smallest input whose output passes (`T::MAX + 1` if none does):
    /// what `run` compares each input against.
    pub fn input_bound(&self) -> i32 {
        self.input_bound
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Writes the hits of `input` (index and output of every element whose
    /// output passes, in input order) into `hits` and returns their number,
    /// with the best backend. A buffer too small is
    /// [`Error::Capacity`](crate::Error::Capacity) (it then holds the first
    /// hits); inputs longer than 2^32 are an error (indices are `u32`).
    pub fn run(&self, input: &[T], hits: &mut [Hit<T>]) -> Result<usize> {
        self.run_with(self.backend, input, hits)
    }

    /// [`run`](Self::run) on the given backend (an error if it is not
    /// available here). Every backend gives the same hits.
    pub fn run_with(&self, backend: Backend, input: &[T], hits: &mut [Hit<T>]) -> Result<usize> {
        check_index_range(OP, input.len())?;
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        if backend == Backend::Neon && self.monotone && T::MAX - T::MIN == 255 {
            return self.run_neon_table(input, hits);
        }
        let mut sink = Sink::new(hits);
        if T::MAX - T::MIN == 255 {
            let table = &self.table;
            let code_bound = self.code_bound;
            if self.monotone {
                scan(backend, input, self.input_bound, |i, x| {
                    let value = table[(x.to_i32() as u8) as usize];
                    sink.push(Hit {
                        index: i as u32,
                        value,
                    })
                })?;
            } else {
                scan(backend, input, self.input_bound, |i, x| {
                    let value = table[(x.to_i32() as u8) as usize];
                    if value.to_i32() >= code_bound {
                        sink.push(Hit {
                            index: i as u32,
                            value,
                        })
                    }
                })?;
            }
        } else {
            self.run_gathered(backend, input, &mut sink)?;
        }
        sink.finish(OP)
    }

    /// 8-bit, NEON, every candidate passing: the fused scan-and-write
    /// kernel (`neon::logistic_hits_i8`/`_u8`; the same hits as the general path).
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    fn run_neon_table(&self, input: &[T], hits: &mut [Hit<T>]) -> Result<usize> {
        use crate::elem::view;
        let bound = self.input_bound;
        let count = if bound > T::MAX {
            0
        } else if bound <= T::MIN {
            // Everything passes: no comparison needed.
            let mut sink = Sink::new(&mut *hits);
            for (i, &x) in input.iter().enumerate() {
                sink.push(Hit {
                    index: i as u32,
                    value: self.table[(x.to_i32() as u8) as usize],
                });
            }
            return sink.finish(OP);
        } else {
            let Some((bytes, _)) = view(input, &mut []).bytes() else {
                return Err(crate::checks::not_int16());
            };
            debug_assert!(core::mem::size_of::<Hit<T>>() == core::mem::size_of::<Hit<u8>>());
            // SAFETY: T is int8 or uint8 here (256 values): one byte like
            // u8, so the repr(C) Hit<T> and Hit<u8> have one layout, and
            // every byte the kernel writes as a value is a valid T (the
            // byte of the T it was taken from). The slice is `hits`
            // itself, for as long as this borrow.
            let out = unsafe {
                core::slice::from_raw_parts_mut(hits.as_mut_ptr().cast::<Hit<u8>>(), hits.len())
            };
            if T::MIN < 0 {
                super::neon::logistic_hits_i8(bytes, bound as i8 as u8, &self.table_bytes, out)
            } else {
                super::neon::logistic_hits_u8(bytes, bound as u8, &self.table_bytes, out)
            }
        };
        if count <= hits.len() {
            Ok(count)
        } else {
            Err(crate::Error::Capacity {
                op: OP,
                capacity: hits.len(),
                needed: count,
            })
        }
    }

    /// The candidates gathered and run through the wrapped op (int16).
    fn run_gathered(&self, backend: Backend, input: &[T], sink: &mut Sink<Hit<T>>) -> Result<()> {
        let mut index = [0u32; GATHER];
        let mut xs = [T::default(); GATHER];
        let mut ys = [T::default(); GATHER];
        let mut n = 0;
        let mut result = Ok(());
        let flush = |index: &[u32], xs: &[T], ys: &mut [T], sink: &mut Sink<Hit<T>>| {
            self.op.run_with(backend, xs, ys)?;
            for (&i, &value) in index.iter().zip(ys.iter()) {
                if value.to_i32() >= self.code_bound {
                    sink.push(Hit { index: i, value });
                }
            }
            Result::Ok(())
        };
        scan(backend, input, self.input_bound, |i, x| {
            index[n] = i as u32;
            xs[n] = x;
            n += 1;
            if n == GATHER {
                if result.is_ok() {
                    result = flush(&index, &xs, &mut ys, sink);
                }
                n = 0;
            }
        })?;
        result?;
        flush(&index[..n], &xs[..n], &mut ys[..n], sink)
    }

    /// With the `alloc` feature: the hits as a vector (sized by a first
    /// pass that counts them).
    #[cfg(feature = "alloc")]
    pub fn run_to_vec(&self, input: &[T]) -> Result<alloc::vec::Vec<Hit<T>>> {
        let needed = match self.run(input, &mut []) {
            Ok(n) => n,
            Err(crate::Error::Capacity { needed, .. }) => needed,
            Err(e) => return Err(e),
        };
        let mut hits = alloc::vec![Hit::default(); needed];
        let n = self.run(input, &mut hits)?;
        hits.truncate(n);
        Ok(hits)
    }
}
