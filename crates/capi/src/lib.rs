//! Eiffel's C API: a shared (`libeiffel_capi.so`) and a static
//! (`libeiffel_capi.a`) library with a header, `eiffel.h`, generated from this
//! crate by cbindgen when it is built, so that C programs (DPDK, VPP or ns-3
//! applications) can embed Eiffel's policy trees.
//!
//! A program loads a policy file (`eiffel_scheduler_load`), turns frames into
//! packet descriptors with the policy's classifier (`eiffel_scheduler_classify`)
//! or fills descriptors itself (`eiffel_scheduler_leaf` names a leaf's id),
//! enqueues and dequeues them with the current time (`eiffel_scheduler_enqueue`,
//! `eiffel_scheduler_dequeue`, `eiffel_scheduler_next_ready` to sleep exactly
//! until the shaper releases a packet), and reads counters for the tree and each
//! node. The scheduler orders descriptors only: payload stays where the caller
//! keeps it, named by `buffer`.
//!
//! # Contract
//! - Errors are [`EiffelStatus`] codes; `eiffel_last_error()` gives the calling
//!   thread's last message.
//! - No panic crosses the boundary: every function catches one, reports
//!   [`EiffelStatus::Internal`], and the scheduler refuses later calls
//!   ([`EiffelStatus::Poisoned`]).
//! - A scheduler is used by one thread at a time (it may move between threads);
//!   enqueue and dequeue allocate nothing and take no lock.
//! - Pointers passed in are only read during the call; pointers returned
//!   (paths, messages) stay valid as their documentation says.

pub mod ffi;
pub mod types;

pub use types::{
    EiffelCounters, EiffelDrop, EiffelDropReason, EiffelPacket, EiffelStatus, EIFFEL_DROP_REASONS,
};
