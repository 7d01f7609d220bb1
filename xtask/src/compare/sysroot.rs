//! `cargo xtask compare --setup`: an aarch64 Python with LiteRT, unpacked
//! under `target/litert-aarch64/` without installing anything aarch64 on
//! the machine.
//!
//! Debian's arm64 `python3.11` and the shared libraries it and the wheels
//! need are fetched with `apt-get download` (after `dpkg --add-architecture
//! arm64`) and extracted with `dpkg-deb -x` into `sysroot/`; the pinned
//! manylinux aarch64 wheels are fetched with `pip download` and unzipped
//! into `site/` (put on `PYTHONPATH`). Everything is then byte-compiled
//! once by the emulated Python itself, so that no later run writes `.pyc`
//! files (a run that compiles costs more instructions than one that does
//! not). `setup.json` records what was installed; when it is present and
//! lists the same pinned wheels, setup does nothing.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

use crate::setup;
use crate::util::{self, bail, Result};

/// The wheels, pinned so that every machine measures the same code:
/// LiteRT 2.3.0 (built with clang 18), numpy 2.2 and the packages
/// `ai-edge-litert` 2.3.0 declares as dependencies.
pub const WHEELS: &[&str] = &[
    "ai-edge-litert==2.3.0",
    "numpy==2.2.6",
    "backports.strenum==1.2.8",
    "flatbuffers==25.12.19",
    "ml_dtypes==0.6.0",
    "protobuf==7.36.2",
    "tqdm==4.70.1",
    "typing-extensions==4.16.0",
];

/// The manylinux tags pip may accept: pip 23 does not widen a newer
/// `manylinux_2_X` tag to the older ones, and the wheels above span
/// `manylinux2014` (glibc 2.17) to `manylinux_2_27`. Debian 12's glibc is
/// 2.36, so anything up to that runs.
const MANYLINUX_TAGS: &[&str] = &[
    "manylinux2014_aarch64",
    "manylinux_2_17_aarch64",
    "manylinux_2_24_aarch64",
    "manylinux_2_27_aarch64",
    "manylinux_2_28_aarch64",
    "manylinux_2_31_aarch64",
    "manylinux_2_34_aarch64",
    "manylinux_2_36_aarch64",
];

/// The Python the wheels are built for, and Debian 12's `python3.11`.
pub const PYTHON_VERSION: &str = "3.11";

/// The arm64 packages whose dependency closure (Depends and PreDepends on
/// arm64 packages) makes up the sysroot: the interpreter, its standard
/// library, and the C++ runtime the LiteRT and numpy extensions link.
const ROOT_PACKAGES: &[&str] = &[
    "python3.11-minimal:arm64",
    "libpython3.11-stdlib:arm64",
    "libstdc++6:arm64",
    "libgcc-s1:arm64",
];

/// Bumped whenever the layout or the steps change, so that an older tree
/// is rebuilt rather than trusted.
const FORMAT: u64 = 1;

/// Where everything lives.
pub struct Layout {
    pub base: PathBuf,
}

impl Layout {
    pub fn new() -> Layout {
        Layout {
            base: util::target_dir().join("litert-aarch64"),
        }
    }
    pub fn sysroot(&self) -> PathBuf {
        self.base.join("sysroot")
    }
    /// The directory on `PYTHONPATH`: the unzipped wheels.
    pub fn site(&self) -> PathBuf {
        self.base.join("site")
    }
    pub fn python(&self) -> PathBuf {
        self.sysroot()
            .join("usr/bin")
            .join(format!("python{PYTHON_VERSION}"))
    }
    /// Per-CPU views of the sysroot (see `cpuinfo`).
    pub fn roots(&self) -> PathBuf {
        self.base.join("roots")
    }
    fn debs(&self) -> PathBuf {
        self.base.join("debs")
    }
    fn wheels(&self) -> PathBuf {
        self.base.join("wheels")
    }
    fn marker(&self) -> PathBuf {
        self.base.join("setup.json")
    }
}

/// Whether `marker` (the text of `setup.json`) describes a finished setup
/// of the current format with the current pinned wheels.
pub fn marker_is_current(marker: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(marker) else {
        return false;
    };
    let wheels: Vec<&str> = value["wheels"]
        .as_array()
        .map(|w| w.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    value["format"].as_u64() == Some(FORMAT)
        && value["complete"].as_bool() == Some(true)
        && wheels == WHEELS
}

/// Sets everything up unless `setup.json` says it is done; returns the
/// layout.
pub fn ensure() -> Result<Layout> {
    let layout = Layout::new();
    let current = fs::read_to_string(layout.marker())
        .map(|text| marker_is_current(&text))
        .unwrap_or(false);
    if current && layout.python().is_file() && layout.site().is_dir() {
        return Ok(layout);
    }
    let started = Instant::now();
    util::step(format!(
        "setting up LiteRT for aarch64 in {}",
        layout.base.display()
    ));
    // qemu-user and a C compiler for the counting plugin.
    setup::ensure(false)?;
    ensure_host_tools()?;
    // Anything left from an older or interrupted setup goes.
    let _ = fs::remove_file(layout.marker());
    for dir in [layout.sysroot(), layout.site(), layout.roots()] {
        remove_dir(&dir)?;
    }
    let packages = fetch_debs(&layout)?;
    fetch_wheels(&layout)?;
    check_libraries(&layout)?;
    compile_bytecode(&layout)?;
    let marker = json!({
        "format": FORMAT,
        "python": PYTHON_VERSION,
        "debian_packages": packages
            .iter()
            .map(|(name, version)| json!({"package": name, "version": version}))
            .collect::<Vec<_>>(),
        "wheels": WHEELS,
        "complete": true,
    });
    fs::write(
        layout.marker(),
        serde_json::to_string_pretty(&marker)? + "\n",
    )?;
    eprintln!(
        "compare: LiteRT aarch64 setup done in {:.0} s ({} Debian packages, {} wheels)",
        started.elapsed().as_secs_f64(),
        packages.len(),
        WHEELS.len()
    );
    Ok(layout)
}

fn remove_dir(dir: &Path) -> Result {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => bail!("cannot remove {}: {e}", dir.display()),
    }
}

fn create_dir(dir: &Path) -> Result {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()).into())
}

/// apt/dpkg (always on Debian), pip for the host Python (installed from
/// `python3-pip` when missing) and `setarch` (util-linux, essential).
fn ensure_host_tools() -> Result {
    for tool in ["dpkg", "dpkg-deb", "apt-get", "apt-cache", "setarch"] {
        if util::which(tool).is_none() {
            bail!("compare: `{tool}` not found; the LiteRT setup needs a Debian-based machine");
        }
    }
    let has_pip = Command::new("python3")
        .args(["-m", "pip", "--version"])
        .output()
        .map(|out| out.status.success())
        .unwrap_or(false);
    if !has_pip {
        eprintln!("compare: installing python3-pip (pip downloads the aarch64 wheels)");
        require_root("install python3-pip")?;
        util::run(&mut util::apt_get(&["update"]))?;
        util::run(&mut util::apt_get(&[
            "install",
            "-y",
            "--no-install-recommends",
            "python3-pip",
        ]))?;
    }
    Ok(())
}

/// Changing dpkg's architectures and installing packages need root.
fn require_root(what: &str) -> Result {
    let uid = util::capture(Command::new("id").arg("-u"))?;
    if uid.trim() != "0" {
        bail!("compare: the LiteRT setup must {what}, which needs root; re-run as root");
    }
    Ok(())
}

/// Adds arm64 as a dpkg architecture if it is not one yet, refreshes the
/// package lists if apt knows no arm64 Python, downloads the closure of
/// [`ROOT_PACKAGES`] and extracts it into the sysroot; returns the
/// packages and versions.
fn fetch_debs(layout: &Layout) -> Result<Vec<(String, String)>> {
    let native = util::capture(Command::new("dpkg").arg("--print-architecture"))?;
    let foreign = util::capture(Command::new("dpkg").arg("--print-foreign-architectures"))?;
    let mut refresh = false;
    if native.trim() != "arm64" && !foreign.split_whitespace().any(|a| a == "arm64") {
        eprintln!("compare: adding arm64 as a dpkg architecture (for apt-get download only)");
        require_root("add arm64 as a dpkg architecture")?;
        util::run(Command::new("dpkg").args(["--add-architecture", "arm64"]))?;
        refresh = true;
    }
    let known = Command::new("apt-cache")
        .args(["show", ROOT_PACKAGES[0]])
        .output()
        .map(|out| out.status.success() && !out.stdout.is_empty())
        .unwrap_or(false);
    if refresh || !known {
        require_root("refresh the apt package lists")?;
        util::run(&mut util::apt_get(&["update"]))?;
    }

    let mut depends = Command::new("apt-cache");
    depends.args([
        "depends",
        "--recurse",
        "--no-recommends",
        "--no-suggests",
        "--no-conflicts",
        "--no-breaks",
        "--no-replaces",
        "--no-enhances",
    ]);
    depends.args(ROOT_PACKAGES);
    let graph = parse_depends(&util::capture(&mut depends)?);
    let packages = arm64_closure(&graph, ROOT_PACKAGES)?;
    eprintln!(
        "compare: downloading {} arm64 Debian packages: {}",
        packages.len(),
        packages
            .iter()
            .map(|p| p.trim_end_matches(":arm64"))
            .collect::<Vec<_>>()
            .join(" ")
    );

    let debs = layout.debs();
    remove_dir(&debs)?;
    create_dir(&debs)?;
    util::run(
        Command::new("apt-get")
            .arg("download")
            .args(&packages)
            .current_dir(&debs),
    )?;

    let sysroot = layout.sysroot();
    create_dir(&sysroot)?;
    let mut installed = Vec::new();
    let mut files: Vec<PathBuf> = fs::read_dir(&debs)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    files.sort();
    for deb in &files {
        let fields = util::capture(
            Command::new("dpkg-deb")
                .args(["--show", "--showformat=${Package} ${Version}"])
                .arg(deb),
        )?;
        let Some((name, version)) = fields.trim().split_once(' ') else {
            bail!(
                "unexpected `dpkg-deb --show` output for {}: {fields:?}",
                deb.display()
            );
        };
        installed.push((name.to_string(), version.to_string()));
        util::capture(Command::new("dpkg-deb").arg("-x").arg(deb).arg(&sysroot))?;
    }
    if installed.len() != packages.len() {
        bail!(
            "apt-get download fetched {} packages, {} were asked for",
            installed.len(),
            packages.len()
        );
    }
    if !layout.python().is_file() {
        bail!(
            "the Debian packages did not provide {}",
            layout.python().display()
        );
    }
    Ok(installed)
}

/// `apt-cache depends` output as a map from package to the packages it
/// depends or pre-depends on. Virtual packages keep their `<...>`
/// brackets (and the lines naming their providers are skipped), so a
/// caller can tell them apart.
pub fn parse_depends(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with([' ', '|']) {
            let name = line.trim().to_string();
            graph.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let entry = line.trim_start().trim_start_matches('|');
        let dependency = entry
            .strip_prefix("PreDepends:")
            .or_else(|| entry.strip_prefix("Depends:"));
        if let (Some(dependency), Some(current)) = (dependency, &current) {
            graph
                .entry(current.clone())
                .or_default()
                .push(dependency.trim().to_string());
        }
    }
    graph
}

/// The arm64 packages reachable from `roots` through arm64 dependencies,
/// sorted. Architecture-independent packages (data such as media types,
/// and through them dpkg itself) are left out: nothing here executes them.
pub fn arm64_closure(graph: &BTreeMap<String, Vec<String>>, roots: &[&str]) -> Result<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut queue: VecDeque<String> = roots.iter().map(|r| r.to_string()).collect();
    while let Some(package) = queue.pop_front() {
        if !seen.insert(package.clone()) {
            continue;
        }
        let Some(dependencies) = graph.get(&package) else {
            bail!("apt-cache knows no package {package} (is arm64 in the apt sources?)");
        };
        for dependency in dependencies {
            if dependency.ends_with(":arm64") && !dependency.starts_with('<') {
                queue.push_back(dependency.clone());
            }
        }
    }
    Ok(seen.into_iter().collect())
}

/// Downloads the pinned wheels and unzips them into `site/`.
fn fetch_wheels(layout: &Layout) -> Result {
    let wheels = layout.wheels();
    remove_dir(&wheels)?;
    create_dir(&wheels)?;
    eprintln!("compare: downloading wheels: {}", WHEELS.join(" "));
    let mut pip = Command::new("python3");
    pip.args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"]);
    for tag in MANYLINUX_TAGS {
        pip.args(["--platform", tag]);
    }
    pip.args(["--python-version", PYTHON_VERSION, "--implementation", "cp"])
        .arg("--dest")
        .arg(&wheels)
        .args(WHEELS);
    util::run(&mut pip)?;

    let site = layout.site();
    create_dir(&site)?;
    let mut files: Vec<PathBuf> = fs::read_dir(&wheels)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    files.sort();
    if files.len() != WHEELS.len() {
        bail!(
            "pip downloaded {} wheels, {} were asked for",
            files.len(),
            WHEELS.len()
        );
    }
    for wheel in &files {
        util::capture(
            Command::new("python3")
                .args(["-m", "zipfile", "-e"])
                .arg(wheel)
                .arg(&site),
        )?;
    }
    Ok(())
}

/// Every shared library the sysroot and the wheels ask for (`DT_NEEDED`)
/// must be one of theirs: a missing one would only show up as an import
/// error deep inside a measurement. Skipped, with a note, without
/// `readelf`.
fn check_libraries(layout: &Layout) -> Result {
    if util::which("readelf").is_none() {
        eprintln!("compare: readelf not found; not checking the shared library closure");
        return Ok(());
    }
    let mut objects = Vec::new();
    for dir in [layout.sysroot(), layout.site()] {
        collect_shared_objects(&dir, &mut objects)?;
    }
    let provided: BTreeSet<String> = objects
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let mut missing = BTreeSet::new();
    for chunk in objects.chunks(64) {
        let mut readelf = Command::new("readelf");
        readelf.args(["--dynamic", "--wide"]).args(chunk);
        // readelf exits non-zero on a file that is not ELF (a linker script
        // named .so); what it printed for the others still counts.
        let out = readelf.output()?;
        for needed in needed_libraries(&String::from_utf8_lossy(&out.stdout)) {
            if !provided.contains(&needed) {
                missing.insert(needed);
            }
        }
    }
    if !missing.is_empty() {
        bail!(
            "the aarch64 sysroot lacks shared libraries the wheels or Python need: {} \
             (add their Debian packages to ROOT_PACKAGES)",
            missing.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

fn collect_shared_objects(dir: &Path, out: &mut Vec<PathBuf>) -> Result {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            collect_shared_objects(&path, out)?;
        } else if kind.is_file() || kind.is_symlink() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".so") || name.contains(".so.") {
                out.push(path);
            }
        }
    }
    Ok(())
}

/// The `NEEDED` entries of `readelf --dynamic` output.
pub fn needed_libraries(readelf_output: &str) -> Vec<String> {
    readelf_output
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| {
            let start = l.find('[')? + 1;
            let end = l[start..].find(']')? + start;
            Some(l[start..end].to_string())
        })
        .collect()
}

/// Byte-compiles the standard library and the wheels with the emulated
/// Python (so the `.pyc` files are exactly what it would write).
fn compile_bytecode(layout: &Layout) -> Result {
    eprintln!("compare: byte-compiling the standard library and the wheels under qemu");
    let stdlib = layout
        .sysroot()
        .join("usr/lib")
        .join(format!("python{PYTHON_VERSION}"));
    let mut cmd = Command::new("qemu-aarch64");
    cmd.arg("-L")
        .arg(layout.sysroot())
        .args(["-cpu", "neoverse-n1"])
        .arg(layout.python())
        .args(["-m", "compileall", "-q", "-j", "2"])
        // Test suites and Python 2 era files that do not compile are
        // never imported.
        .args(["-x", r"(/test/|/tests/|lib2to3|/idlelib/)"])
        .arg(&stdlib)
        .arg(layout.site());
    // compileall reports files it could not compile but carries on; the
    // runs that matter import only what compiled.
    let out = cmd.output()?;
    if !out.status.success() {
        eprintln!(
            "compare: note: compileall reported problems (modules that are never imported):\n{}",
            String::from_utf8_lossy(&out.stdout).trim_end()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPENDS: &str = "\
python3.11-minimal:arm64
  PreDepends: libc6:arm64
  Depends: libexpat1:arm64
libpython3.11-stdlib:arm64
 |Depends: <media-types:arm64>
    media-types
  Depends: libc6:arm64
  Depends: libreadline8:arm64
libc6:arm64
  Depends: libgcc-s1:arm64
libexpat1:arm64
  Depends: libc6:arm64
libgcc-s1:arm64
  Depends: libc6:arm64
libreadline8:arm64
  Depends: <readline-common:arm64>
    readline-common
<media-types:arm64>
media-types
readline-common
  Depends: dpkg
    dpkg:arm64
dpkg:arm64
  Depends: tar:arm64
";

    #[test]
    fn closure_follows_arm64_packages_only() {
        let graph = parse_depends(DEPENDS);
        assert_eq!(
            graph["python3.11-minimal:arm64"],
            ["libc6:arm64", "libexpat1:arm64"]
        );
        assert_eq!(
            graph["libpython3.11-stdlib:arm64"],
            ["<media-types:arm64>", "libc6:arm64", "libreadline8:arm64"]
        );
        let closure = arm64_closure(
            &graph,
            &["python3.11-minimal:arm64", "libpython3.11-stdlib:arm64"],
        )
        .unwrap();
        assert_eq!(
            closure,
            [
                "libc6:arm64",
                "libexpat1:arm64",
                "libgcc-s1:arm64",
                "libpython3.11-stdlib:arm64",
                "libreadline8:arm64",
                "python3.11-minimal:arm64"
            ]
        );
    }

    #[test]
    fn closure_of_an_unknown_package_is_an_error() {
        let graph = parse_depends(DEPENDS);
        let err = arm64_closure(&graph, &["python3.12:arm64"]).unwrap_err();
        assert!(err.to_string().contains("python3.12:arm64"), "{err}");
    }

    #[test]
    fn needed_entries_are_read_from_readelf() {
        let text = "\
Dynamic section at offset 0x1 contains 3 entries:
  Tag        Type                         Name/Value
 0x0000000000000001 (NEEDED)             Shared library: [libstdc++.so.6]
 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]
 0x000000000000000e (SONAME)             Library soname: [libfoo.so]
";
        assert_eq!(needed_libraries(text), ["libstdc++.so.6", "libc.so.6"]);
    }

    #[test]
    fn marker_must_match_the_pinned_wheels() {
        let good = json!({"format": FORMAT, "complete": true, "wheels": WHEELS}).to_string();
        assert!(marker_is_current(&good));
        let mut other = WHEELS.to_vec();
        other[1] = "numpy==2.2.5";
        let stale = json!({"format": FORMAT, "complete": true, "wheels": other}).to_string();
        assert!(!marker_is_current(&stale));
        let unfinished = json!({"format": FORMAT, "complete": false, "wheels": WHEELS}).to_string();
        assert!(!marker_is_current(&unfinished));
        assert!(!marker_is_current("not json"));
    }
}
