//! Choosing a node's integer priority queue: the Eiffel paper's decision tree
//! (NSDI'19, section 5.2, Fig. 16), applied to what the node's discipline and the
//! tree's configuration say about its ranks.
//!
//! ```text
//! levels <= 64 and fixed range      -> ffs    (one word)
//! levels < 1000                     -> binary_heap (buckets are not worth their memory)
//! fixed range                       -> hffs
//! moving range, occupancy >= 0.7    -> circular approx_gradient (look-back 64)
//! moving range                      -> cffs
//! ```
//!
//! The geometry (granularity and buckets) follows from the discipline unless the
//! policy sets it: time-based ranks use 1 us buckets over a window of 4096 buckets
//! per half (deadlines 10 us over 16384); virtual times use buckets sized so that
//! the largest step `mtu * VT_SCALE / min_weight` spans 4096 buckets; remaining
//! sizes use one bucket per MTU up to 64 MiB; strict priority one bucket per level.

use eiffel_queue::{QueueConfig, QueueKind};

use super::discipline::{QueueChoice, Rank};
use super::txn::VT_SCALE;

/// Threshold under which bucketed queues are not worth their memory (Fig. 16).
pub const SMALL_LEVELS: usize = 1_000;

/// Occupancy from which the approximate queue is chosen for moving ranges.
pub const DENSE_OCCUPANCY: f64 = 0.7;

/// Look-back of automatically chosen approximate queues (buckets).
pub const AUTO_LOOKBACK: u32 = 64;

/// A resolved queue: its type, configuration, and why it was chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct QueuePlan {
    /// The queue type.
    pub kind: QueueKind,
    /// Its configuration (capacity = the node's units).
    pub config: QueueConfig,
    /// Whether the type came from the decision tree rather than the policy.
    pub automatic: bool,
    /// The decision-tree branch taken, for `eiffel check`.
    pub reason: String,
}

/// What a node's queue holds ranks of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RankKind {
    /// A rank transaction's.
    Rank(Rank),
    /// hClock's share tags (virtual times; its reservation queue's are times).
    Hclock,
}

impl RankKind {
    /// Whether the ranks move forward with time or virtual time.
    fn moving_range(self) -> bool {
        match self {
            RankKind::Rank(r) => r.moving_range(),
            RankKind::Hclock => true,
        }
    }
}

/// What the tree knows about one ranked queue of a node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QueueNeeds {
    pub ranks: RankKind,
    /// Whether the ranks are real time (hClock's reservation queue) rather than the
    /// discipline's own ranks.
    pub time_ranks: bool,
    pub units: usize,
    pub mtu: u32,
    pub min_weight: u32,
    /// Largest child priority plus one (strict priority over children).
    pub priority_levels: usize,
    pub per_flow: bool,
}

fn default_geometry(needs: &QueueNeeds) -> (u64, usize) {
    if needs.time_ranks {
        return (1_000, 4_096);
    }
    match needs.ranks {
        RankKind::Rank(Rank::Strict) => {
            if needs.per_flow {
                (1, 64)
            } else {
                (1, needs.priority_levels.max(1))
            }
        }
        RankKind::Rank(Rank::Srpt | Rank::Pfabric) => {
            let g = u64::from(needs.mtu.max(1));
            (g, ((64u64 << 20) / g) as usize)
        }
        RankKind::Rank(Rank::Edf) => (10_000, 16_384),
        RankKind::Rank(Rank::Wfq) | RankKind::Hclock => {
            let span = u64::from(needs.mtu) * VT_SCALE / u64::from(needs.min_weight.max(1));
            ((span / 4_096).max(1).next_power_of_two(), 4_096)
        }
        RankKind::Rank(Rank::Fifo | Rank::Lstf) => (1_000, 4_096),
    }
}

/// Resolves `choice` for a queue with `needs`.
pub(crate) fn plan(choice: &QueueChoice, needs: &QueueNeeds) -> QueuePlan {
    let (g0, b0) = default_geometry(needs);
    let granularity = choice.granularity.unwrap_or(g0);
    let buckets = choice.buckets.unwrap_or(b0).max(1);
    let moving = needs.time_ranks || needs.ranks.moving_range();
    let occupancy = choice
        .occupancy
        .unwrap_or_else(|| (needs.units as f64 / buckets as f64).min(1.0));
    let (kind, automatic, reason) = match choice.kind {
        Some(k) => (k, false, "set by the policy".to_string()),
        None => {
            let range = if moving { "moving" } else { "fixed" };
            if !moving && buckets <= 64 {
                (
                    QueueKind::Ffs,
                    true,
                    format!("{range} range of {buckets} levels fits one word"),
                )
            } else if buckets < SMALL_LEVELS {
                (
                    QueueKind::BinaryHeap,
                    true,
                    format!("{buckets} levels < {SMALL_LEVELS}: buckets not worth their memory"),
                )
            } else if !moving {
                (
                    QueueKind::Hffs,
                    true,
                    format!("fixed range of {buckets} levels"),
                )
            } else if occupancy >= DENSE_OCCUPANCY {
                (
                    QueueKind::CircularApproxGradient,
                    true,
                    format!("moving range, expected occupancy {occupancy:.2} >= {DENSE_OCCUPANCY}"),
                )
            } else {
                (
                    QueueKind::Cffs,
                    true,
                    format!("moving range, expected occupancy {occupancy:.2} < {DENSE_OCCUPANCY}"),
                )
            }
        }
    };
    let buckets = if kind == QueueKind::Ffs {
        buckets.min(64)
    } else {
        buckets
    };
    let mut config = QueueConfig::new(buckets, needs.units.max(1)).granularity(granularity.max(1));
    if kind == QueueKind::CircularApproxGradient || kind == QueueKind::ApproxGradient {
        config = config.lookback(AUTO_LOOKBACK);
    }
    QueuePlan {
        kind,
        config,
        automatic,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(rank: Rank, units: usize) -> QueueNeeds {
        QueueNeeds {
            ranks: RankKind::Rank(rank),
            time_ranks: false,
            units,
            mtu: 1500,
            min_weight: 1,
            priority_levels: 8,
            per_flow: false,
        }
    }

    #[test]
    fn decision_tree_branches() {
        let auto = QueueChoice::AUTO;
        assert_eq!(plan(&auto, &needs(Rank::Strict, 8)).kind, QueueKind::Ffs);
        assert_eq!(plan(&auto, &needs(Rank::Srpt, 100)).kind, QueueKind::Hffs);
        assert_eq!(plan(&auto, &needs(Rank::Wfq, 10)).kind, QueueKind::Cffs);
        assert_eq!(
            plan(&auto, &needs(Rank::Wfq, 20_000)).kind,
            QueueKind::CircularApproxGradient
        );
        let small = QueueChoice {
            buckets: Some(100),
            ..auto
        };
        assert_eq!(
            plan(&small, &needs(Rank::Edf, 10)).kind,
            QueueKind::BinaryHeap
        );
        let fixed = QueueChoice {
            kind: Some(QueueKind::BucketHeap),
            ..auto
        };
        let p = plan(&fixed, &needs(Rank::Edf, 10));
        assert_eq!((p.kind, p.automatic), (QueueKind::BucketHeap, false));
    }
}
