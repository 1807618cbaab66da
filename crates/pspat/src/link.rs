//! The emulated link: a leaky bucket that releases packets at the link rate
//! (PSPAT Fig. 5, lines 11-22).
//!
//! `idle_at` is when the link finishes the packets released so far. The arbiter
//! releases packets while `idle_at < now`, each adding its transmission time. While
//! the scheduler stays backlogged, a late round releases what the link would have
//! sent meanwhile, so the average rate is the link rate however coarse the rounds;
//! within one round the arbiter may release up to one round's worth of bytes plus
//! one packet (the "block" of section 5.1), and the excess is charged to the next
//! round.
//!
//! When the scheduler has nothing to send ([`Link::drained`]) the link goes idle:
//! the next packet starts at the time it is sent, not earlier, so an idle period
//! earns no credit for a later burst. Idle time is counted by its cause
//! ([`Idle`]): the scheduler held no packet, or held only packets over their rate
//! limits. The first says the senders did not keep the link busy; the second
//! that the policy held them back. The paper sets `link_idle = t_now` in the
//! round that finds the scheduler empty, which leaves up to one round of credit; an
//! arbiter that sleeps would otherwise carry credit from before its sleep.
//!
//! Time is kept in fixed point, 2^-32 ns per unit in a `u128`, so per-packet costs
//! of fast links (0.96 ns for 60 bytes at 500 Gbit/s) do not round away and the sum
//! never drifts: the cost per byte is computed once with a 2^-32 ns resolution.

use eiffel_sched::time::{Nanos, Rate, Rounding};
use eiffel_sched::Scheduler;

const FRAC_BITS: u32 = 32;

/// Why the scheduler had nothing to send when the link could have sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idle {
    /// It held no packet.
    Empty,
    /// It held packets, none of them eligible yet (rate limits, release times).
    Held,
}

/// A leaky bucket at a fixed rate.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    /// When the link becomes idle, in 2^-32 ns.
    idle_at: u128,
    /// Transmission time of one byte, in 2^-32 ns.
    per_byte: u128,
    rate_bps: u64,
    /// Why the scheduler had nothing to send at the last decision; `None` once
    /// a packet was sent after it.
    idle: Option<Idle>,
    /// Total time the link spent idle, in 2^-32 ns.
    idle_total: u128,
    /// Of it, the time the scheduler held packets ([`Idle::Held`]).
    held_total: u128,
}

/// Slowest link rate accepted, in bits per second.
pub const MIN_RATE_BPS: u64 = 1_000;
/// Fastest link rate accepted, in bits per second (10 Pbit/s).
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000_000;

impl Link {
    /// A link of `rate_bps` bits per second, idle from time 0. `None` if the rate is
    /// outside [`MIN_RATE_BPS`]..=[`MAX_RATE_BPS`].
    #[must_use]
    pub fn new(rate_bps: u64) -> Option<Self> {
        if !(MIN_RATE_BPS..=MAX_RATE_BPS).contains(&rate_bps) {
            return None;
        }
        // Rounded up: the emulated link is never faster than its rate.
        let per_byte = Rate::from_bps(rate_bps).tx_time_fixed(1, FRAC_BITS, Rounding::Up);
        Some(Link {
            idle_at: 0,
            per_byte,
            rate_bps,
            idle: Some(Idle::Empty),
            idle_total: 0,
            held_total: 0,
        })
    }

    /// Changes the rate for the packets sent from now on; packets already charged
    /// keep their cost. Returns `false`, changing nothing, if `rate_bps` is outside
    /// [`MIN_RATE_BPS`]..=[`MAX_RATE_BPS`].
    pub fn set_rate(&mut self, rate_bps: u64) -> bool {
        match Link::new(rate_bps) {
            Some(fresh) => {
                self.per_byte = fresh.per_byte;
                self.rate_bps = rate_bps;
                true
            }
            None => false,
        }
    }

    /// The rate in bits per second.
    #[must_use]
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Whether the link is idle strictly before `now`.
    #[must_use]
    #[inline]
    pub fn idle_before(&self, now: Nanos) -> bool {
        self.idle_at < u128::from(now) << FRAC_BITS
    }

    /// Charges one packet of `len` bytes sent at `now`.
    #[inline]
    pub fn send(&mut self, len: u32, now: Nanos) {
        if let Some(why) = self.idle.take() {
            let now = u128::from(now) << FRAC_BITS;
            self.charge_idle(now, why);
        }
        self.idle_at += u128::from(len) * self.per_byte;
    }

    /// Records that the scheduler had nothing to send at `now`, for reason `why`:
    /// the link is idle from `now` on (if it was not busy beyond it) until the
    /// next [`Link::send`].
    #[inline]
    pub fn drained(&mut self, now: Nanos, why: Idle) {
        let now = u128::from(now) << FRAC_BITS;
        // The time since the link last went idle, or since the last look at an
        // idle link, goes to what that look found; the first look after a
        // packet finds the reason for the whole gap.
        let cause = self.idle.replace(why).unwrap_or(why);
        self.charge_idle(now, cause);
    }

    /// Counts the link idle from `idle_at` to `now` (nothing if it was busy
    /// until then) and moves `idle_at` to `now`.
    #[inline]
    fn charge_idle(&mut self, now: u128, why: Idle) {
        let gap = now.saturating_sub(self.idle_at);
        self.idle_total += gap;
        if why == Idle::Held {
            self.held_total += gap;
        }
        self.idle_at = self.idle_at.max(now);
    }

    /// Time the link spent idle between packets so far (the scheduler was empty),
    /// in nanoseconds; with the elapsed time it gives the link's utilisation.
    #[must_use]
    pub fn idle_ns(&self) -> Nanos {
        Nanos::try_from(self.idle_total >> FRAC_BITS).unwrap_or(Nanos::MAX)
    }

    /// Of [`Link::idle_ns`], the time the scheduler held packets, none eligible
    /// ([`Idle::Held`]), in nanoseconds; the rest the senders left it empty.
    #[must_use]
    pub fn held_ns(&self) -> Nanos {
        Nanos::try_from(self.held_total >> FRAC_BITS).unwrap_or(Nanos::MAX)
    }

    /// When the link becomes idle, rounded up to a nanosecond.
    #[must_use]
    pub fn idle_at(&self) -> Nanos {
        let ns = self.idle_at.div_ceil(1u128 << FRAC_BITS);
        Nanos::try_from(ns).unwrap_or(Nanos::MAX)
    }
}

/// Why `sched`, which just released nothing, had nothing to send.
#[inline]
pub(crate) fn idle_cause<S: Scheduler + ?Sized>(sched: &S) -> Idle {
    if sched.backlog().packets == 0 {
        Idle::Empty
    } else {
        Idle::Held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_transmission_time_without_drift() {
        // 60 bytes at 500 Gbit/s = 0.96 ns; a million packets take 960 us exactly.
        let mut link = Link::new(500_000_000_000).unwrap();
        for _ in 0..1_000_000 {
            link.send(60, 0);
        }
        let t = link.idle_at();
        assert!((960_000..=960_001).contains(&t), "{t}");
    }

    #[test]
    fn releases_only_while_idle_before_now() {
        // 1500 bytes at 10 Gbit/s = 1200 ns.
        let mut link = Link::new(10_000_000_000).unwrap();
        link.drained(1000, Idle::Empty);
        assert!(link.idle_before(1001));
        assert!(!link.idle_before(1000));
        link.send(1500, 1000);
        // Rounded up by under a nanosecond.
        assert!((2200..=2201).contains(&link.idle_at()));
        assert!(!link.idle_before(2200));
        assert!(link.idle_before(2201));
    }

    #[test]
    fn an_idle_period_earns_no_credit() {
        let mut link = Link::new(10_000_000_000).unwrap();
        link.send(1500, 0);
        link.drained(500, Idle::Empty);
        assert!(link.idle_at() >= 1200, "drained while busy: still busy");
        // Nothing sent for a long time: the next packet starts when it is sent.
        assert!(link.idle_before(1_000_000));
        link.send(1500, 1_000_000);
        assert!((1_001_200..=1_001_201).contains(&link.idle_at()));
        assert!((998_799..=998_800).contains(&link.idle_ns()));
        // Backlogged but served late: the late round catches up.
        assert!(link.idle_before(1_010_000));
        link.send(1500, 1_010_000);
        assert!((1_002_400..=1_002_401).contains(&link.idle_at()));
    }

    #[test]
    fn idle_time_counts_every_round_and_its_cause() {
        // Idle and held totals, each within the sub-nanosecond rounding below.
        let totals = |link: &Link| (link.idle_ns(), link.held_ns());
        let near = |(idle, held): (u64, u64), want: (u64, u64)| {
            idle.abs_diff(want.0) <= 1 && held.abs_diff(want.1) <= 1
        };
        // 1500 bytes at 10 Gbit/s = 1200 ns: busy until 1200.
        let mut link = Link::new(10_000_000_000).unwrap();
        link.send(1500, 0);
        // Rounds at 2000 and 3000 find nothing; at 4000 only a held packet,
        // which becomes eligible and is sent at 6000.
        link.drained(2000, Idle::Empty);
        link.drained(3000, Idle::Empty);
        link.drained(4000, Idle::Held);
        link.send(1500, 6000);
        assert!(near(totals(&link), (4800, 2000)), "{:?}", totals(&link));
        // Busy until 7,200; a round at 10,000 finds only a held packet, sent at
        // 11,000: the whole gap, 3,800 ns, is held.
        link.drained(10_000, Idle::Held);
        link.send(1500, 11_000);
        assert!(near(totals(&link), (8600, 5800)), "{:?}", totals(&link));
    }

    #[test]
    fn a_new_rate_applies_to_later_packets_only() {
        let mut link = Link::new(10_000_000_000).unwrap();
        link.send(1500, 0);
        assert!(!link.set_rate(0));
        assert!(link.set_rate(1_000_000_000));
        assert_eq!(link.rate_bps(), 1_000_000_000);
        // 1200 ns at the old rate, then 12000 ns at the new one.
        link.send(1500, 0);
        assert!((13_200..=13_201).contains(&link.idle_at()));
    }

    #[test]
    fn rejects_rates_out_of_range() {
        assert!(Link::new(0).is_none());
        assert!(Link::new(MAX_RATE_BPS + 1).is_none());
        assert_eq!(Link::new(MIN_RATE_BPS).unwrap().rate_bps(), MIN_RATE_BPS);
    }
}
