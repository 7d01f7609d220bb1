//! `cargo xtask asm`: check the machine code of kernels.
//!
//! Builds the release aarch64 library (as the aarch64 wheel's build does),
//! disassembles the object code inside `libqneon-*.rlib` with `aarch64-linux-gnu-objdump -d -r -C`, splits the
//! listing into functions and checks each `[[kernel]]` entry of
//! `asm_tests/expect.toml` (see `asm_tests/README.md`). Every entry is one
//! test; so is the coverage check: every row of `qneon::catalogue` (op,
//! type, method) is covered by an entry or listed as exempt with a reason,
//! and every row an entry names is in the catalogue. The summary is a
//! libtest-style `test result:` line.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::counts::Counts;
use qneon::catalogue::KERNELS;

use crate::expect::{self, Expectations, Kernel};
use crate::pattern::{Insn, Pattern};
use crate::python;
use crate::setup;
use crate::util::{self, bail, Reported, Result, TARGET};

pub const EXPECT_FILE: &str = "asm_tests/expect.toml";
/// Longest listing printed for a failing kernel.
const MAX_LISTING_LINES: usize = 400;

pub fn cli(args: &[String]) -> Result {
    if let Some(arg) = args.first() {
        bail!("asm: unexpected argument `{arg}` (asm takes none)");
    }
    setup::ensure(false)?;
    let counts = check()?;
    if counts.failed > 0 {
        return Err(Reported.into());
    }
    Ok(())
}

/// Runs every check and prints the results; `Err` means the checks could
/// not run at all (bad expect.toml, build failure, ...).
pub fn check() -> Result<Counts> {
    let file = expectations()?;
    let coverage = coverage(&file);
    let kernels = file.kernels;
    let checks = kernels
        .iter()
        .map(|k| Check::new(k).map_err(|e| format!("{EXPECT_FILE}: line {}: {e}", k.line)))
        .collect::<std::result::Result<Vec<_>, _>>()?;

    if checks.is_empty() {
        // Nothing to disassemble; the catalogue's rows are then uncovered.
        println!("asm: {EXPECT_FILE} has no [[kernel]] entries");
        let counts = match coverage {
            Ok(()) => Counts {
                passed: 1,
                failed: 0,
            },
            Err(report) => {
                println!("asm coverage of qneon::catalogue ... FAILED\n{report}");
                Counts {
                    passed: 0,
                    failed: 1,
                }
            }
        };
        print_result(counts);
        return Ok(counts);
    }

    let (rlib, functions) = disassemble()?;

    println!("\nrunning {} asm checks", checks.len());
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    match &coverage {
        Ok(()) => {
            println!("asm coverage of qneon::catalogue ... ok");
            counts.passed += 1;
        }
        Err(report) => {
            println!("asm coverage of qneon::catalogue ... FAILED");
            counts.failed += 1;
            failures.push(("coverage of qneon::catalogue", report.clone()));
        }
    }
    for check in &checks {
        match check.run(&functions) {
            Ok(()) => {
                println!("asm {} ... ok", check.kernel.symbol);
                counts.passed += 1;
            }
            Err(report) => {
                println!("asm {} ... FAILED", check.kernel.symbol);
                counts.failed += 1;
                failures.push((check.kernel.symbol.as_str(), report));
            }
        }
    }
    if !failures.is_empty() {
        println!("\nfailures:");
        for (symbol, report) in &failures {
            println!("\n---- {symbol} ----\n{report}");
        }
        println!("(disassembled from {})", rlib.display());
    }
    print_result(counts);
    Ok(counts)
}

/// The kernels `asm_tests/expect.toml` names.
pub fn expected_kernels() -> Result<Vec<Kernel>> {
    Ok(expectations()?.kernels)
}

fn expectations() -> Result<Expectations> {
    let path = util::root().join(EXPECT_FILE);
    let text =
        fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(expect::parse(&text).map_err(|e| format!("{EXPECT_FILE}: {e}"))?)
}

/// Whether the row `op type method` matches `pattern` (three words, each
/// equal or `*`).
fn row_matches(pattern: &str, row: [&str; 3]) -> bool {
    let words: Vec<&str> = pattern.split_whitespace().collect();
    words.len() == 3 && words.iter().zip(row).all(|(w, r)| *w == "*" || *w == r)
}

/// Every catalogue row is covered by a `[[kernel]]` or `[[exempt]]` entry,
/// and every pattern of an entry matches some row (a renamed or removed row
/// must not leave a stale claim behind). `Err` lists every problem.
fn coverage(file: &Expectations) -> std::result::Result<(), String> {
    coverage_of(
        file,
        KERNELS
            .iter()
            .flat_map(|k| k.names().map(|(_, n)| n))
            .collect(),
    )
}

fn coverage_of(file: &Expectations, rows: Vec<[&str; 3]>) -> std::result::Result<(), String> {
    let claims = file
        .kernels
        .iter()
        .map(|k| (k.line, &k.covers))
        .chain(file.exempt.iter().map(|e| (e.line, &e.covers)));
    let mut problems = Vec::new();
    for (line, patterns) in claims {
        for p in patterns {
            if !rows.iter().any(|&r| row_matches(p, r)) {
                problems.push(format!(
                    "{EXPECT_FILE}:{line}: `{p}` matches no row of qneon::catalogue \
                     (`op type method`, `*` for any one word)"
                ));
            }
        }
    }
    let all_patterns: Vec<&String> = file
        .kernels
        .iter()
        .flat_map(|k| &k.covers)
        .chain(file.exempt.iter().flat_map(|e| &e.covers))
        .collect();
    for row in rows {
        if !all_patterns.iter().any(|p| row_matches(p, row)) {
            problems.push(format!(
                "`{}` (qneon::catalogue) has no expectation: add `covers` to the [[kernel]] \
                 entry of its NEON code in {EXPECT_FILE}, or an [[exempt]] entry with the reason",
                row.join(" ")
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Builds the release aarch64 library and returns its rlib and the
/// functions disassembled from it.
///
/// The library is built in the Python package's workspace with the aarch64
/// wheel's flags: the same dependency versions, features, profile and
/// flags, so that `cargo xtask test` builds it once (the Python stage's
/// wheel build leaves it fresh; a second, different build took 6 to 9 of
/// CI's minutes) and the checks read the code the wheel ships. Only the
/// library is built (no Python needed).
pub fn disassemble() -> Result<(PathBuf, Vec<Function>)> {
    let mut build = util::cargo([
        "build",
        "--release",
        "-p",
        "qneon",
        "--target",
        TARGET,
        "--lib",
        "--message-format=json-render-diagnostics",
        "--manifest-path",
    ]);
    build
        .arg(python::manifest())
        .env("CARGO_TARGET_DIR", util::target_dir())
        .env("RUSTFLAGS", python::AARCH64_RUSTFLAGS)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    util::step(util::display(&build));
    let out = build
        .output()
        .map_err(|e| format!("cannot run cargo build: {e}"))?;
    if !out.status.success() {
        bail!("the release aarch64 library did not build ({})", out.status);
    }
    let rlib = built_rlib(&String::from_utf8_lossy(&out.stdout))?;
    let listing = util::capture(
        Command::new("aarch64-linux-gnu-objdump")
            .args(["-d", "-r", "-C", "--no-show-raw-insn"])
            .arg(&rlib),
    )?;
    Ok((rlib, parse_listing(&listing)))
}

/// The `libqneon-*.rlib` named by cargo's JSON messages (the artifact of the
/// `qneon` library target).
fn built_rlib(messages: &str) -> Result<PathBuf> {
    for line in messages.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" || message["target"]["name"] != "qneon" {
            continue;
        }
        let files = message["filenames"].as_array().into_iter().flatten();
        if let Some(rlib) = files
            .filter_map(|f| f.as_str())
            .find(|f| f.ends_with(".rlib"))
        {
            return Ok(PathBuf::from(rlib));
        }
    }
    bail!("cargo build named no libqneon rlib")
}

fn print_result(counts: Counts) {
    let verdict = if counts.failed == 0 { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {} passed; {} failed\n",
        counts.passed, counts.failed
    );
}

/// A function from the disassembly.
#[derive(Debug)]
pub struct Function {
    pub name: String,
    /// (hex address relative to the function's section, instruction).
    pub insns: Vec<(String, Insn)>,
}

/// Splits `objdump -d -r` output into functions. Instruction lines look
/// like `  1c:\tadd\tx8, x8, #0x0`; relocation lines like
/// `\t\t\t1c: R_AARCH64_CALL26\tsymbol` and are folded into the
/// instruction before them as `<reloc symbol>`.
pub fn parse_listing(listing: &str) -> Vec<Function> {
    let mut functions: Vec<Function> = Vec::new();
    for line in listing.lines() {
        if let Some(name) = function_header(line) {
            functions.push(Function {
                name: name.to_string(),
                insns: Vec::new(),
            });
            continue;
        }
        let Some(current) = functions.last_mut() else {
            continue;
        };
        let Some((addr, rest)) = line.split_once(':') else {
            continue;
        };
        let addr = addr.trim();
        if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let rest = rest.trim();
        if rest.starts_with("R_") {
            // `R_AARCH64_CALL26\tsymbol`; demangled symbols may hold spaces.
            let symbol = rest
                .split_once(char::is_whitespace)
                .map_or("?", |(_, s)| s.trim());
            if let Some((_, insn)) = current.insns.last_mut() {
                insn.operands = format!("{} <reloc {symbol}>", insn.operands)
                    .trim_start()
                    .to_string();
            }
            continue;
        }
        let mut words = rest.split_whitespace();
        let Some(mnemonic) = words.next() else {
            continue;
        };
        let insn = Insn {
            mnemonic: mnemonic.to_string(),
            operands: words.collect::<Vec<_>>().join(" "),
        };
        current.insns.push((addr.to_string(), insn));
    }
    functions
}

/// `0000000000000000 <qneon::foo>:` gives `qneon::foo`.
fn function_header(line: &str) -> Option<&str> {
    let (addr, rest) = line.split_once(' ')?;
    if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    rest.strip_prefix('<')?.strip_suffix(">:")
}

/// One expect.toml entry with its patterns parsed.
struct Check<'a> {
    kernel: &'a Kernel,
    must_contain: Vec<(&'a str, Pattern)>,
    must_not_contain: Vec<(&'a str, Pattern)>,
}

impl<'a> Check<'a> {
    fn new(kernel: &'a Kernel) -> std::result::Result<Self, String> {
        let parse = |list: &'a [String]| {
            list.iter()
                .map(|text| Pattern::parse(text).map(|p| (text.as_str(), p)))
                .collect::<std::result::Result<Vec<_>, _>>()
        };
        Ok(Check {
            kernel,
            must_contain: parse(&kernel.must_contain)?,
            must_not_contain: parse(&kernel.must_not_contain)?,
        })
    }

    /// `Err` holds a report explaining the failure.
    fn run(&self, functions: &[Function]) -> std::result::Result<(), String> {
        let targets = self.find(functions)?;
        let mut report = String::new();
        for function in targets {
            let mut problems = Vec::new();
            let mut marked = vec![false; function.insns.len()];
            for (text, pattern) in &self.must_contain {
                if !function.insns.iter().any(|(_, i)| pattern.matches(i)) {
                    problems.push(format!("must_contain \"{text}\": no instruction matches"));
                }
            }
            for (text, pattern) in &self.must_not_contain {
                let mut hits = 0;
                for (k, (_, insn)) in function.insns.iter().enumerate() {
                    if pattern.matches(insn) {
                        marked[k] = true;
                        hits += 1;
                    }
                }
                if hits > 0 {
                    problems.push(format!(
                        "must_not_contain \"{text}\": {hits} instruction(s) match (marked >>)"
                    ));
                }
            }
            if !problems.is_empty() {
                report.push_str(&problems.join("\n"));
                report.push_str(&format!("\n\nlisting of {}:\n", function.name));
                report.push_str(&render(function, &marked));
            }
        }
        if report.is_empty() {
            Ok(())
        } else {
            Err(report)
        }
    }

    fn find<'f>(
        &self,
        functions: &'f [Function],
    ) -> std::result::Result<Vec<&'f Function>, String> {
        find_functions(&self.kernel.symbol, functions)
    }
}

/// The function(s) `symbol` names: those whose name contains it, narrowed
/// to exact matches (`symbol` or `...::symbol`) if there are any. Several
/// copies of one name (generic instantiations) are all returned.
pub fn find_functions<'f>(
    symbol: &str,
    functions: &'f [Function],
) -> std::result::Result<Vec<&'f Function>, String> {
    let mut found: Vec<&Function> = functions
        .iter()
        .filter(|f| f.name.contains(symbol))
        .collect();
    let exact = |f: &&Function| f.name == symbol || f.name.ends_with(&format!("::{symbol}"));
    if found.iter().any(exact) {
        found.retain(exact);
    }
    let mut names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    match names.len() {
        0 => Err(format!(
            "no function name contains `{symbol}` ({} functions in the rlib).\n\
             Only code the library itself compiles is there: generic and \
             #[inline] functions, and small ones Rust inlines across crates, \
             are not. Mark kernels #[inline(never)] or #[no_mangle].",
            functions.len()
        )),
        1 => Ok(found),
        _ => Err(format!(
            "`{symbol}` is ambiguous; it matches:\n  {}\nuse a longer symbol",
            names.join("\n  ")
        )),
    }
}

fn render(function: &Function, marked: &[bool]) -> String {
    let mut out = String::new();
    for ((addr, insn), &mark) in function.insns.iter().zip(marked).take(MAX_LISTING_LINES) {
        let prefix = if mark { ">>" } else { "  " };
        out.push_str(&format!("{prefix} {addr:>6}:  {insn}\n"));
    }
    if function.insns.len() > MAX_LISTING_LINES {
        out.push_str(&format!(
            "   ... {} more instructions\n",
            function.insns.len() - MAX_LISTING_LINES
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "\
In archive target/aarch64-unknown-linux-gnu/release/deps/libqneon-0123.rlib:

lib.rmeta:     file format elf64-littleaarch64


qneon-0123.qneon.abc-cgu.0.rcgu.o:     file format elf64-littleaarch64


Disassembly of section .text._ZN5qneon8index_it17h5da7b60dc0781c00E:

0000000000000000 <qneon::index_it>:
   0:\tcmp\tx2, x1
   4:\tb.cs\t10 <qneon::index_it+0x10>  // b.hs, b.nlast
   8:\tldrb\tw0, [x0, x2]
   c:\tret
  28:\tbl\t0 <core::panicking::panic_bounds_check>
\t\t\t28: R_AARCH64_CALL26\tcore::panicking::panic_bounds_check

Disassembly of section .text.qneon_neon_softmax_i8:

0000000000000000 <qneon_neon_softmax_i8>:
   0:\tldr\tq0, [x0]
   8:\tsqrdmulh\tv0.4s, v0.4s, v1.4s
  10:\tret

0000000000000000 <qneon_neon_softmax_i8_tail>:
   0:\tret
";

    fn kernel(symbol: &str, must: &[&str], must_not: &[&str]) -> Kernel {
        Kernel {
            symbol: symbol.into(),
            must_contain: must.iter().map(|s| s.to_string()).collect(),
            must_not_contain: must_not.iter().map(|s| s.to_string()).collect(),
            element: None,
            covers: vec![],
            line: 1,
        }
    }

    fn run(k: &Kernel) -> std::result::Result<(), String> {
        Check::new(k).unwrap().run(&parse_listing(LISTING))
    }

    #[test]
    fn splits_functions_and_folds_relocations() {
        let functions = parse_listing(LISTING);
        let names: Vec<&str> = functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "qneon::index_it",
                "qneon_neon_softmax_i8",
                "qneon_neon_softmax_i8_tail"
            ]
        );
        let (addr, call) = &functions[0].insns[4];
        assert_eq!(addr, "28");
        assert_eq!(call.mnemonic, "bl");
        assert!(call
            .operands
            .ends_with("<reloc core::panicking::panic_bounds_check>"));
        assert_eq!(functions[1].insns[1].1.operands, "v0.4s, v0.4s, v1.4s");
    }

    #[test]
    fn passing_and_failing_entries() {
        assert_eq!(
            run(&kernel(
                "qneon_neon_softmax_i8",
                &["sqrdmulh v*.4s"],
                &["bl panic"]
            )),
            Ok(())
        );
        assert_eq!(run(&kernel("index_it", &["ldrb"], &[])), Ok(()));

        let missing = run(&kernel("qneon_neon_softmax_i8", &["sdot"], &[])).unwrap_err();
        assert!(missing.contains("must_contain \"sdot\""), "{missing}");
        assert!(
            missing.contains("listing of qneon_neon_softmax_i8:"),
            "{missing}"
        );

        let panics = run(&kernel("index_it", &[], &["bl panic"])).unwrap_err();
        assert!(panics.contains("1 instruction(s) match"), "{panics}");
        assert!(panics.contains(">>     28:  bl"), "{panics}");
    }

    #[test]
    fn coverage_needs_every_row_and_no_stale_claims() {
        let rows = vec![["softmax", "int8", "fixed"], ["tanh", "f32", "float"]];
        let mut file = Expectations {
            kernels: vec![Kernel {
                symbol: "softmax_i8".into(),
                covers: vec!["softmax int8 *".into()],
                ..Kernel::default()
            }],
            exempt: vec![],
        };
        let missing = coverage_of(&file, rows.clone()).unwrap_err();
        assert!(missing.contains("`tanh f32 float`"), "{missing}");
        assert!(!missing.contains("softmax"), "{missing}");
        file.exempt.push(expect::Exempt {
            covers: vec!["tanh f32 float".into()],
            reason: "no NEON code".into(),
            line: 9,
        });
        assert_eq!(coverage_of(&file, rows.clone()), Ok(()));
        file.kernels[0].covers.push("softmax int8 lut".into());
        let stale = coverage_of(&file, rows).unwrap_err();
        assert!(
            stale.contains("`softmax int8 lut` matches no row"),
            "{stale}"
        );
        assert!(row_matches("* * *", ["a", "b", "c"]));
        assert!(!row_matches("a b", ["a", "b", "c"]));
    }

    #[test]
    fn symbol_lookup() {
        let absent = run(&kernel("tanh", &[], &[])).unwrap_err();
        assert!(
            absent.contains("no function name contains `tanh`"),
            "{absent}"
        );
        let ambiguous = run(&kernel("softmax", &[], &[])).unwrap_err();
        assert!(ambiguous.contains("ambiguous"), "{ambiguous}");
    }
}
