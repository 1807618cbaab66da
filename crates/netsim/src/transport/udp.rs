//! Datagram sources: constant bit rate and Pareto on/off (QFQ section 6 uses
//! both: CBR flows under observation and on/off best-effort cross traffic), and
//! the receive-side delay statistics.

use rand::Rng;

use crate::time::{Duration, Rate, Time};

/// How a datagram source emits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UdpPattern {
    /// One packet every `len / rate`.
    Cbr,
    /// Alternating on and off periods with Pareto-distributed lengths of means
    /// `on` and `off` and shape `shape`; packets at `rate` while on.
    OnOff {
        /// Mean on period.
        on: Duration,
        /// Mean off period.
        off: Duration,
        /// Pareto shape (above 1).
        shape: f64,
    },
}

/// A datagram source.
#[derive(Clone, Debug, PartialEq)]
pub struct UdpSource {
    rate: Rate,
    len: u16,
    pattern: UdpPattern,
    stop: Time,
    /// End of the current on period.
    on_until: Time,
    /// Packets sent.
    pub sent: u32,
}

/// A Pareto-distributed length of mean `mean` and shape `shape`
/// (`x_m = mean (shape - 1) / shape`, `x = x_m / U^(1/shape)`).
pub fn pareto<R: Rng>(rng: &mut R, mean: Duration, shape: f64) -> Duration {
    let xm = mean.as_nanos() as f64 * (shape - 1.0) / shape;
    let u: f64 = 1.0 - rng.gen::<f64>();
    Duration::from_nanos((xm / u.powf(1.0 / shape)).min(1e15) as u64)
}

impl UdpSource {
    /// A source of `len`-byte packets at `rate` until `stop`.
    #[must_use]
    pub fn new(rate: Rate, len: u16, pattern: UdpPattern, stop: Time) -> UdpSource {
        UdpSource {
            rate,
            len,
            pattern,
            stop,
            on_until: Time::NEVER,
            sent: 0,
        }
    }

    /// Bytes per packet.
    #[must_use]
    pub fn len(&self) -> u16 {
        self.len
    }

    /// Whether the source sends zero-length packets (never: kept for clippy's
    /// `len` convention).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// At start: when the first packet goes out (an on/off source first draws
    /// an on period).
    pub fn first<R: Rng>(&mut self, now: Time, rng: &mut R) -> Option<Time> {
        if let UdpPattern::OnOff { on, .. } = self.pattern {
            self.on_until = now + pareto(rng, on, self.shape());
        }
        (now < self.stop).then_some(now)
    }

    fn shape(&self) -> f64 {
        match self.pattern {
            UdpPattern::OnOff { shape, .. } => shape,
            UdpPattern::Cbr => 2.0,
        }
    }

    /// A packet was sent at `now`: when the next one goes, if any.
    pub fn next<R: Rng>(&mut self, now: Time, rng: &mut R) -> Option<Time> {
        self.sent += 1;
        let mut t = now + self.rate.tx_time_ceil(u64::from(self.len));
        if let UdpPattern::OnOff { on, off, shape } = self.pattern {
            while t >= self.on_until {
                let off_end = self.on_until + pareto(rng, off, shape);
                t = t.max(off_end);
                self.on_until = off_end + pareto(rng, on, shape);
            }
        }
        (t < self.stop).then_some(t)
    }
}

/// One-way delay statistics of a flow's packets at the receiver.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DelayStats {
    /// Packets received.
    pub packets: u64,
    mean: f64,
    m2: f64,
    /// Largest delay, ns.
    pub max: u64,
    /// RFC 3550 interarrival jitter estimate, ns.
    pub jitter: f64,
    last: Option<u64>,
    /// Sum of the delays per hop (queueing, transmission and propagation), ns.
    pub per_hop: Vec<u64>,
}

impl DelayStats {
    /// Records a packet that took `delay` end to end.
    pub fn record(&mut self, delay: Duration) {
        let d = delay.as_nanos();
        self.packets += 1;
        let x = d as f64;
        let delta = x - self.mean;
        self.mean += delta / self.packets as f64;
        self.m2 += delta * (x - self.mean);
        self.max = self.max.max(d);
        if let Some(prev) = self.last {
            let diff = d.abs_diff(prev) as f64;
            self.jitter += (diff - self.jitter) / 16.0;
        }
        self.last = Some(d);
    }

    /// Adds `d` to hop `hop`'s total.
    pub fn record_hop(&mut self, hop: usize, d: Duration) {
        if self.per_hop.len() <= hop {
            self.per_hop.resize(hop + 1, 0);
        }
        self.per_hop[hop] += d.as_nanos();
    }

    /// Mean delay, ns.
    #[must_use]
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Standard deviation, ns.
    #[must_use]
    pub fn stddev(&self) -> f64 {
        if self.packets < 2 {
            0.0
        } else {
            (self.m2 / (self.packets - 1) as f64).sqrt()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn cbr_spacing() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let mut s = UdpSource::new(Rate::from_mbps(1), 125, UdpPattern::Cbr, Time(10_000_000));
        assert_eq!(s.first(Time(0), &mut rng), Some(Time(0)));
        assert_eq!(s.next(Time(0), &mut rng), Some(Time(1_000_000)));
        assert_eq!(s.next(Time(9_000_000), &mut rng), None);
    }

    #[test]
    fn on_off_mean_rate() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let on = Duration::from_millis(100);
        let pat = UdpPattern::OnOff {
            on,
            off: on,
            shape: 1.5,
        };
        let stop = Time(2_000_000_000_000);
        let mut s = UdpSource::new(Rate::from_mbps(4), 500, pat, stop);
        let mut t = s.first(Time(0), &mut rng).unwrap();
        while let Some(n) = s.next(t, &mut rng) {
            t = n;
        }
        let bits = f64::from(s.sent) * 500.0 * 8.0;
        let rate = bits / Time(2_000_000_000_000).secs();
        // Mean rate = peak * on / (on + off) = 2 Mbit/s; heavy tails converge
        // slowly.
        assert!((rate / 2e6 - 1.0).abs() < 0.15, "rate {rate}");
    }

    #[test]
    fn delay_statistics() {
        let mut d = DelayStats::default();
        for x in [10, 20, 30] {
            d.record(Duration::from_nanos(x));
        }
        assert_eq!(d.mean(), 20.0);
        assert_eq!(d.stddev(), 10.0);
        assert_eq!(d.max, 30);
        d.record_hop(2, Duration::from_nanos(5));
        assert_eq!(d.per_hop, vec![0, 0, 5]);
    }
}
