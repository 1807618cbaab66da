//! `timing_wheel`: a time-indexed wheel for non-work-conserving shaping (the
//! Carousel design the Eiffel paper builds on, section 2 and 5.1.1), with an
//! occupancy bitmap so the next due time is found with find-first-set instead of
//! stepping through empty slots or firing timers at fixed intervals.
//!
//! The wheel has `N` slots of `g` nanoseconds each; absolute slot `s = t / g` lives in
//! wheel position `s mod N`. The *cursor* is the absolute slot of the wheel's
//! present: every queued element lies in absolute slots `cursor .. cursor + N`, which
//! makes the circular positions unambiguous. The horizon is therefore `N g`.
//!
//! - `insert(now, due, item)`: advances the cursor to `now` (see below), then files
//!   the item in slot `max(due / g, cursor)`. A due time already in the past goes in
//!   the cursor slot and is counted in [`QueueStats::underflow`] when it precedes the
//!   cursor. A due time at or beyond the horizon is refused
//!   ([`OutOfRange::Reject`], the default: [`InsertError::OutOfRange`] hands the item
//!   back) or filed in the last slot of the horizon ([`OutOfRange::Clamp`], counted in
//!   [`QueueStats::clamped_high`]; such an item is released early).
//! - `pop_due(now)`: the head of the earliest non-empty slot, if that slot has
//!   started (`slot * g <= now`).
//! - `next_due()`: the start time of the earliest non-empty slot: a caller sleeps
//!   exactly until then.
//!
//! Release precision: an element leaves at the start of its slot, up to `g - 1` ns
//! before its due time; the granularity is the shaper's precision. Elements of one
//! slot leave in FIFO order.
//!
//! The cursor advances to `now / g` but never past the earliest non-empty slot, so
//! elements that are due but not yet popped keep their identity (the horizon of new
//! inserts shrinks by the backlog of due slots until they are popped).
//!
//! Costs: `insert`, `remove`, `reschedule` O(1) plus one bitmap update and a cursor
//! advance (`O(log64 N)` bit scans); `pop_due`, `next_due` `O(log64 N)`.

use crate::api::{
    check_capacity, ConfigError, Handle, InsertError, OutOfRange, QueueStats, RankError,
};
use crate::bucketed::Granularity;
use crate::hbitmap::HierBitmap;
use crate::index::MAX_HIER_BUCKETS;
use crate::store::{BucketStore, NIL};

/// The configuration of a [`TimingWheel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WheelConfig {
    /// Number of slots.
    pub slots: usize,
    /// Nanoseconds per slot.
    pub granularity: u64,
    /// Most elements held.
    pub capacity: usize,
    /// What to do with due times at or beyond the horizon.
    pub beyond_horizon: OutOfRange,
}

impl WheelConfig {
    /// `slots` slots of `granularity` ns holding up to `capacity` elements, refusing
    /// due times beyond the horizon.
    #[must_use]
    pub const fn new(slots: usize, granularity: u64, capacity: usize) -> Self {
        WheelConfig {
            slots,
            granularity,
            capacity,
            beyond_horizon: OutOfRange::Reject,
        }
    }

    /// Sets the beyond-horizon behaviour.
    #[must_use]
    pub const fn beyond_horizon(mut self, behaviour: OutOfRange) -> Self {
        self.beyond_horizon = behaviour;
        self
    }

    /// A wheel covering `horizon` ns with `slots` slots (granularity rounded up).
    #[must_use]
    pub const fn with_horizon(horizon: u64, slots: usize, capacity: usize) -> Self {
        let g = horizon.div_ceil(slots as u64);
        WheelConfig::new(slots, if g == 0 { 1 } else { g }, capacity)
    }
}

/// A timing wheel of items of type `T`.
#[derive(Clone, Debug)]
pub struct TimingWheel<T> {
    store: BucketStore<T>,
    occupied: HierBitmap,
    n: u64,
    gran: Granularity,
    /// Absolute slot of the present; no element lies in an earlier slot.
    cursor: u64,
    beyond_horizon: OutOfRange,
    stats: QueueStats,
}

impl<T> TimingWheel<T> {
    /// A wheel for `cfg`.
    pub fn new(cfg: WheelConfig) -> Result<Self, ConfigError> {
        if cfg.slots == 0 {
            return Err(ConfigError::ZeroBuckets);
        }
        ConfigError::at_most_buckets(cfg.slots, MAX_HIER_BUCKETS)?;
        check_capacity(cfg.capacity)?;
        let gran = Granularity::new(cfg.granularity)?;
        if (cfg.slots as u64).checked_mul(gran.ranks()).is_none() {
            return Err(ConfigError::HorizonTooLarge);
        }
        Ok(TimingWheel {
            store: BucketStore::new(cfg.capacity, cfg.slots),
            occupied: HierBitmap::new(cfg.slots),
            n: cfg.slots as u64,
            gran,
            cursor: 0,
            beyond_horizon: cfg.beyond_horizon,
            stats: QueueStats::default(),
        })
    }

    /// Elements queued.
    #[must_use]
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether nothing is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.store.len() == 0
    }

    /// Most elements the wheel holds.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.store.capacity()
    }

    /// Nanoseconds per slot.
    #[must_use]
    pub fn granularity(&self) -> u64 {
        self.gran.ranks()
    }

    /// Nanoseconds covered ahead of the cursor.
    #[must_use]
    pub fn horizon(&self) -> u64 {
        self.n * self.gran.ranks()
    }

    /// Late, clamped and refused counts (see the module documentation).
    #[must_use]
    pub fn stats(&self) -> QueueStats {
        self.stats
    }

    #[inline]
    fn slot_of(&self, t: u64) -> u64 {
        self.gran.buckets_between(0, t)
    }

    #[inline]
    fn position(&self, abs: u64) -> usize {
        (abs % self.n) as usize
    }

    /// Absolute slot of the earliest non-empty slot.
    #[inline]
    fn earliest(&self) -> Option<u64> {
        let p = self.position(self.cursor);
        let q = self
            .occupied
            .next_set(p)
            .or_else(|| self.occupied.next_set(0))?;
        let ahead = if q >= p {
            q - p
        } else {
            self.n as usize - p + q
        };
        Some(self.cursor + ahead as u64)
    }

    /// Moves the cursor towards `now` without passing a non-empty slot.
    #[inline]
    fn advance(&mut self, now: u64) {
        let target = self.slot_of(now);
        if target <= self.cursor {
            return;
        }
        self.cursor = match self.earliest() {
            Some(e) => target.min(e),
            None => target,
        };
    }

    /// Files `item` to be released at `due`.
    pub fn insert(&mut self, now: u64, due: u64, item: T) -> Result<Handle, InsertError<T>> {
        self.advance(now);
        let Some(abs) = self.place(due, true) else {
            return Err(InsertError::OutOfRange(item));
        };
        let pos = self.position(abs);
        let (handle, was_empty) = self
            .store
            .push_back(pos, due, item)
            .map_err(InsertError::Full)?;
        if was_empty {
            self.occupied.set(pos);
        }
        Ok(handle)
    }

    /// The absolute slot for `due`, or `None` if beyond the horizon and refused.
    #[inline]
    fn place(&mut self, due: u64, count: bool) -> Option<u64> {
        let inc = u64::from(count);
        let s = self.slot_of(due);
        if s < self.cursor {
            self.stats.underflow += inc;
            return Some(self.cursor);
        }
        if s - self.cursor < self.n {
            return Some(s);
        }
        if self.beyond_horizon == OutOfRange::Reject {
            self.stats.rejected += inc;
            return None;
        }
        self.stats.clamped_high += inc;
        Some(self.cursor + self.n - 1)
    }

    /// The start time of the earliest non-empty slot: nothing is due before it.
    #[must_use]
    pub fn next_due(&self) -> Option<u64> {
        self.earliest().map(|s| s.saturating_mul(self.gran.ranks()))
    }

    /// Removes and returns `(due, item)` of the next element whose slot has started by
    /// `now`, or `None` if nothing is due.
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, T)> {
        self.advance(now);
        let abs = self.earliest()?;
        if abs > self.slot_of(now) {
            return None;
        }
        let pos = self.position(abs);
        let (due, item, next) = self
            .store
            .pop_front(pos)
            .expect("earliest slot is non-empty");
        if next == NIL {
            self.occupied.clear(pos);
        }
        Some((due, item))
    }

    /// Removes the element named by `handle`.
    pub fn remove(&mut self, handle: Handle) -> Option<(u64, T)> {
        let idx = self.store.resolve(handle)?;
        let (due, item, pos, now_empty) = self.store.remove(idx);
        if now_empty {
            self.occupied.clear(pos);
        }
        Some((due, item))
    }

    /// Moves the element named by `handle` to a new due time (keeping its place if the
    /// slot does not change).
    pub fn reschedule(&mut self, handle: Handle, due: u64) -> Result<(), RankError> {
        let idx = self.store.resolve(handle).ok_or(RankError::StaleHandle)?;
        let abs = self.place(due, true).ok_or(RankError::OutOfRange)?;
        let pos = self.position(abs);
        self.store.set_rank(idx, due);
        if self.store.list_of(idx) != pos {
            let (old, old_empty, new_was_empty) = self.store.move_back(idx, pos);
            if old_empty {
                self.occupied.clear(old);
            }
            if new_was_empty {
                self.occupied.set(pos);
            }
        }
        Ok(())
    }

    /// The due time and item named by `handle`.
    #[must_use]
    pub fn get(&self, handle: Handle) -> Option<(u64, &T)> {
        self.store.get(handle)
    }

    /// Checks store links and bitmap agreement.
    ///
    /// # Panics
    /// On a violated invariant.
    pub fn check_invariants(&self) {
        self.store.check_invariants();
        self.occupied.check_invariants();
        for pos in 0..self.n as usize {
            assert_eq!(
                self.occupied.contains(pos),
                !self.store.list_is_empty(pos),
                "bitmap and slot {pos} disagree"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_in_slot_order_and_reports_the_next_due_time() {
        let mut w = TimingWheel::new(WheelConfig::new(8, 10, 16)).unwrap();
        w.insert(0, 35, 'c').unwrap();
        w.insert(0, 12, 'a').unwrap();
        w.insert(0, 19, 'b').unwrap();
        assert_eq!(w.next_due(), Some(10));
        assert_eq!(w.pop_due(9), None);
        assert_eq!(w.pop_due(10), Some((12, 'a')));
        assert_eq!(w.pop_due(10), Some((19, 'b')));
        assert_eq!(w.pop_due(29), None);
        assert_eq!(w.next_due(), Some(30));
        assert_eq!(w.pop_due(1_000), Some((35, 'c')));
        assert!(w.is_empty() && w.next_due().is_none());
        w.check_invariants();
    }

    #[test]
    fn horizon_rejects_or_clamps_and_the_past_is_due_now() {
        let mut w = TimingWheel::new(WheelConfig::new(4, 10, 8)).unwrap();
        assert_eq!(w.horizon(), 40);
        assert!(matches!(
            w.insert(100, 140, 'x'),
            Err(InsertError::OutOfRange('x'))
        ));
        w.insert(100, 139, 'y').unwrap();
        w.insert(100, 50, 'p').unwrap();
        assert_eq!(w.stats().underflow, 1);
        assert_eq!(w.next_due(), Some(100));
        assert_eq!(w.pop_due(100), Some((50, 'p')));
        let mut c =
            TimingWheel::new(WheelConfig::new(4, 10, 8).beyond_horizon(OutOfRange::Clamp)).unwrap();
        c.insert(0, 1_000, 'z').unwrap();
        assert_eq!(c.stats().clamped_high, 1);
        assert_eq!(c.next_due(), Some(30));
    }

    #[test]
    fn wraps_around_many_times() {
        let mut w = TimingWheel::new(WheelConfig::new(16, 7, 64)).unwrap();
        let mut now = 0u64;
        let mut next = 0u32;
        let mut expect = 0u32;
        for round in 0..2_000u64 {
            for k in 0..3 {
                let due = now + (round * 13 + k * 29) % 100;
                w.insert(now, due, (due, next)).unwrap();
                next += 1;
            }
            now += 20;
            let mut last = 0;
            while let Some((due, (d, _))) = w.pop_due(now) {
                assert_eq!(due, d);
                assert!(due / 7 <= now / 7, "released before its slot");
                assert!(due / 7 >= last / 7, "slots out of order");
                last = due;
                expect += 1;
            }
            if round % 100 == 0 {
                w.check_invariants();
            }
        }
        while w.pop_due(u64::MAX / 2).is_some() {
            expect += 1;
        }
        assert_eq!(expect, next);
    }

    #[test]
    fn remove_and_reschedule_by_handle() {
        let mut w = TimingWheel::new(WheelConfig::new(8, 1, 8)).unwrap();
        let a = w.insert(0, 5, 'a').unwrap();
        let b = w.insert(0, 6, 'b').unwrap();
        w.reschedule(a, 7).unwrap();
        assert_eq!(w.next_due(), Some(6));
        assert_eq!(w.remove(b), Some((6, 'b')));
        assert_eq!(w.remove(b), None);
        assert_eq!(w.next_due(), Some(7));
        assert_eq!(w.get(a), Some((7, &'a')));
        w.check_invariants();
    }
}
