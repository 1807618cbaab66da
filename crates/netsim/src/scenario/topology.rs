//! The `[topology]` section.
//!
//! | kind | keys |
//! |---|---|
//! | `leaf-spine` | `leaves`, `spines`, `hosts_per_leaf`, `host_link`, `fabric_link` |
//! | `fat-tree` | `k`, `host_link`, `edge_link` (edge-aggregation), `core_link` (aggregation-core) |
//! | `dumbbell` | `senders`, `receivers`, `access_link`, `bottleneck` |
//! | `parking-lot` | `routers`, `hosts_per_router`, `access_link`, `router_link` |
//! | `custom` | `hosts`, `switches` (names), `[[topology.link]]` with `ends = ["a", "b"]` |
//!
//! A link is `{ rate = "10Gbit", delay = "1us" }`, optionally with `buffer` (this
//! link's ports hold that many bytes instead of the scheme's) and `loss` (the
//! probability that a packet is lost on arrival at either port, for tests).

use eiffel_policy::PolicyError;
use toml::Spanned;

use super::file::{LinkFile, TopologyFile};
use super::Ctx;
use crate::routing::check_size;
use crate::setup::LinkExtras;
use crate::time::{Duration, Rate};
use crate::topology::{LinkParams, NodeKind, Topology, TopologyBuilder, TopologyError};

/// Keys each kind accepts (beyond `kind`).
const KEYS: [(&str, &[&str]); 5] = [
    (
        "leaf-spine",
        &[
            "leaves",
            "spines",
            "hosts_per_leaf",
            "host_link",
            "fabric_link",
        ],
    ),
    ("fat-tree", &["k", "host_link", "edge_link", "core_link"]),
    (
        "dumbbell",
        &["senders", "receivers", "access_link", "bottleneck"],
    ),
    (
        "parking-lot",
        &["routers", "hosts_per_router", "access_link", "router_link"],
    ),
    ("custom", &["hosts", "switches", "link"]),
];

fn present(t: &TopologyFile) -> Vec<(&'static str, usize)> {
    let mut v = Vec::new();
    let mut add = |k: &'static str, s: Option<usize>| {
        if let Some(s) = s {
            v.push((k, s));
        }
    };
    add("leaves", t.leaves.as_ref().map(|x| x.span().start));
    add("spines", t.spines.as_ref().map(|x| x.span().start));
    add(
        "hosts_per_leaf",
        t.hosts_per_leaf.as_ref().map(|x| x.span().start),
    );
    add("host_link", t.host_link.as_ref().map(|x| x.span().start));
    add(
        "fabric_link",
        t.fabric_link.as_ref().map(|x| x.span().start),
    );
    add("k", t.k.as_ref().map(|x| x.span().start));
    add("edge_link", t.edge_link.as_ref().map(|x| x.span().start));
    add("core_link", t.core_link.as_ref().map(|x| x.span().start));
    add("senders", t.senders.as_ref().map(|x| x.span().start));
    add("receivers", t.receivers.as_ref().map(|x| x.span().start));
    add(
        "access_link",
        t.access_link.as_ref().map(|x| x.span().start),
    );
    add("bottleneck", t.bottleneck.as_ref().map(|x| x.span().start));
    add("routers", t.routers.as_ref().map(|x| x.span().start));
    add(
        "hosts_per_router",
        t.hosts_per_router.as_ref().map(|x| x.span().start),
    );
    add(
        "router_link",
        t.router_link.as_ref().map(|x| x.span().start),
    );
    add("hosts", t.hosts.as_ref().map(|x| x.span().start));
    add("switches", t.switches.as_ref().map(|x| x.span().start));
    add("link", t.link.first().map(|x| x.span().start));
    v
}

fn link(ctx: &Ctx<'_>, l: &Spanned<LinkFile>, key: &str) -> Result<(LinkParams, f64), PolicyError> {
    let f = l.get_ref();
    let rate = f.rate.get_ref().get();
    if rate == 0 {
        return ctx.err(
            f.rate.span(),
            &format!("{key}.rate"),
            "the rate must be positive",
        );
    }
    let loss = match &f.loss {
        Some(p) if !(0.0..1.0).contains(p.get_ref()) => {
            return ctx.err(
                p.span(),
                &format!("{key}.loss"),
                "a loss probability in [0, 1)",
            );
        }
        Some(p) => *p.get_ref(),
        None => 0.0,
    };
    let buffer = match &f.buffer {
        Some(b) if b.get_ref().get() < 1500 => {
            return ctx.err(
                b.span(),
                &format!("{key}.buffer"),
                "a buffer holds at least one 1500-byte packet",
            );
        }
        Some(b) => Some(b.get_ref().get()),
        None => None,
    };
    Ok((
        LinkParams {
            rate: Rate::from_bps(rate),
            delay: Duration::from_nanos(f.delay.get_ref().get()),
            buffer,
        },
        loss,
    ))
}

fn need<'a, T>(
    ctx: &Ctx<'_>,
    v: &'a Option<Spanned<T>>,
    kind: &Spanned<String>,
    key: &str,
) -> Result<&'a Spanned<T>, PolicyError> {
    v.as_ref().map_or_else(
        || {
            ctx.err(
                kind.span(),
                &format!("topology.{key}"),
                format!("a `{}` topology needs `{key}`", kind.get_ref()),
            )
        },
        Ok,
    )
}

fn count(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<i64>>,
    kind: &Spanned<String>,
    key: &str,
    lo: i64,
    hi: i64,
) -> Result<usize, PolicyError> {
    let v = need(ctx, v, kind, key)?;
    Ok(ctx.int(v, &format!("topology.{key}"), lo, hi)? as usize)
}

fn req_link(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<LinkFile>>,
    kind: &Spanned<String>,
    key: &str,
) -> Result<(LinkParams, f64), PolicyError> {
    link(ctx, need(ctx, v, kind, key)?, &format!("topology.{key}"))
}

/// A link of a topology kind without per-role loss.
fn lossless(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<LinkFile>>,
    kind: &Spanned<String>,
    key: &str,
) -> Result<LinkParams, PolicyError> {
    let l = need(ctx, v, kind, key)?;
    if let Some(p) = &l.get_ref().loss {
        return ctx.err(
            p.span(),
            &format!("topology.{key}.loss"),
            "random loss is supported on leaf-spine, dumbbell and custom links",
        );
    }
    Ok(link(ctx, l, &format!("topology.{key}"))?.0)
}

/// A built-in topology and the loss probabilities of its host links and of
/// its other links.
fn builtin(ctx: &Ctx<'_>, f: &TopologyFile) -> Result<(Topology, f64, f64), PolicyError> {
    let kind = &f.kind;
    let topo_err = |e: TopologyError| ctx.index.at_key("topology", e.to_string());
    match kind.get_ref().as_str() {
        "leaf-spine" => {
            let (host, hl) = req_link(ctx, &f.host_link, kind, "host_link")?;
            let (fabric, fl) = req_link(ctx, &f.fabric_link, kind, "fabric_link")?;
            let leaves = count(ctx, &f.leaves, kind, "leaves", 1, 4096)?;
            let spines = count(ctx, &f.spines, kind, "spines", 1, 4096)?;
            let per = count(ctx, &f.hosts_per_leaf, kind, "hosts_per_leaf", 1, 4096)?;
            let hosts = leaves * per;
            check_size(
                hosts + leaves + spines,
                hosts,
                2 * (hosts + leaves * spines),
                leaves,
            )
            .map_err(topo_err)?;
            let t = Topology::leaf_spine(leaves, spines, per, host, fabric).map_err(topo_err)?;
            Ok((t, hl, fl))
        }
        "fat-tree" => {
            let host = lossless(ctx, &f.host_link, kind, "host_link")?;
            let edge = lossless(ctx, &f.edge_link, kind, "edge_link")?;
            let core = lossless(ctx, &f.core_link, kind, "core_link")?;
            let k = need(ctx, &f.k, kind, "k")?;
            let kv = ctx.int(k, "topology.k", 2, 64)?;
            if kv % 2 != 0 {
                return ctx.err(k.span(), "topology.k", "a fat tree's k is even");
            }
            let k = kv as usize;
            check_size(
                k * k * k / 4 + 5 * k * k / 4,
                k * k * k / 4,
                3 * k * k * k / 2,
                k * k / 2,
            )
            .map_err(topo_err)?;
            let t = Topology::fat_tree(k, host, edge, core).map_err(topo_err)?;
            Ok((t, 0.0, 0.0))
        }
        "dumbbell" => {
            let (access, al) = req_link(ctx, &f.access_link, kind, "access_link")?;
            let (neck, nl) = req_link(ctx, &f.bottleneck, kind, "bottleneck")?;
            let senders = count(ctx, &f.senders, kind, "senders", 1, 1 << 16)?;
            let receivers = count(ctx, &f.receivers, kind, "receivers", 1, 1 << 16)?;
            let hosts = senders + receivers;
            check_size(hosts + 2, hosts, 2 * (hosts + 1), 2).map_err(topo_err)?;
            let t = Topology::dumbbell(senders, receivers, access, neck).map_err(topo_err)?;
            Ok((t, al, nl))
        }
        _ => {
            let access = lossless(ctx, &f.access_link, kind, "access_link")?;
            let core = lossless(ctx, &f.router_link, kind, "router_link")?;
            let routers = count(ctx, &f.routers, kind, "routers", 2, 1024)?;
            let per = count(
                ctx,
                &f.hosts_per_router,
                kind,
                "hosts_per_router",
                1,
                1 << 16,
            )?;
            let hosts = routers * per;
            check_size(hosts + routers, hosts, 2 * (hosts + routers), routers).map_err(topo_err)?;
            let t = Topology::parking_lot(routers, per, access, core).map_err(topo_err)?;
            Ok((t, 0.0, 0.0))
        }
    }
}

/// Builds the topology and the per-port random losses.
pub(super) fn build(
    ctx: &Ctx<'_>,
    f: &TopologyFile,
) -> Result<(Topology, LinkExtras), PolicyError> {
    let kind = &f.kind;
    let Some(&(_, allowed)) = KEYS.iter().find(|(k, _)| *k == kind.get_ref().as_str()) else {
        let names: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
        let msg = format!(
            "unknown topology `{}` (expected {})",
            kind.get_ref(),
            names.join(", ")
        );
        return ctx.err(kind.span(), "topology.kind", msg);
    };
    if let Some((k, at)) = present(f).into_iter().find(|(k, _)| !allowed.contains(k)) {
        let msg = format!("`{k}` does not apply to a `{}` topology", kind.get_ref());
        return ctx.err(at..at, &format!("topology.{k}"), msg);
    }
    if kind.get_ref() == "custom" {
        return custom(ctx, f);
    }
    let (topo, host_loss, other_loss) = builtin(ctx, f)?;
    let mut extras = LinkExtras::default();
    for p in 0..topo.ports().len() as u32 {
        let loss = if is_host_port(&topo, p) {
            host_loss
        } else {
            other_loss
        };
        if loss > 0.0 {
            extras.loss.push((p, loss));
        }
    }
    Ok((topo, extras))
}

fn is_host_port(t: &Topology, p: u32) -> bool {
    let s = &t.ports()[p as usize];
    t.host_index(s.from) != crate::topology::NOT_A_HOST
        || t.host_index(s.to) != crate::topology::NOT_A_HOST
}

fn custom(ctx: &Ctx<'_>, f: &TopologyFile) -> Result<(Topology, LinkExtras), PolicyError> {
    let kind = &f.kind;
    let mut b = TopologyBuilder::new();
    for (key, list, nk) in [
        ("hosts", &f.hosts, NodeKind::Host),
        ("switches", &f.switches, NodeKind::Switch),
    ] {
        let list = need(ctx, list, kind, key)?;
        for name in list.get_ref() {
            if let Err(e) = b.node(name, nk) {
                return ctx.err(list.span(), &format!("topology.{key}"), e.to_string());
            }
        }
    }
    if f.link.is_empty() {
        return ctx.err(
            kind.span(),
            "topology.link",
            "a `custom` topology needs [[topology.link]]s",
        );
    }
    let mut losses = Vec::new();
    for (i, l) in f.link.iter().enumerate() {
        let key = format!("topology.link[{i}]");
        let lf = l.get_ref();
        let ends = lf.ends.get_ref();
        if ends.len() != 2 {
            return ctx.err(
                lf.ends.span(),
                &format!("{key}.ends"),
                "a link has two ends: [\"a\", \"b\"]",
            );
        }
        let as_link = Spanned::new(
            l.span(),
            LinkFile {
                rate: lf.rate.clone(),
                delay: lf.delay.clone(),
                buffer: lf.buffer.clone(),
                loss: lf.loss.clone(),
            },
        );
        let (params, loss) = link(ctx, &as_link, &key)?;
        if let Err(e) = b.link_names(&ends[0], &ends[1], params) {
            return ctx.err(lf.ends.span(), &format!("{key}.ends"), e.to_string());
        }
        if loss > 0.0 {
            let a = b.find(&ends[0]).expect("linked");
            let c = b.find(&ends[1]).expect("linked");
            losses.push((a, c, loss));
        }
    }
    let topo = b
        .finish()
        .map_err(|e| ctx.index.at_key("topology", e.to_string()))?;
    let mut extras = LinkExtras::default();
    for (a, c, loss) in losses {
        for (p, s) in topo.ports().iter().enumerate() {
            if (s.from == a && s.to == c) || (s.from == c && s.to == a) {
                extras.loss.push((p as u32, loss));
            }
        }
    }
    Ok((topo, extras))
}
