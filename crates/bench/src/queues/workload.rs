//! The queue workloads, shared by `eiffel bench queues` and the criterion benches
//! (`cargo bench -p eiffel-bench --bench queues`).
//!
//! - *Fill then drain* (Eiffel section 5.2, Figs. 12-13): insert a shuffled set of
//!   ranks into an empty queue, then pop until it is empty; the cost is the time of
//!   both phases over the elements.
//! - *Hold model* (the classic priority-queue benchmark, and a scheduler's steady
//!   state): a queue holding `live` elements repeatedly pops its minimum `r` and
//!   inserts an element at `r + d`, `d` uniform in `1..=HOLD_SPAN`. The cost is per
//!   pop + insert pair. Every queue sees the same increments.

use std::hint::black_box;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::baselines::MinQueue;
use crate::clock::CpuInstant;

/// Ranks for one fill-then-drain trial: `per` elements in each bucket of
/// `occupied` (ranks equal to bucket numbers), in random order.
#[must_use]
pub fn fill_drain_ranks(occupied: &[usize], per: usize, rng: &mut SmallRng) -> Vec<u64> {
    let mut ranks: Vec<u64> = occupied
        .iter()
        .flat_map(|&b| std::iter::repeat_n(b as u64, per))
        .collect();
    ranks.shuffle(rng);
    ranks
}

/// Fills `q` with `ranks` and drains it; returns a checksum of what was popped so
/// the work cannot be optimised away.
#[inline]
pub fn fill_drain<Q: MinQueue>(q: &mut Q, ranks: &[u64]) -> u64 {
    for (i, &r) in ranks.iter().enumerate() {
        q.push(r, i as u32);
    }
    let mut sum = 0u64;
    while let Some((r, v)) = q.pop() {
        sum = sum.wrapping_add(r ^ u64::from(v));
    }
    sum
}

/// Times one fill-then-drain trial (thread CPU time).
pub fn time_fill_drain<Q: MinQueue>(q: &mut Q, ranks: &[u64]) -> Duration {
    let start = CpuInstant::now();
    black_box(fill_drain(q, ranks));
    start.elapsed()
}

/// Largest increment of the hold model: an element re-enters at most this many
/// ranks after the minimum it replaced.
pub const HOLD_SPAN: u64 = 10_000;

/// Increments cycled through by the hold model (a power of two).
const HOLD_TABLE: usize = 1 << 12;

/// The hold model's increments: a fixed pseudo-random table, so that every queue
/// sees the same sequence and the generator costs one load per pair.
#[derive(Clone, Debug)]
pub struct Hold {
    incs: Vec<u16>,
    pos: usize,
}

impl Hold {
    /// Increments uniform in `1..=HOLD_SPAN`, from `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let incs = (0..HOLD_TABLE)
            .map(|_| rng.gen_range(1..=HOLD_SPAN as u16))
            .collect();
        Hold { incs, pos: 0 }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        let d = self.incs[self.pos & (HOLD_TABLE - 1)];
        self.pos = self.pos.wrapping_add(1);
        u64::from(d)
    }

    /// Fills an empty `q` with `live` elements of ranks uniform in
    /// `0..HOLD_SPAN`.
    pub fn fill<Q: MinQueue>(&mut self, q: &mut Q, live: usize) {
        for i in 0..live {
            let r = self.next() - 1;
            q.push(r, i as u32);
        }
    }

    /// One pair: pop the minimum and insert it again a random increment later.
    /// Returns the popped rank.
    #[inline]
    pub fn step<Q: MinQueue>(&mut self, q: &mut Q) -> u64 {
        let Some((r, v)) = q.pop() else {
            unreachable!("the hold model never empties its queue");
        };
        let d = self.next();
        q.push(r + d, v);
        r
    }

    /// `pairs` pairs; returns a checksum.
    #[inline]
    pub fn run<Q: MinQueue>(&mut self, q: &mut Q, pairs: u64) -> u64 {
        let mut sum = 0u64;
        for _ in 0..pairs {
            sum = sum.wrapping_add(self.step(q));
        }
        sum
    }

    /// Times `pairs` pairs (thread CPU time).
    pub fn time<Q: MinQueue>(&mut self, q: &mut Q, pairs: u64) -> Duration {
        let start = CpuInstant::now();
        black_box(self.run(q, pairs));
        start.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::super::baselines::StdHeap;
    use super::*;

    #[test]
    fn hold_model_keeps_the_backlog_and_moves_forward() {
        let mut q = StdHeap::with_capacity(100);
        let mut h = Hold::new(1);
        h.fill(&mut q, 100);
        let mut last = 0;
        for _ in 0..10_000 {
            let r = h.step(&mut q);
            assert!(r >= last, "the minimum never goes back");
            last = r;
        }
        assert!(last > HOLD_SPAN, "the window moved");
        let mut n = 0;
        while q.pop().is_some() {
            n += 1;
        }
        assert_eq!(n, 100);
    }

    #[test]
    fn fill_drain_pops_everything() {
        let mut rng = SmallRng::seed_from_u64(3);
        let ranks = fill_drain_ranks(&[0, 2, 5], 4, &mut rng);
        assert_eq!(ranks.len(), 12);
        let mut q = StdHeap::with_capacity(12);
        fill_drain(&mut q, &ranks);
        assert!(q.pop().is_none());
    }
}
