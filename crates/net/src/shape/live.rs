//! The policy tree as the arbiter runs it, with leaf names that survive a reload.
//!
//! The receive thread's classifier and the arbiter's tree change at a reload, on
//! two threads, and frames keep flowing meanwhile. To need no ordering between the
//! two switches, the classifier does not emit tree node indices: it emits *stable
//! leaf ids*, indices into an append-only [`Registry`] of every leaf name any
//! policy has used. [`LiveTree`] maps a stable id to the current tree's leaf on
//! enqueue (a name the tree lacks goes to its default leaf), so a descriptor
//! classified by the old rules and one classified by the new rules both land
//! somewhere meaningful in whichever tree reads them.
//!
//! [`LiveTree::replace`] is the reload itself, run on the arbiter thread: the old
//! tree is emptied into the new one. A tree only gives up packets through
//! `dequeue`, which a shaped node refuses before its release time, so the old tree
//! is drained along its own timeline: dequeue at `t`, then advance `t` to the tree's
//! next release ([`Scheduler::next_ready`]) until it is empty. The old tree is
//! thrown away afterwards, so its shaping state does not matter; the packets keep
//! each leaf's (and each flow's) order because a tree never reorders a FIFO.

use eiffel_pspat::Control;
use eiffel_sched::tree::TreeSpec;
use eiffel_sched::{
    Backlog, ClassId, ConfigError, Counters, Dropped, Nanos, Packet, PolicyTree, Scheduler,
};

/// Most distinct leaf names over the life of a bump.
pub const MAX_LEAF_NAMES: usize = 1 << 16;

/// Every leaf name any policy used, in order of first use; a name's index is its
/// stable leaf id.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    names: Vec<String>,
}

impl Registry {
    /// The stable id of `name`, registering it if new.
    ///
    /// # Errors
    /// More than [`MAX_LEAF_NAMES`] names.
    pub fn id(&mut self, name: &str) -> Result<ClassId, ConfigError> {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return Ok(i as ClassId);
        }
        if self.names.len() >= MAX_LEAF_NAMES {
            return Err(ConfigError::OutOfRange {
                what: "distinct leaf names over all reloads",
                value: self.names.len() as u64 + 1,
                range: "1..=65536",
            });
        }
        self.names.push(name.to_owned());
        Ok((self.names.len() - 1) as ClassId)
    }

    /// Registered names, by stable id.
    #[must_use]
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// A policy tree behind a stable-id map.
#[derive(Debug)]
pub struct LiveTree {
    tree: PolicyTree,
    /// Stable leaf id -> this tree's leaf (node index).
    map: Vec<ClassId>,
    /// Where a stable id this tree has no leaf for goes.
    default_leaf: ClassId,
}

/// What a reload did with the packets the old tree held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    /// Packets taken out of the old tree.
    pub taken: u64,
    /// Of those, packets whose leaf the new tree lacks (sent to its default leaf).
    pub to_default: u64,
    /// Of those, packets the new tree refused (dropped with its reason).
    pub dropped: u64,
}

impl LiveTree {
    /// Builds the tree of `spec`; `default_leaf` names the leaf for unknown ids and
    /// must be a leaf of `spec`. Registers every leaf name of `spec`.
    ///
    /// # Errors
    /// The tree refuses the spec, `default_leaf` is not one of its leaves, or the
    /// registry is full.
    pub fn new(
        spec: TreeSpec,
        default_leaf: &str,
        registry: &mut Registry,
    ) -> Result<LiveTree, ConfigError> {
        let tree = PolicyTree::new(spec)?;
        let default = tree
            .leaf(default_leaf)
            .ok_or_else(|| ConfigError::NotALeaf {
                name: default_leaf.to_owned(),
            })?;
        let leaves: Vec<usize> = (0..tree.spec().nodes.len())
            .filter(|&i| tree.spec().is_leaf(i))
            .collect();
        for &i in &leaves {
            registry.id(&tree.spec().nodes[i].name)?;
        }
        let map = registry
            .names()
            .iter()
            .map(|n| tree.leaf(n).unwrap_or(default))
            .collect();
        Ok(LiveTree {
            tree,
            map,
            default_leaf: default,
        })
    }

    /// The tree.
    #[must_use]
    pub fn tree(&self) -> &PolicyTree {
        &self.tree
    }

    /// The tree's leaf for stable id `id`.
    #[must_use]
    pub fn leaf_of(&self, id: ClassId) -> ClassId {
        self.map
            .get(id as usize)
            .copied()
            .unwrap_or(self.default_leaf)
    }

    /// Replaces the tree by `next`, moving every queued packet into it: to the leaf
    /// of the same name, else to `next`'s default leaf. Packets `next` refuses go to
    /// `ctl.drop_packet` with the reason it gave.
    pub fn replace(ctl: &mut Control<'_, LiveTree>, next: LiveTree) -> Moved {
        let now = ctl.now();
        let old = std::mem::replace(ctl.scheduler(), next);
        let LiveTree { tree: mut old, .. } = old;
        // Old leaf index -> new leaf, by name.
        let target: Vec<Option<ClassId>> = old
            .spec()
            .nodes
            .iter()
            .map(|n| ctl.scheduler().tree.leaf(&n.name))
            .collect();
        let default = ctl.scheduler().default_leaf;
        let mut moved = Moved::default();
        drain(&mut old, now, |mut pkt| {
            moved.taken += 1;
            pkt.class = match target.get(pkt.class as usize).copied().flatten() {
                Some(leaf) => leaf,
                None => {
                    moved.to_default += 1;
                    default
                }
            };
            if let Err(Dropped { packet, reason }) = ctl.scheduler().tree.enqueue(pkt, now) {
                moved.dropped += 1;
                ctl.drop_packet(packet, reason);
            }
        });
        moved
    }
}

/// Takes every packet out of `tree`, in the order it would send them, advancing its
/// clock from `now` through its release times as shaped units become eligible.
pub fn drain(tree: &mut PolicyTree, now: Nanos, mut each: impl FnMut(Packet)) {
    let mut t = now;
    while tree.backlog().packets > 0 {
        while let Some(pkt) = tree.dequeue(t) {
            each(pkt);
        }
        if tree.backlog().packets == 0 {
            break;
        }
        // The tree names the first moment its eligibility can change; a tree that
        // names none, or the past, while holding packets is nudged by a second so
        // the loop always advances.
        t = match tree.next_ready(t) {
            Some(next) if next > t => next,
            _ => t.saturating_add(1_000_000_000),
        };
    }
}

impl Scheduler for LiveTree {
    #[inline]
    fn enqueue(&mut self, mut pkt: Packet, now: Nanos) -> Result<(), Dropped> {
        pkt.class = self.leaf_of(pkt.class);
        self.tree.enqueue(pkt, now)
    }

    #[inline]
    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        self.tree.dequeue(now)
    }

    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        self.tree.next_ready(now)
    }

    fn backlog(&self) -> Backlog {
        self.tree.backlog()
    }

    fn counters(&self) -> &Counters {
        self.tree.counters()
    }

    fn name(&self) -> &'static str {
        "policy-tree"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eiffel_sched::tree::{Discipline, NodeSpec, RateLimit};
    use eiffel_sched::Rate;

    fn spec(leaves: &[(&str, Option<Rate>)], capacity: u32) -> TreeSpec {
        let mut s = TreeSpec::new(capacity);
        let mut root = NodeSpec::new("root", None);
        root.discipline = Discipline::WFQ;
        let r = s.add(root);
        for (name, limit) in leaves {
            let mut n = NodeSpec::new(*name, Some(r));
            n.limit = limit.map(|rate| RateLimit { rate, burst: 1500 });
            s.add(n);
        }
        s
    }

    #[test]
    fn stable_ids_follow_names_across_trees() {
        let mut reg = Registry::default();
        let a = LiveTree::new(spec(&[("x", None), ("y", None)], 16), "x", &mut reg).unwrap();
        let b = LiveTree::new(spec(&[("y", None), ("z", None)], 16), "z", &mut reg).unwrap();
        assert_eq!(reg.names(), ["x", "y", "z"]);
        let id = |n: &str| reg.names().iter().position(|m| m == n).unwrap() as ClassId;
        assert_eq!(a.leaf_of(id("y")), a.tree().leaf("y").unwrap());
        // `a` was built before `z` existed: unknown ids go to its default.
        assert_eq!(a.leaf_of(id("z")), a.tree().leaf("x").unwrap());
        assert_eq!(b.leaf_of(id("x")), b.tree().leaf("z").unwrap());
        assert_eq!(b.leaf_of(9999), b.tree().leaf("z").unwrap());
        assert!(LiveTree::new(spec(&[("x", None)], 16), "root", &mut reg).is_err());
    }

    #[test]
    fn drain_empties_a_shaped_tree_in_order() {
        // 10 packets behind a 12 kbit/s limit: one per second of tree time.
        let mut tree =
            PolicyTree::new(spec(&[("slow", Some(Rate::from_bps(12_000)))], 64)).unwrap();
        let leaf = tree.leaf("slow").unwrap();
        for seq in 0..10 {
            tree.enqueue(Packet::new(0, 1500).class(leaf).buffer(seq), 0)
                .unwrap();
        }
        let _ = tree.dequeue(0);
        let mut seen = Vec::new();
        drain(&mut tree, 0, |p| seen.push(p.buffer));
        assert_eq!(seen, (1..10).collect::<Vec<u32>>());
        assert_eq!(tree.backlog().packets, 0);
        tree.check_invariants();
    }
}
