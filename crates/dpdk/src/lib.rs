//! DPDK's hierarchical scheduler (`rte_sched`) from the system's DPDK (Debian's
//! `libdpdk-dev`, 22.11), for side-by-side benchmarks with Eiffel's policy tree.
//!
//! [`sys`] holds the bindings bindgen generates at build time from DPDK's headers
//! and a small C shim over DPDK's inline functions (mbuf allocation and length,
//! `rte_errno`). The safe layer on top covers what a benchmark needs:
//!
//! - [`eal`]: the environment abstraction layer, started once per process as a
//!   plain process (`--no-huge --no-pci --no-shconf`: no hugepages, no shared files, one lcore, no telemetry), so
//!   that no hugepages, NIC or privileges are needed;
//! - [`Mempool`] and [`Burst`]: mbufs from an `rte_mempool`, handled in bursts;
//! - [`SchedPort`]: one `rte_sched` port configured from a [`PortConfig`]
//!   (subports, pipes, pipe profiles, 13 traffic classes per pipe, the
//!   best-effort class's 4 WRR queues), with enqueue, dequeue and statistics;
//! - [`VirtualTsc`]: the timestamp counter `rte_sched` reads, answering with a
//!   count the caller advances (a run on a virtual clock).
//!
//! Everything is behind the `dpdk` feature: without it the crate is empty, so a
//! workspace build needs no DPDK, libclang or pkg-config.

#![allow(unsafe_code)]
// an FFI crate: every call into DPDK is unsafe
// Without the feature the items the overview links to do not exist.
#![cfg_attr(not(feature = "dpdk"), allow(rustdoc::broken_intra_doc_links))]
#![cfg(feature = "dpdk")]

mod eal;
mod error;
mod mbuf;
mod sched;
mod vtsc;

pub use eal::{eal, Eal};
pub use error::{DpdkError, SchedConfigError};
pub use mbuf::{Burst, Mempool, MAX_BURST};
pub use sched::{
    PipeProfile, PortConfig, QueuePath, QueueStats, SchedPort, SubportProfile, BE_QUEUES, BE_TC,
    QUEUES_PER_PIPE, TRAFFIC_CLASSES,
};
pub use vtsc::VirtualTsc;

/// The generated bindings (DPDK's types and functions the crate uses, and the shim).
#[allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    missing_docs,
    dead_code,
    unsafe_code,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]
pub mod sys {
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}
