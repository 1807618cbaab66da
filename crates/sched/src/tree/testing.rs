//! Trees the unit tests of several modules build alike.

use super::{Discipline, NodeSpec, TreeSpec};

/// Adds under `pipe` (named `name`) what an `rte_sched` pipe holds, in small:
/// two classes of `capacity` packets each, in strict priority, then a DRR
/// best effort over two queues of weights 1 and 2. Pushes the four leaves.
pub(super) fn add_pipe_children(
    spec: &mut TreeSpec,
    pipe: usize,
    name: &str,
    capacity: u32,
    leaves: &mut Vec<u32>,
) {
    for c in 0..2 {
        let mut class = NodeSpec::new(format!("{name}c{c}"), Some(pipe));
        class.priority = c;
        class.capacity = Some(capacity);
        leaves.push(spec.add(class) as u32);
    }
    let mut be = NodeSpec::new(format!("{name}be"), Some(pipe));
    be.discipline = Discipline::DRR;
    be.priority = 2;
    let be = spec.add(be);
    for q in 0..2 {
        let mut queue = NodeSpec::new(format!("{name}be{q}"), Some(be));
        queue.weight = 1 + q;
        leaves.push(spec.add(queue) as u32);
    }
}
