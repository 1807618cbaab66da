//! Simulated instants; durations and link rates are `eiffel_sched`'s
//! [`Duration`] and [`Rate`], and every conversion between bytes, a rate and
//! time goes through them.
//!
//! Time is an integer count of nanoseconds since the start of a run: the event
//! queue orders events exactly, and a run is bit-for-bit reproducible. A
//! transmission time is rounded up to the next nanosecond
//! ([`Rate::tx_time_ceil`]), so a link never sends faster than its rate (a
//! 64-byte frame at 40 Gbit/s takes 13 ns, not 12.8).

use core::ops::{Add, AddAssign};

pub use eiffel_sched::time::{Duration, Rate};

/// An instant of simulated time: nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

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
    pub const fn since(self, earlier: Time) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// Seconds since the start, for reports.
    #[must_use]
    pub fn secs(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

/// `d` in milliseconds, for reports.
#[must_use]
pub fn ms(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

impl Add<Duration> for Time {
    type Output = Time;
    #[inline]
    fn add(self, d: Duration) -> Time {
        Time(d.after(self.0))
    }
}

impl AddAssign<Duration> for Time {
    #[inline]
    fn add_assign(&mut self, d: Duration) {
        self.0 = d.after(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmission_times_round_up() {
        let ns = Duration::from_nanos;
        assert_eq!(Rate::from_gbps(10).tx_time_ceil(1500), ns(1_200));
        assert_eq!(Rate::from_gbps(40).tx_time_ceil(1500), ns(300));
        assert_eq!(Rate::from_gbps(40).tx_time_ceil(64), ns(13));
        assert_eq!(Rate::from_mbps(10).tx_time_ceil(1500), ns(1_200_000));
        assert_eq!(Rate::from_bps(1).tx_time_ceil(1), ns(8_000_000_000));
        // A gigabyte at 10 Gbit/s: no overflow.
        assert_eq!(
            Rate::from_gbps(10).tx_time_ceil(1_000_000_000),
            ns(800_000_000)
        );
    }

    #[test]
    fn saturating_arithmetic() {
        assert_eq!(Time::NEVER + Duration::from_nanos(5), Time::NEVER);
        assert_eq!(Time(5).since(Time(9)), Duration::ZERO);
        assert_eq!(ms(Duration::from_micros(1500)), 1.5);
        let (a, b) = (Duration::from_nanos(7), Duration::from_nanos(5));
        assert_eq!(a + b, Duration::from_nanos(12));
        assert_eq!(b - a, Duration::ZERO);
        assert_eq!(Duration::MAX + a, Duration::MAX);
        assert_eq!(a.times(3), Duration::from_nanos(21));
        assert_eq!(Duration::MAX.times(2), Duration::MAX);
        let mut c = a;
        c += b;
        assert_eq!(c, Duration::from_nanos(12));
    }
}
