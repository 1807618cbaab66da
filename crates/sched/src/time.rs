//! Time, durations and rates, and the one conversion between bytes, rate and time.
//!
//! - An *instant* is a [`Nanos`]: nanoseconds from a monotonic origin the caller
//!   chooses. Schedulers never read a clock; every operation that depends on time
//!   takes `now` as an argument, so the same code runs in virtual time (tests,
//!   `eiffel run`) and in real time (`eiffel shape`). Instants stay a plain `u64`
//!   because they are the per-packet currency: every enqueue and dequeue takes one
//!   and packets carry two.
//! - A configured *span of time* (a shaper's horizon, a calendar's day, a flow
//!   table's idle timeout) is a [`Duration`].
//! - A *rate* (a limit, a reservation, a link) is a [`Rate`] in bits per second.
//!
//! # Bytes, rate and time
//! Sending `b` bytes at `r` bit/s takes `8 * 10^9 * b / r` ns, rarely a whole
//! number. Every place that converts between bytes, a rate and time does it
//! here, in one of two exact forms, and rounds only where it says so:
//!
//! - **Ticks** ([`Ticks`]): time counted in units of `1/r` ns. A nanosecond is
//!   `r` ticks ([`Rate::ticks`]) and a byte is [`TICKS_PER_BYTE`] = `8 * 10^9`
//!   ticks whatever the rate ([`Rate::tx_ticks`]), so transmission times add up
//!   without any rounding; only the way back to nanoseconds rounds
//!   ([`Rate::nanos_floor`], [`Rate::nanos_ceil`]). For a clock tied to one rate:
//!   the tree's GCRA limits and the simulator's link. A `u128` of ticks holds
//!   10^15 ns (11 days) at 10^14 bit/s with room to spare.
//! - **Fixed point** ([`Rate::tx_time_fixed`], [`Rate::bytes_in_fixed`]): time in
//!   units of `2^-k` ns, for clocks shared by several rates (the calendar
//!   policer's units, each at its own rate) or whose rate changes (PSPAT's
//!   link). The caller picks `k` and the rounding: down where a cost may be a
//!   hair short (the error stays below `2^-k` ns per conversion), up where the
//!   clock must never run faster than the rate.
//!
//! [`Rate::tx_time`] and [`Rate::tx_time_ceil`] give whole nanoseconds directly,
//! rounded down and up.
//!
//! ```
//! use eiffel_sched::time::{Duration, Rate, Rounding, TICKS_PER_BYTE};
//!
//! let r = Rate::from_gbps(100);
//! // 64 bytes at 100 Gbit/s take 5.12 ns: exact in ticks, rounded in ns.
//! assert_eq!(Rate::tx_ticks(64), 64 * TICKS_PER_BYTE);
//! assert_eq!(r.nanos_floor(Rate::tx_ticks(64)), 5);
//! assert_eq!(r.nanos_ceil(Rate::tx_ticks(64)), 6);
//! assert_eq!(r.tx_time(64), Duration::from_nanos(5));
//! // In 2^-16 ns fixed point: 5.12 * 65536 = 335544.32.
//! assert_eq!(r.tx_time_fixed(64, 16, Rounding::Down), 335_544);
//! assert_eq!(r.tx_time_fixed(64, 16, Rounding::Up), 335_545);
//! // And back: what the rate sends in that time.
//! assert_eq!(r.bytes_in(Duration::from_micros(1)), 12_500);
//! ```

use core::fmt;

/// An instant: nanoseconds from a monotonic origin chosen by the caller (see the
/// [module docs](self)).
pub type Nanos = u64;

/// Time in units of `1 / rate` nanoseconds at some rate (see the
/// [module docs](self)).
pub type Ticks = u128;

/// Ticks per byte: `8 * 10^9`, whatever the rate.
pub const TICKS_PER_BYTE: Ticks = 8_000_000_000;

/// A span of time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

impl Duration {
    /// No time.
    pub const ZERO: Duration = Duration(0);
    /// The longest span representable.
    pub const MAX: Duration = Duration(u64::MAX);

    /// `ns` nanoseconds.
    #[must_use]
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }

    /// `us` microseconds (saturating).
    #[must_use]
    pub const fn from_micros(us: u64) -> Self {
        Duration(us.saturating_mul(1_000))
    }

    /// `ms` milliseconds (saturating).
    #[must_use]
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms.saturating_mul(1_000_000))
    }

    /// `s` seconds (saturating).
    #[must_use]
    pub const fn from_secs(s: u64) -> Self {
        Duration(s.saturating_mul(1_000_000_000))
    }

    /// The span in nanoseconds.
    #[must_use]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The span in seconds, as a float (for reports).
    #[must_use]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Whether the span is empty.
    #[must_use]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// The instant this span after `t` (saturating).
    #[must_use]
    pub const fn after(self, t: Nanos) -> Nanos {
        t.saturating_add(self.0)
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        std::time::Duration::from_nanos(d.0)
    }
}

impl From<std::time::Duration> for Duration {
    /// Saturates at [`Duration::MAX`] (584 years).
    fn from(d: std::time::Duration) -> Self {
        Duration(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl Duration {
    /// `k` times this span (saturating): a timer's backoff, a round's start.
    #[must_use]
    pub const fn times(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
}

impl core::ops::Add for Duration {
    type Output = Duration;
    /// Saturating.
    #[inline]
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

impl core::ops::AddAssign for Duration {
    /// Saturating.
    #[inline]
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl core::ops::Sub for Duration {
    type Output = Duration;
    /// Saturating at zero.
    #[inline]
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for Duration {
    /// The largest unit that keeps the value at least 1: `"15.26 us"`, `"2 s"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&fmt_nanos(self.0 as f64))
    }
}

/// Nanoseconds, possibly fractional (a measured mean), in the largest unit that
/// keeps the value at least 1, to three significant digits: `"15.26 us"`.
#[must_use]
pub fn fmt_nanos(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "us")
    } else {
        (ns, "ns")
    };
    format!("{} {unit}", trim3(v))
}

/// Bits per second, possibly fractional (a measured throughput), in the largest
/// decimal unit that keeps the value at least 1: `"7 Mbit/s"`, `"1.25 Gbit/s"`.
#[must_use]
pub fn fmt_bps(bps: f64) -> String {
    let (v, unit) = if bps >= 1e12 {
        (bps / 1e12, "Tbit/s")
    } else if bps >= 1e9 {
        (bps / 1e9, "Gbit/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mbit/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kbit/s")
    } else {
        (bps, "bit/s")
    };
    format!("{} {unit}", trim3(v))
}

/// Which way a conversion rounds a fraction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// Toward zero.
    Down,
    /// Away from zero.
    Up,
}

/// A rate in bits per second.
///
/// Conversions treat a zero rate as 1 bit/s (the slowest rate), so they never
/// divide by zero; configurations refuse zero rates where they mean "never".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(u64);

impl Rate {
    /// `bps` bits per second.
    #[must_use]
    pub const fn from_bps(bps: u64) -> Self {
        Rate(bps)
    }

    /// `k` kbit/s (10^3 bit/s, saturating).
    #[must_use]
    pub const fn from_kbps(k: u64) -> Self {
        Rate(k.saturating_mul(1_000))
    }

    /// `m` Mbit/s (10^6 bit/s, saturating).
    #[must_use]
    pub const fn from_mbps(m: u64) -> Self {
        Rate(m.saturating_mul(1_000_000))
    }

    /// `g` Gbit/s (10^9 bit/s, saturating).
    #[must_use]
    pub const fn from_gbps(g: u64) -> Self {
        Rate(g.saturating_mul(1_000_000_000))
    }

    /// The rate in bits per second.
    #[must_use]
    pub const fn bps(self) -> u64 {
        self.0
    }

    /// Whether the rate is zero.
    #[must_use]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `w` times this rate (saturating): a weighted unit's share.
    #[must_use]
    pub const fn times(self, w: u64) -> Rate {
        Rate(self.0.saturating_mul(w))
    }

    /// The rate as a divisor: at least 1.
    #[inline]
    const fn divisor(self) -> u128 {
        if self.0 == 0 {
            1
        } else {
            self.0 as u128
        }
    }

    /// Ticks of `bytes` (at any rate): `bytes * TICKS_PER_BYTE`, exact.
    #[inline]
    #[must_use]
    pub const fn tx_ticks(bytes: u64) -> Ticks {
        bytes as Ticks * TICKS_PER_BYTE
    }

    /// Instant or span `ns` in ticks of this rate: `ns * rate`, exact.
    #[inline]
    #[must_use]
    pub const fn ticks(self, ns: Nanos) -> Ticks {
        ns as Ticks * self.divisor()
    }

    /// Ticks of this rate in nanoseconds, rounded down (saturating).
    #[inline]
    #[must_use]
    pub const fn nanos_floor(self, t: Ticks) -> Nanos {
        // NB: a 64-bit division when the ticks fit (every packet's cost does), a
        // fraction of the 128-bit one's cycles.
        if t <= u64::MAX as u128 {
            return t as u64 / self.divisor() as u64;
        }
        saturate(t / self.divisor())
    }

    /// Ticks of this rate in nanoseconds, rounded up (saturating).
    #[inline]
    #[must_use]
    pub const fn nanos_ceil(self, t: Ticks) -> Nanos {
        if t <= u64::MAX as u128 {
            return (t as u64).div_ceil(self.divisor() as u64);
        }
        saturate(t.div_ceil(self.divisor()))
    }

    /// The time to send `bytes`, rounded down to a nanosecond.
    #[inline]
    #[must_use]
    pub const fn tx_time(self, bytes: u64) -> Duration {
        Duration(self.nanos_floor(Rate::tx_ticks(bytes)))
    }

    /// The time to send `bytes`, rounded up to a nanosecond.
    #[inline]
    #[must_use]
    pub const fn tx_time_ceil(self, bytes: u64) -> Duration {
        Duration(self.nanos_ceil(Rate::tx_ticks(bytes)))
    }

    /// The time to send `bytes` in units of `2^-frac_bits` ns, rounded as asked.
    ///
    /// # Panics
    /// In debug builds, if the result overflows a `u128` (more than about 2^(88 -
    /// `frac_bits`) bytes).
    #[inline]
    #[must_use]
    pub const fn tx_time_fixed(self, bytes: u64, frac_bits: u32, round: Rounding) -> u128 {
        let scaled = Rate::tx_ticks(bytes) << frac_bits;
        match round {
            Rounding::Down => scaled / self.divisor(),
            Rounding::Up => scaled.div_ceil(self.divisor()),
        }
    }

    /// How many spans of `period` sending `bytes` takes, rounded up (saturating):
    /// `ceil(8 * 10^9 * bytes / (rate * period))`, exact.
    #[inline]
    #[must_use]
    pub const fn tx_periods_ceil(self, bytes: u64, period: Duration) -> u64 {
        let period = if period.0 == 0 { 1 } else { period.0 as u128 };
        saturate(Rate::tx_ticks(bytes).div_ceil(self.divisor() * period))
    }

    /// The bytes this rate sends in `t` units of `2^-frac_bits` ns, rounded down.
    #[inline]
    #[must_use]
    pub const fn bytes_in_fixed(self, t: u128, frac_bits: u32) -> u128 {
        t * self.0 as u128 / (TICKS_PER_BYTE << frac_bits)
    }

    /// The bytes this rate sends in `d`, rounded down.
    #[inline]
    #[must_use]
    pub const fn bytes_in(self, d: Duration) -> u64 {
        saturate(self.ticks(d.0) / TICKS_PER_BYTE)
    }
}

impl fmt::Display for Rate {
    /// The largest decimal unit that keeps the value at least 1: `"7 Mbit/s"`,
    /// `"1.25 Gbit/s"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&fmt_bps(self.0 as f64))
    }
}

/// `t` as a `u64`, saturating.
#[inline]
const fn saturate(t: u128) -> u64 {
    if t > u64::MAX as u128 {
        u64::MAX
    } else {
        t as u64
    }
}

/// Three significant digits at most, trailing zeros removed.
fn trim3(v: f64) -> String {
    let digits = if v >= 100.0 {
        1
    } else if v >= 10.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.digits$}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_gigabit_sends_a_byte_in_eight_nanoseconds() {
        let r = Rate::from_gbps(1);
        assert_eq!(r.tx_time(1500), Duration::from_micros(12));
        assert_eq!(r.ticks(12_000), Rate::tx_ticks(1500));
        // 3 Gbit/s: a byte takes 8/3 ns; exact in ticks, rounded in ns.
        let r = Rate::from_gbps(3);
        assert_eq!(Rate::tx_ticks(3), r.ticks(8));
        assert_eq!(r.nanos_floor(Rate::tx_ticks(1)), 2);
        assert_eq!(r.nanos_ceil(Rate::tx_ticks(1)), 3);
        assert_eq!(r.tx_time_ceil(1), Duration::from_nanos(3));
        // 3 bytes at 3 bit/s: 8 s, that is 3 spans of 3 s.
        let r = Rate::from_bps(3);
        assert_eq!(r.tx_periods_ceil(3, Duration::from_secs(3)), 3);
        assert_eq!(r.tx_periods_ceil(3, Duration::from_secs(4)), 2);
    }

    #[test]
    fn fixed_point_rounds_as_asked_and_converts_back() {
        // 8 Mbit/s: one byte per microsecond.
        let r = Rate::from_mbps(8);
        assert_eq!(r.tx_time_fixed(1500, 16, Rounding::Down) >> 16, 1_500_000);
        // 64 bytes at 100 Gbit/s: 5.12 ns.
        let r = Rate::from_gbps(100);
        assert_eq!(
            r.tx_time_fixed(64, 16, Rounding::Down),
            (512u128 << 16) / 100
        );
        assert_eq!(
            r.tx_time_fixed(64, 16, Rounding::Up),
            ((512u128 << 16) / 100) + 1
        );
        // A per-byte cost rounded up never makes the clock faster than the rate.
        let per_byte = Rate::from_bps(3).tx_time_fixed(1, 32, Rounding::Up);
        assert!(per_byte * 3 >= (8_000_000_000u128 << 32));
        // Back to bytes: what 1 ms at 8 Mbit/s sends, and in fixed point.
        let r = Rate::from_mbps(8);
        assert_eq!(r.bytes_in(Duration::from_millis(1)), 1_000);
        assert_eq!(r.bytes_in_fixed(1_000_000 << 16, 16), 1_000);
        assert_eq!(r.bytes_in_fixed((1_000_000 << 16) - 1, 16), 999);
    }

    #[test]
    fn conversions_survive_extremes() {
        // A zero rate converts as 1 bit/s.
        assert_eq!(Rate::from_bps(0).tx_time(1), Duration::from_secs(8));
        // Saturation instead of wrapping.
        assert_eq!(Rate::from_bps(1).tx_time(u64::MAX), Duration::MAX);
        assert_eq!(Rate::from_bps(u64::MAX).times(2).bps(), u64::MAX);
        assert_eq!(Duration::from_secs(u64::MAX), Duration::MAX);
        assert_eq!(Duration::from_nanos(5).after(u64::MAX - 1), u64::MAX);
    }

    #[test]
    fn display_picks_the_unit() {
        assert_eq!(Rate::from_mbps(7).to_string(), "7 Mbit/s");
        assert_eq!(Rate::from_bps(1_250_000_000).to_string(), "1.25 Gbit/s");
        assert_eq!(Duration::from_nanos(15_258).to_string(), "15.26 us");
        assert_eq!(Duration::from_secs(2).to_string(), "2 s");
        let std: std::time::Duration = Duration::from_millis(3).into();
        assert_eq!(Duration::from(std), Duration::from_millis(3));
    }
}
