//! Each node's discipline as a policy file writes it: a name, then the keys of
//! the discipline's family (a queue for ranked and hClock nodes, calendar
//! parameters for the `cq-*` disciplines). A key the discipline does not read is
//! an error naming the key.

use eiffel_queue::QueueKind;
use eiffel_sched::tree::{
    CalendarPolicy, CalendarSpec, Discipline, EdfRotation, FairQueue, QueueChoice, Rank,
};
use toml::Spanned;

use super::shape::Shape;
use super::{at, key, node_int, NodeFile};
use crate::error::{KeyIndex, PolicyError};

/// A calendar-queue discipline, before its parameters are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CalendarKind {
    Wfq,
    WfqBurst,
    Edf,
    Policer,
    PfabricFair,
}

impl CalendarKind {
    const ALL: [CalendarKind; 5] = [
        CalendarKind::Wfq,
        CalendarKind::WfqBurst,
        CalendarKind::Edf,
        CalendarKind::Policer,
        CalendarKind::PfabricFair,
    ];

    const fn name(self) -> &'static str {
        match self {
            CalendarKind::Wfq => "cq-wfq",
            CalendarKind::WfqBurst => "cq-wfq-burst",
            CalendarKind::Edf => "cq-edf",
            CalendarKind::Policer => "cq-policer",
            CalendarKind::PfabricFair => "cq-pfabric-fair",
        }
    }

    /// Whether the discipline reads calendar parameter `field`.
    fn reads(self, field: &str) -> bool {
        use CalendarKind::{Edf, PfabricFair, Policer, Wfq, WfqBurst};
        match field {
            "days" => true,
            "quantum" => matches!(self, Wfq | WfqBurst | PfabricFair),
            "burst_allowance" => self == WfqBurst,
            "period" => matches!(self, Edf | Policer),
            "rotation" => self == Edf,
            "rate" | "bucket" => self == Policer,
            _ => false,
        }
    }
}

/// A discipline as named in a policy file: its family, before its parameters
/// are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Ranked(Rank),
    Hclock,
    FairQueue(FairQueue),
    Ets,
    Calendar(CalendarKind),
}

impl Kind {
    /// Every name a policy file accepts, with its kind (`stfq` is `wfq`,
    /// `cq-leaky-bucket` is `cq-policer`).
    fn all() -> impl Iterator<Item = (&'static str, Kind)> {
        let ranked = Rank::ALL.into_iter().map(|r| (r.name(), Kind::Ranked(r)));
        let cores = FairQueue::ALL
            .into_iter()
            .map(|f| (f.name(), Kind::FairQueue(f)));
        let calendars = CalendarKind::ALL
            .into_iter()
            .map(|c| (c.name(), Kind::Calendar(c)));
        ranked
            .chain([("hclock", Kind::Hclock)])
            .chain(cores)
            .chain([("ets", Kind::Ets)])
            .chain(calendars)
            .chain([
                ("stfq", Kind::Ranked(Rank::Wfq)),
                ("cq-leaky-bucket", Kind::Calendar(CalendarKind::Policer)),
            ])
    }

    pub(super) fn from_name(name: &str) -> Option<Kind> {
        Kind::all().find(|&(n, _)| n == name).map(|(_, k)| k)
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Ranked(r) => r.name(),
            Kind::Hclock => "hclock",
            Kind::FairQueue(f) => f.name(),
            Kind::Ets => "ets",
            Kind::Calendar(c) => c.name(),
        }
    }
}

/// The names listed in an error, in the documented order.
fn names() -> String {
    let names: Vec<&str> = Kind::all()
        .map(|(n, _)| n)
        .filter(|&n| n != "cq-leaky-bucket")
        .collect();
    names.join(", ")
}

fn queue_names() -> String {
    let mut names: Vec<&str> = QueueKind::ALL.iter().map(|k| k.name()).collect();
    names.insert(0, "auto");
    names.join(", ")
}

/// The discipline kind of every node (all first: a node's settings depend on
/// its parent's discipline).
pub(super) fn kinds(index: &KeyIndex, nodes: &[NodeFile]) -> Result<Vec<Kind>, PolicyError> {
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| match &n.discipline {
            None => Ok(Kind::Ranked(Rank::Fifo)),
            Some(s) => Kind::from_name(s.get_ref()).ok_or_else(|| {
                let msg = format!(
                    "unknown discipline `{}` (expected one of {})",
                    s.get_ref(),
                    names()
                );
                at(index, s, &key(i, "discipline"), msg)
            }),
        })
        .collect()
}

/// The discipline of node `i` of kind `kind`, with its queue or calendar.
pub(super) fn compile(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
    kind: Kind,
    shape: &Shape,
) -> Result<Discipline, PolicyError> {
    placement(index, n, i, kind, shape)?;
    let queue = queue(index, n, i, kind, shape)?;
    let calendar = calendar(index, n, i, kind)?;
    Ok(match kind {
        Kind::Ranked(rank) => Discipline::Ranked { rank, queue },
        Kind::Hclock => Discipline::Hclock { queue },
        Kind::FairQueue(f) => Discipline::FairQueue(f),
        Kind::Ets => Discipline::Ets,
        Kind::Calendar(_) => Discipline::Calendar(calendar.expect("a calendar kind")),
    })
}

/// A discipline that orders units on a node that has units, and one that ranks
/// flows on a per-flow leaf.
fn placement(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
    kind: Kind,
    shape: &Shape,
) -> Result<(), PolicyError> {
    let name = n.name.get_ref();
    let is_leaf = shape.is_leaf(i);
    if is_leaf && kind == Kind::Ets {
        let s = n.discipline.as_ref().expect("ets was given");
        let msg = format!(
            "node `{name}` has no children: ets orders children by their priorities (for the flows of a per-flow leaf use drr)"
        );
        return Err(at(index, s, &key(i, "discipline"), msg));
    }
    if is_leaf && n.flows.is_none() && kind != Kind::Ranked(Rank::Fifo) {
        let s = n
            .discipline
            .as_ref()
            .expect("non-default discipline was given");
        let msg = format!(
            "node `{name}` has no children: `{}` orders children (or the flows of a per-flow leaf: add `flows = N`)",
            kind.name()
        );
        return Err(at(index, s, &key(i, "discipline"), msg));
    }
    if !is_leaf && kind == Kind::Ranked(Rank::Pfabric) {
        let s = n.discipline.as_ref().expect("pfabric was given");
        let msg = "pfabric ranks flows by their remaining packets: use it on a per-flow leaf (`flows = N`, no children)";
        return Err(at(index, s, &key(i, "discipline"), msg));
    }
    Ok(())
}

/// The queue of a node that ranks units; a queue key elsewhere is an error.
fn queue(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
    kind: Kind,
    shape: &Shape,
) -> Result<QueueChoice, PolicyError> {
    let name = n.name.get_ref();
    let ranks = !shape.is_leaf(i) || n.flows.is_some();
    let queue_keys = [
        ("queue", n.queue.as_deref().map(Spanned::span)),
        ("granularity", n.granularity.as_deref().map(Spanned::span)),
        ("buckets", n.buckets.as_deref().map(Spanned::span)),
        ("occupancy", n.occupancy.as_deref().map(Spanned::span)),
    ];
    for (k, span) in queue_keys {
        let Some(span) = span else {
            continue;
        };
        let msg = if !ranks {
            format!("node `{name}` is a FIFO leaf: it has no priority queue to configure")
        } else if let Kind::FairQueue(f) = kind {
            format!(
                "`{}` is a fair-queueing core without a configurable priority queue",
                f.name()
            )
        } else if kind == Kind::Ets {
            "`ets` keeps its levels in one word and DRR cores: it has no priority queue to configure".to_string()
        } else if let Kind::Calendar(c) = kind {
            if k == "queue"
                && n.queue
                    .as_deref()
                    .is_some_and(|q| q.get_ref() == "calendar")
            {
                continue;
            }
            format!(
                "node {name:?}: {} runs on a calendar queue: size it with `days`, not with a queue setting",
                c.name()
            )
        } else {
            continue;
        };
        return Err(index.error(span.start, &key(i, k), msg));
    }
    queue_choice(index, n, i)
}

/// The queue type and geometry keys of node `i`.
fn queue_choice(index: &KeyIndex, n: &NodeFile, i: usize) -> Result<QueueChoice, PolicyError> {
    let mut q = QueueChoice::AUTO;
    if let Some(s) = n.queue.as_deref().filter(|s| s.get_ref() != "auto") {
        q.kind = Some(s.get_ref().parse::<QueueKind>().map_err(|_| {
            let msg = format!(
                "unknown queue type `{}` (expected one of {})",
                s.get_ref(),
                queue_names()
            );
            at(index, s, &key(i, "queue"), msg)
        })?);
    }
    if let Some(g) = &n.granularity {
        let what = "granularity (ranks per bucket)";
        q.granularity = Some(node_int(index, g, i, "granularity", 1, i64::MAX, what)? as u64);
    }
    if let Some(b) = &n.buckets {
        q.buckets = Some(node_int(index, b, i, "buckets", 1, 1 << 26, "buckets")? as usize);
    }
    if let Some(o) = &n.occupancy {
        let v = *o.get_ref();
        if !(v > 0.0 && v <= 1.0) {
            let msg = format!("occupancy is a fraction in (0, 1], got {v}");
            return Err(at(index, o, &key(i, "occupancy"), msg));
        }
        q.occupancy = Some(v);
    }
    Ok(q)
}

/// The calendar parameters of node `i`, which must be those its discipline
/// reads; `None` for a discipline that is not a calendar.
fn calendar(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
    kind: Kind,
) -> Result<Option<CalendarSpec>, PolicyError> {
    let name = n.name.get_ref();
    let set = [
        ("days", n.days.is_some()),
        ("quantum", n.quantum.is_some()),
        ("burst_allowance", n.burst_allowance.is_some()),
        ("period", n.period.is_some()),
        ("rotation", n.rotation.is_some()),
        ("rate", n.rate.is_some()),
        ("bucket", n.bucket.is_some()),
    ];
    let mut set = set.into_iter().filter(|&(_, s)| s).map(|(f, _)| f);
    let Kind::Calendar(c) = kind else {
        return match set.next() {
            None => Ok(None),
            Some(field) => {
                let msg = format!(
                    "node {name:?}: `{field}` is a calendar-queue parameter, but the discipline is {}",
                    kind.name()
                );
                Err(index.at_key(&key(i, field), msg))
            }
        };
    };
    let days = days(index, n, i)?;
    let quantum = quantum(index, n, i)?;
    let rotation = rotation(index, n, i)?;
    if let Some(field) = set.find(|f| !c.reads(f)) {
        let msg = format!("node {name:?}: `{field}` does not apply to {}", c.name());
        return Err(index.at_key(&key(i, field), msg));
    }
    let size = |b: &Option<Box<Spanned<crate::units::Size>>>| b.as_ref().map(|b| b.get_ref().get());
    let period = n.period.as_deref().map(|t| t.get_ref().duration());
    let policy = match c {
        CalendarKind::Wfq => CalendarPolicy::Wfq { quantum },
        CalendarKind::WfqBurst => CalendarPolicy::WfqBurst {
            quantum,
            burst_allowance: size(&n.burst_allowance),
        },
        CalendarKind::Edf => CalendarPolicy::Edf {
            period,
            rotation: rotation.unwrap_or_default(),
        },
        CalendarKind::Policer => {
            let Some(rate) = &n.rate else {
                let msg = format!("node {name:?}: cq-policer needs a `rate`");
                return Err(index.at_key(&key(i, "name"), msg));
            };
            CalendarPolicy::Policer {
                rate: rate.get_ref().rate(),
                bucket: size(&n.bucket),
                period,
            }
        }
        CalendarKind::PfabricFair => CalendarPolicy::PfabricFair { quantum },
    };
    Ok(Some(CalendarSpec { policy, days }))
}

/// `days`: a whole number of days, or one per level.
fn days(index: &KeyIndex, n: &NodeFile, i: usize) -> Result<Option<Vec<usize>>, PolicyError> {
    let Some(d) = &n.days else {
        return Ok(None);
    };
    let bad = || {
        at(
            index,
            d,
            &key(i, "days"),
            "days is a whole number of days (`days = 1024`) or one per level, finest first (`days = [16, 8, 8]`)",
        )
    };
    let level = |v: &toml::Value| v.as_integer().filter(|&x| x > 0).map(|x| x as usize);
    Ok(Some(match d.get_ref() {
        toml::Value::Integer(_) => vec![level(d.get_ref()).ok_or_else(bad)?],
        toml::Value::Array(levels) => levels
            .iter()
            .map(level)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(bad)?,
        _ => return Err(bad()),
    }))
}

/// `quantum`, which must fit 32 bits.
fn quantum(index: &KeyIndex, n: &NodeFile, i: usize) -> Result<Option<u32>, PolicyError> {
    let Some(q) = &n.quantum else {
        return Ok(None);
    };
    let bytes = q.get_ref().get();
    let msg = || format!("quantum of {bytes} bytes is above {}", u32::MAX);
    u32::try_from(bytes)
        .map(Some)
        .map_err(|_| at(index, q, &key(i, "quantum"), msg()))
}

/// `rotation`: `"clock"` or `"on-empty"`.
fn rotation(index: &KeyIndex, n: &NodeFile, i: usize) -> Result<Option<EdfRotation>, PolicyError> {
    let Some(r) = &n.rotation else {
        return Ok(None);
    };
    EdfRotation::from_name(r.get_ref())
        .map(Some)
        .ok_or_else(|| {
            let msg = format!(
                "unknown rotation `{}` (expected \"clock\" or \"on-empty\")",
                r.get_ref()
            );
            at(index, r, &key(i, "rotation"), msg)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_the_discipline_of_that_name() {
        for (name, kind) in Kind::all() {
            let d = match kind {
                Kind::Ranked(rank) => Discipline::ranked(rank),
                Kind::Hclock => Discipline::HCLOCK,
                Kind::FairQueue(f) => Discipline::FairQueue(f),
                Kind::Ets => Discipline::Ets,
                Kind::Calendar(c) => Discipline::calendar(match c {
                    CalendarKind::Wfq => CalendarPolicy::Wfq { quantum: None },
                    CalendarKind::WfqBurst => CalendarPolicy::WfqBurst {
                        quantum: None,
                        burst_allowance: None,
                    },
                    CalendarKind::Edf => CalendarPolicy::Edf {
                        period: None,
                        rotation: EdfRotation::Clock,
                    },
                    CalendarKind::Policer => CalendarPolicy::Policer {
                        rate: eiffel_sched::Rate::from_mbps(1),
                        bucket: None,
                        period: None,
                    },
                    CalendarKind::PfabricFair => CalendarPolicy::PfabricFair { quantum: None },
                }),
            };
            assert_eq!(d.name(), kind.name(), "{name}");
            assert_eq!(Kind::from_name(name), Some(kind));
        }
        assert_eq!(
            names(),
            "fifo, strict, wfq, edf, lstf, srpt, pfabric, hclock, qfq, drr, wf2q+, ets, cq-wfq, cq-wfq-burst, cq-edf, cq-policer, cq-pfabric-fair, stfq"
        );
    }
}
