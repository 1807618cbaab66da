//! Element storage of `cffs`: a preallocated slab of nodes linked by `u32` index
//! into per-bucket FIFO lists, each node's fields in the array of the operation
//! that touches them.
//!
//! ## Layout, and what each operation touches
//! A pop walks a bucket's list: the next pop from the same bucket needs the link
//! the previous one read, a chain of dependent loads as long as the bucket. Once
//! the nodes leave the L2 cache that chain is the pop's cost (100,000 nodes of 32
//! bytes do not fit 2 MiB; their 400 KB of links do), so the links are an array of
//! their own, apart from what a pop returns:
//! - `next` (4 bytes per node): node `i`'s successor on its list (`NIL` at the
//!   tail), or `FREE` when the node is on the free stack. Entry `capacity + l` is
//!   list `l`'s *sentinel*: it holds the list's first node (`NIL` when empty), so
//!   appending to a list is `next[tail] = node` whether or not it was empty, with
//!   no branch (an empty list's tail is its sentinel). In a scheduler's steady
//!   state half the appends find an empty bucket, a branch no predictor can learn.
//! - `slots` (rank, generation, `prev` link, list, item: 24 bytes for a 4-byte
//!   item): read by a pop for what it returns, written by a push. A push reuses
//!   the node the last pop freed (the free stack is LIFO), so in a scheduler's
//!   steady state this line is still in L1 when the push writes it.
//! - `tails` (4 bytes per list): the last node of each list, or its sentinel.
//! - `free`: a stack of free node indices apart from the nodes, so that taking a
//!   free node reads the top of a small array instead of a link in a node that may
//!   be anywhere in memory.
//!
//! The first node of a list has a stale `prev` (its list's sentinel says which
//! node is first), so popping it writes nothing into the node after it.
//!
//! ## Ranks that need no load
//! A link is a node index with one more bit, [`EXACT`], saying whether the node
//! it points to has exactly the lowest rank of its bucket (with a granularity of
//! one rank, every node in the window but a clamped one). Popping such a node
//! takes its rank from the bucket the caller computed, not from its slot: the
//! pop still reads the slot for the item, but what the caller does with the rank
//! (in a scheduler, compute the next rank and insert) no longer waits for that
//! load. Measured on the hold model: 14-26% less time per pair. A node's `rank` is
//! written by every push all the same, so `get` and `remove` read it as before.
//!
//! Generations: a push increments the node's generation and the handle carries
//! the new value; a node is live iff its `next` is not `FREE`. A handle is
//! accepted iff its node is live and has the handle's generation, so a pop need
//! not touch the generation. Generations are 32-bit: a handle kept across 2^32
//! reuses of its node could alias.
//!
//! Invariants (checked by [`Slab::check_invariants`]); the unchecked indexing
//! relies on them:
//! - `next.len() = capacity + lists`, `slots.len() = free.len() = capacity`,
//!   `tails.len() = lists`, all below `FREE`;
//! - a node is free (`next == FREE`, its item uninitialised, its index on the free
//!   stack exactly once) or live (`next != FREE`, its item initialised, on exactly
//!   the list its `list` field names);
//! - each list's links run from its sentinel through its nodes to `NIL`, its tail
//!   is its last node (the sentinel when empty), and every node but the first has
//!   `prev` naming its predecessor;
//! - live nodes + free stack = capacity.
#![allow(unsafe_code)]

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::mem::MaybeUninit;

use crate::api::{ConfigError, Handle};
use crate::prefetch::prefetch;

/// List terminator and "no node" marker.
pub(crate) const NIL: u32 = u32::MAX;

/// `next` of a free node.
const FREE: u32 = u32::MAX - 1;

/// The bit of a link saying that the node it points to has exactly the lowest rank
/// of its bucket.
const EXACT: u32 = 1 << 31;

/// The node index of a link; indices stay below `INDEX - 1`, so that no link
/// equals `NIL` or `FREE`.
const INDEX: u32 = EXACT - 1;

/// The link to node `idx`, exact or not.
#[inline(always)]
const fn link(idx: u32, exact: bool) -> u32 {
    idx | (exact as u32) << 31
}

/// What a pop returns and a push writes.
struct Slot<T> {
    rank: u64,
    /// Incremented by every push; the handle's generation.
    gen: u32,
    /// Previous node of the list (its sentinel for a list's first node); stale at
    /// the head once the nodes before it were popped.
    prev: u32,
    list: u32,
    /// Initialised iff the node is live.
    item: MaybeUninit<T>,
}

/// Preallocated nodes and the FIFO lists they are linked into.
pub(crate) struct Slab<T> {
    /// Links of the nodes, then the lists' sentinels (see the module docs).
    next: Box<[u32]>,
    slots: Box<[Slot<T>]>,
    /// Last node of each list; the list's sentinel when it is empty.
    tails: Box<[u32]>,
    /// `free[..free_len]` are the free nodes, the last one taken first; one entry
    /// per node, so it never overflows.
    free: Box<[u32]>,
    free_len: u32,
}

impl<T> Slab<T> {
    /// `capacity` nodes and `lists` empty lists.
    pub(crate) fn new(capacity: usize, lists: usize) -> Result<Self, ConfigError> {
        let max = ((INDEX - 1) as usize).saturating_sub(lists);
        if capacity > max {
            return Err(ConfigError::CapacityTooLarge {
                requested: capacity,
                max,
            });
        }
        let slots = (0..capacity)
            .map(|_| Slot {
                rank: 0,
                gen: 0,
                prev: NIL,
                list: NIL,
                item: MaybeUninit::uninit(),
            })
            .collect();
        let mut next = alloc::vec![FREE; capacity + lists];
        next[capacity..].fill(NIL);
        Ok(Slab {
            next: next.into_boxed_slice(),
            slots,
            tails: (capacity..capacity + lists).map(|s| s as u32).collect(),
            // Node 0 on top: a fresh slab hands out nodes in memory order.
            free: (0..capacity as u32).rev().collect(),
            free_len: capacity as u32,
        })
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.capacity() - self.free_len as usize
    }

    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.free_len == 0
    }

    /// Number of lists.
    pub(crate) fn lists(&self) -> usize {
        self.tails.len()
    }

    /// The index of list `list`'s sentinel in `next`.
    #[inline]
    fn sentinel(&self, list: usize) -> usize {
        self.capacity() + list
    }

    #[inline]
    pub(crate) fn list_is_empty(&self, list: usize) -> bool {
        self.head(list) == NIL
    }

    /// The node at the head of `list`, `NIL` if it is empty.
    #[inline]
    pub(crate) fn head(&self, list: usize) -> u32 {
        assert!(list < self.lists(), "list {list} beyond {}", self.lists());
        index(self.next[self.sentinel(list)])
    }

    /// Starts loading what the pops of live node `idx` and of the node after it
    /// will read besides the links: two pops ahead, since a pop follows the
    /// previous one too closely for a miss to complete in between.
    #[inline]
    pub(crate) fn prefetch(&self, idx: u32) {
        // `NIL` (no node after `idx`) is replaced by the last node, so that there is
        // no branch on it.
        let last = self.capacity().saturating_sub(1);
        let i = (idx as usize).min(last);
        if let (Some(slot), Some(&after)) = (self.slots.get(i), self.next.get(i)) {
            prefetch(slot);
            if let Some(slot) = self.slots.get((index(after) as usize).min(last)) {
                prefetch(slot);
            }
        }
    }

    /// The live node a handle names.
    #[inline]
    pub(crate) fn resolve(&self, handle: Handle) -> Option<u32> {
        let slot = self.slots.get(handle.index as usize)?;
        let live = self.next[handle.index as usize] != FREE;
        (live && slot.gen == handle.gen).then_some(handle.index)
    }

    #[inline]
    pub(crate) fn handle(&self, idx: u32) -> Handle {
        Handle {
            index: idx,
            gen: self.slots[idx as usize].gen,
        }
    }

    #[inline]
    pub(crate) fn rank(&self, idx: u32) -> u64 {
        self.slots[idx as usize].rank
    }

    #[inline]
    pub(crate) fn set_rank(&mut self, idx: u32, rank: u64) {
        self.slots[idx as usize].rank = rank;
    }

    /// The list live node `idx` is on.
    #[inline]
    pub(crate) fn list_of(&self, idx: u32) -> usize {
        self.slots[idx as usize].list as usize
    }

    /// The item of live node `idx`.
    #[inline]
    pub(crate) fn item(&self, idx: u32) -> &T {
        let slot = &self.slots[idx as usize];
        assert!(self.next[idx as usize] != FREE, "node {idx} is free");
        // SAFETY: the node is live (checked above), and a live node's item is
        // initialised.
        unsafe { slot.item.assume_init_ref() }
    }

    /// The item of live node `idx`, mutably.
    #[inline]
    pub(crate) fn item_mut(&mut self, idx: u32) -> &mut T {
        let slot = &mut self.slots[idx as usize];
        assert!(self.next[idx as usize] != FREE, "node {idx} is free");
        // SAFETY: as in `item`.
        unsafe { slot.item.assume_init_mut() }
    }

    /// Takes a free node for `(rank, item)` and appends it to `list`, `exact` if
    /// `rank` is the lowest rank of the list's bucket (see the module docs).
    /// Returns its handle and whether the list was empty; hands the item back
    /// when full.
    #[inline]
    pub(crate) fn push_back(
        &mut self,
        list: usize,
        rank: u64,
        item: T,
        exact: bool,
    ) -> Result<(Handle, bool), T> {
        let Some(top) = self.free_len.checked_sub(1) else {
            return Err(item);
        };
        // SAFETY: `top < free_len <= capacity = free.len()`.
        let idx = unsafe { *at(&self.free, top as usize) };
        self.free_len = top;
        // SAFETY: the free stack holds nodes, below `capacity = slots.len()`.
        let slot = unsafe { at_mut(&mut self.slots, idx as usize) };
        slot.rank = rank;
        slot.gen = slot.gen.wrapping_add(1);
        slot.item.write(item);
        let handle = Handle {
            index: idx,
            gen: slot.gen,
        };
        // SAFETY: `idx` came from the free stack: a node, now live and unlinked.
        Ok((handle, unsafe { self.link_node(list, idx, exact) }))
    }

    /// Unlinks the head of non-empty `list` and frees it. Returns `(rank, item,
    /// new head)`, the new head `NIL` when the list is now empty; the rank is
    /// `bucket_rank` if the head was linked as exact (see the module docs).
    ///
    /// # Panics
    /// If `list` is empty or not a list.
    #[inline]
    pub(crate) fn pop_front(&mut self, list: usize, bucket_rank: u64) -> (u64, T, u32) {
        let sentinel = self.sentinel(list);
        let head = self.next[sentinel];
        assert!(head != NIL, "pop from empty list {list}");
        let idx = index(head);
        let i = idx as usize;
        // SAFETY: a list's head is `NIL` (excluded above) or a live node, so `i <
        // capacity = slots.len() < next.len()`.
        let next = core::mem::replace(unsafe { at_mut(&mut self.next, i) }, FREE);
        debug_assert!(next != FREE, "list {list} heads free node {idx}");
        // SAFETY: `sentinel < next.len()`: read above.
        unsafe { *at_mut(&mut self.next, sentinel) = next };
        if next == NIL {
            // SAFETY: `list < lists = tails.len()`, since its sentinel exists.
            unsafe { *at_mut(&mut self.tails, list) = sentinel as u32 };
        }
        // SAFETY: `idx` was live (it headed a list), so fewer than `capacity` nodes
        // were free: `free_len < free.len()`.
        unsafe { *at_mut(&mut self.free, self.free_len as usize) = idx };
        self.free_len += 1;
        // SAFETY: `i < slots.len()`, as above.
        let slot = unsafe { at(&self.slots, i) };
        // SAFETY: `idx` headed a list, hence was live, and a live node's item is
        // initialised; its `next` is now `FREE`, so the item is read once.
        let item = unsafe { slot.item.assume_init_read() };
        let rank = if head & EXACT != 0 {
            debug_assert_eq!(slot.rank, bucket_rank, "node {idx} linked as exact");
            bucket_rank
        } else {
            slot.rank
        };
        (rank, item, index(next))
    }

    /// Unlinks live node `idx` and frees it. Returns `(rank, item, its list, that
    /// list now empty)`.
    #[inline]
    pub(crate) fn remove(&mut self, idx: u32) -> (u64, T, usize, bool) {
        let (list, now_empty) = self.unlink(idx);
        self.next[idx as usize] = FREE;
        self.free[self.free_len as usize] = idx;
        self.free_len += 1;
        let slot = &self.slots[idx as usize];
        // SAFETY: `idx` was live (the caller resolved it), so its item is
        // initialised; it is now free, so the item is read once.
        let item = unsafe { slot.item.assume_init_read() };
        (slot.rank, item, list, now_empty)
    }

    /// Appends live, currently unlinked node `idx` to `list`, `exact` as for
    /// [`push_back`](Self::push_back); returns whether the list was empty.
    #[inline]
    pub(crate) fn link_back(&mut self, list: usize, idx: u32, exact: bool) -> bool {
        assert!(
            (idx as usize) < self.capacity(),
            "node {idx} beyond the slab"
        );
        // SAFETY: checked above.
        unsafe { self.link_node(list, idx, exact) }
    }

    /// [`link_back`](Self::link_back) of a node known to be one.
    ///
    /// # Safety
    /// `idx < capacity`.
    #[inline(always)]
    unsafe fn link_node(&mut self, list: usize, idx: u32, exact: bool) -> bool {
        let tail = self.tails[list];
        let i = idx as usize;
        // SAFETY: `i < capacity = slots.len() < next.len()` (the caller's promise).
        let slot = unsafe { at_mut(&mut self.slots, i) };
        slot.prev = tail;
        slot.list = list as u32;
        // SAFETY: as above.
        unsafe { *at_mut(&mut self.next, i) = NIL };
        // SAFETY: a tail is a live node or the list's sentinel, both in `next`.
        unsafe { *at_mut(&mut self.next, tail as usize) = link(idx, exact) };
        // SAFETY: `list < tails.len()`: its tail was read above.
        unsafe { *at_mut(&mut self.tails, list) = idx };
        tail as usize == self.sentinel(list)
    }

    /// Unlinks live node `idx` from its list, leaving it live but on no list until
    /// [`link_back`](Self::link_back); returns the list and whether it is now empty.
    #[inline]
    pub(crate) fn unlink(&mut self, idx: u32) -> (usize, bool) {
        let (before, list) = self.predecessor(idx);
        let next = self.next[idx as usize];
        self.next[before] = next;
        if next == NIL {
            self.tails[list] = before as u32;
        } else if before != self.sentinel(list) {
            // (The node after a list's first keeps its stale `prev`.)
            self.slots[index(next) as usize].prev = self.slots[idx as usize].prev;
        }
        (list, self.next[self.sentinel(list)] == NIL)
    }

    /// Marks the link to live node `idx` exact or not, after its rank changed
    /// within its bucket.
    #[inline]
    pub(crate) fn set_exact(&mut self, idx: u32, exact: bool) {
        let (before, _) = self.predecessor(idx);
        self.next[before] = link(idx, exact);
    }

    /// Whether the link to live node `idx` is exact.
    pub(crate) fn linked_exact(&self, idx: u32) -> bool {
        self.next[self.predecessor(idx).0] & EXACT != 0
    }

    /// The entry of `next` that links to live node `idx` (a node, or its list's
    /// sentinel), and its list.
    fn predecessor(&self, idx: u32) -> (usize, usize) {
        let Slot { prev, list, .. } = self.slots[idx as usize];
        let list = list as usize;
        let sentinel = self.sentinel(list);
        // A list's first node may have a stale `prev`: its predecessor is the
        // sentinel.
        if index(self.next[sentinel]) == idx {
            (sentinel, list)
        } else {
            (prev as usize, list)
        }
    }

    /// Node indices of `list`, head to tail.
    pub(crate) fn iter_list(&self, list: usize) -> impl Iterator<Item = u32> + '_ {
        let mut idx = self.head(list);
        core::iter::from_fn(move || {
            (idx != NIL).then(|| {
                let cur = idx;
                idx = index(self.next[cur as usize]);
                cur
            })
        })
    }

    /// Checks the invariants in the module documentation.
    ///
    /// # Panics
    /// On a violation, naming the node or list.
    pub(crate) fn check_invariants(&self) {
        let cap = self.capacity();
        assert_eq!(self.next.len(), cap + self.lists(), "links and sentinels");
        assert_eq!(self.free.len(), cap, "free stack size");
        let mut live = 0usize;
        for l in 0..self.lists() {
            let sentinel = self.sentinel(l);
            let mut prev = sentinel as u32;
            let mut idx = index(self.next[sentinel]);
            while idx != NIL {
                let i = idx as usize;
                assert!(i < cap, "list {l} links to {idx}, not a node");
                assert!(self.next[i] != FREE, "free node {idx} on list {l}");
                assert_eq!(self.slots[i].list as usize, l, "node {idx} on list {l}");
                if prev as usize != sentinel {
                    assert_eq!(self.slots[i].prev, prev, "node {idx} prev link");
                }
                live += 1;
                assert!(live <= cap, "cycle in list {l}");
                prev = idx;
                idx = index(self.next[i]);
            }
            assert_eq!(self.tails[l], prev, "list {l} tail");
        }
        assert_eq!(live, self.len(), "live nodes vs len");
        let mut on_stack = alloc::vec![false; cap];
        for &idx in &self.free[..self.free_len as usize] {
            let i = idx as usize;
            assert_eq!(self.next[i], FREE, "live node {idx} on the free stack");
            assert!(!on_stack[i], "node {idx} twice on the free stack");
            on_stack[i] = true;
        }
        let free = self.next[..cap].iter().filter(|&&n| n == FREE).count();
        assert_eq!(free, self.free_len as usize, "free nodes vs free stack");
    }
}

/// The node a link points to, or `NIL`.
#[inline(always)]
const fn index(link: u32) -> u32 {
    if link == NIL {
        NIL
    } else {
        link & INDEX
    }
}

/// `s[i]` without a bounds check.
///
/// # Safety
/// `i < s.len()`.
#[inline(always)]
unsafe fn at<U>(s: &[U], i: usize) -> &U {
    debug_assert!(i < s.len(), "index {i} beyond {}", s.len());
    // SAFETY: the caller guarantees `i < s.len()`.
    unsafe { s.get_unchecked(i) }
}

/// `&mut s[i]` without a bounds check.
///
/// # Safety
/// `i < s.len()`.
#[inline(always)]
unsafe fn at_mut<U>(s: &mut [U], i: usize) -> &mut U {
    debug_assert!(i < s.len(), "index {i} beyond {}", s.len());
    // SAFETY: the caller guarantees `i < s.len()`.
    unsafe { s.get_unchecked_mut(i) }
}

impl<T> Drop for Slab<T> {
    fn drop(&mut self) {
        if !core::mem::needs_drop::<T>() {
            return;
        }
        for (slot, &next) in self.slots.iter_mut().zip(self.next.iter()) {
            if next != FREE {
                // SAFETY: a node whose `next` is not `FREE` is live, so its item is
                // initialised, and the slab is going away: dropped once.
                unsafe { slot.item.assume_init_drop() };
            }
        }
    }
}

impl<T: Clone> Clone for Slab<T> {
    fn clone(&self) -> Self {
        let slots = self
            .slots
            .iter()
            .zip(self.next.iter())
            .map(|(slot, &next)| Slot {
                rank: slot.rank,
                gen: slot.gen,
                prev: slot.prev,
                list: slot.list,
                item: if next == FREE {
                    MaybeUninit::uninit()
                } else {
                    // SAFETY: the node is live, so its item is initialised.
                    MaybeUninit::new(unsafe { slot.item.assume_init_ref() }.clone())
                },
            })
            .collect::<Vec<_>>()
            .into_boxed_slice();
        Slab {
            next: self.next.clone(),
            slots,
            tails: self.tails.clone(),
            free: self.free.clone(),
            free_len: self.free_len,
        }
    }
}

impl<T> core::fmt::Debug for Slab<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Slab")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("lists", &self.lists())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::rc::Rc;
    use alloc::vec;

    fn slab<T>(capacity: usize, lists: usize) -> Slab<T> {
        Slab::new(capacity, lists).unwrap()
    }

    #[test]
    fn push_pop_remove_relink_keep_links_consistent() {
        let mut s: Slab<char> = slab(4, 3);
        let (ha, e) = s.push_back(0, 10, 'a', false).unwrap();
        let a = ha.index();
        assert!(e);
        let (hb, e) = s.push_back(0, 11, 'b', false).unwrap();
        let b = hb.index();
        assert!(!e);
        let c = s.push_back(1, 12, 'c', false).unwrap().0.index();
        s.check_invariants();
        assert_eq!(s.iter_list(0).collect::<Vec<_>>(), vec![a, b]);
        assert_eq!(s.unlink(a), (0, false));
        assert!(!s.link_back(1, a, false));
        assert_eq!(s.iter_list(1).collect::<Vec<_>>(), vec![c, a]);
        let h = s.handle(b);
        assert_eq!(s.remove(b), (11, 'b', 0, true));
        assert_eq!(s.resolve(h), None, "stale handle refused");
        s.check_invariants();
        assert_eq!(s.pop_front(1, 0), (12, 'c', a));
        assert_eq!(s.resolve(ha), Some(a), "a moved, still live");
        assert_eq!(s.pop_front(1, 0), (10, 'a', NIL));
        assert_eq!(s.resolve(ha), None, "popped: stale");
        assert!(s.list_is_empty(1));
        assert_eq!(s.len(), 0);
        s.check_invariants();
        let (h2, _) = s.push_back(2, 5, 'd', false).unwrap();
        assert_eq!(s.resolve(ha), None, "reused node, old handle still stale");
        assert_eq!(s.resolve(h2), Some(h2.index()));
        let beyond = Handle {
            index: 4,
            gen: h2.gen,
        };
        assert_eq!(s.resolve(beyond), None, "a sentinel is not a node");
    }

    #[test]
    fn unlink_the_head_after_pops_and_the_tail() {
        let mut s: Slab<u8> = slab(5, 1);
        let n: Vec<u32> = (0..5)
            .map(|i| s.push_back(0, i, i as u8, false).unwrap().0.index())
            .collect();
        assert_eq!(s.pop_front(0, 0), (0, 0, n[1]));
        // n[1] is now the head, with a stale `prev`.
        assert_eq!(s.unlink(n[1]), (0, false));
        assert_eq!(s.unlink(n[4]), (0, false));
        assert_eq!(s.iter_list(0).collect::<Vec<_>>(), vec![n[2], n[3]]);
        assert!(!s.link_back(0, n[1], false));
        assert!(!s.link_back(0, n[4], false));
        s.check_invariants();
        assert_eq!(
            s.iter_list(0).collect::<Vec<_>>(),
            vec![n[2], n[3], n[1], n[4]]
        );
        for &i in &[n[3], n[2], n[4], n[1]] {
            s.remove(i);
            s.check_invariants();
        }
        assert!(s.list_is_empty(0));
    }

    #[test]
    fn exact_links_give_the_bucket_rank_and_follow_unlinks() {
        let mut s: Slab<u8> = slab(4, 2);
        s.push_back(0, 7, 1, true).unwrap();
        let b = s.push_back(0, 8, 2, false).unwrap().0.index();
        let c = s.push_back(0, 7, 3, true).unwrap().0.index();
        // b leaves from the middle: c's exact link moves to a.
        assert_eq!(s.unlink(b), (0, false));
        s.set_exact(c, false);
        s.set_rank(c, 9);
        assert!(s.link_back(1, b, true), "list 1 was empty");
        s.set_rank(b, 8);
        s.check_invariants();
        assert_eq!(s.pop_front(0, 7), (7, 1, c));
        assert_eq!(s.pop_front(0, 7), (9, 3, NIL), "no longer exact");
        assert_eq!(s.pop_front(1, 8), (8, 2, NIL));
    }

    #[test]
    fn full_slab_hands_the_item_back_and_sizes_are_checked() {
        let mut s: Slab<u8> = slab(1, 1);
        s.push_back(0, 0, 1, false).unwrap();
        assert_eq!(s.push_back(0, 0, 2, false), Err(2));
        assert!(matches!(
            Slab::<u8>::new(INDEX as usize, 1),
            Err(ConfigError::CapacityTooLarge { .. })
        ));
    }

    #[test]
    fn live_items_are_dropped_once_and_cloned() {
        let token = Rc::new(());
        {
            let mut s: Slab<Rc<()>> = slab(3, 1);
            for _ in 0..3 {
                s.push_back(0, 0, Rc::clone(&token), false).unwrap();
            }
            drop(s.pop_front(0, 0));
            let copy = s.clone();
            assert_eq!(Rc::strong_count(&token), 5);
            drop(copy);
            assert_eq!(Rc::strong_count(&token), 3);
        }
        assert_eq!(Rc::strong_count(&token), 1);
    }
}
