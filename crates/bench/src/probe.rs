//! The machine's cross-CPU cache-line round trip, measured next to a benchmark.
//!
//! Two threads pinned to two CPUs bounce one cache line: each waits for the other's
//! store, then stores. One round trip moves the line there and back, the cost that
//! every mailbox handoff between the two CPUs pays at least once per line. On a
//! virtual machine the host decides where the virtual CPUs run and what else runs
//! beside them, so the figure is measured before each point and printed with it:
//! a point whose round trip differs from the others ran on a different machine.
//! Samples of 64 round trips are timed with the monotonic clock and the median
//! sample is reported, so a preemption in one sample does not move it.
//! (Timing single round trips with an unserialized `rdtsc` reads about a fifth of
//! the true figure on this machine: the counter is read out of order.)

use eiffel_pspat::affinity::pin_current_thread;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One line of its own.
#[repr(align(128))]
struct Line(AtomicU64);

/// Round trips per timed sample: long enough that reading the clock is noise.
const PER_SAMPLE: u64 = 64;

/// Median cross-CPU round trip between `a` and `b` in nanoseconds over `samples`
/// samples of 64 round trips each; `None` if either CPU cannot be
/// pinned to.
#[must_use]
pub fn round_trip_ns(a: usize, b: usize, samples: usize) -> Option<f64> {
    let line = Line(AtomicU64::new(0));
    let abort = Line(AtomicU64::new(0));
    let rounds = samples as u64 * PER_SAMPLE;
    // Waits until `line` holds `value`; false if the other side gave up.
    let wait = |value: u64| loop {
        if line.0.load(Ordering::Acquire) == value {
            return true;
        }
        if abort.0.load(Ordering::Relaxed) != 0 {
            return false;
        }
        std::hint::spin_loop();
    };
    std::thread::scope(|s| {
        let echo = s.spawn(|| {
            if pin_current_thread(b).is_err() {
                abort.0.store(1, Ordering::Relaxed);
                return false;
            }
            for i in 0..rounds {
                if !wait(2 * i + 1) {
                    return false;
                }
                line.0.store(2 * i + 2, Ordering::Release);
            }
            true
        });
        let ping = s.spawn(|| {
            let mut times = Vec::with_capacity(samples);
            if pin_current_thread(a).is_err() {
                abort.0.store(1, Ordering::Relaxed);
                return times;
            }
            let mut i = 0;
            'outer: for _ in 0..samples {
                let start = Instant::now();
                for _ in 0..PER_SAMPLE {
                    line.0.store(2 * i + 1, Ordering::Release);
                    if !wait(2 * i + 2) {
                        break 'outer;
                    }
                    i += 1;
                }
                times.push(start.elapsed().as_nanos() as f64 / PER_SAMPLE as f64);
            }
            times
        });
        let mut times = ping.join().ok()?;
        if !echo.join().ok()? || times.len() < samples {
            return None;
        }
        times.sort_by(f64::total_cmp);
        Some(times[times.len() / 2])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_positive_round_trip_or_reports_no_pinning() {
        let cpus = eiffel_pspat::affinity::cpu_count();
        let b = usize::from(cpus > 1);
        if let Some(ns) = round_trip_ns(0, b, 8) {
            assert!(ns > 0.0 && ns < 1e9, "{ns}");
        }
        assert_eq!(round_trip_ns(0, 1 << 20, 8), None);
    }
}
