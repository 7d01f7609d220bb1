//! The instruction-count plugin's output: its `out=` file (the total, then
//! one `region ID COUNT` line per marked region that ran, summed over
//! threads) and its `vcpus=` file (the same per guest thread: `vcpu V COUNT`
//! and `vcpu V region ID COUNT` lines).

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

/// The plugin's `vcpus=` file: per vCPU (guest thread; 0 is the main
/// thread) its total and its regions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Vcpus {
    pub(crate) vcpus: BTreeMap<u32, Regions>,
}

impl Vcpus {
    /// Parses the file and checks it against the `out=` file of the same
    /// run: the vCPU totals add up to its total, and per region the vCPUs'
    /// counts to its region count.
    pub(crate) fn parse(text: &str, all: &Regions) -> Result<Vcpus> {
        let mut vcpus: BTreeMap<u32, Regions> = BTreeMap::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let bad = || format!("bad line in the plugin's vcpus file: {line:?}");
            match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["vcpu", v, count] => {
                    let v: u32 = v.parse().map_err(|_| bad())?;
                    let total = count.parse().map_err(|_| bad())?;
                    if vcpus
                        .insert(
                            v,
                            Regions {
                                total,
                                counts: BTreeMap::new(),
                            },
                        )
                        .is_some()
                    {
                        bail!("vcpu {v} appears twice in the plugin's vcpus file");
                    }
                }
                ["vcpu", v, "region", id, count] => {
                    let v: u32 = v.parse().map_err(|_| bad())?;
                    let (Ok(id @ 0..=MAX_REGION), Ok(count)) = (id.parse::<u16>(), count.parse())
                    else {
                        bail!("{}", bad());
                    };
                    let Some(r) = vcpus.get_mut(&v) else {
                        bail!("vcpu {v}'s regions come before its total: {line:?}");
                    };
                    if r.counts.insert(id, count).is_some() {
                        bail!("vcpu {v} has region {id} twice in the plugin's vcpus file");
                    }
                }
                _ => bail!("{}", bad()),
            }
        }
        for (v, r) in &vcpus {
            let sum: u64 = r.counts.values().sum();
            if !r.counts.is_empty() && sum != r.total {
                bail!(
                    "vcpu {v}'s regions add up to {sum} instructions, its total is {}",
                    r.total
                );
            }
        }
        let sum: u64 = vcpus.values().map(|r| r.total).sum();
        if sum != all.total {
            bail!(
                "the plugin's vcpus add up to {sum} instructions, its total is {}",
                all.total
            );
        }
        for (&id, &n) in &all.counts {
            let sum: u64 = vcpus.values().map(|r| r.get(id)).sum();
            if sum != n {
                bail!(
                    "region {id}: the vcpus add up to {sum} instructions, the total file says {n}"
                );
            }
        }
        Ok(Vcpus { vcpus })
    }

    /// Instructions of region `id` on vCPU `v`.
    pub(crate) fn get(&self, v: u32, id: u16) -> u64 {
        self.vcpus.get(&v).map_or(0, |r| r.get(id))
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
        assert_eq!(r.total, 610_000);
        assert_eq!(
            r.counts.into_iter().collect::<Vec<_>>(),
            [
                (0, 7_000),
                (1, 200_000),
                (2, 100_000),
                (3, 60_000),
                (4, 40_000),
                (4092, 3_000),
                (4093, 100_000),
                (4095, 100_000)
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
        let blocks = exe.with_extension("blocks");
        let _ = fs::remove_file(&out);
        let mut arg = plugin.into_os_string();
        arg.push(",out=");
        arg.push(&out);
        arg.push(",blocks=");
        arg.push(&blocks);
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
        // The block profile: every executed instruction, on vCPU 0, in
        // blocks of the program (`block VADDR N VCPU REGION EXECUTIONS`).
        let mut profiled = 0;
        for line in fs::read_to_string(&blocks).unwrap().lines() {
            let f: Vec<u64> = line
                .split_whitespace()
                .skip(2)
                .map(|x| x.parse().unwrap())
                .collect();
            assert_eq!((line.split_whitespace().next(), f[1]), (Some("block"), 0));
            profiled += f[0] * f[3];
        }
        assert_eq!(profiled, regions.total);
    }

    #[test]
    fn parses_the_vcpus_file() {
        let all = Regions::parse("30\nregion 0 6\nregion 1 24\n").unwrap();
        let v = Vcpus::parse(
            "vcpu 0 10\nvcpu 0 region 0 4\nvcpu 0 region 1 6\n\
             vcpu 2 20\nvcpu 2 region 0 2\nvcpu 2 region 1 18\n",
            &all,
        )
        .unwrap();
        assert_eq!(
            (v.get(0, 1), v.get(2, 1), v.get(1, 1), v.get(2, 7)),
            (6, 18, 0, 0)
        );
        assert_eq!(v.vcpus.len(), 2);
        // Without markers: totals alone.
        let plain = Regions::parse("30\n").unwrap();
        assert_eq!(
            Vcpus::parse("vcpu 0 25\nvcpu 1 5\n", &plain).unwrap().vcpus[&1].total,
            5
        );
        for bad in [
            "vcpu 0 10\nvcpu 1 19\n",                             // short of the total
            "vcpu 0 30\nvcpu 0 region 0 6\nvcpu 0 region 1 23\n", // regions short of the vcpu
            "vcpu 0 region 0 6\nvcpu 0 30\n",                     // region before its vcpu
            "vcpu 0 30\nvcpu 0 30\n",
            "vcpu x 30\n",
            "vcpu 0 30\nvcpu 0 region 4096 30\n",
            "cpu 0 30\n",
        ] {
            assert!(Vcpus::parse(bad, &plain).is_err(), "{bad:?} parsed");
        }
        // Per region, the vcpus must add up to the out= file's count.
        let wrong = Regions::parse("30\nregion 0 7\nregion 1 23\n").unwrap();
        assert!(
            Vcpus::parse("vcpu 0 30\nvcpu 0 region 0 6\nvcpu 0 region 1 24\n", &wrong).is_err()
        );
    }

    /// Three threads made with raw clone syscalls, each with a region of
    /// its own (1, 2, 3: loops of 1000, 2000, 3000) and all three in
    /// region 4 (50 iterations), the main thread in region 8 (500), and
    /// the waiting of every thread in region 9. Workers wait for a release
    /// word before they exit, so that none leaves its vCPU free for the
    /// next one (vCPU k is worker k). Every count but region 9's is read
    /// off the program; region 9 depends on how often a futex wait ran.
    const THREADS_PROGRAM: &str = "
        .text
        .globl _start
    // clone(flags, stack, ptid, tls, ctid): CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|CHILD_CLEARTID
        .equ FLAGS, 0x250F00
.macro SPAWN k
        adr x4, tid\\k
        mov w5, #1
        str w5, [x4]
        mov x0, #(FLAGS & 0xFFFF)
        movk x0, #(FLAGS >> 16), lsl #16
        adr x1, stack\\k + 4096
        mov x2, #0
        mov x3, #0
        mov x8, #220
        svc #0
        cbz x0, worker\\k
.endm
.macro WORKER k, n
worker\\k:
        movz xzr, #(0xA000 + \\k)
        mov x0, #\\n
1:  subs x0, x0, #1
        b.ne 1b
        movz xzr, #0xA004
        mov x0, #50
2:  subs x0, x0, #1
        b.ne 2b
        b wait_release
.endm
.macro JOIN k
        adr x6, tid\\k
1:  ldr w2, [x6]
        cbz w2, 2f
        mov x0, x6
        mov x1, #0          // FUTEX_WAIT (the exit wake is a shared futex)
        mov x3, #0
        mov x8, #98
        svc #0
        b 1b
2:
.endm
_start:
        mov x19, #0
        SPAWN 1
        SPAWN 2
        SPAWN 3
        movz xzr, #0xA008
        mov x0, #500
1:  subs x0, x0, #1
        b.ne 1b
        movz xzr, #0xA009
        adr x0, release
        mov w1, #1
        str w1, [x0]
        mov x1, #129        // FUTEX_WAKE_PRIVATE
        mov x2, #0x7fffffff
        mov x8, #98
        svc #0
        JOIN 1
        JOIN 2
        JOIN 3
        mov x0, #0
        mov x8, #94         // exit_group
        svc #0
wait_release:
        movz xzr, #0xA009
1:  adr x0, release
        ldr w1, [x0]
        cbnz w1, 2f
        mov x1, #128        // FUTEX_WAIT_PRIVATE
        mov x2, #0
        mov x3, #0
        mov x8, #98
        svc #0
        b 1b
2:  mov x0, #0
        mov x8, #93         // exit (this thread)
        svc #0
        WORKER 1, 1000
        WORKER 2, 2000
        WORKER 3, 3000
        .data
        .balign 16
release: .word 0
tid1: .word 0
tid2: .word 0
tid3: .word 0
        .balign 16
stack1: .space 4096
stack2: .space 4096
stack3: .space 4096
";

    fn run_with_vcpus(exe: &std::path::Path, plugin: PathBuf) -> (String, String) {
        let out = exe.with_extension("insn");
        let per_vcpu = exe.with_extension("vcpus");
        let _ = fs::remove_file(&out);
        let _ = fs::remove_file(&per_vcpu);
        let mut arg = plugin.into_os_string();
        arg.push(",out=");
        arg.push(&out);
        arg.push(",vcpus=");
        arg.push(&per_vcpu);
        util::capture(
            Command::new("qemu-aarch64")
                .args(["-cpu", "max", "-plugin"])
                .arg(arg)
                .arg(exe),
        )
        .unwrap();
        (
            fs::read_to_string(&out).unwrap(),
            fs::read_to_string(&per_vcpu).unwrap(),
        )
    }

    #[test]
    fn plugin_counts_per_thread_and_region_exactly() {
        if cross_tools().is_none() {
            return;
        }
        let plugin = plugin::insn_plugin().unwrap();
        let exe = assemble("threads", THREADS_PROGRAM);
        // Thread timing varies between runs; the counts must not (but for
        // the waiting).
        for _ in 0..3 {
            let (out, per_vcpu) = run_with_vcpus(&exe, plugin.clone());
            let all = Regions::parse(&out).unwrap();
            let v = Vcpus::parse(&per_vcpu, &all).unwrap();
            assert_eq!(v.vcpus.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);

            // Main: mov + 3 spawns of 11; its loop; region 9: the marker,
            // the release (7), the joins (3 each) and the exit (3), plus 8
            // per futex wait.
            let main: Vec<(u16, u64)> = v.vcpus[&0].counts.iter().map(|(&r, &n)| (r, n)).collect();
            assert_eq!(main[..2], [(0, 1 + 3 * 11), (8, 2 + 500 * 2)]);
            assert_eq!(main.len(), 3);
            let wait = v.get(0, 9);
            assert!(
                wait >= 20 && (wait - 20).is_multiple_of(8),
                "main waited {wait}"
            );
            for k in 1..=3u32 {
                let r = &v.vcpus[&k];
                // The child starts after the clone: its cbz in region 0.
                assert_eq!(r.get(0), 1, "vcpu {k}");
                assert_eq!(r.get(k as u16), 2 + 1000 * u64::from(k) * 2, "vcpu {k}");
                assert_eq!(r.get(4), 2 + 50 * 2 + 1, "vcpu {k}");
                // Marker, check, exit: 7, plus 9 per futex wait.
                let wait = r.get(9);
                assert!(
                    wait >= 7 && (wait - 7).is_multiple_of(9),
                    "vcpu {k} waited {wait}"
                );
                assert_eq!(r.counts.len(), 4, "vcpu {k}");
            }
            // The out= file: per region, the sum over threads.
            assert_eq!(all.get(4), 3 * 103);
            assert_eq!(all.get(0), 34 + 3);
        }
    }

    #[test]
    fn plugin_output_of_one_thread_has_no_vcpu_lines_but_its_own() {
        if cross_tools().is_none() {
            return;
        }
        let plugin = plugin::insn_plugin().unwrap();
        let exe = assemble("regions", REGIONS_PROGRAM);
        let (out, per_vcpu) = run_with_vcpus(&exe, plugin);
        let all = Regions::parse(&out).unwrap();
        // The vcpus file repeats the out= file for vCPU 0.
        let mut expected = format!("vcpu 0 {}\n", all.total);
        for (id, n) in &all.counts {
            expected += &format!("vcpu 0 region {id} {n}\n");
        }
        assert_eq!(per_vcpu, expected);
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
