//! A fixed array of a tree's records, looked up by an index the tree itself
//! holds, without a bounds check in release builds.
//!
//! A tree's hot paths look a record up at each level of a packet's path: its
//! node, its parent, a leaf, a discipline. The indices come from the tree's own
//! state (a parent, a first child plus a unit below the child count, the leaf a
//! descent reached, the leaf an enqueue checked) and every one is below the
//! count of a store that never grows or shrinks after the build. Their bounds
//! checks were 7% of a packet's instructions in `eiffel bench hqos`
//! (callgrind: 1,193 against 1,107 a packet at 1K queues, the general tree).
//! [`Store::at`] and [`Store::at_mut`] skip the check for such indices; every
//! other lookup (an index from outside the tree, a view, the invariant checks)
//! goes through the slice, checked. Builds with debug assertions (the tests)
//! check every index all the same.

use core::ops::{Deref, DerefMut};

/// Records indexed by an index the tree holds; fixed after the build.
#[derive(Debug, Clone)]
pub(super) struct Store<T> {
    all: Box<[T]>,
}

impl<T> Store<T> {
    /// The store of `records`, record `i` at index `i`.
    pub(super) fn new(records: Vec<T>) -> Store<T> {
        Store {
            all: records.into_boxed_slice(),
        }
    }

    /// Record `i`, without a bounds check in release builds. Only for indices
    /// the tree holds (see the module documentation) or has checked against
    /// the count: the tree's code passes no other.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(super) fn at(&self, i: u32) -> &T {
        debug_assert!(
            (i as usize) < self.all.len(),
            "record {i} of {}",
            self.all.len()
        );
        // SAFETY: `i` is below the record count: the tree passes only the
        // indices it holds, each below the count of a store that never
        // shrinks (see the module documentation); debug builds check it above.
        unsafe { self.all.get_unchecked(i as usize) }
    }

    /// Record `i`, mutable, without a bounds check in release builds; the
    /// same indices as [`Store::at`].
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(super) fn at_mut(&mut self, i: u32) -> &mut T {
        debug_assert!(
            (i as usize) < self.all.len(),
            "record {i} of {}",
            self.all.len()
        );
        // SAFETY: as in `at`.
        unsafe { self.all.get_unchecked_mut(i as usize) }
    }
}

impl<T> Deref for Store<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.all
    }
}

impl<T> DerefMut for Store<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.all
    }
}
