//! The frame pool shared between threads: the receive thread writes each frame
//! once into a slot, the slot's index travels through the scheduler as
//! `Packet::buffer`, and the thread that transmits (or drops) the descriptor reads
//! the frame and frees the slot. Only descriptors move; payload stays put.
//!
//! It is [`crate::pool::BufferPool`] for a data path split over threads (PSPAT's
//! receive thread, arbiter and dispatcher): one [`Filler`] allocates, any number of
//! [`Drainer`]s take and free, without a lock. Each slot's atomic state gives its
//! bytes to one thread at a time, so a stale or duplicated descriptor is refused
//! ([`NotQueued`]) instead of reaching memory someone else writes; freed indices
//! return to the filler through one single-producer ring per drainer. The protocol
//! and its proof are in the private `sys::frames` module, the only unsafe code here,
//! checked by miri (real threads) and loom (every interleaving of a small model).
//!
//! ```
//! let (mut filler, mut drainers) = eiffel_net::frames::frame_pool(4, 2048, 1).unwrap();
//! let mut slot = filler.alloc().unwrap();
//! slot.write(|buf| {
//!     buf[..5].copy_from_slice(b"frame");
//!     Some(5)
//! });
//! let id = slot.publish(); // travels as Packet::buffer
//! let taken = drainers[0].take(id).unwrap();
//! assert_eq!(taken.read(|f| f.to_vec()), b"frame");
//! drop(taken); // frees the slot
//! assert!(drainers[0].take(id).is_err());
//! ```

use eiffel_sched::ConfigError;

pub use crate::sys::frames::{
    Drainer, Filler, Filling, FrameStats, NotLent, NotQueued, PoolWatch, Taken,
};

/// The largest slot: a 64 KiB super-frame with its Ethernet header, VLAN tag
/// and offload metadata (65,792 bytes).
pub const MAX_SLOT_SIZE: usize = 65_536 + 256;

/// Most slots in one pool (the return rings' limit).
pub const MAX_SLOTS: u32 = 1 << 23;

/// A pool of `slots` slots of `slot_size` bytes, its filler and `drainers`
/// drainers.
///
/// # Errors
/// Zero or more than [`MAX_SLOTS`] slots, a slot size outside `64..=MAX_SLOT_SIZE`,
/// no drainer or more than 64.
pub fn frame_pool(
    slots: u32,
    slot_size: usize,
    drainers: usize,
) -> Result<(Filler, Vec<Drainer>), ConfigError> {
    if slots == 0 || slots > MAX_SLOTS {
        return Err(ConfigError::OutOfRange {
            what: "frame pool slots",
            value: u64::from(slots),
            range: "1..=8388608",
        });
    }
    if !(64..=MAX_SLOT_SIZE).contains(&slot_size) {
        return Err(ConfigError::OutOfRange {
            what: "frame pool slot size",
            value: slot_size as u64,
            range: "64..=65792",
        });
    }
    if drainers == 0 || drainers > 64 {
        return Err(ConfigError::OutOfRange {
            what: "frame pool drainers",
            value: drainers as u64,
            range: "1..=64",
        });
    }
    crate::sys::frames::pool(slots, slot_size, drainers).map_err(|e| ConfigError::OutOfRange {
        what: "frame pool return ring (slots)",
        value: e.requested as u64,
        range: "up to the mailbox maximum",
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_geometry() {
        assert!(frame_pool(0, 2048, 1).is_err());
        assert!(frame_pool(MAX_SLOTS + 1, 2048, 1).is_err());
        assert!(frame_pool(4, 63, 1).is_err());
        assert!(frame_pool(4, MAX_SLOT_SIZE + 1, 1).is_err());
        assert!(frame_pool(4, 2048, 0).is_err());
        assert!(frame_pool(4, 2048, 2).is_ok());
    }
}
