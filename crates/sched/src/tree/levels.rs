//! Strict priority over a node's children as one word: the discipline of a
//! `strict` node whose children have distinct priorities below 64.
//!
//! Such a node's order never depends on packets: a child ranks by its
//! configured priority, and two children never tie. Its queue is then a set of
//! levels, one bit per priority, and the unit at each level is fixed: `select`
//! is a count of trailing zeros, `activate` and a send that empties a child
//! flip one bit, and a send that leaves a child backlogged changes nothing.
//! This is exactly what a ranked node with the `strict` transaction over an
//! `ffs` queue computes (the same units in the same order), without the unit
//! tables, the queue handles, the queue's nodes and the two dispatches per call
//! (transaction, then queue kind): in `eiffel bench hqos` every pipe is such a
//! node, and at 64K queues each of those tables was a cache miss of a packet's
//! path.

use super::txn::Unit;

/// Most levels (and so children) of a [`Levels`] node: one machine word.
pub(crate) const MAX_LEVELS: usize = 64;

/// Strict priority over at most 64 units of distinct levels.
#[derive(Debug)]
pub(crate) struct Levels {
    /// Bit `l` set: the unit at level `l` is queued.
    mask: u64,
    /// The unit at each level in use.
    unit_at: [u8; MAX_LEVELS],
    /// Each unit's level (its priority).
    level: [u8; MAX_LEVELS],
    /// The units as configured (what `units_mut` exposes; no transaction
    /// reads them).
    pub(crate) units: Vec<Unit>,
}

impl Levels {
    /// The discipline for `units` if their priorities are distinct and below
    /// [`MAX_LEVELS`]; `None` otherwise.
    pub(crate) fn new(units: Vec<Unit>) -> Option<Levels> {
        if units.len() > MAX_LEVELS {
            return None;
        }
        let mut unit_at = [u8::MAX; MAX_LEVELS];
        let mut level = [0; MAX_LEVELS];
        for (u, unit) in units.iter().enumerate() {
            let p = unit.priority as usize;
            if p >= MAX_LEVELS || unit_at[p] != u8::MAX {
                return None;
            }
            unit_at[p] = u as u8;
            level[u] = p as u8;
        }
        Some(Levels {
            mask: 0,
            unit_at,
            level,
            units,
        })
    }

    #[inline]
    fn bit(&self, u: u32) -> u64 {
        1 << self.level[u as usize & (MAX_LEVELS - 1)]
    }

    /// Units queued.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.mask.count_ones() as usize
    }

    /// Whether unit `u` is queued.
    #[inline]
    pub(crate) fn is_active(&self, u: u32) -> bool {
        self.mask & self.bit(u) != 0
    }

    /// Unit `u` became backlogged and eligible.
    #[inline]
    pub(crate) fn activate(&mut self, u: u32) {
        self.mask |= self.bit(u);
    }

    /// The queued unit of the highest priority (lowest level).
    #[inline]
    pub(crate) fn select(&self) -> Option<u32> {
        (self.mask != 0).then(|| u32::from(self.unit_at[self.mask.trailing_zeros() as usize]))
    }

    /// Unit `u` sent a packet; it stays queued if it has a next one.
    #[inline]
    pub(crate) fn served(&mut self, u: u32, stays: bool) {
        if !stays {
            self.mask &= !self.bit(u);
        }
    }

    /// Checks that only levels in use are queued.
    pub(crate) fn check_invariants(&self) {
        for l in 0..MAX_LEVELS {
            if self.mask & (1 << l) != 0 {
                let u = self.unit_at[l];
                assert!(
                    (u as usize) < self.units.len(),
                    "strict levels: level {l} queued without a unit"
                );
                assert_eq!(
                    self.level[u as usize] as usize, l,
                    "strict levels: unit {u}"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(priorities: &[u32]) -> Vec<Unit> {
        priorities
            .iter()
            .map(|&priority| Unit {
                priority,
                ..Unit::default()
            })
            .collect()
    }

    #[test]
    fn serves_the_highest_priority_unit_first() {
        let mut l = Levels::new(units(&[5, 0, 63, 7])).expect("distinct levels");
        assert_eq!(l.select(), None);
        for u in [0, 2, 3] {
            l.activate(u);
        }
        assert_eq!((l.select(), l.len()), (Some(0), 3));
        l.activate(1);
        assert_eq!(l.select(), Some(1));
        l.served(1, true);
        assert_eq!(l.select(), Some(1));
        l.served(1, false);
        assert!(!l.is_active(1));
        assert_eq!(l.select(), Some(0));
        l.served(0, false);
        assert_eq!(l.select(), Some(3));
        l.served(3, false);
        assert_eq!(l.select(), Some(2));
        l.served(2, false);
        assert_eq!((l.select(), l.len()), (None, 0));
        l.check_invariants();
    }

    #[test]
    fn ties_and_high_levels_are_refused() {
        assert!(Levels::new(units(&[1, 1])).is_none());
        assert!(Levels::new(units(&[64])).is_none());
        assert!(Levels::new(units(&(0..65).collect::<Vec<_>>())).is_none());
        assert!(Levels::new(units(&(0..64).rev().collect::<Vec<_>>())).is_some());
    }
}

#[cfg(test)]
mod tree_tests {
    use crate::packet::{Nanos, Packet};
    use crate::tree::{Discipline, NodeSpec, Transaction, TreeSpec, Unit};
    use crate::{PolicyTree, Scheduler};

    /// Strict priority upside down (ranks within the two levels the node's
    /// queue was planned for).
    #[derive(Debug)]
    struct Reversed;

    impl Transaction for Reversed {
        fn name(&self) -> &str {
            "reversed"
        }
        fn on_activate(&mut self, unit: &mut Unit, _: &Packet, _: Nanos) -> u64 {
            1 - u64::from(unit.priority)
        }
        fn on_dequeue(&mut self, unit: &mut Unit, _: &Packet, _: Option<&Packet>, _: Nanos) -> u64 {
            1 - u64::from(unit.priority)
        }
    }

    fn strict_pair() -> PolicyTree {
        let mut spec = TreeSpec::new(8);
        let mut root = NodeSpec::new("root", None);
        root.discipline = Discipline::STRICT;
        let r = spec.add(root);
        for (name, priority) in [("low", 1), ("high", 0)] {
            let mut leaf = NodeSpec::new(name, Some(r));
            leaf.priority = priority;
            spec.add(leaf);
        }
        PolicyTree::new(spec).expect("a valid tree")
    }

    fn order(tree: &mut PolicyTree) -> Vec<u32> {
        let (low, high) = (tree.leaf("low").unwrap(), tree.leaf("high").unwrap());
        for (t, class) in [(1, low), (2, high), (3, low)] {
            let pkt = Packet::new(class, 100).class(class).at(t);
            tree.enqueue(pkt, t).expect("room");
        }
        (0..3)
            .map(|_| tree.dequeue(9).expect("queued").arrival as u32)
            .collect()
    }

    #[test]
    fn strict_levels_serve_by_priority_and_give_way_to_a_transaction() {
        let mut tree = strict_pair();
        assert_eq!(tree.node(0).discipline.as_deref(), Some("strict"));
        assert_eq!(order(&mut tree), [2, 1, 3]);
        tree.check_invariants();
        // A custom transaction replaces the levels with a ranked queue.
        let mut tree = strict_pair();
        tree.set_transaction("root", Box::new(Reversed))
            .expect("empty node");
        assert_eq!(tree.node(0).discipline.as_deref(), Some("reversed"));
        assert_eq!(order(&mut tree), [1, 3, 2]);
        tree.check_invariants();
    }
}
