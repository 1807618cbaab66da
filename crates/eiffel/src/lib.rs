//! Eiffel: software packet scheduling that is both fast and programmable.
//!
//! One crate to depend on; it re-exports the parts, each its own crate:
//!
//! | module | crate | what |
//! |---|---|---|
//! | [`queue`] | `eiffel-queue` | bucketed integer priority queues (`ffs`, `hffs`, `cffs`, gradient queues, timing wheel, calendar queues); `no_std` + `alloc` |
//! | [`sched`] | `eiffel-sched` | the packet descriptor, one [`Scheduler`] interface, FIFO, strict priority, DRR, QFQ, WF²Q+, STFQ, and the [`PolicyTree`] with its one shaper |
//! | [`classify`] | `eiffel-classify` | sans-IO header parsing, first-match rules, a bounded flow table |
//! | [`sim`] | `eiffel-sim` | an emulated link in exact integer time, workloads, the GPS fluid reference and service metrics |
//! | [`policy`] | `eiffel-policy` | policy and workload files (TOML) compiled into a tree and a classifier |
//! | [`pcap`] | `eiffel-pcap` | pcap and pcapng captures replayed through a policy on the emulated link, departures written back |
//! | `pspat` (feature `pspat`, Linux) | `eiffel-pspat` | many client threads, one arbiter, lock-free mailboxes |
//! | `net` (feature `net`, Linux) | `eiffel-net` | AF_PACKET rings and the live bump in the wire |
//!
//! Time is passed in: every call that depends on time takes `now`, nanoseconds from
//! an origin the caller picks ([`Nanos`]), so the same scheduler runs in virtual time
//! and in real time. Configured spans and rates are [`Duration`]s and [`Rate`]s.
//!
//! # A policy in code
//! A tree of two tenants sharing a rate-limited link 3:1, the first ordering its
//! flows by earliest deadline:
//!
//! ```
//! use eiffel::sched::tree::{Discipline, NodeSpec, PerFlow, RateLimit, TreeSpec};
//! use eiffel::{Packet, PolicyTree, Rate, Scheduler};
//!
//! let mut spec = TreeSpec::new(1024); // packets the whole tree holds
//! let mut root = NodeSpec::new("root", None);
//! root.discipline = Discipline::WFQ;
//! root.limit = Some(RateLimit { rate: Rate::from_mbps(100), burst: 3000 });
//! let root = spec.add(root);
//! let mut a = NodeSpec::new("tenant-a", Some(root));
//! a.weight = 3;
//! a.discipline = Discipline::EDF;
//! a.per_flow = Some(PerFlow { max_flows: 16, flow_limit: None, flow_queue_limit: None });
//! spec.add(a);
//! spec.add(NodeSpec::new("tenant-b", Some(root)));
//! let mut tree = PolicyTree::new(spec).unwrap();
//!
//! // Packets name their leaf in `class` (a classifier sets it) and, at a per-flow
//! // leaf, their flow in `flow`.
//! let (a, b) = (tree.leaf("tenant-a").unwrap(), tree.leaf("tenant-b").unwrap());
//! let mut late = Packet::new(1, 1000).class(a);
//! late.deadline = 900_000; // ns; EDF orders deadlines to within 10 us by default
//! let mut soon = Packet::new(2, 1000).class(a);
//! soon.deadline = 200_000;
//! tree.enqueue(late, 0).unwrap();
//! tree.enqueue(soon, 0).unwrap();
//! for _ in 0..4 {
//!     tree.enqueue(Packet::new(0, 1000).class(b), 0).unwrap();
//! }
//!
//! // Send at 100 Mbit/s: each 1000-byte packet takes 80 us.
//! let mut now = 0;
//! let mut sent = Vec::new();
//! while let Some(at) = tree.next_ready(now) {
//!     now = now.max(at);
//!     let pkt = tree.dequeue(now).expect("ready");
//!     sent.push((pkt.class, pkt.flow));
//!     now += Rate::from_mbps(100).tx_time(u64::from(pkt.len)).as_nanos();
//! }
//! // Tenant A's earliest deadline goes first; B is not starved; every packet left.
//! assert_eq!(sent[0], (a, 2));
//! assert!(sent[..3].contains(&(b, 0)));
//! assert_eq!(sent.len(), 6);
//! assert_eq!(tree.counters().dequeued, 6);
//! ```
//!
//! The same tree from a policy file, with its classification rules, is
//! [`policy::Policy::parse`]; a node ordered by a rank function of your own is
//! [`PolicyTree::set_transaction`] with a [`sched::tree::Transaction`].

pub use eiffel_classify as classify;
pub use eiffel_pcap as pcap;
pub use eiffel_policy as policy;
pub use eiffel_queue as queue;
pub use eiffel_sched as sched;
pub use eiffel_sim as sim;

#[cfg(feature = "net")]
pub use eiffel_net as net;
#[cfg(feature = "pspat")]
pub use eiffel_pspat as pspat;

pub use eiffel_policy::Policy;
pub use eiffel_sched::time::{Duration, Nanos, Rate};
pub use eiffel_sched::tree::{Discipline, NodeSpec, TreeSpec};
pub use eiffel_sched::{AutoTree, DropReason, Dropped, Packet, PolicyTree, Scheduler};
