//! The CPU time of the calling thread, the clock of the micro-benchmarks.
//!
//! The development machine's two cores are shared with other work: a wall clock
//! charges a benchmark for the time it spent waiting for a core, which varied by
//! half between runs. The thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, nanosecond
//! resolution) counts only the time it ran; what the other work does to the
//! shared caches still shows, which is why every table also has its baseline
//! measured in the same run.

use std::time::Duration;

/// A point on the calling thread's CPU clock.
#[derive(Clone, Copy, Debug)]
pub struct CpuInstant(Duration);

impl CpuInstant {
    /// The calling thread's CPU time now.
    #[must_use]
    #[allow(unsafe_code)]
    pub fn now() -> Self {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "CLOCK_THREAD_CPUTIME_ID is available on Linux");
        CpuInstant(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }

    /// CPU time the thread used since `self`.
    #[must_use]
    pub fn elapsed(self) -> Duration {
        CpuInstant::now().0.saturating_sub(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_advances_with_work() {
        let start = CpuInstant::now();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(start.elapsed() > Duration::ZERO, "{x}");
    }
}
