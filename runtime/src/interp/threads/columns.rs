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
/// Work (in MACs) per byte a DEPTHWISE_CONV_2D share moves beyond the
/// kernel's: its blocks' input channels gathered out of every input pixel,
/// and with more than one block a share, each block's output into the
/// tile (a load and a store per 16 or 8 bytes and the loop, about 0.3
/// instructions a byte).
const DEPTHWISE_GATHER_MACS_PER_BYTE: u64 = 3;

/// The setup (in MACs) of one share of a node of `op` and `work` MACs cut
/// by columns, under up to `threads` threads: for a CONV_2D whose input 0
/// is `rows` x `depth` bytes, a GEMM call of its own, which packs every
/// input row and runs every row's tiles ([`CONV_COLUMN_MACS_PER_ROW`]); for a DEPTHWISE_CONV_2D (its input 0 `input_bytes`), the
/// largest share's channel blocks each gathering its input channels (its
/// part of the input) and (several a share) moving its output into the
/// tile, with as many shares as [`column_shares`] will make of it (fewer
/// shares, more blocks each). The blocks' calls are not a setup: the
/// one-thread call makes them too.
pub(crate) fn column_setup(
    op: &str,
    columns: &Columns,
    (depth, input_bytes): (usize, usize),
    (work, threads): (u64, usize),
) -> u64 {
    if op != "DEPTHWISE_CONV_2D" {
        let rows = columns.rows as u64;
        let packing = rows.saturating_mul(depth as u64) / 2;
        let tiles = rows.saturating_mul(CONV_COLUMN_MACS_PER_ROW);
        return CONV_SETUP_MACS
            .saturating_add(packing)
            .saturating_add(tiles);
    }
    let grain = columns.grain.max(1);
    let blocks = columns.columns.div_ceil(grain).max(1);
    let setup = |shares: usize| {
        let per_share = blocks.div_ceil(shares) as u64;
        let gathered = (input_bytes as u64).saturating_mul(per_share) / blocks as u64;
        let moved = if per_share > 1 {
            (columns.rows as u64).saturating_mul(grain as u64 * per_share)
        } else {
            0
        };
        let bytes = gathered.saturating_add(moved);
        bytes.saturating_mul(DEPTHWISE_GATHER_MACS_PER_BYTE)
    };
    // Blocks narrower than the kernel's 16 lanes: each share's work about
    // doubles (person_detect's 12x12x64 layer in 8 shares of 8 channels,
    // `-cpu neoverse-n1`: 181,592 instructions over the threads against
    // 90,462 on one), so a share pays its work again.
    let narrow = |shares: usize| {
        if grain < 16 {
            work / shares.max(1) as u64
        } else {
            0
        }
    };
    let setup = |shares: usize| setup(shares).saturating_add(narrow(shares));
    // The most shares each worth its thread with its own setup
    // (`column_shares`' rule); their setup.
    let most = threads.clamp(1, blocks);
    (2..=most)
        .rev()
        .map(|n| (n, setup(n)))
        .find(|&(n, s)| {
            let per_share = MIN_MACS_PER_COLUMN_SHARE.saturating_add(s.saturating_mul(2));
            work / per_share >= n as u64
        })
        .map_or_else(|| setup(1), |(_, s)| s)
}

/// What a DEPTHWISE_CONV_2D column share costs its thread beyond
/// [`column_setup`]'s estimate and its band of the copy, in MACs (of a
/// CONV_2D, about 16 a depthwise-weighted instruction here): once a share
/// (its slot, its marks, the wait for the other tiles, the copy's
/// calls), and per channel block in it (the block's call, and per output
/// pixel its gathered input and its output moved into the tile). Fitted
/// on person_detect and MobileNetV2 at 4 and 8 threads (`-cpu
/// neoverse-n1`; about 300 + 22 instructions a pixel per block): a
/// 14x14x384 layer's shares of 6 blocks cost 32,305 instructions above an
/// even part, of 3 blocks 18,237, a 7x7x960 layer's of 15 and 8 blocks
/// 27,380 and 16,715 (cut by rows, 4 or 2 rows of 14 and 2 or 1 of 7, a
/// share costs less); person_detect's 6x6x128
/// layer's column shares cost 2,738 (one block a share) and 3,604 (two)
/// instructions above an even part, the 3x3x256 layer's 3,306 (two) and
/// 4,297 (four); cut by rows instead, its 6x6 layers took 6,698 and 4,666
/// instructions on their busiest thread at 4 and 8 threads (8,011 and
/// 4,941 by columns); its 3x3x256 layer 5,713 by rows and 7,273 by
/// columns at 4 threads, 5,713 and 4,794 at 8. (Its stride-2 3x3x128
/// layer is now cut by rows at 8 threads too: 3,481 against 3,279.)
pub(crate) const DEPTHWISE_COLUMN_SHARE_MACS: u64 = 27_000;
/// [`DEPTHWISE_COLUMN_SHARE_MACS`]' part per channel block of a share, and
/// per output pixel of a block.
pub(crate) const DEPTHWISE_COLUMN_BLOCK_MACS: u64 = 6_000;
pub(crate) const DEPTHWISE_COLUMN_PIXEL_MACS: u64 = 440;

/// The cost (MACs) of a column share of a node of `op` whose output has
/// `columns.rows` pixels that its setup and copy leave out: once a share,
/// and per channel block in it ([`DEPTHWISE_COLUMN_SHARE_MACS`]; none for
/// a CONV_2D, whose column setup is fitted whole).
pub(crate) fn column_overhead(op: &str, columns: &Columns) -> (u64, u64) {
    if op == "DEPTHWISE_CONV_2D" {
        let pixels = (columns.rows as u64).saturating_mul(DEPTHWISE_COLUMN_PIXEL_MACS);
        let block = DEPTHWISE_COLUMN_BLOCK_MACS.saturating_add(pixels);
        (DEPTHWISE_COLUMN_SHARE_MACS, block)
    } else {
        (0, 0)
    }
}

/// The setup (in MACs) one band of rows of a node of `op` pays, to weigh
/// against its column shares: a CONV_2D's `setup` ([`share_setup`]); a
/// DEPTHWISE_CONV_2D band calls the kernel on every block of 16 channels of
/// its rows, each block's call paying its setup (person_detect's 6x6-pixel
/// layer of 128 channels, `-cpu neoverse-n1`: a band of one row took 13,895
/// instructions, of two 20,325, the whole layer 54,243, which puts a band's
/// calls at about 4,700 instructions, 590 a block), where a column share
/// pays only its own blocks' (in [`column_setup`]).
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
/// ([`column_setup`]) and `per_block` for each block of the grain it
/// holds ([`column_overhead`]); `None` when the node does not split by columns or
/// when cutting it into `bands` bands with `band_setup` each costs its
/// busiest thread no more. The cost of a cut: its largest share's work,
/// plus its setup, plus (by columns) a thread's band of the tiles' copy.
pub(crate) fn column_shares(
    kernel: &dyn Kernel,
    (work, setup, per_block): (u64, u64, u64),
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
        let own = setup.saturating_add(per_block.saturating_mul(held));
        largest.saturating_add(own).saturating_add(copy)
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
            let bytes = 0..columns.rows * tiles.len() * columns.elem;
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
        let copied = copy_band(&done, shares, band, band_rows, (width, elem));
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
/// `shares[i]`) into `band`, those rows of `width` elements of `elem`
/// bytes.
fn copy_band(
    done: &[OnceLock<&[u8]>],
    shares: &[Share],
    band: &mut [u8],
    band_rows: Range<usize>,
    (width, elem): (usize, usize),
) -> Result<(), String> {
    for (tile, share) in done.iter().zip(shares) {
        let tile = tile.get().ok_or("a column tile was not computed")?;
        let tile_row = share.tiles.len() * elem;
        let part = tile
            .get(band_rows.start * tile_row..band_rows.end * tile_row)
            .ok_or_else(|| format!("a tile of {} bytes for rows {band_rows:?}", tile.len()))?;
        copy_tile(part, band, share.tiles.clone(), width, elem)?;
    }
    Ok(())
}

/// Copies `tile` (every row's `columns`, `elem`-byte elements) into those
/// columns of `output`'s rows of `width` elements.
#[inline]
fn copy_tile(
    tile: &[u8],
    output: &mut [u8],
    columns: Range<usize>,
    width: usize,
    elem: usize,
) -> Result<(), String> {
    let (from, row) = (columns.start * elem, width * elem);
    let tile_row = columns.len() * elem;
    if tile_row == 0 {
        return Ok(());
    }
    if columns.end > width || tile.len() / tile_row * row > output.len() {
        return Err(format!(
            "a tile of columns {columns:?} does not fit rows of {width}"
        ));
    }
    // Tiles of 16 or 32 bytes a row (8 column shares of 128 or 256
    // channels): one load and store a row, about 6 instructions where the
    // general loop took about 17.
    match tile_row {
        16 => copy_rows::<16>(tile, output, from, row),
        32 => copy_rows::<32>(tile, output, from, row),
        _ => {
            for (src, dst) in tile
                .chunks_exact(tile_row)
                .zip(output.chunks_exact_mut(row))
            {
                copy_row(src, &mut dst[from..from + tile_row]);
            }
        }
    }
    Ok(())
}

/// [`copy_tile`]'s loop for rows of `N` bytes (`tile`'s rows into bytes
/// `from..from + N` of `output`'s rows of `row` bytes).
#[inline(always)]
fn copy_rows<const N: usize>(tile: &[u8], output: &mut [u8], from: usize, row: usize) {
    for (src, dst) in tile.chunks_exact(N).zip(output.chunks_exact_mut(row)) {
        let dst = dst
            .get_mut(from..from + N)
            .and_then(|d| <&mut [u8; N]>::try_from(d).ok());
        if let (Ok(src), Some(dst)) = (<&[u8; N]>::try_from(src), dst) {
            *dst = *src;
        }
    }
}

/// `dst.copy_from_slice(src)` for the short rows of a tile (16 to a few
/// hundred bytes): whole 16-byte pieces as one load and store each, the
/// rest by `copy_from_slice`. A `copy_from_slice` of a row length known
/// only at run time is a `memcpy` call, about 20 instructions for a
/// 16-byte row (person_detect's 6x6 layers at 8 threads copy 288 such
/// rows per node); so is a `copy_from_slice` of a chunk whose length the
/// compiler lost sight of, hence the pieces as arrays.
#[inline(always)]
fn copy_row(src: &[u8], dst: &mut [u8]) {
    let mut pieces = dst.chunks_exact_mut(16);
    let mut from = src.chunks_exact(16);
    for (d, s) in (&mut pieces).zip(&mut from) {
        if let (Ok(d), Ok(s)) = (<&mut [u8; 16]>::try_from(d), <&[u8; 16]>::try_from(s)) {
            *d = *s;
        }
    }
    let rest = pieces.into_remainder();
    if !rest.is_empty() {
        rest.copy_from_slice(from.remainder());
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
                column_shares(&grid, (work, 1_000, 0), (bands, 100_000), threads).expect("columns");
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
        assert!(column_shares(&grid, (work, 1_000, 0), (8, 0), 8).is_none());
        // Too little work for two shares.
        assert!(column_shares(&grid, (MIN_MACS_PER_COLUMN_SHARE, 0, 0), (1, 0), 8).is_none());
        // A kernel without columns.
        #[derive(Debug)]
        struct Whole;
        impl Kernel for Whole {
            fn run_tiles(&self, _: Backend, _: Range<usize>, _: &mut Io<'_>) -> Result<(), String> {
                Ok(())
            }
        }
        assert!(column_shares(&Whole, (work, 0, 0), (1, 0), 8).is_none());
    }

    #[test]
    fn a_depthwise_share_pays_for_its_blocks_and_a_conv_share_for_its_packing() {
        // person_detect's 3x3-pixel depthwise layer: 256 channels in 16
        // blocks of 16, its input 6 x 6 x 256.
        let columns = Columns {
            rows: 9,
            columns: 256,
            grain: 16,
            elem: 1,
        };
        let input = 6 * 6 * 256;
        let work = 1 << 40;
        let at = |threads| column_setup("DEPTHWISE_CONV_2D", &columns, (9, input), (work, threads));
        // One block a share: a sixteenth of the input gathered.
        let one = (input as u64 / 16) * DEPTHWISE_GATHER_MACS_PER_BYTE;
        assert_eq!(at(16), one);
        assert_eq!(at(64), one);
        // Two blocks a share: twice that, and both blocks' outputs moved.
        assert_eq!(at(8), 2 * one + 9 * 32 * DEPTHWISE_GATHER_MACS_PER_BYTE);
        // Four threads: four blocks each.
        assert_eq!(at(4), 4 * one + 9 * 64 * DEPTHWISE_GATHER_MACS_PER_BYTE);
        let conv = column_setup("CONV_2D", &columns, (128, input), (work, 4));
        assert_eq!(
            conv,
            CONV_SETUP_MACS + 9 * 128 / 2 + 9 * CONV_COLUMN_MACS_PER_ROW
        );
        // Work for two shares only: the setup of two shares of 8 blocks.
        let small = 2 * (MIN_MACS_PER_COLUMN_SHARE + 2 * (8 * one + 9 * 128 * 3));
        let two = column_setup("DEPTHWISE_CONV_2D", &columns, (9, input), (small, 8));
        assert_eq!(two, 8 * one + 9 * 128 * DEPTHWISE_GATHER_MACS_PER_BYTE);
        // A band of its rows sets up all 16 blocks; a CONV_2D band its own.
        let band = band_setup("DEPTHWISE_CONV_2D", &columns, 7);
        assert_eq!(band, 16 * DEPTHWISE_BLOCK_MACS);
        assert_eq!(band_setup("CONV_2D", &columns, 7), 7);
        // Blocks of 8 channels: each share pays its work again (64
        // channels in 8 blocks, 8 threads: one block a share).
        let narrow = Columns {
            rows: 144,
            columns: 64,
            grain: 8,
            elem: 1,
        };
        let work = 8 * 82_944;
        let gather = (144 * 64 / 8) * DEPTHWISE_GATHER_MACS_PER_BYTE;
        let setup = column_setup("DEPTHWISE_CONV_2D", &narrow, (9, 144 * 64), (work, 8));
        assert!(setup >= gather + work / 8, "{setup}");
        // So not even two shares are worth their threads.
        assert!(setup.saturating_mul(2) + MIN_MACS_PER_COLUMN_SHARE > work / 2);
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
            })
        }
    }

    /// How many column shares the planner gives `layer` under `threads`
    /// (0: it is cut by rows), weighed as `share_nodes` weighs them.
    fn depthwise_column_shares(layer: &Depthwise, threads: usize) -> usize {
        let columns = layer.columns().unwrap();
        let pixels = layer.rows * layer.width;
        let work = (pixels * layer.channels * 9) as u64 * super::super::DEPTHWISE_MAC_WEIGHT;
        let input = pixels * layer.channels;
        let setup = column_setup("DEPTHWISE_CONV_2D", &columns, (9, input), (work, threads));
        let (per_share, per_block) = column_overhead("DEPTHWISE_CONV_2D", &columns);
        let bands = threads.min(layer.rows);
        let band = band_setup("DEPTHWISE_CONV_2D", &columns, 0);
        let cost = (work, setup + per_share, per_block);
        column_shares(layer, cost, (bands, band), threads).map_or(0, |s| s.len())
    }

    #[test]
    fn a_depthwise_layer_is_cut_by_rows_unless_too_few_rows_leave_threads_idle() {
        // person_detect's 6x6x128 layers: by rows at 4 and 8 threads (its
        // column shares cost about 2,700 to 3,600 instructions above an
        // even part, its bands of rows less).
        let six = Depthwise {
            rows: 6,
            width: 6,
            channels: 128,
        };
        assert_eq!(depthwise_column_shares(&six, 4), 0);
        assert_eq!(depthwise_column_shares(&six, 8), 0);
        // Its 3x3x256 layer: 3 bands leave 5 of 8 threads idle.
        let three = Depthwise {
            rows: 3,
            width: 3,
            channels: 256,
        };
        assert_eq!(depthwise_column_shares(&three, 4), 0);
        assert_eq!(depthwise_column_shares(&three, 8), 8);
        // MobileNetV2's 14x14x384 and 7x7x960 layers: by rows (their
        // column shares gather and move 196 or 49 pixels a block).
        for (rows, channels) in [(14, 384), (7, 960)] {
            let layer = Depthwise {
                rows,
                width: rows,
                channels,
            };
            assert_eq!(depthwise_column_shares(&layer, 4), 0, "{rows}x{rows}");
            assert_eq!(depthwise_column_shares(&layer, 8), 0, "{rows}x{rows}");
        }
    }

    #[test]
    fn a_tile_that_does_not_fit_is_an_error() {
        let mut output = vec![0u8; 12];
        assert!(copy_tile(&[1; 6], &mut output, 2..4, 4, 1).is_ok());
        assert_eq!(output, [0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1]);
        assert!(copy_tile(&[1; 6], &mut output, 3..5, 4, 1).is_err());
        assert!(copy_tile(&[1; 8], &mut output, 0..2, 4, 1).is_err());
        // Rows of whole 16-byte pieces and a remainder.
        for len in [1, 15, 16, 17, 32, 40, 100] {
            let src: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5A).collect();
            let mut dst = vec![0u8; len];
            copy_row(&src, &mut dst);
            assert_eq!(dst, src, "{len} bytes");
        }
    }
}
