//! A virtual timestamp counter: `rte_sched` on a clock the caller advances.
//!
//! `rte_sched` measures time with the `rdtsc` instruction, inlined into the
//! library, so a run on the wall clock depends on when the thread runs: on a
//! loaded machine a late wake-up just after a traffic class's period began
//! shifts that period and takes its share away. [`VirtualTsc`] makes `rdtsc`
//! trap in the calling thread (Linux's `PR_SET_TSC`) and answer with the count
//! the caller sets (`csrc/vtsc.c`), so that a run is a function of its
//! inputs alone. x86-64 Linux only; elsewhere [`VirtualTsc::begin`] fails.

use std::marker::PhantomData;

use crate::error::DpdkError;
use crate::sys;

/// The calling thread's `rdtsc` answering with a set count until dropped.
#[derive(Debug)]
pub struct VirtualTsc {
    /// Per thread: neither sent nor shared.
    _thread: PhantomData<*const ()>,
}

impl VirtualTsc {
    /// Starts answering `rdtsc` in this thread with `start`.
    ///
    /// # Errors
    /// [`DpdkError::VirtualTsc`] if the system cannot make the instruction
    /// trap (another architecture or OS, or a kernel refusing `PR_SET_TSC`).
    pub fn begin(start: u64) -> Result<VirtualTsc, DpdkError> {
        // SAFETY: the shim installs its SIGSEGV handler once (passing every
        // other fault to the handler that was there) and sets the per-thread
        // trap; it takes no pointers.
        let r = unsafe { sys::eiffel_dpdk_virtual_tsc_begin(start) };
        if r != 0 {
            return Err(DpdkError::VirtualTsc {
                reason: std::io::Error::from_raw_os_error(-r),
            });
        }
        Ok(VirtualTsc {
            _thread: PhantomData,
        })
    }

    /// `rdtsc` returns `count` from now on (in this thread).
    pub fn set(&self, count: u64) {
        // SAFETY: writes the calling thread's virtual count, nothing else.
        unsafe { sys::eiffel_dpdk_virtual_tsc_set(count) }
    }
}

impl Drop for VirtualTsc {
    fn drop(&mut self) {
        // SAFETY: gives the calling thread (the one that began: the guard is
        // not `Send`) its hardware counter back.
        let _ = unsafe { sys::eiffel_dpdk_virtual_tsc_end() };
    }
}
