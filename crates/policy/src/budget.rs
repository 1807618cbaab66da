//! Memory and time budgets: what a policy, a workload and a run will allocate
//! and how many events a run will process, estimated from the files before
//! anything is allocated, and refused with an error that names the file, the
//! line, the key responsible and the estimate.
//!
//! An [`Estimate`] is a list of [`Charge`]s, each an allocation attributed to
//! the key of a file that causes it. Policies charge their tree
//! ([`eiffel_sched::tree::TreeSpec::footprint`]: packet pool, nodes, queues,
//! per-flow state, shaper) and their live flow table; workloads their per-flow
//! generator state; a run ([`crate::run::estimate`]) adds its histograms and
//! series and counts its events. Any other input file (a network scenario, for
//! instance) adds its own charges to the same [`Estimate`] with
//! [`Estimate::charge`] before [`Estimate::check`], so one limit covers
//! everything a run allocates.

use eiffel_sched::tree::{Allocation, TreeSpec};

use crate::error::{KeyIndex, PolicyError};
use crate::units::fmt_bytes;

/// The default memory limit: 4 GiB, a sixth of this project's development
/// machine and far above every example (the largest, 20,000 paced flows, needs
/// about 30 MiB).
pub const DEFAULT_MAX_MEMORY: u64 = 4 << 30;

/// Limits on what a run may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes the inputs may make the program allocate.
    pub max_memory: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_memory: DEFAULT_MAX_MEMORY,
        }
    }
}

/// One estimated allocation, attributed to the key of the file that causes it.
#[derive(Clone, Debug)]
pub struct Charge {
    /// Where the key is written (an error pointing at it).
    pub at: PolicyError,
    /// What is allocated, for the message ("packet pool of 65536 packets").
    pub what: String,
    /// Estimated bytes.
    pub bytes: u64,
}

/// Estimated allocations of a run's inputs.
#[derive(Clone, Debug, Default)]
pub struct Estimate {
    /// Every charge, in the order added.
    pub charges: Vec<Charge>,
}

impl Estimate {
    /// Adds `bytes` for `what`, caused by the key `at` points to.
    pub fn charge(&mut self, at: PolicyError, what: impl Into<String>, bytes: u64) {
        if bytes > 0 {
            self.charges.push(Charge {
                at,
                what: what.into(),
                bytes,
            });
        }
    }

    /// Every charge of `other` too.
    pub fn extend(&mut self, other: Estimate) {
        self.charges.extend(other.charges);
    }

    /// The estimated total, in bytes.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.charges
            .iter()
            .fold(0u64, |a, c| a.saturating_add(c.bytes))
    }

    /// `Ok` if the total fits `limits`; otherwise an error at the key of the
    /// largest charge, with the total and that charge.
    ///
    /// # Errors
    /// The estimate exceeds `limits.max_memory`.
    pub fn check(&self, limits: &Limits) -> Result<(), PolicyError> {
        let total = self.total();
        if total <= limits.max_memory {
            return Ok(());
        }
        let Some(largest) = self.charges.iter().max_by_key(|c| c.bytes) else {
            return Ok(());
        };
        let message = format!(
            "would need about {} of memory, above the limit of {} (--max-memory); the largest part is {}: {}",
            fmt_bytes(total),
            fmt_bytes(limits.max_memory),
            largest.what,
            fmt_bytes(largest.bytes)
        );
        Err(match &largest.at {
            PolicyError::Invalid {
                file,
                line,
                column,
                key,
                ..
            } => PolicyError::Invalid {
                file: file.clone(),
                line: *line,
                column: *column,
                key: key.clone(),
                message,
            },
            other @ PolicyError::Io { .. } => other.clone(),
        })
    }
}

/// The key of node `i` that sizes `what` (the first the file sets).
fn node_key(index: &KeyIndex, i: usize, keys: &[&str]) -> PolicyError {
    let path = keys
        .iter()
        .map(|k| format!("node[{i}].{k}"))
        .find(|p| index.span_of(p).is_some())
        .unwrap_or_else(|| format!("node[{i}].name"));
    index.at_key(&path, "")
}

/// The tree's allocations, each charged to the key that sizes it; the parts of
/// one kind over many nodes (queues, flows) are summed into one charge at the
/// key of the largest.
pub(crate) fn tree(index: &KeyIndex, spec: &TreeSpec) -> Estimate {
    let mut e = Estimate::default();
    let parts = spec.footprint().parts;
    for kind in [
        Allocation::PacketPool,
        Allocation::Nodes,
        Allocation::Shaper,
        Allocation::Discipline,
        Allocation::Flows,
        Allocation::PacketIndex,
    ] {
        let of_kind = parts.iter().filter(|p| p.what == kind);
        let (count, bytes) = of_kind.clone().fold((0usize, 0u64), |(n, b), p| {
            (n + 1, b.saturating_add(p.bytes))
        });
        let Some(largest) = of_kind.max_by_key(|p| p.bytes) else {
            continue;
        };
        let (at, what) = describe(index, spec, kind, largest.node.unwrap_or(0), count);
        e.charge(at, what, bytes);
    }
    e
}

/// Where a tree part of `kind` is charged (its largest is at node `i`, `count`
/// parts in all) and how the message names it.
fn describe(
    index: &KeyIndex,
    spec: &TreeSpec,
    kind: Allocation,
    i: usize,
    count: usize,
) -> (PolicyError, String) {
    let name = spec.nodes.get(i).map_or("", |n| n.name.as_str());
    let of = |what: &str| {
        if count == 1 {
            format!("{what} of node `{name}`")
        } else {
            format!("{what} of {count} nodes (the largest at node `{name}`)")
        }
    };
    match kind {
        Allocation::PacketPool => (
            index.at_key("capacity", ""),
            format!("the packet pool of {} packets (`capacity`)", spec.capacity),
        ),
        Allocation::Nodes => (
            index.at_key("node", ""),
            format!("{} nodes", spec.nodes.len()),
        ),
        Allocation::Shaper => (
            index.at_key("shaper.slots", ""),
            format!("the shaper's {} slots and its units", spec.shaper.slots),
        ),
        Allocation::Flows => (node_key(index, i, &["flows"]), of("the flows")),
        Allocation::PacketIndex => (
            node_key(index, i, &["discipline"]),
            of(&format!(
                "the per-packet index ({} entries, the tree's `capacity`)",
                spec.capacity
            )),
        ),
        Allocation::Discipline => (
            node_key(
                index,
                i,
                &["buckets", "days", "flows", "queue", "discipline"],
            ),
            of("the queue"),
        ),
    }
}

/// Bytes of one live flow-table entry: the key, the hash, the links and the two
/// hash-index slots per entry.
const FLOW_TABLE_ENTRY: u64 = (core::mem::size_of::<eiffel_classify::wire::FlowKey>() + 32) as u64;

/// The live flow table's allocation.
pub(crate) fn flow_table(index: &KeyIndex, max_flows: u32) -> Estimate {
    let mut e = Estimate::default();
    e.charge(
        index.at_key("classify.max_flows", ""),
        format!("the live flow table of {max_flows} flows (`classify.max_flows`)"),
        u64::from(max_flows).saturating_mul(FLOW_TABLE_ENTRY),
    );
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_charge_names_the_key() {
        let index = KeyIndex::new("p.toml", "capacity = 5\n[shaper]\nslots = 7\n");
        let mut e = Estimate::default();
        e.charge(index.at_key("capacity", ""), "pool", 3 << 30);
        e.charge(index.at_key("shaper.slots", ""), "shaper", 2 << 30);
        assert!(e.check(&Limits::default()).is_err());
        let err = e.check(&Limits::default()).unwrap_err().to_string();
        assert!(
            err.starts_with("p.toml:1:12: key `capacity`: would need about 5 GiB"),
            "{err}"
        );
        assert!(err.contains("above the limit of 4 GiB"), "{err}");
        assert!(e
            .check(&Limits {
                max_memory: 6 << 30
            })
            .is_ok());
    }
}
