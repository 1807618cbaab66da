//! The runtime's clock: monotonic nanoseconds since the runtime started.
//!
//! Schedulers are sans-IO; the arbiter reads this clock once per round and passes
//! the value in. Clients read it to stamp packets (latency measurement).

use eiffel_sched::Nanos;
use std::time::Instant;

/// A monotonic clock in nanoseconds from a fixed origin. Cheap to copy and to read
/// (one `clock_gettime(CLOCK_MONOTONIC)` through the vDSO on Linux).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose origin is now.
    #[must_use]
    pub fn new() -> Self {
        Clock {
            origin: Instant::now(),
        }
    }

    /// Nanoseconds since the origin.
    #[must_use]
    #[inline]
    pub fn now(&self) -> Nanos {
        // u64 nanoseconds cover 584 years of uptime.
        self.origin.elapsed().as_nanos() as Nanos
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}
