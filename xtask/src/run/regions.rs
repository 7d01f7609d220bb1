//! The instruction-count plugin's `out=` file: the total, then one
//! `region ID COUNT` line per marked region that ran.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::util::{bail, Result};

/// The largest region id a marker carries (12 bits; `tools/qemu-insn`).
pub(crate) const MAX_REGION: u16 = 0xFFF;

/// The plugin's `out=` file: the total, then `region ID COUNT` lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Regions {
    pub(crate) total: u64,
    /// Instructions per region id (0..=4095); empty if no marker ran.
    pub(crate) counts: BTreeMap<u16, u64>,
}

impl Regions {
    pub(crate) fn parse(text: &str) -> Result<Regions> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next().ok_or("the plugin's output file is empty")?;
        let total = first
            .parse()
            .map_err(|_| format!("the plugin's first line is not a count: {first:?}"))?;
        let mut counts = BTreeMap::new();
        for line in lines {
            let (id, count) = match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["region", id, count] => (id.parse::<u16>(), count.parse::<u64>()),
                _ => bail!("unexpected line in the plugin's output: {line:?}"),
            };
            let (Ok(id @ 0..=MAX_REGION), Ok(count)) = (id, count) else {
                bail!("bad region line in the plugin's output: {line:?}");
            };
            if counts.insert(id, count).is_some() {
                bail!("region {id} appears twice in the plugin's output");
            }
        }
        let sum: u64 = counts.values().sum();
        if !counts.is_empty() && sum != total {
            bail!("the plugin's regions add up to {sum} instructions, its total is {total}");
        }
        Ok(Regions { total, counts })
    }

    pub(crate) fn get(&self, id: u16) -> u64 {
        self.counts.get(&id).copied().unwrap_or(0)
    }

    pub(crate) fn to_json(&self) -> Value {
        let regions: serde_json::Map<String, Value> = self
            .counts
            .iter()
            .map(|(id, n)| (id.to_string(), json!(n)))
            .collect();
        json!({ "total": self.total, "regions": regions })
    }

    pub(crate) fn from_json(v: &Value) -> Result<Regions> {
        let total = v
            .get("total")
            .and_then(Value::as_u64)
            .ok_or("plugin counts without a total")?;
        let mut counts = BTreeMap::new();
        for (id, n) in v
            .get("regions")
            .and_then(Value::as_object)
            .ok_or("plugin counts without regions")?
        {
            let id: u16 = id.parse().map_err(|_| format!("bad region id {id:?}"))?;
            let n = n.as_u64().ok_or("a region count is not a number")?;
            counts.insert(id, n);
        }
        Ok(Regions { total, counts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::fixtures::PLUGIN_OUT;
    use crate::{plugin, util};
    use std::fs;
    use std::path::PathBuf;
    use std::process::Command;

    #[test]
    fn parses_plugin_output() {
        let r = Regions::parse(PLUGIN_OUT).unwrap();
        assert_eq!(r.total, 500_000);
        assert_eq!(
            r.counts.into_iter().collect::<Vec<_>>(),
            [
                (0, 100_000),
                (1, 200_000),
                (2, 100_000),
                (3, 60_000),
                (4, 40_000)
            ]
        );
        // No marker ran: the total alone, as `cargo xtask bench` reads it.
        let plain = Regions::parse("1234\n").unwrap();
        assert_eq!((plain.total, plain.counts.len()), (1234, 0));
        assert_eq!(Regions::parse("7\nregion 4095 7\n").unwrap().get(4095), 7);

        for bad in [
            "",
            "x\n",
            "10\nregion 0 4\n",             // regions short of the total
            "10\nregion 0 5\nregion 0 5\n", // a region twice
            "10\nregion 4096 10\n",         // not an id
            "10\nregion 1\n",               // no count
            "10\nzone 1 10\n",
        ] {
            assert!(Regions::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    /// The tools the plugin tests need, or why they are skipped.
    fn cross_tools() -> Option<()> {
        for tool in ["qemu-aarch64", "aarch64-linux-gnu-gcc", "cc"] {
            if util::which(tool).is_none() {
                eprintln!("SKIPPED: `{tool}` is not on PATH (`cargo xtask setup` installs it)");
                return None;
            }
        }
        Some(())
    }

    /// Assembles `source` into a static aarch64 program under target/run/.
    fn assemble(name: &str, source: &str) -> PathBuf {
        let dir = util::target_dir().join("run").join("plugin-test");
        fs::create_dir_all(&dir).unwrap();
        let asm = dir.join(format!("{name}.S"));
        let exe = dir.join(name);
        fs::write(&asm, source).unwrap();
        util::capture(
            Command::new("aarch64-linux-gnu-gcc")
                .args(["-nostdlib", "-static", "-o"])
                .arg(&exe)
                .arg(&asm),
        )
        .unwrap();
        exe
    }

    /// Markers at the start, middle and end of blocks, in loops and around
    /// a call, and two look-alikes that are not markers. Every count below
    /// is read off the program: the marker counts in the region it opens.
    const REGIONS_PROGRAM: &str = "
    .text
    .globl _start
_start:
    mov x1, #0              // region 0: 1
    movz xzr, #0xA001       // region 1: the marker, mov, 100 x (subs, b.ne)
    mov x0, #100
1:  subs x0, x0, #1
    b.ne 1b
    movz xzr, #0xA000       // region 0: the marker and 3 more
    movz x3, #0xA005        // not a marker: writes x3
    movz xzr, #0xB105       // not a marker: no 0xA tag
    mov x0, #10
2:  movz xzr, #0xA002       // region 2: 10 x (marker, add, add)
    add x1, x1, #1
    add x1, x1, #1
    movz xzr, #0xA003       // region 3: 10 x (marker, subs, b.ne)
    subs x0, x0, #1
    b.ne 2b
    movz xzr, #0xAFFF       // region 4095: marker, bl, mov, 5 x (subs, b.ne), ret
    bl func
    movz xzr, #0xA004       // region 4 (never left): the marker and 3 more
    mov x0, #0
    mov x8, #93             // exit
    svc #0
func:
    mov x2, #5
3:  subs x2, x2, #1
    b.ne 3b
    ret
";

    #[test]
    fn plugin_counts_marked_regions_exactly() {
        if cross_tools().is_none() {
            return;
        }
        let plugin = plugin::insn_plugin().unwrap();
        let exe = assemble("regions", REGIONS_PROGRAM);
        let out = exe.with_extension("insn");
        let _ = fs::remove_file(&out);
        let mut arg = plugin.into_os_string();
        arg.push(",out=");
        arg.push(&out);
        util::capture(
            Command::new("qemu-aarch64")
                .args(["-cpu", "max", "-plugin"])
                .arg(arg)
                .arg(&exe),
        )
        .unwrap();
        let regions = Regions::parse(&fs::read_to_string(&out).unwrap()).unwrap();

        let expected: BTreeMap<u16, u64> = [
            (0, 1 + 4),
            (1, 2 + 100 * 2),
            (2, 10 * 3),
            (3, 10 * 3),
            (4095, 3 + 5 * 2 + 1),
            (4, 4),
        ]
        .into_iter()
        .collect();
        assert_eq!(regions.counts, expected);
        assert_eq!(regions.total, expected.values().sum::<u64>());
    }

    #[test]
    fn plugin_without_markers_writes_the_total_alone() {
        if cross_tools().is_none() {
            return;
        }
        let plugin = plugin::insn_plugin().unwrap();
        let exe = assemble(
            "plain",
            "
    .text
    .globl _start
_start:
    mov x0, #7              // 1
1:  subs x0, x0, #1         // 7 x 2
    b.ne 1b
    mov x0, #0              // 3
    mov x8, #93
    svc #0
",
        );
        let out = exe.with_extension("insn");
        // What `cargo xtask bench` calls: it parses the whole file as one count.
        let count = plugin::count_to_file(&plugin, &exe, &[], &out).unwrap();
        assert_eq!(count, 1 + 7 * 2 + 3);
        assert_eq!(fs::read_to_string(&out).unwrap(), "18\n");
    }
}
