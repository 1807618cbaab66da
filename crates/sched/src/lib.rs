//! Packet schedulers for Eiffel.
//!
//! - [`time`]: instants, [`Duration`]s, [`Rate`]s and the one conversion between
//!   bytes, rate and time.
//! - [`packet`]: the `Copy` packet descriptor.
//! - [`scheduler`]: the [`Scheduler`] interface, drop reasons and counters.
//! - [`pool`]: preallocated packet storage with intrusive per-flow FIFOs.
//! - [`fifo`]: the FIFO scheduler.
//! - [`prio`]: strict priority over up to 64 levels ([`Prio`]).
//! - [`flows`]: the [`FlowCore`] interface of the per-flow fair-queueing cores and
//!   [`PerFlow`], the packet scheduler built around any core.
//! - [`drr`], [`wf2q`], [`qfq`], [`stfq`]: the cores of Deficit Round Robin, exact
//!   WF²Q+, Quick Fair Queueing and Start-time Fair Queueing, and the schedulers
//!   [`Drr`], [`Wf2qPlus`], [`Qfq`], [`Stfq`].
//! - [`vtime`]: the fixed-point virtual time shared by the timestamp-based cores.
//! - [`tree`]: the policy tree (Eiffel's programmable scheduler) and its one shaper.
//!
//! ```
//! use eiffel_sched::{FlowConfig, FlowScheduler, Packet, Qfq, Scheduler};
//!
//! let mut q = Qfq::new(2, 1024).unwrap();
//! q.add_flow(0, FlowConfig::weight(3)).unwrap();
//! q.add_flow(1, FlowConfig::weight(1)).unwrap();
//! for _ in 0..4 {
//!     q.enqueue(Packet::new(0, 1000), 0).unwrap();
//!     q.enqueue(Packet::new(1, 1000), 0).unwrap();
//! }
//! let first: Vec<u32> = (0..4).map(|_| q.dequeue(0).unwrap().flow).collect();
//! assert_eq!(first.iter().filter(|&&f| f == 0).count(), 3);
//! ```

pub mod chunks;
pub mod drr;
pub mod fifo;
pub mod flows;
mod heap;
pub mod packet;
pub mod pool;
pub mod prio;
pub mod qfq;
pub mod scheduler;
pub mod stfq;
pub mod time;
pub mod tree;
pub mod vtime;
pub mod wf2q;

pub use drr::{Drr, DrrCore};
pub use fifo::Fifo;
pub use flows::{FlowCore, FlowQueue, PacketCore, PerFlow, MAX_FLOWS};
pub use packet::{ClassId, FlowId, Nanos, Packet, NO_DEADLINE};
pub use pool::{Fifo as PacketFifo, PacketPool, MAX_POOL_CAPACITY};
pub use prio::Prio;
pub use qfq::{Qfq, QfqCore};
pub use scheduler::{
    Backlog, ConfigError, Counters, DropCounts, DropReason, Dropped, FlowConfig, FlowScheduler,
    Scheduler,
};
pub use stfq::{Stfq, StfqCore};
pub use time::{Duration, Rate};
pub use tree::{AutoTree, PolicyTree};
pub use wf2q::{Wf2qCore, Wf2qPlus};
