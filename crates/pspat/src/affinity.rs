//! Thread placement: pinning a thread to a CPU and asking which CPU it runs on.
//!
//! Linux-specific calls through `libc`; elsewhere pinning reports `Unsupported` and
//! the CPU number is unknown. Callers treat a failed pin as a warning.

use std::io;

/// Pins the calling thread to `cpu`.
///
/// # Errors
/// The OS error if the CPU does not exist or is not allowed to this process, or
/// `Unsupported` off Linux.
#[allow(unsafe_code)]
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cpu {cpu} is beyond CPU_SETSIZE"),
            ));
        }
        // SAFETY: cpu_set_t is plain data for which all-zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `cpu < CPU_SETSIZE` was checked, so CPU_SET stays inside `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size
        // passed.
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Sets the calling thread's nice value (-20, most favoured, to 19). Lowering it
/// below 0 needs `CAP_SYS_NICE`. A thread that should own a CPU shared with other
/// processes gets most of it at -10 or below under Linux's fair scheduler.
///
/// # Errors
/// The OS error (typically permission denied), or `Unsupported` off Linux.
#[allow(unsafe_code)]
pub fn set_current_thread_nice(nice: i32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions and cannot fail.
        let tid = unsafe { libc::gettid() };
        // On Linux, PRIO_PROCESS with a thread id sets that thread's nice value.
        // SAFETY: plain system call on our own thread id.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = nice;
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Moves the calling thread to the real-time FIFO class at `priority` (1..=99):
/// it then runs whenever it is ready, ahead of every ordinary thread on its CPU
/// (Linux still reserves 5% of each CPU for ordinary threads by default). Needs
/// `CAP_SYS_NICE`. This is how an arbiter owns its core on a machine whose other
/// processes may be scheduled there.
///
/// # Errors
/// The OS error (permission denied, invalid priority), or `Unsupported` off Linux.
#[allow(unsafe_code)]
pub fn set_current_thread_realtime(priority: i32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = priority;
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Sets the calling thread's timer slack: how late the kernel may end its timed
/// sleeps to batch wake-ups (50 us by default). A thread that sleeps until an exact
/// departure time wants it small.
///
/// # Errors
/// The OS error, or `Unsupported` off Linux.
#[allow(unsafe_code)]
pub fn set_current_thread_timer_slack(nanos: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let slack = libc::c_ulong::try_from(nanos.max(1))
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: PR_SET_TIMERSLACK takes one unsigned long by value and affects
        // only the calling thread.
        let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack, 0, 0, 0) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = nanos;
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// The CPU the calling thread runs on, if the OS says.
#[must_use]
#[allow(unsafe_code)]
pub fn current_cpu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sched_getcpu has no preconditions; it returns -1 on error.
        let cpu = unsafe { libc::sched_getcpu() };
        usize::try_from(cpu).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Number of CPUs the system has configured (at least 1).
#[must_use]
pub fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    #[test]
    fn pins_to_an_allowed_cpu_and_rejects_a_missing_one() {
        let cpu = current_cpu().expect("linux reports the cpu");
        let handle = std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            assert_eq!(current_cpu(), Some(cpu));
        });
        handle.join().unwrap();
        assert!(pin_current_thread(libc::CPU_SETSIZE as usize).is_err());
        std::thread::spawn(|| set_current_thread_nice(5).unwrap())
            .join()
            .unwrap();
        std::thread::spawn(|| set_current_thread_timer_slack(1_000).unwrap())
            .join()
            .unwrap();
        // Priority 0 is not a real-time priority: refused whatever the privileges.
        assert!(set_current_thread_realtime(0).is_err());
        assert!(cpu_count() >= 1);
    }
}
