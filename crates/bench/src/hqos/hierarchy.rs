//! The hierarchy of `eiffel bench hqos`, read from a policy file shaped like
//! DPDK's `rte_sched` (port, subport, pipe profiles of 13 traffic classes and 16
//! queues), and laid out at any size for both schedulers.

use eiffel_policy::Policy;
use eiffel_sched::time::Rate;
use eiffel_sched::tree::{Discipline, NodeSpec, Rank, TreeSpec};
use eiffel_sched::ClassId;

/// Traffic classes per pipe: 12 strict-priority classes and best effort.
pub const TRAFFIC_CLASSES: usize = 13;
/// The best-effort class.
pub const BE_TC: usize = 12;
/// Queues of the best-effort class.
pub const BE_QUEUES: usize = 4;
/// Queues per pipe.
pub const QUEUES_PER_PIPE: usize = 16;

/// A rate limit: bits per second and a burst in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Bits per second.
    pub bps: u64,
    /// Bytes.
    pub burst: u64,
}

/// One pipe profile: the pipe's limit, each class's cap, the best-effort
/// queues' weights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The pipe node's name in the file.
    pub name: String,
    /// The pipe's limit.
    pub pipe: Limit,
    /// Each traffic class's cap (the best-effort class's is its node's limit).
    pub tc: [Limit; TRAFFIC_CLASSES],
    /// Weights of the best-effort queues.
    pub weights: [u32; BE_QUEUES],
}

/// The hierarchy a policy file describes.
#[derive(Clone, Debug)]
pub struct Hierarchy {
    /// The port's rate and burst (the root's limit).
    pub port: Limit,
    /// Every subport's limit.
    pub subport: Limit,
    /// Pipe profiles, in file order; pipe `p` of a subport takes profile
    /// `p % len`.
    pub profiles: Vec<Profile>,
    /// Packets each queue of a class holds.
    pub qsize: [u16; TRAFFIC_CLASSES],
    /// The file's specification (disciplines, queues, shaper, mtu).
    template: TreeSpec,
    root: usize,
    subport_node: usize,
    pipe_nodes: Vec<usize>,
}

/// A policy file unfit for the hierarchy: the file and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct ShapeError {
    /// The policy file.
    pub file: String,
    /// What is wrong.
    pub problem: ShapeProblem,
}

/// What makes a policy tree unfit for rte_sched's hierarchy; nodes by name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeProblem {
    /// The tree has no root.
    #[error("no root")]
    NoRoot,
    /// The root (the port) has no rate limit.
    #[error("the root {0:?} needs a limit: the port's rate")]
    PortLimit(String),
    /// The root has other than one child (the subport).
    #[error("the root {root:?} needs exactly one child, the subport (it has {children})")]
    Subports {
        /// The root.
        root: String,
        /// Its children.
        children: usize,
    },
    /// The subport has no rate limit.
    #[error("the subport {0:?} needs a limit")]
    SubportLimit(String),
    /// The subport has no children.
    #[error("the subport {0:?} has no pipe")]
    NoPipe(String),
    /// A pipe's queue capacities differ from the first pipe's.
    #[error("pipe {pipe:?}: queue capacities {sizes:?} differ from the first pipe's {first:?} (rte_sched sizes queues per subport)")]
    PipeSizes {
        /// The pipe.
        pipe: String,
        /// Its capacities per traffic class.
        sizes: [u16; TRAFFIC_CLASSES],
        /// The first pipe's.
        first: [u16; TRAFFIC_CLASSES],
    },
    /// A pipe has no rate limit.
    #[error("pipe {0:?} needs a limit")]
    PipeLimit(String),
    /// A pipe is not strict priority over its classes.
    #[error("pipe {0:?} must be `strict` over its traffic classes, or `ets` over its queues")]
    PipeNotStrict(String),
    /// An `ets` pipe has other than 16 children.
    #[error("pipe {pipe:?} has {children} children; an ets pipe holds rte_sched's {QUEUES_PER_PIPE} queues: one at each priority 0-11 and {BE_QUEUES} at priority 12")]
    EtsPipeQueues {
        /// The pipe.
        pipe: String,
        /// Its children.
        children: usize,
    },
    /// A pipe has other than 13 children.
    #[error("pipe {pipe:?} has {children} children; rte_sched's pipes have {TRAFFIC_CLASSES} traffic classes")]
    PipeClasses {
        /// The pipe.
        pipe: String,
        /// Its children.
        children: usize,
    },
    /// A traffic class's priority is out of range or taken.
    #[error("traffic class {0:?}: priorities of a pipe's classes are 0 to 12, each once")]
    ClassPriority(String),
    /// A traffic class's cap exceeds its pipe's limit.
    #[error("traffic class {0:?}: its cap exceeds its pipe's limit")]
    ClassCap(String),
    /// A strict-priority class is not one FIFO queue.
    #[error("traffic class {class:?} (priority {priority}) must be one FIFO queue")]
    ClassNotFifo {
        /// The class.
        class: String,
        /// Its priority.
        priority: usize,
    },
    /// The best-effort class is not four FIFO queues.
    #[error("the best-effort class {0:?} (priority 12) must have {BE_QUEUES} FIFO queues")]
    BestEffortQueues(String),
    /// The best-effort class does not share by weight.
    #[error("the best-effort class {0:?} must share by weight")]
    BestEffortNotWeighted(String),
    /// A best-effort queue's weight is outside rte_sched's WRR range.
    #[error("queue {0:?}: rte_sched's WRR weights are 1 to 255")]
    Weight(String),
    /// A class's queues differ in capacity or it is not a power of two.
    #[error("the queues of class {0:?} need one capacity, a power of two up to 32768 (rte_sched's qsize)")]
    QueueCapacity(String),
}

/// Where queue `q` of a pipe sits: traffic class and queue within the class.
#[must_use]
pub fn tc_of(q: usize) -> (usize, usize) {
    if q < BE_TC {
        (q, 0)
    } else {
        (BE_TC, q - BE_TC)
    }
}

fn limit_of(spec: &NodeSpec) -> Option<Limit> {
    spec.limit.map(|l| Limit {
        bps: l.rate.bps(),
        burst: l.burst,
    })
}

impl Hierarchy {
    /// Reads the hierarchy of `policy`: a root with a limit (the port), one child
    /// with a limit (the subport template), whose children are pipes with a
    /// limit and strict priority over 12 FIFO leaves (priorities 0-11) and one
    /// weighted node (priority 12) of 4 FIFO leaves; every leaf with a capacity
    /// that is a power of two, the same per class in every pipe.
    pub fn from_policy(policy: &Policy) -> Result<Hierarchy, ShapeError> {
        let spec = policy.spec().clone();
        let err = |problem: ShapeProblem| ShapeError {
            file: policy.file_name().to_string(),
            problem,
        };
        let kids = spec.child_lists();
        let name = |i: usize| spec.nodes[i].name.clone();
        let root = spec.root().ok_or_else(|| err(ShapeProblem::NoRoot))?;
        let port =
            limit_of(&spec.nodes[root]).ok_or_else(|| err(ShapeProblem::PortLimit(name(root))))?;
        let [subport_node] = kids[root][..] else {
            return Err(err(ShapeProblem::Subports {
                root: name(root),
                children: kids[root].len(),
            }));
        };
        let subport = limit_of(&spec.nodes[subport_node])
            .ok_or_else(|| err(ShapeProblem::SubportLimit(name(subport_node))))?;
        let pipe_nodes = kids[subport_node].clone();
        if pipe_nodes.is_empty() {
            return Err(err(ShapeProblem::NoPipe(name(subport_node))));
        }
        let mut qsize: Option<[u16; TRAFFIC_CLASSES]> = None;
        let mut profiles = Vec::new();
        for &p in &pipe_nodes {
            let (profile, sizes) = read_pipe(&spec, &kids, p).map_err(err)?;
            if let Some(q) = qsize.filter(|q| *q != sizes) {
                return Err(err(ShapeProblem::PipeSizes {
                    pipe: name(p),
                    sizes,
                    first: q,
                }));
            }
            qsize = Some(sizes);
            profiles.push(profile);
        }
        Ok(Hierarchy {
            port,
            subport,
            profiles,
            qsize: qsize.expect("at least one pipe"),
            template: spec,
            root,
            subport_node,
            pipe_nodes,
        })
    }

    /// Queue size of the throughput runs: their backlog averages one packet per
    /// queue, and rte_sched's queue arrays for 64K queues stay at 128 MiB.
    pub const LIFTED_QSIZE: u16 = 256;

    /// The same hierarchy with every rate at the port's rate, so that no limit
    /// binds and a run measures the cost of scheduling, never idle time; queues
    /// of at most [`Self::LIFTED_QSIZE`] packets.
    #[must_use]
    pub fn lifted(&self) -> Hierarchy {
        let mut h = self.clone();
        for q in &mut h.qsize {
            *q = (*q).min(Self::LIFTED_QSIZE);
        }
        let port = self.port.bps;
        h.subport.bps = port;
        for p in &mut h.profiles {
            p.pipe.bps = port;
            for tc in &mut p.tc {
                tc.bps = port;
            }
        }
        for n in &mut h.template.nodes {
            if let Some(l) = &mut n.limit {
                l.rate = Rate::from_bps(port);
            }
        }
        h
    }

    /// Queues of `subports` subports of `pipes` pipes.
    #[must_use]
    pub fn queues(subports: u32, pipes: u32) -> usize {
        subports as usize * pipes as usize * QUEUES_PER_PIPE
    }

    /// Eiffel's tree for `subports` subports of `pipes` pipes each, holding
    /// `capacity` packets, and the leaf of every queue: queue `(s * pipes + p) *
    /// 16 + q` of pipe `p` of subport `s`.
    #[must_use]
    pub fn tree_spec(&self, subports: u32, pipes: u32, capacity: u32) -> (TreeSpec, Vec<ClassId>) {
        let t = &self.template;
        let kids = t.child_lists();
        let mut spec = TreeSpec::new(capacity);
        spec.mtu = t.mtu;
        spec.shaper = t.shaper;
        let mut root = t.nodes[self.root].clone();
        root.parent = None;
        let root = spec.add(root);
        let mut leaves = Vec::with_capacity(Self::queues(subports, pipes));
        for s in 0..subports {
            let mut sub = t.nodes[self.subport_node].clone();
            sub.name = format!("s{s}");
            sub.parent = Some(root);
            let sub = spec.add(sub);
            for p in 0..pipes {
                let tp = self.pipe_nodes[p as usize % self.pipe_nodes.len()];
                let mut pipe = t.nodes[tp].clone();
                pipe.name = format!("s{s}p{p}");
                pipe.parent = Some(sub);
                let pipe = spec.add(pipe);
                let queue = self.add_pipe_queues(&mut spec, &kids, tp, pipe, &format!("s{s}p{p}"));
                leaves.extend_from_slice(&queue);
            }
        }
        (spec, leaves)
    }

    /// Adds under `pipe` (named `name`) the classes and queues of template
    /// pipe `tp` (`kids`: the template's child lists), and returns its 16
    /// queues' leaves. The best-effort class is a node of 4 queues (a
    /// `strict` pipe) or the 4 queues at priority 12 themselves (`ets`).
    fn add_pipe_queues(
        &self,
        spec: &mut TreeSpec,
        kids: &[Vec<usize>],
        tp: usize,
        pipe: usize,
        name: &str,
    ) -> [ClassId; QUEUES_PER_PIPE] {
        let t = &self.template;
        let mut queue = [0 as ClassId; QUEUES_PER_PIPE];
        let mut best_effort = 0;
        let add = |spec: &mut TreeSpec, node: usize, name: String, parent: usize, tc: usize| {
            let mut n = t.nodes[node].clone();
            n.name = name;
            n.parent = Some(parent);
            n.capacity = Some(u32::from(self.qsize[tc]));
            spec.add(n) as ClassId
        };
        for &c in &kids[tp] {
            let prio = t.nodes[c].priority as usize;
            if prio < BE_TC {
                queue[prio] = add(spec, c, format!("{name}tc{prio}"), pipe, prio);
                continue;
            }
            let members = &kids[c];
            if members.is_empty() {
                queue[BE_TC + best_effort] =
                    add(spec, c, format!("{name}be{best_effort}"), pipe, BE_TC);
                best_effort += 1;
                continue;
            }
            let mut class = t.nodes[c].clone();
            class.name = format!("{name}tc{prio}");
            class.parent = Some(pipe);
            let class = spec.add(class);
            for (k, &l) in members.iter().enumerate() {
                queue[BE_TC + k] = add(spec, l, format!("{name}be{k}"), class, BE_TC);
            }
        }
        queue
    }

    /// The hierarchy's byte rate (bits per second / 8) of the port.
    #[must_use]
    pub fn port_bytes_per_sec(&self) -> u64 {
        self.port.bps / 8
    }

    /// The file's largest packet.
    #[must_use]
    pub fn mtu(&self) -> u32 {
        self.template.mtu
    }
}

/// The weights of best-effort class `c`'s four FIFO queues.
fn read_best_effort(
    spec: &TreeSpec,
    kids: &[Vec<usize>],
    c: usize,
) -> Result<[u32; BE_QUEUES], ShapeProblem> {
    let class = &spec.nodes[c];
    if kids[c].len() != BE_QUEUES || kids[c].iter().any(|&l| !kids[l].is_empty()) {
        return Err(ShapeProblem::BestEffortQueues(class.name.clone()));
    }
    if !matches!(
        class.discipline,
        Discipline::FairQueue(_)
            | Discipline::Ranked {
                rank: Rank::Wfq,
                ..
            }
    ) {
        return Err(ShapeProblem::BestEffortNotWeighted(class.name.clone()));
    }
    queue_weights(spec, &kids[c])
}

/// The weights of the four best-effort queues `queues`, in rte_sched's WRR
/// range.
fn queue_weights(spec: &TreeSpec, queues: &[usize]) -> Result<[u32; BE_QUEUES], ShapeProblem> {
    let mut weights = [0u32; BE_QUEUES];
    for (k, &l) in queues.iter().enumerate() {
        weights[k] = spec.nodes[l].weight;
        if !(1..=255).contains(&weights[k]) {
            return Err(ShapeProblem::Weight(spec.nodes[l].name.clone()));
        }
    }
    Ok(weights)
}

/// The one capacity of class `name`'s queues `leaves`: rte_sched's qsize.
fn class_qsize(spec: &TreeSpec, name: &str, leaves: &[usize]) -> Result<u16, ShapeProblem> {
    let caps: Vec<u32> = leaves
        .iter()
        .map(|&l| spec.nodes[l].capacity.unwrap_or(0))
        .collect();
    let cap = caps[0];
    if caps.iter().any(|&x| x != cap) || !cap.is_power_of_two() || cap > 32_768 {
        return Err(ShapeProblem::QueueCapacity(name.to_string()));
    }
    Ok(cap as u16)
}

/// Reads pipe node `p`: its profile and its classes' queue capacities. A
/// `strict` pipe has 13 classes, the last a weighted node of 4 queues; an
/// `ets` pipe has the 16 queues as its children, the 4 best-effort ones
/// sharing priority 12 by weight.
fn read_pipe(
    spec: &TreeSpec,
    kids: &[Vec<usize>],
    p: usize,
) -> Result<(Profile, [u16; TRAFFIC_CLASSES]), ShapeProblem> {
    let node = &spec.nodes[p];
    let name = &node.name;
    let pipe = limit_of(node).ok_or_else(|| ShapeProblem::PipeLimit(name.clone()))?;
    match node.discipline {
        Discipline::Ranked {
            rank: Rank::Strict, ..
        } => read_strict_pipe(spec, kids, p, pipe),
        Discipline::Ets => read_ets_pipe(spec, kids, p, pipe),
        _ => Err(ShapeProblem::PipeNotStrict(name.clone())),
    }
}

/// A class's cap, at most its pipe's limit `pipe`: its own limit, or the
/// pipe's where it has none.
fn class_cap(class: &NodeSpec, pipe: Limit) -> Result<Limit, ShapeProblem> {
    let cap = limit_of(class).unwrap_or(pipe);
    if cap.bps > pipe.bps {
        return Err(ShapeProblem::ClassCap(class.name.clone()));
    }
    Ok(cap)
}

/// An `ets` pipe's 16 FIFO queues: one at each priority below 12, four at 12.
fn read_ets_pipe(
    spec: &TreeSpec,
    kids: &[Vec<usize>],
    p: usize,
    pipe: Limit,
) -> Result<(Profile, [u16; TRAFFIC_CLASSES]), ShapeProblem> {
    let name = &spec.nodes[p].name;
    if kids[p].len() != QUEUES_PER_PIPE {
        return Err(ShapeProblem::EtsPipeQueues {
            pipe: name.clone(),
            children: kids[p].len(),
        });
    }
    let mut tc = [pipe; TRAFFIC_CLASSES];
    let mut qsize = [0u16; TRAFFIC_CLASSES];
    let mut best_effort = Vec::with_capacity(BE_QUEUES);
    let mut seen = [false; BE_TC];
    for &c in &kids[p] {
        let class = &spec.nodes[c];
        let prio = class.priority as usize;
        if !kids[c].is_empty() {
            return Err(ShapeProblem::ClassNotFifo {
                class: class.name.clone(),
                priority: prio,
            });
        }
        if prio == BE_TC {
            best_effort.push(c);
            continue;
        }
        if prio > BE_TC || std::mem::replace(&mut seen[prio], true) {
            return Err(ShapeProblem::ClassPriority(class.name.clone()));
        }
        tc[prio] = class_cap(class, pipe)?;
        qsize[prio] = class_qsize(spec, &class.name, &[c])?;
    }
    if best_effort.len() != BE_QUEUES {
        return Err(ShapeProblem::EtsPipeQueues {
            pipe: name.clone(),
            children: kids[p].len(),
        });
    }
    let weights = queue_weights(spec, &best_effort)?;
    qsize[BE_TC] = class_qsize(spec, name, &best_effort)?;
    let profile = Profile {
        name: name.clone(),
        pipe,
        tc,
        weights,
    };
    Ok((profile, qsize))
}

/// A `strict` pipe's 13 classes: FIFO queues at priorities 0-11 and a
/// weighted node of 4 FIFO queues at 12.
fn read_strict_pipe(
    spec: &TreeSpec,
    kids: &[Vec<usize>],
    p: usize,
    pipe: Limit,
) -> Result<(Profile, [u16; TRAFFIC_CLASSES]), ShapeProblem> {
    let name = &spec.nodes[p].name;
    if kids[p].len() != TRAFFIC_CLASSES {
        return Err(ShapeProblem::PipeClasses {
            pipe: name.clone(),
            children: kids[p].len(),
        });
    }
    let no_cap = pipe;
    let mut tc = [no_cap; TRAFFIC_CLASSES];
    let mut qsize = [0u16; TRAFFIC_CLASSES];
    let mut seen = [false; TRAFFIC_CLASSES];
    let mut weights = [0u32; BE_QUEUES];
    for &c in &kids[p] {
        let class = &spec.nodes[c];
        let prio = class.priority as usize;
        if prio >= TRAFFIC_CLASSES || seen[prio] {
            return Err(ShapeProblem::ClassPriority(class.name.clone()));
        }
        seen[prio] = true;
        tc[prio] = class_cap(class, pipe)?;
        let leaves: Vec<usize> = if prio < BE_TC {
            if !kids[c].is_empty() {
                return Err(ShapeProblem::ClassNotFifo {
                    class: class.name.clone(),
                    priority: prio,
                });
            }
            vec![c]
        } else {
            weights = read_best_effort(spec, kids, c)?;
            kids[c].clone()
        };
        qsize[prio] = class_qsize(spec, &class.name, &leaves)?;
    }
    let profile = Profile {
        name: name.clone(),
        pipe,
        tc,
        weights,
    };
    Ok((profile, qsize))
}
