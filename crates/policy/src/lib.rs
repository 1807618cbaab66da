//! Eiffel policy files: a scheduling policy written as a TOML tree, compiled into
//! the [`PolicyTree`] of `eiffel-sched` and a classifier of `eiffel-classify`, and
//! workload files to run it against ([`run()`](mod@run) hands both to
//! `eiffel-sim`'s engine, which emulates the link).
//!
//! # Policy files
//! ```toml
//! capacity = 100000            # packets the whole tree holds (default 65536)
//! mtu = "1500B"                # largest packet (default 1500 B)
//!
//! [shaper]                     # the ONE shaper of the tree: a timing wheel
//! horizon = "100ms"            # time covered ahead of now (default 1 s)
//! slots = 100000               # precision = horizon / slots (default 65536)
//!
//! [[node]]                     # the root: the node without `parent`
//! name = "root"
//! discipline = "wfq"           # how it orders its children
//! limit = "50Mbit"             # rate limit on its output...
//! burst = "3000B"              # ...with this burst (default one mtu)
//!
//! [[node]]
//! name = "left"
//! parent = "root"
//! weight = 3                   # share at a weighted parent
//!
//! [[node]]
//! name = "right"
//! parent = "root"
//! discipline = "wfq"
//! limit = "10Mbit"
//!
//! [[node]]
//! name = "flows"
//! parent = "right"
//! discipline = "pfabric"       # a per-flow leaf: one FIFO per flow, flows ranked
//! flows = 1024                 # flow ids 0..1024
//!
//! [classify]                   # which packets go to which leaf
//! default = "left"
//! [[classify.rule]]
//! leaf = "flows"
//! class = 1                    # workload class (or `flow` ids, or header fields)
//! ```
//!
//! ## Node keys
//! | key | value | meaning |
//! |---|---|---|
//! | `name` | string, unique | the node's name (leaves are addressed by it) |
//! | `parent` | a node name | absent for the root, present for every other node |
//! | `discipline` | `fifo` (default), `strict`, `wfq` (= `stfq`), `edf`, `lstf`, `srpt`, `pfabric`, `hclock`, `qfq`, `drr`, `wf2q+`, and the calendar-queue policies `cq-wfq`, `cq-wfq-burst`, `cq-edf`, `cq-policer` (= `cq-leaky-bucket`), `cq-pfabric-fair` | how the node orders its children, or a per-flow leaf its flows |
//! | `weight` | integer 1..=65536 (default 1) | share at a weighted parent (`wfq`, `qfq`, `drr`, `wf2q+`, `hclock`) |
//! | `priority` | integer 0..=63 (default 0) | level at a `strict` parent, 0 served first |
//! | `reservation` | rate | guaranteed rate at an `hclock` parent: a floor, not an addition (each backlogged child gets `clamp(weight * x, reservation, limit)`, as in mClock) |
//! | `limit`, `burst` | rate, size | rate limit on the node's output, enforced by the shaper (burst default: one mtu) |
//! | `capacity` | integer | most packets queued at this leaf |
//! | `queue` | `auto` (default), `ffs`, `hffs`, `cffs`, `gradient`, `approx_gradient`, `circular_approx_gradient`, `bucket_heap`, `binary_heap`, `calendar` | the node's integer priority queue; `auto` follows the Eiffel paper's Fig. 16 decision tree |
//! | `granularity`, `buckets`, `occupancy` | integers, a fraction | the queue's geometry and the expected occupancy the automatic choice uses |
//! | `flows` | integer | makes a leaf per-flow: flow ids `0..flows`, each with its own FIFO |
//! | `flow_limit`, `flow_burst` | rate, size | pacing applied to every flow of a per-flow leaf separately |
//! | `flow_queue` | integer | most packets one flow may queue |
//! | `days` | integer, or a list of integers finest first | `cq-*`: days of the calendar, or of each level of a hierarchical one (`[16, 8, 8]`) |
//! | `quantum` | size | `cq-wfq`, `cq-wfq-burst`: bytes per round at weight 1 (the paper's BpR); `cq-pfabric-fair`: remaining bytes of the current day |
//! | `burst_allowance` | size | `cq-wfq-burst`: bytes a new or returning unit may send ahead of its share |
//! | `period` | duration | `cq-edf`, `cq-policer`: the length of a day |
//! | `rotation` | `"clock"` (default) or `"on-empty"` | `cq-edf`: head follows the clock, or the paper's Fig. 3 rotation with skew correction |
//! | `rate`, `bucket` | rate, size | `cq-policer`: each unit's rate and bucket at weight 1 (scaled by weight); packets beyond the bucket are dropped as `policer` |
//! | `flows` on a node with children | integer | flows that hold sub-policies: the node orders N flows by its discipline and each flow holds its own copy of the subtree below (nodes `name[f]`); a packet reaches the copy of its flow id mod N (`flow_limit`, `flow_burst` pace each copy) |
//! | `flow_discipline` | `fifo` (default), `strict`, `wfq`, `edf`, `lstf`, `srpt`, `qfq`, `drr`, `wf2q+` | with `flows` on a node with children: how each flow's copy orders its children |
//! | `rank` | string: a rank expression | instead of `discipline`: the rank of each child (or flow of a per-flow leaf), computed when it becomes backlogged (and again on arrivals if it reads the packet, the head, `now` or `min_remaining`); the queue is an exact `binary_heap` unless `queue` names one |
//! | `rank_on_dequeue` | string: a rank expression | with `rank`: run after a unit sends a packet, its value the unit's new rank (default: `rank` on the unit's next packet) |
//! | `state` | inline table of names and integers >= 0 | with `rank`: per-unit state variables and their initial values, e.g. `{ start = 0, finish = 0 }` |
//! | `node_state` | inline table of names and integers >= 0 | with `rank`: per-node state variables |
//! | `constants` | inline table of names and integers >= 0 | with `rank` or `release`: named values, folded into the programs at load |
//! | `release` | string: an expression | per-flow leaves: the time (ns) a flow's next packet may leave, computed when a packet arrives into an empty flow; the tree's one shaper holds the flow until then, and the leaf's discipline orders the flows that may send |
//! | `release_on_dequeue` | string: an expression | with `release`: run after each send, its value the next packet's release time (default: `release` on the next packet) |
//! | `release_state` | inline table of names and integers >= 0 | with `release`: per-flow state variables of the release programs |
//!
//! ## Rank expressions
//! Statements separated by `;`, each an expression or an assignment `name =
//! expression` to a state variable; the last one's value is the rank (lower
//! leaves first). Operators, loosest first: `<` `<=` `>` `>=` `==` `!=` (0 or
//! 1), `+` `-`, `*` `/` `%`; parentheses; `min(a, b, ...)`, `max(a, b, ...)`,
//! `if(condition, then, else)`. Unsigned 64-bit integers, saturating (`-` stops
//! at 0, `+` and `*` at 2^64 - 1); at run time `x / 0` is 2^64 - 1 and `x % 0` is
//! `x`; a divisor that is always 0 is an error. Names: state variables; the
//! packet fields `len`, `flow`, `class`, `arrival`, `deadline`, `remaining`,
//! `dscp`, `annotation` (a workload's `priority` or `slack`) of the event's packet
//! (arriving in `rank`, sent in `rank_on_dequeue`) and as `head.FIELD` of the
//! unit's next packet; `now`; `vtime` (the largest rank the node has served a
//! unit at: start-time fair queueing's virtual time); the unit's `weight`,
//! `priority`, `reservation` (bit/s) and `unit` (index); and on per-flow leaves
//! `min_remaining` (the smallest `remaining` among the flow's queued packets).
//! Expressions are compiled once, when the file is loaded, into a stack program
//! ([`eiffel_sched::tree::RankProgram`]); a mistake names its line and column.
//! `examples/policies/*-expr.toml` write the built-in rank functions this way.
//! Release programs (`release`, `release_on_dequeue`) use the same language
//! over their `release_state` and the constants, without what belongs to
//! ranking (`vtime`, `weight`, `priority`, `reservation`, `min_remaining`);
//! on a per-flow leaf they give each flow's release times, on any other node
//! (internal or leaf) the node's own, with one set of state and no `unit`.
//! `examples/policies/tbf-expr.toml` is a token bucket written this way, exact
//! to the tick of the built-in `flow_limit`, and `fig6-expr.toml` the same on
//! Fig. 6's internal node, exact to the tick of its built-in `limit`.
//!
//! ## DOT
//! A policy can also be a Graphviz `digraph` ([`Policy::parse_dot_with`];
//! [`Policy::load`] reads `.dot` and `.gv` files so): nodes with the keys above
//! as attributes, edges from parent to child, the tree-wide settings and
//! `[classify]`'s as graph attributes, and a leaf's `rule = "class=2 |
//! protocol=udp"` for its rules. See [`dot`].
//!
//! The calendar parameters are described with their defaults and ranges on
//! [`eiffel_sched::tree::CalendarPolicy`] and [`eiffel_sched::tree::CalendarSpec`].
//!
//! Rates, sizes and durations are strings with units ([`units`]): `"7Mbit"`,
//! `"1500B"`, `"64KiB"`, `"2s"`. The `[classify]` section ([`classify`]) has
//! `default` (required when the policy has more than one leaf), the flow table's
//! `max_flows` and `idle_timeout`, `malformed`,
//! and `[[classify.rule]]`s tried in order, each with a `leaf` and conditions on
//! header fields (`protocol`, `dst_port`, `src`, `dscp`, `vlan`, ...) for live
//! traffic, or on workload ids (`flow`, `class`) for simulated runs.
//!
//! ## Checks
//! Every mistake is an error `FILE:LINE:COL: key `PATH`: message` ([`PolicyError`]):
//! unknown keys and disciplines, duplicate names, unknown parents, cycles, several
//! roots, weights out of range, a rate or size without units, a burst without a
//! limit, per-flow keys on a node with children, a discipline that orders children
//! on a node without any, a leaf no rule reaches (unless it is the default), rules
//! naming nodes that are not leaves, a flow table larger than a per-flow leaf,
//! and everything the tree itself refuses. What `eiffel check` accepts, `eiffel
//! shape` runs.
//!
//! ```
//! use eiffel_policy::Policy;
//! let policy = Policy::parse(r#"
//!     [[node]]
//!     name = "root"
//!     discipline = "strict"
//!     [[node]]
//!     name = "voice"
//!     parent = "root"
//!     [[node]]
//!     name = "bulk"
//!     parent = "root"
//!     priority = 1
//!     [classify]
//!     default = "bulk"
//!     [[classify.rule]]
//!     leaf = "voice"
//!     class = 0
//! "#, "strict.toml").unwrap();
//! assert_eq!(policy.classify_ids(7, 0), policy.leaf("voice").unwrap());
//! let tree = policy.build();
//! assert_eq!(tree.len(), 3);
//!
//! let err = Policy::parse("[[node]]\nname = \"a\"\nlimit = 7\n", "bad.toml").unwrap_err();
//! assert!(err.to_string().starts_with("bad.toml:3:9: key `node[0].limit`: a bare number"));
//! ```

pub mod budget;
pub mod classify;
pub mod describe;
pub mod dot;
mod error;
mod expr;
mod file;
pub mod run;
pub mod units;
pub mod workload;

use std::path::Path;

use eiffel_classify::wire::FlowKey;
use eiffel_classify::{Classifier, RuleSet};
use eiffel_sched::tree::TreeSpec;
use eiffel_sched::{AutoTree, ClassId, PolicyTree};

pub use budget::{Estimate, Limits, DEFAULT_MAX_MEMORY};
pub use classify::{ClassifyError, ClassifySpec};
pub use error::{KeyIndex, PolicyError};
pub use file::DEFAULT_CAPACITY;
pub use run::{run, RunOptions, RunReport};
pub use workload::WorkloadFile;

/// The policy of the Eiffel paper's Fig. 6 (`builtin/fig6-policy.toml` of this
/// crate, also `examples/policies/fig6.toml` of the repository).
pub const FIG6_POLICY: &str = include_str!("../builtin/fig6-policy.toml");

/// The workload `eiffel run` uses with [`FIG6_POLICY`] (`builtin/fig6-workload.toml`,
/// also `examples/workloads/fig6.toml`).
pub const FIG6_WORKLOAD: &str = include_str!("../builtin/fig6-workload.toml");

/// A validated policy: the tree's specification and the classification rules.
#[derive(Clone, Debug)]
pub struct Policy {
    file: String,
    spec: TreeSpec,
    classify: ClassifySpec,
    rules: RuleSet,
    index: KeyIndex,
    leaves: file::LeafMap,
    /// The class id of every leaf, by name.
    leaf_ids: std::collections::HashMap<String, ClassId>,
    /// For a policy written in DOT: the DOT text and where each key came from.
    dot: Option<std::sync::Arc<dot::DotSource>>,
}

impl Policy {
    /// Reads and validates the policy file at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or any mistake in it (see the crate docs).
    pub fn load(path: impl AsRef<Path>) -> Result<Policy, PolicyError> {
        Policy::load_with(path, &Limits::default())
    }

    /// [`Policy::load`] within `limits`.
    ///
    /// # Errors
    /// The file cannot be read, any mistake in it, or a tree or flow table whose
    /// estimated memory exceeds `limits` (see [`budget`]).
    pub fn load_with(path: impl AsRef<Path>, limits: &Limits) -> Result<Policy, PolicyError> {
        let path = path.as_ref();
        let (name, text) = error::read(path)?;
        let is_dot = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("dot") || e.eq_ignore_ascii_case("gv"));
        if is_dot {
            Policy::parse_dot_with(&text, &name, limits)
        } else {
            Policy::parse_with(&text, &name, limits)
        }
    }

    /// Validates a policy written in DOT (see [`dot`]): a `digraph` whose edges
    /// go from parent to child, the node attributes the policy file's node keys;
    /// errors name `file_name` and the place in the DOT text.
    ///
    /// # Errors
    /// Any mistake in the graph or its settings, or an estimate above
    /// `limits.max_memory`.
    pub fn parse_dot_with(
        text: &str,
        file_name: &str,
        limits: &Limits,
    ) -> Result<Policy, PolicyError> {
        let (toml, source) = dot::to_toml(text, file_name)?;
        let (index, file) =
            KeyIndex::parse_bounded(file_name, &toml, classify::check_rule_count_in)
                .map_err(|e| source.translate(e, &KeyIndex::new(file_name, &toml)))?;
        let c = file::compile(&index, file, limits).map_err(|e| source.translate(e, &index))?;
        Ok(Policy {
            file: file_name.to_string(),
            leaf_ids: leaf_ids(&c.spec),
            spec: c.spec,
            classify: c.classify,
            rules: c.rules,
            index,
            leaves: c.leaves,
            dot: Some(std::sync::Arc::new(source)),
        })
    }

    /// Validates policy `text`; errors name `file_name`.
    ///
    /// # Errors
    /// Any mistake in the text (see the crate docs).
    pub fn parse(text: &str, file_name: &str) -> Result<Policy, PolicyError> {
        Policy::parse_with(text, file_name, &Limits::default())
    }

    /// [`Policy::parse`] within `limits`: the tree (packet pool, nodes, queues,
    /// per-flow state, shaper) and the live flow table are estimated before
    /// anything is allocated for them ([`budget`]).
    ///
    /// # Errors
    /// Any mistake in the text, or an estimate above `limits.max_memory`, at the
    /// key responsible for most of it.
    pub fn parse_with(text: &str, file_name: &str, limits: &Limits) -> Result<Policy, PolicyError> {
        let (index, file) =
            KeyIndex::parse_bounded(file_name, text, classify::check_rule_count_in)?;
        let c = file::compile(&index, file, limits)?;
        Ok(Policy {
            file: file_name.to_string(),
            leaf_ids: leaf_ids(&c.spec),
            spec: c.spec,
            classify: c.classify,
            rules: c.rules,
            index,
            leaves: c.leaves,
            dot: None,
        })
    }

    /// Whether some node's flows hold sub-policies (`flows` on a node with
    /// children): simulated packets reach the copy of their flow id; live
    /// traffic does not support them yet.
    #[must_use]
    pub fn has_flow_subtrees(&self) -> bool {
        !self.leaves.is_empty()
    }

    /// An error pointing at `key` (empty message), for charges and checks that
    /// concern the policy as a whole.
    pub(crate) fn at_key(&self, key: &str) -> PolicyError {
        let e = self.index.at_key(key, "");
        match &self.dot {
            Some(d) => d.translate(e, &self.index),
            None => e,
        }
    }

    /// What the policy's tree and live flow table allocate, per key.
    #[must_use]
    pub fn estimate(&self) -> Estimate {
        let mut e = budget::tree(&self.index, &self.spec);
        e.extend(budget::flow_table(
            &self.index,
            self.classify.flow_table.max_flows,
        ));
        e
    }

    /// The name the policy was loaded under.
    #[must_use]
    pub fn file_name(&self) -> &str {
        &self.file
    }

    /// The compiled tree specification.
    #[must_use]
    pub fn spec(&self) -> &TreeSpec {
        &self.spec
    }

    /// A fresh scheduler for the policy.
    #[must_use]
    pub fn build(&self) -> PolicyTree {
        PolicyTree::new(self.spec.clone()).expect("validated when the policy was parsed")
    }

    /// A fresh scheduler for the policy, run by the pipe executor when the
    /// tree has its shape (`drr` levels over `ets` pipes over FIFO leaves),
    /// by the general tree otherwise: the same packets in the same order as
    /// [`Policy::build`]'s, faster where the shape allows.
    #[must_use]
    pub fn build_auto(&self) -> AutoTree {
        AutoTree::new(self.spec.clone()).expect("validated when the policy was parsed")
    }

    /// The class id of leaf `name` (what classification puts in `Packet::class`).
    #[must_use]
    pub fn leaf(&self, name: &str) -> Option<ClassId> {
        self.leaf_ids.get(name).copied()
    }

    /// The classification section as written.
    #[must_use]
    pub fn classify_spec(&self) -> &ClassifySpec {
        &self.classify
    }

    /// The compiled classification rules.
    #[must_use]
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// The leaf of a simulated packet of workload flow `flow` and class `class`.
    #[must_use]
    pub fn classify_ids(&self, flow: u32, class: u32) -> ClassId {
        self.leaves.leaf(self.rules.classify_ids(flow, class), flow)
    }

    /// The leaf of a frame with parsed headers `key`.
    #[must_use]
    pub fn classify_key(&self, key: &FlowKey) -> ClassId {
        self.rules.classify(key)
    }

    /// A frame classifier (rules and flow table) for live traffic.
    ///
    /// # Errors
    /// A flow-table size or timeout out of range.
    pub fn classifier(&self) -> Result<Classifier, ClassifyError> {
        self.classify.classifier(|n| self.leaf(n))
    }

    /// The source text of each classification rule's conditions, in order, as
    /// `key = value` pairs.
    #[must_use]
    pub fn rule_sources(&self) -> Vec<Vec<(String, String)>> {
        (0..self.classify.rules.len())
            .map(|i| {
                let prefix = format!("classify.rule[{i}]");
                self.index
                    .children_of(&prefix)
                    .into_iter()
                    .filter(|p| !p.ends_with(".leaf"))
                    .map(|p| {
                        let k = p.rsplit('.').next().unwrap_or(p).to_string();
                        let v = self.index.source_of(p).unwrap_or("?").to_string();
                        (k, v)
                    })
                    .collect()
            })
            .collect()
    }
}

/// The class id (node index) of every leaf of `spec`, by name: one pass.
fn leaf_ids(spec: &TreeSpec) -> std::collections::HashMap<String, ClassId> {
    let kids = spec.child_lists();
    (spec.nodes.iter().enumerate())
        .filter(|&(i, _)| kids[i].is_empty())
        .map(|(i, n)| (n.name.clone(), i as ClassId))
        .collect()
}
