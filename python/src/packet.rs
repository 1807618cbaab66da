//! `eiffel.Packet`: a packet descriptor, what schedulers order.

use eiffel_sched::{Packet as Desc, NO_DEADLINE};
use pyo3::prelude::*;

/// A packet descriptor: the scheduler orders these, never payload bytes.
#[pyclass(module = "eiffel._eiffel", get_all, set_all, eq)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The caller's handle of the payload, handed back unchanged.
    pub buffer: u32,
    /// Length on the wire, bytes.
    pub length: u32,
    /// Flow id (within the leaf for policy trees).
    pub flow: u32,
    /// Leaf (class id) for policy trees.
    pub leaf: u32,
    /// Arrival time, ns.
    pub arrival: u64,
    /// Rank for rank-driven disciplines (priority, slack).
    pub rank: u64,
    /// Absolute deadline, ns, or `None`.
    pub deadline: Option<u64>,
    /// Bytes its flow still has to send (SRPT, pFabric); 0 if unknown.
    pub remaining: u64,
}

#[pymethods]
impl Packet {
    #[new]
    #[pyo3(signature = (length, flow=0, leaf=0, arrival=0, rank=0, deadline=None, remaining=0, buffer=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        length: u32,
        flow: u32,
        leaf: u32,
        arrival: u64,
        rank: u64,
        deadline: Option<u64>,
        remaining: u64,
        buffer: u32,
    ) -> Self {
        Packet {
            buffer,
            length,
            flow,
            leaf,
            arrival,
            rank,
            deadline,
            remaining,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Packet(length={}, flow={}, leaf={}, arrival={}, rank={}, deadline={}, remaining={}, buffer={})",
            self.length,
            self.flow,
            self.leaf,
            self.arrival,
            self.rank,
            self.deadline.map_or("None".to_string(), |d| d.to_string()),
            self.remaining,
            self.buffer
        )
    }
}

impl From<Packet> for Desc {
    fn from(p: Packet) -> Desc {
        let mut d = Desc::new(p.flow, p.length)
            .at(p.arrival)
            .class(p.leaf)
            .buffer(p.buffer);
        d.rank = p.rank;
        d.deadline = p.deadline.unwrap_or(NO_DEADLINE);
        d.remaining = p.remaining;
        d
    }
}

impl From<Desc> for Packet {
    fn from(d: Desc) -> Packet {
        Packet {
            buffer: d.buffer,
            length: d.len,
            flow: d.flow,
            leaf: d.class,
            arrival: d.arrival,
            rank: d.rank,
            deadline: (d.deadline != NO_DEADLINE).then_some(d.deadline),
            remaining: d.remaining,
        }
    }
}
