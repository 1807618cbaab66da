//! The packet path of a [`PipeTree`]: the general tree's enqueue, dequeue and
//! shaping, step for step, with each level's discipline known from its depth.

use super::super::shaper::{Throttled, UNIT_NODE};
use super::{Head, PipeTree, NONE};
use crate::packet::{Nanos, Packet};
use crate::scheduler::{Backlog, Counters, DropReason, Dropped, Scheduler};
use crate::FlowCore;

/// What a dequeue's unwinding carries up from the child that sent: the
/// child's unit, its next packet, and the unit the parent serves next
/// (`None`: nothing is queued there; a leaf passes its own next packet).
#[derive(Clone, Copy, Debug)]
struct Below {
    unit: u32,
    head: Option<Head>,
    after: After,
}

#[derive(Clone, Copy, Debug)]
enum After {
    Unit(u32),
    Empty,
    Own,
}

impl After {
    fn of(unit: Option<u32>) -> After {
        unit.map_or(After::Empty, After::Unit)
    }
}

impl PipeTree {
    #[inline(always)]
    fn is_leaf(&self, n: u32) -> bool {
        n >= self.leaves_at
    }

    #[inline(always)]
    fn is_pipe(&self, n: u32) -> bool {
        n >= self.pipes_at && n < self.leaves_at
    }

    /// Whether node `n` has a packet it could send (ignoring its own throttle).
    #[inline]
    pub(super) fn has_head(&self, n: u32) -> bool {
        if self.is_leaf(n) {
            !self.fifos[(n - self.leaves_at) as usize].is_empty()
        } else if self.is_pipe(n) {
            !self.ets[(n - self.pipes_at) as usize].is_empty()
        } else {
            self.drr[n as usize].backlogged() > 0
        }
    }

    /// The unit node `n` (internal) serves next.
    #[inline(always)]
    fn select(&mut self, n: u32) -> Option<u32> {
        if self.is_pipe(n) {
            self.ets[(n - self.pipes_at) as usize].select()
        } else {
            self.drr[n as usize].peek()
        }
    }

    /// The packet node `n` would send next.
    #[inline(always)]
    fn descend(&mut self, mut n: u32) -> Option<Head> {
        while !self.is_leaf(n) {
            let u = self.select(n)?;
            n = self.first_child[n as usize] + u;
        }
        let fifo = &self.fifos[(n - self.leaves_at) as usize];
        Some(Head {
            slot: self.pool.front_slot(fifo)?,
            len: fifo.front_len(),
            leaf: n,
        })
    }

    /// When node `n` may next send, if its limit holds it at `now` beyond
    /// the shaper's precision.
    #[inline]
    fn hold(&self, n: u32, now: Nanos) -> Option<Nanos> {
        let limit = &self.limits[n as usize];
        (self.nodes[n as usize].limited && !limit.conforms(now.saturating_add(self.slack)))
            .then(|| limit.release_time())
    }

    /// Files node `n` in the shaper until `at`, out of its parent's queue.
    fn throttle_node(&mut self, n: u32, now: Nanos, at: Nanos) {
        let unit = Throttled {
            node: self.order[n as usize],
            flow: UNIT_NODE,
        };
        let handle = self.shaper.throttle(now, at, unit);
        self.nodes[n as usize].throttled = true;
        self.filed[n as usize] = Some((handle, at));
    }

    /// Node `start` may have become able to send: activates it in its
    /// parent with its next packet's length, and so on up to the root.
    fn propagate(&mut self, start: u32, now: Nanos) {
        let mut cur = start;
        loop {
            let node = self.nodes[cur as usize];
            if node.throttled {
                // A `drr` or `ets` node's units come back by themselves.
                return;
            }
            if node.parent == NONE {
                if self.has_head(cur) {
                    if let Some(at) = self.hold(cur, now) {
                        self.throttle_node(cur, now, at);
                    }
                }
                return;
            }
            if node.active || !self.has_head(cur) {
                // Neither discipline reorders on an arrival behind a head.
                return;
            }
            if let Some(at) = self.hold(cur, now) {
                self.throttle_node(cur, now, at);
                return;
            }
            let head = self.descend(cur).expect("a node that may send has a head");
            self.activate(node.parent, node.slot, head.len);
            self.nodes[cur as usize].active = true;
            cur = node.parent;
        }
    }

    #[inline]
    fn activate(&mut self, n: u32, unit: u32, len: u32) {
        if self.is_pipe(n) {
            self.ets[(n - self.pipes_at) as usize].activate(unit, len);
        } else {
            self.drr[n as usize].activate(unit, len);
        }
    }

    /// Releases every throttled node whose time has come.
    fn release_due(&mut self, now: Nanos) {
        while let Some(t) = self.shaper.pop_due(now) {
            let n = self.place[t.node as usize];
            self.nodes[n as usize].throttled = false;
            self.filed[n as usize] = None;
            if let Some(at) = self.hold(n, now) {
                // Filed beyond the horizon, released early: file it again.
                self.throttle_node(n, now, at);
                continue;
            }
            if self.descend(n).is_some() {
                self.propagate(n, now);
            }
        }
    }

    /// Counts `pkt` as dropped for `reason` at leaf `leaf` and above.
    #[cold]
    fn refuse(&mut self, leaf: u32, pkt: Packet, reason: DropReason) -> Dropped {
        let mut cur = leaf;
        while cur != NONE {
            let d = &mut self.drops[cur as usize];
            d.packets[reason.index()] += 1;
            d.bytes[reason.index()] += u64::from(pkt.len);
            cur = self.nodes[cur as usize].parent;
        }
        self.counters.drop_packet(pkt, reason)
    }

    /// The leaf position `class` names, if it names a leaf.
    #[inline]
    fn leaf_at(&self, class: u32) -> Option<u32> {
        let n = *self.place.get(class as usize)?;
        self.is_leaf(n).then_some(n)
    }

    /// Node `c` sent; `below` is what its child passed up. Its next packet,
    /// or `None` when it is empty or now held (then filed in the shaper).
    #[inline(always)]
    fn next_head(
        &mut self,
        c: u32,
        below: Below,
        left: u64,
        held: bool,
        now: Nanos,
    ) -> Option<Head> {
        if left == 0 {
            return None;
        }
        if held {
            let at = self.limits[c as usize].release_time();
            self.throttle_node(c, now, at);
            return None;
        }
        let u = match below.after {
            After::Unit(u) => u,
            After::Own => return below.head,
            After::Empty => return None,
        };
        if u == below.unit && below.head.is_some() {
            return below.head;
        }
        self.descend(self.first_child[c as usize] + u)
    }

    /// Unwinds the dequeue of `pkt` from `leaf` up to the root.
    #[inline(always)]
    fn unwind(&mut self, leaf: u32, pkt: &Packet, mut below: Below, now: Nanos) {
        let len = u64::from(pkt.len);
        let mut c = leaf;
        loop {
            let node = &mut self.nodes[c as usize];
            node.sent.packets += 1;
            node.sent.bytes += len;
            node.backlog.packets -= 1;
            node.backlog.bytes -= len;
            let (parent, slot, left) = (node.parent, node.slot, node.backlog.packets);
            let held =
                node.limited && self.limits[c as usize].send_then_held(now, pkt.len, self.slack);
            let next = self.next_head(c, below, left, held, now);
            if parent == NONE {
                if let Some(h) = next {
                    eiffel_queue::prefetch(self.pool.at(h.slot));
                }
                return;
            }
            if next.is_none() {
                self.nodes[c as usize].active = false;
            }
            let next_len = next.map(|h| h.len);
            let after = if self.is_pipe(parent) {
                self.ets[(parent - self.pipes_at) as usize].served_select(slot, next_len)
            } else {
                self.drr[parent as usize].served_peek(slot, next_len)
            };
            below = Below {
                unit: slot,
                head: next,
                after: After::of(after),
            };
            c = parent;
        }
    }

    /// [`Scheduler::enqueue`] of many packets at `now`: each dropped one is
    /// passed to `dropped`; returns how many were queued.
    pub fn enqueue_burst(
        &mut self,
        pkts: &[Packet],
        now: Nanos,
        mut dropped: impl FnMut(Dropped),
    ) -> usize {
        let mut queued = 0;
        for pkt in pkts {
            match self.enqueue(*pkt, now) {
                Ok(()) => queued += 1,
                Err(d) => dropped(d),
            }
        }
        queued
    }
}

impl Scheduler for PipeTree {
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Dropped> {
        self.counters.on_enqueue(pkt.len);
        let Some(leaf) = self.leaf_at(pkt.class) else {
            return Err(self.counters.drop_packet(pkt, DropReason::Unclassified));
        };
        if pkt.len > self.spec.mtu {
            return Err(self.refuse(leaf, pkt, DropReason::TooLarge));
        }
        let l = (leaf - self.leaves_at) as usize;
        if self.fifos[l].len() >= self.capacity[l] {
            return Err(self.refuse(leaf, pkt, DropReason::LeafFull));
        }
        if self.pool.push_back(&mut self.fifos[l], pkt).is_err() {
            return Err(self.refuse(leaf, pkt, DropReason::QueueFull));
        }
        let len = u64::from(pkt.len);
        let mut cur = leaf;
        while cur != NONE {
            let node = &mut self.nodes[cur as usize];
            node.backlog.packets += 1;
            node.backlog.bytes += len;
            cur = node.parent;
        }
        self.backlog.packets += 1;
        self.backlog.bytes += len;
        self.propagate(leaf, now);
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        self.release_due(now);
        if self.nodes[0].throttled || !self.has_head(0) {
            return None;
        }
        let mut n = 0;
        while !self.is_leaf(n) {
            let u = self.select(n).expect("a node with a head has a unit");
            n = self.first_child[n as usize] + u;
        }
        let fifo = &mut self.fifos[(n - self.leaves_at) as usize];
        let pkt = self
            .pool
            .pop_front(fifo)
            .expect("a leaf with a head has a packet");
        let head = self.pool.front_slot(fifo).map(|slot| Head {
            slot,
            len: fifo.front_len(),
            leaf: n,
        });
        let below = Below {
            unit: NONE,
            head,
            after: After::Own,
        };
        self.unwind(n, &pkt, below, now);
        self.counters.on_dequeue(pkt.len);
        self.backlog.packets -= 1;
        self.backlog.bytes -= u64::from(pkt.len);
        Some(pkt)
    }

    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        if self.backlog.packets == 0 {
            return None;
        }
        if !self.nodes[0].throttled && self.has_head(0) {
            return Some(now);
        }
        self.shaper.next_due()
    }

    fn backlog(&self) -> Backlog {
        self.backlog
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn name(&self) -> &'static str {
        "pipe-tree"
    }
}
