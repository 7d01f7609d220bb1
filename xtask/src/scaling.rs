//! `cargo xtask scaling-docs`: the scaling table of docs/PERFORMANCE.md,
//! between the scaling markers, from qneon's per-thread runs
//! (`target/run/scaling.json`, `cargo xtask run --scaling`) and TFLite +
//! XNNPACK's (`target/compare/threads.json`, `cargo xtask compare
//! --threads 4`) measured on the same `-cpu`. A module of its own because
//! it reads both (`run` and `compare` stay apart).

use std::fs;
use std::path::Path;

use crate::compare::threads as litert;
use crate::run::scaling::{self, Row};
use crate::util::{self, bail, thousands, Result};

pub const SECTION_BEGIN: &str = "<!-- scaling:begin -->";
pub const SECTION_END: &str = "<!-- scaling:end -->";

pub fn cli(args: &[String]) -> Result {
    if !args.is_empty() {
        bail!("scaling-docs takes no options");
    }
    let path = util::target_dir().join("run/scaling.json");
    let text = fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run `cargo xtask run --scaling` first)",
            path.display()
        )
    })?;
    let (cpu, config, rows) = scaling::read(&text)?;
    let litert = litert_rows(&util::target_dir().join("compare/threads.json"), &cpu)?;
    let doc = util::rewrite_section(
        util::PERFORMANCE_DOC,
        SECTION_BEGIN,
        SECTION_END,
        &markdown(&cpu, &config, &rows, &litert),
    )?;
    println!(
        "rewrote the scaling section of {} from {}",
        doc.display(),
        path.display()
    );
    Ok(())
}

fn file_name(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

/// The section: per model and thread count, qneon's critical path,
/// speedups and balance; TFLite + XNNPACK's busiest thread at the same
/// thread count where `threads.json` has it, and qneon's ops path over it.
fn markdown(cpu: &str, config: &str, rows: &[Row], litert: &[litert::Threaded]) -> String {
    let mut md = format!(
        "qneon `{config}` and TFLite + XNNPACK under `qemu-aarch64 -cpu {cpu}` (each guest thread a \
         vCPU, counted apart), instructions per invoke. qneon: *critical path* = sum over ops of the \
         busiest thread's instructions (*ops path*) + setting the inputs on the main thread and the \
         interpreter between ops, per invoke (*serial*; loading, planning and the process's start-up, \
         once per run, are in no figure); speedups against 1 thread of the same command; *balance* = sum of busiest / \
         sum of means over the N threads (1.00 even). TFLite: the busiest thread's instructions per \
         inference ((2R - R) / R, R in brackets), spin-waiting included; ratio = qneon's ops path / TFLite's.\n\n"
    );
    md += "| model | threads | critical path | ops path | serial | speedup | ops speedup | balance | TFLite + XNNPACK | ratio |\n";
    md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for r in rows {
        let name = file_name(&r.model);
        let tflite = litert
            .iter()
            .find(|l| l.model == name && l.threads == r.threads)
            .map(|l| (l.critical_path(), l.reps));
        let (tflite, ratio) = match tflite {
            Some((t, reps)) if t > 0 => (
                format!("{} (R {reps})", thousands(t)),
                format!("{:.2}", r.ops_path as f64 / t as f64),
            ),
            _ => ("-".into(), "-".into()),
        };
        md += &format!(
            "| {name} | {} | {} | {} | {} | {:.2}x | {:.2}x | {:.2} | {tflite} | {ratio} |\n",
            r.threads,
            thousands(r.critical_path),
            thousands(r.ops_path),
            thousands(r.serial),
            r.speedup,
            r.ops_speedup,
            r.balance
        );
    }
    md
}

/// Checks that the TFLite rows are usable next to qneon's: same `-cpu`.
fn litert_rows(path: &Path, cpu: &str) -> Result<Vec<litert::Threaded>> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    match litert::read_rows(path, cpu) {
        Ok(rows) => Ok(rows),
        Err(e) => bail!("{e} (run `cargo xtask compare --threads 4 --cpu {cpu}`)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn row(model: &str, threads: u32, cp: u64, ops: u64, speedup: f64) -> Row {
        Row {
            model: model.into(),
            threads,
            critical_path: cp,
            ops_path: ops,
            serial: cp - ops,
            speedup,
            ops_speedup: speedup,
            balance: 1.25,
        }
    }

    #[test]
    fn renders_the_table_next_to_tflite() {
        let rows = [
            row("models/a.tflite", 1, 50, 40, 1.0),
            row("models/b.tflite", 1, 1000, 900, 1.0),
            row("models/b.tflite", 4, 400, 300, 2.5),
        ];
        let tflite = litert::Threaded {
            model: "b.tflite".into(),
            threads: 4,
            reps: 1,
            counts: BTreeMap::from([(0, [1000, 1600]), (1, [100, 700])]),
        };
        let md = markdown("n1", "neon-lut", &rows, &[tflite]);
        assert!(
            md.contains(
                "| b.tflite | 4 | 400 | 300 | 100 | 2.50x | 2.50x | 1.25 | 600 (R 1) | 0.50 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| a.tflite | 1 | 50 | 40 | 10 | 1.00x | 1.00x | 1.25 | - | - |"),
            "{md}"
        );
    }

    #[test]
    fn the_committed_doc_has_the_section() {
        let doc = fs::read_to_string(util::root().join(util::PERFORMANCE_DOC)).unwrap();
        assert!(util::replace_between(&doc, SECTION_BEGIN, SECTION_END, "x").is_ok());
    }
}
