//! A node's rank function written as expressions: `rank`, `rank_on_dequeue`,
//! and the per-unit `state` and per-node `node_state` they use (see
//! [`crate::expr`] for the language). Compiled here, once, into the node's
//! [`Discipline::Program`]; mistakes are reported at their line and column in
//! the policy file.

use std::sync::Arc;

use eiffel_sched::tree::{Discipline, RankProgram};
use toml::Spanned;

use super::shape::Shape;
use super::{at, key, NodeFile};
use crate::error::{KeyIndex, PolicyError};
use crate::expr::{self, is_builtin, Names, Role};

/// Node `i`'s discipline `d`, replaced by its rank program if it has one.
pub(super) fn apply(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
    d: Discipline,
    shape: &Shape,
) -> Result<Discipline, PolicyError> {
    let Some(rank) = &n.rank else {
        let stray = [
            (
                "rank_on_dequeue",
                n.rank_on_dequeue.as_deref().map(Spanned::span),
            ),
            ("state", n.state.as_deref().map(Spanned::span)),
            ("node_state", n.node_state.as_deref().map(Spanned::span)),
        ];
        if let (Some(c), None) = (&n.constants, &n.release) {
            let msg = "`constants` are named values for `rank` or `release`: set one of them";
            return Err(at(index, c, &key(i, "constants"), msg));
        }
        if let Some((k, span)) = stray.into_iter().find_map(|(k, s)| s.map(|s| (k, s))) {
            let msg = format!("`{k}` belongs to a rank function: set `rank` too");
            return Err(index.error(span.start, &key(i, k), msg));
        }
        return Ok(d);
    };
    if let Some(dis) = &n.discipline {
        let msg = "a node with `rank` is ordered by its expression: remove `discipline`";
        return Err(at(index, dis, &key(i, "discipline"), msg));
    }
    let per_flow = n.flows.is_some();
    if shape.is_leaf(i) && !per_flow {
        let msg = "a FIFO leaf has nothing to rank: give the node children or `flows = N`";
        return Err(at(index, rank, &key(i, "rank"), msg));
    }
    let constants = constants(index, n, i)?;
    let taken: Vec<String> = constants.iter().map(|(c, _)| c.clone()).collect();
    let (state, init) = declare(index, i, "state", n.state.as_deref(), &taken)?;
    let taken: Vec<String> = taken.into_iter().chain(state.iter().cloned()).collect();
    let (node_state, node_init) = declare(index, i, "node_state", n.node_state.as_deref(), &taken)?;
    let names = Names {
        state: &state,
        node_state: &node_state,
        constants: &constants,
        per_flow,
        role: Role::Rank,
    };
    let on_enqueue = program(index, i, "rank", rank, &names)?;
    let on_dequeue = match &n.rank_on_dequeue {
        Some(r) => Some(program(index, i, "rank_on_dequeue", r, &names)?),
        None => None,
    };
    let mut source = format!("rank = {:?}", rank.get_ref());
    if let Some(r) = &n.rank_on_dequeue {
        source += &format!("; rank_on_dequeue = {:?}", r.get_ref());
    }
    let program = RankProgram::new(on_enqueue, on_dequeue, init, node_init)
        .map_err(|e| at(index, rank, &key(i, "rank"), e.to_string()))?
        .with_source(source);
    let queue = d.queue().copied().unwrap_or_default();
    Ok(Discipline::Program {
        program: Arc::new(program),
        queue,
    })
}

/// Node `i`'s named constants (`constants = { rate = 2000000 }`).
pub(super) fn constants(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
) -> Result<Vec<(String, u64)>, PolicyError> {
    let (names, values) = declare(index, i, "constants", n.constants.as_deref(), &[])?;
    Ok(names.into_iter().zip(values).collect())
}

/// The variables of a `state`, `node_state`, `release_state` or `constants`
/// table and their (initial) values; `taken` are names already declared.
pub(super) fn declare(
    index: &KeyIndex,
    i: usize,
    k: &str,
    table: Option<&Spanned<toml::Table>>,
    taken: &[String],
) -> Result<(Vec<String>, Vec<u64>), PolicyError> {
    let Some(table) = table else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut names = Vec::new();
    let mut values = Vec::new();
    for (name, v) in table.get_ref() {
        let path = format!("{}.{name}", key(i, k));
        let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            let msg =
                format!("`{name}` is not a name (letters, digits and `_`, not first a digit)");
            return Err(index.at_key(&path, msg));
        }
        if is_builtin(name) || taken.contains(name) {
            let msg = format!("`{name}` is already a name: choose another");
            return Err(index.at_key(&path, msg));
        }
        let Some(x) = v.as_integer().filter(|x| *x >= 0) else {
            let msg = format!("the initial value of `{name}` must be an integer >= 0, got {v}");
            return Err(index.at_key(&path, msg));
        };
        names.push(name.clone());
        values.push(x as u64);
    }
    if names.len() > eiffel_sched::tree::MAX_STATE {
        let msg = format!(
            "{} variables (at most {})",
            names.len(),
            eiffel_sched::tree::MAX_STATE
        );
        return Err(at(index, table, &key(i, k), msg));
    }
    Ok((names, values))
}

/// Compiles expression key `k` of node `i`.
pub(super) fn program(
    index: &KeyIndex,
    i: usize,
    k: &str,
    text: &Spanned<String>,
    names: &Names<'_>,
) -> Result<eiffel_sched::tree::Program, PolicyError> {
    expr::compile(text.get_ref(), names).map_err(|e| {
        let path = key(i, k);
        let offset =
            content_start(index, &path, text.get_ref()).map_or(text.span().start, |s| s + e.offset);
        index.error(offset, &path, e.message)
    })
}

/// Where the characters of string value `value` of `path` start in the file,
/// if the file writes them as they are (no escapes).
fn content_start(index: &KeyIndex, path: &str, value: &str) -> Option<usize> {
    let span = index.span_of(path)?;
    let raw = index.source_of(path)?;
    let mut skip = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
        3
    } else {
        1
    };
    if skip == 3 && raw[skip..].starts_with('\n') {
        skip += 1;
    }
    raw.get(skip..skip + value.len())
        .filter(|s| *s == value)
        .map(|_| span.start + skip)
}
