//! Queues chosen at run time: [`QueueKind`] names every queue type and [`AnyQueue`]
//! holds any of them behind one enum, so a policy file or a benchmark can pick the
//! structure by name while every call stays a direct, inlinable match arm.

use core::fmt;
use core::str::FromStr;

use crate::api::{
    ConfigError, Handle, InsertError, PriorityQueue, QueueConfig, QueueStats, RankError,
};
use crate::{
    ApproxGradient, BinaryHeapQueue, BucketHeap, Cffs, CircularApproxGradient, Ffs, Gradient, Hffs,
};

/// Every queue type of the crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueKind {
    /// One word of buckets.
    Ffs,
    /// Hierarchical FFS over a fixed range.
    Hffs,
    /// Circular hierarchical FFS over a moving range.
    Cffs,
    /// Exact hierarchical gradient queue.
    Gradient,
    /// Approximate gradient queue over a fixed range.
    ApproxGradient,
    /// Approximate gradient queue over a moving range.
    CircularApproxGradient,
    /// Buckets indexed by a binary heap of bucket numbers.
    BucketHeap,
    /// Comparison heap of elements.
    BinaryHeap,
}

impl QueueKind {
    /// Every kind.
    pub const ALL: [QueueKind; 8] = [
        QueueKind::Ffs,
        QueueKind::Hffs,
        QueueKind::Cffs,
        QueueKind::Gradient,
        QueueKind::ApproxGradient,
        QueueKind::CircularApproxGradient,
        QueueKind::BucketHeap,
        QueueKind::BinaryHeap,
    ];

    /// The kind's name as used in policy files, benchmark output and JSON.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            QueueKind::Ffs => "ffs",
            QueueKind::Hffs => "hffs",
            QueueKind::Cffs => "cffs",
            QueueKind::Gradient => "gradient",
            QueueKind::ApproxGradient => "approx_gradient",
            QueueKind::CircularApproxGradient => "circular_approx_gradient",
            QueueKind::BucketHeap => "bucket_heap",
            QueueKind::BinaryHeap => "binary_heap",
        }
    }

    /// Whether the queue's range moves with its minimum.
    #[must_use]
    pub const fn is_circular(self) -> bool {
        matches!(self, QueueKind::Cffs | QueueKind::CircularApproxGradient)
    }

    /// Whether the queue always pops the lowest non-empty bucket.
    #[must_use]
    pub const fn is_exact(self) -> bool {
        !matches!(
            self,
            QueueKind::ApproxGradient | QueueKind::CircularApproxGradient
        )
    }
}

impl fmt::Display for QueueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a queue kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownQueueKind;

impl fmt::Display for UnknownQueueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown queue type (expected one of ffs, hffs, cffs, gradient, approx_gradient, circular_approx_gradient, bucket_heap, binary_heap)")
    }
}

impl core::error::Error for UnknownQueueKind {}

impl FromStr for QueueKind {
    type Err = UnknownQueueKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        QueueKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or(UnknownQueueKind)
    }
}

/// Any queue of the crate, chosen at run time.
#[derive(Clone, Debug)]
#[allow(missing_docs)]
pub enum AnyQueue<T> {
    Ffs(Ffs<T>),
    Hffs(Hffs<T>),
    Cffs(Cffs<T>),
    Gradient(Gradient<T>),
    ApproxGradient(ApproxGradient<T>),
    CircularApproxGradient(CircularApproxGradient<T>),
    BucketHeap(BucketHeap<T>),
    BinaryHeap(BinaryHeapQueue<T>),
}

macro_rules! dispatch {
    ($self:expr, $q:ident => $e:expr) => {
        match $self {
            AnyQueue::Ffs($q) => $e,
            AnyQueue::Hffs($q) => $e,
            AnyQueue::Cffs($q) => $e,
            AnyQueue::Gradient($q) => $e,
            AnyQueue::ApproxGradient($q) => $e,
            AnyQueue::CircularApproxGradient($q) => $e,
            AnyQueue::BucketHeap($q) => $e,
            AnyQueue::BinaryHeap($q) => $e,
        }
    };
}

impl<T> AnyQueue<T> {
    /// A queue of `kind` configured by `cfg`.
    pub fn new(kind: QueueKind, cfg: QueueConfig) -> Result<Self, ConfigError> {
        Ok(match kind {
            QueueKind::Ffs => AnyQueue::Ffs(Ffs::new(cfg)?),
            QueueKind::Hffs => AnyQueue::Hffs(Hffs::new(cfg)?),
            QueueKind::Cffs => AnyQueue::Cffs(Cffs::new(cfg)?),
            QueueKind::Gradient => AnyQueue::Gradient(Gradient::new(cfg)?),
            QueueKind::ApproxGradient => AnyQueue::ApproxGradient(ApproxGradient::new(cfg)?),
            QueueKind::CircularApproxGradient => {
                AnyQueue::CircularApproxGradient(CircularApproxGradient::new(cfg)?)
            }
            QueueKind::BucketHeap => AnyQueue::BucketHeap(BucketHeap::new(cfg)?),
            QueueKind::BinaryHeap => AnyQueue::BinaryHeap(BinaryHeapQueue::new(cfg)?),
        })
    }

    /// Which kind this is.
    #[must_use]
    pub fn kind(&self) -> QueueKind {
        match self {
            AnyQueue::Ffs(_) => QueueKind::Ffs,
            AnyQueue::Hffs(_) => QueueKind::Hffs,
            AnyQueue::Cffs(_) => QueueKind::Cffs,
            AnyQueue::Gradient(_) => QueueKind::Gradient,
            AnyQueue::ApproxGradient(_) => QueueKind::ApproxGradient,
            AnyQueue::CircularApproxGradient(_) => QueueKind::CircularApproxGradient,
            AnyQueue::BucketHeap(_) => QueueKind::BucketHeap,
            AnyQueue::BinaryHeap(_) => QueueKind::BinaryHeap,
        }
    }

    /// Checks the queue's internal invariants.
    ///
    /// # Panics
    /// On a violated invariant.
    pub fn check_invariants(&self) {
        dispatch!(self, q => q.check_invariants());
    }
}

impl<T> PriorityQueue<T> for AnyQueue<T> {
    #[inline]
    fn insert(&mut self, rank: u64, item: T) -> Result<Handle, InsertError<T>> {
        dispatch!(self, q => q.insert(rank, item))
    }

    #[inline]
    fn peek(&self) -> Option<(Handle, u64, &T)> {
        dispatch!(self, q => q.peek())
    }

    #[inline]
    fn pop_min(&mut self) -> Option<(u64, T)> {
        dispatch!(self, q => q.pop_min())
    }

    #[inline]
    fn remove(&mut self, handle: Handle) -> Option<(u64, T)> {
        dispatch!(self, q => q.remove(handle))
    }

    #[inline]
    fn set_rank(&mut self, handle: Handle, rank: u64) -> Result<(), RankError> {
        dispatch!(self, q => q.set_rank(handle, rank))
    }

    #[inline]
    fn get(&self, handle: Handle) -> Option<(u64, &T)> {
        dispatch!(self, q => q.get(handle))
    }

    #[inline]
    fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        dispatch!(self, q => q.get_mut(handle))
    }

    #[inline]
    fn len(&self) -> usize {
        dispatch!(self, q => q.len())
    }

    #[inline]
    fn capacity(&self) -> usize {
        dispatch!(self, q => q.capacity())
    }

    fn stats(&self) -> QueueStats {
        dispatch!(self, q => q.stats())
    }
}
