//! Simulated time, durations and link rates.
//!
//! Time is an integer count of nanoseconds since the start of a run: the event
//! queue orders events exactly, and a run is bit-for-bit reproducible. A
//! transmission time is rounded up to the next nanosecond, so a link never sends
//! faster than its rate (a 64-byte frame at 40 Gbit/s takes 13 ns, not 12.8).

use core::fmt;
use core::ops::{Add, AddAssign, Sub};

/// An instant of simulated time: nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A length of simulated time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Delay(pub u64);

/// A link rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Time {
    /// The start of a run.
    pub const ZERO: Time = Time(0);
    /// Later than any event: "never".
    pub const NEVER: Time = Time(u64::MAX);

    /// Nanoseconds since the start.
    #[must_use]
    pub const fn ns(self) -> u64 {
        self.0
    }

    /// The time elapsed since `earlier` (zero if `earlier` is later).
    #[must_use]
    pub const fn since(self, earlier: Time) -> Delay {
        Delay(self.0.saturating_sub(earlier.0))
    }

    /// Seconds since the start, for reports.
    #[must_use]
    pub fn secs(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl Delay {
    /// No time.
    pub const ZERO: Delay = Delay(0);

    /// Nanoseconds.
    #[must_use]
    pub const fn ns(self) -> u64 {
        self.0
    }

    /// From microseconds.
    #[must_use]
    pub const fn from_us(us: u64) -> Delay {
        Delay(us * 1_000)
    }

    /// From milliseconds.
    #[must_use]
    pub const fn from_ms(ms: u64) -> Delay {
        Delay(ms * 1_000_000)
    }

    /// Milliseconds, for reports.
    #[must_use]
    pub fn ms(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Seconds, for reports.
    #[must_use]
    pub fn secs(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// `self * k`, saturating.
    #[must_use]
    pub const fn times(self, k: u64) -> Delay {
        Delay(self.0.saturating_mul(k))
    }
}

impl Rate {
    /// From gigabits per second.
    #[must_use]
    pub const fn gbps(g: u64) -> Rate {
        Rate(g * 1_000_000_000)
    }

    /// From megabits per second.
    #[must_use]
    pub const fn mbps(m: u64) -> Rate {
        Rate(m * 1_000_000)
    }

    /// Bits per second.
    #[must_use]
    pub const fn bps(self) -> u64 {
        self.0
    }

    /// Time to put `bytes` on the wire, rounded up to a whole nanosecond.
    #[must_use]
    #[inline]
    pub const fn tx_time(self, bytes: u64) -> Delay {
        // bytes * 8e9 fits in u128 for any size; the rate is at least 1 bit/s.
        let bits_ns = bytes as u128 * 8_000_000_000;
        let r = self.0 as u128;
        Delay(bits_ns.div_ceil(r) as u64)
    }

    /// Bytes sent at this rate in `d` (rounded down).
    #[must_use]
    pub const fn bytes_in(self, d: Delay) -> u64 {
        (self.0 as u128 * d.0 as u128 / 8_000_000_000) as u64
    }
}

impl Add<Delay> for Time {
    type Output = Time;
    #[inline]
    fn add(self, d: Delay) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Delay> for Time {
    #[inline]
    fn add_assign(&mut self, d: Delay) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Add for Delay {
    type Output = Delay;
    #[inline]
    fn add(self, d: Delay) -> Delay {
        Delay(self.0.saturating_add(d.0))
    }
}

impl AddAssign for Delay {
    #[inline]
    fn add_assign(&mut self, d: Delay) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub for Delay {
    type Output = Delay;
    #[inline]
    fn sub(self, d: Delay) -> Delay {
        Delay(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for Delay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0 as f64;
        if ns >= 1e9 {
            write!(f, "{:.3} s", ns / 1e9)
        } else if ns >= 1e6 {
            write!(f, "{:.3} ms", ns / 1e6)
        } else if ns >= 1e3 {
            write!(f, "{:.3} us", ns / 1e3)
        } else {
            write!(f, "{} ns", self.0)
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        if b >= 1e9 {
            write!(f, "{} Gbit/s", b / 1e9)
        } else if b >= 1e6 {
            write!(f, "{} Mbit/s", b / 1e6)
        } else if b >= 1e3 {
            write!(f, "{} kbit/s", b / 1e3)
        } else {
            write!(f, "{} bit/s", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmission_times_round_up() {
        assert_eq!(Rate::gbps(10).tx_time(1500), Delay(1_200));
        assert_eq!(Rate::gbps(40).tx_time(1500), Delay(300));
        assert_eq!(Rate::gbps(40).tx_time(64), Delay(13));
        assert_eq!(Rate::mbps(10).tx_time(1500), Delay(1_200_000));
        assert_eq!(Rate(1).tx_time(1), Delay(8_000_000_000));
        // A gigabyte at 10 Gbit/s: no overflow.
        assert_eq!(Rate::gbps(10).tx_time(1_000_000_000), Delay(800_000_000));
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = Rate::gbps(10);
        assert_eq!(r.bytes_in(r.tx_time(1500)), 1500);
        assert_eq!(r.bytes_in(Delay::from_ms(1)), 1_250_000);
    }

    #[test]
    fn saturating_arithmetic() {
        assert_eq!(Time::NEVER + Delay(5), Time::NEVER);
        assert_eq!(Time(5).since(Time(9)), Delay::ZERO);
        assert_eq!(Delay(3) - Delay(5), Delay::ZERO);
    }
}
