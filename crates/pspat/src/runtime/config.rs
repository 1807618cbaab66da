//! Runtime configuration.

use crate::link::Link;
use crate::Error;
use std::time::Duration;
/// Runtime configuration. Start from [`Config::default`] and adjust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Emulated link rate in bits per second (the leaky bucket). Default 10 Gbit/s.
    pub link_rate_bps: u64,
    /// Delta_A: shortest time between two arbiter rounds. Default 1 us.
    pub round_interval: Duration,
    /// Tw: how long the arbiter and dispatchers spin without work before they sleep.
    /// Default 50 us.
    pub idle_spin: Duration,
    /// Packets each client mailbox holds (rounded up, see [`crate::mailbox`]).
    /// Default 256.
    pub mailbox_capacity: usize,
    /// Most clients alive at once. Default 128.
    pub max_clients: usize,
    /// Packets each TX mailbox holds. Default 1024.
    pub tx_capacity: usize,
    /// CPU to pin the arbiter to; `None` leaves it to the OS.
    pub arbiter_cpu: Option<usize>,
    /// Nice value for the arbiter thread; `None` leaves it. PSPAT wants the arbiter
    /// to own its core: where other processes share it, a negative value (which
    /// needs `CAP_SYS_NICE`) keeps them from stalling every client.
    pub arbiter_nice: Option<i32>,
    /// Real-time FIFO priority (1..=99) for the arbiter thread; `None` leaves it in
    /// the ordinary class. The strongest way to give the arbiter its core; needs
    /// `CAP_SYS_NICE`.
    pub arbiter_realtime: Option<i32>,
    /// CPUs to pin dispatcher `i` to (`dispatcher_cpus[i % len]`); empty leaves them
    /// to the OS.
    pub dispatcher_cpus: Vec<usize>,
    /// Real-time FIFO priority (1..=99) for the dispatcher threads; `None` leaves
    /// them in the ordinary class. Needs `CAP_SYS_NICE`.
    pub dispatcher_realtime: Option<i32>,
    /// The arbiter thread's timer slack: how late the kernel may end its timed
    /// sleeps (until the next departure). Default 1 us; Linux's default is 50 us.
    pub timer_slack: Duration,
    /// Decision aggregation (PSPAT section 6.3.1); `None` (the default): one
    /// decision per packet.
    pub aggregate: Option<Aggregation>,
}

/// Decision aggregation (PSPAT section 6.3.1): consecutive packets of one flow
/// and class read from one client's mailbox are scheduled by one decision, up to
/// `window` of link time and `max_bytes`. The scheduler sees the run as one packet
/// of the run's length, with the first packet's class, flow and ranks: its
/// maximum packet size must admit `max_bytes`, and its per-packet limits count
/// runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aggregation {
    /// Most link time one decision stands for (the paper suggests 500 to 1000 ns).
    pub window: Duration,
    /// Most bytes one decision stands for; a single longer packet is a run alone.
    pub max_bytes: u32,
}

impl Aggregation {
    /// Bytes one run may hold on a link of `rate_bps`: what `window` carries,
    /// capped at `max_bytes`.
    pub(super) fn bytes_at(self, rate_bps: u64) -> u64 {
        let bytes = u128::from(rate_bps) * self.window.as_nanos() / 8_000_000_000;
        u64::try_from(bytes)
            .unwrap_or(u64::MAX)
            .min(u64::from(self.max_bytes))
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            link_rate_bps: 10_000_000_000,
            round_interval: Duration::from_micros(1),
            idle_spin: Duration::from_micros(50),
            mailbox_capacity: 256,
            max_clients: 128,
            tx_capacity: 1024,
            arbiter_cpu: None,
            arbiter_nice: None,
            arbiter_realtime: None,
            dispatcher_cpus: Vec::new(),
            dispatcher_realtime: None,
            timer_slack: Duration::from_micros(1),
            aggregate: None,
        }
    }
}

impl Config {
    pub(super) fn validate(&self) -> Result<(), Error> {
        let bad = |what: &'static str, value: u64, range: &'static str| {
            Err(Error::Config(eiffel_sched::ConfigError::OutOfRange {
                what,
                value,
                range,
            }))
        };
        if Link::new(self.link_rate_bps).is_none() {
            return bad("link_rate_bps", self.link_rate_bps, "1e3..=1e16");
        }
        if self.round_interval > Duration::from_secs(1) {
            return bad(
                "round_interval (ns)",
                self.round_interval.as_nanos() as u64,
                "0..=1s",
            );
        }
        if let Some(a) = self.aggregate {
            if a.window > Duration::from_secs(1) {
                return bad(
                    "aggregate.window (ns)",
                    a.window.as_nanos() as u64,
                    "0..=1s",
                );
            }
        }
        if self.max_clients == 0 || self.max_clients > 1 << 16 {
            return bad("max_clients", self.max_clients as u64, "1..=65536");
        }
        if self.mailbox_capacity == 0 || self.mailbox_capacity > 1 << 16 {
            return bad(
                "mailbox_capacity",
                self.mailbox_capacity as u64,
                "1..=65536",
            );
        }
        if self.tx_capacity == 0 || self.tx_capacity > 1 << 20 {
            return bad("tx_capacity", self.tx_capacity as u64, "1..=1048576");
        }
        Ok(())
    }
}
