//! Region markers for instruction counts per operator.
//!
//! `cargo xtask run` and `cargo xtask compare` run `qneon` under
//! `qemu-aarch64` with the counting plugin in `tools/qemu-insn/`. The plugin
//! attributes every executed guest instruction to the current *region*, and
//! [`region`] switches it: `qneon run` calls `region(id)` right before a
//! node's kernel and `region(OUTSIDE)` right after it, so each node's
//! instructions are counted exactly, in one run. The region of each node is
//! in `qneon run --json`'s `ops[].region`. Five more: [`BETWEEN`], the
//! invoke loop's own work between two nodes (on whichever thread runs the
//! loop); [`INPUTS`], setting the inputs before the invokes; [`PROFILER`],
//! `qneon run`'s own clock reads around the nodes (instrumentation, not the
//! runtime's work: in no per-invoke figure); 0
//! ([`OUTSIDE`]), the process's start-up before the first marker (once)
//! and, on a worker thread, waiting for work; and [`SETUP`], what a run
//! does once (loading the model, planning, making the session, reading and
//! writing files), so that a count per invoke leaves it out.
//!
//! The marker is the single instruction `movz xzr, #(0xA000 | id)`, `id` in
//! 0..=[`MAX_REGION`]. It writes the zero register, so on hardware it does
//! nothing but take an issue slot, and compilers never emit it, so the
//! plugin cannot mistake ordinary code for a marker. On other architectures
//! [`region`] compiles to nothing.

/// The region of everything outside the nodes.
pub(crate) const OUTSIDE: u16 = 0;

/// The largest region id a marker can carry (12 bits).
pub(crate) const MAX_REGION: u16 = 0xFFF;

/// The region of what `qneon run` does once per run, not per invoke:
/// loading and planning the model, reading the inputs' files, writing the
/// outputs and the report. The last id, kept from the nodes.
pub(crate) const SETUP: u16 = MAX_REGION;

/// The region of the invoke loop between two nodes (after a node's `end`,
/// until the next node's `begin`): serial work whatever the thread count.
pub(crate) const BETWEEN: u16 = SETUP - 1;

/// The region of setting the inputs before a step's invokes (copying them
/// into the session): per invoke with `--reps 1`.
pub(crate) const INPUTS: u16 = BETWEEN - 1;

/// The region of `qneon run`'s clock reads, one per node for `--profile`'s
/// times: work of the measuring, not of the runtime, so that the serial
/// part of a count per thread is the invoke loop's alone (about 150
/// instructions a node under qemu).
pub(crate) const PROFILER: u16 = INPUTS - 1;

/// The largest region id a node gets.
const MAX_NODE_REGION: u16 = PROFILER - 1;

/// Makes `id` (at most [`MAX_REGION`]; higher bits are ignored) the current
/// instruction-count region (see the module doc).
///
/// The immediate of `movz` must be a constant, so a run-time `id` goes
/// through a jump table of 4096 markers: a few instructions per switch,
/// which the plugin counts like any others (in the region being entered).
/// The marker is an ordinary `asm!` block that may touch memory, so the
/// compiler does not move the kernel's loads and stores across it.
#[inline(always)]
pub(crate) fn region(id: u16) {
    #[cfg(target_arch = "aarch64")]
    {
        macro_rules! marker {
            ($hi:literal, $mid:literal, $lo:literal) => {
                // SAFETY: `movz xzr, #imm` writes only the zero register: no
                // register, flag, stack or memory state changes. Memory is
                // deliberately not declared untouched (no `nomem`), so the
                // compiler keeps memory accesses on their side of it.
                unsafe {
                    core::arch::asm!(
                        "movz xzr, #{imm}",
                        imm = const 0xA000 | ($hi << 8) | ($mid << 4) | $lo,
                        options(nostack, preserves_flags),
                    )
                }
            };
        }
        // One arm per value of the low four bits.
        macro_rules! low {
            ($hi:literal, $mid:literal, $lo:expr) => {
                match $lo {
                    0 => marker!($hi, $mid, 0),
                    1 => marker!($hi, $mid, 1),
                    2 => marker!($hi, $mid, 2),
                    3 => marker!($hi, $mid, 3),
                    4 => marker!($hi, $mid, 4),
                    5 => marker!($hi, $mid, 5),
                    6 => marker!($hi, $mid, 6),
                    7 => marker!($hi, $mid, 7),
                    8 => marker!($hi, $mid, 8),
                    9 => marker!($hi, $mid, 9),
                    10 => marker!($hi, $mid, 10),
                    11 => marker!($hi, $mid, 11),
                    12 => marker!($hi, $mid, 12),
                    13 => marker!($hi, $mid, 13),
                    14 => marker!($hi, $mid, 14),
                    _ => marker!($hi, $mid, 15),
                }
            };
        }
        // One arm per value of the middle four bits.
        macro_rules! middle {
            ($hi:literal, $mid:expr, $lo:expr) => {
                match $mid {
                    0 => low!($hi, 0, $lo),
                    1 => low!($hi, 1, $lo),
                    2 => low!($hi, 2, $lo),
                    3 => low!($hi, 3, $lo),
                    4 => low!($hi, 4, $lo),
                    5 => low!($hi, 5, $lo),
                    6 => low!($hi, 6, $lo),
                    7 => low!($hi, 7, $lo),
                    8 => low!($hi, 8, $lo),
                    9 => low!($hi, 9, $lo),
                    10 => low!($hi, 10, $lo),
                    11 => low!($hi, 11, $lo),
                    12 => low!($hi, 12, $lo),
                    13 => low!($hi, 13, $lo),
                    14 => low!($hi, 14, $lo),
                    _ => low!($hi, 15, $lo),
                }
            };
        }
        let (mid, lo) = ((id >> 4) & 0xF, id & 0xF);
        match (id >> 8) & 0xF {
            0 => middle!(0, mid, lo),
            1 => middle!(1, mid, lo),
            2 => middle!(2, mid, lo),
            3 => middle!(3, mid, lo),
            4 => middle!(4, mid, lo),
            5 => middle!(5, mid, lo),
            6 => middle!(6, mid, lo),
            7 => middle!(7, mid, lo),
            8 => middle!(8, mid, lo),
            9 => middle!(9, mid, lo),
            10 => middle!(10, mid, lo),
            11 => middle!(11, mid, lo),
            12 => middle!(12, mid, lo),
            13 => middle!(13, mid, lo),
            14 => middle!(14, mid, lo),
            _ => middle!(15, mid, lo),
        }
    }
    #[cfg(not(target_arch = "aarch64"))]
    let _ = id;
}

/// The region of each node, in execution order: node `p` gets `p + 1` when
/// every node has its own id; a model with more nodes than ids gets one
/// region per op type instead (ids in order of first appearance), and
/// `per_node` is false.
pub(crate) fn assign(ops: &[&str]) -> (Vec<u16>, bool) {
    if ops.len() <= usize::from(MAX_NODE_REGION) {
        return ((1..=ops.len() as u16).collect(), true);
    }
    let mut types: Vec<&str> = Vec::new();
    let regions = ops
        .iter()
        .map(|op| {
            let position = types.iter().position(|t| t == op).unwrap_or_else(|| {
                types.push(op);
                types.len() - 1
            });
            // More op types than ids cannot happen (TFLite has a few
            // hundred builtin ops); should it, they share the last id.
            (position + 1).min(usize::from(MAX_NODE_REGION)) as u16
        })
        .collect();
    (regions, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_gets_its_own_region_while_ids_last() {
        let (regions, per_node) = assign(&["ADD", "ADD", "SOFTMAX"]);
        assert_eq!((regions, per_node), (vec![1, 2, 3], true));
        let many: Vec<&str> = (0..5000)
            .map(|i| if i % 3 == 0 { "SOFTMAX" } else { "ADD" })
            .collect();
        let (regions, per_node) = assign(&many);
        assert!(!per_node);
        assert_eq!(&regions[..4], &[1, 2, 2, 1]);
        // The last id is the set-up's: one node more than ids left goes by type.
        let exactly: Vec<&str> = vec!["ADD"; usize::from(MAX_NODE_REGION)];
        assert_eq!(assign(&exactly), ((1..=MAX_NODE_REGION).collect(), true));
        let one_more: Vec<&str> = vec!["ADD"; usize::from(MAX_NODE_REGION) + 1];
        assert!(!assign(&one_more).1);
        assert!(!assign(&many)
            .0
            .iter()
            .any(|r| [SETUP, BETWEEN, INPUTS, PROFILER].contains(r)));
    }

    #[test]
    fn region_runs_anywhere() {
        // On the host it is nothing; on aarch64 every arm is one marker.
        for id in [OUTSIDE, 1, 0x10, 0x100, 0x44D, MAX_REGION] {
            region(id);
        }
    }
}
