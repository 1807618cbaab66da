//! The tree's one shaper: a timing wheel of release events, and the [`Gcra`] every
//! rate limit is (the design is documented on [`Gcra`]).

use eiffel_queue::{Handle, OutOfRange, TimingWheel, WheelConfig};

use super::spec::{RateLimit, ShaperSpec};
use crate::scheduler::ConfigError;
use crate::time::{Nanos, Rate, Ticks};

/// A rate limit's state: rate, burst tolerance, theoretical arrival time.
///
/// Shaping decoupled from scheduling (Eiffel, NSDI'19, section 3.2.2, Figs. 6-7):
/// every rate limit in the tree is a [`Gcra`] on one unit's output, and ONE
/// time-indexed queue, the shaper, holds the release times of every throttled
/// unit of the whole tree.
///
/// A limited unit (a node, or a flow of a paced per-flow leaf) that has used up its
/// allowance leaves its parent's queue and is filed in the shaper under its release
/// time; when that time comes it re-enters its parent's queue. A unit therefore
/// knows where it goes next: its parent, found through the tree. Non-limited units
/// never touch the shaper.
///
/// ## The limit: GCRA
/// The generic cell rate algorithm is a token bucket written as one timestamp, the
/// theoretical arrival time `TAT`, at which the bucket would be full again. Sending
/// `L` bytes at time `t` sets `TAT = max(TAT, t - 1ns) + L/r` (the nanosecond absorbs
/// whole-nanosecond release times). The unit may send when
/// `t >= TAT - tau` with `tau = (burst - mtu) / r`: the bucket then holds at least one
/// maximum-size packet's worth of tokens, so it never goes negative, and over any
/// interval of length `T` at most `r T + burst` bytes leave. Long-run, the rate is
/// exactly `r`: `TAT` advances by the exact cost of every byte, whatever the
/// release times. Times are kept in ticks of `1/r` ns ([`crate::time`]), in which
/// every cost is a whole number (`8 * 10^9` ticks per byte), so no packet's cost is
/// ever rounded.
/// Since `now` has whole-nanosecond resolution and release times are rounded up, a
/// send less than 1 ns after `TAT` counts as on time; otherwise every send at its
/// release time would lose a fraction of a nanosecond and the rate would fall
/// short of `r`. A `u128` of ticks holds 10^12 ns at 10^14 bit/s.
///
/// ## The shaper
/// A [`TimingWheel`] of release events. Its slot granularity `g` is the shaping
/// precision: a unit may be released up to `g` before its exact release time (never
/// more), which can let a burst exceed the limit by `r g` bytes but does not change
/// the long-run rate. Release times beyond the wheel's horizon are filed in its last
/// slot and re-checked when released (refiled if still early), so no limit is ever
/// broken by the horizon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gcra {
    rate: Rate,
    /// `(burst - mtu) / rate`, in ticks.
    tau: Ticks,
    /// Theoretical arrival time, in ticks.
    tat: Ticks,
}

impl Gcra {
    /// A limit of `limit.rate` bits/s with `limit.burst` bytes of burst (at least
    /// `mtu`).
    #[must_use]
    pub fn new(limit: RateLimit, mtu: u32) -> Self {
        let rate = Rate::from_bps(limit.rate.bps().max(1));
        let extra = limit.burst.saturating_sub(u64::from(mtu));
        Gcra {
            rate,
            tau: Rate::tx_ticks(extra),
            tat: 0,
        }
    }

    /// A limit that nothing reads: the placeholder of a node without one.
    pub(crate) const UNUSED: Gcra = Gcra {
        rate: Rate::from_bps(u64::MAX),
        tau: 0,
        tat: 0,
    };

    /// Whether the unit may send at `now`.
    #[inline]
    #[must_use]
    pub fn conforms(&self, now: Nanos) -> bool {
        self.rate.ticks(now) + self.tau >= self.tat
    }

    /// The earliest time the unit may send (at or before `now` if it may now).
    #[inline]
    #[must_use]
    pub fn release_time(&self) -> Nanos {
        self.rate.nanos_ceil(self.tat.saturating_sub(self.tau))
    }

    /// Accounts `len` bytes sent at `now` (less than 1 ns after `TAT` counts as
    /// on time: see the module docs).
    #[inline]
    pub fn on_send(&mut self, now: Nanos, len: u32) {
        let on_time = self
            .rate
            .ticks(now)
            .saturating_sub(u128::from(self.rate.bps()) - 1);
        self.tat = self.tat.max(on_time) + Rate::tx_ticks(u64::from(len));
    }

    /// Accounts `len` bytes sent at `now` ([`Gcra::on_send`]) and tells
    /// whether the unit is then held beyond `slack` (`!conforms(now + slack)`),
    /// computing `now` in ticks once.
    #[inline]
    pub(crate) fn send_then_held(&mut self, now: Nanos, len: u32, slack: Nanos) -> bool {
        // NB: `now * r` directly: a limit's rate is never 0 (`new` takes at
        // least 1 bit/s), so `Rate::ticks`'s guard against 0 is not needed
        // here, where it cost a branch per send at every level of a path.
        let r = u128::from(self.rate.bps());
        let t = u128::from(now) * r;
        self.tat = self.tat.max(t.saturating_sub(r - 1)) + Rate::tx_ticks(u64::from(len));
        t + u128::from(slack) * r + self.tau < self.tat
    }

    /// The configured rate.
    #[must_use]
    pub fn rate(&self) -> Rate {
        self.rate
    }
}

/// A throttled unit: the node whose output is limited, and for per-flow leaves the
/// flow (`UNIT_NODE` when the node itself is throttled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttled {
    /// The node.
    pub node: u32,
    /// The flow within a per-flow leaf, or [`UNIT_NODE`].
    pub flow: u32,
}

/// [`Throttled::flow`] value meaning the node itself.
pub const UNIT_NODE: u32 = u32::MAX;

/// The tree's one shaper: a timing wheel of release events.
#[derive(Clone, Debug)]
pub struct Shaper {
    wheel: TimingWheel<u64>,
    granularity: Nanos,
    /// Nothing is released before this instant (`Nanos::MAX`: nothing filed).
    /// A lower bound, exact after every filing and every look at the wheel that
    /// found nothing due: a withdrawal only makes the next release later.
    // NB: every dequeue asks for due releases; without the bound each asks the
    // wheel, two bitmap scans from its cursor (a tenth of a packet's
    // instructions in `eiffel bench hqos`, where nothing is ever throttled).
    quiet_until: Nanos,
}

impl Shaper {
    /// A shaper of the given geometry able to hold `capacity` throttled units.
    pub fn new(spec: ShaperSpec, capacity: usize) -> Result<Self, ConfigError> {
        let cfg = WheelConfig::with_horizon(spec.horizon.as_nanos(), spec.slots, capacity.max(1))
            .beyond_horizon(OutOfRange::Clamp);
        let wheel = TimingWheel::new(cfg).map_err(|source| ConfigError::Queue {
            what: "shaper".to_owned(),
            source,
        })?;
        let granularity = wheel.granularity();
        Ok(Shaper {
            wheel,
            granularity,
            quiet_until: Nanos::MAX,
        })
    }

    /// The shaping precision (slot granularity) in ns.
    #[must_use]
    pub fn granularity(&self) -> Nanos {
        self.granularity
    }

    /// Whether no unit is throttled.
    #[cfg(test)]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.wheel.is_empty()
    }

    /// Files `unit` for release at `at`; the handle moves or withdraws it.
    ///
    /// # Panics
    /// If more units are throttled than the capacity given at construction (the
    /// tree sizes it to the number of limited units, each filed at most once).
    pub fn throttle(&mut self, now: Nanos, at: Nanos, unit: Throttled) -> Handle {
        let key = u64::from(unit.node) << 32 | u64::from(unit.flow);
        let handle = match self.wheel.insert(now, at, key) {
            Ok(h) => h,
            Err(_) => unreachable!("the shaper holds every limited unit at most once"),
        };
        self.refresh();
        handle
    }

    /// Moves the unit filed under `handle` to release at `at`.
    pub fn reschedule(&mut self, handle: Handle, at: Nanos) {
        let moved = self.wheel.reschedule(handle, at);
        debug_assert!(moved.is_ok(), "rescheduling a released unit: {moved:?}");
        self.refresh();
    }

    /// Sets `quiet_until` to the start of the earliest filed slot.
    #[inline]
    fn refresh(&mut self) {
        self.quiet_until = self.wheel.next_due().unwrap_or(Nanos::MAX);
    }

    /// Withdraws the unit filed under `handle` before its release.
    pub fn withdraw(&mut self, handle: Handle) {
        let removed = self.wheel.remove(handle);
        debug_assert!(removed.is_some(), "withdrawing a released unit");
    }

    /// The next unit whose release time has come by `now`.
    #[inline]
    pub fn pop_due(&mut self, now: Nanos) -> Option<Throttled> {
        if now < self.quiet_until {
            return None;
        }
        let Some((_, key)) = self.wheel.pop_due(now) else {
            self.refresh();
            return None;
        };
        Some(Throttled {
            node: (key >> 32) as u32,
            flow: key as u32,
        })
    }

    /// The earliest release time filed.
    #[must_use]
    pub fn next_due(&self) -> Option<Nanos> {
        if self.quiet_until == Nanos::MAX {
            return None;
        }
        self.wheel.next_due()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcra_enforces_rate_and_burst() {
        // 8 Mbit/s = 1 byte per us; burst 3000 B with a 1000-byte MTU.
        let mut g = Gcra::new(
            RateLimit {
                rate: Rate::from_bps(8_000_000),
                burst: 3_000,
            },
            1_000,
        );
        let mut now = 0;
        let mut sent = 0u64;
        // Back to back from a full bucket: exactly burst bytes, then one per ms.
        while g.conforms(now) {
            g.on_send(now, 1_000);
            sent += 1_000;
        }
        assert_eq!(sent, 3_000, "burst");
        for _ in 0..1_000 {
            now = g.release_time().max(now);
            assert!(g.conforms(now));
            g.on_send(now, 1_000);
            sent += 1_000;
        }
        // r T + burst over the whole run.
        assert!(
            sent <= now * 8_000_000 / 8 / 1_000_000_000 + 3_000 + 1_000,
            "sent {sent} by {now}"
        );
        let rate = (sent - 3_000) as f64 * 8.0 / (now as f64 / 1e9);
        assert!((rate - 8e6).abs() / 8e6 < 0.002, "long-run rate {rate}");
    }

    #[test]
    fn gcra_cost_is_exact_at_high_rates() {
        // 100 Gbit/s: 1500 B cost 120 ns exactly; a million packets take 120 ms.
        let mut g = Gcra::new(
            RateLimit {
                rate: Rate::from_bps(100_000_000_000),
                burst: 1_500,
            },
            1_500,
        );
        for _ in 0..1_000_000 {
            let t = g.release_time();
            g.on_send(t, 1_500);
        }
        assert_eq!(g.release_time(), 120_000_000);
        // 64-byte packets at 100 Gbit/s cost 5.12 ns: a sender released at whole
        // nanoseconds keeps the fractions, and the 2^-16 ns fixed point loses under
        // 2^-16 ns per packet (under 16 ns in a million packets, 3 ppm).
        let mut g = Gcra::new(
            RateLimit {
                rate: Rate::from_bps(100_000_000_000),
                burst: 1_500,
            },
            1_500,
        );
        for _ in 0..1_000_000 {
            let t = g.release_time();
            g.on_send(t, 64);
        }
        assert_eq!(g.release_time(), 5_120_000, "1M packets of 5.12 ns");
    }

    #[test]
    fn send_then_held_is_on_send_then_conforms() {
        let limit = RateLimit {
            rate: Rate::from_bps(3_000_000_007),
            burst: 4_000,
        };
        let (mut a, mut b) = (Gcra::new(limit, 1_500), Gcra::new(limit, 1_500));
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut now = 0u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += x % 3_000;
            let (len, slack) = (64 + (x % 1_437) as u32, x % 50);
            a.on_send(now, len);
            let held = !a.conforms(now + slack);
            assert_eq!(b.send_then_held(now, len, slack), held);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn shaper_releases_in_time_order() {
        let mut s = Shaper::new(
            ShaperSpec {
                horizon: crate::time::Duration::from_nanos(1_000_000),
                slots: 1_000,
            },
            4,
        )
        .unwrap();
        s.throttle(
            0,
            5_000,
            Throttled {
                node: 1,
                flow: UNIT_NODE,
            },
        );
        s.throttle(0, 2_000, Throttled { node: 2, flow: 7 });
        assert_eq!(s.next_due(), Some(2_000));
        assert_eq!(s.pop_due(1_999), None);
        assert_eq!(s.pop_due(2_000), Some(Throttled { node: 2, flow: 7 }));
        assert_eq!(
            s.pop_due(10_000),
            Some(Throttled {
                node: 1,
                flow: UNIT_NODE
            })
        );
        assert!(s.is_empty());
    }
}
