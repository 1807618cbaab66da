//! Each node's settings as a policy file writes them: its weight or priority at
//! its parent, a reservation at an hClock parent, its rate limit, its capacity
//! and, on a per-flow leaf, the flows' settings.

use eiffel_sched::tree::{Discipline, NodeSpec, PerFlow, RateLimit, MAX_WEIGHT};
use toml::Spanned;

use super::discipline::Kind;
use super::shape::Shape;
use super::{at, key, node_int, NodeFile};
use crate::error::{KeyIndex, PolicyError};
use crate::units::{Rate, Size};

/// Node `i` with discipline `d`; `kinds` are every node's discipline kinds.
pub(super) fn compile(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
    d: Discipline,
    kinds: &[Kind],
    shape: &Shape,
    mtu: u32,
) -> Result<NodeSpec, PolicyError> {
    let mut ns = NodeSpec::new(n.name.get_ref().clone(), shape.parent[i]);
    ns.discipline = d;
    if let Some(w) = &n.weight {
        let max = i64::from(MAX_WEIGHT);
        ns.weight = node_int(index, w, i, "weight", 1, max, "weight")? as u32;
    }
    if let Some(p) = &n.priority {
        let what = "priority (0 is served first)";
        ns.priority = node_int(index, p, i, "priority", 0, 63, what)? as u32;
    }
    if let Some(r) = &n.reservation {
        let parent = shape.parent[i].map(|p| kinds[p]);
        ns.reservation = Some(reservation(index, r, i, parent)?);
    }
    if n.limit.is_some() || n.burst.is_some() {
        let (rate_key, burst_key) = (key(i, "limit"), key(i, "burst"));
        ns.limit = limit(
            index,
            n.limit.as_ref(),
            n.burst.as_deref(),
            &rate_key,
            &burst_key,
            mtu,
        )?;
    }
    if let Some(c) = &n.capacity {
        if !shape.is_leaf(i) {
            let msg = "capacity (packets queued) applies to leaves";
            return Err(at(index, c, &key(i, "capacity"), msg));
        }
        let max = i64::from(u32::MAX);
        let what = "capacity (packets)";
        ns.capacity = Some(node_int(index, c, i, "capacity", 1, max, what)? as u32);
    }
    ns.per_flow = per_flow(index, n, i, shape, mtu)?;
    Ok(ns)
}

/// A reservation, honoured by an hClock parent only.
fn reservation(
    index: &KeyIndex,
    r: &Spanned<Rate>,
    i: usize,
    parent: Option<Kind>,
) -> Result<eiffel_sched::Rate, PolicyError> {
    if parent != Some(Kind::Hclock) {
        let msg = "a reservation is honoured by an hclock parent only";
        return Err(at(index, r, &key(i, "reservation"), msg));
    }
    let rate = r.get_ref().rate();
    if rate.is_zero() {
        let msg = "a reservation must be positive";
        return Err(at(index, r, &key(i, "reservation"), msg));
    }
    Ok(rate)
}

/// The per-flow settings of node `i`: only with `flows`, only on a leaf.
fn per_flow(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
    shape: &Shape,
    mtu: u32,
) -> Result<Option<PerFlow>, PolicyError> {
    let Some(f) = &n.flows else {
        let flow_keys = [
            ("flow_limit", n.flow_limit.as_deref().map(Spanned::span)),
            ("flow_burst", n.flow_burst.as_deref().map(Spanned::span)),
            ("flow_queue", n.flow_queue.as_deref().map(Spanned::span)),
        ];
        if let Some((k, span)) = flow_keys.into_iter().find_map(|(k, s)| s.map(|s| (k, s))) {
            let msg = "per-flow settings need `flows = N` (a per-flow leaf)";
            return Err(index.error(span.start, &key(i, k), msg));
        }
        return Ok(None);
    };
    if !shape.is_leaf(i) {
        let msg = format!(
            "node `{}` has children: per-flow settings belong on a leaf",
            n.name.get_ref()
        );
        return Err(at(index, f, &key(i, "flows"), msg));
    }
    let max_flows = node_int(index, f, i, "flows", 1, 1 << 24, "flows")? as u32;
    let flow_limit = limit(
        index,
        n.flow_limit.as_deref(),
        n.flow_burst.as_deref(),
        &key(i, "flow_limit"),
        &key(i, "flow_burst"),
        mtu,
    )?;
    let flow_queue_limit = match &n.flow_queue {
        Some(v) => {
            let max = i64::from(u32::MAX);
            let what = "flow_queue (packets)";
            Some(node_int(index, v, i, "flow_queue", 1, max, what)? as u32)
        }
        None => None,
    };
    Ok(Some(PerFlow {
        max_flows,
        flow_limit,
        flow_queue_limit,
    }))
}

/// A rate limit from a `limit`/`burst` (or `flow_limit`/`flow_burst`) pair.
pub(super) fn limit(
    index: &KeyIndex,
    rate: Option<&Spanned<Rate>>,
    burst: Option<&Spanned<Size>>,
    rate_key: &str,
    burst_key: &str,
    mtu: u32,
) -> Result<Option<RateLimit>, PolicyError> {
    let r = match (rate, burst) {
        (None, None) => return Ok(None),
        (None, Some(b)) => {
            let rate_name = rate_key.rsplit('.').next().unwrap_or(rate_key);
            let msg = format!("a burst needs a rate: set `{rate_name}` too");
            return Err(at(index, b, burst_key, msg));
        }
        (Some(r), _) => r,
    };
    if r.get_ref().get() == 0 {
        let msg = "a limit of 0 bit/s would never send: remove the limit or make it positive";
        return Err(at(index, r, rate_key, msg));
    }
    let burst = match burst {
        Some(b) => {
            let v = b.get_ref().get();
            if v < u64::from(mtu) {
                let msg = format!("a burst of {v} B is smaller than the {mtu} B mtu: a full-size packet could never pass");
                return Err(at(index, b, burst_key, msg));
            }
            v
        }
        None => u64::from(mtu),
    };
    Ok(Some(RateLimit {
        rate: r.get_ref().rate(),
        burst,
    }))
}
