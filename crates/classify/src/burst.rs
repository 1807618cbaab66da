//! Classification in steps, for bursts of frames.
//!
//! [`Classifier::classify`] is three steps, and a receive loop holding a burst
//! of frames runs each step over the whole burst before the next:
//!
//! 0. hint the cache to load each frame's first bytes (the headers);
//! 1. [`Classifier::stage`]: parse the frame's headers, hash its flow key and
//!    read the bytes the rank annotation needs, then hint the cache to load the
//!    flow-table bucket the lookup starts at. Only this step reads the frame.
//! 2. [`Classifier::prefetch`]: read that bucket and hint the cache to load the
//!    flow entry it names.
//! 3. [`Classifier::complete`]: look the flow up (creating it and running the
//!    rules on its first packet), count, and build the descriptor.
//!
//! With a flow table larger than the caches, a lookup waits on two dependent
//! misses (bucket, then entry); done one frame at a time they follow one
//! another, while over a burst the misses of every frame are in flight at once.
//! [`Classifier::classify_burst`] does the three passes over a slice of frames.
//! A frame's result is the same either way, and the frames of a burst are
//! completed in order, so a flow created by one frame is found by the next.

use eiffel_sched::{DropReason, Dropped, Nanos, Packet};

use crate::flow_table::KeyHash;
use crate::wire::{self, FlowKey, Headers, Malformed};
use crate::{Classifier, MalformedAction};

/// Frames a burst stages at once in [`Classifier::classify_burst`].
pub const BURST: usize = 32;

/// A frame parsed and hashed, waiting for its flow-table lookup
/// ([`Classifier::stage`]).
#[derive(Clone, Copy, Debug)]
pub struct Staged {
    headers: Result<Headers, Malformed>,
    hash: KeyHash,
    /// The deadline field's value, read from the frame when configured.
    field: Option<u32>,
    len: u32,
}

impl Staged {
    /// The same frame, charged `len` bytes: what it takes on the wire when that
    /// is not its length (a GSO super-frame, sent as several segments that each
    /// repeat its headers).
    #[must_use]
    pub fn with_wire_len(mut self, len: u32) -> Staged {
        self.len = len;
        self
    }

    /// The flow key a lookup uses: the frame's, or [`FlowKey::MALFORMED`].
    fn key(&self) -> &FlowKey {
        match &self.headers {
            Ok(h) => &h.key,
            Err(_) => &FlowKey::MALFORMED,
        }
    }
}

impl Classifier {
    /// Step 1: parses `frame`, hashes its key, reads what the annotation needs,
    /// and prefetches the flow-table bucket of the key.
    #[inline]
    pub fn stage(&self, frame: &[u8]) -> Staged {
        let headers = wire::parse(frame);
        let key = match &headers {
            Ok(h) => &h.key,
            Err(_) => &FlowKey::MALFORMED,
        };
        let hash = self.flows.hash(key);
        self.flows.prefetch_bucket(hash);
        let field = headers
            .as_ref()
            .ok()
            .and_then(|h| self.annotator.read(frame, h));
        Staged {
            headers,
            hash,
            field,
            len: u32::try_from(frame.len()).unwrap_or(u32::MAX),
        }
    }

    /// Step 2: prefetches the flow entry a staged frame most likely maps to.
    #[inline]
    pub fn prefetch(&self, staged: &Staged) {
        self.flows.prefetch_entry(staged.hash);
    }

    /// Step 3: the descriptor of a staged frame arriving at `now`, as
    /// [`Classifier::classify`] returns it.
    ///
    /// # Errors
    /// A malformed frame under [`MalformedAction::Drop`].
    #[inline]
    pub fn complete(&mut self, staged: &Staged, now: Nanos) -> Result<Packet, Dropped> {
        self.counters.frames += 1;
        if let Err(reason) = staged.headers {
            self.counters.malformed.record(reason);
            if self.malformed == MalformedAction::Drop {
                self.counters.dropped += 1;
                return Err(Dropped {
                    packet: Packet::new(0, staged.len).at(now),
                    reason: DropReason::Malformed,
                });
            }
        }
        let key = staged.key();
        let rules = &self.rules;
        let hit = self.flows.lookup_hashed(key, staged.hash, now, |k| {
            if *k == FlowKey::MALFORMED {
                rules.default_leaf()
            } else {
                rules.classify(k)
            }
        });
        let mut pkt = Packet::new(hit.flow, staged.len).at(now).class(hit.class);
        pkt.dscp = key.ip.map_or(0, |ip| ip.dscp);
        if let Ok(h) = &staged.headers {
            self.annotator
                .annotate_read(&mut pkt, h, staged.field, hit.created);
        }
        pkt.flow = pkt.flow.saturating_add(self.flow_base);
        Ok(pkt)
    }

    /// Classifies `frames`, all arriving at `now`, in bursts of [`BURST`]:
    /// `each` receives every frame's index and result, in order.
    pub fn classify_burst(
        &mut self,
        frames: &[&[u8]],
        now: Nanos,
        mut each: impl FnMut(usize, Result<Packet, Dropped>),
    ) {
        for (c, chunk) in frames.chunks(BURST).enumerate() {
            for frame in chunk {
                if let Some(first) = frame.first() {
                    eiffel_queue::prefetch(first);
                }
            }
            let mut staged = [None; BURST];
            for (s, frame) in staged.iter_mut().zip(chunk) {
                *s = Some(self.stage(frame));
            }
            for s in staged.iter().flatten() {
                self.prefetch(s);
            }
            for (i, s) in staged.iter().flatten().enumerate() {
                each(c * BURST + i, self.complete(s, now));
            }
        }
    }
}
