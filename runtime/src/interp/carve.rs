//! Where each node's inputs, outputs, scratch and state are in memory,
//! worked out once at load, and the split of a session's memory into them at
//! invoke.
//!
//! A node writes disjoint arena ranges (its outputs and its scratch) and
//! reads arena ranges that no write of its own overlaps, or constant data;
//! likewise it updates disjoint ranges of the variable block (its state
//! inputs) and may read other variables. [`NodeIo::new`] computes these
//! ranges from the tensors' [`Place`]s, sorts the writes of each block and
//! assigns every read to the gap between two writes that holds it, so a
//! broken plan is an error at load. [`NodeIo::carve`] then only splits: it
//! allocates nothing for nodes of up to `INLINE_INPUTS` inputs (24: the
//! recurrent ops) and [`INLINE`] outputs (every operator of the converter's
//! MobileBert), so `invoke` only runs kernels.

use std::ops::Range;

use smallvec::SmallVec;

use super::ops::{Ins, Io, Outs, INLINE};
use super::place::Place;

/// The free parts of a block between a node's writes, in address order.
type Gaps<'b> = SmallVec<[&'b [u8]; INLINE + 1]>;

/// One input of a node: its place, and for a read of the arena or the
/// variable block the gap between that block's writes that holds it.
#[derive(Clone, Debug)]
struct Read {
    place: Place,
    gap: usize,
    /// Updated in place: handed to the kernel in [`Io::state`] instead.
    state: bool,
}

/// What [`NodeIo::carve`] hands the kernel for one input, worked out at
/// load from a [`Read`]: the bytes `start..end` of a gap of the arena or
/// the variable block (relative to the gap's start), a constant, or
/// nothing (an omitted input, or a state input, which goes in
/// [`Io::state`]).
#[derive(Clone, Debug)]
enum Pick {
    Empty,
    Arena {
        gap: usize,
        start: usize,
        end: usize,
    },
    Variable {
        gap: usize,
        start: usize,
        end: usize,
    },
    Constant(usize),
}

/// The disjoint writes of a node into one block of memory (the arena or the
/// variable block), sorted by address.
#[derive(Clone, Debug, Default)]
struct Writes {
    ranges: Vec<Range<usize>>,
    /// `ranges`' indices by start address.
    order: Vec<usize>,
    /// The free bytes between the writes (in address order).
    gaps: Vec<Range<usize>>,
    /// Every write is non-empty and `ranges` is in address order already:
    /// `split` takes them as they come.
    in_order: bool,
}

impl Writes {
    fn new(ranges: Vec<Range<usize>>, block: usize) -> Result<Writes, String> {
        let mut order: Vec<usize> = (0..ranges.len()).collect();
        order.sort_by_key(|&w| ranges[w].start);
        let mut gaps = Vec::with_capacity(ranges.len() + 1);
        let mut position = 0;
        for &w in &order {
            let range = &ranges[w];
            if range.is_empty() {
                continue;
            }
            if range.start < position || range.end > block {
                return Err(format!(
                    "planned outputs overlap or leave their memory at {range:?}"
                ));
            }
            gaps.push(position..range.start);
            position = range.end;
        }
        gaps.push(position..block);
        let in_order =
            ranges.iter().all(|r| !r.is_empty()) && order.iter().enumerate().all(|(i, &w)| i == w);
        Ok(Writes {
            ranges,
            order,
            gaps,
            in_order,
        })
    }

    /// The gap that holds `range`.
    fn gap_of(&self, range: &Range<usize>) -> Option<usize> {
        self.gaps
            .iter()
            .position(|g| range.start >= g.start && range.end <= g.end)
    }

    /// Splits `block` into the writes (in `ranges` order) and the gaps
    /// (address order).
    #[inline(always)]
    fn split<'b>(&self, block: &'b mut [u8]) -> (Gaps<'b>, Outs<'b>) {
        let mut gaps: Gaps<'b> = SmallVec::new();
        let mut slots: Outs<'b> = SmallVec::new();
        let mut rest: &'b mut [u8] = block;
        let mut position = 0;
        if self.in_order {
            // The common case (one output, or outputs and scratch planned
            // in order): each slot is pushed as it is cut.
            for range in &self.ranges {
                // `new` checked the order and the bounds.
                let (gap, tail) = std::mem::take(&mut rest).split_at_mut(range.start - position);
                let (slot, tail) = tail.split_at_mut(range.len());
                gaps.push(gap);
                slots.push(slot);
                position = range.end;
                rest = tail;
            }
            gaps.push(rest);
            return (gaps, slots);
        }
        slots.extend((0..self.ranges.len()).map(|_| <&mut [u8]>::default()));
        for &w in &self.order {
            let range = &self.ranges[w];
            if range.is_empty() {
                continue;
            }
            let (gap, tail) = std::mem::take(&mut rest).split_at_mut(range.start - position);
            let (slot, tail) = tail.split_at_mut(range.len());
            gaps.push(gap);
            slots[w] = slot;
            position = range.end;
            rest = tail;
        }
        gaps.push(rest);
        (gaps, slots)
    }
}

/// The memory of one node, worked out at load.
#[derive(Clone, Debug, Default)]
pub(super) struct NodeIo {
    /// What each input is, in the operator's order.
    picks: Vec<Pick>,
    /// Arena writes: each output (empty when omitted), then the scratch.
    arena: Writes,
    /// Whether the last arena write is the node's scratch.
    has_scratch: bool,
    /// Variable-block writes: each state input.
    variables: Writes,
    /// Whether it reads or updates any variable (most nodes do not, and
    /// skip splitting the variable block).
    uses_variables: bool,
}

impl NodeIo {
    /// The node reading `inputs` (those at `state_inputs` updated in place)
    /// and writing `outputs` and `scratch`, each tensor placed by `place`;
    /// an error names the first overlap.
    pub(super) fn new(
        inputs: &[Option<usize>],
        outputs: &[Option<usize>],
        state_inputs: &[usize],
        scratch: Option<Range<usize>>,
        blocks: (usize, usize),
        place: impl Fn(usize) -> Place,
    ) -> Result<NodeIo, String> {
        let (arena_bytes, variable_bytes) = blocks;
        let place_of = |t: Option<usize>| t.map_or(Place::Unused, &place);
        let mut writes: Vec<Range<usize>> = Vec::with_capacity(outputs.len() + 1);
        for &t in outputs {
            match place_of(t) {
                Place::Arena(range) => writes.push(range),
                Place::Unused => writes.push(0..0),
                other => return Err(format!("an output lives in {other:?}, not the arena")),
            }
        }
        let has_scratch = scratch.is_some();
        writes.extend(scratch);
        let arena = Writes::new(writes, arena_bytes)?;
        let mut state = Vec::with_capacity(state_inputs.len());
        for &i in state_inputs {
            match place_of(inputs.get(i).copied().flatten()) {
                Place::Variable(range) => state.push(range),
                other => {
                    return Err(format!(
                        "state input {i} lives in {other:?}, not a variable"
                    ))
                }
            }
        }
        let variables = Writes::new(state, variable_bytes)?;
        let inputs = inputs
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let place = place_of(t);
                let is_state = state_inputs.contains(&i);
                let gap = match &place {
                    Place::Arena(range) => arena.gap_of(range),
                    Place::Variable(range) if !is_state => variables.gap_of(range),
                    _ => Some(0),
                }
                .ok_or_else(|| {
                    format!("a planned input at {place:?} overlaps an output of the same operator")
                })?;
                Ok(Read {
                    place,
                    gap,
                    state: is_state,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let uses_variables = inputs
            .iter()
            .any(|read| matches!(read.place, Place::Variable(_)));
        let gap_start = |writes: &Writes, gap: usize| writes.gaps.get(gap).map_or(0, |g| g.start);
        let picks = inputs
            .iter()
            .map(|read| match &read.place {
                _ if read.state => Pick::Empty,
                Place::Arena(range) => {
                    let at = gap_start(&arena, read.gap);
                    Pick::Arena {
                        gap: read.gap,
                        start: range.start - at,
                        end: range.end - at,
                    }
                }
                Place::Variable(range) => {
                    let at = gap_start(&variables, read.gap);
                    Pick::Variable {
                        gap: read.gap,
                        start: range.start - at,
                        end: range.end - at,
                    }
                }
                Place::Constant(c) => Pick::Constant(*c),
                Place::Unused => Pick::Empty,
            })
            .collect();
        Ok(NodeIo {
            picks,
            arena,
            has_scratch,
            variables,
            uses_variables,
        })
    }

    /// Splits `arena` and `variables` into the node's [`Io`]; `constant(c)`
    /// gives the bytes of constant `c`. Absent inputs and state inputs are
    /// empty in `ins` (the latter are in `state`). The invoke loops use
    /// [`with_io`](Self::with_io); this is for tests.
    #[cfg(test)]
    pub(super) fn carve<'b, 'c: 'b>(
        &self,
        arena: &'b mut [u8],
        variables: &'b mut [u8],
        constant: impl Fn(usize) -> &'c [u8],
    ) -> Io<'b> {
        self.with_io(arena, variables, constant, |io| Io {
            ins: std::mem::take(&mut io.ins),
            outs: std::mem::take(&mut io.outs),
            scratch: std::mem::take(&mut io.scratch),
            out_start: io.out_start,
            state: std::mem::take(&mut io.state),
        })
    }

    /// [`carve`](Self::carve), then `f` on the node's [`Io`] where it was
    /// built: returned, the `Io` (about 600 bytes, most of them the inline
    /// inputs) would be copied once more per node. Only splits and indexes:
    /// every offset was worked out by [`new`](Self::new).
    #[inline(always)]
    pub(super) fn with_io<'b, 'c: 'b, R>(
        &self,
        arena: &'b mut [u8],
        variables: &'b mut [u8],
        constant: impl Fn(usize) -> &'c [u8],
        f: impl FnOnce(&mut Io<'b>) -> R,
    ) -> R {
        let (arena_gaps, mut outs) = self.arena.split(arena);
        let (variable_gaps, state) = if self.uses_variables {
            self.variables.split(variables)
        } else {
            (Gaps::new(), Outs::new())
        };
        let scratch = if self.has_scratch {
            outs.pop().unwrap_or_default()
        } else {
            &mut []
        };
        let mut io = Io {
            ins: Ins::new(),
            outs,
            scratch,
            out_start: 0,
            state,
        };
        fill_ins(
            &self.picks,
            &mut io.ins,
            &arena_gaps,
            &variable_gaps,
            &constant,
        );
        f(&mut io)
    }
}

/// Pushes the bytes of each of `picks` (from the gaps, or a constant) onto
/// `ins`. Apart from the loop of `Session::invoke_with`, so that its code
/// does not weigh on the registers there (measured on the audio models).
#[inline(never)]
fn fill_ins<'b, 'c: 'b>(
    picks: &[Pick],
    ins: &mut Ins<'b>,
    arena_gaps: &[&'b [u8]],
    variable_gaps: &[&'b [u8]],
    constant: &impl Fn(usize) -> &'c [u8],
) {
    for pick in picks {
        ins.push(match *pick {
            Pick::Empty => &[][..],
            Pick::Arena { gap, start, end } => &arena_gaps[gap][start..end],
            Pick::Variable { gap, start, end } => &variable_gaps[gap][start..end],
            Pick::Constant(c) => constant(c),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(t: usize) -> Place {
        match t {
            0 => Place::Arena(0..10),
            1 => Place::Arena(60..70),
            2 => Place::Constant(0),
            3 => Place::Arena(20..30),
            4 => Place::Arena(40..50),
            5 => Place::Arena(25..35),
            6 => Place::Variable(0..8),
            7 => Place::Variable(64..72),
            _ => Place::Unused,
        }
    }

    #[test]
    fn carve_gives_disjoint_writes_and_the_reads() {
        let io = NodeIo::new(
            &[Some(1), Some(0), Some(2), None, Some(6), Some(7)],
            &[Some(4), Some(3)],
            &[5],
            Some(80..90),
            (100, 72),
            place,
        )
        .unwrap();
        let mut arena: Vec<u8> = (0..100).collect();
        let mut variables: Vec<u8> = (100..172).collect();
        let constant = [7u8; 3];
        let Io {
            ins,
            mut outs,
            scratch,
            mut state,
            ..
        } = io.carve(&mut arena, &mut variables, |_| &constant[..]);
        assert_eq!(ins[0], &(60..70).collect::<Vec<u8>>()[..]);
        assert_eq!(ins[1][0], 0);
        assert_eq!(ins[2], &[7, 7, 7]);
        assert!(ins[3].is_empty());
        assert_eq!(ins[4], &(100..108).collect::<Vec<u8>>()[..]);
        assert!(ins[5].is_empty(), "a state input is not in ins");
        assert_eq!(state[0][0], 164);
        assert_eq!(scratch[0], 80);
        assert_eq!(outs[0][0], 40);
        assert_eq!(outs[1][0], 20);
        outs[1][0] = 99;
        state[0][0] = 1;
        drop((ins, outs, scratch, state));
        assert_eq!(arena[20], 99);
        assert_eq!(variables[64], 1);
    }

    #[test]
    fn overlaps_are_refused_at_load() {
        let new = |ins: &[Option<usize>], outs: &[Option<usize>], scratch, arena| {
            NodeIo::new(ins, outs, &[], scratch, (arena, 100), place)
        };
        // A read overlapping a write.
        assert!(new(&[Some(5)], &[Some(3)], None, 100).is_err());
        // Two writes overlapping.
        assert!(new(&[], &[Some(3), Some(5)], None, 100).is_err());
        // A write beyond the arena.
        assert!(new(&[], &[Some(1)], None, 65).is_err());
        // Scratch overlapping an output.
        assert!(new(&[], &[Some(3)], Some(29..31), 100).is_err());
        // A variable as an output, and a state input that is no variable.
        assert!(new(&[], &[Some(6)], None, 100).is_err());
        assert!(NodeIo::new(&[Some(0)], &[], &[0], None, (100, 100), place).is_err());
    }
}
