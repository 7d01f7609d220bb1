//! Nodes cut by columns of their output ([`Cut::Columns`]): each thread
//! computes some columns of every row into a tile in its own scratch; once
//! all are done, the threads copy the tiles into the output, each a band
//! of whole output rows (in the same call of the pool: each thread waits
//! for the others' tiles).
//!
//! Why: a layer with few output rows and many channels (MobileNetV2's last
//! pointwise layers: 7x7 pixels, up to 1,280 channels; person_detect's
//! 3x3 and 6x6 ones) cut into bands of rows gives at most as many shares as
//! rows, of uneven size, and every band reads the whole filter. Cut by
//! channels, every share reads only its filters and all rows, and there are
//! as many shares as threads. The output's columns of one share are not
//! contiguous, so a share cannot write them in place (threads own disjoint
//! slices); the copy of the tiles is the price, about one load and store per
//! 16 output bytes plus a call per row and share.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use qneon_pool::Pool;
use smallvec::SmallVec;

use super::{
    broadcast_shares, run_share, Columns, Cut, Kernel, Scratch, Share, Shared, CONV_SETUP_MACS,
    INLINE_SHARES,
};

/// Work (in MACs) a thread spends copying one share's tile row into its
/// band of the output, and per output byte: about 5 instructions per row
/// (`copy_row`'s loop), a load and a store per 16 bytes, at about 8 MACs
/// per instruction (a convolution's 0.12 instructions per MAC).
const COPY_MACS_PER_ROW: u64 = 40;
const COPY_MACS_PER_BYTE: u64 = 1;
/// The copy's own call of the pool (posting it, each thread's marks), about
/// 300 instructions.
const COPY_CALL_MACS: u64 = 2_400;
/// Least work (MACs) worth one more column share: below
/// [`MIN_MACS_PER_THREAD`](super::MIN_MACS_PER_THREAD), since a column
/// share's own cost (its setup, its band of the copy) is counted apart
/// and its thread is already awake for the node's other shares.
pub(crate) const MIN_MACS_PER_COLUMN_SHARE: u64 = 8_000;
/// Work (in MACs) a CONV_2D column share spends per output row (pixel)
/// beyond its MACs and its packing: it runs every row for a few channels,
/// so every 8 rows pay a narrow tile's set-up and output stage (about 140
/// instructions). Fitted on person_detect's pointwise layers at 8 threads
/// (`-cpu neoverse-n1`): in 8 column shares, the 12x12x64 -> 64 layer cost
/// about 7,500 instructions a share beyond an eighth of its 63,422, the
/// 6x6x128 -> 128 one about 2,700 beyond an eighth of its 60,795.
const CONV_COLUMN_MACS_PER_ROW: u64 = 300;

/// Work (in MACs) of the depthwise kernel's setup of one block of 16
/// channels in a call (its weights and output stage), about 400 to 600
/// instructions: a band of rows pays it for every block, a column share
/// only for its own (the one-thread call pays it once a block, so column
/// shares add nothing to it).
const DEPTHWISE_BLOCK_MACS: u64 = 3_200;
/// The setup (in MACs) of one share of a node of `op` cut by columns: for
/// a CONV_2D whose input 0 is `rows` x `depth` bytes, a GEMM call of its
/// own, which packs every input row and runs every row's tiles
/// ([`CONV_COLUMN_MACS_PER_ROW`]); for a DEPTHWISE_CONV_2D, whose share
/// runs its channel blocks as the one-thread call runs them (reading its
/// input channels in place, writing its output channels in place in a
/// tile of the output's size), nothing beyond [`column_overhead`].
pub(crate) fn column_setup(op: &str, columns: &Columns, depth: usize) -> u64 {
    if op == "DEPTHWISE_CONV_2D" {
        return 0;
    }
    let rows = columns.rows as u64;
    let packing = rows.saturating_mul(depth as u64) / 2;
    let tiles = rows.saturating_mul(CONV_COLUMN_MACS_PER_ROW);
    CONV_SETUP_MACS
        .saturating_add(packing)
        .saturating_add(tiles)
}

/// What a DEPTHWISE_CONV_2D column share costs its thread beyond an even
/// part of the work and its band of the copy, in depthwise-weighted MACs
/// (about 21 an instruction on person_detect's 6x6 layers): its call (the
/// kernel's rows found and laid out again for each share, about 550
/// instructions on a 6x6 layer), its slot, marks and wait, and the
/// calling thread's posting of the shares. Fitted on person_detect at 4
/// and 8 threads (`-cpu neoverse-n1`, `cargo xtask run --threads 4,8
/// --hot`): its busiest column share cost about 1,700 to 2,100
/// instructions above an even part at 4 threads, 2,300 to 2,700 at 8
/// (the 6x6x128 layers 5,962 against 6,142 by bands of rows at 4 threads,
/// 4,661 against 4,509 at 8; the 3x3x256 layer 4,624 against 5,460 and
/// 3,764 against 5,444).
pub(crate) const DEPTHWISE_COLUMN_SHARE_MACS: u64 = 36_000;

/// The cost (MACs) of a column share of a node of `op` that its setup
/// and copy leave out: a DEPTHWISE_CONV_2D's
/// [`DEPTHWISE_COLUMN_SHARE_MACS`]; none for a CONV_2D, whose column
/// setup is fitted whole.
pub(crate) fn column_overhead(op: &str) -> u64 {
    if op == "DEPTHWISE_CONV_2D" {
        DEPTHWISE_COLUMN_SHARE_MACS
    } else {
        0
    }
}

/// The setup (in MACs) one band of rows of a node of `op` pays, to weigh
/// against its column shares: a CONV_2D's `setup` ([`share_setup`]); a
/// DEPTHWISE_CONV_2D band calls the kernel on every block of 16 channels of
/// its rows, each block's call paying its setup (person_detect's 6x6-pixel
/// layer of 128 channels, `-cpu neoverse-n1`: a band of one row took 13,895
/// instructions, of two 20,325, the whole layer 54,243, which puts a band's
/// calls at about 4,700 instructions, 590 a block), where a column share
/// runs only its own blocks.
///
/// [`share_setup`]: super::share_setup
pub(crate) fn band_setup(op: &str, columns: &Columns, setup: u64) -> u64 {
    if op == "DEPTHWISE_CONV_2D" {
        (columns.columns.div_ceil(16) as u64).saturating_mul(DEPTHWISE_BLOCK_MACS)
    } else {
        setup
    }
}

/// The column shares of a node of `work` MACs whose kernel splits by
/// columns, for up to `threads` threads, each paying `setup`
/// ([`column_setup`] and [`column_overhead`]); `None` when the node does
/// not split by columns or when cutting it into `bands` bands with
/// `band_setup` each costs its busiest thread no more. The cost of a cut:
/// its largest share's work, plus its setup, plus (by columns) a thread's
/// band of the tiles' copy.
pub(crate) fn column_shares(
    kernel: &dyn Kernel,
    (work, setup): (u64, u64),
    (bands, band_setup): (usize, u64),
    threads: usize,
) -> Option<Vec<Share>> {
    let columns = kernel.columns()?;
    let grain = columns.grain.max(1);
    let blocks = columns.columns.div_ceil(grain);
    let rows = columns.rows as u64;
    let row_bytes = (columns.columns * columns.elem) as u64;
    // Each thread copies a band of whole rows from every tile.
    let band_rows = rows.div_ceil((threads as u64).clamp(1, rows.max(1)));
    // The busiest of `n` column shares: the largest (ceil(blocks / n) of
    // the blocks), its setup, and its band of the copy.
    let busiest = |n: usize| {
        let copy = band_rows
            .saturating_mul(n as u64)
            .saturating_mul(COPY_MACS_PER_ROW)
            .saturating_add(band_rows.saturating_mul(row_bytes) * COPY_MACS_PER_BYTE)
            .saturating_add(COPY_CALL_MACS);
        let held = blocks.div_ceil(n) as u64;
        let largest = work.saturating_mul(held) / blocks as u64;
        largest.saturating_add(setup).saturating_add(copy)
    };
    // As many shares as lower the busiest thread's work, each at least the
    // minimum worth a thread. (Capped as bands are, by the setup as well,
    // person_detect's 6x6x64 -> 128 layer took 5 column shares at 8
    // threads, costlier than its 5 bands of pixels, where 8 column shares
    // of 16 channels cost its busiest thread less.)
    let most = threads
        .min(blocks)
        .min(usize::try_from(work / MIN_MACS_PER_COLUMN_SHARE).unwrap_or(usize::MAX));
    let n = (2..=most).min_by_key(|&n| (busiest(n), n))?;
    let by_columns = busiest(n);
    let by_bands = if bands >= 2 {
        // The largest band has ceil(tiles / bands) of the tiles (a 6x6
        // pointwise layer: 5 blocks of 8 pixels, the last of 4).
        let tiles = kernel.tiles().max(1) as u64;
        let largest = work.saturating_mul(tiles.div_ceil(bands as u64)) / tiles;
        largest.saturating_add(band_setup)
    } else {
        work
    };
    if by_columns >= by_bands {
        return None;
    }
    let shares = (0..n)
        .map(|i| {
            let (first, last) = (i * blocks / n, (i + 1) * blocks / n);
            let tiles = first * grain..(last * grain).min(columns.columns);
            let tile_columns = if columns.whole_rows {
                columns.columns
            } else {
                tiles.len()
            };
            let bytes = 0..columns.rows * tile_columns * columns.elem;
            Share {
                tiles,
                bytes,
                cut: Cut::Columns(columns),
            }
        })
        .collect();
    Some(shares)
}

/// Runs a node's column `shares` on `pool` (share `i` with `more[i]`, its
/// tile first and the node's scratch after it) and copies the tiles into
/// `output` (the whole of output 0: `output_start` 0), in one call of the
/// pool: share `i`'s thread, once every tile is done, copies every tile's
/// part of band `i` of the output's rows. (A second call of the pool for
/// the copy cost the calling thread about 650 instructions a node at 8
/// threads, posting and waking the workers again.)
pub(super) fn run(
    pool: &Pool,
    shared: &Shared<'_, '_>,
    shares: &[Share],
    columns: Columns,
    (output, output_start): (&mut [u8], usize),
    more: &mut [Scratch],
) -> Result<(), String> {
    let Columns {
        rows,
        columns: width,
        elem,
        whole_rows,
        ..
    } = columns;
    let n = shares.len();
    if output_start != 0 || output.len() != rows * width * elem || n > more.len() {
        return Err(format!(
            "{n} column shares of a {rows} x {width} output into {} bytes from byte \
             {output_start} with {} scratches",
            output.len(),
            more.len()
        ));
    }
    let row = width * elem;
    // Each share's thread carves its tile and scratch out of its `Scratch`
    // itself (the calling thread only cuts the output into bands).
    let mut slots: SmallVec<[Mutex<Option<&mut Scratch>>; INLINE_SHARES]> = SmallVec::new();
    let mut bands: SmallVec<[Mutex<Option<RowBand<'_>>>; INLINE_SHARES]> = SmallVec::new();
    let mut rest = output;
    for (i, scratch) in (0..n).zip(more.iter_mut()) {
        slots.push(Mutex::new(Some(scratch)));
        let band_rows = i * rows / n..(i + 1) * rows / n;
        let (band, tail) = std::mem::take(&mut rest).split_at_mut(band_rows.len() * row);
        bands.push(Mutex::new(Some((band, band_rows))));
        rest = tail;
    }
    // Each tile, once computed, for every thread to read.
    // (Built in place: `collect` returns the SmallVec by a copy.)
    let mut done: SmallVec<[OnceLock<&[u8]>; INLINE_SHARES]> = SmallVec::new();
    done.extend((0..n).map(|_| OnceLock::new()));
    // The shares run side by side, each on a thread of its own, unless this
    // call is inside a task of a pool (the pool then runs them one after
    // the other on this thread): then this thread copies every band after.
    let together = qneon_pool::current_thread_index().is_none() && n >= 2 && n <= pool.threads();
    let arrived = AtomicUsize::new(0);
    let copy = |b: usize| -> Result<(), String> {
        let Some(Ok(Some((band, band_rows)))) =
            bands.get(b).map(|slot| slot.lock().map(|mut s| s.take()))
        else {
            return Ok(());
        };
        if let Some(marks) = shared.marks {
            marks.start(shared.node);
        }
        let copied = copy_band(&done, shares, band, band_rows, (width, elem, whole_rows));
        if let Some(marks) = shared.marks {
            marks.idle();
        }
        copied
    };
    broadcast_shares(pool, n, |i| {
        // Counts this share in, whatever happens to it (a panic too), so
        // that no thread waits for it forever.
        let arrive = Arrive(&arrived);
        let scratch = slots
            .get(i)
            .and_then(|slot| slot.lock().ok().and_then(|mut scratch| scratch.take()));
        let ran = match (scratch, shares.get(i)) {
            (Some(scratch), Some(share)) => {
                let len = share.bytes.len();
                let all = scratch.bytes(len + shared.scratch_bytes);
                if all.len() < len {
                    Err(format!("a scratch of {} bytes for a tile", all.len()))
                } else {
                    let (tile, scratch) = all.split_at_mut(len);
                    let ran = run_share(shared, share, (&mut *tile, 0), scratch);
                    let tile: &[u8] = tile;
                    let _ = done[i].set(tile);
                    ran
                }
            }
            _ => Ok(()),
        };
        drop(arrive);
        if !together {
            return ran;
        }
        wait_for(&arrived, n);
        ran.and(copy(i))
    })?;
    if !together {
        (0..n).try_for_each(copy)?;
    }
    Ok(())
}

/// Adds one to its count when dropped.
struct Arrive<'c>(&'c AtomicUsize);

impl Drop for Arrive<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// Returns once `count` reaches `n`: spins a little, then yields the core
/// (the other shares of a node end within a few thousand instructions of
/// each other, so no thread sleeps here).
fn wait_for(count: &AtomicUsize, n: usize) {
    let mut spins = 0u32;
    while count.load(Ordering::Acquire) < n {
        if spins < 64 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// A band of whole output rows and which rows they are.
type RowBand<'a> = (&'a mut [u8], Range<usize>);

/// Copies every tile's part of `band_rows` (`done[i]` the tile of
/// `shares[i]`, its rows holding the share's columns or, with
/// `whole_rows`, every column's place) into `band`, those rows of `width`
/// elements of `elem` bytes.
fn copy_band(
    done: &[OnceLock<&[u8]>],
    shares: &[Share],
    band: &mut [u8],
    band_rows: Range<usize>,
    (width, elem, whole_rows): (usize, usize, bool),
) -> Result<(), String> {
    for (tile, share) in done.iter().zip(shares) {
        let tile = tile.get().ok_or("a column tile was not computed")?;
        let tile_row = if whole_rows { width } else { share.tiles.len() } * elem;
        let part = tile
            .get(band_rows.start * tile_row..band_rows.end * tile_row)
            .ok_or_else(|| format!("a tile of {} bytes for rows {band_rows:?}", tile.len()))?;
        copy_tile((part, tile_row), band, share.tiles.clone(), width, elem)?;
    }
    Ok(())
}

/// Copies `columns` of every row of `tile` (rows of `tile_row` bytes:
/// those columns, or every column's place) into those columns of
/// `output`'s rows of `width` elements of `elem` bytes.
#[inline]
fn copy_tile(
    (tile, tile_row): (&[u8], usize),
    output: &mut [u8],
    columns: Range<usize>,
    width: usize,
    elem: usize,
) -> Result<(), String> {
    let (from, row, len) = (columns.start * elem, width * elem, columns.len() * elem);
    if len == 0 {
        return Ok(());
    }
    // Where the columns start in a tile row: at its start, or in place.
    let at = if tile_row == len { 0 } else { from };
    if columns.end > width || at + len > tile_row || tile.len() / tile_row * row > output.len() {
        return Err(format!(
            "a tile of columns {columns:?} does not fit rows of {width}"
        ));
    }
    // Columns of 16 or 32 bytes a row (8 column shares of 128 or 256
    // channels): one load and store a row, about 6 instructions where the
    // general loop took about 17.
    let rows = tile
        .chunks_exact(tile_row)
        .zip(output.chunks_exact_mut(row));
    match len {
        16 => copy_rows::<16>(rows, (at, from)),
        32 => copy_rows::<32>(rows, (at, from)),
        _ => {
            for (src, dst) in rows {
                copy_row(&src[at..at + len], &mut dst[from..from + len]);
            }
        }
    }
    Ok(())
}

/// [`copy_tile`]'s loop for columns of `N` bytes: each pair's bytes `at..at
/// + N` of the tile's row into bytes `from..from + N` of the output's.
#[inline(always)]
fn copy_rows<'a, const N: usize>(
    rows: impl Iterator<Item = (&'a [u8], &'a mut [u8])>,
    (at, from): (usize, usize),
) {
    for (src, dst) in rows {
        let src = src
            .get(at..at + N)
            .and_then(|s| <&[u8; N]>::try_from(s).ok());
        let dst = dst
            .get_mut(from..from + N)
            .and_then(|d| <&mut [u8; N]>::try_from(d).ok());
        if let (Some(src), Some(dst)) = (src, dst) {
            *dst = *src;
        }
    }
}

/// `dst.copy_from_slice(src)` for the short rows of a tile (16 to a few
/// hundred bytes): whole 16-byte pieces as one load and store each, the
/// rest by `copy_from_slice`. A `copy_from_slice` of a row length known
/// only at run time is a `memcpy` call, about 20 instructions for a
/// 16-byte row (person_detect's 6x6 layers at 8 threads copy 288 such
/// rows per node); pieces taken by `chunks_exact` and converted one by
/// one cost about 8 instructions each (MobileNetV2's 14x14x384 depthwise
/// layers at 4 threads: 10,732 instructions a thread for 196 rows of 96
/// bytes), hence the rows as arrays of pieces.
#[inline(always)]
fn copy_row(src: &[u8], dst: &mut [u8]) {
    let (pieces, rest) = dst.as_chunks_mut::<16>();
    let (from, from_rest) = src.as_chunks::<16>();
    for (d, s) in pieces.iter_mut().zip(from) {
        *d = *s;
    }
    if !rest.is_empty() && rest.len() == from_rest.len() {
        rest.copy_from_slice(from_rest);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::node;
    use super::*;
    use crate::interp::ops::{Ins, Io};
    use qneon::Backend;

    /// `rows` x `columns` one-byte elements, element (r, c) = r * 31 + c
    /// (mod 256); splits by bands of rows and by columns on a grain of 4.
    #[derive(Debug)]
    struct Grid {
        rows: usize,
        columns: usize,
    }

    impl Grid {
        fn value(r: usize, c: usize) -> u8 {
            (r * 31 + c) as u8
        }
    }

    impl Kernel for Grid {
        fn tiles(&self) -> usize {
            self.rows
        }
        fn split(&self) -> Option<usize> {
            Some(1)
        }
        fn band(&self, tiles: Range<usize>) -> Range<usize> {
            tiles.start * self.columns..tiles.end * self.columns
        }
        fn run_tiles(
            &self,
            _: Backend,
            tiles: Range<usize>,
            io: &mut Io<'_>,
        ) -> Result<(), String> {
            for r in tiles {
                for c in 0..self.columns {
                    io.outs[0][r * self.columns + c - io.out_start] = Self::value(r, c);
                }
            }
            Ok(())
        }
        fn columns(&self) -> Option<Columns> {
            Some(Columns {
                rows: self.rows,
                columns: self.columns,
                grain: 4,
                elem: 1,
                whole_rows: false,
            })
        }
        fn run_columns(
            &self,
            _: Backend,
            columns: Range<usize>,
            _: &mut Io<'_>,
            tile: &mut [u8],
        ) -> Result<(), String> {
            let width = columns.len();
            for r in 0..self.rows {
                for (k, c) in columns.clone().enumerate() {
                    tile[r * width + k] = Self::value(r, c);
                }
            }
            Ok(())
        }
    }

    #[test]
    fn few_rows_and_many_columns_split_by_columns_and_give_the_whole_output() {
        // 3 rows: bands give at most 3 shares, columns as many as threads;
        // each band also pays a setup as large as a filter's read.
        let grid = Grid {
            rows: 3,
            columns: 70,
        };
        let work = 100 * MIN_MACS_PER_COLUMN_SHARE;
        for threads in [2, 3, 4, 8] {
            let bands = threads.min(3);
            let shares =
                column_shares(&grid, (work, 1_000), (bands, 100_000), threads).expect("columns");
            // The least largest share (in blocks of 4 columns) that
            // `threads` shares can give, with as few shares as give it
            // (more would only add to the copy).
            let (blocks, most) = (70usize.div_ceil(4), threads.min(70usize.div_ceil(4)));
            assert_eq!(blocks.div_ceil(shares.len()), blocks.div_ceil(most));
            assert!(
                shares.len() <= most && blocks.div_ceil(shares.len() - 1) > blocks.div_ceil(most)
            );
            // Cut on the grain, in order, covering every column.
            let mut next = 0;
            for s in &shares {
                assert_eq!(s.tiles.start, next);
                assert_eq!(s.tiles.start % 4, 0);
                assert_eq!(s.bytes.len(), 3 * s.tiles.len());
                next = s.tiles.end;
            }
            assert_eq!(next, 70);
            let pool = Pool::new(threads).unwrap();
            let (node, ins) = (node(), Ins::new());
            let shared = Shared {
                kernel: &grid,
                backend: Backend::Scalar,
                ins: &ins,
                node: &node,
                scratch_bytes: 0,
                marks: None,
            };
            let mut more: Vec<Scratch> = (0..threads).map(|_| Scratch::new(3 * 70)).collect();
            let mut output = vec![0xEEu8; 3 * 70];
            super::super::run_shares(
                &pool,
                &shared,
                &shares,
                (&mut output, 0),
                &mut [],
                &mut more,
            )
            .unwrap();
            let expected: Vec<u8> = (0..3 * 70).map(|i| Grid::value(i / 70, i % 70)).collect();
            assert_eq!(output, expected, "{threads} threads");
        }
    }

    #[test]
    fn many_rows_stay_in_bands_and_small_work_on_one_thread() {
        let grid = Grid {
            rows: 64,
            columns: 16,
        };
        let work = 100 * MIN_MACS_PER_COLUMN_SHARE;
        // 8 even bands with no setup beat 4 column blocks.
        assert!(column_shares(&grid, (work, 1_000), (8, 0), 8).is_none());
        // Too little work for two shares.
        assert!(column_shares(&grid, (MIN_MACS_PER_COLUMN_SHARE, 0), (1, 0), 8).is_none());
        // A kernel without columns.
        #[derive(Debug)]
        struct Whole;
        impl Kernel for Whole {
            fn run_tiles(&self, _: Backend, _: Range<usize>, _: &mut Io<'_>) -> Result<(), String> {
                Ok(())
            }
        }
        assert!(column_shares(&Whole, (work, 0), (1, 0), 8).is_none());
    }

    #[test]
    fn a_depthwise_share_pays_its_call_and_a_conv_share_its_packing() {
        // person_detect's 3x3-pixel layer of 256 channels: a depthwise
        // share reads its input and writes its output in place (no setup
        // but its call's); a pointwise share packs every input row.
        let columns = Columns {
            rows: 9,
            columns: 256,
            grain: 16,
            elem: 1,
            whole_rows: true,
        };
        assert_eq!(column_setup("DEPTHWISE_CONV_2D", &columns, 9), 0);
        assert_eq!(
            column_overhead("DEPTHWISE_CONV_2D"),
            DEPTHWISE_COLUMN_SHARE_MACS
        );
        assert_eq!(
            column_setup("CONV_2D", &columns, 128),
            CONV_SETUP_MACS + 9 * 128 / 2 + 9 * CONV_COLUMN_MACS_PER_ROW
        );
        assert_eq!(column_overhead("CONV_2D"), 0);
        // A band of its rows sets up all 16 blocks; a CONV_2D band its own.
        let band = band_setup("DEPTHWISE_CONV_2D", &columns, 7);
        assert_eq!(band, 16 * DEPTHWISE_BLOCK_MACS);
        assert_eq!(band_setup("CONV_2D", &columns, 7), 7);
    }

    /// A depthwise layer of `rows` output rows of `width` pixels and
    /// `channels` channels in blocks of 16, its input as large as its
    /// output (stride 1).
    #[derive(Debug)]
    struct Depthwise {
        rows: usize,
        width: usize,
        channels: usize,
    }

    impl Kernel for Depthwise {
        fn tiles(&self) -> usize {
            self.rows
        }
        fn split(&self) -> Option<usize> {
            Some(1)
        }
        fn run_tiles(&self, _: Backend, _: Range<usize>, _: &mut Io<'_>) -> Result<(), String> {
            Ok(())
        }
        fn columns(&self) -> Option<Columns> {
            Some(Columns {
                rows: self.rows * self.width,
                columns: self.channels,
                grain: 16,
                elem: 1,
                whole_rows: true,
            })
        }
    }

    /// How many column shares the planner gives `layer` under `threads`
    /// (0: it is cut by rows), weighed as `share_nodes` weighs them.
    fn depthwise_column_shares(layer: &Depthwise, threads: usize) -> usize {
        let columns = layer.columns().unwrap();
        let pixels = layer.rows * layer.width;
        let work = (pixels * layer.channels * 9) as u64 * super::super::DEPTHWISE_MAC_WEIGHT;
        let setup =
            column_setup("DEPTHWISE_CONV_2D", &columns, 9) + column_overhead("DEPTHWISE_CONV_2D");
        let bands = threads.min(layer.rows);
        let band = band_setup("DEPTHWISE_CONV_2D", &columns, 0);
        column_shares(layer, (work, setup), (bands, band), threads).map_or(0, |s| s.len())
    }

    #[test]
    fn a_depthwise_layer_is_cut_by_channels_where_bands_of_rows_are_uneven() {
        // person_detect's 6x6x128 layers: 4 column shares of 2 blocks at 4
        // threads (bands: 2 of the 6 rows on the busiest thread, and every
        // block's call a band); 6 bands of one row at 8 (8 shares of one
        // block each pay their calls for an eighth of the work).
        let six = Depthwise {
            rows: 6,
            width: 6,
            channels: 128,
        };
        assert_eq!(depthwise_column_shares(&six, 4), 4);
        assert_eq!(depthwise_column_shares(&six, 8), 0);
        // Its 3x3x256 layer: 3 bands leave threads idle.
        let three = Depthwise {
            rows: 3,
            width: 3,
            channels: 256,
        };
        assert_eq!(depthwise_column_shares(&three, 4), 4);
        assert_eq!(depthwise_column_shares(&three, 8), 8);
        // Many rows: bands (a 12x12 layer of 64 channels, 4 blocks).
        let twelve = Depthwise {
            rows: 12,
            width: 12,
            channels: 64,
        };
        assert_eq!(depthwise_column_shares(&twelve, 4), 0);
        assert_eq!(depthwise_column_shares(&twelve, 8), 0);
    }

    #[test]
    fn a_tile_that_does_not_fit_is_an_error() {
        let mut output = vec![0u8; 12];
        assert!(copy_tile((&[1; 6], 2), &mut output, 2..4, 4, 1).is_ok());
        assert_eq!(output, [0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1]);
        assert!(copy_tile((&[1; 6], 2), &mut output, 3..5, 4, 1).is_err());
        assert!(copy_tile((&[1; 8], 2), &mut output, 0..2, 4, 1).is_err());
        // A tile of whole rows: its columns 1..3 of each row, in place.
        let whole: Vec<u8> = (0..12).collect();
        assert!(copy_tile((&whole, 4), &mut output, 1..3, 4, 1).is_ok());
        assert_eq!(output, [0, 1, 2, 1, 0, 5, 6, 1, 0, 9, 10, 1]);
        assert!(copy_tile((&whole[..8], 4), &mut output, 2..5, 4, 1).is_err());
        // Rows of whole 16-byte pieces and a remainder.
        for len in [1, 15, 16, 17, 32, 40, 100] {
            let src: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5A).collect();
            let mut dst = vec![0u8; len];
            copy_row(&src, &mut dst);
            assert_eq!(dst, src, "{len} bytes");
        }
    }
}
