//! `eiffel.Queue`: Eiffel's integer priority queues holding Python objects.

use eiffel_queue::{
    AnyQueue, Handle, InsertError, OutOfRange, PriorityQueue, QueueConfig, QueueKind,
};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;

use crate::error;

/// A bucketed integer priority queue (FFS, cFFS, gradient...) of objects.
#[pyclass(module = "eiffel._eiffel", unsendable)]
pub struct Queue {
    q: AnyQueue<Py<PyAny>>,
}

#[pymethods]
impl Queue {
    /// A `kind` queue (`"ffs"`, `"hffs"`, `"cffs"`, `"gradient"`,
    /// `"approx_gradient"`, `"circular_approx_gradient"`, `"bucket_heap"`,
    /// `"binary_heap"`, `"calendar"`) of `buckets` buckets of `granularity` ranks
    /// from `base`, holding up to `capacity` objects; ranks out of range are
    /// clamped or, with `reject=True`, refused.
    #[new]
    #[pyo3(signature = (kind="cffs", buckets=1024, capacity=1024, granularity=1, base=0, reject=false))]
    fn new(
        kind: &str,
        buckets: usize,
        capacity: usize,
        granularity: u64,
        base: u64,
        reject: bool,
    ) -> PyResult<Self> {
        let kind: QueueKind = kind
            .parse()
            .map_err(|e| PyValueError::new_err(format!("queue kind `{kind}`: {e}")))?;
        let mut cfg = QueueConfig::new(buckets, capacity);
        cfg.granularity = granularity;
        cfg.base = base;
        cfg.out_of_range = if reject {
            OutOfRange::Reject
        } else {
            OutOfRange::Clamp
        };
        Ok(Queue {
            q: AnyQueue::new(kind, cfg).map_err(error)?,
        })
    }

    /// The queue's kind.
    #[getter]
    fn kind(&self) -> String {
        self.q.kind().to_string()
    }

    /// Most objects it holds.
    #[getter]
    fn capacity(&self) -> usize {
        self.q.capacity()
    }

    /// Inserts `item` at `rank`; returns a handle for `remove` and `set_rank`.
    fn push(&mut self, rank: u64, item: Py<PyAny>) -> PyResult<u64> {
        match self.q.insert(rank, item) {
            Ok(h) => Ok(h.to_bits()),
            Err(InsertError::Full(_)) => Err(error("the queue is full")),
            Err(InsertError::OutOfRange(_)) => Err(PyValueError::new_err(format!(
                "rank {rank} is outside the queue's range"
            ))),
        }
    }

    /// Removes and returns `(rank, item)` of a minimum-rank object (FIFO among
    /// equal buckets), or `None` if empty.
    fn pop(&mut self) -> Option<(u64, Py<PyAny>)> {
        self.q.pop_min()
    }

    /// `(rank, item)` of the object `pop` would return, or `None`.
    fn peek(&self, py: Python<'_>) -> Option<(u64, Py<PyAny>)> {
        self.q.peek().map(|(_, r, item)| (r, item.clone_ref(py)))
    }

    /// Removes the object of `handle` and returns `(rank, item)`.
    fn remove(&mut self, handle: u64) -> PyResult<(u64, Py<PyAny>)> {
        self.q
            .remove(Handle::from_bits(handle))
            .ok_or_else(|| PyKeyError::new_err(format!("no object with handle {handle}")))
    }

    /// Moves the object of `handle` to `rank`.
    fn set_rank(&mut self, handle: u64, rank: u64) -> PyResult<()> {
        self.q
            .set_rank(Handle::from_bits(handle), rank)
            .map_err(|e| PyKeyError::new_err(format!("handle {handle}: {e}")))
    }

    /// Objects queued.
    fn __len__(&self) -> usize {
        self.q.len()
    }
}
