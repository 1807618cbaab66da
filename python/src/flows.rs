//! `eiffel.FlowScheduler`: QFQ, DRR, WF²Q+ or STFQ over numbered flows.

use eiffel_sched::{Drr, FlowConfig, Qfq, Stfq, Wf2qPlus};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error;
use crate::packet::Packet;
use crate::tree::{counters, outcome};

/// A fair-queueing scheduler over flow ids `0..flows`.
#[pyclass(module = "eiffel._eiffel", unsendable)]
pub struct FlowScheduler {
    inner: Box<dyn eiffel_sched::FlowScheduler>,
    kind: &'static str,
}

#[pymethods]
impl FlowScheduler {
    /// A `kind` scheduler (`"qfq"`, `"drr"`, `"wf2q+"`, `"stfq"`) for flow ids
    /// `0..flows` holding at most `capacity` packets.
    #[new]
    #[pyo3(signature = (kind, flows, capacity=65536))]
    fn new(kind: &str, flows: u32, capacity: usize) -> PyResult<Self> {
        let (inner, kind): (Box<dyn eiffel_sched::FlowScheduler>, _) = match kind {
            "qfq" => (Box::new(Qfq::new(flows, capacity).map_err(error)?), "qfq"),
            "drr" => (Box::new(Drr::new(flows, capacity).map_err(error)?), "drr"),
            "wf2q+" | "wf2q" => (
                Box::new(Wf2qPlus::new(flows, capacity).map_err(error)?),
                "wf2q+",
            ),
            "stfq" | "wfq" => (Box::new(Stfq::new(flows, capacity).map_err(error)?), "stfq"),
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown flow scheduler `{other}`: qfq, drr, wf2q+ or stfq"
                )))
            }
        };
        Ok(FlowScheduler { inner, kind })
    }

    /// The algorithm.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    /// Configures flow `flow`: its weight, largest packet, DRR quantum and
    /// queue limit (packets).
    #[pyo3(signature = (flow, weight=1, max_packet=1500, quantum=None, limit=None))]
    fn add_flow(
        &mut self,
        flow: u32,
        weight: u32,
        max_packet: u32,
        quantum: Option<u32>,
        limit: Option<u32>,
    ) -> PyResult<()> {
        let cfg = FlowConfig {
            weight,
            max_packet,
            quantum,
            limit,
        };
        self.inner.add_flow(flow, cfg).map_err(error)
    }

    /// Offers `packet` (its `flow` names the flow) at `now`: `None` if queued,
    /// else `(packet, reason)`.
    fn enqueue(&mut self, packet: Packet, now: u64) -> Option<(Packet, &'static str)> {
        outcome(self.inner.enqueue(packet.into(), now))
    }

    /// The next packet to send at `now`, or `None`.
    fn dequeue(&mut self, now: u64) -> Option<Packet> {
        self.inner.dequeue(now).map(Packet::from)
    }

    /// Packets and bytes queued for `flow`.
    fn flow_backlog(&self, flow: u32) -> (u64, u64) {
        let b = self.inner.flow_backlog(flow);
        (b.packets, b.bytes)
    }

    /// Counters: packets and bytes enqueued, dequeued, dropped and queued.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        counters(py, self.inner.counters(), self.inner.backlog())
    }

    /// Packets queued.
    fn __len__(&self) -> usize {
        self.inner.backlog().packets as usize
    }
}
