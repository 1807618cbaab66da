//! The tree's one shaper: a timing wheel of release events, and the [`Gcra`] every
//! rate limit is (the design is documented on [`Gcra`]).

use eiffel_queue::{Handle, OutOfRange, TimingWheel, WheelConfig};

use super::spec::{RateLimit, ShaperSpec};
use crate::scheduler::ConfigError;
use crate::time::{Nanos, Rate, Ticks, TICKS_PER_BYTE};

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
/// ## The representation
/// `TAT` only ever moves to `on_time(t) = t r - (r - 1)` (when the bucket is
/// full) or up by a packet's cost, so it is kept as the instant `anchor` the
/// bucket was last found full and the `bytes` sent since, `anchor`'s included:
/// `TAT = on_time(anchor) + 8 * 10^9 * bytes`, exactly. A byte's cost in whole
/// nanoseconds, rounded down and up (per limit, computed once), then bounds
/// `TAT` in 64-bit arithmetic: the bucket is surely full once every byte since
/// `anchor` is paid for at the rounded-up cost, surely not before they are paid
/// for at the rounded-down one, and the unit is surely not held while the bytes
/// beyond the tolerance are paid for at the rounded-up cost. Only a send in
/// between compares 128-bit ticks (never, for a rate dividing `8 * 10^9`
/// bit/s, which every byte costs a whole number of nanoseconds at). The
/// decisions are those of the formulas above, bit for bit. `bytes` holds
/// 1.8 * 10^19 bytes: 4.7 years of a limit sending at 1 Tbit/s without its
/// bucket ever filling (the ticks' own range above is shorter).
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
    cost: Cost,
    bucket: Bucket,
}

/// A limit's configuration: its rate, its tolerance and a byte's cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cost {
    rate: Rate,
    /// `burst - mtu` in bytes: `tau = 8 * 10^9 * extra` ticks.
    extra: u64,
    /// A byte's cost in nanoseconds, `8 * 10^9 / rate`, rounded down.
    byte_ns_floor: u64,
    /// The same, rounded up.
    byte_ns_ceil: u64,
}

/// A limit's state, `TAT` as described on [`Gcra`]: what a [`Cost`] reads and
/// writes, kept apart where many limits share one configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bucket {
    /// When a send last found the bucket full.
    anchor: Nanos,
    /// Bytes sent since `anchor`, its own send's included.
    bytes: u64,
}

impl Gcra {
    /// A limit of `limit.rate` bits/s with `limit.burst` bytes of burst (at least
    /// `mtu`).
    #[must_use]
    pub fn new(limit: RateLimit, mtu: u32) -> Self {
        Gcra {
            cost: Cost::new(limit, mtu),
            bucket: Bucket::default(),
        }
    }

    /// A limit that nothing reads: the placeholder of a node without one.
    pub(crate) const UNUSED: Gcra = Gcra {
        cost: Cost::UNUSED,
        bucket: Bucket {
            anchor: 0,
            bytes: 0,
        },
    };

    /// Whether the unit may send at `now`.
    #[inline]
    #[must_use]
    pub fn conforms(&self, now: Nanos) -> bool {
        self.cost.conforms(&self.bucket, now)
    }

    /// The earliest time the unit may send (at or before `now` if it may now).
    #[inline]
    #[must_use]
    pub fn release_time(&self) -> Nanos {
        self.cost.release_time(&self.bucket)
    }

    /// Accounts `len` bytes sent at `now` (less than 1 ns after `TAT` counts as
    /// on time: see the module docs).
    #[inline]
    pub fn on_send(&mut self, now: Nanos, len: u32) {
        self.cost.send_bytes(&mut self.bucket, now, u64::from(len));
    }

    /// [`Gcra::on_send`] of `len` bytes, in one packet or several sent at
    /// `now` after another send at `now` (the same state either way: the
    /// bucket is not refilled within an instant).
    #[inline]
    pub(crate) fn send_bytes(&mut self, now: Nanos, len: u64) {
        self.cost.send_bytes(&mut self.bucket, now, len);
    }

    /// Accounts `len` bytes sent at `now` ([`Gcra::on_send`]) and tells
    /// whether the unit is then held beyond `slack` (`!conforms(now + slack)`).
    #[inline]
    pub(crate) fn send_then_held(&mut self, now: Nanos, len: u32, slack: Nanos) -> bool {
        self.cost.send_then_held(&mut self.bucket, now, len, slack)
    }

    /// Bytes the unit may still send at `now`, after a send at `now`, and not
    /// be held beyond `slack` (see [`Cost::room`]).
    pub(crate) fn room(&self, now: Nanos, slack: Nanos) -> u64 {
        self.cost.room(&self.bucket, now, slack)
    }

    /// The configured rate.
    #[must_use]
    pub fn rate(&self) -> Rate {
        self.cost.rate
    }
}

impl Cost {
    /// The configuration of a limit of `limit.rate` bits/s with
    /// `limit.burst` bytes of burst (at least `mtu`).
    pub(crate) fn new(limit: RateLimit, mtu: u32) -> Self {
        let bps = limit.rate.bps().max(1);
        Cost {
            rate: Rate::from_bps(bps),
            extra: limit.burst.saturating_sub(u64::from(mtu)),
            byte_ns_floor: TICKS_PER_BYTE as u64 / bps,
            byte_ns_ceil: (TICKS_PER_BYTE as u64).div_ceil(bps),
        }
    }

    /// The configuration of [`Gcra::UNUSED`].
    pub(crate) const UNUSED: Cost = Cost {
        rate: Rate::from_bps(u64::MAX),
        extra: 0,
        byte_ns_floor: 0,
        byte_ns_ceil: 1,
    };

    /// `now r - (r - 1)` ticks (0 at 0): the earliest `TAT` of a send at `now`.
    #[inline]
    fn on_time(&self, now: Nanos) -> Ticks {
        let r = u128::from(self.rate.bps());
        (u128::from(now) * r).saturating_sub(r - 1)
    }

    /// The theoretical arrival time of `b`, in ticks.
    #[inline]
    fn tat(&self, b: &Bucket) -> Ticks {
        self.on_time(b.anchor) + Rate::tx_ticks(b.bytes)
    }

    /// `tau`, in ticks.
    #[inline]
    fn tau(&self) -> Ticks {
        Rate::tx_ticks(self.extra)
    }

    /// Whether a unit of state `b` may send at `now`.
    #[inline]
    pub(crate) fn conforms(&self, b: &Bucket, now: Nanos) -> bool {
        self.surely_conforms(b, now) || self.rate.ticks(now) + self.tau() >= self.tat(b)
    }

    /// Whether the bytes beyond the tolerance are paid for by `now` at the
    /// rounded-up cost: then `TAT <= anchor r + 8 * 10^9 * bytes <= now r +
    /// tau` and the unit conforms (`false` decides nothing).
    #[inline]
    fn surely_conforms(&self, b: &Bucket, now: Nanos) -> bool {
        let Some(e) = now.checked_sub(b.anchor) else {
            return false;
        };
        b.bytes <= self.extra
            || b.bytes
                .saturating_sub(self.extra)
                .saturating_mul(self.byte_ns_ceil)
                < e
    }

    /// The earliest time a unit of state `b` may send (at or before `now` if
    /// it may now).
    #[inline]
    pub(crate) fn release_time(&self, b: &Bucket) -> Nanos {
        self.rate.nanos_ceil(self.tat(b).saturating_sub(self.tau()))
    }

    /// Accounts `len` bytes sent at `now` in `b`, in one packet or several
    /// sent at `now` after another send at `now` (the same state either way:
    /// the bucket is not refilled within an instant).
    #[inline]
    pub(crate) fn send_bytes(&self, b: &mut Bucket, now: Nanos, len: u64) {
        if now <= b.anchor {
            // `on_time(now) <= on_time(anchor) <= TAT`: not full.
            b.bytes += len;
            return;
        }
        // `on_time(now) - on_time(anchor)` is `(now - anchor) r` (at most that
        // for `anchor` 0, at least that minus `r - 1`), to be compared with the
        // `8 * 10^9 * bytes` ticks of `TAT` past `on_time(anchor)`: full for sure
        // when `now - anchor > bytes * byte_ns_ceil`, surely not when it is under
        // `bytes * byte_ns_floor`. (A product that overflows decides nothing.)
        let e = now - b.anchor;
        let full = if e > b.bytes.saturating_mul(self.byte_ns_ceil) {
            true
        } else if e < b.bytes.saturating_mul(self.byte_ns_floor) {
            false
        } else {
            self.on_time(now) >= self.tat(b)
        };
        if full {
            b.anchor = now;
            b.bytes = len;
        } else {
            b.bytes += len;
        }
    }

    /// Accounts `len` bytes sent at `now` in `b` and tells whether the unit
    /// is then held beyond `slack` (`!conforms(now + slack)`).
    #[inline]
    pub(crate) fn send_then_held(
        &self,
        b: &mut Bucket,
        now: Nanos,
        len: u32,
        slack: Nanos,
    ) -> bool {
        self.send_bytes(b, now, u64::from(len));
        if self.surely_conforms(b, now) {
            return false;
        }
        let r = u128::from(self.rate.bps());
        u128::from(now) * r + u128::from(slack) * r + self.tau() < self.tat(b)
    }

    /// Bytes a unit of state `b` may still send at `now`, after a send at
    /// `now`, and not be held beyond `slack` (`!conforms(now + slack)` stays
    /// false): the bytes of `TAT`'s way up to `(now + slack) r + tau`.
    pub(crate) fn room(&self, b: &Bucket, now: Nanos, slack: Nanos) -> u64 {
        let r = u128::from(self.rate.bps());
        let allowed = (u128::from(now) + u128::from(slack)) * r + self.tau();
        let free = allowed.saturating_sub(self.tat(b));
        // A room below 2^64 ticks (2.3 GB) divides in 64 bits, by a constant.
        match u64::try_from(free) {
            Ok(ticks) => ticks / TICKS_PER_BYTE as u64,
            Err(_) => u64::try_from(free / TICKS_PER_BYTE).unwrap_or(u64::MAX),
        }
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

    /// One xorshift step: the tests' stream of times and lengths.
    fn step(x: &mut u64) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
    }

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

    /// `room` is exact: after a send at `now`, that many more bytes at `now`
    /// leave the unit conforming at `now + slack`, one more does not; and
    /// bytes sent at one instant leave the same state in one call or many.
    #[test]
    fn room_is_the_last_byte_that_conforms() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for bps in [
            1,
            999,
            1_000_000,
            3_000_000_007,
            8_000_000_000,
            999_999_999_999,
        ] {
            let limit = RateLimit {
                rate: Rate::from_bps(bps),
                burst: 9_000,
            };
            let mut g = Gcra::new(limit, 1_500);
            let mut now = 0u64;
            for _ in 0..2_000 {
                step(&mut x);
                now += x % 5_000;
                let slack = x % 64;
                g.on_send(now, 64 + (x % 1_437) as u32);
                let room = g.room(now, slack);
                if !g.conforms(now + slack) {
                    // Held already (a run never starts above a held node).
                    assert_eq!(room, 0);
                    continue;
                }
                if room > 1 << 40 {
                    continue;
                }
                let (mut fits, mut over) = (g, g);
                fits.send_bytes(now, room);
                over.send_bytes(now, room + 1);
                assert!(fits.conforms(now + slack), "{bps} bit/s: room {room} held");
                assert!(
                    !over.conforms(now + slack),
                    "{bps} bit/s: room {room} + 1 conforms"
                );
                let mut one_by_one = g;
                for _ in 0..room.min(3) {
                    one_by_one.on_send(now, 1);
                }
                let mut at_once = g;
                at_once.send_bytes(now, room.min(3));
                assert_eq!(one_by_one, at_once);
            }
        }
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
            step(&mut x);
            now += x % 3_000;
            let (len, slack) = (64 + (x % 1_437) as u32, x % 50);
            a.on_send(now, len);
            let held = !a.conforms(now + slack);
            assert_eq!(b.send_then_held(now, len, slack), held);
            assert_eq!(a, b);
        }
    }

    /// The GCRA as its formulas state it, `TAT` in 128-bit ticks.
    struct Model {
        r: u128,
        tau: u128,
        tat: u128,
    }

    impl Model {
        fn send(&mut self, now: Nanos, len: u32) {
            let on_time = (u128::from(now) * self.r).saturating_sub(self.r - 1);
            self.tat = self.tat.max(on_time) + Rate::tx_ticks(u64::from(len));
        }

        fn conforms(&self, now: Nanos) -> bool {
            u128::from(now) * self.r + self.tau >= self.tat
        }

        fn release_time(&self) -> Nanos {
            let t = self.tat.saturating_sub(self.tau);
            u64::try_from(t.div_ceil(self.r)).unwrap_or(u64::MAX)
        }
    }

    #[test]
    fn gcra_matches_its_formulas_bit_for_bit() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            step(&mut x);
            x
        };
        let rates = [
            1,
            7,
            5_000_000,
            900_000_000,
            1_000_000_000,
            3_000_000_007,
            8_000_000_000,
            100_000_000_000,
            1_000_000_000_000,
        ];
        for &bps in &rates {
            for burst in [1_500, 1_501, 4_000, 125_000] {
                let limit = RateLimit {
                    rate: Rate::from_bps(bps),
                    burst,
                };
                let mut g = Gcra::new(limit, 1_500);
                let mut m = Model {
                    r: u128::from(bps),
                    tau: Rate::tx_ticks(burst - 1_500),
                    tat: 0,
                };
                // Release times, bursts at one instant, gaps, rarely a step back.
                let mut now = 0u64;
                for _ in 0..20_000 {
                    let x = next();
                    now = match x % 8 {
                        0 => now,
                        1 => m.release_time().max(now),
                        2 => now.saturating_sub(x >> 60),
                        3 => now + (x >> 20) % 100_000_000,
                        _ => now + (x >> 20) % 2_000,
                    };
                    let (len, slack) = (1 + (x >> 40) as u32 % 1_500, (x >> 8) % 64 * (x >> 63));
                    let held = {
                        m.send(now, len);
                        !m.conforms(now + slack)
                    };
                    assert_eq!(
                        g.send_then_held(now, len, slack),
                        held,
                        "{bps} {burst} {now}"
                    );
                    assert_eq!(g.cost.tat(&g.bucket), m.tat, "{bps} {burst} {now}");
                    assert_eq!(g.release_time(), m.release_time());
                    assert_eq!(g.conforms(now), m.conforms(now));
                }
            }
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
