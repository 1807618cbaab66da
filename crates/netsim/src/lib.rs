//! A packet-level discrete-event network simulator with an Eiffel policy tree
//! at every output port: the papers' multi-hop experiments (Eiffel NSDI'19
//! Fig. 15, QFQ section 6, programmable calendar queues NSDI'20 section 4).
//!
//! ## Layers, bottom up
//! - [`time`]: simulated instants, durations and link rates (integer
//!   nanoseconds and bits per second).
//! - [`event`]: the future event list, on Eiffel's timing wheel (one-nanosecond
//!   slots, exact) with a heap beyond its horizon; a binary-heap baseline.
//! - [`topology`], [`routing`]: hosts, switches, full-duplex links; leaf-spine,
//!   k-ary fat tree, dumbbell, parking lot, hand-made; shortest paths with ECMP
//!   by flow hash.
//! - [`packet`], [`port`], [`slots`], [`live`], [`histogram`]: 56-byte packets
//!   in a preallocated store; output ports with a byte buffer, drop-tail or
//!   pFabric's drop of the lowest priority, DCTCP marking, random loss, a
//!   policy tree ([`eiffel_sched::PolicyTree`]) ordering the buffer, the link's
//!   in-flight packets; [`portq`]: the port's queue, its policy tree or, for
//!   one FIFO leaf and one pFabric leaf, a specialised queue that serves
//!   exactly as that tree.
//! - [`transport`]: TCP NewReno, DCTCP, pFabric's rate control, constant-rate
//!   and on/off datagrams, as sans-IO state machines.
//! - [`cdf`], [`workload`]: empirical flow-size distributions (web search, data
//!   mining) and the flows of a run: Poisson arrivals at a load, coflows,
//!   incast, explicit flows.
//! - [`sim`]: the event loop and what a run measures; [`setup`]: schemes and
//!   the per-port trees built from policy files.
//! - [`scenario`], [`sweep`], [`report`], [`plot`]: scenario files, sweeps over
//!   loads and seeds in parallel, tables and JSON, SVG figures.
//!
//! The CLI's `eiffel sim SCENARIO.toml [--quick] [--json] [--plot F.svg]` is
//! a thin adapter over [`scenario::Scenario::load`], [`sweep::run`] and
//! [`plot::plot`].
//!
//! ## What a run costs
//! A packet crossing a hop is one arrival event, and one end-of-transmission
//! event when packets queue behind it; an enqueue and a dequeue at the port's
//! queue; no allocation (packets, events, flow state and trees are preallocated
//! before the run). A run is deterministic: the same scenario and seed give
//! byte-identical reports on any number of threads.
//!
//! ```
//! use std::path::Path;
//! use eiffel_netsim::scenario::Scenario;
//! use eiffel_netsim::sweep::{self, SweepOptions};
//!
//! let text = r#"
//!     [topology]
//!     kind = "dumbbell"
//!     senders = 2
//!     receivers = 1
//!     access_link = { rate = "10Gbit", delay = "1us" }
//!     bottleneck = { rate = "10Gbit", delay = "5us" }
//!     [[traffic]]
//!     name = "two"
//!     kind = "incast"
//!     senders = ["s0", "s1"]
//!     receiver = "r0"
//!     size = "100KB"
//!     [[scheme]]
//!     name = "dctcp"
//!     transport = "dctcp"
//!     policy = "fifo"
//! "#;
//! let scenario = Scenario::parse(text, "two.toml", Path::new(".")).unwrap();
//! let report = sweep::run(&scenario, SweepOptions::default(), &|_| {}).unwrap();
//! assert_eq!(report.coflows[0].completed, 1);
//! // 200 KB and headers through one 10 Gbit/s link: about 0.17 ms.
//! assert!(report.coflows[0].mean_cct_ms > 0.16 && report.coflows[0].mean_cct_ms < 0.5);
//! ```

pub mod cdf;
pub mod event;
pub mod histogram;
pub mod live;
pub mod packet;
pub mod plot;
pub mod port;
pub mod portq;
pub mod report;
pub mod routing;
pub mod scenario;
pub mod setup;
pub mod sim;
pub mod slots;
pub mod sweep;
pub mod time;
pub mod topology;
pub mod transport;
pub mod workload;
