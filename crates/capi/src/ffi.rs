//! The `extern "C"` functions. Every one checks its pointers, catches panics
//! (`guard`) and reports errors as [`EiffelStatus`] codes with a message for
//! `eiffel_last_error()`.

#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use eiffel_classify::Classifier;
use eiffel_policy::Policy;
use eiffel_sched::tree::Executor;
use eiffel_sched::{AutoTree, Scheduler};

use crate::types::{EiffelCounters, EiffelDrop, EiffelDropReason, EiffelPacket, EiffelStatus};

/// A loaded policy: its tree (run by the pipe executor when its shape
/// allows), its classifier and its node paths.
pub struct EiffelScheduler {
    tree: AutoTree,
    classifier: Classifier,
    /// Each node's path, NUL-terminated, for `eiffel_scheduler_node_path`.
    paths: Vec<CString>,
    /// Set when a call panicked: the tree may be inconsistent.
    poisoned: bool,
}

thread_local! {
    /// The calling thread's last error message.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `msg` as the thread's last error and returns `status`.
fn fail(status: EiffelStatus, msg: impl std::fmt::Display) -> EiffelStatus {
    let text = msg.to_string().replace('\0', " ");
    let c = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
    status
}

/// Runs `f`, turning a panic into [`EiffelStatus::Internal`].
fn guard(f: impl FnOnce() -> EiffelStatus) -> EiffelStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(s) => s,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            fail(
                EiffelStatus::Internal,
                format_args!("internal error: {what}"),
            )
        }
    }
}

/// Runs `f` on the scheduler (`None`: a NULL pointer), refusing NULL and
/// poisoned schedulers and poisoning it if `f` panics.
fn with_scheduler(
    s: Option<&mut EiffelScheduler>,
    f: impl FnOnce(&mut EiffelScheduler) -> EiffelStatus,
) -> EiffelStatus {
    let Some(sched) = s else {
        return fail(EiffelStatus::NullArgument, "the scheduler is NULL");
    };
    if sched.poisoned {
        return fail(
            EiffelStatus::Poisoned,
            "an earlier call on this scheduler failed with an internal error: free it",
        );
    }
    let status = guard(|| f(&mut *sched));
    if status == EiffelStatus::Internal {
        sched.poisoned = true;
    }
    status
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
unsafe fn str_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, EiffelStatus> {
    if p.is_null() {
        return Err(fail(
            EiffelStatus::NullArgument,
            format_args!("{what} is NULL"),
        ));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|e| {
        fail(
            EiffelStatus::InvalidUtf8,
            format_args!("{what} is not UTF-8: {e}"),
        )
    })
}

/// A scheduler for `policy`, stored at `out`.
///
/// # Safety
/// `out` is a valid, writable pointer.
unsafe fn create(policy: &Policy, out: *mut *mut EiffelScheduler) -> EiffelStatus {
    let classifier = match policy.classifier() {
        Ok(c) => c,
        Err(e) => {
            return fail(
                EiffelStatus::Classify,
                format_args!("{}: {e}", policy.file_name()),
            )
        }
    };
    let tree = policy.build_auto();
    let paths = (0..tree.len())
        .map(|i| CString::new(tree.path(i)).unwrap_or_default())
        .collect();
    let sched = Box::new(EiffelScheduler {
        tree,
        classifier,
        paths,
        poisoned: false,
    });
    // SAFETY: `out` is valid and writable by the caller's contract.
    unsafe { out.write(Box::into_raw(sched)) };
    EiffelStatus::Ok
}

/// The library's version, a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn eiffel_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The calling thread's last error message (empty if none). The pointer is
/// valid until the thread's next failing call.
#[no_mangle]
pub extern "C" fn eiffel_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The stable name of a drop reason (`"leaf_full"`...), a static string;
/// NULL for a value outside the enum.
#[no_mangle]
pub extern "C" fn eiffel_drop_reason_name(reason: u32) -> *const c_char {
    match eiffel_sched::DropReason::ALL.get(reason as usize) {
        Some(r) => {
            // The names are ASCII without NUL; this table adds the terminator.
            const NAMES: [&str; crate::types::EIFFEL_DROP_REASONS] = [
                "queue_full\0",
                "leaf_full\0",
                "unknown_flow\0",
                "too_large\0",
                "unclassified\0",
                "shaper_horizon\0",
                "rank_out_of_range\0",
                "policer\0",
                "evicted\0",
                "shutdown\0",
                "malformed\0",
            ];
            debug_assert_eq!(NAMES[r.index()].trim_end_matches('\0'), r.name());
            NAMES[r.index()].as_ptr().cast()
        }
        None => std::ptr::null(),
    }
}

/// Loads and validates the policy file at `path` and stores a new scheduler
/// at `*out`. On error `*out` is untouched and the message names the file,
/// line and key.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_load(
    path: *const c_char,
    out: *mut *mut EiffelScheduler,
) -> EiffelStatus {
    guard(|| {
        // SAFETY: `path` is NULL or NUL-terminated (the caller's contract).
        let path = match unsafe { str_arg(path, "path") } {
            Ok(p) => p,
            Err(s) => return s,
        };
        if out.is_null() {
            return fail(EiffelStatus::NullArgument, "out is NULL");
        }
        match Policy::load(path) {
            // SAFETY: `out` is non-NULL and writable by the caller's contract.
            Ok(p) => unsafe { create(&p, out) },
            Err(e) => fail(EiffelStatus::Policy, e),
        }
    })
}

/// Like `eiffel_scheduler_load`, from the policy's TOML `text`; errors name
/// `name`.
///
/// # Safety
/// `text` and `name` are NULL or NUL-terminated strings; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_parse(
    text: *const c_char,
    name: *const c_char,
    out: *mut *mut EiffelScheduler,
) -> EiffelStatus {
    guard(|| {
        // SAFETY: `text` and `name` are NULL or NUL-terminated (the caller's
        // contract).
        let (text, name) = match unsafe { (str_arg(text, "text"), str_arg(name, "name")) } {
            (Ok(t), Ok(n)) => (t, n),
            (Err(s), _) | (_, Err(s)) => return s,
        };
        if out.is_null() {
            return fail(EiffelStatus::NullArgument, "out is NULL");
        }
        match Policy::parse(text, name) {
            // SAFETY: `out` is non-NULL and writable by the caller's contract.
            Ok(p) => unsafe { create(&p, out) },
            Err(e) => fail(EiffelStatus::Policy, e),
        }
    })
}

/// Frees a scheduler (NULL is ignored). Packets still queued are not handed
/// back: dequeue them first if their buffers need freeing.
///
/// # Safety
/// `s` is NULL or a scheduler not yet freed, used by no other thread.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_free(s: *mut EiffelScheduler) {
    if !s.is_null() {
        // SAFETY: `s` came from `Box::into_raw` and is freed once.
        let b = unsafe { Box::from_raw(s) };
        let _ = catch_unwind(AssertUnwindSafe(move || drop(b)));
    }
}

/// Stores the class id of leaf `name` at `*leaf` (`EIFFEL_STATUS_NOT_FOUND`
/// if the policy has no leaf of that name).
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`; `name` NULL or NUL-terminated; `leaf`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_leaf(
    s: *mut EiffelScheduler,
    name: *const c_char,
    leaf: *mut u32,
) -> EiffelStatus {
    // SAFETY: `s` is NULL or a live scheduler used only by this thread
    // during the call (the caller's contract).
    with_scheduler(unsafe { s.as_mut() }, |sched| {
        // SAFETY: `name` is NULL or NUL-terminated (the caller's contract).
        let name = match unsafe { str_arg(name, "name") } {
            Ok(n) => n,
            Err(e) => return e,
        };
        if leaf.is_null() {
            return fail(EiffelStatus::NullArgument, "leaf is NULL");
        }
        match sched.tree.leaf(name) {
            Some(id) => {
                // SAFETY: non-NULL and writable by the caller's contract.
                unsafe {
                    leaf.write(id);
                }
                EiffelStatus::Ok
            }
            None => fail(
                EiffelStatus::NotFound,
                format_args!("no leaf named `{name}`"),
            ),
        }
    })
}

/// Classifies the Ethernet frame `frame[0..len]` arriving at `now_ns` by the
/// policy's rules and flow table, filling `*out` (`len`, `flow`, `leaf`,
/// `arrival_ns`; `buffer` 0 for the caller to set). A malformed frame under
/// `malformed = "drop"` returns `EIFFEL_STATUS_DROPPED` with `*out` holding its
/// length.
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`; `frame` NULL or readable for `len`
/// bytes; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_classify(
    s: *mut EiffelScheduler,
    frame: *const u8,
    len: usize,
    now_ns: u64,
    out: *mut EiffelPacket,
) -> EiffelStatus {
    // SAFETY: `s` is NULL or a live scheduler used only by this thread
    // during the call (the caller's contract).
    with_scheduler(unsafe { s.as_mut() }, |sched| {
        if frame.is_null() || out.is_null() {
            return fail(EiffelStatus::NullArgument, "frame or out is NULL");
        }
        // SAFETY: `frame` is readable for `len` bytes by the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(frame, len) };
        let (pkt, status) = match sched.classifier.classify(bytes, now_ns) {
            Ok(p) => (p, EiffelStatus::Ok),
            Err(d) => (
                d.packet,
                fail(EiffelStatus::Dropped, "malformed frame dropped"),
            ),
        };
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe {
            out.write(pkt.into());
        }
        status
    })
}

/// Offers `*pkt` at `now_ns`. `EIFFEL_STATUS_OK`: queued. `EIFFEL_STATUS_DROPPED`:
/// `*dropped` (if not NULL) holds the packet dropped and why; with
/// `EIFFEL_DROP_REASON_EVICTED` it is a queued packet pushed out, and `*pkt`
/// was queued. Allocates nothing, takes no lock.
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`; `pkt` NULL or readable; `dropped` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_enqueue(
    s: *mut EiffelScheduler,
    pkt: *const EiffelPacket,
    now_ns: u64,
    dropped: *mut EiffelDrop,
) -> EiffelStatus {
    // SAFETY: `s` is NULL or a live scheduler used only by this thread
    // during the call (the caller's contract).
    with_scheduler(unsafe { s.as_mut() }, |sched| {
        // SAFETY: `pkt` is NULL or readable (the caller's contract).
        let Some(p) = (unsafe { pkt.as_ref() }) else {
            return fail(EiffelStatus::NullArgument, "pkt is NULL");
        };
        match sched.tree.enqueue((*p).into(), now_ns) {
            Ok(()) => EiffelStatus::Ok,
            Err(d) => {
                if !dropped.is_null() {
                    // SAFETY: non-NULL and writable by the caller's contract.
                    let drop = EiffelDrop {
                        packet: d.packet.into(),
                        reason: EiffelDropReason::from(d.reason),
                    };
                    // SAFETY: non-NULL and writable by the caller's contract.
                    unsafe { dropped.write(drop) };
                }
                EiffelStatus::Dropped
            }
        }
    })
}

/// Takes the next packet to send at `now_ns` into `*out`; `EIFFEL_STATUS_EMPTY`
/// if none is ready (see `eiffel_scheduler_next_ready`). Allocates nothing,
/// takes no lock.
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_dequeue(
    s: *mut EiffelScheduler,
    now_ns: u64,
    out: *mut EiffelPacket,
) -> EiffelStatus {
    // SAFETY: `s` is NULL or a live scheduler used only by this thread
    // during the call (the caller's contract).
    with_scheduler(unsafe { s.as_mut() }, |sched| {
        if out.is_null() {
            return fail(EiffelStatus::NullArgument, "out is NULL");
        }
        match sched.tree.dequeue(now_ns) {
            Some(p) => {
                // SAFETY: non-NULL and writable by the caller's contract.
                unsafe {
                    out.write(p.into());
                }
                EiffelStatus::Ok
            }
            None => EiffelStatus::Empty,
        }
    })
}

/// Takes up to `max` packets to send at `now_ns` into `out[0..max]`, in the
/// order `eiffel_scheduler_dequeue` would give them, and stores how many at
/// `*count`; `EIFFEL_STATUS_EMPTY` (and 0) if none is ready. One call and
/// one check of the arguments for the burst, where single dequeues cross the
/// boundary once per packet. Allocates nothing, takes no lock.
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`; `out` NULL or writable for `max`
/// packets; `count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_dequeue_burst(
    s: *mut EiffelScheduler,
    now_ns: u64,
    out: *mut EiffelPacket,
    max: usize,
    count: *mut usize,
) -> EiffelStatus {
    // SAFETY: `s` is NULL or a live scheduler used only by this thread
    // during the call (the caller's contract).
    with_scheduler(unsafe { s.as_mut() }, |sched| {
        if out.is_null() || count.is_null() {
            return fail(EiffelStatus::NullArgument, "out or count is NULL");
        }
        let mut taken = 0;
        while taken < max {
            let Some(p) = sched.tree.dequeue(now_ns) else {
                break;
            };
            // SAFETY: `out` is non-NULL and writable for `max` packets (the
            // caller's contract), and `taken < max`; written, not read, as the
            // caller's buffer may be uninitialised.
            unsafe { out.add(taken).write(p.into()) };
            taken += 1;
        }
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe { count.write(taken) };
        if taken == 0 {
            EiffelStatus::Empty
        } else {
            EiffelStatus::Ok
        }
    })
}

/// Stores at `*at_ns` the earliest time after `now_ns` at which the shaper
/// releases a packet; `EIFFEL_STATUS_EMPTY` if it holds none. A caller with
/// nothing to dequeue sleeps until then or the next arrival.
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`; `at_ns` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_next_ready(
    s: *mut EiffelScheduler,
    now_ns: u64,
    at_ns: *mut u64,
) -> EiffelStatus {
    // SAFETY: `s` is NULL or a live scheduler used only by this thread
    // during the call (the caller's contract).
    with_scheduler(unsafe { s.as_mut() }, |sched| {
        if at_ns.is_null() {
            return fail(EiffelStatus::NullArgument, "at_ns is NULL");
        }
        match sched.tree.next_ready(now_ns) {
            Some(t) => {
                // SAFETY: non-NULL and writable by the caller's contract.
                unsafe {
                    at_ns.write(t);
                }
                EiffelStatus::Ok
            }
            None => EiffelStatus::Empty,
        }
    })
}

/// The whole tree's counters and backlog into `*out`:
/// `enqueued = dequeued + dropped + backlog_packets` always holds.
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_counters(
    s: *mut EiffelScheduler,
    out: *mut EiffelCounters,
) -> EiffelStatus {
    // SAFETY: `s` is NULL or a live scheduler used only by this thread
    // during the call (the caller's contract).
    with_scheduler(unsafe { s.as_mut() }, |sched| {
        if out.is_null() {
            return fail(EiffelStatus::NullArgument, "out is NULL");
        }
        let c = EiffelCounters::new(sched.tree.counters(), sched.tree.backlog());
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe {
            out.write(c);
        }
        EiffelStatus::Ok
    })
}

/// Number of nodes of the policy (0 for NULL); nodes are numbered in policy
/// file order, and a leaf's index is its class id.
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_node_count(s: *const EiffelScheduler) -> usize {
    // SAFETY: NULL or a live scheduler by the caller's contract.
    unsafe { s.as_ref() }.map_or(0, |s| s.paths.len())
}

/// The executor running the policy, a static NUL-terminated string:
/// `"pipe-tree"` when the tree has the pipe executor's shape (`drr` levels
/// over `ets` pipes over FIFO leaves, as DPDK `rte_sched`'s hierarchy),
/// `"policy-tree"` otherwise; NULL for NULL. Both send the same packets in
/// the same order.
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_executor(s: *const EiffelScheduler) -> *const c_char {
    // SAFETY: NULL or a live scheduler by the caller's contract.
    unsafe { s.as_ref() }.map_or(std::ptr::null(), |s| match s.tree.executor() {
        Executor::General => c"policy-tree".as_ptr(),
        Executor::Pipes => c"pipe-tree".as_ptr(),
    })
}

/// The path (`root/tenants/a`) of node `index`, valid until the scheduler is
/// freed; NULL if out of range.
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_node_path(
    s: *const EiffelScheduler,
    index: usize,
) -> *const c_char {
    // SAFETY: NULL or a live scheduler by the caller's contract.
    unsafe { s.as_ref() }
        .and_then(|s| s.paths.get(index))
        .map_or(std::ptr::null(), |p| p.as_ptr())
}

/// The counters and backlog of node `index`'s subtree into `*out`: for
/// monitoring, not per packet.
///
/// # Safety
/// `s` as in `eiffel_scheduler_free`; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn eiffel_scheduler_node_counters(
    s: *mut EiffelScheduler,
    index: usize,
    out: *mut EiffelCounters,
) -> EiffelStatus {
    // SAFETY: `s` is NULL or a live scheduler used only by this thread
    // during the call (the caller's contract).
    with_scheduler(unsafe { s.as_mut() }, |sched| {
        if out.is_null() {
            return fail(EiffelStatus::NullArgument, "out is NULL");
        }
        if index >= sched.paths.len() {
            return fail(
                EiffelStatus::NotFound,
                format_args!(
                    "node {index} out of range (the policy has {})",
                    sched.paths.len()
                ),
            );
        }
        let c = EiffelCounters::new(
            &sched.tree.node_counters(index),
            sched.tree.node_backlog(index),
        );
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe {
            out.write(c);
        }
        EiffelStatus::Ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::{null, null_mut};

    const POLICY: &str =
        "capacity = 16\n[shaper]\nslots = 64\n[[node]]\nname = \"root\"\ndiscipline = \"strict\"\n\
        [[node]]\nname = \"hi\"\nparent = \"root\"\npriority = 0\ncapacity = 2\n\
        [[node]]\nname = \"lo\"\nparent = \"root\"\npriority = 1\n\
        [classify]\ndefault = \"lo\"\nmax_flows = 16\n\
        [[classify.rule]]\nleaf = \"hi\"\nprotocol = \"udp\"\n\0";

    fn last_error() -> String {
        // SAFETY: eiffel_last_error returns a valid NUL-terminated string.
        unsafe { CStr::from_ptr(eiffel_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    fn load() -> *mut EiffelScheduler {
        let mut s = null_mut();
        // SAFETY: NUL-terminated strings and a writable out pointer.
        let st =
            unsafe { eiffel_scheduler_parse(POLICY.as_ptr().cast(), c"t.toml".as_ptr(), &mut s) };
        assert_eq!(st, EiffelStatus::Ok, "{}", last_error());
        s
    }

    fn leaf(s: *mut EiffelScheduler, name: &CStr) -> Result<u32, EiffelStatus> {
        let mut id = 0;
        // SAFETY: a live scheduler, a NUL-terminated name, a writable out.
        match unsafe { eiffel_scheduler_leaf(s, name.as_ptr(), &mut id) } {
            EiffelStatus::Ok => Ok(id),
            e => Err(e),
        }
    }

    /// `examples/policies/hqos.toml`, DPDK `rte_sched`'s hierarchy.
    fn hqos_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/policies/hqos.toml")
    }

    fn executor(s: *const EiffelScheduler) -> String {
        // SAFETY: a live scheduler; the name is a static NUL-terminated string.
        unsafe { CStr::from_ptr(eiffel_scheduler_executor(s)) }
            .to_string_lossy()
            .into_owned()
    }

    // 16,000 packets on a 70-node tree take miri far too long; the extern
    // functions this test calls are the other tests' too.
    #[test]
    #[cfg_attr(miri, ignore = "a long lockstep run; its unsafe paths are covered")]
    fn an_rte_shaped_policy_runs_on_the_pipe_executor_in_lockstep() {
        let path = CString::new(hqos_path().to_string_lossy().as_bytes()).unwrap();
        let mut s = null_mut();
        // SAFETY: a NUL-terminated path and a writable out pointer.
        let st = unsafe { eiffel_scheduler_load(path.as_ptr(), &mut s) };
        assert_eq!(st, EiffelStatus::Ok, "{}", last_error());
        assert_eq!(executor(s), "pipe-tree");
        let policy = Policy::load(hqos_path()).unwrap();
        let mut general = policy.build();
        let leaves: Vec<u32> = (0..policy.spec().nodes.len() as u32)
            .filter(|&i| policy.spec().is_leaf(i as usize))
            .collect();
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as u32
        };
        let mut drop = EiffelDrop {
            packet: EiffelPacket::default(),
            reason: EiffelDropReason::Shutdown,
        };
        let mut out = EiffelPacket::default();
        for step in 0..2_000u32 {
            let now = u64::from(step) * 20_000;
            for k in 0..8 {
                let p = EiffelPacket {
                    buffer: step * 8 + k,
                    len: 64 + next() % 1437,
                    leaf: leaves[next() as usize % leaves.len()],
                    deadline_ns: u64::MAX,
                    ..EiffelPacket::default()
                };
                // SAFETY: live scheduler, readable packet, writable drop record.
                let st = unsafe { eiffel_scheduler_enqueue(s, &p, now, &mut drop) };
                let reference = general.enqueue(p.into(), now);
                assert_eq!(st == EiffelStatus::Ok, reference.is_ok(), "step {step}");
            }
            for _ in 0..6 {
                // SAFETY: live scheduler, writable out.
                let st = unsafe { eiffel_scheduler_dequeue(s, now, &mut out) };
                let reference = general.dequeue(now);
                assert_eq!(st == EiffelStatus::Ok, reference.is_some(), "step {step}");
                if let Some(r) = reference {
                    assert_eq!(out.buffer, r.buffer, "step {step}: the same packet");
                }
            }
        }
        let mut c = EiffelCounters::default();
        for i in 0..general.len() {
            // SAFETY: live scheduler, an index in range, writable out.
            let st = unsafe { eiffel_scheduler_node_counters(s, i, &mut c) };
            assert_eq!(st, EiffelStatus::Ok);
            let v = general.node(i);
            assert_eq!(
                c,
                EiffelCounters::new(&v.counters, v.backlog),
                "node {}",
                v.path
            );
        }
        let c = general.counters();
        assert!(c.dequeued > 5_000, "the run sent packets: {c:?}");
        assert!(
            general.backlog().packets > 0,
            "the limits held packets back"
        );
        // SAFETY: a live scheduler, freed once; NULL names no executor.
        unsafe {
            eiffel_scheduler_free(s);
            assert!(eiffel_scheduler_executor(null()).is_null());
        }
        let strict = load();
        assert_eq!(
            executor(strict),
            "policy-tree",
            "a strict root is not a pipe tree"
        );
        // SAFETY: a live scheduler, freed once.
        unsafe { eiffel_scheduler_free(strict) };
    }

    #[test]
    fn enqueue_dequeue_and_counters() {
        let s = load();
        let (hi, lo) = (leaf(s, c"hi").unwrap(), leaf(s, c"lo").unwrap());
        assert_eq!(leaf(s, c"nope"), Err(EiffelStatus::NotFound));
        assert!(last_error().contains("no leaf named `nope`"));
        let mut drop = EiffelDrop {
            packet: EiffelPacket::default(),
            reason: EiffelDropReason::Shutdown,
        };
        for (i, l) in [lo, hi, hi, hi, 99].into_iter().enumerate() {
            let p = EiffelPacket {
                buffer: i as u32,
                len: 100,
                leaf: l,
                deadline_ns: u64::MAX,
                ..EiffelPacket::default()
            };
            // SAFETY: live scheduler, readable packet, writable drop record.
            let st = unsafe { eiffel_scheduler_enqueue(s, &p, 0, &mut drop) };
            if i < 3 {
                assert_eq!(st, EiffelStatus::Ok);
            } else {
                assert_eq!(st, EiffelStatus::Dropped);
                assert_eq!(drop.packet.buffer, i as u32);
            }
        }
        assert_eq!(drop.reason, EiffelDropReason::Unclassified, "leaf 99");
        let mut order = Vec::new();
        let mut out = EiffelPacket::default();
        // SAFETY: live scheduler, writable out.
        while unsafe { eiffel_scheduler_dequeue(s, 1, &mut out) } == EiffelStatus::Ok {
            order.push(out.buffer);
        }
        assert_eq!(order, [1, 2, 0], "strict priority");
        let mut c = EiffelCounters::default();
        // SAFETY: live scheduler, writable out.
        let st = unsafe { eiffel_scheduler_counters(s, &mut c) };
        assert_eq!(st, EiffelStatus::Ok);
        assert_eq!(
            (c.enqueued, c.dequeued, c.dropped, c.backlog_packets),
            (5, 3, 2, 0)
        );
        assert_eq!(c.dropped_packets[EiffelDropReason::LeafFull as usize], 1);
        // SAFETY: live scheduler; indices in and out of range.
        unsafe {
            assert_eq!(eiffel_scheduler_node_count(s), 3);
            let p = CStr::from_ptr(eiffel_scheduler_node_path(s, 1));
            assert_eq!(p.to_str(), Ok("root/hi"));
            assert!(eiffel_scheduler_node_path(s, 3).is_null());
            assert_eq!(
                eiffel_scheduler_node_counters(s, 1, &mut c),
                EiffelStatus::Ok
            );
            assert_eq!((c.enqueued, c.dequeued, c.dropped), (3, 2, 1));
            assert_eq!(
                eiffel_scheduler_node_counters(s, 3, &mut c),
                EiffelStatus::NotFound
            );
            eiffel_scheduler_free(s);
        }
    }

    #[test]
    fn a_burst_dequeue_takes_what_single_dequeues_would() {
        let s = load();
        let lo = leaf(s, c"lo").unwrap();
        for i in 0..16u32 {
            let p = EiffelPacket {
                buffer: i,
                len: 100,
                leaf: lo,
                deadline_ns: u64::MAX,
                ..EiffelPacket::default()
            };
            // SAFETY: live scheduler, readable packet, NULL drop record.
            let st = unsafe { eiffel_scheduler_enqueue(s, &p, 0, null_mut()) };
            assert_eq!(st, EiffelStatus::Ok, "capacity 16: {i}");
        }
        let mut out = [EiffelPacket::default(); 40];
        let mut n = 99;
        // SAFETY: live scheduler, `out` writable for the lengths given.
        unsafe {
            assert_eq!(
                eiffel_scheduler_dequeue_burst(s, 1, out.as_mut_ptr(), 3, &mut n),
                EiffelStatus::Ok
            );
            assert_eq!(n, 3);
            assert_eq!(
                eiffel_scheduler_dequeue_burst(s, 1, out[3..].as_mut_ptr(), 37, &mut n),
                EiffelStatus::Ok
            );
            assert_eq!(n, 13, "what was left");
            let order: Vec<u32> = out[..16].iter().map(|p| p.buffer).collect();
            assert_eq!(order, (0..16).collect::<Vec<u32>>(), "FIFO order");
            assert_eq!(
                eiffel_scheduler_dequeue_burst(s, 1, out.as_mut_ptr(), 40, &mut n),
                EiffelStatus::Empty
            );
            assert_eq!(n, 0);
            assert_eq!(
                eiffel_scheduler_dequeue_burst(s, 1, null_mut(), 40, &mut n),
                EiffelStatus::NullArgument
            );
            assert_eq!(
                eiffel_scheduler_dequeue_burst(s, 1, out.as_mut_ptr(), 40, null_mut()),
                EiffelStatus::NullArgument
            );
            eiffel_scheduler_free(s);
        }
    }

    #[test]
    fn null_pointers_and_bad_policies_are_errors() {
        let mut s = null_mut();
        // SAFETY: NULL arguments are allowed and reported.
        unsafe {
            assert_eq!(
                eiffel_scheduler_load(null(), &mut s),
                EiffelStatus::NullArgument
            );
            assert_eq!(
                eiffel_scheduler_load(c"x".as_ptr(), null_mut()),
                EiffelStatus::NullArgument
            );
            assert_eq!(
                eiffel_scheduler_dequeue(null_mut(), 0, null_mut()),
                EiffelStatus::NullArgument
            );
            assert_eq!(eiffel_scheduler_node_count(null()), 0);
            eiffel_scheduler_free(null_mut());
            let st = eiffel_scheduler_parse(
                c"[[node]]\nname = 3\n".as_ptr(),
                c"bad.toml".as_ptr(),
                &mut s,
            );
            assert_eq!(st, EiffelStatus::Policy);
        }
        assert!(s.is_null(), "untouched on error");
        assert!(last_error().starts_with("bad.toml:2:"), "{}", last_error());
        let s = load();
        // SAFETY: a live scheduler, NULL outs reported.
        unsafe {
            assert_eq!(
                eiffel_scheduler_dequeue(s, 0, null_mut()),
                EiffelStatus::NullArgument
            );
            assert_eq!(
                eiffel_scheduler_enqueue(s, null(), 0, null_mut()),
                EiffelStatus::NullArgument
            );
            let mut at = 0;
            assert_eq!(
                eiffel_scheduler_next_ready(s, 0, &mut at),
                EiffelStatus::Empty
            );
            eiffel_scheduler_free(s);
        }
        assert!(eiffel_drop_reason_name(99).is_null());
        // SAFETY: a valid reason gives a static NUL-terminated name.
        let name = unsafe { CStr::from_ptr(eiffel_drop_reason_name(1)) };
        assert_eq!(name.to_str(), Ok("leaf_full"));
    }

    #[test]
    fn a_panic_is_an_internal_error_and_poisons_the_scheduler() {
        let s = load();
        // SAFETY: a live scheduler used by this thread only.
        let st = with_scheduler(unsafe { s.as_mut() }, |_| panic!("boom"));
        assert_eq!(st, EiffelStatus::Internal);
        assert_eq!(last_error(), "internal error: boom");
        let mut out = EiffelPacket::default();
        // SAFETY: a live scheduler, writable out.
        unsafe {
            assert_eq!(
                eiffel_scheduler_dequeue(s, 0, &mut out),
                EiffelStatus::Poisoned
            );
            eiffel_scheduler_free(s);
        }
    }
}
