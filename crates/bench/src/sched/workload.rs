//! The controller of qfq.txt section 7.1, shared by `eiffel bench sched` and the
//! criterion benches (`cargo bench -p eiffel-bench --bench sched`): a packet
//! generator, the targets it drives (a scheduler, or the NONE ring that measures
//! the generator alone) and the load patterns.
//!
//! Patterns with `N` flows:
//! - SMALL and LARGE enqueue bursts of `5N` and `30N` packets, then drain the
//!   scheduler (flows and lengths at random);
//! - FULL keeps the backlog between `3N` and `30N`, enqueueing or dequeueing at
//!   random (forced at the limits);
//! - BALANCED is the QFQ authors' controller: hysteresis between 0 and `20N`
//!   queued packets (enqueue until `20N` are queued, then dequeue until none is),
//!   every packet of 1000 bytes and sent to the least-backlogged flow. At the start
//!   of each enqueue phase every flow is empty, so the least-backlogged flow, ties
//!   to the lowest id, is the next one in round-robin order: the generator keeps a
//!   cursor instead of searching.

use std::collections::VecDeque;
use std::hint::black_box;

use eiffel_sched::{Packet, Scheduler};

/// A load pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// Bursts of `5N`, then drain.
    Small,
    /// Bursts of `30N`, then drain.
    Large,
    /// Backlog kept between `3N` and `30N`.
    Full,
    /// Hysteresis between 0 and `20N`, 1000-byte packets to the least-backlogged
    /// flow.
    Balanced,
}

impl Load {
    /// The Table 4 patterns, then BALANCED.
    pub const ALL: [Load; 4] = [Load::Small, Load::Large, Load::Full, Load::Balanced];

    /// The pattern's name in tables and JSON.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Load::Small => "small",
            Load::Large => "large",
            Load::Full => "full",
            Load::Balanced => "balanced",
        }
    }

    /// Packets a burst-and-drain cycle moves with `n` flows (0 for FULL, which
    /// has no cycle).
    #[must_use]
    pub fn cycle(self, n: u64) -> u64 {
        match self {
            Load::Small => 5 * n,
            Load::Large => 30 * n,
            Load::Full => 0,
            Load::Balanced => 20 * n,
        }
    }

    /// Most packets queued at once with `n` flows.
    #[must_use]
    pub fn max_backlog(self, n: u64) -> u64 {
        match self {
            Load::Full => 30 * n,
            _ => self.cycle(n),
        }
    }
}

/// Bytes of every BALANCED packet.
pub const BALANCED_LEN: u32 = 1000;

/// The controller's packet source: xorshift64* picks flows and lengths, or, for
/// BALANCED, a round-robin cursor and a fixed length.
#[derive(Clone, Debug)]
pub struct Generator {
    state: u64,
    flows: u64,
    lens: [u32; 256],
    seq: u32,
    cursor: u32,
}

impl Generator {
    /// A generator over `flows` flows.
    #[must_use]
    pub fn new(flows: u32, seed: u64) -> Self {
        let mut g = Generator {
            state: seed | 1,
            flows: u64::from(flows),
            lens: [0; 256],
            seq: 0,
            cursor: 0,
        };
        for i in 0..256 {
            g.lens[i] = 64 + (g.next() % (1500 - 64 + 1)) as u32;
        }
        g
    }

    #[inline]
    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A packet of a random flow and a random length of 64 to 1500 bytes.
    #[inline]
    pub fn packet(&mut self) -> Packet {
        let r = self.next();
        // Multiply-shift maps 32 random bits onto 0..flows without a division.
        let flow = (((r >> 32) * self.flows) >> 32) as u32;
        self.seq = self.seq.wrapping_add(1);
        Packet::new(flow, self.lens[(r & 0xff) as usize]).buffer(self.seq)
    }

    /// A BALANCED packet: [`BALANCED_LEN`] bytes, to the least-backlogged flow
    /// (see the module docs).
    #[inline]
    pub fn balanced_packet(&mut self) -> Packet {
        let flow = self.cursor;
        self.cursor += 1;
        if u64::from(self.cursor) == self.flows {
            self.cursor = 0;
        }
        self.seq = self.seq.wrapping_add(1);
        Packet::new(flow, BALANCED_LEN).buffer(self.seq)
    }

    #[inline]
    fn coin(&mut self) -> bool {
        self.next() >> 63 == 1
    }
}

/// What the controller drives: a scheduler, or the NONE ring. The wrappers are
/// `#[inline(always)]`, so that whether a scheduler's own entry points are
/// inlined is up to the scheduler.
pub trait Target {
    /// Offers a packet (a drop is counted by the scheduler and ignored here).
    fn push(&mut self, pkt: Packet);
    /// Takes the next packet.
    fn pop(&mut self) -> Option<Packet>;
}

/// NONE: the generator's packets stored in and taken from a plain ring.
#[derive(Debug)]
pub struct Ring(pub VecDeque<Packet>);

impl Ring {
    /// A ring for `cap` packets, its memory written once (as the schedulers'
    /// pools are when built) so that page faults stay out of the timing.
    #[must_use]
    pub fn new(cap: usize) -> Self {
        let mut q = VecDeque::with_capacity(cap);
        q.resize(cap, Packet::default());
        q.clear();
        Ring(q)
    }
}

impl Target for Ring {
    #[inline(always)]
    fn push(&mut self, pkt: Packet) {
        self.0.push_back(pkt);
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<Packet> {
        self.0.pop_front()
    }
}

/// A scheduler driven as a [`Target`] at time 0.
#[derive(Debug)]
pub struct Sched<S>(pub S);

impl<C: eiffel_sched::PacketCore> Sched<eiffel_sched::PerFlow<C>> {
    /// `s` with flows `0..flows`, each of weight 1, 1500-byte packets at most
    /// and a 1500-byte quantum.
    ///
    /// # Errors
    /// A flow the scheduler refuses (more flows than it was made for).
    pub fn equal_flows(
        mut s: eiffel_sched::PerFlow<C>,
        flows: u32,
    ) -> Result<Self, eiffel_sched::ConfigError> {
        use eiffel_sched::FlowScheduler;
        for f in 0..flows {
            s.add_flow(
                f,
                eiffel_sched::FlowConfig::weight(1)
                    .max_packet(1500)
                    .quantum(1500),
            )?;
        }
        Ok(Sched(s))
    }
}

impl<S: Scheduler> Target for Sched<S> {
    #[inline(always)]
    fn push(&mut self, pkt: Packet) {
        if let Err(d) = self.0.enqueue(pkt, 0) {
            black_box(d.packet);
        }
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<Packet> {
        self.0.dequeue(0)
    }
}

/// Fills a FULL-pattern target to the middle of its backlog range (untimed);
/// returns the backlog.
pub fn fill<T: Target>(t: &mut T, g: &mut Generator, n: u64) -> u64 {
    let backlog = (3 * n + 30 * n) / 2;
    for _ in 0..backlog {
        t.push(g.packet());
    }
    backlog
}

/// Runs `load` for at least `pairs` pairs, returning the pairs done. SMALL, LARGE
/// and BALANCED run whole fill-and-drain cycles; FULL runs the steady state from
/// `backlog` (see [`fill`]) and leaves the target filled. `n` is the number of
/// flows (it scales the bursts and the backlog range).
pub fn drive<T: Target>(
    t: &mut T,
    g: &mut Generator,
    load: Load,
    n: u64,
    pairs: u64,
    backlog: &mut u64,
) -> u64 {
    let mut done = 0u64;
    let mut sink = 0u64;
    match load {
        Load::Small | Load::Large | Load::Balanced => {
            let burst = load.cycle(n);
            while done < pairs {
                if load == Load::Balanced {
                    for _ in 0..burst {
                        t.push(g.balanced_packet());
                    }
                } else {
                    for _ in 0..burst {
                        t.push(g.packet());
                    }
                }
                while let Some(p) = t.pop() {
                    sink = sink.wrapping_add(u64::from(p.len));
                }
                done += burst;
            }
        }
        Load::Full => {
            let (low, high) = (3 * n, 30 * n);
            while done < pairs {
                let enqueue = if *backlog <= low {
                    true
                } else if *backlog >= high {
                    false
                } else {
                    g.coin()
                };
                if enqueue {
                    t.push(g.packet());
                    *backlog += 1;
                } else if let Some(p) = t.pop() {
                    sink = sink.wrapping_add(u64::from(p.len));
                    *backlog -= 1;
                    done += 1;
                }
            }
        }
    }
    black_box(sink);
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_spreads_flows_and_lengths() {
        let mut g = Generator::new(8, 1);
        let mut seen = [0u32; 8];
        for _ in 0..8000 {
            let p = g.packet();
            seen[p.flow as usize] += 1;
            assert!((64..=1500).contains(&p.len));
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }

    #[test]
    fn balanced_packets_go_to_the_least_backlogged_flow() {
        let mut g = Generator::new(5, 1);
        let mut backlog = [0u32; 5];
        for _ in 0..100 {
            let p = g.balanced_packet();
            let least = *backlog.iter().min().unwrap();
            assert_eq!(backlog[p.flow as usize], least, "{backlog:?}");
            assert_eq!(
                backlog.iter().position(|&b| b == least),
                Some(p.flow as usize),
                "ties go to the lowest id"
            );
            assert_eq!(p.len, BALANCED_LEN);
            backlog[p.flow as usize] += 1;
        }
        assert_eq!(backlog, [20; 5]);
    }

    #[test]
    fn patterns_count_pairs_and_drain() {
        for load in Load::ALL {
            let mut ring = Ring::new(0);
            let mut g = Generator::new(4, 3);
            let mut backlog = if load == Load::Full {
                fill(&mut ring, &mut g, 4)
            } else {
                0
            };
            let done = drive(&mut ring, &mut g, load, 4, 100, &mut backlog);
            assert!(done >= 100);
            assert_eq!(ring.0.len() as u64, backlog, "{load:?}");
            assert!(
                load == Load::Full || backlog == 0,
                "bursts drain the scheduler"
            );
        }
    }
}
