//! Frame slots shared between threads: the one place the crate hands the same bytes
//! to different threads.
//!
//! # Ownership protocol (the invariant every `unsafe` block here relies on)
//! Every slot has an atomic state, and only the thread that moved a slot into an
//! owned state touches its bytes and length:
//!
//! ```text
//!           claim (CAS)          publish (store)        take (CAS)
//!   FREE ───────────────> FILLING ──────────────> QUEUED ──────────> DRAINING
//!    ^  <── discard ──────'                                            │
//!    └──────────────────────── release (store) ────────────────────────┘
//! ```
//!
//! - `FREE -> FILLING`: compare-and-swap by the [`Filler`], the only thread that
//!   allocates (it is `Send`, not `Sync`, and one exists per pool). The filler then
//!   writes the frame through a [`Filling`] guard, the proof of ownership.
//! - `FILLING -> QUEUED` (`Release`): the guard is consumed and the slot index leaves
//!   as a descriptor. Nobody may touch the bytes now.
//! - `QUEUED -> DRAINING`: compare-and-swap (`Acquire`) by whichever [`Drainer`] got
//!   the descriptor. Of two threads holding the same index (a duplicated descriptor)
//!   only one can win, so ownership is exclusive whatever the descriptors do; the
//!   loser gets `None`. A [`Taken`] guard proves ownership.
//! - `DRAINING -> FREE` (`Release`) when the guard drops, then the index goes back
//!   to the filler through the drainer's return ring (a `Release` push, `Acquire`
//!   pop), and the filler's next claim of it (`Acquire`) sees every access the
//!   drainer made as finished.
//!
//! Frames a device reads or writes in place (AF_XDP sockets over a UMEM that is
//! the pool's memory, see [`pool_in`]) take two more states, in which the device,
//! not a thread, owns the bytes:
//!
//! ```text
//!         lend (CAS)                 received (CAS)
//!   FREE ────────────> LENT (device) ──────────────> FILLING ...
//!   ... DRAINING ──to_device (store)──> SENDING (device) ──sent (CAS)──> FREE
//! ```
//!
//! - `FREE -> LENT`: the filler claims a slot to give to the device's fill ring;
//!   `LENT -> FILLING` when the device returned it with a frame in it (the ring's
//!   own barriers order the device's writes before the read of the descriptor).
//! - `DRAINING -> SENDING`: the drainer put the slot on a transmit ring;
//!   `SENDING -> FREE` when the device reported it done (completion ring), then
//!   the index goes back to the filler as after a release.
//!
//! The Release/Acquire pairs order each owner's accesses before the next owner's, so
//! the bytes are never accessed by two threads at once: the state machine, not the
//! descriptors' discipline, makes the shared memory sound.
//!
//! # Return path
//! A drainer frees a slot into its own single-producer ring (PSPAT's FastForward
//! mailbox) back to the filler; each ring is sized so that it accepts a push
//! whenever it holds fewer indices than the pool has slots, so a push never fails. The filler keeps free indices in a private stack
//! and refills it from the rings when it runs dry: no lock, no shared free list, and
//! the filler and a drainer share only the ring's lines.
//!
//! # Costs
//! Allocate: one pop and one uncontended compare-and-swap. Publish: one store. Take:
//! one compare-and-swap. Release: one store and one ring push. Nothing allocates
//! after construction.

use crate::sync::{Arc, AtomicU64, AtomicU8, Ordering};
use eiffel_pspat::mailbox::{self, Consumer, Producer};

const FREE: u8 = 0;
const FILLING: u8 = 1;
const QUEUED: u8 = 2;
const DRAINING: u8 = 3;
const LENT: u8 = 4;
const SENDING: u8 = 5;

/// Where a frame lies in its slot: `offset` bytes in, `len` bytes long. A frame
/// written by this process starts at the slot's start; one a device wrote (AF_XDP)
/// starts after the headroom the device left.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) offset: u32,
    pub(crate) len: u32,
}

/// Memory some other owner keeps alive for as long as the pool lives: the UMEM
/// of AF_XDP sockets, which the kernel reads and writes too.
#[cfg(not(loom))]
#[cfg_attr(not(eiffel_xdp), allow(dead_code))]
pub(crate) struct Region {
    /// Start of `slots * slot_size` bytes, readable and writable.
    pub(crate) base: core::ptr::NonNull<u8>,
    /// What keeps the memory mapped.
    pub(crate) owner: Arc<dyn Send + Sync>,
}

/// Who frees a pool's memory.
#[cfg(not(loom))]
enum Memory {
    /// The pool's own allocation, freed when the storage drops. Held as a raw
    /// pointer (not a `Box`, whose moves would assert uniqueness over memory the
    /// slots reach through `Storage::base`).
    Heap(core::ptr::NonNull<[u8]>),
    /// Memory kept alive by its owner.
    External(#[allow(dead_code)] Arc<dyn Send + Sync>),
}

#[cfg(not(loom))]
impl Drop for Memory {
    fn drop(&mut self) {
        if let Memory::Heap(bytes) = *self {
            // SAFETY: the pointer came from `Box::leak` in `Storage::new` and
            // is freed only here, once; no slot is accessed after the storage drops.
            drop(unsafe { Box::from_raw(bytes.as_ptr()) });
        }
    }
}

/// The bytes and placements of every slot, accessed only under the protocol above.
#[cfg(not(loom))]
struct Storage {
    /// Slot `i` is `[base + i * slot_size, base + (i + 1) * slot_size)`.
    base: core::ptr::NonNull<u8>,
    placements: Box<[core::cell::UnsafeCell<Placement>]>,
    slot_size: usize,
    _memory: Memory,
}

#[cfg(not(loom))]
impl Storage {
    fn new(slots: usize, slot_size: usize) -> Storage {
        // Zeroed in one allocation (pages are only touched when first written).
        let bytes =
            core::ptr::NonNull::from(Box::leak(vec![0u8; slots * slot_size].into_boxed_slice()));
        let base = bytes.cast::<u8>();
        Storage {
            base,
            placements: (0..slots)
                .map(|_| core::cell::UnsafeCell::new(Placement::default()))
                .collect(),
            slot_size,
            _memory: Memory::Heap(bytes),
        }
    }

    #[cfg_attr(not(eiffel_xdp), allow(dead_code))]
    fn external(region: Region, slots: usize, slot_size: usize) -> Storage {
        Storage {
            base: region.base,
            placements: (0..slots)
                .map(|_| core::cell::UnsafeCell::new(Placement::default()))
                .collect(),
            slot_size,
            _memory: Memory::External(region.owner),
        }
    }

    /// Hints the cache to load byte `offset` of slot `i` (any values: the
    /// address is computed, never dereferenced).
    #[inline]
    fn prefetch(&self, i: usize, offset: usize) {
        let at = self
            .base
            .as_ptr()
            .wrapping_add(i.wrapping_mul(self.slot_size).wrapping_add(offset));
        eiffel_queue::prefetch_address(at);
    }

    /// Runs `f` on slot `i`'s bytes and placement, mutably.
    ///
    /// # Safety
    /// The caller owns slot `i` (state `FILLING` or `DRAINING`, set by this thread)
    /// and `i` is in range.
    unsafe fn with_mut<R>(&self, i: usize, f: impl FnOnce(&mut [u8], &mut Placement) -> R) -> R {
        debug_assert!(i < self.placements.len());
        // SAFETY: slot `i` is `slot_size` bytes inside the memory `base` points to
        // (in range by the caller's promise; the memory lives as long as `self`
        // through `_memory`); the caller owns the slot, so no other reference to
        // its bytes or placement exists while `f` runs, and no device writes a
        // slot in an owned state.
        let (bytes, placement) = unsafe {
            let start = self.base.as_ptr().add(i * self.slot_size);
            (
                core::slice::from_raw_parts_mut(start, self.slot_size),
                &mut *self.placements[i].get(),
            )
        };
        f(bytes, placement)
    }

    /// Runs `f` on slot `i`'s frame.
    ///
    /// # Safety
    /// As for [`Storage::with_mut`].
    unsafe fn with<R>(&self, i: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        // SAFETY: forwarded from the caller.
        unsafe { self.with_mut(i, |bytes, p| f(frame_of(bytes, *p))) }
    }

    /// Where slot `i`'s frame lies.
    ///
    /// # Safety
    /// As for [`Storage::with_mut`].
    unsafe fn placement(&self, i: usize) -> Placement {
        // SAFETY: forwarded from the caller.
        unsafe { *self.placements[i].get() }
    }
}

/// The frame `p` places in `bytes`, clipped to the slot, mutably.
fn frame_of_mut(bytes: &mut [u8], p: Placement) -> &mut [u8] {
    let start = (p.offset as usize).min(bytes.len());
    let end = start.saturating_add(p.len as usize).min(bytes.len());
    &mut bytes[start..end]
}

/// The frame `p` places in `bytes`, clipped to the slot.
fn frame_of(bytes: &[u8], p: Placement) -> &[u8] {
    let start = (p.offset as usize).min(bytes.len());
    let end = start.saturating_add(p.len as usize).min(bytes.len());
    &bytes[start..end]
}

/// Under loom, one model-checked cell per slot, so that loom reports any two
/// unsynchronised accesses to a slot as a data race.
#[cfg(loom)]
struct Storage {
    slots: Box<[loom::cell::UnsafeCell<(Box<[u8]>, Placement)>]>,
}

#[cfg(loom)]
impl Storage {
    /// Nothing under loom: its slots are separate allocations.
    fn prefetch(&self, _i: usize, _offset: usize) {}

    fn new(slots: usize, slot_size: usize) -> Storage {
        Storage {
            slots: (0..slots)
                .map(|_| {
                    let bytes = vec![0; slot_size].into_boxed_slice();
                    loom::cell::UnsafeCell::new((bytes, Placement::default()))
                })
                .collect(),
        }
    }

    /// # Safety
    /// As for the non-loom version.
    unsafe fn with_mut<R>(&self, i: usize, f: impl FnOnce(&mut [u8], &mut Placement) -> R) -> R {
        self.slots[i].with_mut(|p| {
            // SAFETY: the caller owns the slot; loom checks the claim.
            let (bytes, placement) = unsafe { &mut *p };
            f(bytes, placement)
        })
    }

    /// # Safety
    /// As for the non-loom version.
    unsafe fn with<R>(&self, i: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        self.slots[i].with(|p| {
            // SAFETY: the caller owns the slot; loom checks the claim.
            let (bytes, placement) = unsafe { &*p };
            f(frame_of(bytes, *placement))
        })
    }

    /// # Safety
    /// As for the non-loom version.
    unsafe fn placement(&self, i: usize) -> Placement {
        // SAFETY: the caller owns the slot; loom checks the claim.
        self.slots[i].with(|p| unsafe { (*p).1 })
    }
}

/// State shared by the filler and the drainers.
struct Shared {
    states: Box<[AtomicU8]>,
    storage: Storage,
    slot_size: usize,
    /// Slots handed out by the filler (single writer).
    allocated: AtomicU64,
    /// Slots given back, per returner: index 0 the filler itself, then one per
    /// drainer (each a single writer).
    freed: Box<[AtomicU64]>,
}

// SAFETY: the storage is only reached through the ownership protocol above, which
// gives each slot to one thread at a time with Release/Acquire hand-overs; the
// states and counters are atomics.
unsafe impl Sync for Shared {}
// SAFETY: as above; the storage holds plain bytes.
unsafe impl Send for Shared {}

/// Adds `n` to a counter that only the calling thread writes.
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

/// A slot index that is not in the state its use requires (a duplicated or stale
/// descriptor, or an index from elsewhere).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("frame slot {0} is not queued in this pool")]
pub struct NotQueued(pub u32);

/// A slot index that is not lent to a device, or a frame the device placed beyond
/// its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("frame slot {0} is not lent to the device, or the frame overruns it")]
pub struct NotLent(pub u32);

/// Creates a pool of `slots` slots of `slot_size` bytes, its one [`Filler`] and
/// `drainers` [`Drainer`]s.
pub(crate) fn pool(
    slots: u32,
    slot_size: usize,
    drainers: usize,
) -> Result<(Filler, Vec<Drainer>), mailbox::CapacityError> {
    pool_over(
        Storage::new(slots as usize, slot_size),
        slots,
        slot_size,
        drainers,
    )
}

/// Creates a pool like [`pool`] whose slots are the `slots * slot_size` bytes of
/// `region` (which a device may read and write while it holds a slot).
#[cfg(not(loom))]
#[cfg_attr(not(eiffel_xdp), allow(dead_code))]
pub(crate) fn pool_in(
    region: Region,
    slots: u32,
    slot_size: usize,
    drainers: usize,
) -> Result<(Filler, Vec<Drainer>), mailbox::CapacityError> {
    let storage = Storage::external(region, slots as usize, slot_size);
    pool_over(storage, slots, slot_size, drainers)
}

fn pool_over(
    storage: Storage,
    slots: u32,
    slot_size: usize,
    drainers: usize,
) -> Result<(Filler, Vec<Drainer>), mailbox::CapacityError> {
    let n = slots as usize;
    let shared = Arc::new(Shared {
        states: (0..n).map(|_| AtomicU8::new(FREE)).collect(),
        storage,
        slot_size,
        allocated: AtomicU64::new(0),
        freed: (0..=drainers).map(|_| AtomicU64::new(0)).collect(),
    });
    let mut returns = Vec::with_capacity(drainers);
    let mut out = Vec::with_capacity(drainers);
    // A FastForward ring refuses a push when the line after the producer's next
    // one is not entirely released, which can happen with only `(lines - 2) *
    // line + 1` values in it (the consumer has taken all but one value of the
    // oldest line). Two extra lines make even that bound exceed the pool, so a
    // drainer's push always finds room: every index is in at most one place.
    let room = n + 2 * mailbox::slots_per_line::<u32>();
    for d in 0..drainers {
        let (tx, rx) = mailbox::mailbox::<u32>(room)?;
        returns.push(rx);
        out.push(Drainer {
            shared: Arc::clone(&shared),
            ret: tx,
            index: d + 1,
        });
    }
    let filler = Filler {
        free: (0..slots).rev().collect(),
        shared,
        returns,
    };
    Ok((filler, out))
}

/// The allocating side: one per pool, on the thread that receives frames.
pub struct Filler {
    shared: Arc<Shared>,
    /// Free slot indices this side may claim.
    free: Vec<u32>,
    returns: Vec<Consumer<u32>>,
}

impl Filler {
    /// Takes a free slot to write a frame into, or `None` when every slot is in
    /// use. Collects the slots drainers gave back when its own stack is empty.
    pub fn alloc(&mut self) -> Option<Filling<'_>> {
        loop {
            let id = match self.free.pop() {
                Some(id) => id,
                None => {
                    if self.reclaim() == 0 {
                        return None;
                    }
                    continue;
                }
            };
            let claimed = self.shared.states[id as usize]
                .compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok();
            // Only a broken return path could put a busy slot on the stack; such an
            // index is skipped rather than shared.
            debug_assert!(claimed, "slot {id} on the free stack but not free");
            if claimed {
                bump(&self.shared.allocated, 1);
                return Some(Filling { filler: self, id });
            }
        }
    }

    /// Claims a free slot to lend to a device (its fill ring), or `None` when every
    /// slot is in use. The slot is not counted as allocated until
    /// [`Filler::received`] takes it back with a frame.
    pub fn lend(&mut self) -> Option<u32> {
        loop {
            let id = match self.free.pop() {
                Some(id) => id,
                None => {
                    if self.reclaim() == 0 {
                        return None;
                    }
                    continue;
                }
            };
            let claimed = self.shared.states[id as usize]
                .compare_exchange(FREE, LENT, Ordering::Acquire, Ordering::Relaxed)
                .is_ok();
            debug_assert!(claimed, "slot {id} on the free stack but not free");
            if claimed {
                return Some(id);
            }
        }
    }

    /// Hints the cache to load the frame the device placed `offset` bytes into
    /// lent slot `id`, before [`Filler::received`] takes it: a receive loop
    /// hints a whole batch, then reads each frame. Only address arithmetic: no
    /// slot state is read or changed.
    #[inline]
    pub fn prefetch(&self, id: u32, offset: u32) {
        self.shared.storage.prefetch(id as usize, offset as usize);
    }

    /// Takes back lent slot `id`, in which the device placed a frame of `len`
    /// bytes `offset` bytes in, to read and publish it.
    ///
    /// # Errors
    /// [`NotLent`] when the slot is not lent or the frame does not fit in it
    /// (a descriptor the device should not have produced): nothing changes.
    pub fn received(&mut self, id: u32, offset: u32, len: u32) -> Result<Filling<'_>, NotLent> {
        let fits = (offset as usize)
            .checked_add(len as usize)
            .is_some_and(|end| end <= self.shared.slot_size);
        let state = self.shared.states.get(id as usize).ok_or(NotLent(id))?;
        if !fits {
            return Err(NotLent(id));
        }
        state
            .compare_exchange(LENT, FILLING, Ordering::Acquire, Ordering::Relaxed)
            .map_err(|_| NotLent(id))?;
        bump(&self.shared.allocated, 1);
        let filling = Filling { filler: self, id };
        // SAFETY: the slot is FILLING by this filler (the exchange above).
        unsafe {
            filling
                .filler
                .shared
                .storage
                .with_mut(id as usize, |_, p| *p = Placement { offset, len });
        }
        Ok(filling)
    }

    /// Bytes per slot.
    #[must_use]
    pub fn slot_size(&self) -> usize {
        self.shared.slot_size
    }

    /// Moves the indices drainers gave back onto the free stack; returns how many.
    pub fn reclaim(&mut self) -> usize {
        let mut n = 0;
        for ring in &mut self.returns {
            while let Some(id) = ring.pop() {
                self.free.push(id);
                n += 1;
            }
        }
        n
    }

    /// Takes back a slot this side published but whose descriptor went nowhere (the
    /// scheduler's mailbox refused it).
    ///
    /// # Errors
    /// [`NotQueued`] if the slot is not queued.
    pub fn take_back(&mut self, id: u32) -> Result<(), NotQueued> {
        let state = self.shared.states.get(id as usize).ok_or(NotQueued(id))?;
        state
            .compare_exchange(QUEUED, FREE, Ordering::AcqRel, Ordering::Relaxed)
            .map_err(|_| NotQueued(id))?;
        self.free.push(id);
        bump(&self.shared.freed[0], 1);
        Ok(())
    }

    /// The pool's counters.
    #[must_use]
    pub fn stats(&self) -> FrameStats {
        stats(&self.shared)
    }

    /// A handle that reads the pool's counters from any thread.
    #[must_use]
    pub fn watch(&self) -> PoolWatch {
        PoolWatch {
            shared: Arc::clone(&self.shared),
        }
    }
}

/// Reads a pool's counters from any thread (see [`Filler::watch`]).
#[derive(Clone)]
pub struct PoolWatch {
    shared: Arc<Shared>,
}

impl PoolWatch {
    /// The pool's counters.
    #[must_use]
    pub fn stats(&self) -> FrameStats {
        stats(&self.shared)
    }
}

impl core::fmt::Debug for PoolWatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PoolWatch")
            .field("stats", &self.stats())
            .finish()
    }
}

impl core::fmt::Debug for Filler {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Filler")
            .field("free", &self.free.len())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn stats(shared: &Shared) -> FrameStats {
    let freed: u64 = shared.freed.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    let allocated = shared.allocated.load(Ordering::Relaxed);
    FrameStats {
        slots: shared.states.len() as u32,
        slot_size: shared.slot_size,
        allocated,
        in_use: allocated.saturating_sub(freed),
    }
}

/// Counters of a frame pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Slots in the pool.
    pub slots: u32,
    /// Bytes per slot.
    pub slot_size: usize,
    /// Slots handed out since the start.
    pub allocated: u64,
    /// Slots not yet given back (filling, queued or draining).
    pub in_use: u64,
}

/// A slot being filled: the filler's proof of ownership. Dropping it unpublished
/// gives the slot back.
pub struct Filling<'a> {
    filler: &'a mut Filler,
    id: u32,
}

impl Filling<'_> {
    /// The slot index (the future descriptor's `buffer`).
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Runs `f` on the whole slot; `f` returns the frame's length, or `None` to
    /// leave the length unchanged. Returns what `f` returned.
    pub fn write(&mut self, f: impl FnOnce(&mut [u8]) -> Option<usize>) -> Option<usize> {
        // SAFETY: this guard exists only while the slot is FILLING by this filler.
        unsafe {
            self.filler
                .shared
                .storage
                .with_mut(self.id as usize, |bytes, placement| {
                    let n = f(bytes)?;
                    let n = n.min(bytes.len());
                    *placement = Placement {
                        offset: 0,
                        len: n as u32,
                    };
                    Some(n)
                })
        }
    }

    /// Runs `f` on the frame in place, mutably (its length stays).
    pub fn modify<R>(&mut self, f: impl FnOnce(&mut [u8]) -> R) -> R {
        // SAFETY: this guard exists only while the slot is FILLING by this filler.
        unsafe {
            self.filler
                .shared
                .storage
                .with_mut(self.id as usize, |bytes, p| f(frame_of_mut(bytes, *p)))
        }
    }

    /// Runs `f` on the frame written so far.
    pub fn read<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        // SAFETY: as for `write`.
        unsafe { self.filler.shared.storage.with(self.id as usize, f) }
    }

    /// Hands the slot over: its index may now travel as a descriptor, and only a
    /// [`Drainer::take`] (or [`Filler::take_back`]) reaches the bytes again.
    #[must_use = "the index is the only way back to the frame"]
    pub fn publish(self) -> u32 {
        let id = self.id;
        self.filler.shared.states[id as usize].store(QUEUED, Ordering::Release);
        core::mem::forget(self);
        id
    }
}

impl Drop for Filling<'_> {
    fn drop(&mut self) {
        self.filler.shared.states[self.id as usize].store(FREE, Ordering::Release);
        self.filler.free.push(self.id);
        bump(&self.filler.shared.freed[0], 1);
    }
}

/// A side that receives descriptors and frees their slots: a transmitter, or the
/// scheduler's drop path.
pub struct Drainer {
    shared: Arc<Shared>,
    ret: Producer<u32>,
    /// This drainer's counter in `Shared::freed`.
    index: usize,
}

impl Drainer {
    /// Takes ownership of queued slot `id` (the descriptor's `buffer`).
    ///
    /// # Errors
    /// [`NotQueued`] if the slot is not queued (a stale or duplicated descriptor,
    /// or an index out of range): nothing is touched.
    pub fn take(&mut self, id: u32) -> Result<Taken<'_>, NotQueued> {
        let state = self.shared.states.get(id as usize).ok_or(NotQueued(id))?;
        state
            .compare_exchange(QUEUED, DRAINING, Ordering::Acquire, Ordering::Relaxed)
            .map_err(|_| NotQueued(id))?;
        Ok(Taken { drainer: self, id })
    }

    /// Frees slot `id`, which [`Taken::to_device`] gave to a device that reports
    /// it done.
    ///
    /// # Errors
    /// [`NotQueued`] if the slot is not with the device: nothing is touched.
    pub fn sent(&mut self, id: u32) -> Result<(), NotQueued> {
        let state = self.shared.states.get(id as usize).ok_or(NotQueued(id))?;
        state
            .compare_exchange(SENDING, FREE, Ordering::AcqRel, Ordering::Relaxed)
            .map_err(|_| NotQueued(id))?;
        bump(&self.shared.freed[self.index], 1);
        // Room as for a release (see `pool`): this index is in no ring.
        let pushed = self.ret.push(id);
        debug_assert!(pushed.is_ok(), "return ring full");
        Ok(())
    }

    /// Frees queued slot `id` without reading it.
    ///
    /// # Errors
    /// As for [`Drainer::take`].
    pub fn free(&mut self, id: u32) -> Result<(), NotQueued> {
        self.take(id).map(drop)
    }

    /// The pool's counters.
    #[must_use]
    pub fn stats(&self) -> FrameStats {
        stats(&self.shared)
    }
}

impl core::fmt::Debug for Drainer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Drainer")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

/// A slot taken by a drainer; its bytes are readable until the guard drops, which
/// frees the slot.
pub struct Taken<'a> {
    drainer: &'a mut Drainer,
    id: u32,
}

impl Taken<'_> {
    /// Runs `f` on the frame.
    pub fn read<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        // SAFETY: this guard exists only while the slot is DRAINING by this drainer.
        unsafe { self.drainer.shared.storage.with(self.id as usize, f) }
    }
}

impl Taken<'_> {
    /// Where the frame lies: its first byte's offset from the pool's first byte,
    /// and its length.
    #[must_use]
    pub fn span(&self) -> (usize, u32) {
        let shared = &self.drainer.shared;
        // SAFETY: this guard exists only while the slot is DRAINING by this drainer.
        let p = unsafe { shared.storage.placement(self.id as usize) };
        (
            self.id as usize * shared.slot_size + p.offset as usize,
            p.len,
        )
    }

    /// Hands the slot to a device that transmits it in place: it stays in use
    /// until [`Drainer::sent`] frees it. Returns its index.
    pub fn to_device(self) -> u32 {
        let id = self.id;
        self.drainer.shared.states[id as usize].store(SENDING, Ordering::Release);
        core::mem::forget(self);
        id
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        let d = &mut *self.drainer;
        d.shared.states[self.id as usize].store(FREE, Ordering::Release);
        bump(&d.shared.freed[d.index], 1);
        // The ring accepts a push while it holds fewer indices than the pool has
        // slots (see `pool`), and this index is not in it: it always has room.
        let pushed = d.ret.push(self.id);
        debug_assert!(pushed.is_ok(), "return ring full");
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_slot_has_one_owner_at_a_time() {
        let (mut filler, mut drainers) = pool(2, 64, 2).unwrap();
        let (d0, d1) = drainers.split_at_mut(1);
        let (d, other) = (&mut d0[0], &mut d1[0]);
        let mut f = filler.alloc().unwrap();
        let written = f.write(|b| {
            b[..3].copy_from_slice(b"abc");
            Some(3)
        });
        assert_eq!(written, Some(3));
        assert_eq!(f.read(<[u8]>::to_vec), b"abc");
        let id = f.publish();
        assert_eq!(filler.stats().in_use, 1);
        {
            let t = d.take(id).unwrap();
            assert_eq!(t.read(<[u8]>::to_vec), b"abc");
            // A duplicated descriptor cannot reach the bytes while they are taken.
            assert_eq!(other.take(id).err(), Some(NotQueued(id)));
            assert_eq!(filler.take_back(id), Err(NotQueued(id)));
        }
        // Freed: a second take fails, and so does a take back.
        assert_eq!(d.take(id).err(), Some(NotQueued(id)));
        assert_eq!(filler.take_back(id), Err(NotQueued(id)));
        assert_eq!(d.free(99), Err(NotQueued(99)));
        assert_eq!(filler.stats().in_use, 0);
    }

    #[test]
    fn exhaustion_and_reclaim() {
        let (mut filler, mut drainers) = pool(3, 64, 2).unwrap();
        let mut ids = Vec::new();
        for _ in 0..3 {
            let f = filler.alloc().unwrap();
            ids.push(f.publish());
        }
        assert!(filler.alloc().is_none());
        // An unpublished slot goes straight back.
        drainers[0].free(ids[0]).unwrap();
        drainers[1].free(ids[1]).unwrap();
        filler.take_back(ids[2]).unwrap();
        let f = filler.alloc().unwrap();
        drop(f);
        assert_eq!(filler.stats().in_use, 0);
        let mut got: Vec<u32> = (0..3).map(|_| filler.alloc().unwrap().publish()).collect();
        got.sort_unstable();
        assert_eq!(got, vec![0, 1, 2]);
        assert_eq!(filler.stats().allocated, 7);
    }

    /// A device's round trip: a slot lent, received with a frame at an offset,
    /// published, taken, handed to the device and freed on completion; every
    /// step out of order is refused.
    #[test]
    fn slots_lent_to_a_device() {
        let (mut filler, mut drainers) = pool(2, 256, 1).unwrap();
        let d = &mut drainers[0];
        let id = filler.lend().unwrap();
        assert_eq!(filler.stats().in_use, 0, "a lent slot is not in use yet");
        assert!(
            filler.received(id, 200, 100).is_err(),
            "frame beyond the slot"
        );
        assert!(filler.received(id ^ 1, 0, 10).is_err(), "slot not lent");
        let mut f = filler.received(id, 64, 5).unwrap();
        f.modify(|b| b.copy_from_slice(b"frame"));
        assert_eq!(f.read(<[u8]>::to_vec), b"frame");
        let id = f.publish();
        assert_eq!(filler.stats().in_use, 1);
        assert_eq!(d.sent(id), Err(NotQueued(id)), "not with the device");
        let t = d.take(id).unwrap();
        assert_eq!(t.span(), (id as usize * 256 + 64, 5));
        assert_eq!(t.to_device(), id);
        assert_eq!(d.take(id).err(), Some(NotQueued(id)));
        assert_eq!(filler.stats().in_use, 1, "in use until the device is done");
        d.sent(id).unwrap();
        assert_eq!(d.sent(id), Err(NotQueued(id)));
        assert_eq!(filler.stats().in_use, 0);
        // Back on the free stack through the return ring.
        let again: Vec<u32> = (0..2).filter_map(|_| filler.lend()).collect();
        assert_eq!(again.len(), 2);
    }

    /// A filler and a drainer on two threads pass frames through a channel and
    /// check every byte (miri checks the accesses for races).
    #[test]
    fn frames_cross_threads_intact() {
        let n: u32 = if cfg!(miri) { 200 } else { 20_000 };
        let (mut filler, mut drainers) = pool(8, 32, 1).unwrap();
        let mut d = drainers.pop().unwrap();
        let (tx, rx) = std::sync::mpsc::sync_channel::<u32>(8);
        let drain = std::thread::spawn(move || {
            for seq in 0..n {
                let id = rx.recv().unwrap();
                let t = d.take(id).unwrap();
                t.read(|b| {
                    assert_eq!(b.len(), 4 + (seq as usize % 20));
                    assert_eq!(b[..4], seq.to_le_bytes());
                });
            }
        });
        for seq in 0..n {
            let mut f = loop {
                if let Some(f) = filler.alloc() {
                    break f;
                }
                std::thread::yield_now();
            };
            f.write(|b| {
                b[..4].copy_from_slice(&seq.to_le_bytes());
                Some(4 + (seq as usize % 20))
            });
            tx.send(f.publish()).unwrap();
        }
        drain.join().unwrap();
        filler.reclaim();
        assert_eq!(filler.stats().in_use, 0);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicU32;

    /// A filler writes frames into a two-slot pool and hands their indices to a
    /// drainer through *relaxed* atomics (no synchronisation of their own, like a
    /// descriptor that took a path without ordering); the drainer reads and frees
    /// them while the filler reuses the slots. Only the slots' state hand-overs
    /// order the two threads' accesses: loom reports a data race on a slot if they
    /// did not (weakening publish or take to `Relaxed` makes this test fail).
    #[test]
    fn slots_change_hands_without_races() {
        loom::model(|| {
            let (mut filler, mut drainers) = pool(2, 4, 1).unwrap();
            let mut d = drainers.pop().unwrap();
            let ids = Arc::new([
                AtomicU32::new(u32::MAX),
                AtomicU32::new(u32::MAX),
                AtomicU32::new(u32::MAX),
            ]);
            let seen = Arc::clone(&ids);
            let drain = loom::thread::spawn(move || {
                for (seq, cell) in seen.iter().enumerate() {
                    let id = loop {
                        match cell.load(Ordering::Relaxed) {
                            u32::MAX => loom::thread::yield_now(),
                            id => break id,
                        }
                    };
                    let t = loop {
                        // The index may be seen before the slot's publication.
                        match d.take(id) {
                            Ok(t) => break t,
                            Err(_) => loom::thread::yield_now(),
                        }
                    };
                    assert_eq!(t.read(|b| b[0]), seq as u8);
                }
            });
            for (seq, cell) in ids.iter().enumerate() {
                let mut f = loop {
                    if let Some(f) = filler.alloc() {
                        break f;
                    }
                    loom::thread::yield_now();
                };
                f.write(|b| {
                    b[0] = seq as u8;
                    Some(1)
                });
                cell.store(f.publish(), Ordering::Relaxed);
            }
            drain.join().unwrap();
        });
    }
}
