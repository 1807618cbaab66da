//! The runtime handle: clients, commands, counters and shutdown. Starting the
//! threads is in `start`.

use super::arbiter::ArbiterOutput;
use super::client::{Client, ClientStats};
use super::command::ReplyTx;
use super::control::{Command, Commands, Control};
use super::lifecycle::CheckOut;
use super::report::Report;
use super::shared::Shared;
use super::start::Placement;
use super::stats::LiveStats;
use super::ShutdownMode;
use crate::clock::Clock;
use crate::sync::{lock, thread, Arc, Mutex, Ordering};
use crate::transmit::Transmit;
use crate::Error;
use eiffel_sched::Scheduler;

/// A running PSPAT instance: an arbiter thread, optional dispatcher threads, and the
/// client mailboxes.
///
/// ```
/// use eiffel_pspat::{Config, CountingSink, Dispatch, Pspat, ShutdownMode};
/// use eiffel_sched::{Fifo, Packet};
///
/// let sink = CountingSink::new(1);
/// let counters = sink.counters();
/// let rt = Pspat::start(Config::default(), Fifo::new(1024), Dispatch::Inline(sink)).unwrap();
/// let mut client = rt.client().unwrap();
/// for _ in 0..10 {
///     let mut pkt = Packet::new(0, 1500);
///     while let Err(e) = client.send(pkt) {
///         pkt = e.into_packet();
///         std::thread::yield_now();
///     }
/// }
/// drop(client);
/// let report = rt.shutdown(ShutdownMode::Drain);
/// assert_eq!(report.totals().delivered, 10);
/// assert_eq!(counters.packets(), 10);
/// ```
pub struct Pspat<S, X> {
    pub(super) shared: Arc<Shared>,
    pub(super) arbiter: Option<thread::JoinHandle<ArbiterOutput<S, X>>>,
    pub(super) dispatchers: Vec<thread::JoinHandle<X>>,
    pub(super) placement: Arc<Mutex<Placement>>,
    pub(super) max_clients: usize,
    pub(super) commands: Commands<S>,
}

impl<S, X> core::fmt::Debug for Pspat<S, X> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pspat")
            .field("shared", &self.shared)
            .field("max_clients", &self.max_clients)
            .finish_non_exhaustive()
    }
}

impl<S, X> Pspat<S, X>
where
    S: Scheduler + Send + 'static,
    X: Transmit + 'static,
{
    /// Runs `f` on the arbiter thread, between two rounds, with the scheduler in
    /// hand, and returns its result. Blocks until the arbiter has run it: within a
    /// round interval while the arbiter is busy; a sleeping arbiter is woken.
    /// Calls from several threads run one after the other.
    ///
    /// Use it to read what only the scheduler knows (per-node counters) or to
    /// change the scheduler in place (see [`Control`] for the rules on packets
    /// taken out of it). The arbiter does nothing else while `f` runs.
    ///
    /// # Errors
    /// [`Error::Closed`] once shutdown has started or if the arbiter has stopped.
    pub fn with_scheduler<R>(
        &self,
        f: impl FnOnce(&mut Control<'_, S>) -> R + Send + 'static,
    ) -> Result<R, Error>
    where
        R: Send + 'static,
    {
        if self.shared.life.is_closed() {
            return Err(Error::Closed);
        }
        // The arbiter drops the command (and with it `reply`) if it stops first.
        let command = |reply: ReplyTx<R>| -> Command<S> {
            Box::new(move |ctl: &mut Control<'_, S>| {
                let out = f(ctl);
                Box::new(move || reply.send(out))
            })
        };
        self.commands
            .call(command, || self.shared.arbiter.notify())
            .ok_or(Error::Closed)
    }

    /// A new client with its own mailbox.
    ///
    /// # Errors
    /// [`Error::TooManyClients`] when `max_clients` handles are alive,
    /// [`Error::Closed`] after shutdown started.
    pub fn client(&self) -> Result<Client, Error> {
        let (index, producer) = self.shared.life.check_out().map_err(|e| match e {
            CheckOut::Closed => Error::Closed,
            CheckOut::Exhausted => Error::TooManyClients {
                max: self.max_clients,
            },
        })?;
        Ok(Client {
            drops_seen: self.shared.clients[index as usize]
                .drops
                .load(Ordering::Relaxed),
            shared: Arc::clone(&self.shared),
            index,
            producer: Some(producer),
            stats: ClientStats::default(),
        })
    }

    /// Stops the runtime and accounts for every packet.
    ///
    /// Refuses new sends at once, then **waits until every [`Client`] handle is
    /// dropped** (so that no push can race with the final drain), then stops the
    /// arbiter and the dispatchers.
    ///
    /// # Panics
    /// If the arbiter or a dispatcher thread panicked.
    pub fn shutdown(mut self, mode: ShutdownMode) -> Report<S, X> {
        match self.stop(mode) {
            Some(Ok(report)) => report,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => unreachable!("a runtime is stopped only by shutdown or drop"),
        }
    }
}

type Joined<T> = Result<T, Box<dyn std::any::Any + Send + 'static>>;

impl<S, X> Pspat<S, X> {
    /// The runtime clock (what the arbiter passes to the scheduler as `now`).
    #[must_use]
    pub fn clock(&self) -> Clock {
        self.shared.clock
    }

    /// The arbiter's counters, as of its last round.
    #[must_use]
    pub fn stats(&self) -> LiveStats {
        self.shared.live.snapshot()
    }

    /// Where the threads run: pinning failures, if any (they are not fatal).
    #[must_use]
    pub fn placement(&self) -> Placement {
        lock(&self.placement).clone()
    }

    /// Closes, waits for clients, stops and joins the threads. `None` if already
    /// stopped; `Err` with the panic of a runtime thread that panicked.
    fn stop(&mut self, mode: ShutdownMode) -> Option<Joined<Report<S, X>>> {
        let arbiter = self.arbiter.take()?;
        self.shared.life.close_and_wait();
        self.shared.life.stop(mode);
        self.shared.arbiter.notify();
        let arbiter = arbiter.join();
        if arbiter.is_err() {
            // The arbiter will not release the dispatchers: do it here.
            self.shared.release_dispatchers();
        }
        let mut sinks = Vec::with_capacity(self.dispatchers.len() + 1);
        let mut panic = None;
        for d in self.dispatchers.drain(..) {
            match d.join() {
                Ok(x) => sinks.push(x),
                Err(p) => panic = Some(p),
            }
        }
        let out = match arbiter {
            Ok(out) => out,
            Err(p) => return Some(Err(p)),
        };
        if let Some(p) = panic {
            return Some(Err(p));
        }
        sinks.extend(out.inline);
        Some(Ok(Report {
            scheduler: out.scheduler,
            sinks,
            clients: out.clients,
            stats: out.stats,
        }))
    }
}

impl<S, X> core::ops::Drop for Pspat<S, X> {
    /// Dropping a runtime that was not shut down stops its threads, discarding what
    /// the scheduler holds; like [`Pspat::shutdown`] it first waits for live
    /// clients to be dropped.
    fn drop(&mut self) {
        let _ = self.stop(ShutdownMode::Discard);
    }
}
