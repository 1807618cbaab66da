//! An emulated link of constant rate, with exact integer time.
//!
//! Transmitting `l` bytes at `R` bits/s takes `8 l / R` seconds, rarely a whole
//! number of nanoseconds. The simulator therefore counts time in [`Ticks`] of
//! `1 / R` nanoseconds ([`eiffel_sched::time`]): a nanosecond is `R` ticks and a
//! byte `8 * 10^9` ticks, so arrival times, transmission starts and ends are all
//! exact integers. Schedulers, which see [`Nanos`], get the time rounded down.

use eiffel_sched::time::{Nanos, Rate};
pub use eiffel_sched::time::{Ticks, TICKS_PER_BYTE};

/// A link that sends `rate_bps` bits per second, one packet at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    rate: Rate,
}

impl Link {
    /// A link of `rate_bps` bits per second.
    ///
    /// # Panics
    /// If `rate_bps` is zero.
    #[must_use]
    pub const fn new(rate_bps: u64) -> Self {
        assert!(rate_bps > 0, "a link needs a positive rate");
        Link {
            rate: Rate::from_bps(rate_bps),
        }
    }

    /// The rate in bits per second.
    #[must_use]
    pub const fn rate_bps(&self) -> u64 {
        self.rate.bps()
    }

    /// The rate.
    #[must_use]
    pub const fn rate(&self) -> Rate {
        self.rate
    }

    /// The rate in bytes per nanosecond (`R` of the papers' formulas).
    #[must_use]
    pub fn bytes_per_ns(&self) -> f64 {
        self.rate.bps() as f64 / 8e9
    }

    /// The time to transmit `len` bytes.
    #[must_use]
    pub const fn tx_ticks(&self, len: u32) -> Ticks {
        Rate::tx_ticks(len as u64)
    }

    /// A time in nanoseconds as ticks.
    #[must_use]
    pub const fn ticks(&self, ns: Nanos) -> Ticks {
        self.rate.ticks(ns)
    }

    /// Ticks as nanoseconds, rounded down (what a scheduler sees).
    #[must_use]
    pub const fn nanos_floor(&self, t: Ticks) -> Nanos {
        self.rate.nanos_floor(t)
    }

    /// Ticks as fractional nanoseconds.
    #[must_use]
    pub fn nanos(&self, t: Ticks) -> f64 {
        t as f64 / self.rate.bps() as f64
    }

    /// Bytes the link sends in `t` ticks (fractional).
    #[must_use]
    pub fn bytes_in(&self, t: Ticks) -> f64 {
        t as f64 / TICKS_PER_BYTE as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_gigabit_sends_a_byte_in_eight_nanoseconds() {
        let l = Link::new(1_000_000_000);
        assert_eq!(l.nanos(l.tx_ticks(1500)), 12_000.0);
        assert_eq!(l.ticks(12_000), l.tx_ticks(1500));
        assert_eq!(l.bytes_per_ns(), 0.125);
        // 3 Gbit/s: 1 byte takes 8/3 ns; time stays exact in ticks.
        let l = Link::new(3_000_000_000);
        assert_eq!(l.tx_ticks(3), l.ticks(8));
        assert_eq!(l.nanos_floor(l.tx_ticks(1)), 2);
    }
}
