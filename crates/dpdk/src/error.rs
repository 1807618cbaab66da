//! What can go wrong when talking to DPDK.

use std::ffi::CStr;

use crate::sys;

/// An error from DPDK or from a configuration DPDK would refuse.
#[derive(Debug, thiserror::Error)]
pub enum DpdkError {
    /// `rte_eal_init` failed.
    #[error("DPDK's EAL did not start with {args:?}: {reason} (it needs no hugepages, NIC or privileges with these options; check that the process may map {memory_mb} MiB)")]
    EalInit {
        /// The arguments passed.
        args: Vec<String>,
        /// DPDK's message for `rte_errno`.
        reason: String,
        /// Memory EAL was asked to map.
        memory_mb: u32,
    },
    /// EAL was started earlier in this process with less memory than now asked.
    #[error("DPDK's EAL already runs with {have_mb} MiB; {want_mb} MiB were asked (EAL starts once per process)")]
    EalMemory {
        /// Memory EAL has.
        have_mb: u32,
        /// Memory asked for.
        want_mb: u32,
    },
    /// Creating a mempool failed.
    #[error("rte_pktmbuf_pool_create({name}, {mbufs} mbufs) failed: {reason}")]
    Mempool {
        /// Pool name.
        name: String,
        /// Mbufs asked for.
        mbufs: u32,
        /// DPDK's message.
        reason: String,
    },
    /// The pool had fewer free mbufs than asked.
    #[error("the mempool has fewer than {0} free mbufs")]
    PoolEmpty(usize),
    /// The timestamp counter cannot be virtualised here.
    #[error("cannot run rte_sched on a virtual clock: the timestamp counter does not trap ({reason}; x86-64 Linux with PR_SET_TSC is needed)")]
    VirtualTsc {
        /// Why `prctl(PR_SET_TSC)` or the handler's installation failed.
        reason: std::io::Error,
    },
    /// A configuration value outside what `rte_sched` supports.
    #[error("rte_sched configuration: {0}")]
    Config(#[from] SchedConfigError),
    /// An `rte_sched` call refused the configuration.
    #[error("{call} failed with {code} ({reason}); DPDK's log above says which parameter")]
    Sched {
        /// The function called.
        call: &'static str,
        /// Its return code.
        code: i32,
        /// `strerror` of the code.
        reason: String,
    },
}

/// A port configuration or queue address `rte_sched` cannot take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchedConfigError {
    /// Pipes per subport not a power of two.
    #[error("{0} pipes per subport: rte_sched needs a power of two")]
    Pipes(u32),
    /// Subports zero or not a power of two.
    #[error("{0} subports: a power of two is needed")]
    Subports(u32),
    /// No pipe profile given.
    #[error("no pipe profile")]
    NoProfile,
    /// A queue size not a power of two.
    #[error("queue size {0}: a power of two is needed")]
    QueueSize(u16),
    /// A queue address outside the port.
    #[error("no queue at {0:?}")]
    NoQueue(crate::sched::QueuePath),
}

/// DPDK's message for error number `code` (positive or negative).
pub(crate) fn strerror(code: i32) -> String {
    // SAFETY: rte_strerror accepts any number and returns a pointer to a static or
    // per-thread NUL-terminated string that stays valid until the next call on
    // this thread; it is copied at once.
    unsafe {
        let p = sys::rte_strerror(code.abs());
        if p.is_null() {
            format!("error {code}")
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

/// The calling thread's `rte_errno`, as a message.
pub(crate) fn last_error() -> String {
    // SAFETY: reads a thread-local integer through the shim.
    strerror(unsafe { sys::eiffel_dpdk_errno() })
}

/// Turns an `rte_sched` return code into a result.
pub(crate) fn check(call: &'static str, code: i32) -> Result<(), DpdkError> {
    if code == 0 {
        Ok(())
    } else {
        Err(DpdkError::Sched {
            call,
            code,
            reason: strerror(code),
        })
    }
}
