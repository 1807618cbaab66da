//! `eiffel.Scheduler`: a policy file's tree and classifier, driven from
//! Python with explicit times, for one's own simulators.

use std::path::PathBuf;

use eiffel_classify::Classifier;
use eiffel_policy::Policy;
use eiffel_sched::{AutoTree, Backlog, Counters, Dropped, Scheduler as _};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error;
use crate::packet::Packet;

/// A policy tree built from a policy file, with the policy's classifier;
/// run by the pipe executor when the tree has its shape.
#[pyclass(module = "eiffel._eiffel", unsendable)]
pub struct Scheduler {
    tree: AutoTree,
    classifier: Classifier,
    name: String,
}

/// Counters and backlog as a dict.
pub(crate) fn counters<'py>(
    py: Python<'py>,
    c: &Counters,
    b: Backlog,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("enqueued", c.enqueued)?;
    d.set_item("enqueued_bytes", c.enqueued_bytes)?;
    d.set_item("dequeued", c.dequeued)?;
    d.set_item("dequeued_bytes", c.dequeued_bytes)?;
    d.set_item("dropped", c.dropped_total())?;
    let drops = PyDict::new(py);
    for (r, n) in c.dropped.nonzero() {
        drops.set_item(r.name(), n)?;
    }
    d.set_item("drops", drops)?;
    d.set_item("queued", b.packets)?;
    d.set_item("queued_bytes", b.bytes)?;
    Ok(d)
}

/// The outcome of an enqueue: `None` if queued, else the packet dropped and why.
pub(crate) fn outcome(r: Result<(), Dropped>) -> Option<(Packet, &'static str)> {
    r.err().map(|d| (d.packet.into(), d.reason.name()))
}

impl Scheduler {
    fn of(policy: &Policy) -> PyResult<Self> {
        Ok(Scheduler {
            tree: policy.build_auto(),
            classifier: policy.classifier().map_err(error)?,
            name: policy.file_name().to_string(),
        })
    }
}

#[pymethods]
impl Scheduler {
    /// Loads the policy file at `policy`.
    #[new]
    fn new(policy: PathBuf) -> PyResult<Self> {
        Scheduler::of(&Policy::load(&policy).map_err(error)?)
    }

    /// A scheduler from a policy's TOML text; errors name `name`.
    #[staticmethod]
    #[pyo3(signature = (text, name="<string>"))]
    fn from_toml(text: &str, name: &str) -> PyResult<Self> {
        Scheduler::of(&Policy::parse(text, name).map_err(error)?)
    }

    /// The policy's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The class id of leaf `name`.
    fn leaf(&self, name: &str) -> PyResult<u32> {
        self.tree
            .leaf(name)
            .ok_or_else(|| error(format!("{}: no leaf named `{name}`", self.name)))
    }

    /// Offers `packet` at `now` (ns): `None` if queued, else `(packet, reason)`
    /// for the packet dropped (with reason `"evicted"`, a queued one pushed out).
    fn enqueue(&mut self, packet: Packet, now: u64) -> Option<(Packet, &'static str)> {
        outcome(self.tree.enqueue(packet.into(), now))
    }

    /// Classifies Ethernet `frame` arriving at `now` by the policy's rules and
    /// flow table: a packet with `length`, `flow`, `leaf` and `arrival` set, or
    /// `None` for a malformed frame the policy drops.
    fn classify(&mut self, frame: &[u8], now: u64) -> Option<Packet> {
        self.classifier.classify(frame, now).ok().map(Packet::from)
    }

    /// The next packet to send at `now`, or `None`.
    fn dequeue(&mut self, now: u64) -> Option<Packet> {
        self.tree.dequeue(now).map(Packet::from)
    }

    /// When the shaper next releases a packet after `now`, or `None`.
    fn next_ready(&self, now: u64) -> Option<u64> {
        self.tree.next_ready(now)
    }

    /// The tree's counters: packets and bytes enqueued, dequeued, dropped (by
    /// reason in `drops`) and queued.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        counters(py, self.tree.counters(), self.tree.backlog())
    }

    /// Every node, in policy order: its `path`, `discipline`, and counters.
    fn nodes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let node = |c: &Counters, b: Backlog, path: &str, discipline: Option<&str>, leaf: bool| {
            let d = counters(py, c, b)?;
            d.set_item("path", path)?;
            d.set_item("discipline", discipline.unwrap_or("fifo"))?;
            d.set_item("leaf", leaf)?;
            Ok(d)
        };
        match &self.tree {
            AutoTree::General(t) => t
                .nodes()
                .map(|v| {
                    node(
                        &v.counters,
                        v.backlog,
                        &v.path,
                        v.discipline.as_deref(),
                        v.is_leaf,
                    )
                })
                .collect(),
            AutoTree::Pipes(t) => t
                .spec()
                .child_lists()
                .iter()
                .enumerate()
                .map(|(i, kids)| {
                    let leaf = kids.is_empty();
                    let discipline = (!leaf).then(|| t.spec().nodes[i].discipline.name());
                    let path = self.tree.path(i);
                    node(
                        &t.node_counters(i),
                        t.node_backlog(i),
                        &path,
                        discipline,
                        leaf,
                    )
                })
                .collect(),
        }
    }

    /// The executor running the tree: `"pipe-tree"` when its shape allows
    /// (`drr` levels over `ets` pipes over FIFO leaves, as DPDK `rte_sched`'s
    /// hierarchy), `"policy-tree"` otherwise. Both send the same packets.
    #[getter]
    fn executor(&self) -> &'static str {
        self.tree.executor().name()
    }

    /// Packets queued.
    fn __len__(&self) -> usize {
        self.tree.backlog().packets as usize
    }
}
