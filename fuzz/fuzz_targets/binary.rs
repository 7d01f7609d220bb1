//! int8 `Add`, `Sub` and `Mul` in both roundings with every fused
//! activation and every `Operand` form (slice, scalar, repeated row), every
//! backend, through `run` and `run_operands`.
//!
//! When `new` and the run succeed, every output element equals the module
//! documentation's arithmetic computed here from the quantization
//! parameters with the public `Rounding` reference (and the op's own
//! `params().element`), and lies in the fused activation's range. Operands
//! of the wrong length must be errors.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::{Add, Backend, FusedActivation, Mul, Operand, QuantParams, Rounding, Sub};
use qneon_fuzz::*;

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Add,
    Sub,
    Mul,
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum Activation {
    None,
    Relu,
    Relu6,
}

/// One operand's form.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Form {
    /// A slice as long as the output plus `delta` (an error unless 0).
    Slice {
        delta: Option<i8>,
    },
    Scalar(i8),
    /// A row of `len % 17` values (an error if 0 or not dividing the output).
    Row {
        len: u8,
    },
}

#[derive(Arbitrary, Debug)]
struct Case {
    kind: Kind,
    a: Quant,
    b: Quant,
    output: Quant,
    activation: Activation,
    rounding: RoundingChoice,
    form_a: Form,
    form_b: Form,
    output_len: u8,
    data: Vec<i8>,
}

/// Either op behind one interface.
enum Op {
    Add(Add),
    Sub(Sub),
    Mul(Mul),
}

impl Op {
    fn run_operands(
        &self,
        backend: Backend,
        a: Operand<'_>,
        b: Operand<'_>,
        out: &mut [i8],
    ) -> qneon::Result<()> {
        match self {
            Op::Add(op) => op.run_operands(backend, a, b, out),
            Op::Sub(op) => op.run_operands(backend, a, b, out),
            Op::Mul(op) => op.run_operands(backend, a, b, out),
        }
    }

    fn run(&self, a: &[i8], b: &[i8], out: &mut [i8]) -> qneon::Result<()> {
        match self {
            Op::Add(op) => op.run(a, b, out),
            Op::Sub(op) => op.run(a, b, out),
            Op::Mul(op) => op.run(a, b, out),
        }
    }

    fn element(&self, x: i8, y: i8) -> i8 {
        match self {
            Op::Add(op) => op.params().element(x, y),
            Op::Sub(op) => op.params().element(x, y),
            Op::Mul(op) => op.params().element(x, y),
        }
    }
}

fuzz_target!(|case: Case| check(&case));

/// The operand's values: a slice, a scalar or a row, from `data` at `offset`.
enum Values {
    Slice(Vec<i8>),
    Scalar(i8),
    Row(Vec<i8>),
}

impl Values {
    fn new(form: Form, n: usize, data: &[i8], offset: usize) -> Values {
        let value = |i: usize| {
            if data.is_empty() {
                0
            } else {
                data[(i + offset) % data.len()]
            }
        };
        match form {
            Form::Slice { delta } => {
                let len = (n as isize + delta.unwrap_or(0) as isize).max(0) as usize;
                Values::Slice((0..len).map(value).collect())
            }
            Form::Scalar(v) => Values::Scalar(v),
            Form::Row { len } => Values::Row((0..len as usize % 17).map(value).collect()),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Values::Slice(_) => "slice",
            Values::Scalar(_) => "scalar",
            Values::Row(_) => "row",
        }
    }

    fn operand(&self) -> Operand<'_> {
        match self {
            Values::Slice(s) => Operand::Slice(s),
            Values::Scalar(v) => Operand::Scalar(*v),
            Values::Row(r) => Operand::Row(r),
        }
    }

    fn fits(&self, n: usize) -> bool {
        match self {
            Values::Slice(s) => s.len() == n,
            Values::Scalar(_) => true,
            Values::Row(r) => !r.is_empty() && n.is_multiple_of(r.len()),
        }
    }

    /// Element `i` along the output.
    fn at(&self, i: usize) -> i8 {
        match self {
            Values::Slice(s) => s[i],
            Values::Scalar(v) => *v,
            Values::Row(r) => r[i % r.len()],
        }
    }
}

/// The documented arithmetic of each op, from the quantization parameters.
fn reference(
    kind: Kind,
    qa: QuantParams,
    qb: QuantParams,
    qo: QuantParams,
    rounding: Rounding,
    range: (i32, i32),
) -> impl Fn(i8, i8) -> i8 {
    let quantized = |real: f64| {
        rounding
            .quantize_multiplier(real)
            .expect("a valid multiplier")
    };
    // ADD and SUB: the doubled maximum and the output's denominator
    // `2^20 scale_out` in f64, the quotients in f64. TFLite forms both
    // products in f32, where they are exact unless they overflow (a scale
    // above f32::MAX / 2, an output scale above 2^108): there TFLite's
    // multiplier degenerates (an infinite denominator gives an output
    // multiplier of 0, every output the zero point) and qneon documents
    // that it takes the exact f64 value instead. MUL: the scales' product
    // and quotient in f32 (TFLite's arithmetic).
    let multipliers = match kind {
        Kind::Add | Kind::Sub => {
            let twice_max = 2.0 * qa.scale.max(qb.scale) as f64;
            [
                quantized(qa.scale as f64 / twice_max),
                quantized(qb.scale as f64 / twice_max),
                quantized(twice_max / ((1u32 << 20) as f64 * qo.scale as f64)),
            ]
        }
        Kind::Mul => {
            // Where TFLite's f32 product and quotient overflow or lose the
            // value in subnormals (more than two f32 roundings away from
            // the exact quotient), qneon documents the exact f64 value.
            let tflite = (qa.scale * qb.scale / qo.scale) as f64;
            let exact = qa.scale as f64 * qb.scale as f64 / qo.scale as f64;
            let real = if (tflite - exact).abs() <= exact * 2f64.powi(-22) {
                tflite
            } else {
                exact
            };
            [quantized(real); 3]
        }
    };
    move |x, y| {
        let (x, y) = (x as i32 - qa.zero_point, y as i32 - qb.zero_point);
        let [m_a, m_b, m_out] = multipliers;
        let r = match kind {
            Kind::Add | Kind::Sub => {
                let sa = rounding.multiply(x << 20, m_a);
                let sb = rounding.multiply(y << 20, m_b);
                let s = if kind == Kind::Sub { sa - sb } else { sa + sb };
                rounding.multiply(s, m_out)
            }
            Kind::Mul => rounding.multiply(x * y, m_out),
        };
        (r as i64 + qo.zero_point as i64).clamp(range.0 as i64, range.1 as i64) as i8
    }
}

fn check(case: &Case) {
    let (qa, qb, qo) = (
        case.a.get::<i8>(),
        case.b.get::<i8>(),
        case.output.get::<i8>(),
    );
    let activation = match case.activation {
        Activation::None => FusedActivation::None,
        Activation::Relu => FusedActivation::Relu,
        Activation::Relu6 => FusedActivation::Relu6,
    };
    let rounding = case.rounding.get();
    let made = match case.kind {
        Kind::Add => Add::new(qa, qb, qo, activation, rounding).map(Op::Add),
        Kind::Sub => Sub::new(qa, qb, qo, activation, rounding).map(Op::Sub),
        Kind::Mul => Mul::new(qa, qb, qo, activation, rounding).map(Op::Mul),
    };
    let Ok(op) = made else {
        return;
    };
    let n = case.output_len as usize;
    let a = Values::new(case.form_a, n, &case.data, 0);
    let b = Values::new(case.form_b, n, &case.data, 7);
    let rows_alike = match (&a, &b) {
        (Values::Row(x), Values::Row(y)) => x.len() == y.len(),
        _ => true,
    };
    let valid = a.fits(n) && b.fits(n) && rows_alike;
    let (result, y) = on_every_backend(
        n,
        0x55i8,
        |p, q| p == q,
        |backend, out| {
            op.run_operands(
                backend.unwrap_or(Backend::best()),
                a.operand(),
                b.operand(),
                out,
            )
        },
    );
    assert_eq!(
        result.is_ok(),
        valid,
        "{:?} with operands {:?} / {:?} on {n} outputs: {result:?}",
        case.kind,
        case.form_a,
        case.form_b
    );
    if result.is_err() {
        return;
    }
    let range = activation.range_i8(qo);
    reached(|| format!("{:?} {rounding:?} {} {}", case.kind, a.name(), b.name()));
    let want = reference(case.kind, qa, qb, qo, rounding, range);
    let what = format!(
        "{:?} {rounding:?} {activation:?} {qa:?} {qb:?} -> {qo:?}",
        case.kind
    );
    for (i, &got) in y.iter().enumerate() {
        let (x, z) = (a.at(i), b.at(i));
        assert!(
            (range.0..=range.1).contains(&(got as i32)),
            "{what}: element {i} = {got} outside the activation range {range:?}"
        );
        assert_eq!(
            got,
            op.element(x, z),
            "{what}: element {i} ({x}, {z}) differs from params().element"
        );
        assert_eq!(
            got,
            want(x, z),
            "{what}: element {i} ({x}, {z}) differs from the documented arithmetic"
        );
    }
    // The slice-only entry point: both operands expanded.
    let (ea, eb): (Vec<i8>, Vec<i8>) = (0..n).map(|i| (a.at(i), b.at(i))).unzip();
    let mut out = vec![0x55i8; n];
    op.run(&ea, &eb, &mut out)
        .expect("expanded operands refused");
    assert_eq!(
        out, y,
        "{what}: run on expanded operands differs from run_operands"
    );
}
