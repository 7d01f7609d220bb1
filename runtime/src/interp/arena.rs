//! The arena plan: every non-constant tensor (and every operator's scratch)
//! gets a byte range of one arena, reused once the tensor is dead.
//!
//! A *buffer* is what gets a range: a tensor, several tensors aliased to one
//! another (a RESHAPE's output is its input's bytes), or an operator's
//! scratch. Its lifetime is the closed interval of steps from the operator
//! that writes it to the last one that reads it; model inputs live from the
//! start, model outputs to the end. Offsets are assigned greedily by size,
//! as TFLite's arena planner does: the largest buffer first, each at the
//! lowest 64-byte aligned offset where it overlaps no placed buffer whose
//! lifetime intersects its own.

use std::ops::Range;

/// Alignment of every buffer in the arena, in bytes: a cache line, and more
/// than any element type needs.
pub const ARENA_ALIGNMENT: usize = 64;

/// One buffer to place: its size and lifetime in steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferRequest {
    /// Bytes needed.
    pub size: usize,
    /// First step it is live (written).
    pub first: usize,
    /// Last step it is live (read), `>= first`.
    pub last: usize,
}

/// The placed buffers and the arena's size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArenaPlan {
    /// Byte offset of each requested buffer, in request order (a multiple of
    /// [`ARENA_ALIGNMENT`]).
    pub offsets: Vec<usize>,
    /// The requests, as given.
    pub buffers: Vec<BufferRequest>,
    /// The arena's size in bytes: the end of the highest buffer, rounded up
    /// to [`ARENA_ALIGNMENT`].
    pub arena_bytes: usize,
}

impl ArenaPlan {
    /// Places `buffers` (greedy by size; ties in request order). `None` when
    /// an offset would overflow `usize`.
    pub fn new(buffers: Vec<BufferRequest>) -> Option<ArenaPlan> {
        let mut order: Vec<usize> = (0..buffers.len()).collect();
        order.sort_by(|&a, &b| buffers[b].size.cmp(&buffers[a].size).then(a.cmp(&b)));
        let mut offsets = vec![0usize; buffers.len()];
        // Placed buffers as (offset, end, index), kept sorted by offset.
        let mut placed: Vec<(usize, usize, usize)> = Vec::with_capacity(buffers.len());
        let mut arena_bytes = 0usize;
        for &i in &order {
            let request = &buffers[i];
            let mut candidate = 0usize;
            if request.size > 0 {
                for &(start, end, j) in &placed {
                    let other = &buffers[j];
                    let lives_overlap = other.first <= request.last && request.first <= other.last;
                    if !lives_overlap {
                        continue;
                    }
                    if start >= candidate.checked_add(request.size)? {
                        // `placed` is sorted by offset: the gap before this
                        // buffer fits the request.
                        break;
                    }
                    candidate = candidate.max(align_up(end)?);
                }
            }
            let end = candidate.checked_add(request.size)?;
            offsets[i] = candidate;
            let at = placed.partition_point(|&(start, _, _)| start <= candidate);
            placed.insert(at, (candidate, end, i));
            arena_bytes = arena_bytes.max(align_up(end)?);
        }
        Some(ArenaPlan {
            offsets,
            buffers,
            arena_bytes,
        })
    }

    /// The byte range of buffer `index`.
    pub fn range(&self, index: usize) -> Range<usize> {
        let start = self.offsets[index];
        start..start + self.buffers[index].size
    }

    /// The sum of all buffer sizes: what the arena would be without reuse.
    pub fn unshared_bytes(&self) -> usize {
        self.buffers.iter().map(|b| b.size).sum()
    }

    /// Pairs of buffers that are live at the same step and share bytes
    /// (empty for a correct plan; the tests check it).
    pub fn conflicts(&self) -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        for a in 0..self.buffers.len() {
            for b in a + 1..self.buffers.len() {
                let (x, y) = (&self.buffers[a], &self.buffers[b]);
                let live = x.first <= y.last && y.first <= x.last;
                let (ra, rb) = (self.range(a), self.range(b));
                let bytes = ra.start < rb.end && rb.start < ra.end;
                if live && bytes {
                    found.push((a, b));
                }
            }
        }
        found
    }
}

fn align_up(offset: usize) -> Option<usize> {
    Some(offset.checked_add(ARENA_ALIGNMENT - 1)? / ARENA_ALIGNMENT * ARENA_ALIGNMENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(size: usize, first: usize, last: usize) -> BufferRequest {
        BufferRequest { size, first, last }
    }

    #[test]
    fn a_chain_reuses_two_buffers() {
        // t0 -> op0 -> t1 -> op1 -> t2 -> op2 -> t3: at most two live at once.
        let plan = ArenaPlan::new(vec![
            request(1000, 0, 0),
            request(1000, 0, 1),
            request(1000, 1, 2),
            request(1000, 2, 3),
        ])
        .unwrap();
        assert!(plan.conflicts().is_empty());
        assert_eq!(plan.arena_bytes, 2 * 1024);
        assert_eq!(plan.unshared_bytes(), 4000);
    }

    #[test]
    fn live_buffers_never_share_bytes_and_offsets_are_aligned() {
        // Seeded random lifetimes and sizes.
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..50 {
            let buffers: Vec<BufferRequest> = (0..40)
                .map(|_| {
                    let first = (next() % 30) as usize;
                    let len = (next() % 8) as usize;
                    request((next() % 5000) as usize, first, first + len)
                })
                .collect();
            let plan = ArenaPlan::new(buffers).unwrap();
            assert!(plan.conflicts().is_empty());
            assert!(plan.offsets.iter().all(|o| o % ARENA_ALIGNMENT == 0));
            assert!(
                plan.arena_bytes
                    <= plan
                        .buffers
                        .iter()
                        .map(|b| align_up(b.size).unwrap())
                        .sum::<usize>()
            );
            for i in 0..plan.buffers.len() {
                assert!(plan.range(i).end <= plan.arena_bytes);
            }
        }
    }

    #[test]
    fn a_broken_plan_is_reported_as_a_conflict() {
        let mut plan = ArenaPlan::new(vec![request(100, 0, 1), request(100, 1, 2)]).unwrap();
        assert!(plan.conflicts().is_empty());
        plan.offsets[1] = plan.offsets[0];
        assert_eq!(plan.conflicts(), vec![(0, 1)]);
    }
}
