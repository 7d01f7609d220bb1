//! `cargo xtask bench --mca`: llvm-mca cycles per element of the kernels'
//! inner loops.
//!
//! Method:
//! 1. The kernels are the functions `asm_tests/expect.toml` names, taken
//!    from the disassembly of the release aarch64 library (as `cargo xtask
//!    asm` does).
//! 2. A loop is a backward branch (`b`, `b.cond`, `cbz`, `cbnz`, `tbz`,
//!    `tbnz` to an address at or before it) and the instructions from its
//!    target to it. Inner loops are those that contain no other loop; of
//!    those, only loops with at least one vector (`v`/`q`) register and no
//!    call and at least 5 instructions are kept (scalar tail, fill and copy
//!    loops are not the kernel). Copies of a loop (as when a row loop is
//!    specialised: the same size, elements and estimates) are reported
//!    once; of a generic kernel instantiated several times (the Q31 kernels,
//!    once per integer-bit count), the first instantiation is analysed.
//! 3. Elements per iteration come from the memory traffic: the smaller of
//!    the bytes the loop loads and the bytes it stores (whichever is not
//!    zero; spills through `sp` or `x29` are not counted), divided by the
//!    kernel's element size. A loop that reads 16 int8 and writes 64 bytes
//!    of an int32 cache, or the reverse, is 16 elements.
//! 4. The body without its branches goes to `llvm-mca-16 -mtriple=aarch64
//!    -mcpu=CPU -iterations=200`; cycles per iteration are its total cycles
//!    divided by the iterations, then divided by elements per iteration.
//!    LLVM 16 schedules `cortex-a76` with its Cortex-A57 model, so that
//!    column is an A57-class estimate.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::asm::{self, Function};
use crate::pattern::Insn;
use crate::util::{self, bail, Result};

/// The CPUs modelled, as `-mcpu` names.
pub const CPUS: [&str; 3] = ["cortex-a55", "cortex-a76", "neoverse-n2"];
const MCA: &str = "llvm-mca-16";
const ITERATIONS: u32 = 200;
/// Shorter loops are tail, fill and copy loops, not a kernel's pass.
const MIN_LOOP: usize = 5;

/// One inner loop and its llvm-mca estimates.
#[derive(Debug, Clone, PartialEq)]
pub struct McaLoop {
    /// The kernel symbol from `asm_tests/expect.toml`.
    pub kernel: String,
    /// Offset of the loop's first instruction in its function.
    pub offset: String,
    /// Instructions in the body (branches included).
    pub instructions: usize,
    pub bytes_loaded: u64,
    pub bytes_stored: u64,
    pub elements_per_iteration: u64,
    /// (cpu, cycles per iteration).
    pub cycles_per_iteration: Vec<(String, f64)>,
}

impl McaLoop {
    /// Same kernel, size, elements and cycles: a copy of the same loop.
    fn same_estimate(&self, other: &McaLoop) -> bool {
        self.kernel == other.kernel
            && self.instructions == other.instructions
            && self.elements_per_iteration == other.elements_per_iteration
            && self.cycles_per_iteration == other.cycles_per_iteration
    }

    pub fn cycles_per_element(&self, cpu: &str) -> Option<f64> {
        let (_, c) = self
            .cycles_per_iteration
            .iter()
            .find(|(name, _)| name == cpu)?;
        Some(c / self.elements_per_iteration as f64)
    }
}

/// Runs the analysis over every kernel of `asm_tests/expect.toml`.
pub fn analyse() -> Result<Vec<McaLoop>> {
    if util::which(MCA).is_none() {
        bail!("{MCA} not found (try `cargo xtask setup --mca`)");
    }
    let kernels = asm::expected_kernels()?;
    let (_, functions) = asm::disassemble()?;
    let mut out = Vec::new();
    for kernel in &kernels {
        let named = kernel.element.as_deref().unwrap_or(&kernel.symbol);
        let Some(elem) = element_size(named) else {
            eprintln!(
                "mca: {}: element size unknown from the name (give `element` in {}), skipped",
                kernel.symbol,
                asm::EXPECT_FILE
            );
            continue;
        };
        let found = asm::find_functions(&kernel.symbol, &functions)
            .map_err(|e| format!("mca: {}: {e}", kernel.symbol))?;
        // Generic kernels (q31 for every integer-bit count) appear once per
        // instantiation; the first stands for all.
        let function = found[0];
        let mut seen: Vec<Vec<String>> = Vec::new();
        for body in inner_loops(function) {
            if body.len() < MIN_LOOP {
                continue;
            }
            // Copies of one loop that differ only in branch targets.
            let text: Vec<String> = body
                .iter()
                .map(|(_, i)| {
                    if is_branch(&i.mnemonic) {
                        i.mnemonic.clone()
                    } else {
                        i.to_string()
                    }
                })
                .collect();
            if seen.contains(&text) {
                continue;
            }
            seen.push(text);
            let (loaded, stored) = memory_bytes(body.iter().map(|(_, i)| i));
            let narrow = match (loaded, stored) {
                (0, 0) => continue,
                (0, s) => s,
                (l, 0) => l,
                (l, s) => l.min(s),
            };
            if narrow % elem != 0 {
                eprintln!(
                    "mca: {} loop at {}: {narrow} bytes is not whole elements, skipped",
                    kernel.symbol, body[0].0
                );
                continue;
            }
            let asm_text = mca_input(body.iter().map(|(_, i)| i));
            let mut cycles = Vec::new();
            for cpu in CPUS {
                let report = run_mca(cpu, &asm_text)
                    .map_err(|e| format!("mca: {} loop at {}: {e}", kernel.symbol, body[0].0))?;
                cycles.push((cpu.to_string(), parse_cycles_per_iteration(&report)?));
            }
            let found = McaLoop {
                kernel: kernel.symbol.clone(),
                offset: format!("0x{}", body[0].0),
                instructions: body.len(),
                bytes_loaded: loaded,
                bytes_stored: stored,
                elements_per_iteration: narrow / elem,
                cycles_per_iteration: cycles,
            };
            // A copy with other registers schedules the same: once is enough.
            if !out.iter().any(|l: &McaLoop| l.same_estimate(&found)) {
                out.push(found);
            }
        }
    }
    Ok(out)
}

/// Bytes per element of a kernel, from its name (`..._i8`, `..._q31`).
fn element_size(symbol: &str) -> Option<u64> {
    // A bare type name (an entry's `element`) reads as a kernel `_i8` etc.
    let name = symbol.rsplit("::").next()?;
    let name = &format!("_{}", name.trim_start_matches('_'));
    if name.contains("q31") || name.contains("f32") {
        Some(4)
    } else if name.ends_with("_i16") || name.ends_with("_u16") {
        Some(2)
    } else if name.ends_with("_i8") || name.ends_with("_u8") {
        Some(1)
    } else {
        None
    }
}

fn is_branch(mnemonic: &str) -> bool {
    mnemonic == "b"
        || mnemonic.starts_with("b.")
        || matches!(mnemonic, "cbz" | "cbnz" | "tbz" | "tbnz")
}

/// The target of a direct branch: the first hex word of the operands
/// (`cbnz x8, 2e4 <f+0x2e4>` gives 0x2e4).
fn branch_target(insn: &Insn) -> Option<u64> {
    insn.operands
        .split([',', ' '])
        .filter(|w| !w.is_empty())
        .find_map(|w| {
            u64::from_str_radix(w, 16)
                .ok()
                .filter(|_| !w.starts_with(['x', 'w']))
        })
}

/// The inner loops of a function, as slices of its instructions.
pub fn inner_loops(function: &Function) -> Vec<&[(String, Insn)]> {
    let addr = |k: usize| u64::from_str_radix(&function.insns[k].0, 16).unwrap_or(0);
    // (first index, last index) of every loop.
    let mut loops = Vec::new();
    for (k, (_, insn)) in function.insns.iter().enumerate() {
        if !is_branch(&insn.mnemonic) {
            continue;
        }
        let Some(target) = branch_target(insn) else {
            continue;
        };
        if target > addr(k) {
            continue;
        }
        if let Some(start) = (0..=k).find(|&j| addr(j) == target) {
            loops.push((start, k));
        }
    }
    loops
        .iter()
        .filter(|&&(s, e)| {
            !loops
                .iter()
                .any(|&(s2, e2)| (s2, e2) != (s, e) && s <= s2 && e2 <= e)
        })
        .map(|&(s, e)| &function.insns[s..=e])
        .filter(|body| {
            body.iter()
                .all(|(_, i)| i.mnemonic != "bl" && i.mnemonic != "blr")
                && body.iter().any(|(_, i)| uses_vector_register(&i.operands))
        })
        .collect()
}

fn uses_vector_register(operands: &str) -> bool {
    operands
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| {
            let mut chars = w.chars();
            matches!(chars.next(), Some('v' | 'q'))
                && !chars.as_str().is_empty()
                && chars.as_str().bytes().all(|b| b.is_ascii_digit())
        })
}

/// Bytes one execution of `insn` loads or stores, or `None` if it is no
/// load or store, or one through `sp` (a spill). Returns (is_store, bytes).
pub fn memory_access(insn: &Insn) -> Option<(bool, u64)> {
    let m = insn.mnemonic.as_str();
    let store = m.starts_with("st");
    if !(store || m.starts_with("ld")) || m.starts_with("ldx") || m.starts_with("stx") {
        return None;
    }
    let address = insn.operands.split_once('[')?.1.trim_start();
    // Spills and reloads address the stack through sp or the frame pointer.
    if address.starts_with("sp") || address.starts_with("x29") {
        return None;
    }
    let regs_part = insn.operands.split_once('[')?.0;
    // NEON structure loads/stores: `ld1 {v0.16b, v1.16b}, [x0]`.
    if let Some(list) = regs_part
        .split_once('{')
        .and_then(|(_, r)| r.split_once('}'))
    {
        let (list, after) = list;
        let regs = register_count(list)?;
        let arrangement = list.split([',', '-']).next()?.split_once('.')?.1.trim();
        let lane_size = match arrangement.trim_start_matches(char::is_numeric) {
            "b" => 1,
            "h" => 2,
            "s" => 4,
            _ => 8,
        };
        let lanes: u64 = arrangement
            .trim_end_matches(char::is_alphabetic)
            .parse()
            .unwrap_or(1);
        // A lane (`{v0.s}[1]`) or replicating (`ld1r`) access moves one element.
        let single = after.trim_start().starts_with('[') || m.ends_with('r');
        let per_reg = if single { lane_size } else { lanes * lane_size };
        return Some((store, per_reg * regs));
    }
    let first = regs_part.split(',').next()?.trim();
    let reg_size = match first.chars().next()? {
        'q' => 16,
        'd' | 'x' => 8,
        's' | 'w' => 4,
        'h' => 2,
        'b' => 1,
        _ => return None,
    };
    let size = if m.ends_with("sw") {
        4
    } else if m.ends_with('b') {
        1
    } else if m.ends_with('h') {
        2
    } else {
        reg_size
    };
    let pair = m.starts_with("ldp")
        || m.starts_with("stp")
        || m.starts_with("ldnp")
        || m.starts_with("stnp");
    Some((store, if pair { 2 * size } else { size }))
}

/// Registers in a NEON list: `v0.16b, v1.16b` or the range `v16.16b-v19.16b`.
fn register_count(list: &str) -> Option<u64> {
    let number =
        |r: &str| -> Option<u64> { r.trim().strip_prefix('v')?.split('.').next()?.parse().ok() };
    match list.split_once('-') {
        Some((first, last)) => Some((number(last)? + 32 - number(first)?) % 32 + 1),
        None => Some(list.split(',').count() as u64),
    }
}

/// (bytes loaded, bytes stored) by one pass over `insns`.
pub fn memory_bytes<'a>(insns: impl Iterator<Item = &'a Insn>) -> (u64, u64) {
    let (mut loaded, mut stored) = (0, 0);
    for insn in insns {
        match memory_access(insn) {
            Some((true, n)) => stored += n,
            Some((false, n)) => loaded += n,
            None => {}
        }
    }
    (loaded, stored)
}

/// The loop body as llvm-mca input: branches dropped, objdump's comments
/// (`// #16`), branch-target annotations and relocations removed.
pub fn mca_input<'a>(insns: impl Iterator<Item = &'a Insn>) -> String {
    let mut text = String::new();
    for insn in insns {
        if is_branch(&insn.mnemonic) {
            continue;
        }
        let mut operands = insn.operands.as_str();
        if let Some((before, _)) = operands.split_once("//") {
            operands = before;
        }
        if let Some((before, _)) = operands.split_once(" <") {
            operands = before;
        }
        text.push_str(&format!("{} {}\n", insn.mnemonic, operands.trim()));
    }
    text
}

fn run_mca(cpu: &str, asm_text: &str) -> Result<String> {
    let mut child = Command::new(MCA)
        .args([
            "-mtriple=aarch64",
            &format!("-mcpu={cpu}"),
            &format!("-iterations={ITERATIONS}"),
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {MCA}: {e}"))?;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(asm_text.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "{MCA} -mcpu={cpu} failed: {}\ninput:\n{asm_text}",
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Cycles per iteration from an llvm-mca summary: `Total Cycles` over
/// `Iterations`.
pub fn parse_cycles_per_iteration(report: &str) -> Result<f64> {
    let field = |name: &str| -> Option<f64> {
        report.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == name).then(|| value.trim().parse().ok())?
        })
    };
    match (field("Iterations"), field("Total Cycles")) {
        (Some(iterations), Some(cycles)) if iterations > 0.0 => Ok(cycles / iterations),
        _ => bail!("no `Iterations` / `Total Cycles` in llvm-mca output:\n{report}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(mnemonic: &str, operands: &str) -> Insn {
        Insn {
            mnemonic: mnemonic.into(),
            operands: operands.into(),
        }
    }

    #[test]
    fn parses_llvm_mca_summary() {
        let report = "\
Iterations:        200
Instructions:      1200
Total Cycles:      1003
Total uOps:        1200

Dispatch Width:    2
uOps Per Cycle:    1.20
Block RThroughput: 5.0
";
        assert_eq!(parse_cycles_per_iteration(report).unwrap(), 5.015);
        assert!(parse_cycles_per_iteration("Iterations: 0\nTotal Cycles: 5").is_err());
        assert!(parse_cycles_per_iteration("garbage").is_err());
    }

    #[test]
    fn counts_bytes_of_loads_and_stores() {
        let cases = [
            (insn("ldr", "q0, [x8], #16"), Some((false, 16))),
            (insn("ldp", "q0, q1, [x8, #-16]"), Some((false, 32))),
            (insn("stp", "q0, q1, [x9]"), Some((true, 32))),
            (insn("str", "q2, [x1, x9]"), Some((true, 16))),
            (insn("ldrb", "w9, [x0, x8]"), Some((false, 1))),
            (insn("ldrsh", "w9, [x0]"), Some((false, 2))),
            (insn("ldr", "d0, [x1]"), Some((false, 8))),
            (
                insn("ld1", "{v0.16b, v1.16b}, [x0], #32"),
                Some((false, 32)),
            ),
            (insn("st1", "{v0.4s}, [x0]"), Some((true, 16))),
            (insn("ld1", "{v0.s}[1], [x0]"), Some((false, 4))),
            (insn("ld1r", "{v0.4s}, [x0]"), Some((false, 4))),
            (
                insn("st1", "{v16.16b-v19.16b}, [x10], #64"),
                Some((true, 64)),
            ),
            (insn("ld1", "{v30.16b-v1.16b}, [x10]"), Some((false, 64))),
            // Spills and non-memory instructions do not count.
            (insn("str", "q3, [sp, #32]"), None),
            (insn("stur", "q7, [x29, #-128]"), None),
            (insn("ldr", "q3, [sp, #32]"), None),
            (insn("sqrdmulh", "v0.4s, v1.4s, v2.4s"), None),
            (insn("ldxr", "w0, [x1]"), None),
        ];
        for (i, want) in cases {
            assert_eq!(memory_access(&i), want, "{i}");
        }
    }

    fn function(lines: &[(&str, &str, &str)]) -> Function {
        Function {
            name: "k".into(),
            insns: lines
                .iter()
                .map(|(a, m, o)| (a.to_string(), insn(m, o)))
                .collect(),
        }
    }

    #[test]
    fn finds_inner_vector_loops_and_their_elements() {
        let f = function(&[
            ("0", "mov", "x8, xzr"),
            // Outer loop 4..=2c around the vector loop 8..=14.
            ("4", "add", "x9, x0, x8"),
            ("8", "ldr", "q0, [x9], #16"),
            ("c", "sqrdmulh", "v0.4s, v0.4s, v1.4s"),
            ("10", "stp", "q0, q0, [x1], #32"),
            ("14", "b.ne", "8 <k+0x8>  // b.any"),
            // A scalar tail loop: no vector register, not reported.
            ("18", "ldrb", "w10, [x0]"),
            ("1c", "strb", "w10, [x1]"),
            ("20", "cbnz", "x11, 18 <k+0x18>"),
            ("24", "add", "x8, x8, #0x10"),
            ("28", "cmp", "x8, x2"),
            ("2c", "b.cc", "4 <k+0x4>"),
            // A forward branch is no loop.
            ("30", "b", "40 <k+0x40>"),
        ]);
        let loops = inner_loops(&f);
        assert_eq!(loops.len(), 1);
        let body = loops[0];
        assert_eq!(body[0].0, "8");
        assert_eq!(body.len(), 4);
        assert_eq!(memory_bytes(body.iter().map(|(_, i)| i)), (16, 32));
        assert_eq!(
            mca_input(body.iter().map(|(_, i)| i)),
            "ldr q0, [x9], #16\nsqrdmulh v0.4s, v0.4s, v1.4s\nstp q0, q0, [x1], #32\n"
        );
    }

    #[test]
    fn element_sizes_from_kernel_names() {
        assert_eq!(element_size("qneon::arch::neon::softmax_i8"), Some(1));
        assert_eq!(element_size("qneon::arch::neon::logistic_i16"), Some(2));
        assert_eq!(element_size("qneon::q31::neon::softmax_q31"), Some(4));
        assert_eq!(element_size("qneon::arch::neon_lut::lookup_u8"), Some(1));
        assert_eq!(element_size("qneon::arch::neon::mystery"), None);
        assert_eq!(element_size("u8"), Some(1));
        assert_eq!(element_size("i16"), Some(2));
        assert_eq!(element_size("f32"), Some(4));
    }
}
