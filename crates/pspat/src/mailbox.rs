//! Mailboxes: bounded single-producer single-consumer rings in which the consumer
//! never writes a line the producer writes.
//!
//! # Algorithm
//! PSPAT section 4.1 builds its mailboxes on FastForward (Giacomoni et al.,
//! PPoPP'08): each slot carries its own mark, so neither side reads an index the
//! other keeps writing. The consumer of a FastForward ring empties each slot after
//! reading it, though, so every line of the ring crosses between the two cores
//! twice per lap (to the consumer to be read, back to the producer to be
//! refilled) and the consumer's clearing write waits for the line each time. Here
//! the slot marks stay, and the consumer's writes go to one index of its own, in
//! the manner of MCRingBuffer (Lee, Bu and Chandranmenon, IPDPS'10), so each line
//! crosses once per lap:
//! - every slot carries a *sequence mark*: the absolute index of the value it
//!   holds, plus one (modulo 2^32). `tail` is private to the [`Producer`], `head`
//!   to the [`Consumer`];
//! - the producer writes a slot's value, then its mark `tail + 1` (release); the
//!   consumer reads slot `head` when its mark is `head + 1` (acquire). A mark left
//!   from an earlier lap differs, so a slot needs no emptying;
//! - slots are grouped in *lines* (a cache-line pair, see Constants). The consumer
//!   publishes how far it has released, rounded down to a *step* of whole lines
//!   (a quarter of the capacity, at most 32 slots), in `cleared` (release); the
//!   producer keeps a copy and reloads it (acquire) only when the copy says the
//!   next line is not free. A line is free when entering it
//!   leaves one whole line between the producer and the released part: the gap
//!   keeps the producer off the lines the consumer is still reading when the ring
//!   is nearly full;
//! - reading consecutive slots touches nothing but those slots, so a batch of
//!   reads ([`Consumer::read_many`]) streams through the lines.
//!
//! # Deferred release
//! Reading and releasing are separate: [`Consumer::read`] takes the next value and
//! leaves its slot occupied; [`Consumer::release`] gives back the oldest read slots.
//! PSPAT's arbiter reads a client's packet into the scheduler at once but releases
//! its slot only when the scheduler lets the packet go (Fig. 5, line 21), so a
//! client's mailbox bounds the packets it has inside the runtime and a full mailbox
//! is the client's immediate backpressure. [`Consumer::pop`] reads and releases.
//!
//! # Correctness argument
//! Let the ring hold `n >= 2` lines of `k` slots, `N = n k` slots, capacity
//! `C = (n - 1) k`. The producer enters the line starting at absolute index `t`
//! only after it saw (acquire) a published `cleared = c` with `t - c < C`; the
//! previous values of slots `t..t + k` have indices `t - N..t - N + k`, all below
//! `c` because `t + k - N <= c`. The consumer published `c` (release) after reading
//! every slot below it, so those reads happen-before the producer's new writes: a
//! slot is never written while its previous value may still be read. A mark is
//! stored (release) after its value; the consumer that sees mark `head + 1`
//! (acquire) sees the value. A stale mark is `head + 1 - j N` for some `j >= 1`,
//! which differs from `head + 1` modulo 2^32 since `N <= 2^24`. The loom tests in
//! this module check the protocol.
//!
//! # Costs
//! `push`: one slot write, plus a comparison with the copy of `cleared` every `k`
//! pushes and a reload of it when the ring looks full. `read`: one slot read.
//! `release`: one store per step of released slots, to the consumer's own line
//! (which a producer waiting on a full ring keeps reading: publishing every line
//! would pay a cross-core round trip every line).
//! Capacity is `(n - 1) * k`: the one-line gap is never filled.
//!
//! # Constants
//! A slot's stride is its size rounded up to a power of two (up to a cache line)
//! or to whole cache lines, and the ring starts on a 128-byte boundary: no slot
//! straddles two cache lines unless it is bigger than one. A line is 128 bytes of
//! slots (x86-64 and aarch64 move adjacent 64-byte cache lines in pairs), or one
//! slot if a slot is bigger: 16 slots of `u32`, 8 of `u64`, 2 of
//! [`eiffel_sched::Packet`] (56 bytes plus the mark: one cache line each).
//!
//! # Deviations from the paper
//! - The paper's slots hold pointers and use NULL as the empty sentinel, and the
//!   consumer writes NULL back. Ours hold `Copy` values (packet descriptors travel
//!   by value) with a sequence mark in the same cache line, which the consumer
//!   never writes; the consumer publishes its progress a step of lines at a time instead.
//!   Measured (`eiffel bench mailbox`), clearing the marks in place held the ring
//!   near 30 million transfers per second whatever the batch when the two CPUs sat
//!   on different cores, the line crossing twice per lap.
//! - The ring is generic over `T: Copy`; values are never dropped by the ring.

use crate::pad::{CachePadded, CACHE_LINE};
use crate::sync::{Arc, AtomicU32, AtomicUsize, Ordering, UnsafeCell};
use core::mem::MaybeUninit;

/// One slot: the sequence mark and the value, laid out together so that a push or
/// a read touches one place.
#[repr(C)]
struct Slot<T> {
    /// The absolute index of the value held, plus one, modulo 2^32 (0: never
    /// written). Written only by the producer.
    mark: AtomicU32,
    value: UnsafeCell<MaybeUninit<T>>,
}

impl<T> Slot<T> {
    fn new() -> Self {
        Slot {
            mark: AtomicU32::new(0),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }
}

/// The mark of the value at absolute index `index`.
#[inline]
fn mark_of(index: usize) -> u32 {
    // Modulo 2^32 on purpose (see the module documentation).
    index.wrapping_add(1) as u32
}

/// Slot storage: `len` slots, [`stride_of`] bytes apart, the first on a
/// [`LINE_BYTES`] boundary. The stride is the slot's size rounded up to a power of
/// two up to a cache line, or to a multiple of a cache line beyond: no slot
/// straddles two cache lines unless it is bigger than one, and a line of the ring
/// is a whole cache-line pair.
struct Slots<T> {
    base: core::ptr::NonNull<u8>,
    len: usize,
    _owns: core::marker::PhantomData<Slot<T>>,
}

/// Bytes of the unit that producer and consumer must not share: a pair of
/// adjacent 64-byte cache lines, which x86-64 and aarch64 prefetch together.
pub const LINE_BYTES: usize = 2 * CACHE_LINE;

/// Distance in bytes between two slots holding `T`.
fn stride_of<T>() -> usize {
    let size = core::mem::size_of::<Slot<T>>();
    if size <= CACHE_LINE {
        size.next_power_of_two()
    } else {
        size.next_multiple_of(CACHE_LINE)
    }
}

impl<T> Slots<T> {
    fn layout(len: usize) -> core::alloc::Layout {
        let align = LINE_BYTES.max(core::mem::align_of::<Slot<T>>());
        core::alloc::Layout::from_size_align(len * stride_of::<T>(), align)
            .expect("mailbox sizes are bounded by MAX_SLOTS")
    }

    #[allow(unsafe_code)]
    fn new(len: usize) -> Self {
        assert!(len.is_power_of_two() && len <= MAX_SLOTS);
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size (`len > 0`, slots are not zero-sized:
        // they hold a flag).
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(base) = core::ptr::NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        let stride = stride_of::<T>();
        for i in 0..len {
            // SAFETY: `i * stride` is inside the allocation, and aligned for
            // `Slot<T>` (the base is, and the stride is a multiple of the slot's
            // size, itself a multiple of its alignment).
            unsafe {
                base.as_ptr()
                    .add(i * stride)
                    .cast::<Slot<T>>()
                    .write(Slot::new())
            };
        }
        Slots {
            base,
            len,
            _owns: core::marker::PhantomData,
        }
    }

    /// The slot of index `i` modulo `len`.
    #[inline]
    #[allow(unsafe_code)]
    fn get(&self, i: usize) -> &Slot<T> {
        // `len` is a power of two: the slot is in the ring whatever `i`, with
        // no bounds check; the stride is a constant of `T` (a shift).
        let i = i & (self.len - 1);
        // SAFETY: slot `i < len` was initialised in `new` and lives until `drop`;
        // shared references are all the ring hands out (mutation goes through the
        // slot's atomics and `UnsafeCell`).
        unsafe {
            &*self
                .base
                .as_ptr()
                .add(i * stride_of::<T>())
                .cast::<Slot<T>>()
        }
    }
}

impl<T> Slots<T> {
    /// Hints the CPU to load slot `i`, `i < len`.
    #[inline]
    fn prefetch(&self, i: usize) {
        debug_assert!(i < self.len);
        crate::prefetch::prefetch(self.base.as_ptr().wrapping_add(i * stride_of::<T>()));
    }

    /// Hints the CPU to take slot `i`, `i < len`, for writing.
    #[inline]
    fn prefetch_write(&self, i: usize) {
        debug_assert!(i < self.len);
        crate::prefetch::prefetch_write(self.base.as_ptr().wrapping_add(i * stride_of::<T>()));
    }

    /// Hints every cache line of the `n` slots from absolute index `first` on
    /// (modulo `len`), one hint per line, for `access`.
    #[inline]
    fn hint_run(&self, first: usize, n: usize, access: Access) {
        let hint = |i: usize| {
            let i = i & (self.len - 1);
            match access {
                Access::Read => self.prefetch(i),
                Access::Write => self.prefetch_write(i),
            }
        };
        let per_line = (crate::pad::CACHE_LINE / stride_of::<T>()).max(1);
        let mut i = 0;
        while i < n {
            hint(first.wrapping_add(i));
            i += per_line;
        }
        if n > 1 && first % per_line != 0 {
            // The last line, which the steps above miss when the run starts
            // inside a line.
            hint(first.wrapping_add(n - 1));
        }
    }
}

/// What a run of slots is hinted for.
#[derive(Clone, Copy)]
enum Access {
    /// The consumer is about to read the values.
    Read,
    /// The producer is about to write values.
    Write,
}

impl<T> Drop for Slots<T> {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        for i in 0..self.len {
            // SAFETY: every slot was initialised in `new` and is dropped once here;
            // values inside are `MaybeUninit` and never dropped by the ring.
            unsafe {
                core::ptr::drop_in_place(
                    self.base
                        .as_ptr()
                        .add(i * stride_of::<T>())
                        .cast::<Slot<T>>(),
                );
            }
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.base.as_ptr(), Self::layout(self.len)) };
    }
}

/// The slots shared by the two halves.
struct Ring<T> {
    slots: Slots<T>,
    /// How far the consumer has released, a line boundary (written by the
    /// consumer only, on a line of its own).
    cleared: CachePadded<AtomicUsize>,
    /// `slots.len - 1`; the length is a power of two.
    mask: usize,
    /// Slots per line; a power of two dividing `slots.len`, at most half of it.
    line: usize,
    /// Released slots gathered per publication in `cleared`: a power of two,
    /// a multiple of `line`, at most the capacity.
    step: usize,
}

// SAFETY: the ring hands each value from exactly one producer thread to exactly one
// consumer thread (the halves are not `Sync` and cannot be cloned); access to a
// slot's value is serialised by the acquire/release protocol on its mark and on
// `cleared` argued in the module documentation. `T: Send` suffices to move values across.
#[allow(unsafe_code)]
unsafe impl<T: Send> Sync for Ring<T> {}
// SAFETY: as above; the ring owns plain values and atomics.
#[allow(unsafe_code)]
unsafe impl<T: Send> Send for Ring<T> {}

/// The mailbox could not be created with the requested capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("mailbox capacity {requested} is outside 1..={max}")]
pub struct CapacityError {
    /// The capacity asked for.
    pub requested: usize,
    /// The largest capacity supported.
    pub max: usize,
}

/// A push that did not happen; the value is handed back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PushError<T> {
    /// The mailbox is full: the consumer has not released enough slots yet.
    #[error("mailbox full")]
    Full(T),
}

impl<T> PushError<T> {
    /// The value that was not pushed.
    pub fn into_inner(self) -> T {
        match self {
            PushError::Full(value) => value,
        }
    }
}

/// Largest number of slots a mailbox may have.
const MAX_SLOTS: usize = 1 << 24;

/// Slots per line for values of type `T` (see the module documentation).
#[must_use]
pub fn slots_per_line<T>() -> usize {
    (LINE_BYTES / stride_of::<T>()).max(1)
}

/// Creates a mailbox that holds at least `min_capacity` values.
///
/// The ring is rounded up to a power of two of slots, with at least two lines; the
/// actual capacity is [`Producer::capacity`]. Released slots become free for the
/// producer a step at a time: a quarter of the capacity rounded down to a power of
/// two, at least a line and at most 32 slots (or a line, if larger).
///
/// # Errors
/// [`CapacityError`] if `min_capacity` is zero or needs more than 2^24 slots.
///
/// # Example
/// ```
/// use eiffel_pspat::mailbox::{mailbox, PushError};
/// let (mut tx, mut rx) = mailbox::<u64>(8).unwrap();
/// for i in 0..tx.capacity() as u64 {
///     tx.push(i).unwrap();
/// }
/// assert_eq!(tx.push(99), Err(PushError::Full(99)));
/// assert_eq!(rx.pop(), Some(0));
/// ```
pub fn mailbox<T: Copy + Send>(
    min_capacity: usize,
) -> Result<(Producer<T>, Consumer<T>), CapacityError> {
    let line = slots_per_line::<T>();
    let max = MAX_SLOTS - line;
    if min_capacity == 0 || min_capacity > max {
        return Err(CapacityError {
            requested: min_capacity,
            max,
        });
    }
    let slots = (min_capacity + line).next_power_of_two().max(2 * line);
    Ok(with_step(
        slots / line,
        line,
        publish_step(slots - line, line),
    ))
}

/// How many released slots the consumer gathers before it publishes them: a
/// quarter of the capacity rounded down to a power of two, between one line and
/// [`MAX_STEP`] slots. Each publication is a store the producer, polling while the
/// ring is full, takes back across the cores, so publishing every line would cost
/// the consumer a cache-line round trip every line.
fn publish_step(capacity: usize, line: usize) -> usize {
    let quarter = (capacity / 4).max(1);
    let pow = 1usize << quarter.ilog2();
    pow.clamp(line, MAX_STEP.max(line))
}

/// Most slots released between two publications.
const MAX_STEP: usize = 32;

/// A mailbox of exactly `lines` lines of `line` slots (both powers of two,
/// `lines >= 2`), publishing every line. Tests use it to exercise line boundaries
/// with few slots.
#[cfg(test)]
pub(crate) fn with_geometry<T: Copy + Send>(
    lines: usize,
    line: usize,
) -> (Producer<T>, Consumer<T>) {
    with_step(lines, line, line)
}

/// As [`with_geometry`], publishing releases every `step` slots (a power of two,
/// a multiple of `line`, at most the capacity).
fn with_step<T: Copy + Send>(lines: usize, line: usize, step: usize) -> (Producer<T>, Consumer<T>) {
    assert!(lines >= 2 && lines.is_power_of_two() && line.is_power_of_two());
    assert!(step.is_power_of_two() && step >= line && step <= (lines - 1) * line);
    let len = lines * line;
    let ring = Arc::new(Ring {
        slots: Slots::new(len),
        cleared: CachePadded::new(AtomicUsize::new(0)),
        mask: len - 1,
        line,
        step,
    });
    let producer = Producer {
        inner: CachePadded::new(ProducerInner {
            ring: Arc::clone(&ring),
            tail: 0,
            line_end: 0,
            cleared: 0,
        }),
    };
    let consumer = Consumer {
        inner: CachePadded::new(ConsumerInner {
            ring,
            head: 0,
            released: 0,
            cleared: 0,
        }),
    };
    (producer, consumer)
}

struct ProducerInner<T> {
    ring: Arc<Ring<T>>,
    /// Absolute index of the next slot to fill.
    tail: usize,
    /// End of the line being filled: slots `tail..line_end` are known to be free.
    /// `tail <= line_end`, and `line_end` is a line boundary.
    line_end: usize,
    /// The last value of `Ring::cleared` loaded.
    cleared: usize,
}

/// The writing half of a mailbox. `Send`, not `Sync`: one thread pushes at a time.
pub struct Producer<T> {
    inner: CachePadded<ProducerInner<T>>,
}

impl<T: Copy + Send> Producer<T> {
    /// Appends `value`, or hands it back if the mailbox is full.
    ///
    /// # Errors
    /// [`PushError::Full`] when every usable slot is occupied.
    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), PushError<T>> {
        if self.room() {
            self.put(&value);
            Ok(())
        } else {
            Err(PushError::Full(value))
        }
    }

    /// Appends the longest prefix of `values` that fits; returns its length. One
    /// check per line entered, as for single pushes; the values of a line are
    /// written back to back.
    ///
    /// ```
    /// use eiffel_pspat::mailbox::mailbox;
    /// let (mut tx, mut rx) = mailbox::<u64>(8).unwrap();
    /// let cap = tx.capacity();
    /// let values: Vec<u64> = (0..cap as u64 + 5).collect();
    /// assert_eq!(tx.push_slice(&values), cap);
    /// let mut out = Vec::with_capacity(cap);
    /// assert_eq!(rx.read_many(&mut out, cap), cap);
    /// assert_eq!(out, values[..cap]);
    /// ```
    #[inline]
    pub fn push_slice(&mut self, values: &[T]) -> usize {
        self.claim_lines(values.len());
        for (i, v) in values.iter().enumerate() {
            if !self.room() {
                return i;
            }
            self.put(v);
        }
        values.len()
    }

    /// Appends values taken from `values` while there is room, writing each
    /// straight into its slot; returns how many. The iterator is not advanced
    /// past the last value written. Lines are claimed as in
    /// [`Producer::push_slice`].
    ///
    /// ```
    /// use eiffel_pspat::mailbox::mailbox;
    /// let (mut tx, mut rx) = mailbox::<u64>(8).unwrap();
    /// let cap = tx.capacity();
    /// let mut values = 0..;
    /// assert_eq!(tx.push_iter(&mut values), cap);
    /// assert_eq!(values.next(), Some(cap as u64));
    /// let mut sum = 0;
    /// assert_eq!(rx.read_with(cap, |v| sum += *v), cap);
    /// assert_eq!(sum, (0..cap as u64).sum());
    /// ```
    #[inline]
    pub fn push_iter(&mut self, values: impl IntoIterator<Item = T>) -> usize {
        let mut values = values.into_iter();
        self.claim_lines(values.size_hint().0);
        let mut n = 0;
        while self.room() {
            let Some(v) = values.next() else { break };
            self.put(&v);
            n += 1;
        }
        n
    }

    /// Hints the CPU to take for writing the slots of the next `count` values
    /// that the last loaded `cleared` shows free, one hint per cache line.
    #[inline]
    fn claim_lines(&self, count: usize) {
        let p = &*self.inner;
        let capacity = p.ring.mask + 1 - p.ring.line;
        let free = capacity.saturating_sub(p.tail.wrapping_sub(p.cleared));
        let n = count.min(free.max(p.line_end - p.tail));
        p.ring.slots.hint_run(p.tail, n, Access::Write);
    }

    /// Whether the next slot may be written: inside the current line, or the next
    /// line is free (see the module documentation).
    #[inline]
    fn room(&mut self) -> bool {
        let p = &mut *self.inner;
        if p.tail == p.line_end {
            let capacity = p.ring.mask + 1 - p.ring.line;
            if p.tail.wrapping_sub(p.cleared) >= capacity {
                p.cleared = p.ring.cleared.load(Ordering::Acquire);
                if p.tail.wrapping_sub(p.cleared) >= capacity {
                    return false;
                }
            }
            p.line_end = p.tail + p.ring.line;
        }
        true
    }

    /// Writes the next slot; [`Producer::room`] returned true.
    #[inline]
    fn put(&mut self, value: &T) {
        let p = &mut *self.inner;
        debug_assert!(p.tail < p.line_end, "put without room");
        let slot = p.ring.slots.get(p.tail);
        debug_assert_ne!(
            slot.mark.load(Ordering::Relaxed),
            mark_of(p.tail),
            "slot {} already holds index {} (line_end={})",
            p.tail & p.ring.mask,
            p.tail,
            p.line_end
        );
        slot.value.with_mut(|ptr| {
            // SAFETY: the previous value of this slot was released by the consumer
            // (the load of `cleared` in `room` happened-after that release), the
            // consumer does not read a slot until its mark says so, and we are the
            // only producer.
            #[allow(unsafe_code)]
            unsafe {
                // Memory to memory: a value passed by value went through the
                // stack first, and the slot's loads of it waited on those
                // stores (a failed store-to-load forward each).
                ptr.cast::<T>().copy_from_nonoverlapping(value, 1);
            }
        });
        slot.mark.store(mark_of(p.tail), Ordering::Release);
        p.tail = p.tail.wrapping_add(1);
    }

    /// Values the mailbox can hold.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.inner.ring.slots.len - self.inner.ring.line
    }

    /// Values pushed since creation (wrapping).
    #[must_use]
    pub fn pushed(&self) -> usize {
        self.inner.tail
    }
}

impl<T> core::fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Producer")
            .field("tail", &self.inner.tail)
            .field("line_end", &self.inner.line_end)
            .finish_non_exhaustive()
    }
}

struct ConsumerInner<T> {
    ring: Arc<Ring<T>>,
    /// Absolute index of the next slot to read.
    head: usize,
    /// Slots read and given back: `cleared <= released <= head`.
    released: usize,
    /// The last value published in `Ring::cleared`: the last line boundary
    /// `<= released`.
    cleared: usize,
}

/// The reading half of a mailbox. `Send`, not `Sync`: one thread reads at a time.
pub struct Consumer<T> {
    inner: CachePadded<ConsumerInner<T>>,
}

impl<T: Copy + Send> Consumer<T> {
    /// Takes the next value, leaving its slot occupied until [`Consumer::release`].
    #[inline]
    pub fn read(&mut self) -> Option<T> {
        let c = &mut *self.inner;
        let slot = c.ring.slots.get(c.head);
        if slot.mark.load(Ordering::Acquire) != mark_of(c.head) {
            return None;
        }
        let value = slot.value.with(|ptr| {
            // SAFETY: the mark (acquire) was stored by the producer after writing
            // the value (release), and the producer does not write this slot again
            // until we release it.
            #[allow(unsafe_code)]
            unsafe {
                ptr.read().assume_init()
            }
        });
        c.head = c.head.wrapping_add(1);
        Some(value)
    }

    /// Appends to `out` the waiting values, at most `max`; returns how many. Slots
    /// stay occupied until [`Consumer::release`]. `out` does not grow beyond its
    /// capacity if it has room for `max`. Takes what [`Consumer::read_with`] takes.
    #[inline]
    pub fn read_many(&mut self, out: &mut Vec<T>, max: usize) -> usize {
        self.read_with(max, |v| out.push(*v))
    }

    /// Hands the waiting values, at most `max`, to `each` in order, by reference
    /// to their slots (nothing is copied that `each` does not copy); returns how
    /// many. Slots stay occupied until
    /// [`Consumer::release`].
    ///
    /// A run whose last slot is marked is taken without per-slot checks.
    /// When fewer than `max` values wait, the values of the lines the producer has
    /// finished are taken, and a line it is still filling is read slot by slot
    /// only when nothing else waits: reading the slots right behind a producer
    /// that streams would pull each line across the cores while the producer
    /// still writes it, and keep the two sides in step a slot apart.
    ///
    /// Every line of the values taken is requested first: the lines come from
    /// the producer's core, and asking for all of them at once overlaps their
    /// transfers. (Measured in the arbiter: requesting them a fixed distance
    /// ahead of the value handed over instead, to overlap the transfers with the
    /// caller's work, cost 20% more per packet than the burst.)
    ///
    /// ```
    /// use eiffel_pspat::mailbox::mailbox;
    /// let (mut tx, mut rx) = mailbox::<u64>(8).unwrap();
    /// assert_eq!(tx.push_slice(&[1, 2, 3]), 3);
    /// let mut sum = 0;
    /// assert_eq!(rx.read_with(8, |v| sum += *v), 3);
    /// assert_eq!(sum, 6);
    /// rx.release(3);
    /// ```
    #[inline]
    pub fn read_with(&mut self, max: usize, mut each: impl FnMut(&T)) -> usize {
        let n = self.ready(max);
        let c = &mut *self.inner;
        let slots = &c.ring.slots;
        slots.hint_run(c.head, n, Access::Read);
        for _ in 0..n {
            let slot = slots.get(c.head);
            debug_assert_eq!(slot.mark.load(Ordering::Relaxed), mark_of(c.head));
            c.head = c.head.wrapping_add(1);
            slot.value.with(|ptr| {
                // SAFETY: `ready` saw (acquire) the mark of this slot or of a later
                // one; the producer writes each value before marking it and fills
                // slots in order, so the value is written, and it does not write
                // this slot again until we release it, which takes `&mut self`:
                // the reference does not outlive this call.
                #[allow(unsafe_code)]
                let value = unsafe { (*ptr).assume_init_ref() };
                each(value);
            });
        }
        n
    }

    /// How many values, at most `max`, to take from the next slot on: all `max`
    /// if the last of them is marked, else those of the lines whose last slot is
    /// marked, else the marked slots of the line being filled. Every slot counted
    /// is written: its mark, or a later slot's, was seen (acquire).
    #[inline]
    fn ready(&self, max: usize) -> usize {
        if max > 1 && self.marked(max - 1) {
            return max;
        }
        let line = self.inner.ring.line;
        let mut n = 0;
        while n < max {
            let to_line_end = line - (self.inner.head.wrapping_add(n) & (line - 1));
            let want = to_line_end.min(max - n);
            if !self.marked(n + want - 1) {
                break;
            }
            n += want;
        }
        if n > 0 {
            return n;
        }
        while n < max && self.marked(n) {
            n += 1;
        }
        n
    }

    /// Whether the value `ahead` slots after the next one has been written
    /// (acquire).
    #[inline]
    fn marked(&self, ahead: usize) -> bool {
        let c = &*self.inner;
        let index = c.head.wrapping_add(ahead);
        let slot = c.ring.slots.get(index);
        slot.mark.load(Ordering::Acquire) == mark_of(index)
    }

    /// Gives back the `count` oldest read slots. The producer learns of them a
    /// step of whole lines at a time (see [`mailbox`]).
    ///
    /// # Panics
    /// If `count` exceeds [`Consumer::unreleased`]: releasing a slot that was not
    /// read would let the producer overwrite a value before it is read.
    #[inline]
    pub fn release(&mut self, count: usize) {
        let c = &mut *self.inner;
        assert!(
            count <= c.head.wrapping_sub(c.released),
            "release({count}) with only {} slots read and unreleased",
            c.head.wrapping_sub(c.released)
        );
        c.released = c.released.wrapping_add(count);
        let boundary = c.released & !(c.ring.step - 1);
        if boundary != c.cleared {
            c.cleared = boundary;
            c.ring.cleared.store(boundary, Ordering::Release);
        }
    }

    /// Takes the next value and releases one slot.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        let value = self.read()?;
        self.release(1);
        Some(value)
    }

    /// Whether no value is waiting to be read.
    #[must_use]
    #[inline]
    pub fn is_empty(&self) -> bool {
        let c = &*self.inner;
        c.ring.slots.get(c.head).mark.load(Ordering::Acquire) != mark_of(c.head)
    }

    /// Slots read but not yet released.
    #[must_use]
    pub fn unreleased(&self) -> usize {
        self.inner.head.wrapping_sub(self.inner.released)
    }

    /// Values read since creation (wrapping).
    #[must_use]
    pub fn read_count(&self) -> usize {
        self.inner.head
    }

    /// Values the mailbox can hold.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.inner.ring.slots.len - self.inner.ring.line
    }
}

impl<T> core::fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Consumer")
            .field("head", &self.inner.head)
            .field("released", &self.inner.released)
            .field("cleared", &self.inner.cleared)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn line_sizes_cover_a_cache_line() {
        assert_eq!(slots_per_line::<u32>(), 16);
        assert_eq!(stride_of::<u32>(), 8);
        assert_eq!(slots_per_line::<u64>(), 8);
        assert_eq!(slots_per_line::<eiffel_sched::Packet>(), 2);
        assert_eq!(slots_per_line::<[u8; 200]>(), 1);
        assert_eq!(stride_of::<eiffel_sched::Packet>(), 64);
        assert_eq!(stride_of::<[u8; 200]>(), 256);
    }

    #[test]
    fn releases_are_published_a_step_at_a_time() {
        assert_eq!(publish_step(254, 2), 32);
        assert_eq!(publish_step(6, 2), 2);
        assert_eq!(publish_step(14, 2), 2);
        assert_eq!(publish_step(30, 2), 4);
        assert_eq!(publish_step(1016, 8), 32);
        assert_eq!(publish_step(1, 1), 1);
        assert_eq!(publish_step(200, 64), 64);
        // A 30-value ring of packets: published every 4 released slots.
        let (mut tx, mut rx) = mailbox::<eiffel_sched::Packet>(30).unwrap();
        let cap = tx.capacity();
        assert_eq!(cap, 30);
        let p = eiffel_sched::Packet::new(0, 60);
        assert_eq!(tx.push_slice(&vec![p; cap]), cap);
        assert_eq!(rx.read_many(&mut Vec::with_capacity(cap), cap), cap);
        rx.release(3);
        assert!(tx.push(p).is_err(), "3 released, step 4: nothing published");
        rx.release(1);
        assert!(tx.push(p).is_ok());
    }

    #[test]
    fn capacity_rounds_up_and_rejects_zero() {
        let (tx, rx) = mailbox::<u64>(5).unwrap();
        assert!(tx.capacity() >= 5);
        assert_eq!(tx.capacity(), rx.capacity());
        assert_eq!(
            mailbox::<u64>(0).unwrap_err(),
            CapacityError {
                requested: 0,
                max: MAX_SLOTS - 8
            }
        );
        assert!(mailbox::<u64>(MAX_SLOTS).is_err());
    }

    #[test]
    fn fills_to_capacity_then_refuses_until_a_line_is_released() {
        let (mut tx, mut rx) = with_geometry::<u32>(4, 2);
        assert_eq!(tx.capacity(), 6);
        for i in 0..6 {
            tx.push(i).unwrap();
        }
        assert_eq!(tx.push(6), Err(PushError::Full(6)));
        assert_eq!(rx.read(), Some(0));
        rx.release(1);
        // Half a line released: still full.
        assert_eq!(tx.push(6), Err(PushError::Full(6)));
        assert_eq!(rx.read(), Some(1));
        rx.release(1);
        tx.push(6).unwrap();
        tx.push(7).unwrap();
        assert_eq!(tx.push(8).unwrap_err().into_inner(), 8);
        for want in 2..8 {
            assert_eq!(rx.pop(), Some(want));
        }
        assert_eq!(rx.pop(), None);
        assert!(rx.is_empty());
    }

    #[test]
    fn deferred_release_bounds_what_the_producer_may_add() {
        let (mut tx, mut rx) = with_geometry::<u32>(2, 4);
        for i in 0..4 {
            tx.push(i).unwrap();
        }
        for i in 0..4 {
            assert_eq!(rx.read(), Some(i));
        }
        assert_eq!(rx.unreleased(), 4);
        assert!(tx.push(4).is_err(), "read but unreleased slots stay taken");
        rx.release(4);
        tx.push(4).unwrap();
        assert_eq!(rx.read(), Some(4));
    }

    #[test]
    #[should_panic(expected = "release(2) with only 1")]
    fn releasing_unread_slots_panics() {
        let (mut tx, mut rx) = with_geometry::<u32>(2, 2);
        tx.push(1).unwrap();
        rx.read().unwrap();
        rx.release(2);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
            if cfg!(miri) { 2 } else { 256 }
        ))]
        /// Against a reference model: a FIFO plus the exact line-wise room rule.
        #[test]
        fn matches_a_bounded_fifo(
            lines_log in 1u32..4,
            line_log in 0u32..3,
            ops in proptest::collection::vec(0u8..8, 0..200),
        ) {
            let (lines, line) = (1usize << lines_log, 1usize << line_log);
            let (mut tx, mut rx) = with_geometry::<u32>(lines, line);
            let cap = (lines - 1) * line;
            let mut model: VecDeque<u32> = VecDeque::new();
            let (mut pushed, mut released, mut read_unreleased) = (0usize, 0usize, 0usize);
            for op in ops {
                match op {
                    0 | 1 => {
                        // Exact rule: a push fails only when it would enter a new
                        // line while fewer than a line's worth of whole lines are
                        // released, i.e. when the one-line gap would be filled.
                        let cleared = released / line * line;
                        let refuse = pushed % line == 0 && pushed - cleared >= cap;
                        let value = u32::try_from(pushed).unwrap();
                        match tx.push(value) {
                            Ok(()) => {
                                proptest::prop_assert!(!refuse);
                                proptest::prop_assert!(pushed - released < cap);
                                model.push_back(value);
                                pushed += 1;
                            }
                            Err(PushError::Full(v)) => {
                                proptest::prop_assert!(refuse);
                                proptest::prop_assert_eq!(v, value);
                            }
                        }
                    }
                    2 => {
                        let got = rx.read();
                        proptest::prop_assert_eq!(got, model.pop_front());
                        if got.is_some() {
                            read_unreleased += 1;
                        }
                    }
                    4 | 6 => {
                        // A batch of three: the prefix the single-push rule admits.
                        let cleared = released / line * line;
                        let mut fits = 0;
                        while fits < 3 && !((pushed + fits) % line == 0 && pushed + fits - cleared >= cap) {
                            fits += 1;
                        }
                        let values: Vec<u32> =
                            (0..3).map(|k| u32::try_from(pushed + k).unwrap()).collect();
                        if op == 4 {
                            proptest::prop_assert_eq!(tx.push_slice(&values), fits);
                        } else {
                            let mut iter = values.iter().copied();
                            proptest::prop_assert_eq!(tx.push_iter(&mut iter), fits);
                            // Not advanced past the last value written.
                            proptest::prop_assert_eq!(iter.next(), values.get(fits).copied());
                        }
                        model.extend(&values[..fits]);
                        pushed += fits;
                    }
                    7 => {
                        let mut got = Vec::new();
                        let n = rx.read_with(4, |v| got.push(*v));
                        proptest::prop_assert_eq!(n, got.len());
                        for v in got {
                            proptest::prop_assert_eq!(Some(v), model.pop_front());
                        }
                        read_unreleased += n;
                    }
                    5 => {
                        let mut out = Vec::new();
                        let n = rx.read_many(&mut out, 3);
                        proptest::prop_assert_eq!(n, out.len());
                        for v in out {
                            proptest::prop_assert_eq!(Some(v), model.pop_front());
                        }
                        // A short read leaves nothing, or (after whole lines) only
                        // the start of a line the producer has not finished.
                        let head = pushed - model.len();
                        proptest::prop_assert!(
                            n == 3
                                || model.is_empty()
                                || (n > 0 && model.len() < line - head % line)
                        );
                        read_unreleased += n;
                    }
                    _ => {
                        rx.release(read_unreleased);
                        released += read_unreleased;
                        read_unreleased = 0;
                    }
                }
                proptest::prop_assert_eq!(rx.is_empty(), model.is_empty());
                proptest::prop_assert_eq!(rx.unreleased(), read_unreleased);
            }
        }
    }

    /// A producer mixing batches (slices and iterators) with single pushes,
    /// against a consumer reading in place: every value once, in order.
    #[test]
    fn threads_mix_batches_and_single_pushes_in_order() {
        let n: u32 = if cfg!(miri) { 64 } else { 200_000 };
        let (mut tx, mut rx) = mailbox::<u32>(16).unwrap();
        let producer = std::thread::spawn(move || {
            let mut next = 0;
            while next < n {
                let sent = match next % 7 {
                    0 => tx.push(next).map_or(0, |()| 1),
                    1..=3 => {
                        let end = n.min(next + 5);
                        let values: Vec<u32> = (next..end).collect();
                        tx.push_slice(&values)
                    }
                    _ => tx.push_iter(next..n.min(next + 9)),
                };
                if sent == 0 {
                    std::thread::yield_now();
                }
                next += u32::try_from(sent).unwrap();
            }
        });
        let mut expect = 0;
        while expect < n {
            let k = rx.read_with(6, |&v| {
                assert_eq!(v, expect);
                expect += 1;
            });
            if k == 0 {
                std::thread::yield_now();
            }
            rx.release(k);
        }
        producer.join().unwrap();
        assert!(rx.is_empty());
    }

    #[test]
    fn threads_transfer_everything_in_order() {
        let n: u64 = if cfg!(miri) { 64 } else { 200_000 };
        let (mut tx, mut rx) = mailbox::<u64>(16).unwrap();
        let producer = std::thread::spawn(move || {
            for i in 0..n {
                let mut v = i;
                while let Err(PushError::Full(back)) = tx.push(v) {
                    v = back;
                    std::thread::yield_now();
                }
            }
        });
        let mut expect = 0;
        while expect < n {
            match rx.pop() {
                Some(v) => {
                    assert_eq!(v, expect);
                    expect += 1;
                }
                None => std::thread::yield_now(),
            }
        }
        producer.join().unwrap();
        assert!(rx.is_empty());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::thread;

    fn push_all(tx: &mut Producer<u32>, values: core::ops::Range<u32>) {
        for v in values {
            let mut v = v;
            while let Err(PushError::Full(back)) = tx.push(v) {
                v = back;
                thread::yield_now();
            }
        }
    }

    /// Push and pop across two threads, through a ring small enough to wrap: the
    /// consumer sees every value once, in order, and the producer never overwrites
    /// a slot before it is released (loom flags the data race if it does).
    #[test]
    fn push_pop_wraps_in_order() {
        loom::model(|| {
            let (mut tx, mut rx) = with_geometry::<u32>(2, 1);
            let producer = thread::spawn(move || push_all(&mut tx, 0..3));
            let mut expect = 0;
            while expect < 3 {
                match rx.pop() {
                    Some(v) => {
                        assert_eq!(v, expect);
                        expect += 1;
                    }
                    None => thread::yield_now(),
                }
            }
            producer.join().unwrap();
            assert!(rx.is_empty());
        });
    }

    /// Lines of two slots: the producer must wait for a whole line to be released
    /// (the consumer releases only when a line is complete), including while the
    /// consumer holds read but unreleased slots.
    #[test]
    fn line_release_and_full() {
        loom::model(|| {
            let (mut tx, mut rx) = with_geometry::<u32>(2, 2);
            let producer = thread::spawn(move || {
                push_all(&mut tx, 0..2);
                // The ring (capacity 2) is now full until the consumer releases.
                push_all(&mut tx, 2..4);
            });
            let mut expect = 0;
            while expect < 4 {
                match rx.read() {
                    Some(v) => {
                        assert_eq!(v, expect);
                        expect += 1;
                        if expect % 2 == 0 {
                            rx.release(2);
                        }
                    }
                    None => thread::yield_now(),
                }
            }
            producer.join().unwrap();
            assert_eq!(rx.unreleased(), 0);
        });
    }

    /// Batched pushes and reads across a wrap: a reader that takes several values
    /// at once never sees a slot before its value is written, and the producer
    /// never refills a line before the reader has released it.
    #[test]
    fn batches_wrap_in_order() {
        loom::model(|| {
            let (mut tx, mut rx) = with_geometry::<u32>(2, 2);
            let producer = thread::spawn(move || {
                let values = [0, 1, 2, 3];
                let mut sent = 0;
                while sent < values.len() {
                    let n = tx.push_slice(&values[sent..]);
                    if n == 0 {
                        thread::yield_now();
                    }
                    sent += n;
                }
            });
            let mut got = Vec::with_capacity(4);
            while got.len() < 4 {
                let before = got.len();
                // Two at a time: the capacity, so a run of two marked slots takes
                // the unchecked path.
                let n = rx.read_many(&mut got, 2);
                if n == 0 {
                    thread::yield_now();
                }
                rx.release(n);
                assert_eq!(got.len(), before + n);
            }
            producer.join().unwrap();
            assert_eq!(got, [0, 1, 2, 3]);
        });
    }

    /// A batch written from an iterator, then a single push, read in place:
    /// the consumer never reads a slot the producer has not finished.
    #[test]
    fn a_batch_then_a_single_push() {
        loom::model(|| {
            let (mut tx, mut rx) = with_geometry::<u32>(2, 2);
            let producer = thread::spawn(move || {
                assert_eq!(tx.push_iter(0..2), 2);
                while tx.push(2).is_err() {
                    thread::yield_now();
                }
            });
            let mut got = Vec::with_capacity(3);
            while got.len() < 3 {
                let n = rx.read_with(2, |&v| got.push(v));
                if n == 0 {
                    thread::yield_now();
                }
                rx.release(n);
            }
            producer.join().unwrap();
            assert_eq!(got, [0, 1, 2]);
        });
    }

    /// Releases published two slots at a time (a step of two one-slot lines):
    /// the producer waits for a whole step and never overwrites an unread value.
    #[test]
    fn releases_published_a_step_at_a_time() {
        loom::model(|| {
            let (mut tx, mut rx) = with_step::<u32>(4, 1, 2);
            let producer = thread::spawn(move || push_all(&mut tx, 0..5));
            let mut expect = 0;
            while expect < 5 {
                match rx.pop() {
                    Some(v) => {
                        assert_eq!(v, expect);
                        expect += 1;
                    }
                    None => thread::yield_now(),
                }
            }
            producer.join().unwrap();
            assert!(rx.is_empty());
        });
    }

    /// An empty mailbox reads as empty, and a push becomes visible with its value.
    #[test]
    fn empty_then_visible() {
        loom::model(|| {
            let (mut tx, mut rx) = with_geometry::<u32>(2, 2);
            let producer = thread::spawn(move || tx.push(7).unwrap());
            let first = rx.pop();
            producer.join().unwrap();
            match first {
                Some(v) => assert_eq!(v, 7),
                None => assert_eq!(rx.pop(), Some(7)),
            }
            assert_eq!(rx.pop(), None);
        });
    }
}
