//! Top-k of a row in the caller's hit buffer: a binary heap whose root is
//! the worst hit kept, then the kept hits put back in index order.
//!
//! Hits are offered in index order, so a hit equal in value to one kept
//! ranks below it (the lower index wins) and never replaces it: the heap
//! keeps the first `k` of a stable ranking by decreasing value.

use super::{RowHit, Sink};

/// `a` ranks below `b`: a smaller value, or an equal one at a higher index.
pub(crate) type Worse<H> = fn(&H, &H) -> bool;

/// The `k` best hits offered so far, in `slots[..len]` (`slots.len() >= k`).
pub(crate) struct TopK<'a, H> {
    slots: &'a mut [H],
    len: usize,
    k: usize,
    worse: Worse<H>,
}

impl<'a, H: Copy> TopK<'a, H> {
    /// An empty top-`k` over `slots` (at least `k` long).
    pub(crate) fn new(slots: &'a mut [H], k: usize, worse: Worse<H>) -> Self {
        debug_assert!(slots.len() >= k);
        TopK {
            slots,
            len: 0,
            k,
            worse,
        }
    }

    /// Offers the next hit (in index order).
    pub(crate) fn offer(&mut self, hit: H) {
        if self.len < self.k {
            let mut i = self.len;
            self.slots[i] = hit;
            self.len += 1;
            // Sift up: a worse hit moves toward the root.
            while i > 0 {
                let parent = (i - 1) / 2;
                if (self.worse)(&self.slots[i], &self.slots[parent]) {
                    self.slots.swap(i, parent);
                    i = parent;
                } else {
                    break;
                }
            }
        } else if self.k > 0 && (self.worse)(&self.slots[0], &hit) {
            self.slots[0] = hit;
            self.sift_down(0);
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut worst = i;
            if l < self.len && (self.worse)(&self.slots[l], &self.slots[worst]) {
                worst = l;
            }
            if r < self.len && (self.worse)(&self.slots[r], &self.slots[worst]) {
                worst = r;
            }
            if worst == i {
                return;
            }
            self.slots.swap(i, worst);
            i = worst;
        }
    }

    /// The number of hits kept; `slots[..len]` are they, sorted by `key`
    /// (the index).
    pub(crate) fn finish<K: Ord>(self, key: impl FnMut(&H) -> K) -> usize {
        self.slots[..self.len].sort_unstable_by_key(key);
        self.len
    }
}

/// The hits of one row: `each(f)` calls `f(index, value)` for the row's
/// candidates in index order (a superset of what passes); those for which
/// `passes(value)` are kept, all of them or, with `top_k`, the `k` largest
/// (lower index first among equal values), in index order. A row whose
/// top-k does not fit the sink only counts.
pub(crate) fn keep<V: Copy + PartialOrd>(
    top_k: Option<usize>,
    each: impl Fn(&mut dyn FnMut(usize, V)),
    passes: impl Fn(V) -> bool,
    hit: impl Fn(usize, V) -> RowHit<V>,
    sink: &mut Sink<RowHit<V>>,
) {
    let emit_all = |sink: &mut Sink<RowHit<V>>| {
        each(&mut |i, v| {
            if passes(v) {
                sink.push(hit(i, v))
            }
        })
    };
    let Some(k) = top_k else {
        return emit_all(sink);
    };
    let mut passing = 0usize;
    each(&mut |_, v| passing += passes(v) as usize);
    if passing <= k {
        return emit_all(sink);
    }
    let Some(slots) = sink.slots(k) else {
        return sink.advance(k);
    };
    let mut top = TopK::new(slots, k, |a: &RowHit<V>, b: &RowHit<V>| {
        a.value < b.value || (a.value == b.value && a.index > b.index)
    });
    each(&mut |i, v| {
        if passes(v) {
            top.offer(hit(i, v))
        }
    });
    let n = top.finish(|h| h.index);
    sink.advance(n);
}
