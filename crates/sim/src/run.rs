//! The event loop of a scheduler in front of an emulated [`Link`]: [`drive`] for
//! any arrival [`Source`] and [`Observer`], and [`run()`] for a fixed [`Trace`].
//!
//! The loop is event-driven in exact [`Ticks`]: at each arrival the packet is
//! offered to the scheduler (with `now` = its arrival time), and whenever the link
//! is free the scheduler is asked for the next packet, which then occupies the link
//! for `8 * len / R` seconds. Arrivals at the instant the link frees are offered
//! before the link asks, so they compete for it. A scheduler holding packets it
//! will not release yet ([`Scheduler::next_ready`]) lets the link idle until its
//! next ready time or the next arrival, whichever comes first: time jumps from
//! event to event, never in small steps. Without an end time the loop runs until
//! the source is exhausted and the scheduler holds nothing it will release.

use crate::link::{Link, Ticks};
use crate::trace::Trace;
use eiffel_sched::{DropReason, Nanos, Packet, Scheduler};

/// Where arrivals come from: a time-ordered stream that may react to departures
/// (closed-loop sources).
pub trait Source {
    /// Arrival time of the next packet, if any.
    fn peek(&mut self) -> Option<Nanos>;

    /// Removes and returns the next packet (its `arrival` is [`Source::peek`]'s).
    fn pop(&mut self) -> Option<Packet>;

    /// `pkt` started transmission at `now`.
    fn on_sent(&mut self, pkt: &Packet, now: Nanos) {
        let _ = (pkt, now);
    }

    /// `pkt` was refused at `now`.
    fn on_dropped(&mut self, pkt: &Packet, reason: DropReason, now: Nanos) {
        let _ = (pkt, reason, now);
    }
}

/// Sees what happens during [`drive`].
pub trait Observer<S: ?Sized> {
    /// `pkt` arrives at `at` and is about to be offered.
    fn on_arrival(&mut self, pkt: &Packet, at: Ticks) {
        let _ = (pkt, at);
    }

    /// `pkt` was offered at `at` and refused for `reason`.
    fn on_drop(&mut self, pkt: &Packet, reason: DropReason, at: Ticks) {
        let _ = (pkt, reason, at);
    }

    /// `pkt` left `sched` and occupies the link from `start` to `end`.
    fn on_sent(&mut self, sched: &S, pkt: &Packet, start: Ticks, end: Ticks) {
        let _ = (sched, pkt, start, end);
    }
}

/// Runs `source` through `sched` on `link` until `until` (nothing is offered or
/// sent at or after it), or, with no end time, until nothing more can happen.
/// Returns the time the loop stopped.
pub fn drive<S, Src, O>(
    sched: &mut S,
    link: Link,
    source: &mut Src,
    until: Option<Nanos>,
    obs: &mut O,
) -> Ticks
where
    S: Scheduler + ?Sized,
    Src: Source + ?Sized,
    O: Observer<S> + ?Sized,
{
    let end = until.map(|u| link.ticks(u));
    // The link is free from `free`.
    let mut free: Ticks = 0;
    loop {
        if end.is_some_and(|e| free >= e) {
            return end.unwrap_or(free);
        }
        while let Some(at) = source.peek() {
            if link.ticks(at) > free {
                break;
            }
            let pkt = source.pop().expect("peeked");
            obs.on_arrival(&pkt, link.ticks(pkt.arrival));
            if let Err(d) = sched.enqueue(pkt, pkt.arrival) {
                obs.on_drop(&d.packet, d.reason, link.ticks(pkt.arrival));
                source.on_dropped(&d.packet, d.reason, pkt.arrival);
            }
        }
        let now = link.nanos_floor(free);
        if let Some(pkt) = sched.dequeue(now) {
            let done = free + link.tx_ticks(pkt.len);
            obs.on_sent(&*sched, &pkt, free, done);
            source.on_sent(&pkt, now);
            free = done;
            continue;
        }
        // Idle: until the next arrival or the scheduler's next release.
        let arrival = source.peek().map(|at| link.ticks(at));
        let ready = sched.next_ready(now).map(|ns| link.ticks(ns).max(free + 1));
        free = match (arrival, ready) {
            (Some(a), Some(r)) => a.min(r),
            (Some(a), None) => a,
            (None, Some(r)) => r,
            (None, None) => return end.unwrap_or(free),
        }
        .max(free);
    }
}

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

/// Two observers see everything, the first one first.
impl<S: ?Sized, A: Observer<S>, B: Observer<S>> Observer<S> for (A, B) {
    fn on_arrival(&mut self, pkt: &Packet, at: Ticks) {
        self.0.on_arrival(pkt, at);
        self.1.on_arrival(pkt, at);
    }

    fn on_drop(&mut self, pkt: &Packet, reason: DropReason, at: Ticks) {
        self.0.on_drop(pkt, reason, at);
        self.1.on_drop(pkt, reason, at);
    }

    fn on_sent(&mut self, sched: &S, pkt: &Packet, start: Ticks, end: Ticks) {
        self.0.on_sent(sched, pkt, start, end);
        self.1.on_sent(sched, pkt, start, end);
    }
}

/// An observer that sees nothing.
impl<S: ?Sized> Observer<S> for () {}

/// A borrowed observer.
impl<S: ?Sized, O: Observer<S> + ?Sized> Observer<S> for &mut O {
    fn on_arrival(&mut self, pkt: &Packet, at: Ticks) {
        (**self).on_arrival(pkt, at);
    }

    fn on_drop(&mut self, pkt: &Packet, reason: DropReason, at: Ticks) {
        (**self).on_drop(pkt, reason, at);
    }

    fn on_sent(&mut self, sched: &S, pkt: &Packet, start: Ticks, end: Ticks) {
        (**self).on_sent(sched, pkt, start, end);
    }
}

/// A trace as a [`Source`]: packets carry their trace index in `buffer`.
struct TraceSource<'a> {
    trace: &'a Trace,
    next: usize,
}

impl Source for TraceSource<'_> {
    fn peek(&mut self) -> Option<Nanos> {
        self.trace.arrivals().get(self.next).map(|a| a.at)
    }

    fn pop(&mut self) -> Option<Packet> {
        (self.next < self.trace.len()).then(|| {
            self.next += 1;
            self.trace.packet(self.next - 1)
        })
    }
}

impl<S: ?Sized> Observer<S> for Run {
    fn on_drop(&mut self, pkt: &Packet, reason: DropReason, _at: Ticks) {
        self.outcomes[pkt.buffer as usize] = Outcome::Dropped(reason);
    }

    fn on_sent(&mut self, _sched: &S, pkt: &Packet, start: Ticks, end: Ticks) {
        let i = pkt.buffer as usize;
        self.outcomes[i] = Outcome::Sent { start, end };
        self.order.push(i);
    }
}

/// Runs `trace` through `sched` on `link` until the scheduler is empty or holds
/// only packets it never releases (see the module docs).
///
/// Packets carry their trace index in [`eiffel_sched::Packet::buffer`]; the
/// scheduler must hand back the descriptors it was given.
pub fn run<S: Scheduler + ?Sized>(sched: &mut S, trace: &Trace, link: Link) -> Run {
    let mut result = Run {
        link,
        outcomes: vec![Outcome::Held; trace.len()],
        order: Vec::with_capacity(trace.len()),
    };
    let mut source = TraceSource { trace, next: 0 };
    drive(sched, link, &mut source, None, &mut result);
    result
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
