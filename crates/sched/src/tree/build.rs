//! Building a [`PolicyTree`] from a validated [`TreeSpec`]: each node's kind and
//! discipline with its queue plans, and the one shaper sized for every unit that
//! can be held. Everything is allocated here.

use super::cq::CalendarSched;
use super::discipline::{Discipline, QueueChoice, Rank};
use super::ets::Ets;
use super::levels::Levels;
use super::minq::{MinDeque, MinPool};
use super::node::{Flow, FlowLeaf, Kind, Node, Sent, NONE};
use super::program::{NodePacer, Pacer, ProgramTxn};
use super::sched::{Core, Hclock, NodeSched, Ranked};
use super::select::{plan, QueueNeeds, QueuePlan, RankKind};
use super::shaper::{Gcra, Shaper};
use super::spec::TreeSpec;
use super::txn::{Builtin, Unit};
use super::PolicyTree;
use crate::packet::Nanos;
use crate::pool::{Fifo as List, PacketPool};
use crate::scheduler::{Backlog, ConfigError, Counters, DropCounts};
use eiffel_queue::QueueKind;

/// Per-node units for a node's discipline: children with their configured weight,
/// priority and reservation, or `n` flows of weight 1.
fn child_units(spec: &TreeSpec, children: &[usize]) -> Vec<Unit> {
    children
        .iter()
        .map(|&c| {
            let n = &spec.nodes[c];
            Unit {
                weight: n.weight,
                priority: n.priority,
                reservation: n.reservation.unwrap_or_default(),
                ..Unit::default()
            }
        })
        .collect()
}

fn builtin(rank: Rank) -> Builtin {
    match rank {
        Rank::Fifo => Builtin::Fifo,
        Rank::Strict => Builtin::Strict,
        Rank::Wfq => Builtin::Wfq { vtime: 0 },
        Rank::Edf => Builtin::Edf,
        Rank::Lstf => Builtin::Lstf,
        Rank::Srpt => Builtin::Srpt,
        Rank::Pfabric => Builtin::Pfabric,
    }
}

/// Builds the discipline of node `i` over `units`; returns it with its queue
/// plans. `slack` is the shaper's precision.
fn build_sched(
    spec: &TreeSpec,
    i: usize,
    units: Vec<Unit>,
    per_flow: bool,
    slack: Nanos,
) -> Result<(NodeSched, Vec<QueuePlan>), ConfigError> {
    let node = &spec.nodes[i];
    let needs = |ranks| QueueNeeds {
        ranks,
        time_ranks: false,
        units: units.len(),
        mtu: spec.mtu,
        min_weight: units.iter().map(|u| u.weight).min().unwrap_or(1),
        priority_levels: units
            .iter()
            .map(|u| u.priority as usize + 1)
            .max()
            .unwrap_or(1),
        per_flow,
    };
    match &node.discipline {
        Discipline::Hclock { queue } => {
            // The policy's queue type applies to both queues; the reservation
            // queue's ranks are times, so its geometry stays its own.
            let rplan = plan(
                &QueueChoice {
                    kind: queue.kind,
                    ..QueueChoice::AUTO
                },
                &QueueNeeds {
                    time_ranks: true,
                    ..needs(RankKind::Hclock)
                },
            );
            let pplan = plan(queue, &needs(RankKind::Hclock));
            let sched = NodeSched::Hclock(Box::new(Hclock::new(&rplan, &pplan, units, spec.mtu)?));
            Ok((sched, vec![rplan, pplan]))
        }
        Discipline::FairQueue(f) => {
            let core = Core::new(*f, &units, spec.mtu)?;
            Ok((NodeSched::Core(core, units), Vec::new()))
        }
        Discipline::Ets => Ok((NodeSched::Ets(Ets::new(units, spec.mtu)?), Vec::new())),
        Discipline::Calendar(_) => {
            let (sched, p) = CalendarSched::new(spec, i, units, per_flow, slack)?;
            Ok((NodeSched::Calendar(Box::new(sched)), vec![p]))
        }
        Discipline::Ranked { rank, queue } => {
            let p = plan(queue, &needs(RankKind::Rank(*rank)));
            if *rank == Rank::Strict && !per_flow && p.kind == QueueKind::Ffs {
                // The same order in one word, when no two children tie.
                if let Some(levels) = Levels::new(units.clone()) {
                    return Ok((NodeSched::Levels(levels), vec![p]));
                }
            }
            let sched =
                NodeSched::Ranked(Box::new(Ranked::new(&p, units, builtin(*rank), per_flow)?));
            Ok((sched, vec![p]))
        }
        Discipline::Program { program, queue } => {
            let p = plan(queue, &needs(RankKind::Program));
            let txn = Builtin::Program(Box::new(ProgramTxn::new(program.clone(), units.len())));
            let sched = NodeSched::Ranked(Box::new(Ranked::new(&p, units, txn, per_flow)?));
            Ok((sched, vec![p]))
        }
    }
}

/// Units the shaper may hold: every unit that can be held is filed at most
/// once, limited nodes and policers (once, even with both) and paced flows.
fn shaper_capacity(spec: &TreeSpec) -> usize {
    spec.nodes
        .iter()
        .map(|ns| {
            let held =
                ns.limit.is_some() || ns.release.is_some() || !ns.discipline.is_work_conserving();
            let flows = ns
                .per_flow
                .filter(|pf| pf.flow_limit.is_some() || ns.flow_release.is_some())
                .map_or(0, |pf| pf.max_flows as usize);
            usize::from(held) + flows
        })
        .sum()
}

/// Each node's unit index at its parent.
fn slots(kids: &[Vec<usize>]) -> Vec<u32> {
    let mut slots = vec![0u32; kids.len()];
    for list in kids {
        for (slot, &c) in list.iter().enumerate() {
            slots[c] = slot as u32;
        }
    }
    slots
}

/// The per-flow leaf node `i` is, ordered by its discipline.
fn flow_leaf(
    spec: &TreeSpec,
    i: usize,
    slack: Nanos,
) -> Result<(Kind, Vec<QueuePlan>), ConfigError> {
    let ns = &spec.nodes[i];
    let pf = ns.per_flow.expect("a per-flow leaf");
    let unit = Unit {
        weight: 1,
        ..Unit::default()
    };
    let units = vec![unit; pf.max_flows as usize];
    let (sched, plans) = build_sched(spec, i, units, true, slack)?;
    let flows = (0..pf.max_flows)
        .map(|_| Flow {
            fifo: List::new(),
            gcra: pf.flow_limit.map(|l| Gcra::new(l, spec.mtu)),
            throttled: false,
            min: MinDeque::default(),
            due: 0,
        })
        .collect();
    let minima = ns
        .discipline
        .tracks_min_remaining()
        .then(|| MinPool::new(spec.capacity as usize));
    let leaf = FlowLeaf {
        flows,
        sched,
        flow_queue_limit: pf.flow_queue_limit.unwrap_or(u32::MAX),
        minima,
        pacer: (ns.flow_release.as_ref()).map(|p| Pacer::new(p.clone(), pf.max_flows as usize)),
    };
    Ok((Kind::Flows(Box::new(leaf)), plans))
}

/// The kind of node `i` (internal, per-flow leaf or FIFO leaf), with its queue
/// plans.
fn kind(
    spec: &TreeSpec,
    i: usize,
    children: &[usize],
    slack: Nanos,
) -> Result<(Kind, Vec<QueuePlan>), ConfigError> {
    if !children.is_empty() {
        let units = child_units(spec, children);
        let (sched, plans) = build_sched(spec, i, units, false, slack)?;
        let kind = Kind::Internal {
            children: children.iter().map(|&c| c as u32).collect(),
            sched: Box::new(sched),
        };
        Ok((kind, plans))
    } else if spec.nodes[i].per_flow.is_some() {
        flow_leaf(spec, i, slack)
    } else {
        Ok((Kind::Leaf { fifo: List::new() }, Vec::new()))
    }
}

impl PolicyTree {
    /// Instantiates a validated copy of `spec`. Everything is allocated here.
    ///
    /// # Errors
    /// A specification [`TreeSpec::validate`] refuses, or a node whose queue or
    /// core refuses its configuration (named by [`ConfigError::Node`]).
    pub fn new(spec: TreeSpec) -> Result<Self, ConfigError> {
        spec.validate()?;
        let root = spec.root().expect("validated") as u32;
        let shaper = Shaper::new(spec.shaper, shaper_capacity(&spec))?;
        let slack = shaper.granularity();
        let kids = spec.child_lists();
        let slots = slots(&kids);
        let mut nodes = Vec::with_capacity(spec.nodes.len());
        let mut plans = Vec::with_capacity(spec.nodes.len());
        for (i, ns) in spec.nodes.iter().enumerate() {
            let (kind, node_plans) =
                kind(&spec, i, &kids[i], slack).map_err(|e| e.in_node(&ns.name))?;
            nodes.push(Node {
                parent: ns.parent.map_or(NONE, |p| p as u32),
                slot: slots[i],
                capacity: ns.capacity.unwrap_or(u32::MAX),
                active: false,
                throttled: false,
                limited: ns.limit.is_some(),
                holds: !ns.discipline.is_work_conserving() || ns.release.is_some(),
                backlog: Backlog::default(),
                kind,
                limit: ns.limit.map_or(Gcra::UNUSED, |l| Gcra::new(l, spec.mtu)),
                sent: Sent::default(),
            });
            plans.push(node_plans);
        }
        let policed = spec
            .nodes
            .iter()
            .any(|ns| !ns.discipline.is_work_conserving());
        let mut tree = PolicyTree {
            pool: PacketPool::with_capacity(spec.capacity as usize),
            slack,
            policed,
            quiet: Vec::new(),
            pure: Vec::new(),
            ahead: NONE,
            prefetching: super::burst::prefetches(spec.nodes.len()),
            run: super::run::Run::NONE,
            run_tops: Vec::new(),
            dequeued_at: None,
            shaper,
            nodes: super::nodes::Nodes::new(nodes),
            plans,
            root,
            counters: Counters::default(),
            backlog: Backlog::default(),
            drops: vec![DropCounts::default(); spec.nodes.len()],
            filed: vec![None; spec.nodes.len()],
            paced: spec
                .nodes
                .iter()
                .map(|ns| {
                    ns.release
                        .as_ref()
                        .map(|p| Box::new(NodePacer::new(p.clone())))
                })
                .collect(),
            spec,
        };
        tree.quiet = tree.quiet_nodes();
        tree.pure = tree.pure_nodes();
        tree.run_tops = tree.run_tops();
        Ok(tree)
    }
}
