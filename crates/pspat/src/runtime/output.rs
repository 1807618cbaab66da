//! Where the arbiter puts the packets it releases: an inline sink, called at the
//! end of each round, or one TX mailbox per dispatcher thread (PSPAT section 3.3).

use super::shared::Shared;
use crate::mailbox::{Producer, PushError};
use crate::transmit::Transmit;
use eiffel_sched::{Nanos, Packet};

/// Packets the inline sink receives per call at most.
pub(super) const INLINE_BATCH: usize = 256;

/// The arbiter's side of dispatch.
pub(super) enum Output<X> {
    Inline {
        sink: X,
        batch: Vec<Packet>,
    },
    Tx {
        tx: Vec<Producer<Packet>>,
        /// Per TX mailbox: packets that did not fit, in order, pushed first next
        /// round. At most one scheduler entry's packets: release stops at the
        /// first entry that does not fit.
        pending: Vec<Vec<Packet>>,
        /// TX mailboxes pushed to this round.
        touched: Vec<bool>,
    },
}

impl<X: Transmit> Output<X> {
    /// Inline dispatch to `sink`.
    pub(super) fn inline(sink: X) -> Self {
        Output::Inline {
            sink,
            batch: Vec::with_capacity(INLINE_BATCH),
        }
    }

    /// Dispatch through the producer halves of the TX mailboxes; `entry` is the
    /// most packets one scheduler entry stands for.
    pub(super) fn tx(tx: Vec<Producer<Packet>>, entry: usize) -> Self {
        Output::Tx {
            pending: (0..tx.len()).map(|_| Vec::with_capacity(entry)).collect(),
            touched: vec![false; tx.len()],
            tx,
        }
    }

    /// Sends `pkt` on with its `buffer` field set to `buffer`; false if its TX
    /// mailbox is full (it waits as pending, and so do later packets for the
    /// same mailbox). A packet goes to TX mailbox `flow mod dispatchers`, which
    /// keeps each flow's order.
    ///
    /// The buffer is written into the stored copy, after the descriptor: patched
    /// before, the whole-descriptor copy would load the patch while its store is
    /// still in flight and wait for it.
    // NB: always inlined: out of line in the arbiter's release loop, the packet
    // came through the stack and its wide reload waited on those stores (68% of
    // this function's samples).
    #[inline(always)]
    pub(super) fn push(&mut self, mut pkt: Packet, buffer: u32, shared: &Shared) -> bool {
        match self {
            Output::Inline { sink, batch } => {
                batch.push(pkt);
                if let Some(last) = batch.last_mut() {
                    last.buffer = buffer;
                }
                if batch.len() == INLINE_BATCH {
                    sink.transmit(batch, shared.clock.now());
                    batch.clear();
                }
                true
            }
            Output::Tx {
                tx,
                pending,
                touched,
            } => {
                pkt.buffer = buffer;
                let i = pkt.flow as usize % tx.len();
                touched[i] = true;
                if !pending[i].is_empty() {
                    pending[i].push(pkt);
                    return false;
                }
                match tx[i].push(pkt) {
                    Ok(()) => true,
                    Err(PushError::Full(p)) => {
                        pending[i].push(p);
                        false
                    }
                }
            }
        }
    }

    /// Retries packets that found their TX mailbox full; false if one still does.
    pub(super) fn retry_pending(&mut self) -> bool {
        let Output::Tx {
            tx,
            pending,
            touched,
        } = self
        else {
            return true;
        };
        let mut clear = true;
        for (i, waiting) in pending.iter_mut().enumerate() {
            if !waiting.is_empty() {
                touched[i] = true;
                let n = tx[i].push_slice(waiting);
                waiting.drain(..n);
                clear &= waiting.is_empty();
            }
        }
        clear
    }

    /// Whether a packet waits for room in a TX mailbox.
    pub(super) fn blocked(&self) -> bool {
        matches!(self, Output::Tx { pending, .. } if pending.iter().any(|p| !p.is_empty()))
    }

    /// Hands the round's packets on: the inline batch to the sink, stamped `now`
    /// (read after the last packet of the batch was), or a wake-up to each
    /// dispatcher whose TX mailbox was pushed to (Fig. 5, lines 23-27).
    pub(super) fn flush(&mut self, shared: &Shared, now: Nanos) {
        match self {
            Output::Inline { sink, batch } => {
                if !batch.is_empty() {
                    sink.transmit(batch, now);
                    batch.clear();
                }
            }
            Output::Tx { touched, .. } => {
                for (i, t) in touched.iter_mut().enumerate() {
                    if core::mem::take(t) {
                        shared.dispatchers[i].notify();
                    }
                }
            }
        }
    }

    /// The inline sink, once the arbiter is done.
    pub(super) fn into_sink(self) -> Option<X> {
        match self {
            Output::Inline { sink, .. } => Some(sink),
            Output::Tx { .. } => None,
        }
    }
}
