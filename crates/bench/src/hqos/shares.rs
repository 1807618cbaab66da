//! Throughput shares under overload: what each pipe, traffic class and
//! best-effort queue got, against the other scheduler and the fluid reference.

use std::time::Duration;

use serde::Serialize;

use super::hierarchy::{tc_of, Hierarchy, BE_QUEUES, BE_TC, QUEUES_PER_PIPE, TRAFFIC_CLASSES};

/// Tolerance of the comparison: 2% of the larger share (or of 1% for shares
/// below 1%).
pub const TOLERANCE: f64 = 0.02;

/// The measured window of an overload run: after a warm-up, with tapered
/// edges. A byte sent counts fully inside the window and by a weight ramping
/// linearly over `ramp` at both edges, which averages the window over every
/// phase of a periodic pattern of period `ramp`: rte_sched gives a capped class
/// its credits at the start of each period, and a plain window would catch a
/// part of a period's burst at each edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Untimed start.
    pub warmup: Duration,
    /// Measured time, edges included.
    pub length: Duration,
    /// Length of each tapered edge.
    pub ramp: Duration,
}

impl Window {
    /// When the run ends.
    #[must_use]
    pub fn end(&self) -> Duration {
        self.warmup + self.length
    }

    /// The weight of a byte sent at `t` since the start.
    #[must_use]
    pub fn weight(&self, t: Duration) -> f64 {
        let ramp = self.ramp.as_secs_f64().max(1e-9);
        let rise = (t.as_secs_f64() - self.warmup.as_secs_f64()) / ramp;
        let fall = (self.end().as_secs_f64() - t.as_secs_f64()) / ramp;
        rise.min(fall).clamp(0.0, 1.0)
    }

    /// The window's effective length (the integral of the weight).
    #[must_use]
    pub fn effective(&self) -> Duration {
        self.length.saturating_sub(self.ramp)
    }
}

/// Bytes each queue sent during the measured window, weighted by [`Window`].
#[derive(Debug, Clone)]
pub struct Served {
    /// Per global queue.
    pub bytes: Vec<f64>,
}

impl Served {
    /// Nothing sent yet, for `queues` queues.
    #[must_use]
    pub fn new(queues: usize) -> Served {
        Served {
            bytes: vec![0.0; queues],
        }
    }

    /// Queue `queue` sent `len` bytes with weight `weight`.
    #[inline]
    pub fn add(&mut self, queue: usize, len: u32, weight: f64) {
        self.bytes[queue] += f64::from(len) * weight;
    }

    /// Weighted bytes of all queues.
    #[must_use]
    pub fn total(&self) -> f64 {
        self.bytes.iter().sum()
    }

    /// Named shares: each pipe's, each class's (all pipes together) and each
    /// best-effort queue position's.
    #[must_use]
    pub fn shares(&self) -> Vec<(String, f64)> {
        let total = self.total().max(1.0);
        let pipes = self.bytes.len() / QUEUES_PER_PIPE;
        let mut out = Vec::new();
        for p in 0..pipes {
            let b: f64 = self.bytes[p * QUEUES_PER_PIPE..(p + 1) * QUEUES_PER_PIPE]
                .iter()
                .sum();
            out.push((format!("pipe {p}"), b / total));
        }
        let mut tc = [0f64; TRAFFIC_CLASSES];
        let mut be = [0f64; BE_QUEUES];
        for (g, &b) in self.bytes.iter().enumerate() {
            let (class, q) = tc_of(g % QUEUES_PER_PIPE);
            tc[class] += b;
            if class == BE_TC {
                be[q] += b;
            }
        }
        for (c, &b) in tc.iter().enumerate() {
            out.push((format!("tc {c}"), b / total));
        }
        for (q, &b) in be.iter().enumerate() {
            out.push((format!("be queue {q}"), b / total));
        }
        out
    }
}

/// The shares a fluid scheduler gives `h` (one subport of its pipes) when every
/// queue is backlogged: each pipe its limit (scaled down if they exceed the
/// subport's), each class what strict priority and the caps leave it, the
/// best-effort queues by weight; in bytes per second.
#[must_use]
pub fn fluid(h: &Hierarchy) -> Served {
    let pipes: u64 = h.profiles.iter().map(|p| p.pipe.bps).sum();
    let scale = (h.subport.bps.min(h.port.bps) as f64 / pipes as f64).min(1.0);
    let mut bytes = Vec::new();
    for p in &h.profiles {
        let mut left = p.pipe.bps as f64 / 8.0 * scale;
        let mut queue = [0f64; QUEUES_PER_PIPE];
        for (c, cap) in p.tc.iter().enumerate() {
            let got = left.min(cap.bps as f64 / 8.0);
            left -= got;
            if c < BE_TC {
                queue[c] = got;
            } else {
                let w: u32 = p.weights.iter().sum();
                for (k, &wk) in p.weights.iter().enumerate() {
                    queue[BE_TC + k] = got * f64::from(wk) / f64::from(w);
                }
            }
        }
        bytes.extend_from_slice(&queue);
    }
    Served { bytes }
}

/// One share, by both schedulers and the fluid reference.
#[derive(Debug, Clone, Serialize)]
pub struct ShareRow {
    /// `pipe N`, `tc N` or `be queue N`.
    pub what: String,
    /// Eiffel's share.
    pub eiffel: f64,
    /// rte_sched's share (absent without DPDK).
    pub rte_sched: Option<f64>,
    /// The fluid reference.
    pub fluid: f64,
    /// Relative difference between the two schedulers (or Eiffel and the fluid
    /// reference without DPDK).
    pub difference: f64,
}

/// Relative difference of two shares: of the larger, floored at 1%.
#[must_use]
pub fn difference(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.max(b).max(0.01)
}

/// Compares Eiffel's shares with rte_sched's (or, without them, the fluid
/// reference's).
#[must_use]
pub fn compare(eiffel: &Served, rte_sched: Option<&Served>, fluid: &Served) -> Vec<ShareRow> {
    let e = eiffel.shares();
    let d = rte_sched.map(Served::shares);
    let f = fluid.shares();
    e.iter()
        .enumerate()
        .map(|(i, (what, es))| {
            let ds = d.as_ref().map(|d| d[i].1);
            let other = ds.unwrap_or(f[i].1);
            ShareRow {
                what: what.clone(),
                eiffel: *es,
                rte_sched: ds,
                fluid: f[i].1,
                difference: difference(*es, other),
            }
        })
        .collect()
}
