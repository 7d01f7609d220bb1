//! The integer SVDF with int16 state (LiteRT's, TFLite Micro's): a handle
//! made from the sizes and quantizations; each `run` is one time step that
//! updates the caller's state buffer in place, so the caller owns the state
//! across calls and `qneon_svdf_i16_reset_state` starts a new sequence.

use qneon::{Svdf, SvdfQuantization, SvdfShape, SvdfWeights};

use crate::choices;
use crate::entry::{
    self, create, destroy, disjoint, guard, handle, input, output, product, QneonQuantParams,
    QneonStatus,
};

/// A prepared SVDF with int16 state (qneon's `Svdf<i16>`).
pub struct QneonSvdfI16(Svdf<i16>);

/// Prepares an SVDF: `batch` rows of `input_size` int8 features, `filters`
/// filters (a multiple of `rank`) remembering `memory` steps each, int16
/// state and time weights (scale `weights_time_scale`), int8 feature
/// weights (scale `weights_feature_scale`), `rounding` a `QneonRounding`.
/// Writes a new handle to `*out`; free it with `qneon_svdf_i16_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn qneon_svdf_i16_create(
    batch: usize,
    input_size: usize,
    filters: usize,
    memory: usize,
    rank: usize,
    input_q: QneonQuantParams,
    weights_feature_scale: f32,
    weights_time_scale: f32,
    state_q: QneonQuantParams,
    output_q: QneonQuantParams,
    rounding: u32,
    out: *mut *mut QneonSvdfI16,
) -> QneonStatus {
    let make = || {
        let shape = SvdfShape {
            batch,
            input_size,
            filters,
            memory,
            rank,
        };
        let q = SvdfQuantization {
            input: input_q.into(),
            weights_feature_scale,
            weights_time_scale,
            state: state_q.into(),
            output: output_q.into(),
        };
        Ok(QneonSvdfI16(Svdf::new(
            shape,
            q,
            choices::rounding(rounding)?,
        )?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// Elements of the state buffer `run` updates: `batch * filters * memory`.
///
/// # Safety
/// `op` must be null (0 is returned) or a live handle.
#[no_mangle]
pub unsafe extern "C" fn qneon_svdf_i16_state_len(op: *const QneonSvdfI16) -> usize {
    // SAFETY: forwarded from the caller.
    match unsafe { handle(op) } {
        Ok(op) => {
            let s = op.0.shape();
            s.batch.saturating_mul(s.filters).saturating_mul(s.memory)
        }
        Err(_) => 0,
    }
}

/// One time step on `backend` (a `QneonBackend`): shifts `state`
/// (`qneon_svdf_i16_state_len` elements, updated in place), writes its
/// newest column from `input` (`batch * input_size`) and writes `output`
/// (`batch * filters / rank`). Weights: `weights_feature`
/// (`filters * input_size`), `weights_time` (`filters * memory`), `bias`
/// (`filters / rank` int32, or null for none).
///
/// # Safety
/// `op` must be null or a live handle; each pointer null or valid for its
/// length during the call (`state` and `output` writable).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn qneon_svdf_i16_run(
    op: *const QneonSvdfI16,
    input_data: *const i8,
    weights_feature: *const i8,
    weights_time: *const i16,
    bias: *const i32,
    state: *mut i16,
    output_data: *mut i8,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let s = op.0.shape();
        let units = s.filters / s.rank;
        let x = input(
            "input",
            input_data,
            product("input", s.batch, s.input_size)?,
        )?;
        let wf = input(
            "weights_feature",
            weights_feature,
            product("weights_feature", s.filters, s.input_size)?,
        )?;
        let wt = input(
            "weights_time",
            weights_time,
            product("weights_time", s.filters, s.memory)?,
        )?;
        let bias = if bias.is_null() {
            None
        } else {
            Some(input("bias", bias, units)?)
        };
        let state_len = product("state", product("state", s.batch, s.filters)?, s.memory)?;
        let st = output("state", state, state_len)?;
        let y = output("output", output_data, product("output", s.batch, units)?)?;
        let mut spans = vec![x.span, wf.span, wt.span, st.span, y.span];
        spans.extend(bias.as_ref().map(|b| b.span));
        disjoint(&spans)?;
        let backend = entry::backend(backend)?;
        // SAFETY: checked (null, alignment, size, overlap); valid for the
        // call (the caller).
        let (x, wf, wt, st, y) =
            unsafe { (x.slice(), wf.slice(), wt.slice(), st.slice(), y.slice()) };
        // SAFETY: as above.
        let bias = bias.map(|b| unsafe { b.slice() });
        let weights = SvdfWeights {
            feature: wf,
            time: wt,
            bias,
        };
        Ok(op.0.run_with(backend, x, weights, st, y)?)
    })
}

/// Resets a state buffer of `len` elements (`qneon_svdf_i16_state_len`) to
/// the state's zero point: the start of a new sequence, as TFLite's
/// `ResetVariableTensors`.
///
/// # Safety
/// `op` must be null or a live handle; `state` null or writable for `len`
/// elements during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_svdf_i16_reset_state(
    op: *const QneonSvdfI16,
    state: *mut i16,
    len: usize,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let s = op.0.shape();
        let expected = s.batch.saturating_mul(s.filters).saturating_mul(s.memory);
        if len != expected {
            return Err(crate::entry::Failure::new(
                QneonStatus::Length,
                format!("state of {len} elements; this SVDF's state has {expected}"),
            ));
        }
        let st = output("state", state, len)?;
        // SAFETY: checked; writable for the call (the caller).
        let st = unsafe { st.slice() };
        st.fill(op.0.state_zero_point() as i16);
        Ok(())
    })
}

/// Frees a handle made by `qneon_svdf_i16_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_svdf_i16_destroy(op: *mut QneonSvdfI16) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}
