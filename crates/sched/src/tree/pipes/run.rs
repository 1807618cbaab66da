//! Runs in the pipe executor: dequeues at one instant through one pipe,
//! the `drr` levels above it told once (see the general tree's `run`).
//!
//! A pipe keeps its subport's turn for about a visit's packets, and the
//! subport its port's: every level above the pipe would count each packet,
//! charge it to its limit and tell its `drr` core, only to pick the same
//! child again. Once a dequeue at `now` has unwound the whole path and the
//! root's next packet is the pipe's, the dequeues after it at `now` stop at
//! the pipe while every `drr` ancestor's deficit covers the run's bytes and
//! the pipe's next packet and every limited ancestor may still send the run's
//! bytes (`Cost::room`, exact). The pipe's own limit is charged with the run's
//! bytes when it settles: until then a send holds the pipe exactly when the
//! run's bytes pass the room the limit had when the run started (the same
//! `Cost::room`), and the first such send settles the run before it is
//! charged. The deferred sends are applied before anything
//! else reads or changes the levels above: an enqueue, a release, a dequeue at
//! another instant, a run that cannot go on. Views and checks add them.

use super::super::run::Run;
use super::{PipeTree, NONE};
use crate::packet::Nanos;
use crate::scheduler::Backlog;

impl PipeTree {
    /// Starts a run through pipe `top`, whose next packet (`next_len` bytes)
    /// is the root's, right after a dequeue at `now` unwound the whole path.
    #[inline(never)]
    pub(super) fn start_run(&mut self, top: u32, next_len: u32, now: Nanos) {
        let (mut turn_room, mut limit_room) = (u64::MAX, u64::MAX);
        let mut x = top;
        loop {
            let node = self.nodes.at(x);
            let (parent, slot) = (node.parent, node.slot);
            if parent == NONE {
                break;
            }
            turn_room = turn_room.min(self.drr.at(parent).deficit(slot));
            let p = self.nodes.at(parent);
            if p.limited {
                limit_room = limit_room.min(p.cost.room(&p.bucket, now, self.slack));
            }
            x = parent;
        }
        let node = self.nodes.at(top);
        self.run_room = if node.limited {
            node.cost.room(&node.bucket, now, self.slack)
        } else {
            u64::MAX
        };
        self.run = Run::new(top, now, turn_room, limit_room, next_len);
    }

    /// Applies the run's deferred sends to the levels above its pipe and
    /// ends it.
    #[inline(always)]
    pub(super) fn settle(&mut self) {
        if self.run.top != NONE {
            self.settle_run();
        }
    }

    /// [`PipeTree::settle`] of a run in progress.
    #[inline(never)]
    fn settle_run(&mut self) {
        let run = self.run;
        self.run = Run::NONE;
        let sent = run.sent();
        if sent.packets == 0 {
            return;
        }
        let top = self.nodes.at_mut(run.top);
        if top.limited {
            top.cost.send_bytes(&mut top.bucket, run.now, sent.bytes);
        }
        let mut x = run.top;
        loop {
            let node = self.nodes.at(x);
            let (parent, slot) = (node.parent, node.slot);
            if parent == NONE {
                break;
            }
            self.drr
                .at_mut(parent)
                .served_run(slot, sent.bytes, run.next_len());
            let p = self.nodes.at_mut(parent);
            p.sent.packets += sent.packets;
            p.sent.bytes += sent.bytes;
            p.backlog.packets -= sent.packets;
            p.backlog.bytes -= sent.bytes;
            if p.limited {
                p.cost.send_bytes(&mut p.bucket, run.now, sent.bytes);
            }
            x = parent;
        }
    }

    /// The sends a run in progress defers at node `n` (a position): none
    /// unless `n` is above the run's pipe.
    pub(super) fn deferred(&self, n: u32) -> Backlog {
        let mut x = self.run.top;
        while x != NONE {
            x = self.nodes[x as usize].parent;
            if x == n {
                return self.run.sent();
            }
        }
        Backlog::default()
    }
}
