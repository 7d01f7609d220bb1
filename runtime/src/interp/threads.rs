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
//! so the bytes are those of one thread.
//!
//! The pool: a session with more than one thread keeps a `rayon` pool of
//! `threads` workers, started with the session. An invoke runs its loop over
//! the nodes on one worker (`install`), and each split node's shares by
//! `rayon::join` (halving the shares, the output cut with `split_at_mut` at
//! the shares' band boundaries: every thread owns its band, in safe Rust).
//! Idle workers spin briefly, then sleep (rayon's own policy). Why rayon and
//! not a pool of our own: the runtime forbids `unsafe`, and only scoped work
//! can borrow the arena; `rayon::join` and `install` are scoped, on
//! persistent threads, without a heap allocation per join (std's scoped
//! threads spawn per scope).

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

use qneon::Backend;
use smallvec::smallvec;

use super::info::NodeInfo;
use super::ops::{Ins, Io, Kernel, Outs};

/// Least multiply-accumulates worth one more thread: below it, the join
/// and the wake-up of a worker cost about what the thread saves.
pub(crate) const MIN_MACS_PER_THREAD: u64 = 50_000;
/// Least elements worth one more thread, for the ops counted in elements.
pub(crate) const MIN_ELEMENTS_PER_THREAD: u64 = 16 * 1024;

/// One thread's share of a node: its tiles and the bytes of output 0 they
/// write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Share {
    pub tiles: Range<usize>,
    pub bytes: Range<usize>,
}

/// The shares of a node of `work` (`unit`: `"MAC"` or elements) whose
/// output 0 has `output_bytes`, run with up to `threads` threads; empty when
/// it runs whole on one. An error when the kernel's bands overlap, go
/// backwards or leave the output (a kernel's bug, caught at load).
pub(crate) fn shares(
    kernel: &dyn Kernel,
    (work, unit): (u64, &str),
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
    let worth = usize::try_from(work / per_thread).unwrap_or(usize::MAX);
    let n = threads.min(cuts).min(worth);
    if n < 2 {
        return Ok(Vec::new());
    }
    let mut all = Vec::with_capacity(n);
    let mut end = 0;
    for i in 0..n {
        let (first, last) = (i * cuts / n, (i + 1) * cuts / n);
        let tiles = first * step..(last * step).min(tiles);
        let bytes = kernel.band(tiles.clone());
        if bytes.start < end || bytes.end < bytes.start || bytes.end > output_bytes {
            return Err(format!(
                "tiles {tiles:?} write bytes {bytes:?}: not after byte {end} and within the \
                 output's {output_bytes}"
            ));
        }
        end = bytes.end;
        all.push(Share { tiles, bytes });
    }
    Ok(all)
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

/// Runs `shares` of a node, `band` holding output 0 from byte
/// `band_start` on, on the pool's threads: the first share with `scratch`,
/// the others with `more` (one each). Must run inside the pool
/// (`install`). A panic in a share becomes its error.
pub(crate) fn run_shares(
    shared: &Shared<'_, '_>,
    shares: &[Share],
    (band, band_start): (&mut [u8], usize),
    scratch: &mut [u8],
    more: &mut [Scratch],
) -> Result<(), String> {
    if let [share] = shares {
        return run_share(shared, share, band, band_start, scratch);
    }
    let mid = shares.len() / 2;
    let (left, right) = shares.split_at(mid);
    let cut = right[0]
        .bytes
        .start
        .saturating_sub(band_start)
        .min(band.len());
    let (left_band, right_band) = band.split_at_mut(cut);
    let (left_more, right_more) = more.split_at_mut((mid - 1).min(more.len()));
    let Some((right_scratch, right_more)) = right_more.split_first_mut() else {
        return Err(format!("{} shares and too few scratches", shares.len()));
    };
    let right_scratch = right_scratch.bytes(shared.scratch_bytes);
    let (a, b) = rayon::join(
        || run_shares(shared, left, (left_band, band_start), scratch, left_more),
        || {
            let start = band_start + cut;
            run_shares(
                shared,
                right,
                (right_band, start),
                right_scratch,
                right_more,
            )
        },
    );
    a.and(b)
}

fn run_share(
    shared: &Shared<'_, '_>,
    share: &Share,
    band: &mut [u8],
    band_start: usize,
    scratch: &mut [u8],
) -> Result<(), String> {
    if let Some(marks) = shared.marks {
        marks.start(shared.node);
    }
    let outs: Outs<'_> = smallvec![band];
    let mut io = Io {
        ins: shared.ins.iter().copied().collect(),
        outs,
        scratch,
        out_start: band_start,
        state: Outs::new(),
    };
    let tiles = share.tiles.clone();
    let result = catch_unwind(AssertUnwindSafe(|| {
        shared.kernel.run_tiles(shared.backend, tiles, &mut io)
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

    fn node() -> NodeInfo {
        NodeInfo {
            index: 0,
            op: "STAMP".to_string(),
            work: 0,
            unit: "element",
            inputs: Vec::new(),
            outputs: Vec::new(),
            scratch_bytes: 0,
            aliased: false,
            arithmetic: None,
            fused: None,
            threads: 1,
        }
    }

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// Runs `kernel`'s shares for `threads` on `pool`.
    fn run(
        kernel: &Stamp,
        threads: usize,
        pool: &rayon::ThreadPool,
    ) -> (Vec<u8>, Result<(), String>) {
        let work = (kernel.tiles * kernel.bytes) as u64 * MIN_ELEMENTS_PER_THREAD;
        let all = shares(
            kernel,
            (work, "element"),
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
        let result =
            pool.install(|| run_shares(&shared, &all, (&mut output, 0), &mut [], &mut more));
        (output, result)
    }

    #[test]
    fn shares_cover_the_tiles_in_order_and_small_work_stays_on_one_thread() {
        let kernel = Stamp {
            tiles: 10,
            bytes: 3,
            panic_at: None,
        };
        let all = shares(&kernel, (1 << 30, "element"), 30, 4).unwrap();
        let tiles: Vec<Range<usize>> = all.iter().map(|s| s.tiles.clone()).collect();
        assert_eq!(tiles, vec![0..2, 2..5, 5..7, 7..10]);
        assert_eq!(all[3].bytes, 21..30);
        // Work for 2 threads only; none for 2; a band beyond the output.
        let two = shares(&kernel, (2 * MIN_MACS_PER_THREAD, "MAC"), 30, 8).unwrap();
        assert_eq!(two.len(), 2);
        let small = MIN_ELEMENTS_PER_THREAD * 2 - 1;
        assert!(shares(&kernel, (small, "element"), 30, 8).unwrap().len() < 2);
        assert!(shares(&kernel, (1 << 30, "element"), 29, 4).is_err());
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
