//! Dispatcher threads: drain a TX mailbox into a `Transmit` (PSPAT section 3.3).

use super::shared::Shared;
use crate::mailbox::Consumer;
use crate::sync::{spin_loop, Arc};
use crate::transmit::Transmit;
use eiffel_sched::{Nanos, Packet};
use std::time::Duration;
/// Packets a dispatcher takes from its TX mailbox per `transmit` call at most.
const DISPATCH_BATCH: usize = 256;

pub(super) struct Dispatcher<X> {
    pub(super) shared: Arc<Shared>,
    pub(super) index: usize,
    pub(super) rx: Consumer<Packet>,
    pub(super) sink: X,
    pub(super) idle_spin: Duration,
}

impl<X: Transmit> Dispatcher<X> {
    pub(super) fn run(mut self) -> X {
        let clock = self.shared.clock;
        let mut batch = Vec::with_capacity(DISPATCH_BATCH);
        let mut idle_since: Option<Nanos> = None;
        loop {
            while batch.len() < DISPATCH_BATCH {
                match self.rx.pop() {
                    Some(p) => batch.push(p),
                    None => break,
                }
            }
            if !batch.is_empty() {
                self.sink.transmit(&batch, clock.now());
                batch.clear();
                idle_since = None;
                continue;
            }
            if self.shared.life.dispatch_finished() && self.rx.is_empty() {
                return self.sink;
            }
            let now = clock.now();
            let since = *idle_since.get_or_insert(now);
            if Duration::from_nanos(now - since) < self.idle_spin {
                spin_loop();
                continue;
            }
            let shared = &*self.shared;
            let rx = &self.rx;
            shared.dispatchers[self.index]
                .sleep(|| !rx.is_empty() || shared.life.dispatch_finishing(), None);
            idle_since = None;
        }
    }
}
