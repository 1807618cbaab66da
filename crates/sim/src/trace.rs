//! Packet traces and seeded, deterministic workload generators.
//!
//! A [`Trace`] is a list of arrivals in time order. [`generate`] builds one from
//! per-flow specifications: the same seed always gives the same trace, on every
//! platform (`rand`'s `SmallRng` seeded explicitly, arrival times in integer
//! nanoseconds).

use eiffel_sched::{FlowId, Nanos, Packet};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// One arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Arrival time.
    pub at: Nanos,
    /// Flow of the packet.
    pub flow: FlowId,
    /// Length in bytes.
    pub len: u32,
}

/// Arrivals sorted by time (ties keep their given order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    arrivals: Vec<Arrival>,
}

impl Trace {
    /// A trace of the given arrivals, sorted stably by time.
    #[must_use]
    pub fn new(mut arrivals: Vec<Arrival>) -> Self {
        arrivals.sort_by_key(|a| a.at);
        Trace { arrivals }
    }

    /// The arrivals in time order.
    #[must_use]
    pub fn arrivals(&self) -> &[Arrival] {
        &self.arrivals
    }

    /// Number of packets.
    #[must_use]
    pub fn len(&self) -> usize {
        self.arrivals.len()
    }

    /// Whether the trace holds no packet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.arrivals.is_empty()
    }

    /// One more than the largest flow id.
    #[must_use]
    pub fn flows(&self) -> usize {
        self.arrivals
            .iter()
            .map(|a| a.flow as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// The descriptor of arrival `i`, its index as the buffer id.
    #[must_use]
    pub fn packet(&self, i: usize) -> Packet {
        let a = self.arrivals[i];
        Packet::new(a.flow, a.len).at(a.at).buffer(i as u32)
    }
}

/// How a flow's packets arrive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Poisson arrivals offering `rate_bps` bits per second on average.
    Smooth {
        /// Mean offered load.
        rate_bps: u64,
    },
    /// Bursts of 1 to `max_burst` back-to-back packets (one arrival instant),
    /// separated by exponentially distributed gaps with mean `mean_gap_ns`.
    Bursty {
        /// Largest burst.
        max_burst: u32,
        /// Mean gap between bursts.
        mean_gap_ns: u64,
    },
    /// `packets` packets at `start_ns`, enough to keep the flow backlogged.
    Backlogged {
        /// Number of packets.
        packets: u32,
        /// Arrival time of all of them.
        start_ns: Nanos,
    },
}

/// A flow of a generated workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSpec {
    /// Smallest packet, bytes.
    pub min_packet: u32,
    /// Largest packet, bytes; sizes are uniform in `min_packet..=max_packet`.
    pub max_packet: u32,
    /// Arrival process.
    pub pattern: Pattern,
}

/// Generates a trace: flow `i` of `flows` sends according to `flows[i]` until
/// `duration_ns` (backlogged flows send their fixed count).
///
/// # Panics
/// If a flow has `min_packet == 0` or `min_packet > max_packet`.
#[must_use]
pub fn generate(flows: &[FlowSpec], duration_ns: Nanos, seed: u64) -> Trace {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut arrivals = Vec::new();
    for (f, spec) in flows.iter().enumerate() {
        assert!(
            spec.min_packet > 0 && spec.min_packet <= spec.max_packet,
            "flow {f}: packet sizes {}..={}",
            spec.min_packet,
            spec.max_packet
        );
        let size = |rng: &mut SmallRng| rng.gen_range(spec.min_packet..=spec.max_packet);
        let flow = f as FlowId;
        match spec.pattern {
            Pattern::Smooth { rate_bps } => {
                let mean_len = f64::from(spec.min_packet + spec.max_packet) / 2.0;
                let mean_gap = mean_len * 8e9 / rate_bps as f64;
                let mut t = exponential(&mut rng, mean_gap);
                while t < duration_ns as f64 {
                    let len = size(&mut rng);
                    arrivals.push(Arrival {
                        at: t as Nanos,
                        flow,
                        len,
                    });
                    t += exponential(&mut rng, mean_gap);
                }
            }
            Pattern::Bursty {
                max_burst,
                mean_gap_ns,
            } => {
                let mut t = exponential(&mut rng, mean_gap_ns as f64);
                while t < duration_ns as f64 {
                    for _ in 0..rng.gen_range(1..=max_burst.max(1)) {
                        let len = size(&mut rng);
                        arrivals.push(Arrival {
                            at: t as Nanos,
                            flow,
                            len,
                        });
                    }
                    t += exponential(&mut rng, mean_gap_ns as f64);
                }
            }
            Pattern::Backlogged { packets, start_ns } => {
                for _ in 0..packets {
                    let len = size(&mut rng);
                    arrivals.push(Arrival {
                        at: start_ns,
                        flow,
                        len,
                    });
                }
            }
        }
    }
    Trace::new(arrivals)
}

/// An exponentially distributed sample of the given mean.
fn exponential(rng: &mut SmallRng, mean: f64) -> f64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    -mean * u.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> Vec<FlowSpec> {
        vec![
            FlowSpec {
                min_packet: 64,
                max_packet: 1500,
                pattern: Pattern::Smooth {
                    rate_bps: 100_000_000,
                },
            },
            FlowSpec {
                min_packet: 1500,
                max_packet: 1500,
                pattern: Pattern::Bursty {
                    max_burst: 8,
                    mean_gap_ns: 100_000,
                },
            },
            FlowSpec {
                min_packet: 100,
                max_packet: 100,
                pattern: Pattern::Backlogged {
                    packets: 50,
                    start_ns: 7,
                },
            },
        ]
    }

    #[test]
    fn generation_is_deterministic_and_sorted() {
        let a = generate(&specs(), 10_000_000, 42);
        let b = generate(&specs(), 10_000_000, 42);
        assert_eq!(a, b);
        assert_ne!(a, generate(&specs(), 10_000_000, 43));
        assert!(a.arrivals().windows(2).all(|w| w[0].at <= w[1].at));
        assert_eq!(a.flows(), 3);
        assert!(a.arrivals().iter().all(|x| (64..=1500).contains(&x.len)));
        let backlogged: Vec<_> = a.arrivals().iter().filter(|x| x.flow == 2).collect();
        assert_eq!(backlogged.len(), 50);
        assert!(backlogged.iter().all(|x| x.at == 7 && x.len == 100));
    }

    #[test]
    fn smooth_flow_offers_its_rate() {
        let t = generate(&specs()[..1], 1_000_000_000, 1);
        let bits: u64 = t.arrivals().iter().map(|a| u64::from(a.len) * 8).sum();
        // 100 Mbit/s for one second, within 5%.
        assert!((bits as f64 / 1e8 - 1.0).abs() < 0.05, "{bits}");
    }

    #[test]
    fn packets_carry_their_index_as_buffer() {
        let t = generate(&specs(), 1_000_000, 3);
        let p = t.packet(5);
        assert_eq!(
            (p.buffer, p.flow, p.len, p.arrival),
            (
                5,
                t.arrivals()[5].flow,
                t.arrivals()[5].len,
                t.arrivals()[5].at
            )
        );
    }
}
