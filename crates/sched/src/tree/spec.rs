//! The in-memory description of a policy tree: what a policy file compiles to and
//! what a Rust user can build directly. [`TreeSpec::validate`] checks it and
//! [`PolicyTree::new`](super::PolicyTree::new) instantiates it.

use eiffel_queue::QueueKind;

use crate::scheduler::ConfigError;

/// Bits per second.
pub type Bps = u64;

/// A rate limit with a burst allowance, enforced by the tree's one shaper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Long-run rate in bits per second (at least 1).
    pub rate: Bps,
    /// Bytes that may leave back to back after an idle period (at least one
    /// packet's worth is always allowed).
    pub burst: u64,
}

/// How a node orders its units (children, or flows in a per-flow leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Discipline {
    /// Arrival order of each unit's next packet.
    Fifo,
    /// Strict priority: a child's `priority` (0 first); a flow's head `rank`.
    Strict,
    /// Start-time fair queueing with weights (WFQ by virtual start times).
    Wfq,
    /// Earliest deadline first, by each unit's next packet's `deadline`.
    Edf,
    /// Least slack time first: next packet's `arrival + rank` (slack in ns).
    Lstf,
    /// Shortest remaining processing time: next packet's `remaining`.
    Srpt,
    /// pFabric: a flow's rank is the smallest `remaining` among its queued packets.
    Pfabric,
    /// hClock: reservations first (by reservation tags), then shares.
    Hclock,
    /// Quick Fair Queueing over the node's units.
    Qfq,
    /// Deficit round robin over the node's units.
    Drr,
    /// Exact WF2Q+ over the node's units.
    Wf2q,
}

impl Discipline {
    /// Every discipline.
    pub const ALL: [Discipline; 11] = [
        Discipline::Fifo,
        Discipline::Strict,
        Discipline::Wfq,
        Discipline::Edf,
        Discipline::Lstf,
        Discipline::Srpt,
        Discipline::Pfabric,
        Discipline::Hclock,
        Discipline::Qfq,
        Discipline::Drr,
        Discipline::Wf2q,
    ];

    /// The name used in policy files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Discipline::Fifo => "fifo",
            Discipline::Strict => "strict",
            Discipline::Wfq => "wfq",
            Discipline::Edf => "edf",
            Discipline::Lstf => "lstf",
            Discipline::Srpt => "srpt",
            Discipline::Pfabric => "pfabric",
            Discipline::Hclock => "hclock",
            Discipline::Qfq => "qfq",
            Discipline::Drr => "drr",
            Discipline::Wf2q => "wf2q+",
        }
    }

    /// Parses a policy-file name (`stfq` is accepted for `wfq`).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        if name == "stfq" {
            return Some(Discipline::Wfq);
        }
        Discipline::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Whether the discipline ranks units in one integer priority queue (as
    /// opposed to a fair-queueing core or hClock's two queues).
    #[must_use]
    pub const fn is_ranked(self) -> bool {
        !matches!(self, Discipline::Qfq | Discipline::Drr | Discipline::Wf2q)
    }

    /// Whether its ranks move forward with time or virtual time (a moving range),
    /// as opposed to a fixed range of levels.
    #[must_use]
    pub const fn moving_range(self) -> bool {
        !matches!(
            self,
            Discipline::Strict | Discipline::Srpt | Discipline::Pfabric
        )
    }
}

/// Which integer priority queue a ranked node uses, and its geometry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueChoice {
    /// The queue type; `None` chooses by the Eiffel paper's Fig. 16 decision tree.
    pub kind: Option<QueueKind>,
    /// Ranks per bucket; `None` derives it from the discipline and the tree.
    pub granularity: Option<u64>,
    /// Buckets (per half for circular queues); `None` derives it.
    pub buckets: Option<usize>,
    /// Expected fraction of buckets occupied (for the automatic choice).
    pub occupancy: Option<f64>,
}

impl QueueChoice {
    /// Everything automatic.
    pub const AUTO: QueueChoice = QueueChoice {
        kind: None,
        granularity: None,
        buckets: None,
        occupancy: None,
    };
}

impl Default for QueueChoice {
    fn default() -> Self {
        QueueChoice::AUTO
    }
}

/// A leaf that keeps one FIFO per flow and orders the flows (Eiffel's per-flow
/// primitive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerFlow {
    /// Flow ids accepted: `0..max_flows` (a packet's `flow` indexes the table).
    pub max_flows: u32,
    /// A rate limit applied to every flow separately (per-flow pacing).
    pub flow_limit: Option<RateLimit>,
    /// Most packets one flow may queue.
    pub flow_queue_limit: Option<u32>,
}

/// One node of the tree.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    /// Unique name.
    pub name: String,
    /// Index of the parent in [`TreeSpec::nodes`]; `None` for the root.
    pub parent: Option<usize>,
    /// How the node orders its units. Leaves without `per_flow` hold one FIFO and
    /// ignore it.
    pub discipline: Discipline,
    /// Share at a weighted parent (wfq, qfq, drr, wf2q+, hclock); at least 1.
    pub weight: u32,
    /// Level at a strict-priority parent (0 is served first).
    pub priority: u32,
    /// Guaranteed rate at an hClock parent.
    pub reservation: Option<Bps>,
    /// Rate limit on this node's output.
    pub limit: Option<RateLimit>,
    /// Queue type and geometry for ranked disciplines.
    pub queue: QueueChoice,
    /// Per-flow leaf settings.
    pub per_flow: Option<PerFlow>,
    /// Most packets queued at this leaf (all its flows together).
    pub capacity: Option<u32>,
}

impl NodeSpec {
    /// A node with defaults: FIFO, weight 1, priority 0, no limit, automatic queue.
    #[must_use]
    pub fn new(name: impl Into<String>, parent: Option<usize>) -> Self {
        NodeSpec {
            name: name.into(),
            parent,
            discipline: Discipline::Fifo,
            weight: 1,
            priority: 0,
            reservation: None,
            limit: None,
            queue: QueueChoice::AUTO,
            per_flow: None,
            capacity: None,
        }
    }
}

/// The shaper's geometry: a timing wheel of `slots` slots covering `horizon` ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShaperSpec {
    /// Nanoseconds covered ahead of now.
    pub horizon: u64,
    /// Number of slots; the granularity is `horizon / slots`.
    pub slots: usize,
}

impl Default for ShaperSpec {
    fn default() -> Self {
        // 1 s in 2^16 slots of about 15 us: finer than one 1500-byte packet at
        // 1 Gbit/s, 512 KiB of slot lists.
        ShaperSpec {
            horizon: 1_000_000_000,
            slots: 1 << 16,
        }
    }
}

/// A whole policy: nodes (the root first or anywhere, exactly one without a
/// parent), the packet capacity, the link MTU and the shaper.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeSpec {
    /// The nodes.
    pub nodes: Vec<NodeSpec>,
    /// Packets the tree can hold in total (one preallocated pool).
    pub capacity: u32,
    /// Largest packet accepted, in bytes.
    pub mtu: u32,
    /// The shaper's geometry.
    pub shaper: ShaperSpec,
}

/// Largest weight accepted (matches the fair-queueing cores' range).
pub const MAX_WEIGHT: u32 = 1 << 16;

impl TreeSpec {
    /// An empty spec with the given capacity, 1500-byte MTU and default shaper.
    #[must_use]
    pub fn new(capacity: u32) -> Self {
        TreeSpec {
            nodes: Vec::new(),
            capacity,
            mtu: 1500,
            shaper: ShaperSpec::default(),
        }
    }

    /// Adds a node and returns its index.
    pub fn add(&mut self, node: NodeSpec) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Index of the node called `name`.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Children of node `i`, in declaration order.
    pub fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.parent == Some(i))
            .map(|(c, _)| c)
    }

    /// Whether node `i` has no children.
    #[must_use]
    pub fn is_leaf(&self, i: usize) -> bool {
        self.children(i).next().is_none()
    }

    /// The root's index (validated specs have exactly one).
    #[must_use]
    pub fn root(&self) -> Option<usize> {
        self.nodes.iter().position(|n| n.parent.is_none())
    }

    /// Checks the structural rules: one root, no cycles, unique names, parents in
    /// range, positive weights and rates, per-flow settings only on leaves, sensible
    /// capacities.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |msg: String| Err(ConfigError::Invalid(msg));
        if self.nodes.is_empty() {
            return invalid("a policy needs at least one node".into());
        }
        if self.capacity == 0 {
            return invalid("capacity must be at least 1 packet".into());
        }
        if self.mtu == 0 {
            return invalid("mtu must be at least 1 byte".into());
        }
        if self.shaper.slots == 0 || self.shaper.horizon < self.shaper.slots as u64 {
            return invalid(format!(
                "shaper: {} slots cannot cover a horizon of {} ns (at least 1 ns per slot)",
                self.shaper.slots, self.shaper.horizon
            ));
        }
        let roots: Vec<&str> = self
            .nodes
            .iter()
            .filter(|n| n.parent.is_none())
            .map(|n| n.name.as_str())
            .collect();
        if roots.len() != 1 {
            return invalid(format!(
                "a policy needs exactly one root (a node without parent), found {}: {roots:?}",
                roots.len()
            ));
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if n.name.is_empty() {
                return invalid(format!("node {i} has an empty name"));
            }
            if self.nodes[..i].iter().any(|m| m.name == n.name) {
                return invalid(format!("duplicate node name {:?}", n.name));
            }
            if let Some(p) = n.parent {
                if p >= self.nodes.len() {
                    return invalid(format!("node {:?}: parent index {p} out of range", n.name));
                }
            }
            if n.weight == 0 || n.weight > MAX_WEIGHT {
                return invalid(format!(
                    "node {:?}: weight {} outside 1..={MAX_WEIGHT}",
                    n.name, n.weight
                ));
            }
            for (what, l) in [
                ("limit", n.limit),
                ("flow limit", n.per_flow.and_then(|f| f.flow_limit)),
            ] {
                if let Some(l) = l {
                    if l.rate == 0 {
                        return invalid(format!("node {:?}: {what} rate must be positive", n.name));
                    }
                }
            }
            if n.reservation == Some(0) {
                return invalid(format!("node {:?}: reservation must be positive", n.name));
            }
            if let Some(pf) = n.per_flow {
                if !self.is_leaf(i) {
                    return invalid(format!(
                        "node {:?}: per-flow settings belong on a leaf, but it has children",
                        n.name
                    ));
                }
                if pf.max_flows == 0 {
                    return invalid(format!("node {:?}: max_flows must be at least 1", n.name));
                }
            }
            if n.capacity == Some(0) {
                return invalid(format!(
                    "node {:?}: capacity must be at least 1 packet",
                    n.name
                ));
            }
            if !self.is_leaf(i) && n.discipline == Discipline::Pfabric {
                return invalid(format!(
                    "node {:?}: pfabric ranks flows: use it on a per-flow leaf",
                    n.name
                ));
            }
        }
        // Cycles: walking up from any node must reach the root within n steps.
        for (i, n) in self.nodes.iter().enumerate() {
            let mut cur = n.parent;
            let mut steps = 0;
            while let Some(p) = cur {
                steps += 1;
                if steps > self.nodes.len() {
                    return invalid(format!(
                        "node {:?}: its parents form a cycle",
                        self.nodes[i].name
                    ));
                }
                cur = self.nodes[p].parent;
            }
        }
        Ok(())
    }
}
