//! `calendar`: programmable calendar queues (Sharma et al., *Programmable Calendar
//! Queues for High-speed Packet Scheduling*, NSDI'20, sections 3 and 4): logical and
//! physical rotation, and the hierarchical calendar of section 3.5.
//!
//! ## The abstraction (section 3.2)
//! A calendar is a ring of FIFO buckets, one per *day* (the paper's period). The
//! *head* is the current day: [`Calendar::enqueue`]`(n)` files an element `n` days
//! ahead of it, [`Calendar::dequeue`] serves the head, and a *rotation* makes the
//! next day the head. Rotation is what makes priorities rise with time: every queued
//! element gets one day closer to the head, so a finite ring serves ranks that grow
//! without bound (fair-queueing rounds, deadlines), which a fixed-range priority
//! queue cannot (section 3.1).
//!
//! Days are absolute numbers: day `d` holds the ranks `[d g, (d + 1) g)` (`g` the
//! granularity; for a physical calendar `g` is the period `dT` in nanoseconds and a
//! rank is a time) and lives in bucket `d mod N`. Every queued element lies in the
//! days `head .. head + reach`, which makes ring positions unambiguous.
//!
//! ## When the head rotates
//! - **Logical** ([`Rotation::Logical`]; the WFQ of Fig. 2, pFabric-fair of 4.5):
//!   when a dequeue finds the head day empty while a later day is not, the head
//!   moves to the next non-empty day, found by find-first-set on the day bitmap
//!   rather than by stepping. The `k` days passed count as `k` rotations (the
//!   paper's calendar rotates through the empty queues one at a time with nothing
//!   to send in between). The rotation is lazy, on the dequeue that finds the head
//!   empty rather than on the pop that empties it, so an element filed for the
//!   current day in between is still served in it; and an empty calendar does not
//!   rotate at all (Appendix A: no rotation is triggered when nothing remains).
//! - **Physical** ([`Rotation::Physical`]; the EDF of Fig. 3 and the leaky bucket of
//!   Fig. 4): the head follows a clock, day `now / g`. [`Calendar::advance`]`(now)`
//!   moves the head to `min(now / g, first non-empty day)` in one step, counting
//!   every day passed, so an idle calendar jumps straight to the present. The head
//!   never passes a day that still holds elements: a day whose time is over but
//!   whose elements are not all served stays the head (the calendar *lags* the
//!   clock) until they are, then the head catches up, skipping empty days. The
//!   paper's hardware does the same: the rotated-out queue is drained before it is
//!   reused (section 3.4, steps 2 and 3).
//!   - *Work-conserving*: when the head day is empty, dequeue serves the earliest
//!     later day early (counted in [`CalendarStats::early`]) **without rotating**.
//!     Deviation: the paper's work-conserving EDF (Fig. 3) rotates, because in a
//!     switch only the head queue and the next one are unpaused, and then corrects
//!     every rank with the skew `delta` between calendar and clock. Software can
//!     serve any later day through the bitmap, so the head stays on the clock, no
//!     skew arises, and a packet that arrives later with an earlier deadline still
//!     goes ahead of the day served early. Fig. 3's own rule (rotate only when the
//!     head empties, correct the skew) is a logical calendar plus the policy's
//!     `delta` bookkeeping; [`Calendar::head_day`] gives it the days rotated.
//!   - *Non-work-conserving*: dequeue serves nothing until the first non-empty day
//!     has begun; [`Calendar::next_ready`] says when, so a caller sleeps exactly
//!     until then rather than polling.
//! - **Manual** ([`Calendar::rotate`], the paper's `CQ.rotate()`): one day. Elements
//!   still in the head day are carried to the front of the next day (counted in
//!   [`CalendarStats::carried`]): served before it, as the paper drains the old head
//!   queue before the new one.
//!
//! ## Where a rank goes
//! - A day before the head (a rank in the past, which a calendar cannot order,
//!   section 3.5 "Limitations"): the head day, its tail, counted in
//!   [`CalendarStats::past`]: the most urgent place there is.
//! - A day at or beyond `head + reach` (or past the last representable day,
//!   `u64::MAX / g`): the last day of the reach, counted in
//!   [`CalendarStats::clamped`] ([`OutOfRange::Clamp`], the default), or refused
//!   with the item handed back, counted in [`CalendarStats::rejected`]
//!   ([`OutOfRange::Reject`]).
//!
//! ## The hierarchical calendar (section 3.5)
//! Levels of sizes `n_0 x n_1 x ... x n_{k-1}` ([`CalendarConfig::hierarchical`]):
//! level `j` has `n_j` buckets of `P_j = n_0 ... n_{j-1}` days each (`P_0 = 1`,
//! level 0 being the flat calendar). A bucket of level `j >= 1` holds one *block*:
//! the `P_j` aligned days `[c P_j, (c + 1) P_j)`; the head's block `H_j = head / P_j`
//! is the level's *current* block. Level 0 holds the days `head .. head + n_0`, level
//! `j >= 1` the blocks `H_j < c <= H_j + n_j` (the current block's bucket is reused
//! for block `H_j + n_j`), and an element goes to the lowest level that holds its
//! day. The reach is `R = n_0 n_1 ... n_{k-1}` days, the paper's `n1 x n2` (16 x 8 x
//! 8 = 1024 periods from 32 queues): with `head < (H + 1) P` at the top level
//! (`H`, `P`, `n` its current block, span and size), `head + R = head + n P <
//! (H + n + 1) P`, the end of the top level's last block, so every `n < R` fits.
//!
//! When the head enters a new block at level `j` the block becomes current and its
//! bucket is emptied *one level down*, from the top level down, so an element filed
//! at level `j` is moved exactly once out of each of the levels `j, j - 1, ..., 1`
//! before it is served: at most `k - 1` moves, one per level, each an unlink and a
//! link, counted per level in [`CalendarStats::moves`]. The paper recirculates each
//! packet of its two-level calendar once; Brown's original calendar re-files a far
//! element every year. The head never skips past a non-empty block: its start is a
//! rotation stop, so the head lands exactly on it and every moved element lands in
//! a bucket of the level below (its day is less than `P_j` ahead of a head aligned
//! to `P_j`).
//!
//! Ordering is exact: days leave in order, FIFO within a day (by insertion or
//! re-rank). The levels' windows only move forward, so for any one day the
//! elements at a coarser level were all filed before those at a finer level; a move
//! therefore *prepends* the moved elements (in their order) to the buckets below,
//! and the oldest element of a day is the first of that day in the coarsest bucket
//! that holds it.
//!
//! ## Deviations from the paper, and why
//! - Work-conserving physical calendars serve a later day early without rotating
//!   (above): the skew correction of Fig. 3 becomes unnecessary.
//! - A rotation over empty days is one find-first-set jump, not one rotation per
//!   day; it is counted as the days it passes ([`CalendarStats::rotations`]), so a
//!   policy's round number (Fig. 2) is `head_day()` less the starting day.
//! - A physical calendar whose head day is late keeps it as the head until it
//!   drains, where the switch rotates the head on time and drains the old queue at
//!   a higher priority. The order served is the same; `enqueue(n)` is relative to
//!   the lagging head, so a policy that computes days from the clock files by
//!   absolute rank ([`PriorityQueue::insert`]) or measures `n` from
//!   [`Calendar::head_day`].
//! - Ranks in the past, which the paper leaves unordered, are served in the head
//!   day; ranks beyond the reach, which the paper leaves to the policy, are clamped
//!   or refused, and counted.
//! - The hierarchy keeps the exact order (days in order, FIFO within a day) where
//!   the paper accepts an approximation: level 0 always covers the `n_0` days from
//!   the head rather than the rest of the current rotation, moved elements are
//!   prepended, and the head stops at every non-empty block's start. The paper's
//!   recirculation when `CQ_1` completes a rotation is our move when a block of
//!   level 1 becomes current; more levels generalise it.
//!
//! ## Costs
//! Flat calendar: `enqueue`/`insert` a comparison, a ring addition and a link (plus a
//! bitmap set when the day was empty); `dequeue` from a non-empty head one unlink; a
//! rotation at most two bitmap searches (`O(log64 N)` word scans) whatever the
//! number of days passed; `remove` O(1); `peek` O(1), or one bitmap search when the
//! head is empty; manual `rotate` O(elements carried). Hierarchical calendar: an
//! element beyond level 0 costs one division (a shift for power-of-two spans) per
//! level tried; every non-empty coarse bucket costs one rotation stop when it
//! becomes current; each element is moved at most `k - 1` times in its life;
//! `peek`, [`Calendar::first_day`] and work-conserving early service scan the first
//! non-empty bucket of each coarse level when it may hold the minimum.
//!
//! ## Invariants (checked by [`Calendar::check_invariants`])
//! - every element lies in a day `head <= d < head + reach`, in bucket `d mod n_0`
//!   of level 0 or in the bucket of its block at the level that holds it, never in
//!   a level's current block;
//! - each level's bitmap bit is set iff its bucket is non-empty, and its element
//!   count is exact; the carry list is empty between operations;
//! - `head <= u64::MAX / g`; a physical calendar's head never passes a non-empty
//!   day.

use alloc::vec;
use alloc::vec::Vec;

use crate::api::{
    check_capacity, ConfigError, Handle, InsertError, OutOfRange, PriorityQueue, QueueConfig,
    QueueStats, RankError,
};
use crate::bucketed::Granularity;
use crate::hbitmap::HierBitmap;
use crate::index::MAX_HIER_BUCKETS;
use crate::store::{BucketStore, NIL};

/// Most levels of a hierarchical calendar (the paper uses up to three).
pub const MAX_CALENDAR_LEVELS: usize = 6;

/// How a calendar's head advances (see [`Calendar`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Rotation {
    /// The head moves to the next non-empty day when a dequeue finds it empty.
    #[default]
    Logical,
    /// The head follows the clock: one day per `granularity` nanoseconds.
    Physical {
        /// Whether a dequeue serves a later day early when the head day is empty.
        work_conserving: bool,
    },
}

/// The configuration of a [`Calendar`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CalendarConfig {
    /// Buckets of each level, finest first (`levels[0]` is the number of days of a
    /// flat calendar); only the first `depth` entries are used.
    pub levels: [usize; MAX_CALENDAR_LEVELS],
    /// Number of levels (1 for a flat calendar).
    pub depth: usize,
    /// Ranks per day; for a physical calendar, the period `dT` in nanoseconds.
    pub granularity: u64,
    /// A rank of the initial head day (and, for a physical calendar, the initial
    /// clock).
    pub start: u64,
    /// Most elements held; all slots are allocated up front.
    pub capacity: usize,
    /// What to do with days at or beyond the reach.
    pub beyond_reach: OutOfRange,
    /// How the head advances.
    pub rotation: Rotation,
}

impl CalendarConfig {
    /// A flat logical calendar of `days` days of one rank each, starting at day 0,
    /// holding up to `capacity` elements, clamping beyond its reach.
    #[must_use]
    pub const fn new(days: usize, capacity: usize) -> Self {
        let mut levels = [0; MAX_CALENDAR_LEVELS];
        levels[0] = days;
        CalendarConfig {
            levels,
            depth: 1,
            granularity: 1,
            start: 0,
            capacity,
            beyond_reach: OutOfRange::Clamp,
            rotation: Rotation::Logical,
        }
    }

    /// A hierarchical logical calendar with `levels[j]` buckets at level `j`, finest
    /// first: reach `levels[0] x levels[1] x ...` days. More than
    /// [`MAX_CALENDAR_LEVELS`] levels are refused by [`Calendar::new`].
    #[must_use]
    pub const fn hierarchical(levels: &[usize], capacity: usize) -> Self {
        let mut cfg = CalendarConfig::new(0, capacity);
        let mut i = 0;
        while i < levels.len() && i < MAX_CALENDAR_LEVELS {
            cfg.levels[i] = levels[i];
            i += 1;
        }
        cfg.depth = levels.len();
        cfg
    }

    /// Sets the ranks per day (the period of a physical calendar).
    #[must_use]
    pub const fn granularity(mut self, granularity: u64) -> Self {
        self.granularity = granularity;
        self
    }

    /// Sets the initial head (and clock) to the day of rank `start`.
    #[must_use]
    pub const fn start(mut self, start: u64) -> Self {
        self.start = start;
        self
    }

    /// Sets the beyond-reach behaviour.
    #[must_use]
    pub const fn beyond_reach(mut self, behaviour: OutOfRange) -> Self {
        self.beyond_reach = behaviour;
        self
    }

    /// Sets how the head advances.
    #[must_use]
    pub const fn rotation(mut self, rotation: Rotation) -> Self {
        self.rotation = rotation;
        self
    }
}

/// The calendar a [`QueueConfig`] describes (what [`QueueKind::Calendar`] builds):
/// a flat logical calendar of `buckets` days of `granularity` ranks, its head at the
/// day of `base`, with the same capacity and out-of-range behaviour.
///
/// [`QueueKind::Calendar`]: crate::QueueKind::Calendar
impl From<QueueConfig> for CalendarConfig {
    fn from(cfg: QueueConfig) -> Self {
        CalendarConfig::new(cfg.buckets, cfg.capacity)
            .granularity(cfg.granularity)
            .start(cfg.base)
            .beyond_reach(cfg.out_of_range)
    }
}

/// Counters of a calendar's rotations, out-of-range ranks and level moves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CalendarStats {
    /// Days the head advanced (each is one rotation of the paper's calendar).
    pub rotations: u64,
    /// Head moves of more than one day at once (find-first-set jumps over empty
    /// days, or a physical calendar catching up with its clock).
    pub jumps: u64,
    /// Days passed within those jumps without becoming the head.
    pub skipped: u64,
    /// Ranks or offsets before the head, filed in the head day.
    pub past: u64,
    /// Days beyond the reach filed in its last day ([`OutOfRange::Clamp`]).
    pub clamped: u64,
    /// Days beyond the reach refused ([`OutOfRange::Reject`]).
    pub rejected: u64,
    /// Work-conserving physical calendars: elements served before their day began.
    pub early: u64,
    /// Elements carried into the next day by [`Calendar::rotate`].
    pub carried: u64,
    /// `moves[j]`: elements moved from level `j` down to level `j - 1` (the cost of
    /// the hierarchy; `moves[0]` is always zero).
    pub moves: [u64; MAX_CALENDAR_LEVELS],
}

impl CalendarStats {
    /// Level moves in total.
    #[must_use]
    pub fn total_moves(&self) -> u64 {
        self.moves.iter().sum()
    }
}

/// One coarse level (`j >= 1`) of a hierarchical calendar.
#[derive(Clone, Debug)]
struct Level {
    /// Store list of the level's bucket 0.
    first: usize,
    /// Buckets.
    n: usize,
    /// Days per bucket, `P_j`.
    span: Granularity,
    /// The head's block `head / P_j`: the current block, whose elements have all
    /// been moved down; its bucket holds block `cur + n`.
    cur: u64,
    /// `cur mod n`.
    cur_slot: usize,
    /// Bit `s` set iff bucket `s` is non-empty.
    occupied: HierBitmap,
    /// Elements at this level.
    len: u32,
}

impl Level {
    /// The bucket of the block `ahead` blocks after the current one (`ahead <= n`;
    /// `ahead == n` is the current block's bucket, reused).
    #[inline]
    fn slot_ahead(&self, ahead: u64) -> usize {
        debug_assert!(ahead <= self.n as u64, "block {ahead} ahead of {}", self.n);
        let ahead = if ahead == self.n as u64 {
            0
        } else {
            ahead as usize
        };
        wrap_add(self.cur_slot, ahead, self.n)
    }

    /// The earliest non-empty block of the level.
    #[inline]
    fn first_block(&self) -> Option<u64> {
        let from = wrap_add(self.cur_slot, 1 % self.n, self.n);
        let slot = self.occupied.next_set_wrapping(from)?;
        Some(self.cur + 1 + circular_distance(from, slot, self.n) as u64)
    }
}

/// `(slot + ahead) mod n` for `slot, ahead < n`, without a division.
#[inline]
fn wrap_add(slot: usize, ahead: usize, n: usize) -> usize {
    debug_assert!(slot < n && ahead < n, "wrap_add({slot}, {ahead}) in {n}");
    let s = slot + ahead;
    if s >= n {
        s - n
    } else {
        s
    }
}

/// The position `steps` after `slot` on a ring of `n` (`slot < n`); divides only
/// when the step goes round the ring, which a rotation to the next non-empty day
/// never does.
#[inline]
fn ring_step(slot: usize, steps: u64, n: usize) -> usize {
    let steps = if steps < n as u64 {
        steps as usize
    } else {
        (steps % n as u64) as usize
    };
    wrap_add(slot, steps, n)
}

/// How many positions `to` lies after `from` going up a ring of `n` (`from, to <
/// n`).
#[inline]
fn circular_distance(from: usize, to: usize, n: usize) -> usize {
    if to >= from {
        to - from
    } else {
        n - from + to
    }
}

/// The reach of levels of `sizes` buckets (their product) and the store lists
/// they take (their sum), for levels of 1 to [`MAX_HIER_BUCKETS`] buckets whose
/// lists leave room for the carry list and the store's reserved `NIL`.
fn level_extent(sizes: &[usize]) -> Result<(u64, usize), ConfigError> {
    let mut reach = 1u64;
    let mut lists = 0usize;
    for &n in sizes {
        if n == 0 {
            return Err(ConfigError::ZeroBuckets);
        }
        ConfigError::at_most_buckets(n, MAX_HIER_BUCKETS)?;
        reach = reach
            .checked_mul(n as u64)
            .ok_or(ConfigError::HorizonTooLarge)?;
        lists += n;
    }
    // One more list for the carry, and the store's `NIL` is reserved.
    ConfigError::at_most_buckets(lists, NIL as usize - 2)?;
    Ok((reach, lists))
}

/// The empty coarse levels of a calendar of `sizes` buckets per level (checked
/// by [`level_extent`]) whose head is day `head`: their lists follow level 0's
/// days in the store, and each level's current block is the head's.
fn coarse_levels(sizes: &[usize], head: u64) -> Result<Vec<Level>, ConfigError> {
    let mut upper = Vec::with_capacity(sizes.len() - 1);
    let mut span = sizes[0] as u64;
    let mut first = sizes[0];
    for &n in &sizes[1..] {
        let span_gran = Granularity::new(span)?;
        let cur = span_gran.buckets_between(0, head);
        upper.push(Level {
            first,
            n,
            span: span_gran,
            cur,
            cur_slot: (cur % n as u64) as usize,
            occupied: HierBitmap::new(n),
            len: 0,
        });
        first += n;
        // Cannot overflow: bounded by the reach `level_extent` checked.
        span *= n as u64;
    }
    Ok(upper)
}

/// A programmable calendar queue of items of type `T` (Sharma et al., NSDI'20,
/// sections 3 and 4): a ring of FIFO days whose head is the current day, flat or
/// hierarchical (levels of `n_0 x n_1 x ...` days, section 3.5), logical or
/// physical.
///
/// - [`enqueue`](Self::enqueue)`(n)` files an element `n` days after the head;
///   [`PriorityQueue::insert`] files a rank in its day, `rank / granularity`. Days
///   before the head go to the head day; days at or beyond [`reach`](Self::reach)
///   are clamped to the last day or refused. All counted in [`CalendarStats`].
/// - [`dequeue`](Self::dequeue) serves days in order, FIFO within a day. A logical
///   calendar rotates when it finds the head day empty, straight to the next
///   non-empty day; a physical one follows the clock given to
///   [`advance`](Self::advance) (one day per `granularity` ns) without ever passing
///   a day that still holds elements, and when its head day is empty serves the
///   next day early (work-conserving) or waits until it begins
///   ([`next_ready`](Self::next_ready)).
/// - [`rotate`](Self::rotate) advances one day by hand, carrying what is left of
///   the head day to the front of the next.
/// - A hierarchical calendar files far elements at a coarse level and moves them
///   down one level at a time as their blocks become current: at most once per
///   level, counted in [`CalendarStats::moves`].
///
/// ```
/// use eiffel_queue::{Calendar, CalendarConfig, Rotation};
///
/// // A logical calendar of 8 days (fair-queueing rounds).
/// let mut cq = Calendar::new(CalendarConfig::new(8, 64)).unwrap();
/// cq.enqueue(2, "round 2").unwrap();
/// cq.enqueue(0, "round 0").unwrap();
/// assert_eq!(cq.dequeue(), Some((0, "round 0")));
/// // The head is empty: the next dequeue rotates straight to day 2.
/// assert_eq!(cq.dequeue(), Some((2, "round 2")));
/// assert_eq!(cq.head_day(), 2);
/// assert_eq!(cq.calendar_stats().rotations, 2);
///
/// // A non-work-conserving physical calendar of 16 days of 1 us.
/// let cfg = CalendarConfig::new(16, 64).granularity(1_000).rotation(Rotation::Physical {
///     work_conserving: false,
/// });
/// let mut shaper = Calendar::new(cfg).unwrap();
/// shaper.enqueue(3, 'x').unwrap();
/// assert_eq!(shaper.dequeue_at(2_500), None);
/// assert_eq!(shaper.next_ready(2_500), Some(3_000)); // sleep until then
/// assert_eq!(shaper.dequeue_at(3_000), Some((3_000, 'x')));
///
/// // A hierarchical calendar of 16 x 8 x 8 days: a reach of 1024 days.
/// let mut hcq = Calendar::new(CalendarConfig::hierarchical(&[16, 8, 8], 64)).unwrap();
/// assert_eq!(hcq.reach(), 1024);
/// hcq.enqueue(1023, "far").unwrap();
/// assert_eq!(hcq.dequeue(), Some((1023, "far")));
/// assert_eq!(hcq.calendar_stats().moves[1..3], [1, 1]); // one move per level
/// ```
#[derive(Clone, Debug)]
pub struct Calendar<T> {
    // Every enqueue and dequeue touches `store`, `days`, `n0`, `head`, `head_slot`
    // and `gran`, grouped first; the rest serves rotations and coarse levels.
    /// Lists `0..n0` are level 0's days, then each coarse level's buckets, then the
    /// carry list used by [`rotate`](Self::rotate).
    store: BucketStore<T>,
    /// Level 0 occupancy: bit `d mod n0` set iff day `d` holds elements.
    days: HierBitmap,
    n0: usize,
    /// The current day.
    head: u64,
    /// `head mod n0`.
    head_slot: usize,
    gran: Granularity,
    /// The day of rank `u64::MAX`: the last day there is.
    max_day: u64,
    /// Days ahead of the head that can be filed: the product of the level sizes.
    reach: u64,
    beyond_reach: OutOfRange,
    rotation: Rotation,
    /// Latest time passed to [`advance`](Self::advance).
    clock: u64,
    /// Coarse levels 1.. (empty for a flat calendar).
    upper: Vec<Level>,
    /// The filed day of each element on a coarse level, by slot (empty for a flat
    /// calendar, where a day follows from its bucket).
    day_of: Vec<u64>,
    sizes: [usize; MAX_CALENDAR_LEVELS],
    depth: usize,
    carry: usize,
    stats: CalendarStats,
}

impl<T> Calendar<T> {
    /// A calendar for `cfg`.
    ///
    /// # Errors
    /// No level or a zero-sized one, too many levels, a level beyond
    /// [`MAX_HIER_BUCKETS`](crate::MAX_HIER_BUCKETS) buckets, a zero granularity, a
    /// reach beyond `u64`, or a capacity beyond the 32-bit slot index.
    pub fn new(cfg: CalendarConfig) -> Result<Self, ConfigError> {
        if cfg.depth == 0 {
            return Err(ConfigError::ZeroBuckets);
        }
        if cfg.depth > MAX_CALENDAR_LEVELS {
            return Err(ConfigError::TooManyLevels {
                requested: cfg.depth,
                max: MAX_CALENDAR_LEVELS,
            });
        }
        check_capacity(cfg.capacity)?;
        let gran = Granularity::new(cfg.granularity)?;
        let sizes = &cfg.levels[..cfg.depth];
        let (reach, lists) = level_extent(sizes)?;
        let n0 = sizes[0];
        let max_day = gran.buckets_between(0, u64::MAX);
        let head = gran.buckets_between(0, cfg.start);
        let upper = coarse_levels(sizes, head)?;
        let day_of = if cfg.depth > 1 {
            vec![0; cfg.capacity]
        } else {
            Vec::new()
        };
        Ok(Calendar {
            store: BucketStore::new(cfg.capacity, lists + 1),
            days: HierBitmap::new(n0),
            n0,
            head,
            head_slot: (head % n0 as u64) as usize,
            gran,
            max_day,
            reach,
            beyond_reach: cfg.beyond_reach,
            rotation: cfg.rotation,
            clock: cfg.start,
            upper,
            day_of,
            sizes: cfg.levels,
            depth: cfg.depth,
            carry: lists,
            stats: CalendarStats::default(),
        })
    }

    // ----- Inspection -------------------------------------------------------------

    /// The current day (absolute): `enqueue(n)` files into day `head_day() + n`.
    #[must_use]
    #[inline]
    pub fn head_day(&self) -> u64 {
        self.head
    }

    /// Days ahead of the head that [`enqueue`](Self::enqueue) accepts: `n` is filed
    /// in its own day iff `n < reach()` (and the day exists: `head + n <= u64::MAX /
    /// g`). The product of the level sizes.
    #[must_use]
    pub fn reach(&self) -> u64 {
        self.reach
    }

    /// The level sizes, finest first (one entry for a flat calendar).
    #[must_use]
    pub fn level_sizes(&self) -> &[usize] {
        &self.sizes[..self.depth]
    }

    /// Ranks per day (a physical calendar's period in nanoseconds).
    #[must_use]
    pub fn granularity(&self) -> u64 {
        self.gran.ranks()
    }

    /// How the head advances.
    #[must_use]
    pub fn rotation(&self) -> Rotation {
        self.rotation
    }

    /// The latest time passed to [`advance`](Self::advance) (initially the
    /// configured start).
    #[must_use]
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// The clock's day, `clock() / granularity()`: where a physical calendar's head
    /// is, unless it lags behind a day not yet drained.
    #[must_use]
    #[inline]
    pub fn clock_day(&self) -> u64 {
        self.gran.buckets_between(0, self.clock)
    }

    /// Rotation, range and level-move counters.
    #[must_use]
    pub fn calendar_stats(&self) -> CalendarStats {
        self.stats
    }

    /// Elements queued.
    #[must_use]
    #[inline]
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether nothing is queued.
    #[must_use]
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.store.len() == 0
    }

    /// Elements currently at `level` (0 for a flat calendar's days).
    #[must_use]
    pub fn level_len(&self, level: usize) -> usize {
        if level == 0 {
            let coarse: usize = self.upper.iter().map(|l| l.len as usize).sum();
            self.store.len() - coarse
        } else {
            self.upper.get(level - 1).map_or(0, |l| l.len as usize)
        }
    }

    /// Elements filed in the day `ahead` days after the head (0 beyond the reach).
    /// In a hierarchical calendar a day's elements may be split between level 0 and
    /// the coarse buckets of its blocks (those filed before the day came within
    /// level 0's reach); all are counted. Cost: the elements of that day at level 0
    /// plus those of the coarse buckets holding it.
    #[must_use]
    pub fn day_len(&self, ahead: u64) -> usize {
        if ahead >= self.reach || ahead > self.max_day - self.head {
            return 0;
        }
        let day = self.head + ahead;
        let mut count = 0;
        if ahead < self.n0 as u64 {
            let slot = wrap_add(self.head_slot, ahead as usize, self.n0);
            count += self.store.iter_list(slot).count();
        }
        for lvl in &self.upper {
            let blocks = lvl.span.buckets_between(0, day) - lvl.cur;
            if (1..=lvl.n as u64).contains(&blocks) {
                let list = lvl.first + lvl.slot_ahead(blocks);
                count += self
                    .store
                    .iter_list(list)
                    .filter(|&i| self.day_of[i as usize] == day)
                    .count();
            }
        }
        count
    }

    /// The level that holds the element named by `handle` (0 is the days). Levels
    /// only decrease as the head advances, one per move.
    #[must_use]
    pub fn level_of(&self, handle: Handle) -> Option<usize> {
        let idx = self.store.resolve(handle)?;
        Some(self.level_of_list(self.store.list_of(idx)))
    }

    /// The day the element named by `handle` is filed in: its rank's day, the head
    /// day at filing for a rank in the past, the last day of the reach for one
    /// beyond it, one day later for each [`rotate`](Self::rotate) that carried it.
    #[must_use]
    pub fn scheduled_day(&self, handle: Handle) -> Option<u64> {
        let idx = self.store.resolve(handle)?;
        Some(self.day_of_node(idx))
    }

    /// The earliest non-empty day, served next (for a physical calendar, once it has
    /// begun or early).
    #[must_use]
    pub fn first_day(&self) -> Option<u64> {
        self.find_min().map(|(_, day)| day)
    }

    /// The first rank of the earliest non-empty day: for a physical calendar, the
    /// time that day begins.
    #[must_use]
    pub fn next_due(&self) -> Option<u64> {
        self.first_day().map(|d| d * self.gran.ranks())
    }

    /// When a dequeue can next return an element, given the time `now`: `None` when
    /// empty; `now` for logical and work-conserving calendars; for a
    /// non-work-conserving calendar, the time its earliest non-empty day begins, or
    /// `now` if it has.
    #[must_use]
    pub fn next_ready(&self, now: u64) -> Option<u64> {
        match self.rotation {
            Rotation::Physical {
                work_conserving: false,
            } => self.next_due().map(|t| t.max(now)),
            _ => (!self.is_empty()).then_some(now),
        }
    }

    /// Physical calendars: the time the clock enters the day after `now`'s (when
    /// [`advance`](Self::advance) next rotates); `None` for a logical calendar, or
    /// past the end of time.
    #[must_use]
    pub fn next_rotation(&self, now: u64) -> Option<u64> {
        match self.rotation {
            Rotation::Logical => None,
            Rotation::Physical { .. } => self
                .gran
                .buckets_between(0, now)
                .checked_add(1)?
                .checked_mul(self.gran.ranks()),
        }
    }

    // ----- The calendar interface (section 3.2) -----------------------------------

    /// Files `item` in the day `ahead` days after the head (the paper's
    /// `CQ.enqueue(n)`). Its rank is that day's first rank. Beyond the reach it is
    /// clamped to the last day or refused, as configured.
    ///
    /// # Errors
    /// [`InsertError::Full`] when every slot is used, [`InsertError::OutOfRange`]
    /// beyond the reach under [`OutOfRange::Reject`]; both hand the item back.
    #[inline]
    pub fn enqueue(&mut self, ahead: u64, item: T) -> Result<Handle, InsertError<T>> {
        if self.store.len() == self.store.capacity() {
            return Err(InsertError::Full(item));
        }
        let Some(day) = self.admit_ahead(ahead, true) else {
            return Err(InsertError::OutOfRange(item));
        };
        // `day <= max_day`, so the product fits.
        self.file(day, day * self.gran.ranks(), item)
    }

    /// Serves the element due next, with its rank (the paper's `CQ.dequeue()`, with
    /// the rotation the calendar's [`Rotation`] calls for): the head day's oldest
    /// element; if the head day is empty, a logical calendar first rotates to the
    /// next non-empty day, a work-conserving physical one serves that day early, a
    /// non-work-conserving one returns `None` until the day begins. A physical
    /// calendar uses the clock of the latest [`advance`](Self::advance).
    #[inline]
    pub fn dequeue(&mut self) -> Option<(u64, T)> {
        match self.rotation {
            Rotation::Logical => {
                if self.store.list_is_empty(self.head_slot) {
                    if self.store.len() == 0 {
                        return None;
                    }
                    self.settle(self.max_day);
                }
                self.pop_head()
            }
            Rotation::Physical { work_conserving } => {
                let clock_day = self.clock_day();
                if self.head < clock_day {
                    self.settle(clock_day);
                }
                if self.head <= clock_day && !self.store.list_is_empty(self.head_slot) {
                    return self.pop_head();
                }
                if !work_conserving {
                    return None;
                }
                let (idx, _) = self.find_min()?;
                self.stats.early += 1;
                Some(self.take(idx))
            }
        }
    }

    /// [`advance`](Self::advance)`(now)`, then [`dequeue`](Self::dequeue).
    #[inline]
    pub fn dequeue_at(&mut self, now: u64) -> Option<(u64, T)> {
        self.advance(now);
        self.dequeue()
    }

    /// Moves the clock to `now` (earlier times are ignored). A physical calendar's
    /// head follows it to `min(now / g, first non-empty day)` in one step, counting
    /// every day passed as a rotation; a logical calendar only records the time.
    #[inline]
    pub fn advance(&mut self, now: u64) {
        if now > self.clock {
            self.clock = now;
        }
        if let Rotation::Physical { .. } = self.rotation {
            let clock_day = self.clock_day();
            if self.head < clock_day {
                self.settle(clock_day);
            }
        }
    }

    /// Rotates by one day now (the paper's `CQ.rotate()`), whatever the rotation
    /// mode: elements still in the head day move to the front of the next day,
    /// ahead of its own (counted in [`CalendarStats::carried`]). A physical
    /// calendar's head may so run ahead of its clock; a non-work-conserving one then
    /// waits for the clock to reach the head day. Returns `false`, doing nothing, at
    /// the last day there is (`u64::MAX / g`).
    pub fn rotate(&mut self) -> bool {
        if self.head == self.max_day {
            return false;
        }
        // Park the head day's elements on the carry list: with a one-day level 0 the
        // next day's elements, moved down below, land in the same bucket.
        let mut carried = 0u64;
        while let Some(idx) = self.store.front(self.head_slot) {
            self.store.unlink(idx);
            self.store.link_back(self.carry, idx);
            carried += 1;
        }
        if carried > 0 {
            self.days.clear(self.head_slot);
        }
        self.move_head(self.head + 1);
        while let Some(idx) = self.store.back(self.carry) {
            self.store.unlink(idx);
            if self.store.link_front(self.head_slot, idx) {
                self.days.set(self.head_slot);
            }
        }
        self.stats.carried += carried;
        self.count_rotation(1);
        true
    }

    /// Performs the rotation [`dequeue`](Self::dequeue) performs before serving,
    /// without serving: a logical calendar whose head day is empty moves its head
    /// to the earliest non-empty day; a physical one follows its clock as
    /// [`advance`](Self::advance) does. Returns the days the head advanced (0 if
    /// the head day holds elements, or nothing is queued).
    ///
    /// A policy that peeks at the calendar instead of dequeueing (one whose queue
    /// entries stay queued across services, as a scheduler's per-flow entries do)
    /// calls this after each change so that the head day is always the day being
    /// served, and the round number it reads from [`head_day`](Self::head_day) is
    /// current.
    pub fn rotate_to_next(&mut self) -> u64 {
        let from = self.head;
        match self.rotation {
            Rotation::Logical => {
                if self.store.list_is_empty(self.head_slot) && self.store.len() > 0 {
                    self.settle(self.max_day);
                }
            }
            Rotation::Physical { .. } => {
                let clock_day = self.clock_day();
                if self.head < clock_day {
                    self.settle(clock_day);
                }
            }
        }
        self.head - from
    }

    // ----- Placement --------------------------------------------------------------

    /// The day an element of day `day` is filed in, or `None` if refused; counts
    /// the out-of-range cases when `count` is set.
    #[inline]
    fn admit_day(&mut self, day: u64, count: bool) -> Option<u64> {
        if day < self.head {
            self.stats.past += u64::from(count);
            return Some(self.head);
        }
        self.admit_ahead(day - self.head, count)
    }

    /// The day an element `ahead` days after the head is filed in, or `None`.
    #[inline]
    fn admit_ahead(&mut self, ahead: u64, count: bool) -> Option<u64> {
        let room = self.max_day - self.head;
        if ahead < self.reach && ahead <= room {
            return Some(self.head + ahead);
        }
        let inc = u64::from(count);
        if self.beyond_reach == OutOfRange::Reject {
            self.stats.rejected += inc;
            return None;
        }
        self.stats.clamped += inc;
        Some(self.head + (self.reach - 1).min(room))
    }

    /// The list that holds day `day` (`head <= day < head + reach`).
    #[inline]
    fn list_for(&self, day: u64) -> usize {
        let ahead = day - self.head;
        if ahead < self.n0 as u64 {
            return wrap_add(self.head_slot, ahead as usize, self.n0);
        }
        self.coarse_list_for(day)
    }

    /// The coarse bucket that holds day `day`: the lowest level whose window holds
    /// its block (see the reach argument in the module documentation).
    fn coarse_list_for(&self, day: u64) -> usize {
        for lvl in &self.upper {
            let ahead = lvl.span.buckets_between(0, day) - lvl.cur;
            if ahead <= lvl.n as u64 {
                return lvl.first + lvl.slot_ahead(ahead);
            }
        }
        unreachable!(
            "day {day} lies beyond the reach {} of head {}",
            self.reach, self.head
        )
    }

    /// Links a new element of day `day` at its bucket's tail (capacity checked by
    /// the caller).
    #[inline]
    fn file(&mut self, day: u64, rank: u64, item: T) -> Result<Handle, InsertError<T>> {
        let list = self.list_for(day);
        let (handle, was_empty) = self
            .store
            .push_back(list, rank, item)
            .map_err(InsertError::Full)?;
        self.after_link(list, handle.index(), day, was_empty);
        Ok(handle)
    }

    /// Index in `upper` of the coarse level owning `list`.
    #[inline]
    fn upper_of(&self, list: usize) -> usize {
        self.upper
            .iter()
            .position(|l| list < l.first + l.n)
            .expect("a coarse list belongs to a level")
    }

    #[inline]
    fn level_of_list(&self, list: usize) -> usize {
        if list < self.n0 {
            0
        } else {
            self.upper_of(list) + 1
        }
    }

    /// Bookkeeping after node `idx` of day `day` joined `list`.
    #[inline]
    fn after_link(&mut self, list: usize, idx: u32, day: u64, was_empty: bool) {
        if list < self.n0 {
            if was_empty {
                self.days.set(list);
            }
            return;
        }
        let u = self.upper_of(list);
        let lvl = &mut self.upper[u];
        lvl.len += 1;
        if was_empty {
            lvl.occupied.set(list - lvl.first);
        }
        self.day_of[idx as usize] = day;
    }

    /// Bookkeeping after a node left `list`.
    #[inline]
    fn after_unlink(&mut self, list: usize, now_empty: bool) {
        if list < self.n0 {
            if now_empty {
                self.days.clear(list);
            }
            return;
        }
        let u = self.upper_of(list);
        let lvl = &mut self.upper[u];
        lvl.len -= 1;
        if now_empty {
            lvl.occupied.clear(list - lvl.first);
        }
    }

    /// The day live node `idx` is filed in.
    #[inline]
    fn day_of_node(&self, idx: u32) -> u64 {
        let list = self.store.list_of(idx);
        if list < self.n0 {
            self.head + circular_distance(self.head_slot, list, self.n0) as u64
        } else {
            self.day_of[idx as usize]
        }
    }

    // ----- Service ----------------------------------------------------------------

    #[inline]
    fn pop_head(&mut self) -> Option<(u64, T)> {
        let (rank, item, next) = self.store.pop_front(self.head_slot)?;
        if next == NIL {
            self.days.clear(self.head_slot);
        }
        Some((rank, item))
    }

    #[inline]
    fn take(&mut self, idx: u32) -> (u64, T) {
        let (rank, item, list, now_empty) = self.store.remove(idx);
        self.after_unlink(list, now_empty);
        (rank, item)
    }

    /// The earliest non-empty day of level 0.
    #[inline]
    fn first_level0_day(&self) -> Option<u64> {
        let slot = self.days.next_set_wrapping(self.head_slot)?;
        Some(self.head + circular_distance(self.head_slot, slot, self.n0) as u64)
    }

    /// The node served next, ignoring the clock, and its day: the oldest element of
    /// the earliest non-empty day. For one day, coarser levels hold older elements
    /// and each bucket keeps them in age order, so it is the first element of that
    /// day in the coarsest bucket holding the day. Only the first non-empty bucket
    /// of a coarse level can hold days before the later ones' blocks, so at most one
    /// bucket per level is scanned.
    fn find_min(&self) -> Option<(u32, u64)> {
        if let Some(idx) = self.store.front(self.head_slot) {
            return Some((idx, self.head));
        }
        if self.store.len() == 0 {
            return None;
        }
        let mut best: Option<(u32, u64)> = None;
        for lvl in self.upper.iter().rev() {
            if lvl.len == 0 {
                continue;
            }
            let block = lvl.first_block().expect("a non-empty level has a block");
            if best.is_some_and(|(_, d)| block * lvl.span.ranks() >= d) {
                continue;
            }
            for idx in self
                .store
                .iter_list(lvl.first + lvl.slot_ahead(block - lvl.cur))
            {
                let day = self.day_of[idx as usize];
                if best.is_none_or(|(_, d)| day < d) {
                    best = Some((idx, day));
                }
            }
        }
        if let Some(day) = self.first_level0_day() {
            if best.is_none_or(|(_, d)| day < d) {
                let slot = wrap_add(self.head_slot, (day - self.head) as usize, self.n0);
                let idx = self
                    .store
                    .front(slot)
                    .expect("bitmap names a non-empty day");
                best = Some((idx, day));
            }
        }
        best
    }

    // ----- Rotation ---------------------------------------------------------------

    /// Advances the head towards `target`, stopping at the first non-empty day. Each
    /// step goes to the earliest of `target`, the first non-empty day of level 0 and
    /// the start of each coarse level's first non-empty block; landing on a block
    /// start moves that block down, and the loop goes on.
    fn settle(&mut self, target: u64) {
        let from = self.head;
        while self.head < target && self.store.list_is_empty(self.head_slot) {
            let mut next = target;
            if let Some(day) = self.first_level0_day() {
                next = next.min(day);
            }
            for lvl in &self.upper {
                if lvl.len > 0 {
                    let block = lvl.first_block().expect("a non-empty level has a block");
                    // A block holding an element starts at or before its day.
                    next = next.min(block * lvl.span.ranks());
                }
            }
            self.move_head(next);
        }
        self.count_rotation(self.head - from);
    }

    #[inline]
    fn count_rotation(&mut self, days: u64) {
        self.stats.rotations += days;
        if days > 1 {
            self.stats.jumps += 1;
            self.stats.skipped += days - 1;
        }
    }

    /// Makes `to` the head (`to > head`; no non-empty block of any level starts
    /// before `to`), updates every level's current block, and moves the blocks
    /// that became current down one level each, from the top level down.
    fn move_head(&mut self, to: u64) {
        debug_assert!(to > self.head, "head {} moving back to {to}", self.head);
        self.head_slot = ring_step(self.head_slot, to - self.head, self.n0);
        self.head = to;
        let mut changed = 0;
        for lvl in &mut self.upper {
            let block = lvl.span.buckets_between(0, to);
            if block == lvl.cur {
                // The levels above change block only when this one does.
                break;
            }
            lvl.cur_slot = ring_step(lvl.cur_slot, block - lvl.cur, lvl.n);
            lvl.cur = block;
            changed += 1;
        }
        for u in (0..changed).rev() {
            self.expand(u);
        }
    }

    /// Moves every element of the current bucket of coarse level `u + 1` one level
    /// down, prepending them in order to their buckets there (they are older than
    /// anything of their day below).
    fn expand(&mut self, u: usize) {
        let list = self.upper[u].first + self.upper[u].cur_slot;
        let mut moved = 0u32;
        while let Some(idx) = self.store.back(list) {
            self.store.unlink(idx);
            let day = self.day_of[idx as usize];
            debug_assert!(
                day >= self.head,
                "moving day {day} below head {}",
                self.head
            );
            if u == 0 {
                let ahead = day - self.head;
                debug_assert!(ahead < self.n0 as u64, "day {day} beyond level 0");
                let slot = wrap_add(self.head_slot, ahead as usize, self.n0);
                if self.store.link_front(slot, idx) {
                    self.days.set(slot);
                }
            } else {
                let lower = &self.upper[u - 1];
                let ahead = lower.span.buckets_between(0, day) - lower.cur;
                debug_assert!(
                    ahead < lower.n as u64,
                    "day {day} beyond level {u} (block {ahead} ahead)"
                );
                let slot = wrap_add(lower.cur_slot, ahead as usize, lower.n);
                if self.store.link_front(lower.first + slot, idx) {
                    self.upper[u - 1].occupied.set(slot);
                }
            }
            moved += 1;
        }
        if moved > 0 {
            let slot = self.upper[u].cur_slot;
            self.upper[u].occupied.clear(slot);
            self.upper[u].len -= moved;
            if u > 0 {
                self.upper[u - 1].len += moved;
            }
            self.stats.moves[u + 1] += u64::from(moved);
        }
    }

    /// Checks the invariants in the module documentation.
    ///
    /// # Panics
    /// On a violation, naming the level, bucket or element.
    pub fn check_invariants(&self) {
        self.store.check_invariants();
        self.days.check_invariants();
        assert!(
            self.head <= self.max_day,
            "head {} past the last day",
            self.head
        );
        assert_eq!(
            self.head_slot as u64,
            self.head % self.n0 as u64,
            "head slot of day {}",
            self.head
        );
        assert!(
            self.store.list_is_empty(self.carry),
            "carry list left non-empty"
        );
        for slot in 0..self.n0 {
            assert_eq!(
                self.days.contains(slot),
                !self.store.list_is_empty(slot),
                "level 0 bitmap and day bucket {slot} disagree"
            );
        }
        for (u, lvl) in self.upper.iter().enumerate() {
            lvl.occupied.check_invariants();
            assert_eq!(
                lvl.cur,
                lvl.span.buckets_between(0, self.head),
                "level {} current block",
                u + 1
            );
            assert_eq!(
                lvl.cur_slot as u64,
                lvl.cur % lvl.n as u64,
                "level {} slot",
                u + 1
            );
            let mut count = 0usize;
            for slot in 0..lvl.n {
                let list = lvl.first + slot;
                assert_eq!(
                    lvl.occupied.contains(slot),
                    !self.store.list_is_empty(list),
                    "level {} bitmap and bucket {slot} disagree",
                    u + 1
                );
                for idx in self.store.iter_list(list) {
                    count += 1;
                    let day = self.day_of[idx as usize];
                    assert!(
                        day >= self.head && day - self.head < self.reach,
                        "element {idx} of day {day} outside the reach of head {}",
                        self.head
                    );
                    let ahead = lvl.span.buckets_between(0, day) - lvl.cur;
                    assert!(
                        (1..=lvl.n as u64).contains(&ahead),
                        "element {idx} of day {day} at level {} is {ahead} blocks ahead",
                        u + 1
                    );
                    assert_eq!(
                        lvl.slot_ahead(ahead),
                        slot,
                        "element {idx} of day {day} in the wrong bucket of level {}",
                        u + 1
                    );
                }
            }
            assert_eq!(count, lvl.len as usize, "level {} count", u + 1);
        }
    }
}

/// The calendar as a priority queue: a rank's day is `rank / granularity`, the
/// head is the current day, days leave in order and FIFO within a day. A rank of a
/// day before the head is filed in the head day (counted as
/// [`QueueStats::underflow`]); beyond the reach it is clamped to the last day
/// ([`QueueStats::clamped_high`]) or refused ([`QueueStats::rejected`]).
/// [`pop_min`](PriorityQueue::pop_min) is [`Calendar::dequeue`] (with its
/// rotation), [`peek`](PriorityQueue::peek) the element it would return, and
/// [`QueueStats::rotations`] counts the days the head advanced. Re-ranking within
/// the same day keeps the element's place; to another day files it at that day's
/// tail.
impl<T> PriorityQueue<T> for Calendar<T> {
    #[inline]
    fn insert(&mut self, rank: u64, item: T) -> Result<Handle, InsertError<T>> {
        if self.store.len() == self.store.capacity() {
            return Err(InsertError::Full(item));
        }
        let Some(day) = self.admit_day(self.gran.buckets_between(0, rank), true) else {
            return Err(InsertError::OutOfRange(item));
        };
        self.file(day, rank, item)
    }

    #[inline]
    fn peek(&self) -> Option<(Handle, u64, &T)> {
        let (idx, day) = self.find_min()?;
        if self.rotation
            == (Rotation::Physical {
                work_conserving: false,
            })
            && day > self.clock_day()
        {
            return None;
        }
        Some((
            self.store.handle(idx),
            self.store.rank(idx),
            self.store.item(idx),
        ))
    }

    #[inline]
    fn pop_min(&mut self) -> Option<(u64, T)> {
        self.dequeue()
    }

    #[inline]
    fn remove(&mut self, handle: Handle) -> Option<(u64, T)> {
        let idx = self.store.resolve(handle)?;
        Some(self.take(idx))
    }

    fn set_rank(&mut self, handle: Handle, rank: u64) -> Result<(), RankError> {
        let idx = self.store.resolve(handle).ok_or(RankError::StaleHandle)?;
        let day = self
            .admit_day(self.gran.buckets_between(0, rank), true)
            .ok_or(RankError::OutOfRange)?;
        self.store.set_rank(idx, rank);
        if self.day_of_node(idx) == day {
            return Ok(());
        }
        let (old, now_empty) = self.store.unlink(idx);
        self.after_unlink(old, now_empty);
        let list = self.list_for(day);
        let was_empty = self.store.link_back(list, idx);
        self.after_link(list, idx, day, was_empty);
        Ok(())
    }

    #[inline]
    fn get(&self, handle: Handle) -> Option<(u64, &T)> {
        self.store.get(handle)
    }

    #[inline]
    fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        self.store.get_mut(handle)
    }

    #[inline]
    fn len(&self) -> usize {
        self.store.len()
    }

    #[inline]
    fn capacity(&self) -> usize {
        self.store.capacity()
    }

    fn stats(&self) -> QueueStats {
        QueueStats {
            clamped_high: self.stats.clamped,
            underflow: self.stats.past,
            rejected: self.stats.rejected,
            rotations: self.stats.rotations,
            ..QueueStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_helpers_wrap_without_division() {
        assert_eq!(wrap_add(0, 0, 1), 0);
        assert_eq!(wrap_add(3, 4, 8), 7);
        assert_eq!(wrap_add(5, 4, 8), 1);
        assert_eq!(wrap_add(7, 7, 8), 6);
        assert_eq!(circular_distance(2, 5, 8), 3);
        assert_eq!(circular_distance(5, 2, 8), 5);
        assert_eq!(circular_distance(4, 4, 8), 0);
        assert_eq!(ring_step(6, 3, 8), 1);
        assert_eq!(ring_step(6, 19, 8), 1);
        assert_eq!(ring_step(0, u64::MAX, 1), 0);
    }

    #[test]
    fn logical_rotation_jumps_to_the_next_non_empty_day() {
        let mut cq = Calendar::new(CalendarConfig::new(16, 32)).unwrap();
        cq.enqueue(9, 'b').unwrap();
        cq.enqueue(3, 'a').unwrap();
        assert_eq!(cq.dequeue(), Some((3, 'a')));
        let s = cq.calendar_stats();
        assert_eq!((s.rotations, s.jumps, s.skipped), (3, 1, 2));
        // Filed for the current day after it emptied: still served in it.
        cq.enqueue(0, 'c').unwrap();
        assert_eq!(cq.dequeue(), Some((3, 'c')));
        assert_eq!(cq.dequeue(), Some((9, 'b')));
        assert_eq!(cq.dequeue(), None);
        assert_eq!(cq.head_day(), 9, "an empty calendar does not rotate");
        // The ring wraps: day 9 + 15 is in bucket (9 + 15) mod 16.
        cq.enqueue(15, 'd').unwrap();
        cq.check_invariants();
        assert_eq!(cq.dequeue(), Some((24, 'd')));
    }

    #[test]
    fn rotate_to_next_rotates_as_dequeue_would_without_serving() {
        let mut cq = Calendar::new(CalendarConfig::hierarchical(&[4, 4], 16)).unwrap();
        assert_eq!(cq.rotate_to_next(), 0, "an empty calendar does not rotate");
        let far = cq.enqueue(9, 'f').unwrap();
        cq.enqueue(2, 'n').unwrap();
        assert_eq!(cq.rotate_to_next(), 2);
        assert_eq!(cq.head_day(), 2);
        assert_eq!(cq.rotate_to_next(), 0, "the head day holds an element");
        assert_eq!(cq.dequeue(), Some((2, 'n')));
        // Day 9 sits at level 1: the rotation stops at its block and moves it down.
        assert_eq!(cq.rotate_to_next(), 7);
        assert_eq!(cq.level_of(far), Some(0));
        assert_eq!(cq.calendar_stats().rotations, 9);
        cq.check_invariants();
        // A physical calendar follows its clock, never past a non-empty day.
        let cfg = CalendarConfig::new(8, 8)
            .granularity(10)
            .rotation(Rotation::Physical {
                work_conserving: false,
            });
        let mut p = Calendar::new(cfg).unwrap();
        p.enqueue(5, 'x').unwrap();
        p.advance(30);
        assert_eq!(p.head_day(), 3);
        assert_eq!(p.rotate_to_next(), 0);
        p.clock = 90;
        assert_eq!(p.rotate_to_next(), 2, "stops at the non-empty day 5");
        p.check_invariants();
    }

    #[test]
    fn past_and_beyond_reach_are_counted() {
        let mut cq = Calendar::new(CalendarConfig::new(4, 8).start(10)).unwrap();
        cq.insert(3, 'p').unwrap();
        cq.enqueue(4, 'c').unwrap();
        let s = cq.calendar_stats();
        assert_eq!((s.past, s.clamped), (1, 1));
        let h = cq.insert(13, 'x').unwrap();
        assert_eq!(cq.scheduled_day(h), Some(13));
        assert_eq!(cq.day_len(3), 2, "the clamped element is in the last day");
        let mut r = Calendar::new(
            CalendarConfig::new(4, 8)
                .start(10)
                .beyond_reach(OutOfRange::Reject),
        )
        .unwrap();
        assert_eq!(r.enqueue(4, 'z'), Err(InsertError::OutOfRange('z')));
        assert_eq!(r.insert(14, 'z'), Err(InsertError::OutOfRange('z')));
        assert_eq!(r.calendar_stats().rejected, 2);
        assert_eq!(r.stats().rejected, 2);
    }

    #[test]
    fn manual_rotation_carries_the_head_day_forward() {
        let mut cq = Calendar::new(CalendarConfig::new(3, 8)).unwrap();
        cq.enqueue(0, 'a').unwrap();
        cq.enqueue(0, 'b').unwrap();
        cq.enqueue(1, 'c').unwrap();
        assert!(cq.rotate());
        assert_eq!(cq.head_day(), 1);
        assert_eq!(cq.calendar_stats().carried, 2);
        cq.check_invariants();
        let order: Vec<char> = core::iter::from_fn(|| cq.dequeue().map(|(_, c)| c)).collect();
        assert_eq!(order, ['a', 'b', 'c']);
    }

    #[test]
    fn physical_calendar_follows_the_clock_and_lags_behind_a_full_day() {
        let cfg = CalendarConfig::new(8, 16)
            .granularity(10)
            .rotation(Rotation::Physical {
                work_conserving: false,
            });
        let mut cq = Calendar::new(cfg).unwrap();
        cq.enqueue(0, 'a').unwrap();
        cq.enqueue(0, 'b').unwrap();
        cq.enqueue(5, 'c').unwrap();
        // Day 3's time: day 0 is not drained, so the head stays on it.
        cq.advance(35);
        assert_eq!(cq.head_day(), 0);
        assert_eq!(cq.dequeue(), Some((0, 'a')));
        assert_eq!(cq.dequeue(), Some((0, 'b')));
        // Drained: the next dequeue catches up with the clock, but day 5 has not
        // begun.
        assert_eq!(cq.dequeue(), None);
        assert_eq!(cq.head_day(), 3);
        assert_eq!(cq.next_ready(35), Some(50));
        assert_eq!(cq.next_rotation(35), Some(40));
        assert_eq!(cq.dequeue_at(49), None);
        assert_eq!(cq.dequeue_at(50), Some((50, 'c')));
        assert_eq!(cq.calendar_stats().rotations, 5);
        cq.check_invariants();
    }

    #[test]
    fn work_conserving_physical_serves_early_without_rotating() {
        let cfg = CalendarConfig::new(8, 16)
            .granularity(10)
            .rotation(Rotation::Physical {
                work_conserving: true,
            });
        let mut cq = Calendar::new(cfg).unwrap();
        cq.enqueue(6, 'l').unwrap();
        assert_eq!(cq.dequeue_at(12), Some((60, 'l')));
        assert_eq!(cq.head_day(), 1, "the head stays on the clock");
        assert_eq!(cq.calendar_stats().early, 1);
        // An earlier deadline arriving now still goes first.
        cq.enqueue(5, 'x').unwrap();
        cq.enqueue(2, 'y').unwrap();
        assert_eq!(cq.dequeue(), Some((30, 'y')));
    }

    #[test]
    fn hierarchical_calendar_moves_each_element_once_per_level() {
        let mut cq = Calendar::new(CalendarConfig::hierarchical(&[4, 4, 4], 64)).unwrap();
        assert_eq!(cq.reach(), 64);
        let far = cq.enqueue(63, 63u64).unwrap();
        let mid = cq.enqueue(9, 9).unwrap();
        let near = cq.enqueue(2, 2).unwrap();
        assert_eq!(cq.level_of(far), Some(2));
        assert_eq!(cq.level_of(mid), Some(1));
        assert_eq!(cq.level_of(near), Some(0));
        cq.check_invariants();
        assert_eq!(cq.peek_min(), Some(2));
        assert_eq!(cq.dequeue(), Some((2, 2)));
        assert_eq!(cq.peek_min(), Some(9));
        assert_eq!(cq.dequeue(), Some((9, 9)));
        assert_eq!(cq.level_of(far), Some(2));
        assert_eq!(cq.dequeue(), Some((63, 63)));
        let s = cq.calendar_stats();
        assert_eq!(s.moves, [0, 2, 1, 0, 0, 0]);
        assert_eq!(s.rotations, 63);
        cq.check_invariants();
    }

    #[test]
    fn invalid_configurations_are_refused() {
        assert_eq!(
            Calendar::<u8>::new(CalendarConfig::hierarchical(&[], 1)).err(),
            Some(ConfigError::ZeroBuckets)
        );
        assert_eq!(
            Calendar::<u8>::new(CalendarConfig::hierarchical(&[4, 0], 1)).err(),
            Some(ConfigError::ZeroBuckets)
        );
        assert_eq!(
            Calendar::<u8>::new(CalendarConfig::hierarchical(&[2; 7], 1)).err(),
            Some(ConfigError::TooManyLevels {
                requested: 7,
                max: MAX_CALENDAR_LEVELS
            })
        );
        assert_eq!(
            Calendar::<u8>::new(CalendarConfig::new(4, 1).granularity(0)).err(),
            Some(ConfigError::ZeroGranularity)
        );
        assert_eq!(
            Calendar::<u8>::new(CalendarConfig::hierarchical(&[1 << 30; 3], 1)).err(),
            Some(ConfigError::HorizonTooLarge)
        );
        assert!(matches!(
            Calendar::<u8>::new(CalendarConfig::new((1 << 30) + 1, 1)).err(),
            Some(ConfigError::TooManyBuckets { .. })
        ));
    }
}
