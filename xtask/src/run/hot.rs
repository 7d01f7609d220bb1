//! `cargo xtask run --hot`: where each op's instructions go, by function
//! and by thread. The plugin's `blocks=` file counts every translated
//! block's executions per vCPU and region (`tools/qemu-insn`); here each
//! block is named by the function of the binary that holds its address
//! (`nm` of the aarch64 cross binutils), and the counts are summed per
//! (op, function, thread).
//!
//! For finding what to make faster; the exact counts stay the regions'
//! (a block that holds a region marker counts whole in the region current
//! when it starts, so region sums here may differ from them by a few
//! instructions).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use super::profile::Profile;
use crate::util::{self, bail, thousands, Result};

/// Functions listed per op, and ops listed (the costliest).
const FUNCTIONS_PER_OP: usize = 8;
const OPS_LISTED: usize = 12;

/// One line of the blocks file.
#[derive(Debug, PartialEq, Eq)]
struct BlockCount {
    address: u64,
    instructions: u64,
    vcpu: u32,
    region: u16,
    executions: u64,
}

fn parse_blocks(text: &str) -> Result<(Vec<BlockCount>, u64)> {
    let mut blocks = Vec::new();
    let mut unrecorded = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let bad = || format!("blocks file: bad line `{line}`");
        match fields[..] {
            ["block", address, n, vcpu, region, executions] => blocks.push(BlockCount {
                address: u64::from_str_radix(address, 16).map_err(|_| bad())?,
                instructions: n.parse().map_err(|_| bad())?,
                vcpu: vcpu.parse().map_err(|_| bad())?,
                region: region.parse().map_err(|_| bad())?,
                executions: executions.parse().map_err(|_| bad())?,
            }),
            ["unrecorded", n] => unrecorded = n.parse().map_err(|_| bad())?,
            _ => bail!("{}", bad()),
        }
    }
    Ok((blocks, unrecorded))
}

/// The text symbols of `binary`, sorted by address (`nm -n -C`).
fn symbols(binary: &Path) -> Result<Vec<(u64, String)>> {
    let out = util::capture(
        Command::new("aarch64-linux-gnu-nm")
            .args(["-n", "-C", "--defined-only"])
            .arg(binary),
    )?;
    Ok(parse_symbols(&out))
}

fn parse_symbols(nm: &str) -> Vec<(u64, String)> {
    let mut symbols: Vec<(u64, String)> = nm
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ' ');
            let address = u64::from_str_radix(parts.next()?, 16).ok()?;
            let kind = parts.next()?;
            let name = parts.next()?;
            matches!(kind, "t" | "T" | "w" | "W").then(|| (address, name.to_string()))
        })
        .collect();
    symbols.sort();
    symbols
}

/// The function holding `address`: the last symbol at or below it.
fn function_of(symbols: &[(u64, String)], address: u64) -> &str {
    match symbols.partition_point(|(a, _)| *a <= address) {
        0 => "?",
        i => &symbols[i - 1].1,
    }
}

/// Instructions per (region, function, vCPU).
type Spread = BTreeMap<u16, BTreeMap<String, BTreeMap<u32, u64>>>;

fn spread(blocks: &[BlockCount], symbols: &[(u64, String)]) -> Spread {
    let mut s = Spread::new();
    for b in blocks {
        let name = function_of(symbols, b.address).to_string();
        *s.entry(b.region)
            .or_default()
            .entry(name)
            .or_default()
            .entry(b.vcpu)
            .or_default() += b.instructions * b.executions;
    }
    s
}

/// Reads the blocks file of the run behind `profile`, writes `out` (a
/// Markdown report) and prints it.
pub(super) fn report(binary: &Path, blocks_file: &Path, profile: &Profile, out: &Path) -> Result {
    let text = std::fs::read_to_string(blocks_file)
        .map_err(|e| format!("{}: {e}", blocks_file.display()))?;
    let (blocks, unrecorded) = parse_blocks(&text)?;
    let s = spread(&blocks, &symbols(binary)?);
    let reps = profile.runner.reps.max(1);
    let mut ops: Vec<_> = profile
        .runner
        .ops
        .iter()
        .map(|op| (profile.regions.get(op.region), op))
        .collect();
    ops.sort_by_key(|o| std::cmp::Reverse(o.0));
    let mut md = format!(
        "# Hot functions per op ({} invokes counted; instructions per invoke, per thread)\n",
        reps
    );
    if unrecorded != 0 {
        let _ = writeln!(md, "\n{unrecorded} block executions were not recorded.");
    }
    for (total, op) in ops.iter().take(OPS_LISTED) {
        let Some(functions) = s.get(&op.region) else {
            continue;
        };
        let vcpus: Vec<u32> = {
            let mut v: Vec<u32> = functions.values().flat_map(|t| t.keys().copied()).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let _ = writeln!(
            md,
            "\n## operator {} {} ({} instructions per invoke)\n",
            op.index,
            op.op,
            thousands(total / reps)
        );
        let header: String = vcpus.iter().map(|v| format!(" thread {v} |")).collect();
        let _ = writeln!(md, "| function |{header}");
        let _ = writeln!(md, "| --- |{}", " ---: |".repeat(vcpus.len()));
        let mut rows: Vec<(u64, &String, &BTreeMap<u32, u64>)> = functions
            .iter()
            .map(|(name, t)| (t.values().copied().max().unwrap_or(0), name, t))
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.0));
        for (_, name, per) in rows.iter().take(FUNCTIONS_PER_OP) {
            let cells: String = vcpus
                .iter()
                .map(|v| format!(" {} |", thousands(per.get(v).copied().unwrap_or(0) / reps)))
                .collect();
            let short: String = name.chars().take(110).collect();
            let _ = writeln!(md, "| `{short}` |{cells}");
        }
    }
    super::write(out, &md)?;
    print!("{md}");
    println!("\nwrote {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_blocks_and_names_functions() {
        let (blocks, unrecorded) =
            parse_blocks("block 4010 3 0 2 10\nblock 4020 2 1 2 5\nunrecorded 7\n").unwrap();
        assert_eq!(unrecorded, 7);
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            blocks[1],
            BlockCount {
                address: 0x4020,
                instructions: 2,
                vcpu: 1,
                region: 2,
                executions: 5
            }
        );
        for bad in [
            "block 4010 3 0 2\n",
            "block zz 3 0 2 1\n",
            "blocks 1 2 3 4 5\n",
        ] {
            assert!(parse_blocks(bad).is_err(), "{bad}");
        }
        let symbols = parse_symbols(
            "0000000000004000 T main\n0000000000004018 t helper::run\n0000000000005000 D data\n",
        );
        assert_eq!(symbols.len(), 2);
        assert_eq!(function_of(&symbols, 0x4010), "main");
        assert_eq!(function_of(&symbols, 0x4020), "helper::run");
        assert_eq!(function_of(&symbols, 0x3000), "?");
        let s = spread(&blocks, &symbols);
        assert_eq!(s[&2]["main"][&0], 30);
        assert_eq!(s[&2]["helper::run"][&1], 10);
    }
}
