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

/// Cycles of one 64-bit multiplication from its operand to its product on
/// every x86-64 core of the last fifteen years (Intel since Nehalem, AMD since
/// Zen): the latency [`core_ghz`]'s chain is timed in.
const MUL_LATENCY: u64 = 3;

/// The clock the calling thread's core runs at, in GHz, or `None` where it
/// cannot be measured (not x86-64). A chain of dependent multiplications retires
/// one every three cycles, however wide the core: the chain's cycles
/// over the CPU time it took are the clock. The median of seven chains of about
/// 40 ms each (at 3 GHz); on a virtual machine whose clock moves between days
/// it turns nanoseconds into cycles, which do compare.
#[must_use]
pub fn core_ghz() -> Option<f64> {
    const LINKS: u64 = 40_000_000;
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    chain(std::hint::black_box(LINKS / 10), 1);
    let mut ghz: Vec<f64> = (0..7)
        .map(|_| {
            let t = CpuInstant::now();
            std::hint::black_box(chain(std::hint::black_box(LINKS), 1));
            let ns = t.elapsed().as_nanos().max(1) as f64;
            (LINKS * MUL_LATENCY) as f64 / ns
        })
        .collect();
    ghz.sort_by(f64::total_cmp);
    Some(ghz[3])
}

/// The core's clock measured before and after a benchmark's runs.
#[derive(Clone, Copy, Debug)]
pub struct ClockAround {
    /// GHz before the runs.
    pub before: Option<f64>,
    /// GHz after them (`None` until [`ClockAround::finish`]).
    pub after: Option<f64>,
}

impl ClockAround {
    /// Measures the clock before the runs.
    #[must_use]
    pub fn start() -> Self {
        ClockAround {
            before: core_ghz(),
            after: None,
        }
    }

    /// Measures the clock after the runs.
    pub fn finish(&mut self) {
        self.after = core_ghz();
    }

    /// The mean of both measurements, when both were made.
    #[must_use]
    pub fn mean(&self) -> Option<f64> {
        self.before.zip(self.after).map(|(b, a)| (b + a) / 2.0)
    }

    /// Prints one line of a benchmark's text output, when both were made.
    ///
    /// # Errors
    /// If the output cannot be written.
    pub fn print(&self) -> std::io::Result<()> {
        if let Some((before, after)) = self.before.zip(self.after) {
            crate::outln!(
                "core clock {before:.2} GHz before the runs, {after:.2} after (cycles = ns x GHz)"
            );
        }
        Ok(())
    }
}

/// `links` dependent multiplications of `x`, each by a factor the compiler
/// cannot see, so that it can neither fold the chain nor regroup it (`x * f *
/// f` as `x * (f * f)`). Reading the factor is off the chain; `x` stays in a
/// register (an argument, not a value passed through `black_box`'s memory).
#[inline(never)]
fn chain(links: u64, mut x: u64) -> u64 {
    let factor = 0x9e37_79b9_7f4a_7c15_u64;
    for _ in 0..links {
        x = x.wrapping_mul(std::hint::black_box(factor));
    }
    x
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

    #[test]
    fn the_chain_multiplies_every_link() {
        let factor = 0x9e37_79b9_7f4a_7c15_u64;
        let want = (0..1000).fold(1_u64, |x, _| x.wrapping_mul(factor));
        assert_eq!(chain(1000, 1), want);
    }

    #[test]
    fn a_clock_is_measured_on_x86_64() {
        let ghz = core_ghz();
        assert_eq!(ghz.is_some(), cfg!(target_arch = "x86_64"));
        // Any core this runs on lies between these (an emulator such as
        // valgrind or miri may be far slower, so only the upper bound holds).
        assert!(ghz.is_none_or(|g| g > 0.0 && g < 10.0), "{ghz:?}");
    }
}
