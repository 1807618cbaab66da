//! The interface shared by every queue: handles, errors, statistics, configuration
//! and the [`PriorityQueue`] trait.

use core::fmt;

/// Identifies one element inside one queue, for O(1) removal and re-ranking.
///
/// A handle is a slot index plus the slot's generation: once the element leaves the
/// queue (popped or removed) the slot's generation changes and the old handle is
/// refused (`None` or [`RankError::StaleHandle`]) instead of touching whichever
/// element reuses the slot. Generations are 32-bit, so a handle kept across 2^32
/// reuses of the same slot could alias; no scheduler keeps handles that long.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle {
    pub(crate) index: u32,
    pub(crate) gen: u32,
}

impl Handle {
    /// The slot index (dense, below the queue's capacity): usable to index side
    /// tables sized to the capacity.
    #[must_use]
    #[inline]
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The handle packed in one `u64` (index in the low half).
    #[must_use]
    #[inline]
    pub const fn to_bits(self) -> u64 {
        (self.gen as u64) << 32 | self.index as u64
    }

    /// The inverse of [`Handle::to_bits`].
    #[must_use]
    #[inline]
    pub const fn from_bits(bits: u64) -> Self {
        Handle {
            index: bits as u32,
            gen: (bits >> 32) as u32,
        }
    }
}

/// Why an insertion failed; the item is handed back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertError<T> {
    /// Every preallocated slot is in use.
    Full(T),
    /// The rank lies outside the queue's range and the queue is configured with
    /// [`OutOfRange::Reject`].
    OutOfRange(T),
}

impl<T> InsertError<T> {
    /// The item that was not inserted.
    pub fn into_inner(self) -> T {
        match self {
            InsertError::Full(item) | InsertError::OutOfRange(item) => item,
        }
    }
}

impl<T> fmt::Display for InsertError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InsertError::Full(_) => f.write_str("queue is full"),
            InsertError::OutOfRange(_) => f.write_str("rank outside the queue's range"),
        }
    }
}

impl<T: fmt::Debug> core::error::Error for InsertError<T> {}

/// Why re-ranking failed; the element stays where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankError {
    /// The handle does not name an element of this queue.
    StaleHandle,
    /// The new rank lies outside the range of a queue configured with
    /// [`OutOfRange::Reject`].
    OutOfRange,
}

impl fmt::Display for RankError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankError::StaleHandle => f.write_str("handle does not name a queued element"),
            RankError::OutOfRange => f.write_str("rank outside the queue's range"),
        }
    }
}

impl core::error::Error for RankError {}

/// What a bucketed queue does with a rank outside the range its buckets cover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutOfRange {
    /// Place it in the nearest edge bucket (or, for circular queues, the served-first
    /// list below the base) and count it in [`QueueStats`]. This is the papers'
    /// behaviour.
    #[default]
    Clamp,
    /// Refuse it: [`InsertError::OutOfRange`] / [`RankError::OutOfRange`].
    Reject,
}

/// Statistics of the approximate gradient queue's estimates (Eiffel Fig. 14).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApproxStats {
    /// Pops that consulted the curvature estimate.
    pub lookups: u64,
    /// Pops whose estimated bucket was empty, so a linear search followed.
    pub misses: u64,
    /// Sum over misses of the distance, in buckets, from the estimate to the bucket
    /// the search found.
    pub miss_distance: u64,
    /// Largest such distance.
    pub max_miss_distance: u64,
}

/// Counters of the out-of-range and range-moving events of a queue.
///
/// Every field is zero for queues to which it does not apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Fixed-range queues: ranks below the range, placed in the first bucket.
    pub clamped_low: u64,
    /// Ranks beyond the range, placed in the last bucket (circular queues: the last
    /// bucket of the secondary half, as in the Eiffel paper; calendar queues: the
    /// last day of the reach).
    pub clamped_high: u64,
    /// Circular queues: ranks below the base, placed in the served-first list.
    /// Calendar queues: ranks of days before the head, served in the head day.
    pub underflow: u64,
    /// Ranks refused under [`OutOfRange::Reject`].
    pub rejected: u64,
    /// Circular queues: times the secondary half became the primary. Calendar
    /// queues: days the head advanced.
    pub rotations: u64,
    /// Circular queues: times the range was re-anchored on an insert into an empty
    /// queue.
    pub rebases: u64,
    /// Approximate gradient queues: estimate statistics.
    pub approx: ApproxStats,
}

/// An invalid queue configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// Zero buckets.
    ZeroBuckets,
    /// More buckets than this queue type supports.
    TooManyBuckets {
        /// Buckets requested.
        requested: usize,
        /// Most buckets supported.
        max: usize,
    },
    /// A granularity of zero ranks per bucket.
    ZeroGranularity,
    /// A capacity that does not fit the 32-bit slot index.
    CapacityTooLarge {
        /// Capacity requested.
        requested: usize,
        /// Largest capacity supported.
        max: usize,
    },
    /// An approximate gradient queue whose `alpha` is zero or too small for its
    /// curvature sums to fit 128 bits.
    AlphaTooSmall {
        /// Alpha requested.
        requested: u32,
        /// Smallest alpha that fits.
        min: u32,
    },
    /// A timing wheel whose horizon, or a hierarchical calendar whose reach, would
    /// overflow the 64-bit range.
    HorizonTooLarge,
    /// A hierarchical calendar with more levels than supported.
    TooManyLevels {
        /// Levels requested.
        requested: usize,
        /// Most levels supported.
        max: usize,
    },
}

impl ConfigError {
    /// `Ok` for at most `max` buckets, [`ConfigError::TooManyBuckets`] naming
    /// both numbers otherwise.
    pub(crate) fn at_most_buckets(requested: usize, max: usize) -> Result<(), ConfigError> {
        if requested > max {
            return Err(ConfigError::TooManyBuckets { requested, max });
        }
        Ok(())
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ConfigError::ZeroBuckets => f.write_str("a queue needs at least one bucket"),
            ConfigError::TooManyBuckets { requested, max } => {
                write!(
                    f,
                    "{requested} buckets requested, this queue supports at most {max}"
                )
            }
            ConfigError::ZeroGranularity => {
                f.write_str("granularity must be at least 1 rank per bucket")
            }
            ConfigError::CapacityTooLarge { requested, max } => {
                write!(f, "capacity {requested} exceeds the maximum {max}")
            }
            ConfigError::AlphaTooSmall { requested, min } => write!(
                f,
                "alpha {requested} is too small for this many buckets (at least {min} is needed)"
            ),
            ConfigError::HorizonTooLarge => {
                f.write_str("buckets x granularity overflows 64-bit ranks")
            }
            ConfigError::TooManyLevels { requested, max } => write!(
                f,
                "{requested} calendar levels requested, at most {max} are supported"
            ),
        }
    }
}

impl core::error::Error for ConfigError {}

/// The configuration of a bucketed queue.
///
/// Rank `r` maps to bucket `(r - base) / granularity`. For circular queues
/// `buckets` is the size of each of the two halves and `base` the initial base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// Number of buckets (per half for circular queues).
    pub buckets: usize,
    /// Ranks per bucket (at least 1). Powers of two map ranks with a shift, others
    /// with a division.
    pub granularity: u64,
    /// Lowest rank of the first bucket.
    pub base: u64,
    /// Most elements the queue holds; all slots are allocated up front.
    pub capacity: usize,
    /// What to do with ranks outside the range.
    pub out_of_range: OutOfRange,
    /// Approximate gradient queues only: the weight exponent divisor alpha; `None`
    /// picks the smallest alpha whose sums fit (the most accurate).
    pub alpha: Option<u32>,
    /// Approximate gradient queues only: how many buckets below the estimate the
    /// search starts (0, the default, is the paper's algorithm: search only when the
    /// estimated bucket is empty). See [`ApproxIndex`](crate::ApproxIndex).
    pub lookback: u32,
}

impl QueueConfig {
    /// `buckets` buckets of one rank each, starting at rank 0, holding up to
    /// `capacity` elements, clamping out-of-range ranks.
    #[must_use]
    pub const fn new(buckets: usize, capacity: usize) -> Self {
        QueueConfig {
            buckets,
            granularity: 1,
            base: 0,
            capacity,
            out_of_range: OutOfRange::Clamp,
            alpha: None,
            lookback: 0,
        }
    }

    /// Sets the ranks per bucket.
    #[must_use]
    pub const fn granularity(mut self, granularity: u64) -> Self {
        self.granularity = granularity;
        self
    }

    /// Sets the lowest rank of the first bucket.
    #[must_use]
    pub const fn base(mut self, base: u64) -> Self {
        self.base = base;
        self
    }

    /// Sets the out-of-range behaviour.
    #[must_use]
    pub const fn out_of_range(mut self, behaviour: OutOfRange) -> Self {
        self.out_of_range = behaviour;
        self
    }

    /// Sets alpha for approximate gradient queues.
    #[must_use]
    pub const fn alpha(mut self, alpha: u32) -> Self {
        self.alpha = Some(alpha);
        self
    }

    /// Sets the approximate gradient queues' look-back window.
    #[must_use]
    pub const fn lookback(mut self, buckets: u32) -> Self {
        self.lookback = buckets;
        self
    }
}

/// A priority queue of items of type `T` ordered by `u64` rank, lowest first.
///
/// Bucketed queues order elements by bucket, and FIFO within a bucket; the
/// comparison heap orders by exact rank, FIFO among equal ranks. Re-ranking an
/// element to a rank in the same bucket keeps its place; to another bucket moves it
/// to that bucket's tail.
pub trait PriorityQueue<T> {
    /// Inserts `item` with `rank`; the handle allows O(1) removal and re-ranking.
    fn insert(&mut self, rank: u64, item: T) -> Result<Handle, InsertError<T>>;

    /// The element [`pop_min`](Self::pop_min) would return: its handle, rank and item.
    fn peek(&self) -> Option<(Handle, u64, &T)>;

    /// Removes and returns the minimum element (see each queue for what "minimum"
    /// guarantees) with its rank.
    fn pop_min(&mut self) -> Option<(u64, T)>;

    /// Removes the element named by `handle`.
    fn remove(&mut self, handle: Handle) -> Option<(u64, T)>;

    /// Changes the rank of the element named by `handle`.
    fn set_rank(&mut self, handle: Handle, rank: u64) -> Result<(), RankError>;

    /// The rank and item named by `handle`.
    fn get(&self, handle: Handle) -> Option<(u64, &T)>;

    /// The item named by `handle`, mutably.
    fn get_mut(&mut self, handle: Handle) -> Option<&mut T>;

    /// Elements queued.
    fn len(&self) -> usize;

    /// Most elements the queue can hold.
    fn capacity(&self) -> usize;

    /// Out-of-range and estimate statistics.
    fn stats(&self) -> QueueStats;

    /// Whether the queue is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rank of the element [`pop_min`](Self::pop_min) would return.
    fn peek_min(&self) -> Option<u64> {
        self.peek().map(|(_, rank, _)| rank)
    }
}

/// Whether `capacity` fits the 32-bit slot index (one value is reserved as the
/// list terminator).
pub(crate) fn check_capacity(capacity: usize) -> Result<(), ConfigError> {
    let max = u32::MAX as usize - 1;
    if capacity > max {
        return Err(ConfigError::CapacityTooLarge {
            requested: capacity,
            max,
        });
    }
    Ok(())
}
