//! qneon's side of the comparison: `qneon run` on the same model, inputs
//! and `-cpu` as LiteRT, counted the same way (R and 2R invokes under the
//! qemu-insn plugin), with its outputs checked against LiteRT's.
//!
//! * instructions per inference: `--softmax lut` (LiteRT's aarch64 builtin
//!   kernels' method), (count(2R) - count(R)) / R; per op type from the
//!   region markers `qneon run` places around every kernel, differenced the
//!   same way;
//! * `bit_exact.lut`: those outputs against the builtin resolver's bytes;
//! * `bit_exact.fixed`: a `--softmax fixed` run against the reference
//!   resolver's (`BUILTIN_REF`) bytes;
//! * `bit_exact.xnnpack`: a `--kernels xnnpack` run against the XNNPACK
//!   delegate's bytes (`None` where qneon refuses an op under that path);
//! * per op type, the MACs of its matrix products (from `qneon run`'s
//!   per-op work), to set instructions beside the `sdot` and `smmla`
//!   floors;
//! * the largest difference between the LUT outputs and XNNPACK's.
//!
//! A model qneon cannot load is an error naming what it cannot run, found
//! before anything is measured.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use qneon_runtime::npy::NpyArray;
use serde_json::Value;

use crate::plugin;
use crate::run::{Regions, RunnerReport};
use crate::util::{self, bail, Result};

/// Written into the reference resolver's folder when LiteRT's reference
/// kernels abort on the model (they do on some valid models).
pub const REF_ABORTED: &str = "aborted";

/// The binary (package `qneon-cli`).
pub const BIN: &str = "qneon";

/// What line `qneon inspect` ends with when every operator prepares.
const LOADS: &str = "qneon can run every operator";

/// Checks that qneon loads `model` (`qneon inspect` under qemu), or fails
/// with the operators it cannot run; returns the bytes of its arena plan
/// (every non-constant tensor and every op's scratch, placed by lifetime).
pub fn preflight(binary: &Path, cpu: &str, model: &Path) -> Result<u64> {
    let stdout = util::capture(
        Command::new("qemu-aarch64")
            .args(["-cpu", cpu])
            .arg(binary)
            .arg("inspect")
            .arg(model),
    )?;
    if stdout.lines().any(|l| l.starts_with(LOADS)) {
        return match arena_bytes(&stdout) {
            Some(bytes) => Ok(bytes),
            None => bail!("qneon inspect {}: no `arena plan:` line", model.display()),
        };
    }
    let problems: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("CANNOT RUN") || l.starts_with("qneon cannot run"))
        .collect();
    bail!(
        "qneon cannot load {}:\n  {}",
        model.display(),
        if problems.is_empty() {
            stdout.trim_end().to_string()
        } else {
            problems.join("\n  ")
        }
    )
}

/// The `N` of `qneon inspect`'s `arena plan: N bytes ...` line.
fn arena_bytes(inspect: &str) -> Option<u64> {
    inspect.lines().find_map(|l| {
        let rest = l.strip_prefix("arena plan: ")?;
        rest.split(' ').next()?.parse().ok()
    })
}

/// Everything one qneon measurement needs.
pub struct Job<'a> {
    pub binary: &'a Path,
    pub plugin: &'a Path,
    pub cpu: &'a str,
    pub model: &'a Path,
    pub reps: u64,
    /// The builtin resolver's folder: its `run.json` names the inputs (and
    /// the generated ones are there), its `output_<i>.npy` are the LUT
    /// reference.
    pub builtin_dir: &'a Path,
    /// The reference resolver's folder (the FixedPoint reference).
    pub ref_dir: &'a Path,
    /// The XNNPACK folder.
    pub xnnpack_dir: &'a Path,
    /// `target/compare/<model>/qneon/`.
    pub out_dir: &'a Path,
    /// The model has variable tensors: the R and 2R outputs are not
    /// compared, and the XNNPACK path invokes 2R times like LiteRT's
    /// XNNPACK run whose outputs it is compared with (the builtin and
    /// LUT sides both keep their 2R run; the reference and fixed sides
    /// both invoke once).
    pub stateful: bool,
}

/// qneon's results on one model.
#[derive(Debug, Clone, PartialEq)]
pub struct QneonResult {
    /// Guest instructions per inference, `--softmax lut`.
    pub per_inference: u64,
    /// Per op type, most first: (op, instructions, MACs) per inference.
    pub op_types: Vec<(String, u64, u64)>,
    /// LUT outputs == builtin resolver's bytes.
    pub bit_exact_lut: bool,
    /// FixedPoint outputs == reference resolver's bytes (`None`: LiteRT's
    /// reference kernels aborted on the model, so there is nothing to
    /// compare with).
    pub bit_exact_fixed: Option<bool>,
    /// `--kernels xnnpack` outputs == the XNNPACK delegate's bytes (`None`:
    /// qneon refuses the model under that path).
    pub bit_exact_xnnpack: Option<bool>,
    /// max |qneon LUT - XNNPACK| over every output element, in the
    /// outputs' own units (`None` if their dtypes or shapes differ).
    pub xnnpack_max_abs_diff: Option<f64>,
}

/// `--input NAME=FILE` specs of the inputs LiteRT used (from its run.json).
fn litert_inputs(dir: &Path) -> Result<Vec<String>> {
    let path = dir.join("run.json");
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let run: Value = serde_json::from_str(&text)?;
    let mut specs = Vec::new();
    for (position, input) in run["inputs"]
        .as_array()
        .ok_or_else(|| format!("{}: no `inputs`", path.display()))?
        .iter()
        .enumerate()
    {
        let file = input["file"]
            .as_str()
            .ok_or_else(|| format!("{}: input {position} without `file`", path.display()))?;
        // LiteRT and qneon both list inputs in the subgraph's order; the
        // name is used when it can be (it is checked), the position if the
        // name would not survive the split at `=`.
        let key = match input["name"].as_str() {
            Some(name) if !name.contains('=') && !name.is_empty() => name.to_string(),
            _ => position.to_string(),
        };
        specs.push(format!("{key}={}", dir.join(file).display()));
    }
    Ok(specs)
}

/// The model outputs a run left in `dir`: qneon's `<i>.npy` or LiteRT's
/// `output_<i>.npy`.
fn outputs(dir: &Path, litert: bool) -> Result<Vec<NpyArray>> {
    let mut arrays = Vec::new();
    loop {
        let i = arrays.len();
        let name = if litert {
            format!("output_{i}.npy")
        } else {
            format!("{i}.npy")
        };
        let path = dir.join(name);
        if !path.is_file() {
            break;
        }
        arrays.push(NpyArray::read(&path)?);
    }
    if arrays.is_empty() {
        bail!("no outputs in {}", dir.display());
    }
    Ok(arrays)
}

/// Same dtypes, shapes and bytes.
fn bit_exact(a: &[NpyArray], b: &[NpyArray]) -> bool {
    a == b
}

/// The elements of `array` as f64, for the numeric types.
fn values(array: &NpyArray) -> Option<Vec<f64>> {
    let d = &array.data;
    Some(match array.dtype.name() {
        "FLOAT32" => d
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        "INT8" => d.iter().map(|&b| f64::from(b as i8)).collect(),
        "UINT8" => d.iter().map(|&b| f64::from(b)).collect(),
        "INT16" => d
            .chunks_exact(2)
            .map(|c| f64::from(i16::from_le_bytes([c[0], c[1]])))
            .collect(),
        "INT32" => d
            .chunks_exact(4)
            .map(|c| f64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        _ => return None,
    })
}

/// max |a - b| over every element of every output, if they are comparable.
fn max_abs_diff(a: &[NpyArray], b: &[NpyArray]) -> Option<f64> {
    if a.len() != b.len() {
        return None;
    }
    let mut max = 0.0f64;
    for (x, y) in a.iter().zip(b) {
        if x.dtype != y.dtype || x.shape != y.shape {
            return None;
        }
        for (p, q) in values(x)?.iter().zip(values(y)?) {
            max = max.max((p - q).abs());
        }
    }
    Some(max)
}

/// `qemu-aarch64 -cpu CPU [plugin] qneon run MODEL --softmax S --reps N
/// --input ... --output-dir DIR` with the run's JSON in `json`.
fn qneon_run(
    job: &Job,
    inputs: &[String],
    (softmax, kernels): (&str, &str),
    reps: u64,
    dir: &Path,
    counted: Option<&Path>,
) -> Result<Command> {
    let mut cmd = match counted {
        Some(count_file) => plugin::qemu_command_on(job.cpu, job.plugin, count_file, job.binary)?,
        None => {
            let mut cmd = Command::new("qemu-aarch64");
            cmd.args(["-cpu", job.cpu]).arg(job.binary);
            cmd
        }
    };
    cmd.arg("run")
        .arg(job.model)
        .args([
            "--softmax",
            softmax,
            "--rounding",
            "single",
            "--kernels",
            kernels,
        ])
        .arg("--reps")
        .arg(reps.to_string())
        .arg("--output-dir")
        .arg(dir)
        .arg("--json")
        .arg(dir.join("run.json"));
    for spec in inputs {
        cmd.arg("--input").arg(spec);
    }
    Ok(cmd)
}

/// Per op type region counts of a counted run, and MACs per invoke.
type TypeCounts = (u64, BTreeMap<String, u64>, BTreeMap<String, u64>);

fn type_counts(dir: &Path, count_file: &Path) -> Result<TypeCounts> {
    let read = |p: &Path| fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let runner = RunnerReport::from_json(&serde_json::from_str(&read(&dir.join("run.json"))?)?)?;
    let regions = Regions::parse(&read(count_file)?)?;
    let mut by_type: BTreeMap<String, Vec<u16>> = BTreeMap::new();
    let mut macs: BTreeMap<String, u64> = BTreeMap::new();
    for op in &runner.ops {
        if op.unit == "MAC" {
            *macs.entry(op.op.clone()).or_default() += op.work;
        }
        let ids = by_type.entry(op.op.clone()).or_default();
        if !ids.contains(&op.region) {
            ids.push(op.region);
        }
    }
    let counts = by_type
        .into_iter()
        .map(|(op, ids)| (op, ids.iter().map(|&r| regions.get(r)).sum()))
        .collect();
    Ok((regions.total, counts, macs))
}

/// Measures qneon on `job.model` (see the module doc).
pub fn measure(job: &Job) -> Result<QneonResult> {
    if job.out_dir.exists() {
        fs::remove_dir_all(job.out_dir)?;
    }
    fs::create_dir_all(job.out_dir)?;
    let inputs = litert_inputs(job.builtin_dir)?;
    let mut totals = [0u64; 2];
    let mut types: [BTreeMap<String, u64>; 2] = Default::default();
    let mut macs = BTreeMap::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for k in 0..2 {
        let multiple = k as u64 + 1;
        let dir = job.out_dir.join(format!("R{multiple}"));
        let count_file = job.out_dir.join(format!("R{multiple}.count"));
        fs::create_dir_all(&dir)?;
        util::capture(&mut qneon_run(
            job,
            &inputs,
            ("lut", "optimized"),
            multiple * job.reps,
            &dir,
            Some(&count_file),
        )?)?;
        (totals[k], types[k], macs) = type_counts(&dir, &count_file)?;
        dirs.push(dir);
    }
    let lut = outputs(&dirs[1], false)?;
    if !job.stateful && !bit_exact(&outputs(&dirs[0], false)?, &lut) {
        bail!(
            "{}: qneon's outputs after R and 2R invokes differ",
            job.model.display()
        );
    }
    let [once, twice] = totals;
    if twice <= once {
        bail!("qneon: the 2R run counted {twice} instructions, the R run {once}");
    }
    let per = |a: u64, b: u64| (b.saturating_sub(a) as f64 / job.reps as f64).round() as u64;
    let mut op_types: Vec<(String, u64, u64)> = types[1]
        .iter()
        .map(|(op, &n)| {
            let insns = per(types[0].get(op).copied().unwrap_or(0), n);
            (op.clone(), insns, macs.get(op).copied().unwrap_or(0))
        })
        .collect();
    op_types.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));

    let fixed_dir = job.out_dir.join("fixed");
    fs::create_dir_all(&fixed_dir)?;
    util::capture(&mut qneon_run(
        job,
        &inputs,
        ("fixed", "reference"),
        1,
        &fixed_dir,
        None,
    )?)?;
    let fixed = outputs(&fixed_dir, false)?;

    // The XNNPACK path: uncounted, once; a model with an op whose XNNPACK
    // arithmetic is not built is refused (exit status 1) and gets no mark.
    let xnnpack_dir = job.out_dir.join("xnnpack");
    fs::create_dir_all(&xnnpack_dir)?;
    let bit_exact_xnnpack = match util::capture(&mut qneon_run(
        job,
        &inputs,
        ("lut", "xnnpack"),
        if job.stateful { 2 * job.reps } else { 1 },
        &xnnpack_dir,
        None,
    )?) {
        Ok(_) => Some(bit_exact(
            &outputs(&xnnpack_dir, false)?,
            &outputs(job.xnnpack_dir, true)?,
        )),
        Err(e) => {
            eprintln!("  {}: --kernels xnnpack refused: {e}", job.model.display());
            None
        }
    };

    Ok(QneonResult {
        per_inference: per(once, twice),
        op_types,
        bit_exact_lut: bit_exact(&lut, &outputs(job.builtin_dir, true)?),
        bit_exact_fixed: if job.ref_dir.join(REF_ABORTED).exists() {
            None
        } else {
            Some(bit_exact(&fixed, &outputs(job.ref_dir, true)?))
        },
        bit_exact_xnnpack,
        xnnpack_max_abs_diff: max_abs_diff(&lut, &outputs(job.xnnpack_dir, true)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use qneon_tflite::TensorType;

    fn array(dtype: TensorType, data: Vec<u8>) -> NpyArray {
        let size = match dtype {
            TensorType::Float32 => 4,
            _ => 1,
        };
        NpyArray {
            dtype,
            shape: vec![data.len() / size],
            data,
        }
    }

    #[test]
    fn reads_the_arena_plan() {
        let text = "ops...\narena plan: 64512 bytes for 31 buffers (sum ... 241028 bytes, 3.7x)\n";
        assert_eq!(arena_bytes(text), Some(64512));
        assert_eq!(arena_bytes("no plan here"), None);
    }

    #[test]
    fn compares_outputs() {
        let a = vec![array(TensorType::Int8, vec![1, 2, 0xFF])];
        let b = vec![array(TensorType::Int8, vec![1, 2, 3])];
        assert!(bit_exact(&a, &a));
        assert!(!bit_exact(&a, &b));
        // -1 against 3.
        assert_eq!(max_abs_diff(&a, &b), Some(4.0));
        let f = |x: [f32; 2]| {
            let data = x.iter().flat_map(|v| v.to_le_bytes()).collect();
            vec![array(TensorType::Float32, data)]
        };
        assert_eq!(max_abs_diff(&f([1.0, -2.5]), &f([1.0, 0.5])), Some(3.0));
        assert_eq!(max_abs_diff(&a, &f([1.0, 2.0])), None, "dtypes differ");
        assert_eq!(max_abs_diff(&a, &[]), None, "output counts differ");
    }

    #[test]
    fn reads_litert_inputs_and_outputs() {
        let dir = util::target_dir().join("xtask-test-compare-qneon");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("run.json"),
            r#"{"inputs": [{"name": "serving_default_x:0", "file": "input_0.npy"},
                           {"name": "a=b", "file": "given.npy"}]}"#,
        )
        .unwrap();
        let specs = litert_inputs(&dir).unwrap();
        assert_eq!(
            specs,
            [
                format!("serving_default_x:0={}", dir.join("input_0.npy").display()),
                format!("1={}", dir.join("given.npy").display()),
            ]
        );
        assert!(outputs(&dir, true).is_err(), "no outputs yet");
        let out = array(TensorType::Int8, vec![7, 8]);
        fs::write(dir.join("output_0.npy"), out.to_bytes().unwrap()).unwrap();
        fs::write(dir.join("0.npy"), out.to_bytes().unwrap()).unwrap();
        assert_eq!(outputs(&dir, true).unwrap(), outputs(&dir, false).unwrap());
        fs::remove_dir_all(&dir).unwrap();
    }
}
