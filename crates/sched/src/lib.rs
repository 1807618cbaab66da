//! Packet schedulers for Eiffel.
//!
//! - [`packet`]: the `Copy` packet descriptor and time type.
//! - [`scheduler`]: the [`Scheduler`] interface, drop reasons and counters.
//! - [`pool`]: preallocated packet storage with intrusive per-flow FIFOs.
//! - [`fifo`]: the FIFO scheduler.
//! - [`tree`]: the policy tree (Eiffel's programmable scheduler) and its one shaper.

pub mod fifo;
pub mod packet;
pub mod pool;
pub mod scheduler;
pub mod tree;

pub use fifo::Fifo;
pub use packet::{ClassId, FlowId, Nanos, Packet, NO_DEADLINE};
pub use pool::{Fifo as PacketFifo, PacketPool};
pub use scheduler::{
    Backlog, ConfigError, Counters, Drop, DropCounts, DropReason, FlowConfig, FlowScheduler,
    Scheduler,
};
pub use tree::PolicyTree;
