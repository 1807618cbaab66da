//! Release-time programs: `release` (when a packet arrives into an empty flow,
//! or node) and `release_on_dequeue` (after each send) give the time the next
//! packet may leave, with `release_state` and the node's `constants` (see
//! [`crate::expr`] for the language). On a per-flow leaf they pace each flow
//! (per-flow state), and the node's discipline or `rank` still decides the
//! order among the flows that may send; on any other node, leaf or internal,
//! they pace the node's own output (one set of state), and its parent orders
//! it among its siblings when it may send. The tree's one shaper holds the flow
//! or node until that time.

use std::sync::Arc;

use eiffel_sched::tree::RankProgram;
use toml::Spanned;

use super::rank::{constants, declare, program};
use super::shape::Shape;
use super::{at, key, NodeFile};
use crate::error::{KeyIndex, PolicyError};
use crate::expr::{Names, Role};

/// What a node's release-time program paces.
pub(super) enum Release {
    /// Each flow of a per-flow leaf.
    Flows(Arc<RankProgram>),
    /// The node's own output.
    Node(Arc<RankProgram>),
}

/// Node `i`'s release-time program, if it has one.
pub(super) fn compile(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
    shape: &Shape,
) -> Result<Option<Release>, PolicyError> {
    let Some(text) = &n.release else {
        let stray = [
            (
                "release_on_dequeue",
                n.release_on_dequeue.as_deref().map(Spanned::span),
            ),
            (
                "release_state",
                n.release_state.as_deref().map(Spanned::span),
            ),
        ];
        if let Some((k, span)) = stray.into_iter().find_map(|(k, s)| s.map(|s| (k, s))) {
            let msg = format!("`{k}` belongs to a release-time program: set `release` too");
            return Err(index.error(span.start, &key(i, k), msg));
        }
        return Ok(None);
    };
    let per_flow = n.flows.is_some();
    if per_flow && !shape.is_leaf(i) {
        let msg = "flows that hold sub-policies are paced by `flow_limit`: `release` paces the flows of a per-flow leaf, or the output of a node without `flows`";
        return Err(at(index, text, &key(i, "release"), msg));
    }
    let constants = constants(index, n, i)?;
    let taken: Vec<String> = constants.iter().map(|(c, _)| c.clone()).collect();
    let (state, init) = declare(
        index,
        i,
        "release_state",
        n.release_state.as_deref(),
        &taken,
    )?;
    let names = Names {
        state: &state,
        node_state: &[],
        constants: &constants,
        per_flow: true,
        role: if per_flow {
            Role::Release
        } else {
            Role::NodeRelease
        },
    };
    let on_arrival = program(index, i, "release", text, &names)?;
    let on_send = match &n.release_on_dequeue {
        Some(t) => Some(program(index, i, "release_on_dequeue", t, &names)?),
        None => None,
    };
    // Shown on one line by `eiffel check`.
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut source = format!("release = \"{}\"", flat(text.get_ref()));
    if let Some(t) = &n.release_on_dequeue {
        source += &format!("; release_on_dequeue = \"{}\"", flat(t.get_ref()));
    }
    let program = RankProgram::new(on_arrival, on_send, init, Vec::new())
        .map_err(|e| at(index, text, &key(i, "release"), e.to_string()))?
        .with_source(source);
    let program = Arc::new(program);
    Ok(Some(if per_flow {
        Release::Flows(program)
    } else {
        Release::Node(program)
    }))
}
