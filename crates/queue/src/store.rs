//! Element storage for the bucketed queues: a preallocated slab of nodes linked into
//! per-bucket FIFO lists (intrusive, doubly linked, by `u32` index).
//!
//! Every node is allocated at construction. Insertion takes a node from the free
//! stack and appends it to a bucket's tail; popping unlinks the head; removal and
//! moving between buckets unlink from the middle in O(1) thanks to the `prev` link.
//! A node records the list it is on, so a handle alone is enough to find its bucket.
//!
//! ## Layout, and what each operation touches (measured, see the README)
//! A pop reads the bucket's `List` and its head node: two dependent loads, the
//! queue's critical path. So:
//! - A node (rank, links, list, generation, item) is 32 bytes for a 4-byte item: one
//!   load brings everything a pop needs.
//! - The head of a list has no meaningful `prev` (the list's `head` says which node
//!   is first), so popping the head writes nothing into the next node: one random
//!   cache line per pop instead of two.
//! - Free nodes are a stack of indices apart from the nodes, not a list threaded
//!   through them: taking a free node reads the top of a small array instead of
//!   chasing a link through a node that may be anywhere in memory (after a drain the
//!   free nodes are in pop order, which is random with respect to memory order).
//! - [`BucketStore::prefetch_node`] starts loading a node, so that a queue can
//!   overlap the miss of its next pop with the rest of the current operation.
//!
//! Invariants (checked by [`BucketStore::check_invariants`]):
//! - a node is either free (`item` is `None`, its index on the free stack once) or
//!   live (`item` is `Some`, on exactly the list named by its `list` field; a free
//!   node's `list` is stale and never read);
//! - each list's `next` links run from `head` to `tail`, and every node but the head
//!   has `prev` naming its predecessor;
//! - `len` equals the number of live nodes.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::api::Handle;
use crate::prefetch::prefetch;

/// List terminator and "no node" marker.
pub(crate) const NIL: u32 = u32::MAX;

/// One slot of the slab. Field order keeps a node within half a cache line for
/// small `T`: a pop touches `rank`, `next`, `gen` and `item` together.
#[derive(Clone, Debug)]
struct Node<T> {
    rank: u64,
    /// Next node of the list; `NIL` at the tail.
    next: u32,
    /// Previous node of the list; meaningless at the head.
    prev: u32,
    list: u32,
    gen: u32,
    item: Option<T>,
}

#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
}

const EMPTY: List = List {
    head: NIL,
    tail: NIL,
};

/// Preallocated nodes and the FIFO lists they are linked into.
#[derive(Clone, Debug)]
pub(crate) struct BucketStore<T> {
    /// The element nodes, then one scratch node (index `capacity`) that is never
    /// live: a prefetch of "no node" (`NIL`) lands there instead of branching.
    nodes: Vec<Node<T>>,
    lists: Vec<List>,
    /// `free[..free_len]` are the indices of the free nodes, the last one taken
    /// first. The array has one entry per node, so it never overflows.
    free: Box<[u32]>,
    free_len: u32,
}

impl<T> BucketStore<T> {
    /// `capacity` nodes (checked by the caller to fit `u32`) and `lists` empty lists.
    pub(crate) fn new(capacity: usize, lists: usize) -> Self {
        let nodes = (0..=capacity)
            .map(|_| Node {
                rank: 0,
                next: NIL,
                prev: NIL,
                list: NIL,
                gen: 0,
                item: None,
            })
            .collect();
        let mut lists_vec = Vec::with_capacity(lists);
        lists_vec.resize(lists, EMPTY);
        // Node 0 on top: a fresh store hands out nodes in memory order.
        let free = (0..capacity as u32).rev().collect();
        BucketStore {
            nodes,
            lists: lists_vec,
            free,
            free_len: capacity as u32,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.capacity() - self.free_len as usize
    }

    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.nodes.len() - 1
    }

    /// The scratch node's index.
    #[inline]
    fn scratch(&self) -> u32 {
        (self.nodes.len() - 1) as u32
    }

    /// Whether every node is in use.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.free_len == 0
    }

    /// Takes a free node.
    #[inline]
    fn alloc(&mut self) -> Option<u32> {
        let top = self.free_len.checked_sub(1)?;
        self.free_len = top;
        Some(self.free[top as usize])
    }

    /// Returns node `idx` to the free stack.
    #[inline]
    fn release(&mut self, idx: u32) {
        self.free[self.free_len as usize] = idx;
        self.free_len += 1;
    }

    #[inline]
    pub(crate) fn list_is_empty(&self, list: usize) -> bool {
        self.lists[list].head == NIL
    }

    /// The node at the head of `list`.
    #[inline]
    pub(crate) fn front(&self, list: usize) -> Option<u32> {
        let head = self.lists[list].head;
        (head != NIL).then_some(head)
    }

    /// The node at the tail of `list`.
    #[inline]
    pub(crate) fn back(&self, list: usize) -> Option<u32> {
        let tail = self.lists[list].tail;
        (tail != NIL).then_some(tail)
    }

    /// Starts loading node `idx` into the cache (`idx` may be `NIL`: then the
    /// scratch node, without a branch).
    #[inline]
    pub(crate) fn prefetch_node(&self, idx: u32) {
        let i = idx.min(self.scratch());
        if let Some(node) = self.nodes.get(i as usize) {
            prefetch(node);
        }
    }

    /// The live node a handle names, if it is still live.
    #[inline]
    pub(crate) fn resolve(&self, handle: Handle) -> Option<u32> {
        let node = self.nodes.get(handle.index as usize)?;
        (node.gen == handle.gen && node.item.is_some()).then_some(handle.index)
    }

    /// The rank and item a live handle names.
    #[inline]
    pub(crate) fn get(&self, handle: Handle) -> Option<(u64, &T)> {
        let idx = self.resolve(handle)?;
        Some((self.rank(idx), self.item(idx)))
    }

    /// The item a live handle names, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        let idx = self.resolve(handle)?;
        Some(self.item_mut(idx))
    }

    #[inline]
    pub(crate) fn handle(&self, idx: u32) -> Handle {
        Handle {
            index: idx,
            gen: self.nodes[idx as usize].gen,
        }
    }

    #[inline]
    pub(crate) fn rank(&self, idx: u32) -> u64 {
        self.nodes[idx as usize].rank
    }

    #[inline]
    pub(crate) fn set_rank(&mut self, idx: u32, rank: u64) {
        self.nodes[idx as usize].rank = rank;
    }

    #[inline]
    pub(crate) fn list_of(&self, idx: u32) -> usize {
        self.nodes[idx as usize].list as usize
    }

    #[inline]
    pub(crate) fn item(&self, idx: u32) -> &T {
        self.nodes[idx as usize]
            .item
            .as_ref()
            .expect("live node holds an item")
    }

    #[inline]
    pub(crate) fn item_mut(&mut self, idx: u32) -> &mut T {
        self.nodes[idx as usize]
            .item
            .as_mut()
            .expect("live node holds an item")
    }

    /// Takes a free node for `(rank, item)` and appends it to `list`. Returns the
    /// node, its handle and whether the list was empty before; hands the item back
    /// when full.
    #[inline]
    pub(crate) fn push_back(
        &mut self,
        list: usize,
        rank: u64,
        item: T,
    ) -> Result<(Handle, bool), T> {
        let Some(idx) = self.alloc() else {
            return Err(item);
        };
        let tail = self.lists[list].tail;
        let node = &mut self.nodes[idx as usize];
        node.rank = rank;
        node.item = Some(item);
        node.prev = tail;
        node.next = NIL;
        node.list = list as u32;
        let handle = Handle {
            index: idx,
            gen: node.gen,
        };
        if tail == NIL {
            self.lists[list].head = idx;
        } else {
            self.nodes[tail as usize].next = idx;
        }
        self.lists[list].tail = idx;
        Ok((handle, tail == NIL))
    }

    /// Unlinks the head of `list` and frees it. Returns `(rank, item, new head)`,
    /// the new head `NIL` when the list is now empty.
    #[inline]
    pub(crate) fn pop_front(&mut self, list: usize) -> Option<(u64, T, u32)> {
        let idx = self.lists[list].head;
        let node = self.nodes.get_mut(idx as usize)?;
        let next = node.next;
        let item = node.item.take().expect("list heads are live");
        node.gen = node.gen.wrapping_add(1);
        let rank = node.rank;
        self.lists[list].head = next;
        if next == NIL {
            self.lists[list].tail = NIL;
        }
        self.release(idx);
        Some((rank, item, next))
    }

    /// Unlinks live node `idx` and frees it. Returns `(rank, item, its list, that
    /// list now empty)`.
    #[inline]
    pub(crate) fn remove(&mut self, idx: u32) -> (u64, T, usize, bool) {
        let (list, now_empty) = self.unlink(idx);
        let node = &mut self.nodes[idx as usize];
        let item = node.item.take().expect("removing a live node");
        node.gen = node.gen.wrapping_add(1);
        let rank = node.rank;
        self.release(idx);
        (rank, item, list, now_empty)
    }

    /// Moves live node `idx` to the tail of `list`. Returns `(old list, old list now
    /// empty, new list was empty)`.
    #[inline]
    pub(crate) fn move_back(&mut self, idx: u32, list: usize) -> (usize, bool, bool) {
        let (old, old_empty) = self.unlink(idx);
        let new_was_empty = self.link_back(list, idx);
        (old, old_empty, new_was_empty)
    }

    /// Appends live, currently unlinked node `idx` to `list`; returns whether the
    /// list was empty before.
    #[inline]
    pub(crate) fn link_back(&mut self, list: usize, idx: u32) -> bool {
        let tail = self.lists[list].tail;
        {
            let node = &mut self.nodes[idx as usize];
            node.prev = tail;
            node.next = NIL;
            node.list = list as u32;
        }
        if tail == NIL {
            self.lists[list].head = idx;
        } else {
            self.nodes[tail as usize].next = idx;
        }
        self.lists[list].tail = idx;
        tail == NIL
    }

    /// Prepends live, currently unlinked node `idx` to `list`; returns whether the
    /// list was empty before.
    #[inline]
    pub(crate) fn link_front(&mut self, list: usize, idx: u32) -> bool {
        let head = self.lists[list].head;
        {
            let node = &mut self.nodes[idx as usize];
            node.next = head;
            node.list = list as u32;
        }
        if head == NIL {
            self.lists[list].tail = idx;
        } else {
            self.nodes[head as usize].prev = idx;
        }
        self.lists[list].head = idx;
        head == NIL
    }

    /// Unlinks live node `idx` from its list, leaving it live but on no list until
    /// [`link_back`](Self::link_back); returns the list and whether it is now empty.
    #[inline]
    pub(crate) fn unlink(&mut self, idx: u32) -> (usize, bool) {
        let (prev, next, list) = {
            let n = &self.nodes[idx as usize];
            (n.prev, n.next, n.list as usize)
        };
        let l = self.lists[list];
        let (at_head, at_tail) = (l.head == idx, l.tail == idx);
        if at_head {
            self.lists[list].head = if at_tail { NIL } else { next };
        } else {
            self.nodes[prev as usize].next = next;
        }
        if at_tail {
            self.lists[list].tail = if at_head { NIL } else { prev };
        } else if !at_head {
            // The new head's `prev` is never read, so it is left alone.
            self.nodes[next as usize].prev = prev;
        }
        (list, self.lists[list].head == NIL)
    }

    /// Node indices of `list`, head to tail.
    pub(crate) fn iter_list(&self, list: usize) -> impl Iterator<Item = u32> + '_ {
        let mut idx = self.lists[list].head;
        core::iter::from_fn(move || {
            (idx != NIL).then(|| {
                let cur = idx;
                idx = self.nodes[cur as usize].next;
                cur
            })
        })
    }

    /// Number of lists.
    pub(crate) fn lists(&self) -> usize {
        self.lists.len()
    }

    /// Checks the invariants in the module documentation.
    ///
    /// # Panics
    /// On a violation, naming the node or list.
    pub(crate) fn check_invariants(&self) {
        let mut live = 0usize;
        for (l, list) in self.lists.iter().enumerate() {
            let mut prev = NIL;
            let mut idx = list.head;
            while idx != NIL {
                let n = &self.nodes[idx as usize];
                assert!(n.item.is_some(), "free node {idx} on list {l}");
                assert_eq!(
                    n.list as usize, l,
                    "node {idx} on list {l} records list {}",
                    n.list
                );
                if prev != NIL {
                    assert_eq!(n.prev, prev, "node {idx} prev link");
                }
                live += 1;
                assert!(live <= self.capacity(), "cycle in list {l}");
                prev = idx;
                idx = n.next;
            }
            assert_eq!(list.tail, prev, "list {l} tail");
        }
        assert_eq!(live, self.len(), "live nodes vs len");
        assert!(
            self.nodes[self.scratch() as usize].item.is_none(),
            "the scratch node is live"
        );
        let mut on_stack = alloc::vec![false; self.nodes.len()];
        for &idx in &self.free[..self.free_len as usize] {
            assert!(
                self.nodes[idx as usize].item.is_none(),
                "live node {idx} on the free stack"
            );
            assert!(
                !on_stack[idx as usize],
                "node {idx} twice on the free stack"
            );
            on_stack[idx as usize] = true;
        }
        assert_eq!(self.free.len(), self.capacity(), "free stack size");
        assert_eq!(live + self.free_len as usize, self.capacity(), "nodes lost");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn push_pop_remove_move_keep_links_consistent() {
        let mut s: BucketStore<char> = BucketStore::new(4, 3);
        let (ha, e) = s.push_back(0, 10, 'a').unwrap();
        let a = ha.index();
        assert!(e);
        let (hb, e) = s.push_back(0, 11, 'b').unwrap();
        let b = hb.index();
        assert!(!e);
        let c = s.push_back(1, 12, 'c').unwrap().0.index();
        s.check_invariants();
        assert_eq!(s.iter_list(0).collect::<Vec<_>>(), vec![a, b]);
        let (old, old_empty, new_was_empty) = s.move_back(a, 1);
        assert_eq!((old, old_empty, new_was_empty), (0, false, false));
        assert_eq!(s.iter_list(1).collect::<Vec<_>>(), vec![c, a]);
        let h = s.handle(b);
        assert_eq!(s.remove(b), (11, 'b', 0, true));
        assert_eq!(s.resolve(h), None, "stale handle refused");
        s.check_invariants();
        assert_eq!(s.pop_front(1), Some((12, 'c', a)));
        assert_eq!(s.pop_front(1), Some((10, 'a', NIL)));
        assert_eq!(s.pop_front(1), None);
        assert_eq!(s.len(), 0);
        s.check_invariants();
    }

    #[test]
    fn link_front_prepends_and_back_names_the_tail() {
        let mut s: BucketStore<char> = BucketStore::new(4, 2);
        let a = s.push_back(0, 1, 'a').unwrap().0.index();
        let b = s.push_back(0, 2, 'b').unwrap().0.index();
        assert_eq!(s.back(0), Some(b));
        assert_eq!(s.back(1), None);
        let (list, now_empty) = s.unlink(b);
        assert_eq!((list, now_empty), (0, false));
        assert!(s.link_front(1, b), "list 1 was empty");
        s.unlink(a);
        assert!(!s.link_front(1, a));
        assert_eq!(s.iter_list(1).collect::<Vec<_>>(), vec![a, b]);
        assert_eq!(s.back(1), Some(b));
        assert!(s.list_is_empty(0));
        s.check_invariants();
    }

    #[test]
    fn full_store_hands_the_item_back() {
        let mut s: BucketStore<u8> = BucketStore::new(1, 1);
        s.push_back(0, 0, 1).unwrap();
        assert_eq!(s.push_back(0, 0, 2), Err(2));
    }
}
