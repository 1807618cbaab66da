//! A receive queue's frame pools, by size: slots for frames up to the MTU, and,
//! when super-frames cross whole (GSO mode over AF_PACKET), a second, smaller
//! pool of 64 KiB slots for them. A slot index names its pool by one bit
//! ([`LARGE`]), below the queue bits of a descriptor's buffer id.
//!
//! Two pools rather than one of 64 KiB slots: the small pool is sized to the
//! tree's capacity (thousands of slots), and 64 KiB each would reserve
//! hundreds of megabytes for frames that are mostly 1,500 bytes or 66-byte
//! acknowledgements; the large pool's size bounds the super-frames held at once
//! ([`LARGE_SLOTS`], 32 MiB per queue), and a super-frame that finds it full is
//! dropped and counted as `pool_full`.

use crate::frames::{Drainer, Filler, Filling, NotQueued, MAX_SLOTS};

/// The bit of a slot index that names the large pool.
pub(crate) const LARGE: u32 = MAX_SLOTS;

/// Slots of the large pool of each receive queue in GSO mode.
pub(crate) const LARGE_SLOTS: u32 = 512;

/// Bytes per slot of the large pool: a 64 KiB super-frame with its Ethernet
/// header, a VLAN tag and its `virtio_net_hdr`.
pub(crate) const LARGE_SLOT_SIZE: usize = crate::frames::MAX_SLOT_SIZE;

const _: () = assert!(LARGE_SLOT_SIZE >= 65_535 + 18 + crate::vnet::VNET_HDR_LEN);

/// Takes back a slot whose descriptor went nowhere.
pub(super) trait TakeBack {
    /// Takes back published slot `id`.
    fn take_back(&mut self, id: u32) -> Result<(), NotQueued>;
}

impl TakeBack for Filler {
    fn take_back(&mut self, id: u32) -> Result<(), NotQueued> {
        Filler::take_back(self, id)
    }
}

/// Why no slot was found.
pub(super) enum NoSlot {
    /// The frame is larger than any slot.
    TooLarge,
    /// The pool for its size is in use.
    Full,
}

/// The receive side's pools: the filler of each.
pub(crate) struct Fillers {
    pub(crate) small: Filler,
    pub(crate) large: Option<Filler>,
}

impl Fillers {
    /// A slot for a frame of `len` bytes, and the bit its index carries.
    #[inline]
    pub(super) fn alloc(&mut self, len: usize) -> Result<(u32, Filling<'_>), NoSlot> {
        if len <= self.small.slot_size() {
            return self.small.alloc().map(|s| (0, s)).ok_or(NoSlot::Full);
        }
        match &mut self.large {
            Some(l) if len <= l.slot_size() => l.alloc().map(|s| (LARGE, s)).ok_or(NoSlot::Full),
            _ => Err(NoSlot::TooLarge),
        }
    }

    /// Moves the slots drainers gave back onto the free stacks.
    pub(crate) fn reclaim(&mut self) {
        self.small.reclaim();
        if let Some(l) = &mut self.large {
            l.reclaim();
        }
    }
}

impl TakeBack for Fillers {
    #[inline]
    fn take_back(&mut self, id: u32) -> Result<(), NotQueued> {
        match (&mut self.large, id & LARGE) {
            (_, 0) => self.small.take_back(id),
            (Some(l), _) => l.take_back(id & !LARGE),
            (None, _) => Err(NotQueued(id)),
        }
    }
}

/// A transmit or drop path's drainers of one queue's pools.
pub(crate) struct Drainers {
    pub(crate) small: Drainer,
    pub(crate) large: Option<Drainer>,
}

impl Drainers {
    /// Drainers of a queue with one pool.
    pub(crate) fn one(small: Drainer) -> Drainers {
        Drainers { small, large: None }
    }

    /// The drainer of slot `id`'s pool, and the index in it.
    #[inline]
    pub(crate) fn of(&mut self, id: u32) -> Option<(&mut Drainer, u32)> {
        if id & LARGE == 0 {
            Some((&mut self.small, id))
        } else {
            self.large.as_mut().map(|l| (l, id & !LARGE))
        }
    }

    /// Frees queued slot `id` without reading it.
    pub(crate) fn free(&mut self, id: u32) -> Result<(), NotQueued> {
        let (d, i) = self.of(id).ok_or(NotQueued(id))?;
        d.free(i)
    }
}
