//! A port whose policy is one pFabric leaf on a circular FFS queue, served in
//! the order that leaf's tree serves it.
//!
//! The tree's leaf keeps one FIFO per flow slot, ranks a queued flow by the
//! smallest `remaining` among its packets and orders the flows in a `cffs`
//! queue of `2 N` buckets of `g` ranks, through `insert` when a flow becomes
//! backlogged, `set_rank` after every arrival to it and every departure from
//! it, `peek` to choose and `remove` when it empties. With the queue's base at
//! rank 0 and every rank below `2 N g` (checked when the port is built: the
//! largest rank is the largest flow), none of the queue's out-of-range rules
//! applies (no re-anchoring, no swap of halves, no clamping, no served-first
//! list), and that queue serves exactly in this order:
//!
//! 1. the flow in the lowest bucket, `min rank / g`;
//! 2. among flows of one bucket, the one that entered the bucket first, where a
//!    flow enters a bucket when it is inserted, or re-ranked from another
//!    bucket (a re-rank within its bucket keeps its place).
//!
//! This queue keeps that order directly: each backlogged flow carries its
//! bucket and a sequence number taken when it entered the bucket, and a
//! dequeue serves the smallest `(bucket, sequence)` among the backlogged flows
//! (a port has few at a time). The smallest remaining size of each flow is kept
//! as the tree keeps it: a monotone deque of candidates over the flow's FIFO.
//! Refusals follow the tree's checks in its order (leaf capacity, tree
//! capacity, unknown flow, the flow's own queue limit).

use eiffel_queue::QueueKind;
use eiffel_sched::tree::{Discipline, Rank};
use eiffel_sched::{DropReason, PolicyTree};

use super::{Arrival, Departure, QueueCounters};

const NIL: u32 = u32::MAX;

/// A queued packet: its id, its rank, its successor in its flow's FIFO and
/// its neighbours among the flow's candidates for the minimum.
#[derive(Clone, Copy, Debug)]
struct Node {
    id: u32,
    next: u32,
    prev_cand: u32,
    next_cand: u32,
    rank: u64,
}

/// One flow slot.
#[derive(Clone, Copy, Debug)]
struct Flow {
    head: u32,
    tail: u32,
    len: u32,
    /// Candidates for the minimum, oldest first, ranks non-decreasing: the
    /// first is the flow's smallest rank.
    first_cand: u32,
    last_cand: u32,
    /// Index in `active`, or `NIL` while empty.
    pos: u32,
    /// The bucket of its rank and when it entered that bucket.
    bucket: u64,
    seq: u64,
}

impl Flow {
    const EMPTY: Flow = Flow {
        head: NIL,
        tail: NIL,
        len: 0,
        first_cand: NIL,
        last_cand: NIL,
        pos: NIL,
        bucket: 0,
        seq: 0,
    };
}

/// The pFabric leaf of one port.
#[derive(Debug)]
pub struct PfabricQueue {
    nodes: Vec<Node>,
    free: Vec<u32>,
    flows: Vec<Flow>,
    /// Backlogged flow slots.
    active: Vec<u32>,
    seq: u64,
    granularity: u64,
    leaf_capacity: u32,
    capacity: u32,
    flow_queue_limit: u32,
    mtu: u32,
    queued: u32,
    counters: QueueCounters,
}

impl PfabricQueue {
    /// The queue equivalent to `tree`, if `tree` is one pFabric leaf on a
    /// `cffs` queue anchored at rank 0 whose window covers `max_rank`.
    #[must_use]
    pub fn for_tree(tree: &PolicyTree, max_rank: u64) -> Option<PfabricQueue> {
        let spec = tree.spec();
        let [node] = spec.nodes.as_slice() else {
            return None;
        };
        let pf = node.per_flow?;
        let plain = pf.flow_limit.is_none()
            && node.limit.is_none()
            && node.release.is_none()
            && node.flow_release.is_none()
            && matches!(
                node.discipline,
                Discipline::Ranked {
                    rank: Rank::Pfabric,
                    ..
                }
            );
        let view = tree.nodes().next()?;
        let [plan] = view.queues.as_slice() else {
            return None;
        };
        let g = plan.config.granularity.max(1);
        let window = (plan.config.buckets as u64)
            .checked_mul(g)
            .and_then(|w| w.checked_mul(2))?;
        let fits = plan.kind == QueueKind::Cffs && plan.config.base < g && max_rank < window;
        if !(plain && fits) {
            return None;
        }
        let cap = spec.capacity;
        Some(PfabricQueue {
            nodes: Vec::with_capacity(cap as usize),
            free: Vec::with_capacity(cap as usize),
            flows: vec![Flow::EMPTY; pf.max_flows as usize],
            active: Vec::with_capacity(pf.max_flows.min(cap) as usize),
            seq: 0,
            granularity: g,
            leaf_capacity: node.capacity.unwrap_or(u32::MAX),
            capacity: cap,
            flow_queue_limit: pf.flow_queue_limit.unwrap_or(u32::MAX),
            mtu: spec.mtu,
            queued: 0,
            counters: QueueCounters::default(),
        })
    }

    /// A new, empty queue with the same limits.
    #[must_use]
    pub fn empty_copy(&self) -> PfabricQueue {
        PfabricQueue {
            nodes: Vec::with_capacity(self.nodes.capacity()),
            free: Vec::with_capacity(self.free.capacity()),
            flows: vec![Flow::EMPTY; self.flows.len()],
            active: Vec::with_capacity(self.active.capacity()),
            seq: 0,
            queued: 0,
            counters: QueueCounters::default(),
            ..*self
        }
    }

    /// The tree's packet capacity.
    #[must_use]
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Ranks per bucket.
    #[must_use]
    pub fn granularity(&self) -> u64 {
        self.granularity
    }

    /// The tree's reason for refusing `a`, if it would.
    fn refusal(&self, a: &Arrival) -> Option<DropReason> {
        if a.leaf != 0 {
            return Some(DropReason::Unclassified);
        }
        if a.len > self.mtu {
            return Some(DropReason::TooLarge);
        }
        if self.queued >= self.leaf_capacity {
            return Some(DropReason::LeafFull);
        }
        if self.queued >= self.capacity {
            return Some(DropReason::QueueFull);
        }
        match self.flows.get(a.slot as usize) {
            None => Some(DropReason::UnknownFlow),
            Some(f) if f.len >= self.flow_queue_limit => Some(DropReason::LeafFull),
            Some(_) => None,
        }
    }

    fn alloc(&mut self, node: Node) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() as u32 - 1
            }
        }
    }

    /// Queues a packet behind its flow's, or refuses it as the tree would.
    ///
    /// # Errors
    /// The tree's reason for refusing it.
    #[inline]
    pub fn enqueue(&mut self, a: &Arrival) -> Result<(), DropReason> {
        self.counters.enqueued += 1;
        if let Some(r) = self.refusal(a) {
            self.counters.dropped += 1;
            return Err(r);
        }
        let s = a.slot as usize;
        let rank = a.remaining;
        let n = self.alloc(Node {
            id: a.id,
            next: NIL,
            prev_cand: NIL,
            next_cand: NIL,
            rank,
        });
        let mut f = self.flows[s];
        if f.tail == NIL {
            f.head = n;
        } else {
            self.nodes[f.tail as usize].next = n;
        }
        f.tail = n;
        f.len += 1;
        // Candidates ranked above the newcomer can no longer be the minimum.
        while f.last_cand != NIL && self.nodes[f.last_cand as usize].rank > rank {
            let t = f.last_cand;
            f.last_cand = self.nodes[t as usize].prev_cand;
            self.nodes[t as usize].prev_cand = NIL;
        }
        if f.last_cand == NIL {
            f.first_cand = n;
        } else {
            self.nodes[f.last_cand as usize].next_cand = n;
            self.nodes[n as usize].prev_cand = f.last_cand;
        }
        f.last_cand = n;
        let bucket = self.nodes[f.first_cand as usize].rank / self.granularity;
        if f.pos == NIL {
            f.pos = self.active.len() as u32;
            self.active.push(a.slot);
            f.bucket = bucket;
            f.seq = self.next_seq();
        } else if bucket != f.bucket {
            f.bucket = bucket;
            f.seq = self.next_seq();
        }
        self.flows[s] = f;
        self.queued += 1;
        Ok(())
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The backlogged flow served next: smallest bucket, then earliest entry.
    #[inline]
    fn select(&self) -> Option<u32> {
        let mut best = *self.active.first()?;
        let mut key = {
            let f = &self.flows[best as usize];
            (f.bucket, f.seq)
        };
        for &s in &self.active[1..] {
            let f = &self.flows[s as usize];
            if (f.bucket, f.seq) < key {
                key = (f.bucket, f.seq);
                best = s;
            }
        }
        Some(best)
    }

    /// The head packet of the flow the tree would serve, and its flow slot.
    #[inline]
    pub fn dequeue(&mut self) -> Option<Departure> {
        let s = self.select()?;
        let mut f = self.flows[s as usize];
        let n = f.head;
        let node = self.nodes[n as usize];
        f.head = node.next;
        f.len -= 1;
        if f.first_cand == n {
            f.first_cand = node.next_cand;
            if f.first_cand == NIL {
                f.last_cand = NIL;
            } else {
                self.nodes[f.first_cand as usize].prev_cand = NIL;
            }
        }
        self.free.push(n);
        if f.head == NIL {
            f.tail = NIL;
            let at = f.pos as usize;
            self.active.swap_remove(at);
            if let Some(&moved) = self.active.get(at) {
                self.flows[moved as usize].pos = at as u32;
            }
            f.pos = NIL;
        } else {
            let bucket = self.nodes[f.first_cand as usize].rank / self.granularity;
            if bucket != f.bucket {
                f.bucket = bucket;
                f.seq = self.next_seq();
            }
        }
        self.flows[s as usize] = f;
        self.queued -= 1;
        self.counters.dequeued += 1;
        Some(Departure {
            id: node.id,
            slot: s,
        })
    }

    /// Packets queued.
    #[must_use]
    pub fn backlog(&self) -> u64 {
        u64::from(self.queued)
    }

    /// Offered, served and refused packets.
    #[must_use]
    pub fn counters(&self) -> QueueCounters {
        self.counters
    }

    /// Checks the flows' lists against the packet count and the backlogged set.
    ///
    /// # Panics
    /// On a list out of step.
    pub fn check_invariants(&self) {
        let mut total = 0u32;
        for (s, f) in self.flows.iter().enumerate() {
            let mut len = 0;
            let mut min = u64::MAX;
            let mut n = f.head;
            while n != NIL {
                len += 1;
                min = min.min(self.nodes[n as usize].rank);
                n = self.nodes[n as usize].next;
            }
            assert_eq!(len, f.len, "flow slot {s}: FIFO length");
            total += len;
            assert_eq!(f.pos != NIL, len > 0, "flow slot {s}: backlogged flag");
            if len > 0 {
                assert_eq!(self.active[f.pos as usize] as usize, s, "flow slot {s}");
                let first = self.nodes[f.first_cand as usize].rank;
                assert_eq!(first, min, "flow slot {s}: minimum");
                assert_eq!(f.bucket, min / self.granularity, "flow slot {s}: bucket");
            }
        }
        assert_eq!(total, self.queued, "packets in flows vs queued");
        assert_eq!(
            self.nodes.len() - self.free.len(),
            self.queued as usize,
            "nodes in use"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eiffel_policy::Policy;
    use eiffel_sched::{Packet, Scheduler};
    use rand::{Rng, SeedableRng};

    const POLICY: &str = "[[node]]\nname = \"flows\"\ndiscipline = \"pfabric\"\n\
        flows = 16\nqueue = \"cffs\"\ngranularity = 1460\nbuckets = 64\nflow_queue = 6\n";

    fn tree(capacity: u32) -> PolicyTree {
        let mut spec = Policy::parse(POLICY, "t.toml").unwrap().spec().clone();
        spec.capacity = capacity;
        PolicyTree::new(spec).unwrap()
    }

    /// Random arrivals (ranks mostly falling per flow, some rising, many
    /// sharing a bucket) and departures, offered to the tree and to the
    /// queue: the same refusals and the same departures, in order.
    #[test]
    fn serves_and_refuses_as_the_tree() {
        for seed in 0..20 {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
            let mut t = tree(40);
            let mut q = PfabricQueue::for_tree(&t, 2 * 64 * 1460 - 1).expect("eligible");
            let mut left = [0u64; 17];
            for l in &mut left {
                *l = rng.gen_range(0..2 * 64 * 1460);
            }
            for id in 0..20_000u32 {
                if rng.gen_bool(0.55) {
                    let slot = rng.gen_range(0..17u32);
                    let l = &mut left[slot as usize];
                    *l = match rng.gen_range(0..10) {
                        0 => rng.gen_range(0..2 * 64 * 1460),
                        1..=3 => *l,
                        _ => l.saturating_sub(rng.gen_range(0..3000)),
                    };
                    let a = Arrival {
                        id,
                        len: 1500,
                        slot,
                        leaf: 0,
                        remaining: *l,
                        rank: 0,
                        deadline: eiffel_sched::NO_DEADLINE,
                    };
                    let mut p = Packet::new(slot, 1500);
                    p.buffer = id;
                    p.remaining = *l;
                    let want = t.enqueue(p, 0).map_err(|d| d.reason);
                    assert_eq!(q.enqueue(&a), want, "seed {seed}, arrival {id}");
                } else {
                    let want = t.dequeue(0).map(|d| Departure {
                        id: d.buffer,
                        slot: d.flow,
                    });
                    assert_eq!(q.dequeue(), want, "seed {seed}, step {id}");
                }
            }
            q.check_invariants();
            assert_eq!(q.backlog(), t.backlog().packets);
        }
    }

    #[test]
    fn refuses_a_window_that_would_clamp() {
        let t = tree(40);
        assert!(PfabricQueue::for_tree(&t, 2 * 64 * 1460).is_none());
        assert!(PfabricQueue::for_tree(&t, u64::MAX).is_none());
    }
}
