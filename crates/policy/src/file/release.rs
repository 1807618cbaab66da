//! A per-flow leaf's release-time programs: `release` (when a packet arrives into
//! an empty flow) and `release_on_dequeue` (after each send) give the time the
//! flow's next packet may leave, with per-flow `release_state` and the node's
//! `constants` (see [`crate::expr`] for the language). The tree's one shaper
//! holds each flow until that time; the node's discipline or `rank` still
//! decides the order among the flows that may send.

use std::sync::Arc;

use eiffel_sched::tree::RankProgram;
use toml::Spanned;

use super::rank::{constants, declare, program};
use super::shape::Shape;
use super::{at, key, NodeFile};
use crate::error::{KeyIndex, PolicyError};
use crate::expr::{Names, Role};

/// Node `i`'s release-time program, if it has one.
pub(super) fn compile(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
    shape: &Shape,
) -> Result<Option<Arc<RankProgram>>, PolicyError> {
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
    if n.flows.is_none() {
        let msg = "`release` gives the release times of a per-flow leaf's flows: add `flows = N` (a node's own output is limited by `limit`)";
        return Err(at(index, text, &key(i, "release"), msg));
    }
    if !shape.is_leaf(i) {
        let msg = "flows that hold sub-policies are paced by `flow_limit`: `release` applies to per-flow leaves";
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
        role: Role::Release,
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
    Ok(Some(Arc::new(program)))
}
