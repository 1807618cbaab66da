//! A binary min-heap of flows keyed by a wrap-around virtual time, for the
//! O(log N) cores (WF2Q+, STFQ).
//!
//! Ties on the key are broken by a sequence number the caller assigns (FIFO order
//! of timestamping), so the cores are deterministic. Storage is preallocated: the
//! heap never holds more than one entry per flow.

use crate::vtime::vt_lt;

/// One heap entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Virtual time the heap orders by.
    pub key: u64,
    /// Tie-breaker: smaller first.
    pub seq: u64,
    /// The flow.
    pub flow: u32,
}

impl Entry {
    #[inline]
    fn before(&self, other: &Entry) -> bool {
        vt_lt(self.key, other.key) || (self.key == other.key && self.seq < other.seq)
    }
}

/// Min-heap of [`Entry`] by `(key, seq)`.
#[derive(Clone, Debug)]
pub(crate) struct VtHeap {
    items: Vec<Entry>,
}

impl VtHeap {
    /// An empty heap with room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        VtHeap {
            items: Vec::with_capacity(capacity),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    #[inline]
    pub fn peek(&self) -> Option<&Entry> {
        self.items.first()
    }

    pub fn push(&mut self, e: Entry) {
        debug_assert!(
            self.items.len() < self.items.capacity(),
            "heap over capacity"
        );
        let mut i = self.items.len();
        self.items.push(e);
        while i > 0 {
            let parent = (i - 1) / 2;
            if !e.before(&self.items[parent]) {
                break;
            }
            self.items[i] = self.items[parent];
            i = parent;
        }
        self.items[i] = e;
    }

    pub fn pop(&mut self) -> Option<Entry> {
        let top = *self.items.first()?;
        let last = self.items.pop().expect("non-empty");
        let n = self.items.len();
        if n > 0 {
            let mut i = 0;
            loop {
                let l = 2 * i + 1;
                if l >= n {
                    break;
                }
                let r = l + 1;
                let c = if r < n && self.items[r].before(&self.items[l]) {
                    r
                } else {
                    l
                };
                if !self.items[c].before(&last) {
                    break;
                }
                self.items[i] = self.items[c];
                i = c;
            }
            self.items[i] = last;
        }
        Some(top)
    }

    /// Every entry, in no particular order (for invariant checks).
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.items.iter()
    }

    /// Panics unless every parent orders before or equal to its children.
    pub fn check_order(&self) {
        for i in 1..self.items.len() {
            let parent = (i - 1) / 2;
            assert!(
                !self.items[i].before(&self.items[parent]),
                "heap order violated at {i}: {:?} before parent {:?}",
                self.items[i],
                self.items[parent]
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn pops_in_key_then_seq_order(ops in proptest::collection::vec((any::<bool>(), 0u64..50), 1..200)) {
            let base = u64::MAX - 20; // exercise the wrap
            let mut h = VtHeap::with_capacity(ops.len());
            let mut model: Vec<(i64, u64)> = Vec::new();
            for (seq, (push, k)) in ops.into_iter().enumerate() {
                if push || model.is_empty() {
                    h.push(Entry { key: base.wrapping_add(k), seq: seq as u64, flow: seq as u32 });
                    model.push((k as i64, seq as u64));
                } else {
                    model.sort_unstable();
                    let (k, s) = model.remove(0);
                    let e = h.pop().unwrap();
                    prop_assert_eq!((e.key, e.seq), (base.wrapping_add(k as u64), s));
                }
                h.check_order();
                prop_assert_eq!(h.len(), model.len());
            }
        }
    }
}
