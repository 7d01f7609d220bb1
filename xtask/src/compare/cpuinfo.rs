//! The `/proc/cpuinfo` the emulated LiteRT sees.
//!
//! XNNPACK's CPU detection parses `/proc/cpuinfo`; qemu 7.2 user mode
//! passes the host's (x86) file through, and the parse crashes. With
//! `qemu-aarch64 -L ROOT` a guest open of `/proc/cpuinfo` is served from
//! `ROOT/proc/cpuinfo` when that file exists, so each CPU model gets its
//! own root, `roots/<cpu>/`: symbolic links to the sysroot's top-level
//! directories plus a `proc/cpuinfo` describing one core of that model,
//! and `sys/devices/system/cpu/{possible,present,online}` saying there is
//! one core (we run single-threaded; the host's count would disagree with
//! the one-core cpuinfo).
//!
//! The file is written from what the emulated CPU itself reports:
//! `run_litert.py --probe` under the same `-cpu` returns `AT_HWCAP`,
//! `AT_HWCAP2` and `MIDR_EL1`, and the `Features` line lists the Linux
//! names of the hwcap bits set. So the features claimed are exactly the
//! ones qemu implements for the model (for `neoverse-n1`, the Armv8.2
//! baseline plus dot product, RCpc and DC CVAP; qemu 7.2 reports neither
//! `evtstrm`, a kernel timer feature, nor `ssbs`).

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::sysroot::Layout;
use crate::util::{self, bail, Result};

/// Linux's `/proc/cpuinfo` names of the `AT_HWCAP` bits, bit 0 first
/// (arch/arm64 uapi `hwcap.h` order).
const HWCAP_NAMES: &[&str] = &[
    "fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32", "atomics", "fphp",
    "asimdhp", "cpuid", "asimdrdm", "jscvt", "fcma", "lrcpc", "dcpop", "sha3", "sm3", "sm4",
    "asimddp", "sha512", "sve", "asimdfhm", "dit", "uscat", "ilrcpc", "flagm", "ssbs", "sb",
    "paca", "pacg",
];

/// The same for `AT_HWCAP2`.
const HWCAP2_NAMES: &[&str] = &[
    "dcpodp",
    "sve2",
    "sveaes",
    "svepmull",
    "svebitperm",
    "svesha3",
    "svesm4",
    "flagm2",
    "frint",
    "svei8mm",
    "svef32mm",
    "svef64mm",
    "svebf16",
    "i8mm",
    "bf16",
    "dgh",
    "rng",
    "bti",
    "mte",
    "ecv",
    "afp",
    "rpres",
    "mte3",
    "sme",
    "smei16i64",
    "smef64f64",
    "smei8i32",
    "smef16f32",
    "smeb16f32",
    "smef32f32",
    "smefa64",
    "wfxt",
    "ebf16",
    "sveebf16",
    "cssc",
    "rprfm",
    "sve2p1",
    "sme2",
    "sme2p1",
    "smei16i32",
    "smebi32i32",
    "smeb16b16",
    "smef16f16",
    "mops",
    "hbc",
];

/// What `run_litert.py --probe` reports about the emulated CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub hwcap: u64,
    pub hwcap2: u64,
    pub midr: u64,
}

impl Probe {
    pub fn from_json(text: &str) -> Result<Probe> {
        let value: Value = serde_json::from_str(text.trim())
            .map_err(|e| format!("unexpected --probe output {text:?}: {e}"))?;
        let field = |name: &str| {
            value[name]
                .as_u64()
                .ok_or_else(|| format!("--probe output {text:?} has no integer `{name}`"))
        };
        Ok(Probe {
            hwcap: field("hwcap")?,
            hwcap2: field("hwcap2")?,
            midr: field("midr")?,
        })
    }

    /// The feature names, in `/proc/cpuinfo` order; an error for a set bit
    /// we have no name for (a newer qemu: extend the tables).
    pub fn features(&self) -> Result<Vec<&'static str>> {
        let mut names = Vec::new();
        for (word, table, label) in [
            (self.hwcap, HWCAP_NAMES, "AT_HWCAP"),
            (self.hwcap2, HWCAP2_NAMES, "AT_HWCAP2"),
        ] {
            for bit in 0..64 {
                if word >> bit & 1 == 0 {
                    continue;
                }
                match table.get(bit) {
                    Some(name) => names.push(*name),
                    None => bail!("{label} bit {bit} is set and has no cpuinfo name here"),
                }
            }
        }
        Ok(names)
    }

    /// One processor's `/proc/cpuinfo` entry, in the kernel's layout.
    pub fn cpuinfo(&self) -> Result<String> {
        let midr = self.midr;
        Ok(format!(
            "processor\t: 0\n\
             BogoMIPS\t: 50.00\n\
             Features\t: {}\n\
             CPU implementer\t: {:#04x}\n\
             CPU architecture: 8\n\
             CPU variant\t: {:#x}\n\
             CPU part\t: {:#05x}\n\
             CPU revision\t: {}\n\n",
            self.features()?.join(" "),
            midr >> 24 & 0xff,
            midr >> 20 & 0xf,
            midr >> 4 & 0xfff,
            midr & 0xf,
        ))
    }
}

/// A directory name for a `-cpu` value (`max,sme=off` -> `max-sme-off`);
/// it also keeps commas out of the plugin's `out=` path.
pub fn cpu_slug(cpu: &str) -> String {
    cpu.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The `-L` root for `cpu`, created (probing the CPU under qemu) when it
/// does not exist yet.
pub fn root_for(layout: &Layout, cpu: &str) -> Result<PathBuf> {
    let root = layout.roots().join(cpu_slug(cpu));
    let cpuinfo_path = root.join("proc/cpuinfo");
    if cpuinfo_path.is_file() {
        return Ok(root);
    }
    let output = util::capture(
        super::measure::python_command(layout, &layout.sysroot(), cpu)
            .arg(super::measure::driver())
            .arg("--probe"),
    )?;
    let probe = Probe::from_json(&output)?;
    let cpuinfo = probe.cpuinfo()?;

    // Built beside and renamed into place, so that an interrupted run
    // never leaves a root without its cpuinfo.
    let partial = layout.roots().join(format!("{}.partial", cpu_slug(cpu)));
    let _ = fs::remove_dir_all(&partial);
    fs::create_dir_all(partial.join("proc"))?;
    fs::create_dir_all(partial.join("sys/devices/system/cpu"))?;
    for entry in fs::read_dir(layout.sysroot())? {
        let name = entry?.file_name();
        // ../../sysroot/NAME, relative so the tree may move.
        symlink(Path::new("../../sysroot").join(&name), partial.join(&name))?;
    }
    fs::write(partial.join("proc/cpuinfo"), &cpuinfo)?;
    for file in ["possible", "present", "online"] {
        fs::write(partial.join("sys/devices/system/cpu").join(file), "0\n")?;
    }
    let _ = fs::remove_dir_all(&root);
    fs::rename(&partial, &root)?;
    eprintln!(
        "compare: /proc/cpuinfo for -cpu {cpu}: {}",
        probe.features()?.join(" ")
    );
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `--probe` printed under `qemu-aarch64 -cpu neoverse-n1`
    /// (qemu 7.2).
    const NEOVERSE_N1: &str = r#"{"hwcap": 1155067, "hwcap2": 0, "midr": 1095749825}"#;

    #[test]
    fn neoverse_n1_cpuinfo_has_its_features_and_ids() {
        let probe = Probe::from_json(NEOVERSE_N1).unwrap();
        assert_eq!(probe.hwcap, 0x119ffb);
        assert_eq!(probe.midr, 0x414fd0c1);
        assert_eq!(
            probe.features().unwrap().join(" "),
            "fp asimd aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm \
             lrcpc dcpop asimddp"
        );
        let text = probe.cpuinfo().unwrap();
        assert!(text.contains("CPU implementer\t: 0x41\n"), "{text}");
        assert!(text.contains("CPU variant\t: 0x4\n"), "{text}");
        assert!(text.contains("CPU part\t: 0xd0c\n"), "{text}");
        assert!(text.contains("CPU revision\t: 1\n"), "{text}");
    }

    #[test]
    fn sme_bits_name_sme_features() {
        // `-cpu max` under qemu 7.2: SME and its sub-features in AT_HWCAP2.
        let probe = Probe {
            hwcap: 0xecfffffb,
            hwcap2: 0x7f877fff,
            midr: 0xf0510,
        };
        let features = probe.features().unwrap();
        for name in ["sve2", "i8mm", "bf16", "sme", "smei8i32", "smefa64"] {
            assert!(features.contains(&name), "{name} missing from {features:?}");
        }
        // `max,sme=off` clears exactly those.
        let without_sme = Probe {
            hwcap2: 0x77fff,
            ..probe
        };
        assert!(!without_sme
            .features()
            .unwrap()
            .iter()
            .any(|f| f.starts_with("sme")));
    }

    #[test]
    fn unknown_bits_are_an_error() {
        let probe = Probe {
            hwcap: 1 << 40,
            hwcap2: 0,
            midr: 0,
        };
        assert!(probe.features().is_err());
        assert!(Probe::from_json("{\"hwcap\": 3}").is_err());
        assert!(Probe::from_json("Traceback").is_err());
    }

    #[test]
    fn slugs_have_no_commas() {
        assert_eq!(cpu_slug("max,sme=off"), "max-sme-off");
        assert_eq!(cpu_slug("neoverse-n1"), "neoverse-n1");
    }
}
