//! Starting a runtime: mailboxes, shared state, the dispatcher threads and the
//! arbiter thread, each placed and prioritised as configured.
//!
//! A thread that cannot be started fails the whole start, and no thread outlives
//! it: the dispatchers already running are released and joined before the error is
//! returned.

use super::arbiter::{Arbiter, ArbiterParts};
use super::command::CommandSlot;
use super::config::Config;
use super::control::{Commands, DropHook};
use super::dispatcher::Dispatcher;
use super::handle::Pspat;
use super::output::Output;
use super::shared::Shared;
use super::Dispatch;
use crate::link::Link;
use crate::mailbox::{self, Consumer, Producer};
use crate::sync::{lock, thread, Arc, Mutex};
use crate::transmit::Transmit;
use crate::{affinity, Error};
use eiffel_sched::{Packet, Scheduler};
use std::time::Duration;

/// Whether each thread got the CPU it was configured for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// The arbiter's pinning error, if it asked for a CPU and did not get it.
    pub arbiter: Option<String>,
    /// The error setting the arbiter's nice value or real-time priority, if asked
    /// and refused.
    pub arbiter_priority: Option<String>,
    /// Dispatchers' pinning errors.
    pub dispatchers: Vec<String>,
}

/// Starts the runtime's threads. The OS in production; tests substitute a
/// spawner that fails on purpose.
pub(super) trait Spawn {
    /// Starts `f` on a new thread called `name`.
    fn spawn<F, T>(&mut self, name: String, f: F) -> std::io::Result<thread::JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static;
}

/// Threads from the OS.
pub(super) struct OsSpawn;

impl Spawn for OsSpawn {
    fn spawn<F, T>(&mut self, name: String, f: F) -> std::io::Result<thread::JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        thread::Builder::new().name(name).spawn(f)
    }
}

/// The client mailboxes: producers for the pool (lowest index handed out first),
/// consumers for the arbiter, and the capacity of each.
type ClientMailboxes = (Vec<(u32, Producer<Packet>)>, Vec<Consumer<Packet>>, usize);

fn client_mailboxes(cfg: &Config) -> Result<ClientMailboxes, Error> {
    let mut producers = Vec::with_capacity(cfg.max_clients);
    let mut consumers = Vec::with_capacity(cfg.max_clients);
    for i in 0..cfg.max_clients {
        let (p, c) = mailbox::mailbox::<Packet>(cfg.mailbox_capacity)?;
        producers.push((i as u32, p));
        consumers.push(c);
    }
    // The pool hands out from the back: low indices first.
    producers.reverse();
    let slots = consumers[0].capacity();
    Ok((producers, consumers, slots))
}

type TxMailboxes = (Vec<Producer<Packet>>, Vec<Consumer<Packet>>);

fn tx_mailboxes(cfg: &Config, dispatchers: usize) -> Result<TxMailboxes, Error> {
    let mut producers = Vec::with_capacity(dispatchers);
    let mut consumers = Vec::with_capacity(dispatchers);
    for _ in 0..dispatchers {
        let (p, c) = mailbox::mailbox::<Packet>(cfg.tx_capacity)?;
        producers.push(p);
        consumers.push(c);
    }
    Ok((producers, consumers))
}

fn check_dispatch<X>(dispatch: &Dispatch<X>) -> Result<(), Error> {
    if let Dispatch::Threads(s) = dispatch {
        if s.is_empty() || s.len() > 1024 {
            return Err(Error::Config(eiffel_sched::ConfigError::OutOfRange {
                what: "dispatcher sinks",
                value: s.len() as u64,
                range: "1..=1024",
            }));
        }
    }
    Ok(())
}

/// Releases and joins dispatchers started before a failure.
fn abandon<X>(shared: &Shared, dispatchers: Vec<thread::JoinHandle<X>>) {
    shared.release_dispatchers();
    for d in dispatchers {
        // A dispatcher's panic is not the error being reported.
        let _ = d.join();
    }
}

/// Pins the calling dispatcher thread and sets its priority, recording failures.
fn place_dispatcher(
    i: usize,
    cpu: Option<usize>,
    realtime: Option<i32>,
    placement: &Mutex<Placement>,
) {
    if let Some(cpu) = cpu {
        if let Err(e) = affinity::pin_current_thread(cpu) {
            lock(placement)
                .dispatchers
                .push(format!("dispatcher {i} on cpu {cpu}: {e}"));
        }
    }
    if let Some(prio) = realtime {
        if let Err(e) = affinity::set_current_thread_realtime(prio) {
            lock(placement)
                .dispatchers
                .push(format!("dispatcher {i} real-time priority {prio}: {e}"));
        }
    }
}

/// Starts one dispatcher thread per sink. On a failure, those already started are
/// released and joined.
fn spawn_dispatchers<X: Transmit + 'static>(
    cfg: &Config,
    shared: &Arc<Shared>,
    sinks: Vec<X>,
    rxs: Vec<Consumer<Packet>>,
    placement: &Arc<Mutex<Placement>>,
    spawner: &mut impl Spawn,
) -> Result<Vec<thread::JoinHandle<X>>, Error> {
    let mut handles = Vec::with_capacity(sinks.len());
    for (i, (sink, rx)) in sinks.into_iter().zip(rxs).enumerate() {
        let cpu = (!cfg.dispatcher_cpus.is_empty())
            .then(|| cfg.dispatcher_cpus[i % cfg.dispatcher_cpus.len()]);
        let worker = Dispatcher {
            shared: Arc::clone(shared),
            index: i,
            rx,
            sink,
            idle_spin: cfg.idle_spin,
        };
        let placement = Arc::clone(placement);
        let realtime = cfg.dispatcher_realtime;
        let spawned = spawner.spawn(format!("pspat-dispatch-{i}"), move || {
            place_dispatcher(i, cpu, realtime, &placement);
            worker.run()
        });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                abandon(shared, handles);
                return Err(Error::Spawn(e));
            }
        }
    }
    Ok(handles)
}

/// How the arbiter thread places itself.
#[derive(Clone, Copy)]
struct ArbiterPlacement {
    cpu: Option<usize>,
    nice: Option<i32>,
    realtime: Option<i32>,
    timer_slack: Duration,
}

impl ArbiterPlacement {
    fn of(cfg: &Config) -> Self {
        ArbiterPlacement {
            cpu: cfg.arbiter_cpu,
            nice: cfg.arbiter_nice,
            realtime: cfg.arbiter_realtime,
            timer_slack: cfg.timer_slack,
        }
    }

    /// Applies the placement to the calling thread, recording failures.
    fn apply(self, placement: &Mutex<Placement>) {
        if let Some(cpu) = self.cpu {
            if let Err(e) = affinity::pin_current_thread(cpu) {
                lock(placement).arbiter = Some(format!("arbiter on cpu {cpu}: {e}"));
            }
        }
        if let Some(nice) = self.nice {
            if let Err(e) = affinity::set_current_thread_nice(nice) {
                lock(placement).arbiter_priority = Some(format!("arbiter nice {nice}: {e}"));
            }
        }
        if let Some(prio) = self.realtime {
            if let Err(e) = affinity::set_current_thread_realtime(prio) {
                lock(placement).arbiter_priority =
                    Some(format!("arbiter real-time priority {prio}: {e}"));
            }
        }
        // A failure leaves the default slack: later wake-ups, nothing worse.
        let _ = affinity::set_current_thread_timer_slack(
            u64::try_from(self.timer_slack.as_nanos()).unwrap_or(u64::MAX),
        );
    }
}

impl<S, X> Pspat<S, X>
where
    S: Scheduler + Send + 'static,
    X: Transmit + 'static,
{
    /// Allocates every mailbox and starts the arbiter (and dispatcher threads).
    ///
    /// # Errors
    /// [`Error::Config`] for an invalid configuration or an empty dispatcher list,
    /// [`Error::Spawn`] if a thread cannot be started (no thread is left running).
    pub fn start(cfg: Config, scheduler: S, dispatch: Dispatch<X>) -> Result<Self, Error> {
        Self::start_with_drop_hook(cfg, scheduler, dispatch, None)
    }

    /// As [`Pspat::start`], and every packet the scheduler drops (at admission, by
    /// a [`Control::drop_packet`](super::Control::drop_packet), or discarded at
    /// shutdown) is handed to `on_drop` on the arbiter thread, with its own
    /// `buffer` restored.
    ///
    /// # Errors
    /// As for [`Pspat::start`].
    pub fn start_with_drop_hook(
        cfg: Config,
        scheduler: S,
        dispatch: Dispatch<X>,
        on_drop: Option<DropHook>,
    ) -> Result<Self, Error> {
        Self::start_with(cfg, scheduler, dispatch, on_drop, &mut OsSpawn)
    }

    /// [`Pspat::start_with_drop_hook`] with threads from `spawner`.
    pub(super) fn start_with(
        cfg: Config,
        scheduler: S,
        dispatch: Dispatch<X>,
        on_drop: Option<DropHook>,
        spawner: &mut impl Spawn,
    ) -> Result<Self, Error> {
        cfg.validate()?;
        check_dispatch(&dispatch)?;
        let (producers, consumers, mailbox_slots) = client_mailboxes(&cfg)?;
        let (sinks, inline) = match dispatch {
            Dispatch::Inline(x) => (Vec::new(), Some(x)),
            Dispatch::Threads(xs) => (xs, None),
        };
        let (tx, tx_rx) = tx_mailboxes(&cfg, sinks.len())?;
        let shared = Arc::new(Shared::new(producers, affinity::cpu_count(), sinks.len()));
        let placement = Arc::new(Mutex::new(Placement::default()));
        let dispatchers = spawn_dispatchers(&cfg, &shared, sinks, tx_rx, &placement, spawner)?;
        let commands: Commands<S> = Arc::new(CommandSlot::default());
        let arbiter = Arbiter::new(ArbiterParts {
            shared: Arc::clone(&shared),
            sched: scheduler,
            commands: Arc::clone(&commands),
            on_drop,
            consumers,
            out: match inline {
                Some(sink) => Output::inline(sink),
                None => Output::tx(tx, mailbox_slots + 1),
            },
            mailbox_slots,
            link: Link::new(cfg.link_rate_bps).expect("validated"),
            round_interval: cfg.round_interval,
            idle_spin: cfg.idle_spin,
            aggregate: cfg.aggregate,
        });
        let place = ArbiterPlacement::of(&cfg);
        let arbiter_placement = Arc::clone(&placement);
        let spawned = spawner.spawn("pspat-arbiter".into(), move || {
            place.apply(&arbiter_placement);
            arbiter.run()
        });
        let handle = match spawned {
            Ok(h) => h,
            Err(e) => {
                abandon(&shared, dispatchers);
                return Err(Error::Spawn(e));
            }
        };
        Ok(Pspat {
            shared,
            arbiter: Some(handle),
            dispatchers,
            placement,
            max_clients: cfg.max_clients,
            commands,
        })
    }
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::*;
    use crate::transmit::NoopSink;
    use eiffel_sched::Fifo;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Fails the `fail_at`-th spawn (0-based); starts the others on the OS.
    struct FailingSpawn {
        fail_at: usize,
        calls: usize,
    }

    impl Spawn for FailingSpawn {
        fn spawn<F, T>(&mut self, name: String, f: F) -> std::io::Result<thread::JoinHandle<T>>
        where
            F: FnOnce() -> T + Send + 'static,
            T: Send + 'static,
        {
            let call = self.calls;
            self.calls += 1;
            if call == self.fail_at {
                return Err(std::io::Error::other("injected spawn failure"));
            }
            OsSpawn.spawn(name, f)
        }
    }

    /// A sink that counts how many of its kind were dropped: a dispatcher thread
    /// drops its sink only when it ends (or hands it back to the joiner).
    struct DropCounted(Arc<AtomicUsize>);

    impl Transmit for DropCounted {
        fn transmit(&mut self, _batch: &[Packet], _now: eiffel_sched::Nanos) {}
    }

    impl Drop for DropCounted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Whichever thread fails to start (dispatcher 0, 1, 2 or the arbiter), the
    /// start fails and every dispatcher already running has ended when it returns.
    #[test]
    fn a_failed_spawn_leaves_no_thread_behind() {
        const SINKS: usize = 3;
        for fail_at in 0..=SINKS {
            let dropped = Arc::new(AtomicUsize::new(0));
            let sinks = (0..SINKS)
                .map(|_| DropCounted(Arc::clone(&dropped)))
                .collect();
            let cfg = Config {
                // Dispatchers would sleep at once if they were left behind.
                idle_spin: Duration::ZERO,
                max_clients: 2,
                ..Config::default()
            };
            let mut spawner = FailingSpawn { fail_at, calls: 0 };
            let started = Pspat::start_with(
                cfg,
                Fifo::new(16),
                Dispatch::Threads(sinks),
                None,
                &mut spawner,
            );
            assert!(
                matches!(started, Err(Error::Spawn(_))),
                "spawn {fail_at} failed but start did not report it"
            );
            assert_eq!(
                dropped.load(Ordering::SeqCst),
                SINKS,
                "spawn {fail_at} failed: a dispatcher started before it still runs"
            );
        }
    }

    #[test]
    fn the_os_spawner_starts_a_runtime() {
        let rt = Pspat::start_with(
            Config::default(),
            Fifo::new(16),
            Dispatch::Inline(NoopSink),
            None,
            &mut OsSpawn,
        )
        .unwrap();
        drop(rt);
    }
}
