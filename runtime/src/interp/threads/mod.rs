//! Several threads per invoke ([`Options::threads`](super::Options::threads)):
//! which nodes split and how (the cost model, fixed at load), and the pool
//! that runs their shares.
//!
//! The split: a node whose kernel can share its tiles out
//! ([`Kernel::split`]) and whose work is worth more than one thread gets
//! `n` threads, and its tiles are cut once, at load, into `n` ranges of
//! about equal size ([`Share`]), each writing its own band of output 0
//! ([`Kernel::band`]). The same cut every invoke, so nothing is decided or
//! allocated at run time; a tile range is the library call it always was,
//! so the bytes are those of one thread. A kernel that can also compute
//! ranges of output 0's columns ([`Kernel::columns`]: a pointwise
//! CONV_2D's output channels) is cut by columns instead when that costs
//! its busiest thread less (`columns.rs`: few rows, many channels).
//!
//! The cost model ([`shares`]): a thread is worth adding while each
//! share's work is at least [`MIN_MACS_PER_THREAD`] (or
//! [`MIN_ELEMENTS_PER_THREAD`]) plus twice the setup every share's call
//! pays before its tiles ([`share_setup`]), a depthwise MAC counting as
//! [`DEPTHWISE_MAC_WEIGHT`] of a CONV_2D's ([`mac_weight`]): a CONV_2D band
//! is a GEMM call of its own over the whole filter, so bands of a layer with
//! few output rows and a large filter pay more setup than work
//! (person_detect's late 1x1 layers: a band of one or two rows costs about
//! 10,000 instructions of setup, and one layer of 61,453 instructions took
//! 90,747 in four bands); such a layer splits by output channels, each
//! share reading only its filters.
//!
//! The pool: a session with more than one thread keeps a
//! [`qneon_pool::Pool`] of `threads` threads, started with the session: the
//! invoke's own thread, which runs the loop over the nodes, and `threads -
//! 1` workers. A split node's shares run by one `broadcast`: share `i` on
//! the pool's thread `i`, the loop's thread running share 0, every share on
//! a thread of its own, the same at every invoke; workers a node does not
//! need are not woken. The output is cut at the shares' band boundaries
//! (`split_at_mut`) and each band, with its scratch, waits in a slot (a
//! `Mutex` on the stack) for its thread to take it: every thread owns its
//! band, in safe Rust. Idle workers spin briefly, yield, then sleep. A
//! call allocates nothing, so neither does a threaded invoke
//! (`tests/invoke_alloc.rs`).
//!
//! Why that pool (measured, issue 29): recursive `rayon::join` lets the
//! calling thread run the other half itself when no sleeping worker has
//! stolen it yet (under qemu person_detect ran on one thread and
//! MobileBert's split nodes mostly on two, whatever the thread count);
//! rayon's `broadcast` gives share `i` to thread `i` but allocates its job
//! list at every call (8,206 allocations in 200 invokes of the 1-layer
//! MobileBert at 4 threads); `paralight` allocates per call and parks
//! without spinning; `fork_union` builds C++; `rayon::scope` boxes every
//! job. Running borrowed work on persistent threads needs one lifetime
//! erased with `unsafe`: the pool crate does it, in one place, and this
//! crate keeps `forbid(unsafe_code)`.
//!
//! A panic inside a share is caught on its thread (`catch_unwind`) and
//! becomes that share's error; the other shares finish, the broadcast
//! returns, and the pool stays usable (the session's next invoke runs every
//! node again). A panic outside a share's kernel (the pool's own) is caught
//! around the broadcast and is an error too.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use qneon::Backend;
use qneon_pool::Pool;
use smallvec::{smallvec, SmallVec};

use super::info::NodeInfo;
use super::ops::{Columns, Ins, Io, Kernel, Outs};

mod columns;

pub(crate) use self::columns::{band_setup, column_overhead, column_setup, column_shares};

/// Least multiply-accumulates worth one more thread: below it, the wake-up
/// of a worker and a share's call cost about what the thread saves. 25,000
/// CONV_2D MACs are 3,000 to 14,000 instructions (0.12 to 0.56 per MAC,
/// the shallow layers the dearest); at 50,000, person_detect's first 1x1
/// layer (295,000 MACs, 165,716 instructions) took 4 of 8 threads, and the
/// model's 8-thread critical path was 501,578 instructions against 444,859
/// at 25,000 (`cargo xtask run --threads 4,8`, neoverse-n1).
pub(crate) const MIN_MACS_PER_THREAD: u64 = 25_000;
/// Least elements worth one more thread, for the ops counted in elements.
pub(crate) const MIN_ELEMENTS_PER_THREAD: u64 = 16 * 1024;

/// One thread's share of a node: its tiles and the bytes of output 0 they
/// write (cut by bands), or its columns and the bytes of its tile (cut by
/// columns, `columns.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Share {
    pub tiles: Range<usize>,
    pub bytes: Range<usize>,
    pub cut: Cut,
}

/// How a node's work is cut among threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Ranges of tiles ([`Kernel::split`]), each writing its band of output
    /// 0 in place.
    Bands,
    /// Ranges of output 0's columns ([`Kernel::columns`]), each computed
    /// into a tile in its thread's scratch, then copied into the output by
    /// the calling thread.
    Columns(Columns),
}

/// Work (MACs) a CONV_2D share's call spends before its tiles, per filter
/// weight, and once: each band is a GEMM call over the whole filter.
/// Measured on person_detect's 1x1 layers (qemu, `-cpu neoverse-n1`, NEON,
/// about 0.1 to 0.15 instructions per MAC): each extra band cost about
/// 1,800 + 0.45 instructions per weight, i.e. about 4 MACs per weight.
pub(crate) const CONV_SETUP_MACS_PER_WEIGHT: u64 = 4;
/// The part of a CONV_2D share's setup that does not grow with the filter.
pub(crate) const CONV_SETUP_MACS: u64 = 5_000;

/// What one MAC of `op` costs, in MACs of a CONV_2D (on which
/// [`MIN_MACS_PER_THREAD`] and the setups are measured): a depthwise MAC
/// has no dot product to use and an output stage every few taps, about 8
/// times a CONV_2D's (person_detect, `-cpu neoverse-n1`, NEON: 1.27 against
/// 0.148 instructions per MAC), so a depthwise layer is worth more threads
/// than its MACs say. With the `sdot` depthwise kernel the ratio is nearer
/// 4.5 (0.589 against 0.129), but 5 split person_detect worse than 8 (its
/// critical path at 4 and 8 threads 442,360 and 294,919 against 438,388
/// and 284,905): small depthwise layers gain from more threads than their
/// instructions say (edge rows and per-row set-up).
pub(crate) fn mac_weight(op: &str) -> u64 {
    if op == "DEPTHWISE_CONV_2D" {
        DEPTHWISE_MAC_WEIGHT
    } else {
        1
    }
}

/// [`mac_weight`] of DEPTHWISE_CONV_2D.
pub(crate) const DEPTHWISE_MAC_WEIGHT: u64 = 8;

/// The setup (in the node's work unit) each share of a node pays before its
/// tiles, beyond what the one-thread call pays: a CONV_2D's grows with its
/// filter (`weights` elements), unless its tiles are blocks of pixels
/// (`by_pixels`: a pointwise layer, whose bands then start on the GEMM's
/// row blocks and compute no partial block twice; only the call's own
/// setup is left); 0 for the other ops (their bands read only their own
/// part of the operands, or their setup is too small to see).
pub(crate) fn share_setup(op: &str, weights: usize, by_pixels: bool) -> u64 {
    match op {
        "CONV_2D" if by_pixels => CONV_SETUP_MACS,
        "CONV_2D" => CONV_SETUP_MACS + CONV_SETUP_MACS_PER_WEIGHT * weights as u64,
        _ => 0,
    }
}

/// The shares of a node of `work` (`unit`: `"MAC"` or elements), each
/// share paying `setup` before its tiles, whose output 0 has
/// `output_bytes`, run with up to `threads` threads: as many as keep each
/// share's work at least the minimum per thread plus twice its setup;
/// empty when it runs whole on one. An error when the kernel's bands
/// overlap, go backwards or leave the output (a kernel's bug, caught at
/// load).
pub(crate) fn shares(
    kernel: &dyn Kernel,
    (work, unit, setup): (u64, &str, u64),
    output_bytes: usize,
    threads: usize,
) -> Result<Vec<Share>, String> {
    let (Some(step), tiles) = (kernel.split(), kernel.tiles()) else {
        return Ok(Vec::new());
    };
    let step = step.max(1);
    let cuts = tiles.div_ceil(step);
    let per_thread = if unit == "MAC" {
        MIN_MACS_PER_THREAD
    } else {
        MIN_ELEMENTS_PER_THREAD
    };
    let per_share = per_thread.saturating_add(setup.saturating_mul(2));
    let worth = usize::try_from(work / per_share).unwrap_or(usize::MAX);
    let n = threads.min(cuts).min(worth);
    if n < 2 {
        return Ok(Vec::new());
    }
    let caller = if unit == "MAC" { CALLER_MACS } else { 0 };
    let bounds = band_bounds(cuts, n, work / cuts.max(1) as u64, caller);
    let mut all = Vec::with_capacity(n);
    let mut end = 0;
    for i in 0..n {
        let (first, last) = (bounds[i], bounds[i + 1]);
        let tiles = first * step..(last * step).min(tiles);
        let bytes = kernel.band(tiles.clone());
        if bytes.start < end || bytes.end < bytes.start || bytes.end > output_bytes {
            return Err(format!(
                "tiles {tiles:?} write bytes {bytes:?}: not after byte {end} and within the \
                 output's {output_bytes}"
            ));
        }
        end = bytes.end;
        all.push(Share {
            tiles,
            bytes,
            cut: Cut::Bands,
        });
    }
    Ok(all)
}

/// Work (MACs) the calling thread's share of a split node pays beyond the
/// others' before its tiles: it cuts the output into the shares' parts and
/// posts the workers (person_detect, `-cpu neoverse-n1`, NEON: about 700
/// instructions above its workers on a node of even shares, at 4 and 8
/// threads).
const CALLER_MACS: u64 = 2_500;

/// Where `n` shares of `cuts` cuts of `per_cut` work each start (and the
/// last ends): even, or with fewer cuts for share 0 when that lowers the
/// largest share's work given the calling thread's `caller` extra (a
/// layer of many small cuts: a 48x48 pointwise layer has 288 blocks of 8
/// pixels).
fn band_bounds(cuts: usize, n: usize, per_cut: u64, caller: u64) -> Vec<usize> {
    let even: Vec<usize> = (0..=n).map(|i| i * cuts / n).collect();
    let largest = |bounds: &[usize]| {
        (0..n)
            .map(|i| {
                let work = (bounds[i + 1] - bounds[i]) as u64 * per_cut;
                work + if i == 0 { caller } else { 0 }
            })
            .max()
            .unwrap_or(0)
    };
    if n < 2 || per_cut == 0 || caller == 0 {
        return even;
    }
    // Share 0's cuts when every share's work, the caller's extra included,
    // is the same: (cuts * per_cut + caller) / n - caller, in cuts.
    let total = cuts as u64 * per_cut + caller;
    let first = (total / n as u64).saturating_sub(caller) / per_cut;
    let first = usize::try_from(first).unwrap_or(0).clamp(1, cuts / n);
    let rest = cuts - first;
    let shifted: Vec<usize> = std::iter::once(0)
        .chain((0..n).map(|i| first + i * rest / (n - 1)))
        .collect();
    if largest(&shifted) < largest(&even) {
        shifted
    } else {
        even
    }
}

/// Marks what each thread of a threaded invoke does, for instruction counts
/// per thread and op: [`start`](Self::start) when a thread begins its share
/// of a node, [`idle`](Self::idle) when it has finished it (before it
/// waits or looks for more work).
pub trait ThreadMarks: Sync {
    /// This thread starts its share of `node`.
    fn start(&self, node: &NodeInfo);
    /// This thread finished its share.
    fn idle(&self);
}

/// A worker's scratch for the shares after the first (the first uses the
/// node's own scratch in the arena): 64-byte aligned like the arena's.
#[derive(Debug)]
pub(crate) struct Scratch {
    words: Vec<u128>,
    start: usize,
}

impl Scratch {
    pub(crate) fn new(bytes: usize) -> Scratch {
        let words = vec![0u128; (bytes + 64).div_ceil(16)];
        let address = words.as_ptr() as usize;
        let start = address.next_multiple_of(64) - address;
        Scratch { words, start }
    }

    fn bytes(&mut self, len: usize) -> &mut [u8] {
        let all = bytemuck::cast_slice_mut::<u128, u8>(&mut self.words);
        all.get_mut(self.start..self.start + len)
            .unwrap_or_default()
    }
}

/// What every share of a node reads: the kernel, the backend, its inputs,
/// the node (for the marks and messages).
pub(crate) struct Shared<'n, 'b> {
    pub kernel: &'n dyn Kernel,
    pub backend: Backend,
    pub ins: &'n Ins<'b>,
    pub node: &'n NodeInfo,
    pub scratch_bytes: usize,
    pub marks: Option<&'n dyn ThreadMarks>,
}

/// Shares a node can have without a heap allocation to hand them out (the
/// slots live on the stack, about 56 bytes each: 3.5 KiB at 64); more
/// threads than this (a server's cores) cost one allocation per split node.
const INLINE_SHARES: usize = 64;

/// One share's part of a node's run, waiting in its slot for the thread
/// that runs it: its band of output 0, where the band starts in the
/// output, and its scratch.
pub(super) struct Part<'a> {
    band: &'a mut [u8],
    band_start: usize,
    scratch: ShareScratch<'a>,
}

/// A share's scratch as its slot holds it: the node's own (the calling
/// thread's share), or a worker's [`Scratch`], whose bytes the share's own
/// thread takes, so that the calling thread does not carve every share's
/// before it posts them (about 25 instructions a share).
pub(super) enum ShareScratch<'a> {
    Node(&'a mut [u8]),
    Worker(&'a mut Scratch),
}

impl<'a> ShareScratch<'a> {
    /// Its first `len` bytes (a worker's scratch), or all of it (the
    /// node's, planned with the node's size).
    fn bytes(self, len: usize) -> &'a mut [u8] {
        match self {
            ShareScratch::Node(bytes) => bytes,
            ShareScratch::Worker(scratch) => scratch.bytes(len),
        }
    }
}

/// Runs `shares` of a node, `band` holding output 0 from byte
/// `band_start` on, on the threads of `pool`, share `i` on the `i`-th
/// thread counted from the calling one: cut by bands, the caller runs
/// share 0 with `scratch`, the others with `more` (share `i` with
/// `more[i - 1]`); cut by columns, share `i` runs with `more[i]` (`band` is
/// then the whole output).
/// A panic in a share becomes its error; the first error of the shares is
/// returned.
pub(crate) fn run_shares(
    pool: &Pool,
    shared: &Shared<'_, '_>,
    shares: &[Share],
    (band, band_start): (&mut [u8], usize),
    scratch: &mut [u8],
    more: &mut [Scratch],
) -> Result<(), String> {
    let threads = pool.threads();
    if shares.len() > threads || shares.len() > more.len() + 1 {
        return Err(format!(
            "{} shares for {threads} threads and {} scratches",
            shares.len(),
            more.len() + 1
        ));
    }
    if let Some(Cut::Columns(columns)) = shares.first().map(|s| s.cut) {
        return columns::run(pool, shared, shares, columns, (band, band_start), more);
    }
    // Cut the band at the shares' starts, in order (checked at load), and
    // lay each part in its share's slot.
    let mut slots: SmallVec<[Mutex<Option<Part<'_>>>; INLINE_SHARES]> = SmallVec::new();
    let (mut rest, mut rest_start) = (band, band_start);
    let mut scratches = std::iter::once(ShareScratch::Node(scratch))
        .chain(more.iter_mut().map(ShareScratch::Worker));
    for (i, scratch) in (0..shares.len()).zip(&mut scratches) {
        let end = shares
            .get(i + 1)
            .map_or(rest_start + rest.len(), |next| next.bytes.start);
        let cut = end.saturating_sub(rest_start).min(rest.len());
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(cut);
        slots.push(Mutex::new(Some(Part {
            band: part,
            band_start: rest_start,
            scratch,
        })));
        (rest, rest_start) = (tail, rest_start + cut);
    }
    run_parts(pool, shared, shares, &slots)
}

/// Runs share `i` with the part in `slots[i]` on the pool's thread `i`
/// (the caller runs share 0); the first error of the shares.
fn run_parts(
    pool: &Pool,
    shared: &Shared<'_, '_>,
    shares: &[Share],
    slots: &[Mutex<Option<Part<'_>>>],
) -> Result<(), String> {
    broadcast_shares(pool, shares.len(), |i| {
        let part = slots
            .get(i)
            .map(|slot| slot.lock().map(|mut part| part.take()));
        match (part, shares.get(i)) {
            (Some(Ok(Some(part))), Some(share)) => {
                let scratch = part.scratch.bytes(shared.scratch_bytes);
                run_share(shared, share, (part.band, part.band_start), scratch)
            }
            _ => Ok(()),
        }
    })
}

/// `task(i)` for every `i` in `0..shares` on the pool (share `i` on its
/// thread `i`); the first error of the shares, or an error when the
/// pool's own code panicked (a share's kernel catches its panics itself).
fn broadcast_shares(
    pool: &Pool,
    shares: usize,
    task: impl Fn(usize) -> Result<(), String> + Sync,
) -> Result<(), String> {
    let first_error: Mutex<Option<String>> = Mutex::new(None);
    let ran = catch_unwind(AssertUnwindSafe(|| {
        pool.broadcast(shares, |i| {
            if let Err(message) = task(i) {
                if let Ok(mut first) = first_error.lock() {
                    first.get_or_insert(message);
                }
            }
        })
    }));
    match (ran, first_error.into_inner()) {
        (_, Ok(Some(message))) => Err(message),
        (Ok(()), Ok(None)) => Ok(()),
        (Err(_), Ok(None)) => Err("a thread of the pool panicked".to_string()),
        (_, Err(_)) => Err("a share's error was lost to a panic".to_string()),
    }
}

/// Runs `share` of a node on this thread: its tiles into `band` (output 0
/// from byte `band_start` on) cut by bands, or its columns into the tile
/// `band` cut by columns; a panic becomes its error.
fn run_share(
    shared: &Shared<'_, '_>,
    share: &Share,
    (band, band_start): (&mut [u8], usize),
    scratch: &mut [u8],
) -> Result<(), String> {
    if let Some(marks) = shared.marks {
        marks.start(shared.node);
    }
    let outs: Outs<'_> = smallvec![band];
    // The inputs pushed in place: `collect` built the (400-byte) list and
    // then copied it, a `memcpy` of about 110 instructions a share.
    let mut io = Io {
        ins: Ins::new(),
        outs,
        scratch,
        out_start: band_start,
        state: Outs::new(),
    };
    io.ins.extend(shared.ins.iter().copied());
    let tiles = share.tiles.clone();
    let result = catch_unwind(AssertUnwindSafe(|| match share.cut {
        Cut::Bands => shared.kernel.run_tiles(shared.backend, tiles, &mut io),
        Cut::Columns(_) => {
            // The part's "band" is the share's tile; no output in place.
            let tile = io.outs.pop().unwrap_or_default();
            shared
                .kernel
                .run_columns(shared.backend, tiles, &mut io, tile)
        }
    }));
    if let Some(marks) = shared.marks {
        marks.idle();
    }
    result.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        Err(format!(
            "a thread panicked in tiles {:?}: {message}",
            share.tiles
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tiles` tiles of `bytes` bytes each, writing its tile index into
    /// each byte; tile `panic_at` panics.
    #[derive(Debug)]
    struct Stamp {
        tiles: usize,
        bytes: usize,
        panic_at: Option<usize>,
    }

    impl Kernel for Stamp {
        fn tiles(&self) -> usize {
            self.tiles
        }
        fn split(&self) -> Option<usize> {
            Some(1)
        }
        fn band(&self, tiles: Range<usize>) -> Range<usize> {
            tiles.start * self.bytes..tiles.end * self.bytes
        }
        fn run_tiles(
            &self,
            _: Backend,
            tiles: Range<usize>,
            io: &mut Io<'_>,
        ) -> Result<(), String> {
            for t in tiles {
                assert_ne!(Some(t), self.panic_at, "tile {t} fails");
                let range = t * self.bytes - io.out_start..(t + 1) * self.bytes - io.out_start;
                io.outs[0][range].fill(t as u8 + 1);
            }
            Ok(())
        }
    }

    /// A node for the marks and messages of test kernels (its fields do
    /// not matter to the pool).
    pub(super) fn node() -> NodeInfo {
        NodeInfo {
            index: 0,
            op: "STAMP".to_string(),
            work: 0,
            unit: "element",
            inputs: Vec::new(),
            outputs: Vec::new(),
            scratch_bytes: 0,
            aliased: false,
            folded_into: None,
            arithmetic: None,
            fused: None,
            threads: 1,
            split_by_columns: false,
        }
    }

    fn pool(threads: usize) -> Pool {
        Pool::new(threads).unwrap()
    }

    /// Runs `kernel`'s shares for `threads` on `pool`.
    fn run(kernel: &Stamp, threads: usize, pool: &Pool) -> (Vec<u8>, Result<(), String>) {
        let work = (kernel.tiles * kernel.bytes) as u64 * MIN_ELEMENTS_PER_THREAD;
        let all = shares(
            kernel,
            (work, "element", 0),
            kernel.tiles * kernel.bytes,
            threads,
        )
        .unwrap();
        assert_eq!(all.len(), threads.min(kernel.tiles));
        let mut output = vec![0u8; kernel.tiles * kernel.bytes];
        let mut more: Vec<Scratch> = (1..threads).map(|_| Scratch::new(0)).collect();
        let (node, ins) = (node(), Ins::new());
        let shared = Shared {
            kernel,
            backend: Backend::Scalar,
            ins: &ins,
            node: &node,
            scratch_bytes: 0,
            marks: None,
        };
        let result = run_shares(pool, &shared, &all, (&mut output, 0), &mut [], &mut more);
        (output, result)
    }

    #[test]
    fn shares_cover_the_tiles_in_order_and_small_work_stays_on_one_thread() {
        let kernel = Stamp {
            tiles: 10,
            bytes: 3,
            panic_at: None,
        };
        let all = shares(&kernel, (1 << 30, "element", 0), 30, 4).unwrap();
        let tiles: Vec<Range<usize>> = all.iter().map(|s| s.tiles.clone()).collect();
        assert_eq!(tiles, vec![0..2, 2..5, 5..7, 7..10]);
        assert_eq!(all[3].bytes, 21..30);
        // Work for 2 threads only; none for 2; a band beyond the output.
        let two = shares(&kernel, (2 * MIN_MACS_PER_THREAD, "MAC", 0), 30, 8).unwrap();
        assert_eq!(two.len(), 2);
        let small = MIN_ELEMENTS_PER_THREAD * 2 - 1;
        assert!(shares(&kernel, (small, "element", 0), 30, 8).unwrap().len() < 2);
        assert!(shares(&kernel, (1 << 30, "element", 0), 29, 4).is_err());
        // A setup per share: each share's work must cover the minimum
        // (25,000) and twice its setup (work 10 x 80,000 = 800,000 MACs).
        let split = |setup| {
            shares(&kernel, (800_000, "MAC", setup), 30, 8)
                .unwrap()
                .len()
        };
        assert_eq!(MIN_MACS_PER_THREAD, 25_000);
        assert_eq!(split(0), 8);
        assert_eq!(split(15_000), 8); // 800,000 / 55,000 = 14
        assert_eq!(split(75_000), 4); // / 175,000
        assert_eq!(split(187_500), 2); // / 400,000
        assert_eq!(split(188_000), 0); // / 401,000: under 2 shares
                                       // The band setup of person_detect's 3x3-pixel 1x1 conv of 256 x 256
                                       // weights (it splits by channels instead: columns.rs).
        let setup = share_setup("CONV_2D", 256 * 256, false);
        assert_eq!(setup, 5_000 + 4 * 65_536);
        assert_eq!(share_setup("CONV_2D", 256 * 256, true), 5_000);
        assert_eq!(share_setup("FULLY_CONNECTED", 1 << 20, false), 0);
    }

    #[test]
    fn the_calling_threads_share_is_smaller_when_that_evens_the_shares() {
        // 288 cuts of 1,024 MACs in 4 shares: share 0 pays 2,500 more.
        assert_eq!(
            band_bounds(288, 4, 1_024, CALLER_MACS),
            [0, 70, 142, 215, 288]
        );
        // Cuts too large to move: even.
        assert_eq!(band_bounds(18, 4, 16_384, CALLER_MACS), [0, 4, 9, 13, 18]);
        assert_eq!(
            band_bounds(72, 8, 4_096, CALLER_MACS),
            (0..=8).map(|i| i * 9).collect::<Vec<_>>()
        );
        // No extra, or elements: even.
        assert_eq!(band_bounds(10, 4, 1, 0), [0, 2, 5, 7, 10]);
    }

    #[test]
    fn every_share_writes_its_band_on_the_pool() {
        for threads in [2, 3, 4, 8] {
            let kernel = Stamp {
                tiles: 11,
                bytes: 5,
                panic_at: None,
            };
            let (output, result) = run(&kernel, threads, &pool(threads));
            result.unwrap();
            let expected: Vec<u8> = (0..55).map(|i| (i / 5) as u8 + 1).collect();
            assert_eq!(output, expected, "{threads} threads");
        }
    }

    /// One tile per share, each writing the index of the pool thread that
    /// ran it.
    #[derive(Debug)]
    struct WhoRuns;

    impl Kernel for WhoRuns {
        fn tiles(&self) -> usize {
            4
        }
        fn split(&self) -> Option<usize> {
            Some(1)
        }
        fn band(&self, tiles: Range<usize>) -> Range<usize> {
            tiles
        }
        fn run_tiles(
            &self,
            _: Backend,
            tiles: Range<usize>,
            io: &mut Io<'_>,
        ) -> Result<(), String> {
            let thread = qneon_pool::current_thread_index().ok_or("not on the pool")?;
            for t in tiles {
                io.outs[0][t - io.out_start] = thread as u8;
            }
            Ok(())
        }
    }

    #[test]
    fn share_i_runs_on_the_pools_thread_i_every_time() {
        let pool = pool(4);
        let all = shares(&WhoRuns, (1 << 30, "element", 0), 4, 4).unwrap();
        assert_eq!(all.len(), 4);
        let (node, ins) = (node(), Ins::new());
        let shared = Shared {
            kernel: &WhoRuns,
            backend: Backend::Scalar,
            ins: &ins,
            node: &node,
            scratch_bytes: 0,
            marks: None,
        };
        let mut more: Vec<Scratch> = (1..4).map(|_| Scratch::new(0)).collect();
        for _ in 0..50 {
            let mut output = [9u8; 4];
            run_shares(&pool, &shared, &all, (&mut output, 0), &mut [], &mut more).unwrap();
            assert_eq!(output, [0, 1, 2, 3]);
        }
    }

    #[test]
    fn a_panic_in_a_share_is_an_error_and_the_pool_goes_on() {
        let failing = Stamp {
            tiles: 8,
            bytes: 2,
            panic_at: Some(6),
        };
        let pool = pool(4);
        let (_, result) = run(&failing, 4, &pool);
        let message = result.unwrap_err();
        assert!(message.contains("tile 6 fails"), "{message}");
        let fine = Stamp {
            panic_at: None,
            ..failing
        };
        assert!(run(&fine, 4, &pool).1.is_ok());
    }
}
