//! Commands run on the arbiter thread between rounds
//! ([`Pspat::with_scheduler`](super::Pspat::with_scheduler)), and the hook that
//! sees every dropped packet.

use super::command::CommandSlot;
use crate::link::Link;
use crate::sync::Arc;
use eiffel_sched::{ConfigError, DropReason, Nanos, Packet};

/// What a packet dropped by the scheduler is handed to (see
/// [`Pspat::start_with_drop_hook`](super::Pspat::start_with_drop_hook)): the packet, with its own `buffer`, and the
/// reason. Runs on the arbiter thread.
pub type DropHook = Box<dyn FnMut(Packet, DropReason) + Send>;

/// A command for the arbiter, queued by [`Pspat::with_scheduler`](super::Pspat::with_scheduler). It returns the
/// delivery of its result, which the arbiter calls once its own bookkeeping of the
/// command (drops, counters) is done.
pub(super) type Command<S> = Box<dyn FnOnce(&mut Control<'_, S>) -> Box<dyn FnOnce()> + Send>;

/// The command slot shared by [`Pspat::with_scheduler`](super::Pspat::with_scheduler) and the arbiter.
pub(super) type Commands<S> = Arc<CommandSlot<Command<S>>>;

/// The scheduler in hand on the arbiter thread, between two rounds: what a
/// [`Pspat::with_scheduler`](super::Pspat::with_scheduler) closure works with.
///
/// Packets inside the scheduler carry the arbiter's tag in `buffer`, not their own
/// buffer: a closure that takes packets out (to move them into a replacement
/// scheduler, say) must put every one back into the scheduler, unchanged but for
/// `class`, `flow` and the rank fields, or hand it to [`Control::drop_packet`].
pub struct Control<'a, S> {
    pub(super) sched: &'a mut S,
    pub(super) now: Nanos,
    pub(super) drops: &'a mut Vec<(Packet, DropReason)>,
    pub(super) link_rate: &'a mut u64,
}

impl<S> Control<'_, S> {
    /// The scheduler.
    pub fn scheduler(&mut self) -> &mut S {
        self.sched
    }

    /// The runtime clock at the start of this command.
    #[must_use]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Drops a packet taken out of the scheduler: it is accounted to its client
    /// under `reason` and handed to the drop hook, as if the scheduler had dropped
    /// it.
    pub fn drop_packet(&mut self, packet: Packet, reason: DropReason) {
        self.drops.push((packet, reason));
    }

    /// The emulated link's rate in bits per second.
    #[must_use]
    pub fn link_rate(&self) -> u64 {
        *self.link_rate
    }

    /// Changes the emulated link's rate for the packets released from now on.
    ///
    /// # Errors
    /// A rate outside the link's range (nothing changes).
    pub fn set_link_rate(&mut self, rate_bps: u64) -> Result<(), ConfigError> {
        if Link::new(rate_bps).is_none() {
            return Err(ConfigError::OutOfRange {
                what: "link_rate_bps",
                value: rate_bps,
                range: "1e3..=1e16",
            });
        }
        *self.link_rate = rate_bps;
        Ok(())
    }
}

impl<S> core::fmt::Debug for Control<'_, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Control")
            .field("now", &self.now)
            .field("link_rate", &self.link_rate)
            .finish_non_exhaustive()
    }
}

/// The arbiter's hold on the command slot. Dropped when the arbiter ends, even by
/// a panic: the slot is closed and the waiting command dropped, which releases
/// its caller.
pub(super) struct CommandGuard<S>(pub(super) Commands<S>);

impl<S> core::ops::Drop for CommandGuard<S> {
    fn drop(&mut self) {
        self.0.close();
    }
}
