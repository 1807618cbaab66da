//! Enhanced transmission selection (IEEE 802.1Q's ETS, Linux's `sch_ets`):
//! strict priority between levels, and deficit round robin by weight among the
//! children that share a level. The discipline of an `ets` node.
//!
//! A child's configured priority is its level, below 64. A level held by one
//! child is a strict-priority band; the children of a level held by several
//! share it by DRR, each child's quantum its weight times the tree's MTU. The
//! pipe of DPDK's `rte_sched` is such a node: 12 strict classes of one queue
//! each and a best-effort class of four weighted queues.
//!
//! The order is exactly that of a `strict` node whose child at each shared
//! level is a `drr` node over that level's children (a property test checks
//! it), without the inner nodes: a packet of a shared level passes one node
//! less on its way, with its counts, its limit check and its report to the
//! parent. The inner node's own limit and counts are what the user gives up.
//!
//! State: one word of queued levels (`select` is a count of trailing zeros),
//! each level's unit or group, and one DRR core per shared level, whose flows
//! are the level's members. A send that leaves a strict child backlogged
//! changes nothing; a shared level's core keeps its round and deficits while
//! a higher level sends, as the inner DRR node would.

use eiffel_queue::prefetch;

use super::levels::MAX_LEVELS;
use super::txn::Unit;
use crate::flows::FlowCore;
use crate::scheduler::{ConfigError, FlowConfig};
use crate::DrrCore;

/// Most children of an `ets` node: its tables are one entry a child, inline
/// (a level's children beyond that can share it through a `drr` child).
pub const MAX_ETS_UNITS: usize = MAX_LEVELS;

/// A level entry's mark for a level shared by a group (the low bits are the
/// group's index), and a unit's place's mark for a unit of a shared level
/// (the low bits are its level).
const SHARED: u8 = 1 << 7;

/// The children of one shared level: a DRR core whose flow ids are the
/// node's unit indices, those of the level's members configured.
// NB: a core over every unit, not over the members alone: its answer is the
// unit, with no table from member to unit and back. A member's record sits at
// its unit's index, so a level of consecutive children (an rte_sched pipe's
// four best-effort queues) keeps its records on consecutive lines.
#[derive(Debug)]
struct Group {
    core: DrrCore,
}

/// Strict priority between levels, DRR by weight within a level.
// NB: the tables a packet reads (the queued levels, a level's unit or group,
// a unit's level) are inline, in the lines of the node's discipline box: a
// burst enqueue fetches them with the box, and a strict class's packet reads
// nothing else. A shared level's core is the only other allocation on a
// packet's path.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Ets {
    /// Bit `l` set: level `l` has a queued unit.
    mask: u64,
    groups: Box<[Group]>,
    /// Per unit: its level, `SHARED |` if the level is shared.
    place: [u8; MAX_ETS_UNITS],
    /// Per level in use: its unit, or `SHARED | group`.
    entry: [u8; MAX_LEVELS],
    /// The units as configured (what `units_mut` exposes).
    pub(crate) units: Box<[Unit]>,
}

impl Ets {
    /// The discipline over `units` (priorities below [`MAX_LEVELS`], at most
    /// [`MAX_ETS_UNITS`] units; the tree's validation refuses others), with
    /// quanta of `weight * mtu` bytes.
    pub(crate) fn new(units: Vec<Unit>, mtu: u32) -> Result<Ets, ConfigError> {
        if units.len() > MAX_ETS_UNITS {
            return Err(ConfigError::OutOfRange {
                what: "ets children",
                value: units.len() as u64,
                range: "1..=64",
            });
        }
        let mut by_level: Vec<Vec<u8>> = vec![Vec::new(); MAX_LEVELS];
        for (u, unit) in units.iter().enumerate() {
            let level = unit.priority as usize;
            if level >= MAX_LEVELS {
                return Err(ConfigError::OutOfRange {
                    what: "ets priority",
                    value: u64::from(unit.priority),
                    range: "0..=63",
                });
            }
            by_level[level].push(u as u8);
        }
        let mut e = Ets {
            mask: 0,
            entry: [0; MAX_LEVELS],
            place: [0; MAX_ETS_UNITS],
            groups: Box::new([]),
            units: units.into_boxed_slice(),
        };
        let mut groups = Vec::new();
        for (level, members) in by_level.into_iter().enumerate() {
            match members[..] {
                [] => {}
                [u] => {
                    e.entry[level] = u;
                    e.place[u as usize] = level as u8;
                }
                _ => {
                    e.entry[level] = SHARED | groups.len() as u8;
                    groups.push(e.group(&members, level, mtu)?);
                }
            }
        }
        e.groups = groups.into_boxed_slice();
        Ok(e)
    }

    /// Unit `u`'s level and, if the level is shared, `u` as its flow id
    /// there.
    #[inline(always)]
    fn place(&self, u: u32) -> (u8, Option<u32>) {
        let p = self.place[u as usize & (MAX_ETS_UNITS - 1)];
        (p & !SHARED, (p & SHARED != 0).then_some(u))
    }

    #[inline(always)]
    fn group_of(&mut self, level: u8) -> &mut Group {
        let g = self.entry[level as usize & (MAX_LEVELS - 1)] & !SHARED;
        &mut self.groups[g as usize]
    }

    /// Whether no unit is queued.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.mask == 0
    }

    /// Units queued.
    pub(crate) fn len(&self) -> usize {
        let groups: usize = self
            .groups
            .iter()
            .map(|g| g.core.backlogged() as usize)
            .sum();
        let strict = (0..MAX_LEVELS)
            .filter(|&l| self.mask & (1 << l) != 0 && self.entry[l] & SHARED == 0)
            .count();
        strict + groups
    }

    /// Whether unit `u` is queued.
    pub(crate) fn is_active(&self, u: u32) -> bool {
        match self.place(u) {
            (level, Some(m)) => {
                let g = self.entry[level as usize] & !SHARED;
                self.groups[g as usize].core.is_backlogged(m)
            }
            (level, None) => self.mask & (1 << level) != 0,
        }
    }

    /// Hints the CPU to fetch the group of unit `u`'s level, if it is shared
    /// (a burst enqueue's stage before the activation). Not the member's
    /// record: its address is in the group, not yet in the cache.
    #[inline]
    pub(crate) fn prefetch_unit(&self, u: u32) {
        if let (level, Some(_)) = self.place(u) {
            let g = self.entry[level as usize & (MAX_LEVELS - 1)] & !SHARED;
            if let Some(g) = self.groups.get(g as usize) {
                prefetch(g);
            }
        }
    }

    /// Unit `u` became backlogged and eligible, its head `head_len` bytes.
    #[inline]
    pub(crate) fn activate(&mut self, u: u32, head_len: u32) {
        let (level, member) = self.place(u);
        self.mask |= 1 << level;
        if let Some(m) = member {
            self.group_of(level).core.activate(m, head_len);
        }
    }

    /// The unit to serve next: the queued level of the highest priority, and
    /// in a shared level the member whose DRR turn it is.
    #[inline(always)]
    pub(crate) fn select(&mut self) -> Option<u32> {
        if self.mask == 0 {
            return None;
        }
        let e = self.entry[self.mask.trailing_zeros() as usize];
        if e & SHARED == 0 {
            return Some(u32::from(e));
        }
        self.group_turn(e)
    }

    /// The member whose turn it is in the group of level entry `e`.
    fn group_turn(&mut self, e: u8) -> Option<u32> {
        self.groups[(e & !SHARED) as usize].core.peek()
    }

    /// [`Ets::served`], then [`Ets::select`]: a strict unit that stays is its
    /// own successor, and a shared level's core answers its report and its
    /// next turn from one lookup while the level stays queued (no higher
    /// level can have become queued in between: that takes an arrival).
    #[inline(always)]
    pub(crate) fn served_select(&mut self, u: u32, next_len: Option<u32>) -> Option<u32> {
        let (level, member) = self.place(u);
        match member {
            Some(m) => {
                if let Some(next) = self.group_of(level).core.served_peek(m, next_len) {
                    return Some(next);
                }
            }
            None if next_len.is_some() => return Some(u),
            None => {}
        }
        self.mask &= !(1 << level);
        self.select()
    }

    /// Unit `u`, the one `select` returned, sent a packet; `next_len` is its
    /// next head's length, `None` if it left.
    #[inline]
    pub(crate) fn served(&mut self, u: u32, next_len: Option<u32>) {
        let (level, member) = self.place(u);
        let empty = match member {
            Some(m) => {
                let core = &mut self.group_of(level).core;
                core.served(m, next_len);
                core.backlogged() == 0
            }
            None => next_len.is_none(),
        };
        if empty {
            self.mask &= !(1 << level);
        }
    }

    /// Bytes unit `u`, the one just served, may still send in its turn: its
    /// DRR deficit in a shared level, `None` in a strict one.
    pub(crate) fn turn_room(&self, u: u32) -> Option<u64> {
        let (level, member) = self.place(u);
        member.map(|m| {
            let g = self.entry[level as usize] & !SHARED;
            self.groups[g as usize].core.deficit(m)
        })
    }

    /// Unit `u` sent `bytes` in a run this node's choice did not see, and has
    /// a packet of `next_len` bytes next.
    pub(crate) fn served_run(&mut self, u: u32, bytes: u64, next_len: u32) {
        if let (level, Some(m)) = self.place(u) {
            self.group_of(level).core.served_run(m, bytes, next_len);
        }
    }

    /// Checks that a level is queued exactly when a unit of it is.
    pub(crate) fn check_invariants(&self) {
        for (l, &e) in self.entry.iter().enumerate() {
            let queued = self.mask & (1 << l) != 0;
            if e & SHARED != 0 {
                let core = &self.groups[(e & !SHARED) as usize].core;
                core.check_invariants();
                assert_eq!(
                    queued,
                    core.backlogged() > 0,
                    "ets: level {l} queued vs its group"
                );
            } else if queued {
                assert_eq!(self.place(u32::from(e)), (l as u8, None), "ets: level {l}");
            }
        }
    }

    /// The group of shared level `level`: a DRR core over `members`, recorded
    /// in their places.
    fn group(&mut self, members: &[u8], level: usize, mtu: u32) -> Result<Group, ConfigError> {
        let mut core = DrrCore::new(self.units.len() as u32)?;
        for &u in members {
            let cfg = FlowConfig::weight(self.units[u as usize].weight).max_packet(mtu);
            core.add_flow(u32::from(u), cfg)?;
            self.place[u as usize] = SHARED | level as u8;
        }
        Ok(Group { core })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(levels: &[(u32, u32)]) -> Vec<Unit> {
        levels
            .iter()
            .map(|&(priority, weight)| Unit {
                priority,
                weight,
                ..Unit::default()
            })
            .collect()
    }

    #[test]
    fn strict_levels_first_then_weighted_turns() {
        // Units 0 and 1 strict at levels 0 and 5; 2, 3, 4 share level 9 at
        // weights 1, 2, 1 (quanta of 100, 200 and 100 bytes).
        let mut e = Ets::new(units(&[(5, 1), (0, 1), (9, 1), (9, 2), (9, 1)]), 100).unwrap();
        assert_eq!(e.select(), None);
        for u in [2, 3, 4] {
            e.activate(u, 100);
        }
        e.activate(0, 100);
        assert_eq!((e.select(), e.len()), (Some(0), 4));
        e.served(0, None);
        // Level 9 by DRR: 2 (one packet), 3 (two), 4 (one), 2 again.
        let mut order = Vec::new();
        for _ in 0..5 {
            let u = e.select().unwrap();
            order.push(u);
            e.served(u, Some(100));
        }
        assert_eq!(order, [2, 3, 3, 4, 2]);
        // A strict level preempts the round, which resumes where it stood.
        e.activate(1, 100);
        assert_eq!(e.select(), Some(1));
        e.served(1, None);
        assert_eq!(e.select(), Some(3));
        assert!(e.is_active(3) && !e.is_active(1));
        assert_eq!(e.turn_room(3), Some(200));
        assert_eq!(e.turn_room(0), None);
        e.check_invariants();
        for u in [3, 4, 2] {
            assert_eq!(e.select(), Some(u));
            e.served(u, None);
            if u == 3 {
                continue;
            }
        }
        assert_eq!((e.select(), e.len()), (None, 0));
        e.check_invariants();
    }

    #[test]
    fn priorities_from_64_and_children_beyond_64_are_refused() {
        assert!(Ets::new(units(&[(64, 1)]), 1500).is_err());
        assert!(Ets::new(units(&[(63, 1), (63, 1), (0, 1)]), 1500).is_ok());
        assert!(Ets::new(units(&[(3, 1); 64]), 1500).is_ok());
        assert!(Ets::new(units(&[(3, 1); 65]), 1500).is_err());
    }
}

#[cfg(test)]
mod tree_tests {
    use proptest::prelude::*;

    use crate::packet::Packet;
    use crate::scheduler::Scheduler;
    use crate::time::Rate;
    use crate::tree::{Discipline, NodeSpec, PolicyTree, RateLimit, TreeSpec};

    /// A child of the node under test: its level, its weight, and whether it
    /// has a rate limit.
    type Child = (u32, u32, bool);

    fn limit(limited: bool) -> Option<RateLimit> {
        limited.then(|| RateLimit {
            rate: Rate::from_mbps(100),
            burst: 3_000,
        })
    }

    /// Two twins over `children`: an `ets` root over FIFO leaves, and a
    /// `strict` root whose child at each shared level is a `drr` node over
    /// that level's leaves. The leaves have the same names in both.
    fn twins(children: &[Child]) -> (TreeSpec, TreeSpec) {
        let leaf =
            |spec: &mut TreeSpec, i: usize, parent: usize, &(level, weight, limited): &Child| {
                let mut n = NodeSpec::new(format!("q{i}"), Some(parent));
                n.priority = level;
                n.weight = weight;
                n.limit = limit(limited);
                n.capacity = Some(6);
                spec.add(n);
            };
        let mut ets = TreeSpec::new(64);
        let mut root = NodeSpec::new("root", None);
        root.discipline = Discipline::Ets;
        let r = ets.add(root);
        for (i, c) in children.iter().enumerate() {
            leaf(&mut ets, i, r, c);
        }
        let mut nested = TreeSpec::new(64);
        let mut root = NodeSpec::new("root", None);
        root.discipline = Discipline::STRICT;
        let r = nested.add(root);
        for level in 0..8 {
            let members: Vec<usize> = (0..children.len())
                .filter(|&i| children[i].0 == level)
                .collect();
            let parent = if members.len() > 1 {
                let mut drr = NodeSpec::new(format!("level{level}"), Some(r));
                drr.discipline = Discipline::DRR;
                drr.priority = level;
                nested.add(drr)
            } else {
                r
            };
            for i in members {
                leaf(&mut nested, i, parent, &children[i]);
            }
        }
        (ets, nested)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// An `ets` node sends what a `strict` node over a `drr` node per
        /// shared level sends, packet for packet, with drops, rate limits that
        /// hold and release, and runs of dequeues at one instant.
        #[test]
        fn ets_is_strict_over_drr_levels(
            children in proptest::collection::vec((0u32..8, 1u32..4, proptest::bool::weighted(0.3)), 1..10),
            steps in proptest::collection::vec(
                (proptest::collection::vec((any::<u32>(), 64u32..1500), 0..12), 0usize..14, 0u64..40_000),
                1..50,
            ),
        ) {
            let (a, b) = twins(&children);
            let mut ets = PolicyTree::new(a).unwrap();
            let mut nested = PolicyTree::new(b).unwrap();
            let names: Vec<String> = (0..children.len()).map(|i| format!("q{i}")).collect();
            let (mut now, mut seq) = (0u64, 0u32);
            for (arrivals, dequeues, dt) in steps {
                now += dt;
                for (x, len) in arrivals {
                    seq += 1;
                    let name = &names[x as usize % names.len()];
                    let p = |t: &PolicyTree| Packet::new(0, len).class(t.leaf(name).unwrap()).buffer(seq);
                    let (pa, pb) = (p(&ets), p(&nested));
                    let got = (ets.enqueue(pa, now).is_ok(), nested.enqueue(pb, now).is_ok());
                    prop_assert_eq!(got.0, got.1);
                }
                for _ in 0..dequeues {
                    let got = (ets.dequeue(now), nested.dequeue(now));
                    prop_assert_eq!(got.0.map(|p| p.buffer), got.1.map(|p| p.buffer));
                }
                ets.check_invariants();
                nested.check_invariants();
                prop_assert_eq!(ets.next_ready(now), nested.next_ready(now));
            }
            prop_assert_eq!(ets.backlog(), nested.backlog());
            for name in &names {
                let (i, j) = (ets.spec().find(name).unwrap(), nested.spec().find(name).unwrap());
                prop_assert_eq!(ets.node(i).counters, nested.node(j).counters);
            }
        }
    }

    #[test]
    fn the_view_names_the_discipline() {
        let (a, _) = twins(&[(0, 1, false), (3, 1, false), (3, 2, false)]);
        let tree = PolicyTree::new(a).unwrap();
        assert_eq!(tree.node(0).discipline.as_deref(), Some("ets"));
    }

    #[test]
    fn bad_levels_and_leaves_are_refused() {
        let (mut a, _) = twins(&[(0, 1, false), (64, 1, false)]);
        let err = PolicyTree::new(a.clone()).unwrap_err().to_string();
        assert!(err.contains("q1") && err.contains("got 64"), "{err}");
        a.nodes.truncate(1);
        let err = PolicyTree::new(a).unwrap_err().to_string();
        assert!(err.contains("ets orders children"), "{err}");
    }
}
