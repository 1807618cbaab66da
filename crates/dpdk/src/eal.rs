//! DPDK's environment abstraction layer, started once per process.

use std::ffi::CString;
use std::os::raw::c_char;
use std::sync::{Mutex, OnceLock};

use crate::error::{last_error, DpdkError};
use crate::sys;

/// The running EAL (there is at most one per process).
#[derive(Debug)]
pub struct Eal {
    memory_mb: u32,
    tsc_hz: u64,
}

impl Eal {
    /// Memory EAL mapped for its heap, in MiB.
    #[must_use]
    pub fn memory_mb(&self) -> u32 {
        self.memory_mb
    }

    /// The timestamp counter's frequency (what `rte_sched` measures time with).
    #[must_use]
    pub fn tsc_hz(&self) -> u64 {
        self.tsc_hz
    }
}

static EAL: OnceLock<Eal> = OnceLock::new();
static START: Mutex<()> = Mutex::new(());

/// Starts EAL as a plain process with a heap of `memory_mb` MiB, or returns the
/// one already running. Options: `--no-huge --no-pci --no-shconf
/// --no-telemetry`, one lcore on the first CPU the process may use, errors-only
/// logging. EAL pins the calling thread to that CPU; its previous CPU set is
/// restored afterwards, so callers pin themselves if they want to.
pub fn eal(memory_mb: u32) -> Result<&'static Eal, DpdkError> {
    let _guard = START.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = EAL.get() {
        if e.memory_mb < memory_mb {
            return Err(DpdkError::EalMemory {
                have_mb: e.memory_mb,
                want_mb: memory_mb,
            });
        }
        return Ok(e);
    }
    let saved = current_affinity();
    let cpu = saved.as_ref().and_then(first_cpu).unwrap_or(0);
    let args: Vec<String> = [
        "eiffel".to_string(),
        "--no-huge".into(),
        "--no-pci".into(),
        "--no-shconf".into(),
        "--no-telemetry".into(),
        format!("--lcores=0@{cpu}"),
        "-m".into(),
        memory_mb.to_string(),
        "--log-level=*:error".into(),
    ]
    .to_vec();
    let owned: Vec<CString> = args
        .iter()
        .map(|a| CString::new(a.as_str()).expect("no NUL in EAL arguments"))
        .collect();
    let mut argv: Vec<*mut c_char> = owned.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    // SAFETY: argv holds argc valid NUL-terminated strings followed by NULL; they
    // outlive the call (EAL may keep pointers into them, so `owned` is leaked
    // below). The START lock makes this the only EAL start in the process.
    let rc = unsafe { sys::rte_eal_init(args.len() as i32, argv.as_mut_ptr()) };
    if let Some(set) = &saved {
        restore_affinity(set);
    }
    if rc < 0 {
        return Err(DpdkError::EalInit {
            args,
            reason: last_error(),
            memory_mb,
        });
    }
    std::mem::forget(owned);
    std::mem::forget(argv);
    // SAFETY: EAL is initialised; the shim reads the measured TSC frequency.
    let tsc_hz = unsafe { sys::eiffel_dpdk_tsc_hz() };
    Ok(EAL.get_or_init(|| Eal { memory_mb, tsc_hz }))
}

fn current_affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set, and
    // sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let rc = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        (rc == 0).then_some(set)
    }
}

fn first_cpu(set: &libc::cpu_set_t) -> Option<usize> {
    // SAFETY: CPU_ISSET reads a bit of an initialised set; the index is in range.
    (0..libc::CPU_SETSIZE as usize).find(|&c| unsafe { libc::CPU_ISSET(c, set) })
}

fn restore_affinity(set: &libc::cpu_set_t) {
    // SAFETY: `set` was filled by sched_getaffinity for this thread.
    unsafe {
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
    }
}
