//! Where each node's inputs and outputs are in memory, worked out once at
//! load, and the split of the arena into them at invoke.
//!
//! A node writes disjoint arena ranges (its outputs, then its scratch) and
//! reads arena ranges that no write of its own overlaps, or constant data.
//! [`NodeIo::new`] computes these ranges from the plan, sorts the writes and
//! assigns every arena read to the gap between two writes that holds it, so
//! a broken plan is an error at load. [`NodeIo::carve`] then only splits:
//! it allocates nothing for nodes of up to [`INLINE`] inputs and outputs
//! (every operator of the converter's MobileBert), so `invoke` only runs
//! kernels.

use std::ops::Range;

use smallvec::SmallVec;

/// Inputs and outputs a node keeps on the stack during invoke; more (a wide
/// CONCATENATION or SPLIT) spill to the heap.
pub(super) const INLINE: usize = 4;

/// A node's input slices, in the operator's input order.
pub(super) type Ins<'b> = SmallVec<[&'b [u8]; INLINE]>;
/// A node's output slices, in the operator's output order.
pub(super) type Outs<'b> = SmallVec<[&'b mut [u8]; INLINE]>;

/// Where one input of a node is.
#[derive(Clone, Debug)]
pub(super) enum Input {
    /// Bytes `range` of the arena, inside the gap `gap` between the node's
    /// sorted writes.
    Arena { gap: usize, range: Range<usize> },
    /// Constant tensor `.0` (its bytes live outside the arena).
    Constant(usize),
    /// An optional input the model leaves out.
    Absent,
}

/// The memory of one node, worked out at load.
#[derive(Clone, Debug, Default)]
pub(super) struct NodeIo {
    pub(super) inputs: Vec<Input>,
    /// Arena ranges written: each output, then the scratch if any.
    writes: Vec<Range<usize>>,
    /// `writes`' indices by start address.
    order: Vec<usize>,
    /// Whether the last write is the node's scratch.
    pub(super) has_scratch: bool,
}

/// Where a tensor lives, as [`NodeIo::new`] needs to know it.
pub(super) enum Place {
    Arena(Range<usize>),
    Constant,
    Absent,
}

impl NodeIo {
    /// The node reading `inputs` and writing `outputs` (and `scratch`),
    /// each tensor placed by `place`; an error names the first overlap.
    pub(super) fn new(
        inputs: &[Option<usize>],
        outputs: &[usize],
        scratch: Option<Range<usize>>,
        arena_bytes: usize,
        place: impl Fn(usize) -> Place,
    ) -> Result<NodeIo, String> {
        let mut writes: Vec<Range<usize>> = outputs
            .iter()
            .map(|&t| match place(t) {
                Place::Arena(range) => range,
                _ => 0..0,
            })
            .collect();
        let has_scratch = scratch.is_some();
        writes.extend(scratch);
        let mut order: Vec<usize> = (0..writes.len()).collect();
        order.sort_by_key(|&w| writes[w].start);
        // Gap g ends where the g-th non-empty write (by address) starts.
        let mut gaps: Vec<Range<usize>> = Vec::with_capacity(writes.len() + 1);
        let mut position = 0;
        for &w in &order {
            let range = &writes[w];
            if range.is_empty() {
                continue;
            }
            if range.start < position || range.end > arena_bytes {
                return Err(format!(
                    "planned outputs overlap or leave the arena at {range:?}"
                ));
            }
            gaps.push(position..range.start);
            position = range.end;
        }
        gaps.push(position..arena_bytes);
        let inputs = inputs
            .iter()
            .map(|&t| match t.map(&place) {
                None | Some(Place::Absent) => Ok(Input::Absent),
                Some(Place::Constant) => Ok(Input::Constant(t.unwrap_or_default())),
                Some(Place::Arena(range)) => gaps
                    .iter()
                    .position(|g| range.start >= g.start && range.end <= g.end)
                    .map(|gap| Input::Arena {
                        gap,
                        range: range.clone(),
                    })
                    .ok_or_else(|| {
                        format!(
                            "a planned input at {range:?} overlaps an output of the same operator"
                        )
                    }),
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(NodeIo {
            inputs,
            writes,
            order,
            has_scratch,
        })
    }

    /// Splits `arena` into the node's writes (in [`NodeIo::new`]'s output
    /// order, scratch last) and its arena reads; `constant(t)` gives the
    /// bytes of constant tensor `t`. Reads of absent inputs are empty.
    pub(super) fn carve<'b, 'c: 'b>(
        &self,
        arena: &'b mut [u8],
        constant: impl Fn(usize) -> &'c [u8],
    ) -> (Ins<'b>, Outs<'b>) {
        let mut gaps: SmallVec<[(usize, &'b [u8]); INLINE + 1]> = SmallVec::new();
        let mut slots: SmallVec<[&'b mut [u8]; INLINE]> = (0..self.writes.len())
            .map(|_| <&mut [u8]>::default())
            .collect();
        let mut rest: &'b mut [u8] = arena;
        let mut position = 0;
        for &w in &self.order {
            let range = &self.writes[w];
            if range.is_empty() {
                continue;
            }
            // `new` checked the order and the bounds.
            let (gap, tail) = std::mem::take(&mut rest).split_at_mut(range.start - position);
            let (slot, tail) = tail.split_at_mut(range.len());
            gaps.push((position, gap));
            slots[w] = slot;
            position = range.end;
            rest = tail;
        }
        gaps.push((position, rest));
        let ins = self
            .inputs
            .iter()
            .map(|input| match input {
                Input::Arena { gap, range } => {
                    let (start, bytes) = gaps[*gap];
                    &bytes[range.start - start..range.end - start]
                }
                Input::Constant(t) => constant(*t),
                Input::Absent => &[],
            })
            .collect();
        (ins, slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(t: usize) -> Place {
        match t {
            0 => Place::Arena(0..10),
            1 => Place::Arena(60..70),
            2 => Place::Constant,
            3 => Place::Arena(20..30),
            4 => Place::Arena(40..50),
            5 => Place::Arena(25..35),
            _ => Place::Absent,
        }
    }

    #[test]
    fn carve_gives_disjoint_writes_and_the_reads() {
        let io = NodeIo::new(
            &[Some(1), Some(0), Some(2), None],
            &[4, 3],
            None,
            100,
            place,
        )
        .unwrap();
        let mut arena: Vec<u8> = (0..100).collect();
        let constant = [7u8; 3];
        let (ins, mut outs) = io.carve(&mut arena, |_| &constant[..]);
        assert_eq!(ins[0], &(60..70).collect::<Vec<u8>>()[..]);
        assert_eq!(ins[1][0], 0);
        assert_eq!(ins[2], &[7, 7, 7]);
        assert!(ins[3].is_empty());
        assert_eq!(outs[0][0], 40);
        assert_eq!(outs[1][0], 20);
        outs[1][0] = 99;
        drop((ins, outs));
        assert_eq!(arena[20], 99);
    }

    #[test]
    fn overlaps_are_refused_at_load() {
        // A read overlapping a write.
        assert!(NodeIo::new(&[Some(5)], &[3], None, 100, place).is_err());
        // Two writes overlapping.
        assert!(NodeIo::new(&[], &[3, 5], None, 100, place).is_err());
        // A write beyond the arena.
        assert!(NodeIo::new(&[], &[1], None, 65, place).is_err());
        // Scratch overlapping an output.
        assert!(NodeIo::new(&[], &[3], Some(29..31), 100, place).is_err());
    }
}
