//! Runs a trace through any [`Scheduler`] in front of an emulated [`Link`].
//!
//! The loop is event-driven in exact [`Ticks`]: at each arrival the packet is
//! offered to the scheduler (with `now` = its arrival time), and whenever the link
//! is free the scheduler is asked for the next packet, which then occupies the link
//! for `8 * len / R` seconds. Arrivals at the instant the link frees are offered
//! before the link asks, so they compete for it. A scheduler holding packets it
//! will not release yet ([`Scheduler::next_ready`]) lets the link idle until its
//! next ready time or the next arrival, whichever comes first. After the last
//! arrival the run continues until the scheduler is empty.

use crate::link::{Link, Ticks};
use crate::trace::Trace;
use eiffel_sched::{DropReason, Scheduler};

/// What happened to one packet of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Transmitted from `start` to `end`.
    Sent {
        /// Start of transmission.
        start: Ticks,
        /// End of transmission (completion time).
        end: Ticks,
    },
    /// Dropped by the scheduler.
    Dropped(DropReason),
    /// Still held by the scheduler when it stopped releasing packets.
    Held,
}

/// The result of [`run`]: one [`Outcome`] per packet of the trace.
#[derive(Clone, Debug)]
pub struct Run {
    /// The link the trace ran on.
    pub link: Link,
    /// Outcome of each packet, indexed like the trace.
    pub outcomes: Vec<Outcome>,
    /// Indexes of the sent packets in transmission order.
    pub order: Vec<usize>,
}

impl Run {
    /// Packets transmitted.
    #[must_use]
    pub fn sent(&self) -> usize {
        self.order.len()
    }

    /// Packets dropped, for any reason.
    #[must_use]
    pub fn dropped(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Dropped(_)))
            .count()
    }
}

/// Runs `trace` through `sched` on `link` (see the module docs).
///
/// Packets carry their trace index in [`eiffel_sched::Packet::buffer`]; the
/// scheduler must hand back the descriptors it was given.
pub fn run<S: Scheduler + ?Sized>(sched: &mut S, trace: &Trace, link: Link) -> Run {
    let arrivals = trace.arrivals();
    let mut outcomes = vec![Outcome::Held; arrivals.len()];
    let mut order = Vec::with_capacity(arrivals.len());
    let mut next = 0usize;
    // The link is free from `free`.
    let mut free: Ticks = 0;
    loop {
        while next < arrivals.len() && link.ticks(arrivals[next].at) <= free {
            offer(sched, trace, next, &mut outcomes);
            next += 1;
        }
        if let Some(pkt) = sched.dequeue(link.nanos_floor(free)) {
            let i = pkt.buffer as usize;
            let end = free + link.tx_ticks(pkt.len);
            outcomes[i] = Outcome::Sent { start: free, end };
            order.push(i);
            free = end;
            continue;
        }
        // Idle: until the next arrival or the scheduler's next release.
        let arrival = arrivals.get(next).map(|a| link.ticks(a.at));
        let ready = sched
            .next_ready(link.nanos_floor(free))
            .map(|ns| link.ticks(ns).max(free + 1));
        free = match (arrival, ready) {
            (Some(a), Some(r)) => a.min(r),
            (Some(a), None) => a,
            (None, Some(r)) => r,
            (None, None) => break,
        }
        .max(free);
    }
    Run {
        link,
        outcomes,
        order,
    }
}

fn offer<S: Scheduler + ?Sized>(sched: &mut S, trace: &Trace, i: usize, outcomes: &mut [Outcome]) {
    let pkt = trace.packet(i);
    if let Err(d) = sched.enqueue(pkt, pkt.arrival) {
        outcomes[d.packet.buffer as usize] = Outcome::Dropped(d.reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Arrival;
    use eiffel_sched::Fifo;

    #[test]
    fn fifo_on_a_gigabit_link() {
        let link = Link::new(1_000_000_000);
        let trace = Trace::new(vec![
            Arrival {
                at: 0,
                flow: 0,
                len: 1000,
            },
            Arrival {
                at: 0,
                flow: 1,
                len: 500,
            },
            Arrival {
                at: 20_000,
                flow: 0,
                len: 100,
            },
            Arrival {
                at: 20_000,
                flow: 0,
                len: 100,
            },
        ]);
        let mut q = Fifo::new(3);
        let r = run(&mut q, &trace, link);
        let ns = |t: Ticks| link.nanos(t);
        let Outcome::Sent { start, end } = r.outcomes[1] else {
            panic!()
        };
        assert_eq!((ns(start), ns(end)), (8_000.0, 12_000.0));
        let Outcome::Sent { start, .. } = r.outcomes[2] else {
            panic!()
        };
        assert_eq!(ns(start), 20_000.0, "the link idled until the arrival");
        assert_eq!(r.order, [0, 1, 2, 3]);
        assert_eq!((r.sent(), r.dropped()), (4, 0));
    }

    #[test]
    fn drops_are_recorded() {
        let link = Link::new(1_000_000_000);
        let trace = Trace::new(
            (0..5)
                .map(|_| Arrival {
                    at: 0,
                    flow: 0,
                    len: 100,
                })
                .collect(),
        );
        let mut q = Fifo::new(2);
        let r = run(&mut q, &trace, link);
        // All five arrive before the link asks: two fit, three are dropped.
        assert_eq!((r.sent(), r.dropped()), (2, 3));
        assert_eq!(r.outcomes[4], Outcome::Dropped(DropReason::QueueFull));
    }
}
