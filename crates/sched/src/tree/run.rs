//! Runs: dequeues at one instant through one node, its ancestors' share of
//! the work deferred.
//!
//! A burst of dequeues mostly takes its packets through the same upper path:
//! a port's DRR keeps serving one subport for its quantum, the subport one pipe
//! for its own. Above such a node every level would count each packet, charge
//! it to its rate limit and tell its discipline, only to pick the same child
//! again. A run skips that: once the path through a node `top` has been
//! unwound in full at `now`, the next dequeues at the same `now` stop at `top`
//! while three conditions show that every ancestor would pick the same child
//! again and that no limit would hold:
//!
//! - every ancestor's discipline is a DRR core or strict priority by levels
//!   (and none runs a release program): a strict parent keeps a child while it
//!   has packets (no new unit can appear without an enqueue or a release, and
//!   both end the run); a DRR parent while the child's deficit covers what the
//!   run sent and the child's next packet;
//! - each limited ancestor may still send the run's bytes at `now` and conform
//!   at `now` plus the shaper's slack;
//! - `top` still has a next packet.
//!
//! The deferred sends are applied ([`PolicyTree::settle`]) before anything
//! else touches the ancestors: an enqueue, a release from the shaper, a dequeue
//! at another time, a run that cannot go on, a change of transaction. Applied
//! at once they leave what the packets one by one would have left: the counts
//! add up; a DRR deficit drops by the bytes sent and its head length becomes
//! the last one; and a limit that already sent at `now` (the unwinding that
//! started the run charged every ancestor at `now`) adds bytes sent at the same
//! instant without refilling, whether charged one packet at a time or all at
//! once. Views and invariant checks read the counts with the deferred sends
//! included.

use super::node::{Sent, NONE};
use super::{sched_of, Head, PolicyTree};
use crate::packet::Nanos;
use crate::scheduler::Backlog;

/// Fewest packets a node holds after a send for a run to start at it: a run
/// through a node about to empty would end at once.
const RUN_MIN_BACKLOG: u64 = 4;

/// A run in progress (`top == NONE`: none).
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    /// The node whose ancestors' sends are deferred.
    pub(super) top: u32,
    /// The instant of every deferred send.
    pub(super) now: Nanos,
    /// Packets and bytes sent through `top` since the run started.
    packets: u64,
    bytes: u64,
    /// Bytes the run may send, next packet included, before a DRR ancestor's
    /// turn ends: the smallest deficit on the path.
    turn_room: u64,
    /// Bytes the run may send before a limited ancestor is held.
    limit_room: u64,
    /// The length of `top`'s next packet (and every ancestor's).
    next_len: u32,
}

impl Run {
    /// No run.
    pub(super) const NONE: Run = Run {
        top: NONE,
        now: 0,
        packets: 0,
        bytes: 0,
        turn_room: 0,
        limit_room: 0,
        next_len: 0,
    };

    /// A run through `top` at `now`, whose next packet is `next_len` bytes
    /// long, within `turn_room` bytes (next packet included) of the DRR
    /// ancestors' turns and `limit_room` bytes of the limited ancestors'.
    pub(super) fn new(top: u32, now: Nanos, turn_room: u64, limit_room: u64, next_len: u32) -> Run {
        Run {
            top,
            now,
            packets: 0,
            bytes: 0,
            turn_room,
            limit_room,
            next_len,
        }
    }

    /// Whether `top`'s send of `len` bytes, with a packet of `next_len` bytes
    /// to send after it, leaves every ancestor's choice and hold as they are;
    /// if so, counts it.
    #[inline]
    pub(super) fn extend(&mut self, len: u32, next_len: Option<u32>) -> bool {
        let Some(next_len) = next_len else {
            return false;
        };
        let bytes = self.bytes.saturating_add(u64::from(len));
        if bytes.saturating_add(u64::from(next_len)) > self.turn_room || bytes > self.limit_room {
            return false;
        }
        self.packets += 1;
        self.bytes = bytes;
        self.next_len = next_len;
        true
    }

    /// The sends deferred so far: packets and bytes.
    #[inline]
    pub(super) fn sent(&self) -> Backlog {
        Backlog {
            packets: self.packets,
            bytes: self.bytes,
        }
    }

    /// The length of `top`'s next packet.
    #[inline]
    pub(super) fn next_len(&self) -> u32 {
        self.next_len
    }
}

impl PolicyTree {
    /// Which nodes may be the top of a run: every ancestor is a DRR core or
    /// strict priority by levels, without a release program.
    pub(super) fn run_tops(&self) -> Vec<bool> {
        self.per_node(|i| {
            self.nodes.at(i).parent != NONE
                && self.every_ancestor(i, |node| {
                    !node.holds && node.kind.sched().is_some_and(|s| s.defers_sends())
                })
        })
    }

    /// Whether a run may start at `c` after it sent, `left` packets left below
    /// it, in a dequeue that follows another at the same instant.
    #[inline]
    pub(super) fn may_start_run(&self, c: u32, left: u64) -> bool {
        left >= RUN_MIN_BACKLOG && self.run.top == NONE && self.run_tops[c as usize]
    }

    /// Starts a run at `top`, whose next packet `next` is the root's, right
    /// after a dequeue at `now` unwound the whole path.
    pub(super) fn start_run(&mut self, top: u32, next: Head, now: Nanos) {
        let (mut turn_room, mut limit_room) = (u64::MAX, u64::MAX);
        let mut x = top;
        loop {
            let node = self.nodes.at(x);
            let (parent, slot) = (node.parent, node.slot);
            if parent == NONE {
                break;
            }
            if let Some(deficit) = sched_of(&mut self.nodes, parent).turn_room(slot) {
                turn_room = turn_room.min(deficit);
            }
            let p = self.nodes.at(parent);
            if p.limited {
                limit_room = limit_room.min(p.limit.room(now, self.slack));
            }
            x = parent;
        }
        self.run = Run::new(top, now, turn_room, limit_room, next.len);
    }

    /// Applies the run's deferred sends to `top`'s ancestors and ends it.
    #[inline(always)]
    pub(super) fn settle(&mut self) {
        if self.run.top != NONE {
            self.settle_run();
        }
    }

    /// [`PolicyTree::settle`] of a run in progress.
    #[inline(never)]
    fn settle_run(&mut self) {
        let run = self.run;
        self.run.top = NONE;
        if run.packets == 0 {
            return;
        }
        let mut x = run.top;
        loop {
            let node = self.nodes.at(x);
            let (parent, slot) = (node.parent, node.slot);
            if parent == NONE {
                break;
            }
            sched_of(&mut self.nodes, parent).served_run(slot, run.bytes, run.next_len);
            let p = self.nodes.at_mut(parent);
            p.sent.packets += run.packets;
            p.sent.bytes += run.bytes;
            p.backlog.packets -= run.packets;
            p.backlog.bytes -= run.bytes;
            if p.limited {
                p.limit.send_bytes(run.now, run.bytes);
            }
            x = parent;
        }
    }

    /// Node `i`'s sent and queued counts with the run's deferred sends applied.
    pub(super) fn settled(&self, i: usize) -> (Sent, Backlog) {
        let node = &self.nodes[i];
        let (mut sent, mut backlog) = (node.sent, node.backlog);
        if self.run.top != NONE && self.is_above(i as u32, self.run.top) {
            sent.packets += self.run.packets;
            sent.bytes += self.run.bytes;
            backlog.packets -= self.run.packets;
            backlog.bytes -= self.run.bytes;
        }
        (sent, backlog)
    }

    /// Whether node `a` is a strict ancestor of node `n`.
    fn is_above(&self, a: u32, n: u32) -> bool {
        let mut cur = self.nodes[n as usize].parent;
        while cur != NONE {
            if cur == a {
                return true;
            }
            cur = self.nodes[cur as usize].parent;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;
    use crate::scheduler::Scheduler;
    use crate::time::Rate;
    use crate::tree::testing::add_pipe_children;
    use crate::tree::{Discipline, NodeSpec, RateLimit, TreeSpec};
    use proptest::prelude::*;

    /// Port, two subports and three pipes each, DRR above the pipes with small
    /// quanta (turns end every few packets), rate limits at every level above
    /// the classes that bind at the arrival rates below, strict priority in a
    /// pipe over two classes and a DRR best effort of two queues.
    fn limited_hqos() -> (TreeSpec, Vec<u32>) {
        let mut spec = TreeSpec::new(96);
        let limit = |mbps, burst| {
            Some(RateLimit {
                rate: Rate::from_mbps(mbps),
                burst,
            })
        };
        let mut port = NodeSpec::new("port", None);
        port.discipline = Discipline::DRR;
        port.limit = limit(900, 6_000);
        let port = spec.add(port);
        let mut leaves = Vec::new();
        for s in 0..2 {
            let mut sub = NodeSpec::new(format!("s{s}"), Some(port));
            sub.discipline = Discipline::DRR;
            sub.weight = 1 + s;
            sub.limit = limit(500, 4_000);
            let sub = spec.add(sub);
            for p in 0..3 {
                let mut pipe = NodeSpec::new(format!("s{s}p{p}"), Some(sub));
                pipe.discipline = Discipline::STRICT;
                pipe.weight = 1 + p;
                pipe.limit = limit(200 + 100 * u64::from(p), 3_000);
                let pipe = spec.add(pipe);
                add_pipe_children(&mut spec, pipe, &format!("s{s}p{p}"), 8, &mut leaves);
            }
        }
        (spec, leaves)
    }

    fn packets(arrivals: &[(u32, u32)], leaves: &[u32], seq: &mut u32) -> Vec<Packet> {
        arrivals
            .iter()
            .map(|&(x, len)| {
                *seq += 1;
                Packet::new(x % 4, len)
                    .class(leaves[x as usize % leaves.len()])
                    .buffer(*seq)
            })
            .collect()
    }

    /// Every node's counts, as a view shows them.
    fn counts(t: &PolicyTree) -> Vec<(crate::scheduler::Counters, Backlog)> {
        t.nodes().map(|v| (v.counters, v.backlog)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// Runs change nothing: the same departures, drops, per-node counts
        /// (in views, while a run is in progress too) and limit states as a
        /// twin tree that never runs, through bursts of dequeues at one instant,
        /// arrivals in the middle of a burst, limits that hold and release,
        /// and DRR turns that end within a run.
        #[test]
        fn runs_change_nothing(
            steps in proptest::collection::vec(
                (
                    proptest::collection::vec((any::<u32>(), 64u32..1500), 0..10),
                    0usize..16,
                    proptest::collection::vec((any::<u32>(), 64u32..1500), 0..3),
                    0usize..16,
                    0u64..30_000,
                ),
                1..60,
            )
        ) {
            let (spec, leaves) = limited_hqos();
            let mut fast = PolicyTree::new(spec.clone()).unwrap();
            let mut slow = PolicyTree::new(spec).unwrap();
            slow.run_tops.fill(false);
            let (mut now, mut seq, mut runs) = (0u64, 0u32, 0u32);
            for (arrivals, first, middle, second, dt) in steps {
                now += dt;
                for (burst, dequeues) in [(arrivals, first), (middle, second)] {
                    for p in packets(&burst, &leaves, &mut seq) {
                        prop_assert_eq!(fast.enqueue(p, now), slow.enqueue(p, now));
                    }
                    for _ in 0..dequeues {
                        prop_assert_eq!(fast.dequeue(now), slow.dequeue(now));
                        runs += u32::from(fast.run.packets > 0);
                        prop_assert_eq!(counts(&fast), counts(&slow));
                    }
                    fast.check_invariants();
                    slow.check_invariants();
                }
            }
            fast.settle();
            for i in 0..fast.nodes.len() as u32 {
                prop_assert_eq!(fast.nodes.at(i).limit, slow.nodes.at(i).limit);
            }
            prop_assert_eq!(fast.next_ready(now), slow.next_ready(now));
            prop_assert_eq!(fast.backlog(), slow.backlog());
            // Not a test of the data: the property holds with no runs too.
            let _ = runs;
        }
    }

    #[test]
    fn a_run_defers_the_upper_levels_and_settles_them() {
        let (spec, leaves) = limited_hqos();
        let mut t = PolicyTree::new(spec).unwrap();
        let mut seq = 0;
        // Eight packets in one pipe's best effort: enough for a run there.
        let arrivals: Vec<(u32, u32)> = (0..8).map(|i| (2 + i % 2, 100)).collect();
        for p in packets(&arrivals, &leaves, &mut seq) {
            t.enqueue(p, 0).unwrap();
        }
        for _ in 0..4 {
            assert!(t.dequeue(0).is_some());
        }
        assert_ne!(t.run.top, NONE, "a run started");
        assert!(t.run.packets > 0, "and went on");
        let root = t.root as usize;
        let (sent, backlog) = t.settled(root);
        assert!(
            t.nodes[root].sent.packets < sent.packets,
            "the root's sends wait"
        );
        assert_eq!((sent.packets, backlog.packets), (4, 4));
        t.settle();
        assert_eq!(t.run.top, NONE);
        assert_eq!(t.nodes[root].sent.packets, 4);
        t.check_invariants();
    }
}
