//! `cargo xtask capi`: the check of `capi/examples/ops.c`. It prints its
//! parameters and inputs and the output of every call; here the same calls
//! run through the Rust library on the printed inputs (the best backend of
//! the host, so an aarch64 run under qemu also checks that NEON gives the
//! scalar bits), and every output line must match to the bit.

use std::collections::HashMap;

use qneon::f32::{self as qf32, SoftmaxVariant};
use qneon::loss::{target_log_probs_with, CrossEntropy, LogSumExp, Reduction};
use qneon::{
    Add, Backend, FusedActivation, Gemm, MatMul, Mul, NoNorm, Operand, QuantParams, Requantization,
    Rounding, Sub,
};

use crate::util::{bail, Result};

/// The example's `name: values` lines.
struct Lines<'a>(HashMap<&'a str, &'a str>);

impl<'a> Lines<'a> {
    fn new(stdout: &'a str) -> Lines<'a> {
        Lines(stdout.lines().filter_map(|l| l.split_once(':')).collect())
    }

    fn words(&self, name: &str) -> Result<Vec<&'a str>> {
        match self.0.get(name) {
            Some(rest) => Ok(rest.split_whitespace().collect()),
            None => bail!("no `{name}:` line in the example's output"),
        }
    }

    fn i8s(&self, name: &str) -> Result<Vec<i8>> {
        self.hex(name, |v| v as u8 as i8)
    }

    fn i32s(&self, name: &str) -> Result<Vec<i32>> {
        self.hex(name, |v| v as u32 as i32)
    }

    fn i64s(&self, name: &str) -> Result<Vec<i64>> {
        self.hex(name, |v| v as i64)
    }

    fn f32s(&self, name: &str) -> Result<Vec<f32>> {
        self.hex(name, |v| f32::from_bits(v as u32))
    }

    fn hex<T>(&self, name: &str, f: impl Fn(u64) -> T) -> Result<Vec<T>> {
        self.words(name)?
            .iter()
            .map(|h| Ok(f(u64::from_str_radix(h, 16)?)))
            .collect()
    }

    fn quant(&self, name: &str) -> Result<QuantParams> {
        let w = self.words(name)?;
        let [scale, zero_point] = w[..] else {
            bail!("{name}: expected a scale and a zero point");
        };
        Ok(QuantParams::new(scale.parse()?, zero_point.parse()?))
    }
}

/// Compares one output line with the library's values, bit for bit.
fn same<T: Copy + PartialEq + std::fmt::Debug>(name: &str, got: &[T], want: &[T]) -> Result {
    if got.len() != want.len() {
        bail!(
            "{name}: the C output has {} values, the library's {}",
            got.len(),
            want.len()
        );
    }
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        bail!(
            "{name}: C output differs from the Rust library's at {i}: {:?} against {:?}",
            got[i],
            want[i]
        );
    }
    Ok(())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Checks every output of the example; returns how many lines matched.
pub fn compare(stdout: &str) -> Result<usize> {
    let l = Lines::new(stdout);
    let b = Backend::best();
    let mut n = 0;
    let mut i8_line = |name: &str, want: &[i8]| -> Result {
        same(name, &l.i8s(name)?, want)?;
        n += 1;
        Ok(())
    };

    // Add, sub, mul, and the broadcast forms.
    let (qa, qb) = (l.quant("binary.a")?, l.quant("binary.b")?);
    let (q_add, q_mul) = (l.quant("binary.add_out")?, l.quant("binary.mul_out")?);
    let (x, y) = (l.i8s("binary.x")?, l.i8s("binary.y")?);
    let (row, scalar) = (l.i8s("binary.row")?, l.i8s("binary.scalar")?);
    let mut out = vec![0i8; x.len()];
    let add = Add::new(qa, qb, q_add, FusedActivation::None, Rounding::Single)?;
    add.run_with(b, &x, &y, &mut out)?;
    i8_line("add", &out)?;
    let sub = Sub::new(qa, qb, q_add, FusedActivation::Relu, Rounding::Double)?;
    sub.run_with(b, &x, &y, &mut out)?;
    i8_line("sub", &out)?;
    let mul = Mul::new(qa, qb, q_mul, FusedActivation::Relu6, Rounding::Single)?;
    mul.run_with(b, &x, &y, &mut out)?;
    i8_line("mul", &out)?;
    add.run_operands(b, Operand::Slice(&x), Operand::Row(&row), &mut out)?;
    i8_line("add.row", &out)?;
    mul.run_operands(b, Operand::Scalar(scalar[0]), Operand::Slice(&y), &mut out)?;
    i8_line("mul.scalar", &out)?;

    // The head transposes, there and back.
    let shape: Vec<usize> = l
        .words("heads.shape")?
        .iter()
        .map(|w| w.parse())
        .collect::<std::result::Result<_, _>>()?;
    let [seq, heads, head_dim] = shape[..] else {
        bail!("heads.shape: expected seq heads head_dim");
    };
    let x = l.i8s("heads.x")?;
    let mut split = vec![0i8; x.len()];
    qneon::split_heads(&x, &mut split, seq, heads, head_dim)?;
    i8_line("heads.split", &split)?;
    let mut merged = vec![0i8; x.len()];
    qneon::merge_heads(&split, &mut merged, seq, heads, head_dim)?;
    i8_line("heads.merge", &merged)?;

    // NoNorm, from quantized and from real parameters.
    let (qi, qo) = (l.quant("no_norm.input")?, l.quant("no_norm.output")?);
    let x = l.i8s("no_norm.x")?;
    let mut out = vec![0i8; x.len()];
    let (gamma, scales, beta) = (
        l.i8s("no_norm.gamma")?,
        l.f32s("no_norm.scales")?,
        l.i32s("no_norm.beta")?,
    );
    NoNorm::new(&gamma, &scales, &beta, qi, qo, FusedActivation::None)?
        .run_with(b, &x, &mut out)?;
    i8_line("no_norm", &out)?;
    let (gamma_f, beta_f) = (l.f32s("no_norm.gamma_f")?, l.f32s("no_norm.beta_f")?);
    NoNorm::from_f32(&gamma_f, &beta_f, qi, qo, FusedActivation::Relu)?
        .run_with(b, &x, &mut out)?;
    i8_line("no_norm.f32", &out)?;

    // GEMM: with a bias, in f64 without one, then with replaced weights.
    let (qi, qo) = (l.quant("gemm.input")?, l.quant("gemm.output")?);
    let shape = l.words("gemm.shape")?;
    let [m, gn, k] = shape[..] else {
        bail!("gemm.shape: expected m n k");
    };
    let (m, gn, k): (usize, usize, usize) = (m.parse()?, gn.parse()?, k.parse()?);
    let (w, w2t, x) = (l.i8s("gemm.w")?, l.i8s("gemm.w2t")?, l.i8s("gemm.x")?);
    let (bias, scales) = (l.i32s("gemm.bias")?, l.f32s("gemm.scales")?);
    let mut out = vec![0i8; m * gn];
    let mut gemm = Gemm::new(
        &w,
        gn,
        k,
        Some(&bias),
        qi,
        &scales,
        qo,
        FusedActivation::None,
        Rounding::Single,
    )?;
    gemm.run_with(b, &x, &mut out, m)?;
    i8_line("gemm", &out)?;
    Gemm::new(
        &w,
        gn,
        k,
        None,
        qi,
        &scales,
        qo,
        FusedActivation::Relu,
        Requantization::RealF64,
    )?
    .run_with(b, &x, &mut out, m)?;
    i8_line("gemm.real", &out)?;
    gemm.set_weights_transposed(&w2t)?;
    gemm.run_with(b, &x, &mut out, m)?;
    i8_line("gemm.t", &out)?;

    // Matmul, both adjoint forms.
    let (lhs, rhs) = (l.i8s("matmul.lhs")?, l.i8s("matmul.rhs")?);
    let (ql, qr) = (l.quant("matmul.lhs_q")?, l.quant("matmul.rhs_q")?);
    let qo = l.quant("matmul.output_q")?;
    let shape = l.words("matmul.shape")?;
    let [m, mn, k] = shape[..] else {
        bail!("matmul.shape: expected m n k");
    };
    let (m, mn, k): (usize, usize, usize) = (m.parse()?, mn.parse()?, k.parse()?);
    for (name, adj_x, adj_y, rounding) in [
        ("matmul", false, true, Rounding::Double),
        ("matmul.adj_x", true, false, Rounding::Single),
    ] {
        let op = MatMul::new(m, mn, k, adj_x, adj_y, ql, qr, qo, rounding)?;
        let mut out = vec![0i8; m * mn];
        let mut sb = vec![0i8; op.scratch_bytes()];
        let mut sw = vec![0i32; op.scratch_words()];
        op.run_with(b, &lhs, &rhs, &mut out, &mut sb, &mut sw)?;
        i8_line(name, &out)?;
    }

    // The float kernels.
    let mut f32_line = |name: &str, want: &[f32]| -> Result {
        same(name, &bits(&l.f32s(name)?), &bits(want))?;
        n += 1;
        Ok(())
    };
    let (x, dy) = (l.f32s("f32.x")?, l.f32s("f32.dy")?);
    let row = 19;
    let mut out = vec![0f32; x.len()];
    qf32::softmax_variant(SoftmaxVariant::TwoPass, b, &x, &mut out, row)?;
    f32_line("f32.softmax", &out)?;
    qf32::softmax_variant(SoftmaxVariant::Online, b, &x, &mut out, row)?;
    f32_line("f32.softmax_online", &out)?;
    qf32::log_softmax_with(b, &x, &mut out, row)?;
    f32_line("f32.log_softmax", &out)?;
    let mut y = vec![0f32; x.len()];
    qf32::sigmoid_with(b, &x, &mut y)?;
    f32_line("f32.logistic", &y)?;
    qf32::sigmoid_backward_with(b, &y, &dy, &mut out)?;
    f32_line("f32.logistic_backward", &out)?;
    qf32::tanh_with(b, &x, &mut out)?;
    f32_line("f32.tanh", &out)?;
    qf32::exp_into_with(b, &x, &mut out)?;
    f32_line("f32.exp", &out)?;

    // Cross-entropy: mean with weights and smoothing, none, NLL, target
    // log-probabilities.
    let (logits, weights) = (l.f32s("ce.logits")?, l.f32s("ce.weights")?);
    let (targets, classes) = (l.i64s("ce.targets")?, l.i64s("ce.classes")?);
    let c = weights.len();
    let mean = CrossEntropy::new(c)?
        .weights(&weights)?
        .label_smoothing(0.125)?
        .backend(b)?;
    let mut loss = [0f32];
    let mut saved = vec![LogSumExp::default(); targets.len()];
    mean.forward(&logits, &targets, 1, &mut loss, Some(&mut saved))?;
    f32_line("ce.loss", &loss)?;
    let got = l.words("ce.saved")?;
    let want: Vec<String> = saved
        .iter()
        .zip(&targets)
        .filter(|(_, &t)| t != -100)
        .flat_map(|(s, _)| {
            [
                format!("{:016x}", s.ln_sum.to_bits()),
                format!("{:08x}", s.max.to_bits()),
            ]
        })
        .collect();
    same(
        "ce.saved",
        &got,
        &want.iter().map(String::as_str).collect::<Vec<_>>(),
    )?;
    let saved_lines = 1;
    let mut grad = vec![0f32; logits.len()];
    mean.backward(&logits, &targets, 1, &saved, &[1.0], &mut grad)?;
    f32_line("ce.grad", &grad)?;
    let mut per = vec![0f32; targets.len()];
    CrossEntropy::new(c)?
        .reduction(Reduction::None)
        .backend(b)?
        .forward(&logits, &targets, 1, &mut per, None)?;
    f32_line("ce.none", &per)?;
    let mut log_probs = vec![0f32; logits.len()];
    qf32::log_softmax_with(b, &logits, &mut log_probs, c)?;
    mean.nll(&log_probs, &targets, 1, &mut loss)?;
    f32_line("ce.nll", &loss)?;
    target_log_probs_with(b, &logits, c, &classes, 1, &mut per)?;
    f32_line("ce.target_log_probs", &per)?;
    let (lq, qlogits) = (l.quant("ce.q_input")?, l.i8s("ce.q_logits")?);
    mean.quantized::<i8>(lq)?
        .forward(&qlogits, &targets, 1, &mut loss)?;
    f32_line("ce.quantized", &loss)?;
    Ok(n + saved_lines)
}
