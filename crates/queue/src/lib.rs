//! Integer priority queues for packet scheduling.
//!
//! Packet ranks are integers that, at any moment, fall within a limited window, and
//! many packets share a rank. Eiffel (Saeed et al., NSDI'19, section 3.1) exploits
//! this with *bucketed* integer priority queues: ranks map to buckets through a
//! granularity, each bucket is a FIFO, and the lowest non-empty bucket is found with
//! a few find-first-set instructions instead of a comparison heap's `O(log n)`
//! work. This crate implements that family, the baselines they are measured
//! against, the timing wheel used for shaping, and programmable calendar queues
//! (Sharma et al., NSDI'20): rings of days whose rotation raises every queued
//! element's priority as time passes, logical or physical, flat or hierarchical.
//!
//! | queue | type | range | `pop_min` cost | exact |
//! |---|---|---|---|---|
//! | `ffs` | [`Ffs`] | fixed, up to 64 buckets | 1 find-first-set | yes |
//! | `hffs` | [`Hffs`] | fixed, up to 2^30 buckets | `log64 N` find-first-sets | yes |
//! | `cffs` | [`Cffs`] | moving (two halves that swap) | `log64 N` find-first-sets | yes, in range |
//! | `gradient` | [`Gradient`] | fixed | `log32 N` divisions | yes |
//! | `approx_gradient` | [`ApproxGradient`] | fixed | 1 division (+ search on a miss) | when dense |
//! | `circular_approx_gradient` | [`CircularApproxGradient`] | moving | 1 division (+ search) | when dense |
//! | `bucket_heap` | [`BucketHeap`] | fixed | O(1), O(log k) updates | yes |
//! | `binary_heap` | [`BinaryHeapQueue`] | none | O(log n) | yes (exact ranks) |
//! | timing wheel | [`TimingWheel`] | moving time horizon | `log64 N` | slot precision |
//! | `calendar` | [`Calendar`] | moving with its head: `N` days, or `n1 x n2 x ...` days hierarchically | O(1) from the head day, `log64 N` to rotate | days in order, FIFO within a day |
//!
//! All queues implement [`PriorityQueue`]: insert with a `u64` rank and get a
//! [`Handle`]; peek and pop the minimum; remove and re-rank by handle (O(1) for the
//! bucketed queues); length and capacity. Elements live in a slab allocated at
//! construction with intrusive bucket lists: the steady state allocates nothing, and
//! a full queue hands the item back in [`InsertError::Full`].
//!
//! The crate is `no_std` + `alloc` with no dependencies, so it can serve a kernel
//! module, NIC firmware or a DPDK application as well as the Eiffel runtime.
//!
//! ```
//! use eiffel_queue::{Cffs, PriorityQueue, QueueConfig};
//!
//! // Two halves of 1024 buckets of 100 ns: a 204.8 us window of release times that
//! // moves with the minimum.
//! let mut q = Cffs::new(QueueConfig::new(1024, 10_000).granularity(100)).unwrap();
//! let late = q.insert(5_000, "late").unwrap();
//! q.insert(1_000, "early").unwrap();
//! q.insert(1_050, "same bucket, after early").unwrap();
//! q.set_rank(late, 900).unwrap(); // O(1) re-rank by handle
//! assert_eq!(q.pop_min(), Some((900, "late")));
//! assert_eq!(q.pop_min(), Some((1_000, "early")));
//! assert_eq!(q.pop_min(), Some((1_050, "same bucket, after early")));
//! // Far beyond the window: the idle queue re-anchors instead of clamping.
//! q.insert(10_000_000_000, "much later").unwrap();
//! assert_eq!(q.base(), 10_000_000_000);
//! assert_eq!(q.stats().clamped_high, 0);
//! ```

#![no_std]
#![warn(missing_docs)]

extern crate alloc;

mod any;
mod api;
mod approx;
mod binary_heap;
mod bits;
mod bucketed;
mod calendar;
mod cffs;
mod circular;
mod gradient;
mod hbitmap;
mod index;
mod prefetch;
mod reference;
mod slab;
mod store;
mod timing_wheel;

pub use any::{AnyQueue, QueueKind, UnknownQueueKind};
pub use api::{
    ApproxStats, ConfigError, Handle, InsertError, OutOfRange, PriorityQueue, QueueConfig,
    QueueStats, RankError,
};
pub use approx::{ApproxIndex, MAX_APPROX_BUCKETS};
pub use binary_heap::BinaryHeapQueue;
pub use bucketed::Bucketed;
pub use calendar::{Calendar, CalendarConfig, CalendarStats, Rotation, MAX_CALENDAR_LEVELS};
pub use cffs::Cffs;
pub use circular::Circular;
pub use gradient::{GradientIndex, MAX_GRADIENT_BUCKETS};
pub use hbitmap::HierBitmap;
pub use index::{BucketIndex, HeapIndex, WordIndex, MAX_HIER_BUCKETS};
pub use prefetch::{prefetch, prefetch_address, prefetch_lines};
pub use reference::OrderedMapQueue;
pub use timing_wheel::{TimingWheel, WheelConfig};

/// `ffs`: one machine word of buckets (at most 64), one find-first-set per pop
/// (Eiffel Fig. 2).
pub type Ffs<T> = Bucketed<T, WordIndex>;

/// `hffs`: hierarchical FFS over a fixed range of buckets (Eiffel Fig. 3).
pub type Hffs<T> = Bucketed<T, HierBitmap>;

/// `gradient`: the exact hierarchical gradient queue (Eiffel section 3.1.2).
pub type Gradient<T> = Bucketed<T, GradientIndex>;

/// `approx_gradient`: the approximate gradient queue over a fixed range.
pub type ApproxGradient<T> = Bucketed<T, ApproxIndex>;

/// The approximate gradient queue over a moving range, built like `cffs`.
pub type CircularApproxGradient<T> = Circular<T, ApproxIndex>;

/// `bucket_heap`: buckets whose non-empty indices are kept in a binary heap (the
/// Eiffel paper's BH baseline).
pub type BucketHeap<T> = Bucketed<T, HeapIndex>;
