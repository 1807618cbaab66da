//! The packet path of a [`PipeTree`]: the general tree's enqueue, dequeue and
//! shaping, step for step, with each level's discipline known from its depth.

use eiffel_queue::prefetch;

use super::super::shaper::{Bucket, Cost, Throttled, UNIT_NODE};
use super::band::{Band, Member, Profile};
use super::{Head, Leaf, LeafConf, Link, PipeTree, NONE};
use crate::packet::{Nanos, Packet};
use crate::pool::PacketPool;
use crate::scheduler::{DropReason, Dropped};
use crate::FlowCore;

/// What a dequeue's unwinding carries up from the child that sent: the
/// child's unit, its next packet, and the unit the parent serves next
/// (`None`: nothing is queued there).
#[derive(Clone, Copy, Debug)]
struct Below {
    unit: u32,
    head: Option<Head>,
    after: Option<u32>,
}

/// A leaf that was empty took a packet: its slot and length, which become
/// the leaf's head when it is activated.
#[derive(Clone, Copy, Debug, Default)]
struct Activation {
    leaf: u32,
    slot: u32,
    len: u32,
}

/// The activations a burst enqueue defers, in arrival order. An arrival
/// behind a queued packet changes no discipline and no limit, and an
/// activation reads nothing such an arrival writes but the leaf's head,
/// which it sets; so activating at the end of the burst, in order, leaves
/// the tree as activating at each arrival would. Meanwhile the leaf's line
/// and its pipe's, hinted at the arrival, have the rest of the burst to
/// arrive.
struct Pending {
    items: [Activation; PENDING],
    len: usize,
}

/// Most activations a burst enqueue holds back at once.
const PENDING: usize = 32;

/// Packets a burst enqueue looks up and hints at once.
const CHUNK: usize = 32;

impl Pending {
    fn new() -> Pending {
        Pending {
            items: [Activation::default(); PENDING],
            len: 0,
        }
    }

    fn is_full(&self) -> bool {
        self.len == PENDING
    }

    fn push(&mut self, a: Activation) {
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = a;
            self.len += 1;
        }
    }

    fn drain(&mut self) -> impl Iterator<Item = Activation> + '_ {
        let len = core::mem::replace(&mut self.len, 0);
        self.items[..len].iter().copied()
    }
}

impl PipeTree {
    #[inline(always)]
    pub(super) fn is_leaf(&self, n: u32) -> bool {
        n >= self.leaves_at
    }

    #[inline(always)]
    fn is_pipe(&self, n: u32) -> bool {
        n >= self.pipes_at && n < self.leaves_at
    }

    /// Node `n`'s place and flags.
    #[inline(always)]
    pub(super) fn link(&self, n: u32) -> Link {
        if self.is_leaf(n) {
            let l = self.leaves.at(n - self.leaves_at);
            Link {
                parent: l.parent,
                slot: u32::from(l.slot),
                active: l.active,
                throttled: l.throttled,
            }
        } else {
            let x = self.nodes.at(n);
            Link {
                parent: x.parent,
                slot: x.slot,
                active: x.active,
                throttled: x.throttled,
            }
        }
    }

    #[inline(always)]
    fn set_active(&mut self, n: u32, active: bool) {
        if self.is_leaf(n) {
            self.leaves.at_mut(n - self.leaves_at).active = active;
        } else {
            self.nodes.at_mut(n).active = active;
        }
    }

    #[inline(always)]
    fn set_throttled(&mut self, n: u32, throttled: bool) {
        if self.is_leaf(n) {
            let l = self.leaves.at_mut(n - self.leaves_at);
            if l.throttled != throttled {
                l.throttled = throttled;
                let pipe = self.nodes.at_mut(l.parent);
                if throttled {
                    pipe.held_leaves += 1;
                } else {
                    pipe.held_leaves -= 1;
                }
            }
        } else {
            self.nodes.at_mut(n).throttled = throttled;
        }
    }

    /// Node `n`'s limit, if it has one: its configuration and state.
    #[inline(always)]
    fn limit(&self, n: u32) -> Option<(&Cost, &Bucket)> {
        if self.is_leaf(n) {
            let l = self.leaves.at(n - self.leaves_at);
            l.limited
                .then(|| (&self.conf(l.parent, l.slot).cost, &l.bucket))
        } else {
            let x = self.nodes.at(n);
            x.limited.then_some((&x.cost, &x.bucket))
        }
    }

    /// The configuration of the leaf in place `slot` of pipe `pipe`.
    #[inline(always)]
    pub(super) fn conf(&self, pipe: u32, slot: u8) -> &LeafConf {
        let profile = self.nodes.at(pipe).band.profile;
        self.confs.at(profile).at(u32::from(slot))
    }

    /// Whether node `n` has a packet it could send (ignoring its own throttle).
    #[inline]
    pub(super) fn has_head(&self, n: u32) -> bool {
        if self.is_leaf(n) {
            self.leaves.at(n - self.leaves_at).head != NONE
        } else if self.is_pipe(n) {
            !self.nodes.at(n).band.is_empty()
        } else {
            self.drr.at(n).backlogged() > 0
        }
    }

    /// The unit node `n` (not a leaf) serves next.
    #[inline(always)]
    fn select(&mut self, n: u32) -> Option<u32> {
        if self.is_pipe(n) {
            let (band, p, m) = self.band(n);
            band.select(p, m)
        } else {
            self.drr.at_mut(n).peek()
        }
    }

    /// The packet node `n` would send next.
    #[inline(always)]
    fn descend(&mut self, mut n: u32) -> Option<Head> {
        while !self.is_leaf(n) {
            let u = self.select(n)?;
            n = *self.first_child.at(n) + u;
        }
        let l = self.leaves.at(n - self.leaves_at);
        (l.head != NONE).then_some(Head {
            slot: l.head,
            len: l.head_len,
            leaf: n,
        })
    }

    /// When node `n` may next send, if its limit holds it at `now` beyond
    /// the shaper's precision.
    #[inline]
    fn hold(&self, n: u32, now: Nanos) -> Option<Nanos> {
        let (cost, bucket) = self.limit(n)?;
        let soon = now.saturating_add(self.slack);
        (!cost.conforms(bucket, soon)).then(|| cost.release_time(bucket))
    }

    /// Files node `n` in the shaper until `at`, out of its parent's queue.
    #[cold]
    fn throttle_node(&mut self, n: u32, now: Nanos, at: Nanos) {
        let unit = Throttled {
            node: self.order[n as usize],
            flow: UNIT_NODE,
        };
        let handle = self.shaper.throttle(now, at, unit);
        self.set_throttled(n, true);
        self.filed[n as usize] = Some((handle, at));
    }

    /// Node `start` may have become able to send: activates it in its
    /// parent with its next packet's length, and so on up to the root.
    #[inline]
    fn propagate(&mut self, start: u32, now: Nanos) {
        self.ahead = NONE;
        let mut cur = start;
        loop {
            let link = self.link(cur);
            if link.throttled {
                // A `drr` or `ets` node's units come back by themselves.
                return;
            }
            if link.parent == NONE {
                if self.has_head(cur) {
                    if let Some(at) = self.hold(cur, now) {
                        self.throttle_node(cur, now, at);
                    }
                }
                return;
            }
            if link.active || !self.has_head(cur) {
                // Neither discipline reorders on an arrival behind a head.
                return;
            }
            if let Some(at) = self.hold(cur, now) {
                self.throttle_node(cur, now, at);
                return;
            }
            let head = self.descend(cur).expect("a node that may send has a head");
            self.activate(link.parent, link.slot, head.len);
            self.set_active(cur, true);
            cur = link.parent;
        }
    }

    #[inline]
    fn activate(&mut self, n: u32, unit: u32, len: u32) {
        if self.is_pipe(n) {
            let (band, p, m) = self.band(n);
            band.activate(p, m, unit, len);
        } else {
            self.drr.at_mut(n).activate(unit, len);
        }
    }

    /// Releases every throttled node whose time has come.
    #[inline]
    fn release_due(&mut self, now: Nanos) {
        while let Some(t) = self.shaper.pop_due(now) {
            self.release(self.place[t.node as usize], now);
        }
    }

    #[cold]
    fn release(&mut self, n: u32, now: Nanos) {
        self.settle();
        self.ahead = NONE;
        self.set_throttled(n, false);
        self.filed[n as usize] = None;
        if let Some(at) = self.hold(n, now) {
            // Filed beyond the horizon, released early: file it again.
            self.throttle_node(n, now, at);
            return;
        }
        if self.descend(n).is_some() {
            self.propagate(n, now);
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
            cur = self.link(cur).parent;
        }
        self.counters.drop_packet(pkt, reason)
    }

    /// The leaf position `class` names, if it names a leaf.
    #[inline(always)]
    fn leaf_at(&self, class: u32) -> Option<u32> {
        let n = *self.place.get(class as usize)?;
        self.is_leaf(n).then_some(n)
    }

    /// Queues `pkt`; see [`Scheduler::enqueue`](crate::Scheduler::enqueue).
    #[inline(always)]
    pub(super) fn enqueue_one(&mut self, pkt: Packet, now: Nanos) -> Result<(), Dropped> {
        self.settle();
        if let Some(a) = self.take(pkt)? {
            self.activate_leaf(a.leaf, a.slot, a.len, now);
        }
        Ok(())
    }

    /// Queues `pkt` in its leaf's FIFO and counts it, all but the activation
    /// of a leaf that was empty, which it returns (no run in progress).
    #[inline(always)]
    fn take(&mut self, pkt: Packet) -> Result<Option<Activation>, Dropped> {
        let leaf = self.leaf_at(pkt.class).unwrap_or(NONE);
        self.take_at(pkt, leaf)
    }

    /// [`PipeTree::take`] of a packet whose leaf was looked up: `leaf` is
    /// its position, [`NONE`] when its class names no leaf.
    #[inline(always)]
    fn take_at(&mut self, pkt: Packet, leaf: u32) -> Result<Option<Activation>, Dropped> {
        self.counters.on_enqueue(pkt.len);
        if leaf == NONE {
            return Err(self.counters.drop_packet(pkt, DropReason::Unclassified));
        }
        if pkt.len > self.spec.mtu {
            return Err(self.refuse(leaf, pkt, DropReason::TooLarge));
        }
        let i = leaf - self.leaves_at;
        let end = *self.ends.at(i);
        if end.budget == end.arrived && !self.recount_room(leaf) {
            return Err(self.refuse(leaf, pkt, DropReason::LeafFull));
        }
        let Ok(slot) = self.pool.append(end.tail, pkt) else {
            return Err(self.refuse(leaf, pkt, DropReason::QueueFull));
        };
        let e = self.ends.at_mut(i);
        e.tail = slot;
        e.arrived = e.arrived.wrapping_add(1);
        let len = u64::from(pkt.len);
        let mut cur = *self.up.at(end.pipe - self.pipes_at);
        while cur != NONE {
            let node = self.nodes.at_mut(cur);
            node.backlog.packets += 1;
            node.backlog.bytes += len;
            cur = node.parent;
        }
        self.backlog.packets += 1;
        self.backlog.bytes += len;
        self.ahead = NONE;
        Ok((end.tail == NONE).then_some(Activation {
            leaf,
            slot,
            len: pkt.len,
        }))
    }

    /// Leaf `leaf` was empty and took a packet (slot `slot`, `len` bytes):
    /// it becomes the leaf's head, and the leaf, neither queued nor held
    /// while empty, is queued in its pipe or held by its limit, and so on up
    /// (the first step of [`PipeTree::propagate`], for a leaf).
    #[inline(always)]
    fn activate_leaf(&mut self, leaf: u32, slot: u32, len: u32, now: Nanos) {
        let l = self.leaves.at_mut(leaf - self.leaves_at);
        debug_assert!(!l.active && !l.throttled, "an empty leaf queued or held");
        l.head = slot;
        l.head_len = len;
        let (pipe, unit, limited) = (l.parent, u32::from(l.slot), l.limited);
        if limited {
            if let Some(at) = self.hold(leaf, now) {
                self.throttle_node(leaf, now, at);
                return;
            }
        }
        let (band, p, m) = self.band(pipe);
        band.activate(p, m, unit, len);
        self.leaves.at_mut(leaf - self.leaves_at).active = true;
        let node = self.nodes.at(pipe);
        if !node.active && !node.throttled {
            self.propagate(pipe, now);
        }
    }

    /// Counts leaf `leaf`'s room from its line when its end's bound ran out:
    /// sets the bound again and returns whether there is room.
    #[cold]
    fn recount_room(&mut self, leaf: u32) -> bool {
        let i = leaf - self.leaves_at;
        let l = *self.leaves.at(i);
        let capacity = self.conf(l.parent, l.slot).capacity;
        let e = self.ends.at_mut(i);
        let departed = l.sent.packets as u32;
        let queued = e.arrived.wrapping_sub(departed);
        e.budget = departed.wrapping_add(capacity);
        queued < capacity
    }

    /// [`Scheduler::enqueue`](crate::Scheduler::enqueue) of many packets at
    /// `now`: each dropped one is passed to `dropped`; returns how many were
    /// queued. In a tree larger than the cache, the packets go in chunks of
    /// 32: every packet's leaf is looked up once and its end hinted, then
    /// each packet's path is hinted a few packets before it is queued; the
    /// activations of
    /// leaves that were empty wait for the end of the burst, made in arrival
    /// order: the tree ends the burst as its packets one by one would leave
    /// it, and an activation's lines (its pipe's members hinted when the
    /// packet is queued) have the rest of the burst to arrive.
    pub fn enqueue_burst(
        &mut self,
        pkts: &[Packet],
        now: Nanos,
        mut dropped: impl FnMut(Dropped),
    ) -> usize {
        self.settle();
        let mut queued = 0;
        if !self.prefetching {
            for pkt in pkts {
                match self.enqueue_one(*pkt, now) {
                    Ok(()) => queued += 1,
                    Err(d) => dropped(d),
                }
            }
            return queued;
        }
        let mut pending = Pending::new();
        for chunk in pkts.chunks(CHUNK) {
            queued += self.enqueue_chunk(chunk, now, &mut pending, &mut dropped);
        }
        self.activate_pending(&mut pending, now);
        queued
    }

    /// Queues `chunk` (at most [`CHUNK`] packets), deferring activations to
    /// `pending`: every packet's leaf is looked up once and its end hinted,
    /// then at step `k` the path of packet `k` (from its end) is hinted and
    /// packet `k - GAP` queued. Returns how many were queued.
    #[inline(always)]
    fn enqueue_chunk(
        &mut self,
        chunk: &[Packet],
        now: Nanos,
        pending: &mut Pending,
        dropped: &mut impl FnMut(Dropped),
    ) -> usize {
        const GAP: usize = 4;
        let mut leaves = [NONE; CHUNK];
        for (leaf, p) in leaves.iter_mut().zip(chunk) {
            if let Some(n) = self.leaf_at(p.class) {
                *leaf = n;
                prefetch(self.ends.at(n - self.leaves_at));
            }
        }
        let leaves = &leaves[..chunk.len()];
        let mut queued = 0;
        for k in 0..chunk.len() + GAP {
            if let Some(&leaf) = leaves.get(k) {
                self.prefetch_path(leaf);
            }
            let Some(i) = k.checked_sub(GAP).filter(|&i| i < chunk.len()) else {
                continue;
            };
            match self.take_at(chunk[i], leaves[i]) {
                Ok(activation) => {
                    queued += 1;
                    if let Some(a) = activation {
                        if pending.is_full() {
                            self.activate_pending(pending, now);
                        }
                        self.prefetch_members(self.ends.at(a.leaf - self.leaves_at).pipe);
                        pending.push(a);
                    }
                }
                Err(d) => dropped(d),
            }
        }
        queued
    }

    /// Activates the leaves `pending` holds, in their order, and empties it.
    #[inline]
    fn activate_pending(&mut self, pending: &mut Pending, now: Nanos) {
        for a in pending.drain() {
            self.activate_leaf(a.leaf, a.slot, a.len, now);
        }
    }

    /// Hints what queueing a packet at leaf `leaf` ([`NONE`]: none) touches
    /// beyond the leaf's end (hinted a stage earlier): the tail slot it
    /// links from, or, when the leaf is empty, the leaf's line and its
    /// pipe's, which the arrival activates.
    #[inline]
    fn prefetch_path(&self, leaf: u32) {
        let Some(end) = self.ends.get(leaf.wrapping_sub(self.leaves_at) as usize) else {
            return;
        };
        if end.tail == NONE {
            self.prefetch_leaf(leaf);
            prefetch(self.nodes.at(end.pipe));
        } else {
            self.pool.prefetch_slot(end.tail);
        }
    }

    /// [`Scheduler::dequeue`](crate::Scheduler::dequeue) of up to
    /// `out.len()` packets at `now`, written to the front of `out` in the
    /// order they leave; returns how many left (fewer once the tree has
    /// nothing it may send at `now`).
    pub fn dequeue_burst(&mut self, now: Nanos, out: &mut [Packet]) -> usize {
        for (k, slot) in out.iter_mut().enumerate() {
            if !self.dequeue_into(now, slot) {
                return k;
            }
        }
        out.len()
    }

    /// Takes the next packet; see [`Scheduler::dequeue`](crate::Scheduler::dequeue).
    #[inline]
    pub(super) fn dequeue_one(&mut self, now: Nanos) -> Option<Packet> {
        let mut pkt = Packet::default();
        self.dequeue_into(now, &mut pkt).then_some(pkt)
    }

    /// Takes the next packet into `out`; returns whether there was one
    /// (`out` untouched when not).
    #[inline(always)]
    fn dequeue_into(&mut self, now: Nanos, out: &mut Packet) -> bool {
        if self.run.top != NONE && self.run.now != now {
            self.settle();
        }
        self.release_due(now);
        let mut n = core::mem::replace(&mut self.ahead, NONE);
        if n == NONE {
            if self.nodes.at(0).throttled || !self.has_head(0) {
                return false;
            }
            n = 0;
            while !self.is_leaf(n) {
                let u = self.select(n).expect("a node with a head has a unit");
                n = *self.first_child.at(n) + u;
            }
        }
        let len = self.send_leaf(n, now, out);
        self.counters.on_dequeue(len);
        self.backlog.packets -= 1;
        self.backlog.bytes -= u64::from(len);
        true
    }

    /// Takes leaf `n`'s head into `out` and unwinds the send to the root;
    /// returns the packet's length.
    #[inline(always)]
    fn send_leaf(&mut self, n: u32, now: Nanos, out: &mut Packet) -> u32 {
        let slack = self.slack;
        let i = n - self.leaves_at;
        let l = self.leaves.at(i);
        let conf = *self.conf(l.parent, l.slot);
        let l = self.leaves.at_mut(i);
        let (next_slot, next_len) = self
            .pool
            .unlink_into(l.head, out)
            .expect("a leaf with a head has a packet");
        let len = out.len;
        if self.prefetching {
            self.pool.prefetch_slot(next_slot);
        }
        l.head = next_slot;
        l.head_len = next_len;
        l.sent.packets += 1;
        l.sent.bytes += u64::from(len);
        let held = l.limited && conf.cost.send_then_held(&mut l.bucket, now, len, slack);
        let (parent, slot) = (l.parent, u32::from(l.slot));
        let next = if next_slot == NONE {
            let e = self.ends.at_mut(i);
            e.tail = NONE;
            e.budget = e.arrived.wrapping_add(conf.capacity);
            None
        } else if held {
            let at = conf.cost.release_time(&self.leaves.at(i).bucket);
            self.throttle_node(n, now, at);
            None
        } else {
            Some(Head {
                slot: next_slot,
                len: next_len,
                leaf: n,
            })
        };
        if next.is_none() {
            self.leaves.at_mut(i).active = false;
        }
        let (band, p, m) = self.band(parent);
        let after = band.served_select(p, m, slot, next.map(|h| h.len));
        let below = Below {
            unit: slot,
            head: next,
            after,
        };
        self.unwind(parent, len, below, now);
        len
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
            let node = self.nodes.at(c);
            let at = node.cost.release_time(&node.bucket);
            self.throttle_node(c, now, at);
            return None;
        }
        let u = below.after?;
        if u == below.unit && below.head.is_some() {
            return below.head;
        }
        let pick = *self.first_child.at(c) + u;
        if self.prefetching && !self.is_pipe(c) && self.is_pipe(pick) {
            self.prefetch_turn(c, pick);
        }
        self.descend(pick)
    }

    /// Hints leaf `n`'s record.
    #[inline(always)]
    fn prefetch_leaf(&self, n: u32) {
        if let Some(l) = self.leaves.get((n - self.leaves_at) as usize) {
            prefetch(l);
        }
    }

    /// `drr` node `c` turned to pipe `pick`, as `rte_sched`'s grinders
    /// pipeline a pipe's visit, one stage a turn over `pick` and the pipes
    /// after it in the round: the third slots of `pick`'s queued leaves (from
    /// their second, hinted a turn earlier), the slots after the heads of the
    /// next pipe's queued leaves, the head slots of the pipe after that, the
    /// members and queued leaves of the third (its node hinted a turn
    /// earlier), and the node (both lines) of the fourth. A leaf not queued
    /// when its pipe is three turns ahead is not hinted: an arrival that
    /// queues it hints it then. A leaf's fourth packet and those after it
    /// are hinted by the departure before them.
    #[inline]
    fn prefetch_turn(&self, c: u32, pick: u32) {
        self.prefetch_leaves_of(pick, |pool, l| pool.prefetch_third(l.head));
        let drr = self.drr.at(c);
        let first = *self.first_child.at(c);
        let Some(next) = drr.second() else {
            return;
        };
        self.prefetch_leaves_of(first + next, |pool, l| {
            pool.prefetch_after(l.head);
        });
        let Some(then) = drr.following(next) else {
            return;
        };
        self.prefetch_leaves_of(first + then, |pool, l| pool.prefetch_slot(l.head));
        let Some(third) = drr.following(then) else {
            return;
        };
        self.prefetch_members(first + third);
        self.prefetch_leaves_of(first + third, |_, l| prefetch(l));
        if let Some(u) = drr.following(third) {
            let node = self.nodes.at(first + u);
            prefetch(node);
            prefetch(&node.bucket);
        }
    }

    /// The positions of pipe `pipe`'s leaves.
    #[inline]
    pub(super) fn leaves_of(&self, pipe: u32) -> core::ops::Range<u32> {
        let from = *self.first_child.at(pipe);
        let to = self.first_child.get(pipe as usize + 1).copied();
        from..to.unwrap_or(self.leaves_at + self.leaves.len() as u32)
    }

    /// `hint` on the record of every leaf pipe `pipe` has queued.
    #[inline]
    fn prefetch_leaves_of(&self, pipe: u32, hint: impl Fn(&PacketPool, &Leaf)) {
        let band = &self.nodes.at(pipe).band;
        let mut queued = band.queued_units(self.profiles.at(band.profile));
        let first = *self.first_child.at(pipe) - self.leaves_at;
        while queued != 0 {
            let u = queued.trailing_zeros();
            queued &= queued - 1;
            if let Some(l) = self.leaves.get((first + u) as usize) {
                hint(&self.pool, l);
            }
        }
    }

    /// Pipe `n`'s band, profile and members.
    #[inline(always)]
    pub(super) fn band(&mut self, n: u32) -> (&mut Band, &Profile, &mut [Member]) {
        let band = &mut self.nodes.at_mut(n).band;
        let p = self.profiles.at(band.profile);
        let at = band.members_at as usize;
        (band, p, &mut self.members[at..at + p.members()])
    }

    /// Hints the line of pipe `n`'s members (reading its node).
    #[inline]
    fn prefetch_members(&self, n: u32) {
        let node = self.nodes.at(n);
        if let Some(m) = self.members.get(node.band.members_at as usize) {
            prefetch(m);
        }
    }

    /// Unwinds a send through pipe `pipe` up to the root; a run through the
    /// pipe (see `run`) ends the unwinding there when it can go on, and one
    /// starts when the root's next packet is the pipe's.
    #[inline(always)]
    fn unwind(&mut self, pipe: u32, pkt_len: u32, mut below: Below, now: Nanos) {
        let len = u64::from(pkt_len);
        let mut c = pipe;
        let mut pipe_next = None;
        loop {
            let is_pipe = c == pipe;
            let node = self.nodes.at_mut(c);
            node.sent.packets += 1;
            node.sent.bytes += len;
            let left = if is_pipe {
                // A pipe holds packets while a leaf is queued in its band or
                // held by its limit.
                u64::from(!node.band.is_empty() || node.held_leaves > 0)
            } else {
                node.backlog.packets -= 1;
                node.backlog.bytes -= len;
                node.backlog.packets
            };
            let (parent, slot, limited) = (node.parent, node.slot, node.limited);
            // In a run the pipe's own limit is charged when the run settles.
            let deferred = is_pipe && self.run.top == pipe;
            let held = limited
                && if deferred {
                    self.run_holds(pipe, pkt_len, now)
                } else {
                    let node = self.nodes.at_mut(c);
                    node.cost
                        .send_then_held(&mut node.bucket, now, pkt_len, self.slack)
                };
            let next = self.next_head(c, below, left, held, now);
            if is_pipe {
                if self.run.top == pipe {
                    if self.run.extend(pkt_len, next.map(|h| h.len)) {
                        // Every level above would pick this pipe again.
                        self.note_next(next);
                        return;
                    }
                    self.settle();
                    if limited {
                        let node = self.nodes.at_mut(pipe);
                        node.cost.send_bytes(&mut node.bucket, now, len);
                    }
                }
                pipe_next = next;
            }
            if parent == NONE {
                self.note_next(next);
                if let Some(h) = next {
                    if pipe_next == next && self.run.top == NONE {
                        self.start_run(pipe, h.len, now);
                    }
                }
                return;
            }
            if next.is_none() {
                self.nodes.at_mut(c).active = false;
            }
            let next_len = next.map(|h| h.len);
            let after = if self.is_pipe(parent) {
                let (band, p, m) = self.band(parent);
                band.served_select(p, m, slot, next_len)
            } else {
                self.drr.at_mut(parent).served_peek(slot, next_len)
            };
            below = Below {
                unit: slot,
                head: next,
                after,
            };
            c = parent;
        }
    }

    /// Whether the send of `len` bytes through pipe `pipe` (limited), whose
    /// run is in progress, holds it: past the room its limit had when the run
    /// started. Then the run settles first and the send is charged now.
    #[inline(always)]
    fn run_holds(&mut self, pipe: u32, len: u32, now: Nanos) -> bool {
        if self.run.sent().bytes + u64::from(len) <= self.run_room {
            return false;
        }
        self.settle_then_charge(pipe, len, now)
    }

    /// [`PipeTree::run_holds`] past the room: settles the run, charges the
    /// send to the pipe's limit and tells whether it holds the pipe.
    #[cold]
    fn settle_then_charge(&mut self, pipe: u32, len: u32, now: Nanos) -> bool {
        self.settle();
        let node = self.nodes.at_mut(pipe);
        node.cost
            .send_then_held(&mut node.bucket, now, len, self.slack)
    }

    /// The root's next packet is `next`: fetches its slot and remembers its
    /// leaf for the next dequeue.
    #[inline(always)]
    fn note_next(&mut self, next: Option<Head>) {
        if let Some(h) = next {
            prefetch(self.pool.at(h.slot));
            self.ahead = h.leaf;
        }
    }
}
