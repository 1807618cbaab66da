//! The buffer pool: where received frames wait while their descriptors are scheduled.
//!
//! One allocation of `slots × slot_size` bytes made at construction; a slot is named
//! by its `u32` index, which becomes [`eiffel_sched::Packet::buffer`]. A received
//! frame is copied once, from the receive ring into a free slot; it is copied again
//! only into the transmit ring when the scheduler releases its descriptor. Only
//! descriptors travel through schedulers.
//!
//! Why a copy rather than zero-copy references into the receive ring: TPACKET_V3
//! hands the ring to user space a whole block at a time and takes it back the same
//! way, so one frame held by a shaper for a second would hold its block, and every
//! other frame in it, for a second; a few such frames would starve the ring and the
//! kernel would drop at line rate. One copy into a pool slot releases each block as
//! soon as it is read, and costs a `memcpy` of a frame that is in cache anyway
//! (the parser just read its headers).
//!
//! Cost: `alloc` and `free` are O(1) (a stack of free indices); nothing allocates
//! after construction. A double free or an out-of-range index is refused with an
//! error, never a panic.

use eiffel_sched::ConfigError;

/// A slot index the pool did not hand out, or handed out and got back already.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("buffer {0} is not allocated from this pool")]
pub struct NotAllocated(pub u32);

/// Fixed-size slots for frame bytes, addressed by `u32` index.
#[derive(Clone, Debug)]
pub struct BufferPool {
    data: Box<[u8]>,
    slot_size: usize,
    /// Length of the frame in each slot (meaningful while allocated).
    lens: Box<[u32]>,
    /// Free slot indices; `free.len()` slots are available.
    free: Vec<u32>,
    /// One bit per slot, set while allocated.
    allocated: Box<[u64]>,
}

impl BufferPool {
    /// The largest supported slot size (a 64 KiB frame).
    pub const MAX_SLOT_SIZE: usize = 65_536;

    /// A pool of `slots` slots of `slot_size` bytes each.
    ///
    /// # Errors
    /// Zero slots, more than `u32::MAX - 1`, or a slot size outside
    /// `64..=MAX_SLOT_SIZE`.
    pub fn new(slots: u32, slot_size: usize) -> Result<BufferPool, ConfigError> {
        if slots == 0 || slots == u32::MAX {
            return Err(ConfigError::OutOfRange {
                what: "buffer pool slots",
                value: u64::from(slots),
                range: "1..4294967295",
            });
        }
        if !(64..=Self::MAX_SLOT_SIZE).contains(&slot_size) {
            return Err(ConfigError::OutOfRange {
                what: "buffer pool slot size",
                value: slot_size as u64,
                range: "64..=65536",
            });
        }
        let bytes = (slots as usize)
            .checked_mul(slot_size)
            .ok_or(ConfigError::OutOfRange {
                what: "buffer pool bytes",
                value: u64::MAX,
                range: "addressable memory",
            })?;
        Ok(BufferPool {
            data: vec![0; bytes].into_boxed_slice(),
            slot_size,
            lens: vec![0; slots as usize].into_boxed_slice(),
            free: (0..slots).rev().collect(),
            allocated: vec![0; (slots as usize).div_ceil(64)].into_boxed_slice(),
        })
    }

    /// Takes a free slot, or `None` when all are in use.
    #[inline]
    pub fn alloc(&mut self) -> Option<u32> {
        let id = self.free.pop()?;
        self.allocated[id as usize / 64] |= 1 << (id % 64);
        self.lens[id as usize] = 0;
        Some(id)
    }

    /// Returns a slot to the pool.
    ///
    /// # Errors
    /// The slot is not allocated (double free, or an index from elsewhere).
    #[inline]
    pub fn free(&mut self, id: u32) -> Result<(), NotAllocated> {
        if !self.is_allocated(id) {
            return Err(NotAllocated(id));
        }
        self.allocated[id as usize / 64] &= !(1 << (id % 64));
        self.free.push(id);
        Ok(())
    }

    /// Whether slot `id` is allocated.
    #[must_use]
    #[inline]
    pub fn is_allocated(&self, id: u32) -> bool {
        self.allocated
            .get(id as usize / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    /// The whole of an allocated slot, to write a frame into; then record its length
    /// with [`BufferPool::set_len`].
    #[inline]
    pub fn slot_mut(&mut self, id: u32) -> Option<&mut [u8]> {
        if !self.is_allocated(id) {
            return None;
        }
        let start = id as usize * self.slot_size;
        self.data.get_mut(start..start + self.slot_size)
    }

    /// Records the length of the frame in slot `id` (clamped to the slot size).
    #[inline]
    pub fn set_len(&mut self, id: u32, len: usize) -> Result<(), NotAllocated> {
        if !self.is_allocated(id) {
            return Err(NotAllocated(id));
        }
        self.lens[id as usize] = len.min(self.slot_size) as u32;
        Ok(())
    }

    /// The frame stored in allocated slot `id`.
    #[must_use]
    #[inline]
    pub fn frame(&self, id: u32) -> Option<&[u8]> {
        if !self.is_allocated(id) {
            return None;
        }
        let start = id as usize * self.slot_size;
        self.data
            .get(start..start + self.lens[id as usize] as usize)
    }

    /// Bytes per slot.
    #[must_use]
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// Total slots.
    #[must_use]
    pub fn capacity(&self) -> u32 {
        self.lens.len() as u32
    }

    /// Free slots.
    #[must_use]
    pub fn available(&self) -> u32 {
        self.free.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rejects_bad_sizes() {
        assert!(BufferPool::new(0, 2048).is_err());
        assert!(BufferPool::new(4, 10).is_err());
        assert!(BufferPool::new(4, BufferPool::MAX_SLOT_SIZE + 1).is_err());
    }

    #[test]
    fn stores_frames_and_refuses_double_free() {
        let mut p = BufferPool::new(2, 64).unwrap();
        let a = p.alloc().unwrap();
        let b = p.alloc().unwrap();
        assert_eq!(p.alloc(), None);
        p.slot_mut(a).unwrap()[..3].copy_from_slice(b"abc");
        p.set_len(a, 3).unwrap();
        assert_eq!(p.frame(a), Some(&b"abc"[..]));
        p.free(a).unwrap();
        assert_eq!(p.free(a), Err(NotAllocated(a)));
        assert_eq!(p.frame(a), None);
        assert_eq!(p.free(99), Err(NotAllocated(99)));
        assert_eq!(p.available(), 1);
        p.free(b).unwrap();
        assert_eq!(p.available(), 2);
    }

    proptest! {
        #[test]
        fn matches_a_set_model(ops in proptest::collection::vec((any::<bool>(), 0u32..10), 1..200)) {
            let mut p = BufferPool::new(8, 64).unwrap();
            let mut held = std::collections::BTreeSet::new();
            for (alloc, id) in ops {
                if alloc {
                    match p.alloc() {
                        Some(id) => prop_assert!(held.insert(id), "slot {} handed out twice", id),
                        None => prop_assert_eq!(held.len(), 8),
                    }
                } else {
                    prop_assert_eq!(p.free(id).is_ok(), held.remove(&id));
                }
                prop_assert_eq!(p.available() as usize, 8 - held.len());
            }
        }
    }
}
