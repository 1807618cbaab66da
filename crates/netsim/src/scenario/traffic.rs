//! The `[[traffic]]` sections.
//!
//! | kind | keys |
//! |---|---|
//! | `poisson` | `sizes`, `flows` (count; without it, until the counted traffics' last arrival or `duration`), `share` (of the load, default 1), `hosts` (`"all"` or names), `class` |
//! | `coflows` | `sizes` (per sub-flow), `width` (mean sub-flows), `coflows` (count), `share`, `hosts`, `class`, `deadline` (packets carry the slack to the coflow's deadline) |
//! | `incast` | `senders` (names), `receiver`, `size` (per sender) or `sizes` (drawn per sender and round), `start`, `rounds`, `interval`, `class` |
//! | `flows` | `src`, `dst`, `count`, `size` (a size or `"inf"`), `start`, `stop`, `transport` (`scheme`, `udp-cbr`, `udp-onoff`), `rate`, `packet`, `on`, `off`, `shape`, `class`, `class_step` (flow `i` of `count` gets `class + i * class_step`), `observe` (record delays) |
//!
//! `sizes` is `"web-search"`, `"data-mining"`, a distribution file (see
//! [`crate::cdf`]), one size (`"100KB"`) or a uniform range (`["1KB", "10KB"]`).

use std::sync::Arc;

use eiffel_policy::units::{self, SizeUnit};
use eiffel_policy::{KeyIndex, PolicyError};
use toml::Spanned;

use super::file::TrafficFile;
use super::Ctx;
use crate::cdf::{Cdf, CdfError, PointsError};
use crate::time::{Duration, Rate, Time};
use crate::topology::Topology;
use crate::transport::udp::UdpPattern;
use crate::workload::{FlowTransport, HostSet, Sizes, Traffic};

/// Keys each kind accepts, besides `name`, `kind` and `class`.
const KEYS: [(&str, &[&str]); 4] = [
    ("poisson", &["sizes", "flows", "share", "hosts"]),
    (
        "coflows",
        &["sizes", "width", "coflows", "share", "hosts", "deadline"],
    ),
    (
        "incast",
        &[
            "senders", "receiver", "size", "sizes", "start", "rounds", "interval",
        ],
    ),
    (
        "flows",
        &[
            "src",
            "dst",
            "count",
            "size",
            "start",
            "stop",
            "transport",
            "rate",
            "packet",
            "on",
            "off",
            "shape",
            "class_step",
            "observe",
        ],
    ),
];

fn set_keys(t: &TrafficFile) -> Vec<(&'static str, usize)> {
    macro_rules! keys {
        ($($k:ident),*) => {{
            let mut v = Vec::new();
            $(if let Some(x) = &t.$k { v.push((stringify!($k), x.span().start)); })*
            v
        }};
    }
    keys!(
        sizes, share, hosts, flows, coflows, width, deadline, senders, receiver, rounds, interval,
        src, dst, count, size, start, stop, transport, rate, packet, on, off, shape, class_step,
        observe
    )
}

fn host(
    ctx: &Ctx<'_>,
    topo: &Topology,
    v: &Spanned<String>,
    key: &str,
) -> Result<u32, PolicyError> {
    topo.find_host(v.get_ref()).map_or_else(
        || {
            let why = if topo.find(v.get_ref()).is_some() {
                "is a switch, not a host"
            } else {
                "is not a host of the topology"
            };
            ctx.err(v.span(), key, format!("`{}` {why}", v.get_ref()))
        },
        Ok,
    )
}

fn sizes(ctx: &Ctx<'_>, v: &Spanned<toml::Value>, key: &str) -> Result<Sizes, PolicyError> {
    let one = |s: &str| {
        units::parse::<SizeUnit>(s)
            .map(|q| q.get())
            .map_err(|e| e.to_string())
    };
    match v.get_ref() {
        toml::Value::String(s) => match s.as_str() {
            "web-search" => Ok(Sizes::Cdf(Arc::new(Cdf::web_search()))),
            "data-mining" => Ok(Sizes::Cdf(Arc::new(Cdf::data_mining()))),
            other => {
                if let Ok(b) = one(other) {
                    if b == 0 {
                        return ctx.err(v.span(), key, "a flow size is at least 1 byte");
                    }
                    return Ok(Sizes::Fixed(b));
                }
                let path = ctx.path(other);
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    ctx.index.error(
                        v.span().start,
                        key,
                        format!(
                            "`{other}` is not web-search, data-mining or a size, and {} cannot be read: {e}",
                            path.display()
                        ),
                    )
                })?;
                let cdf = Cdf::parse(&text).map_err(|e| cdf_error(&path, &text, &e))?;
                Ok(Sizes::Cdf(Arc::new(cdf)))
            }
        },
        toml::Value::Array(a) if a.len() == 2 => {
            let get = |x: &toml::Value| x.as_str().ok_or_else(|| "sizes are strings with units".to_string()).and_then(one);
            match (get(&a[0]), get(&a[1])) {
                (Ok(lo), Ok(hi)) if lo >= 1 && lo <= hi => Ok(Sizes::Uniform(lo, hi)),
                (Ok(_), Ok(_)) => ctx.err(v.span(), key, "a range [\"min\", \"max\"] with 1 B <= min <= max"),
                (Err(e), _) | (_, Err(e)) => ctx.err(v.span(), key, e),
            }
        }
        _ => ctx.err(
            v.span(),
            key,
            "sizes: \"web-search\", \"data-mining\", a distribution file, a size such as \"100KB\", or [\"min\", \"max\"]",
        ),
    }
}

/// A distribution file's mistake in that file's own terms: its name, line and
/// key (`unit`, `points[3]`).
fn cdf_error(path: &std::path::Path, text: &str, e: &CdfError) -> PolicyError {
    let index = KeyIndex::new(&path.display().to_string(), text);
    match e {
        CdfError::Syntax(t) => index.toml_error(t),
        CdfError::Unit(u) => index.at_key("unit", u.to_string()),
        CdfError::Points(p) => {
            let key = match p {
                PointsError::Size { index, .. }
                | PointsError::Probability { index, .. }
                | PointsError::Decreasing { index } => format!("points[{index}]"),
                PointsError::Empty | PointsError::Incomplete { .. } => "points".to_string(),
            };
            index.at_key(&key, p.to_string())
        }
    }
}

fn hosts(
    ctx: &Ctx<'_>,
    topo: &Topology,
    v: &Option<Spanned<toml::Value>>,
    key: &str,
) -> Result<HostSet, PolicyError> {
    let Some(v) = v else {
        return Ok(HostSet::All);
    };
    match v.get_ref() {
        toml::Value::String(s) if s == "all" => Ok(HostSet::All),
        toml::Value::Array(a) => {
            let mut out = Vec::with_capacity(a.len());
            for x in a {
                let Some(name) = x.as_str() else {
                    return ctx.err(v.span(), key, "host names are strings");
                };
                out.push(host(
                    ctx,
                    topo,
                    &Spanned::new(v.span(), name.to_string()),
                    key,
                )?);
            }
            if out.len() < 2 {
                return ctx.err(v.span(), key, "random traffic needs at least two hosts");
            }
            Ok(HostSet::List(out))
        }
        _ => ctx.err(v.span(), key, "`\"all\"` or a list of host names"),
    }
}

fn share(ctx: &Ctx<'_>, v: &Option<Spanned<f64>>, key: &str) -> Result<f64, PolicyError> {
    match v {
        None => Ok(1.0),
        Some(s) if *s.get_ref() > 0.0 && *s.get_ref() <= 1.0 => Ok(*s.get_ref()),
        Some(s) => ctx.err(s.span(), key, "a share of the load in (0, 1]"),
    }
}

fn need<'a, T>(
    ctx: &Ctx<'_>,
    v: &'a Option<Spanned<T>>,
    at: &Spanned<String>,
    key: &str,
    kind: &str,
) -> Result<&'a Spanned<T>, PolicyError> {
    v.as_ref().map_or_else(
        || {
            ctx.err(
                at.span(),
                key,
                format!(
                    "`{kind}` traffic needs `{}`",
                    key.rsplit('.').next().unwrap_or(key)
                ),
            )
        },
        Ok,
    )
}

/// Builds every traffic section.
pub(super) fn build(
    ctx: &Ctx<'_>,
    list: &[Spanned<TrafficFile>],
    topo: &Topology,
) -> Result<Vec<Traffic>, PolicyError> {
    let mut out = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        let t = t.get_ref();
        let key = |k: &str| format!("traffic[{i}].{k}");
        if let Some(j) = list[..i]
            .iter()
            .position(|u| u.get_ref().name.get_ref() == t.name.get_ref())
        {
            return ctx.err(
                t.name.span(),
                &key("name"),
                format!("duplicate traffic name (also traffic[{j}])"),
            );
        }
        let kind = t.kind.get_ref().as_str();
        let Some(&(_, allowed)) = KEYS.iter().find(|(k, _)| *k == kind) else {
            return ctx.err(
                t.kind.span(),
                &key("kind"),
                format!(
                    "unknown traffic kind `{kind}` (expected poisson, coflows, incast or flows)"
                ),
            );
        };
        if let Some((k, at)) = set_keys(t).into_iter().find(|(k, _)| !allowed.contains(k)) {
            return ctx.err(
                at..at,
                &key(k),
                format!("`{k}` does not apply to `{kind}` traffic"),
            );
        }
        let class = match &t.class {
            Some(c) => ctx.int(c, &key("class"), 0, i64::from(u32::MAX))? as u32,
            None => 0,
        };
        let name = t.name.get_ref().clone();
        let count = |v: &Option<Spanned<i64>>, k: &str| -> Result<Option<u32>, PolicyError> {
            v.as_ref()
                .map(|n| ctx.int(n, &key(k), 1, 1 << 28).map(|n| n as u32))
                .transpose()
        };
        let traffic = match kind {
            "poisson" => Traffic::Poisson {
                name,
                sizes: sizes(
                    ctx,
                    need(ctx, &t.sizes, &t.kind, &key("sizes"), kind)?,
                    &key("sizes"),
                )?,
                share: share(ctx, &t.share, &key("share"))?,
                hosts: hosts(ctx, topo, &t.hosts, &key("hosts"))?,
                flows: count(&t.flows, "flows")?,
                class,
            },
            "coflows" => Traffic::Coflows {
                name,
                sizes: sizes(
                    ctx,
                    need(ctx, &t.sizes, &t.kind, &key("sizes"), kind)?,
                    &key("sizes"),
                )?,
                width: count(&t.width, "width")?.unwrap_or(10),
                share: share(ctx, &t.share, &key("share"))?,
                hosts: hosts(ctx, topo, &t.hosts, &key("hosts"))?,
                coflows: count(&t.coflows, "coflows")?,
                class,
                deadline: t.deadline.as_ref().is_some_and(|d| *d.get_ref()),
            },
            "incast" => incast(ctx, t, topo, i, class)?,
            _ => flows(ctx, t, topo, i, class)?,
        };
        out.push(traffic);
    }
    Ok(out)
}

fn size_of(
    ctx: &Ctx<'_>,
    v: &Spanned<String>,
    key: &str,
    long_ok: bool,
) -> Result<u64, PolicyError> {
    if long_ok && (v.get_ref() == "inf" || v.get_ref() == "long-lived") {
        return Ok(u64::MAX);
    }
    match units::parse::<SizeUnit>(v.get_ref()) {
        Ok(q) if q.get() >= 1 => Ok(q.get()),
        Ok(_) => ctx.err(v.span(), key, "a flow size is at least 1 byte"),
        Err(e) => ctx.err(
            v.span(),
            key,
            if long_ok {
                format!("{e}; or \"inf\" for a long-lived flow")
            } else {
                e.to_string()
            },
        ),
    }
}

fn incast(
    ctx: &Ctx<'_>,
    t: &TrafficFile,
    topo: &Topology,
    i: usize,
    class: u32,
) -> Result<Traffic, PolicyError> {
    let key = |k: &str| format!("traffic[{i}].{k}");
    let senders = need(ctx, &t.senders, &t.kind, &key("senders"), "incast")?;
    let mut list = Vec::new();
    for s in senders.get_ref() {
        list.push(host(
            ctx,
            topo,
            &Spanned::new(senders.span(), s.clone()),
            &key("senders"),
        )?);
    }
    let receiver = host(
        ctx,
        topo,
        need(ctx, &t.receiver, &t.kind, &key("receiver"), "incast")?,
        &key("receiver"),
    )?;
    if list.contains(&receiver) {
        return ctx.err(
            senders.span(),
            &key("senders"),
            "the receiver cannot also send to itself",
        );
    }
    let sizes = match (&t.size, &t.sizes) {
        (Some(s), None) => Sizes::Fixed(size_of(ctx, s, &key("size"), false)?),
        (None, Some(s)) => sizes(ctx, s, &key("sizes"))?,
        (Some(_), Some(s)) => {
            return ctx.err(s.span(), &key("sizes"), "give `size` or `sizes`, not both")
        }
        (None, None) => {
            return ctx.err(
                t.kind.span(),
                &key("size"),
                "`incast` traffic needs `size` or `sizes`",
            )
        }
    };
    Ok(Traffic::Incast {
        name: t.name.get_ref().clone(),
        senders: list,
        receiver,
        sizes,
        start: Time(t.start.as_ref().map_or(0, |s| s.get_ref().get())),
        rounds: t
            .rounds
            .as_ref()
            .map(|r| ctx.int(r, &key("rounds"), 1, 1 << 20))
            .transpose()?
            .unwrap_or(1) as u32,
        interval: Duration::from_nanos(
            t.interval.as_ref().map_or(1_000_000, |s| s.get_ref().get()),
        ),
        class,
    })
}

/// The `transport` of a `flows` traffic and its datagram keys.
fn flow_transport(
    ctx: &Ctx<'_>,
    t: &TrafficFile,
    key: &dyn Fn(&str) -> String,
) -> Result<FlowTransport, PolicyError> {
    let transport = t
        .transport
        .as_ref()
        .map_or("scheme", |s| s.get_ref().as_str());
    let udp_only = [("rate", t.rate.is_some()), ("packet", t.packet.is_some())];
    let onoff_only = [
        ("on", t.on.is_some()),
        ("off", t.off.is_some()),
        ("shape", t.shape.is_some()),
    ];
    match transport {
        "scheme" => {
            if let Some((k, _)) = udp_only.iter().chain(&onoff_only).find(|(_, p)| *p) {
                return ctx.err(
                    t.kind.span(),
                    &key(k),
                    format!("`{k}` applies to udp-cbr and udp-onoff flows"),
                );
            }
            Ok(FlowTransport::Scheme)
        }
        "udp-cbr" | "udp-onoff" => {
            let rate = need(ctx, &t.rate, &t.kind, &key("rate"), transport)?;
            if rate.get_ref().get() == 0 {
                return ctx.err(rate.span(), &key("rate"), "the rate must be positive");
            }
            let len = t.packet.as_ref().map_or(Ok(1500), |p| {
                let b = p.get_ref().get();
                if (40..=9000).contains(&b) {
                    Ok(b as u16)
                } else {
                    ctx.err(p.span(), &key("packet"), "a packet of 40 B to 9000 B")
                }
            })?;
            let pattern = if transport == "udp-cbr" {
                if let Some((k, _)) = onoff_only.iter().find(|(_, p)| *p) {
                    return ctx.err(
                        t.kind.span(),
                        &key(k),
                        format!("`{k}` applies to udp-onoff flows"),
                    );
                }
                UdpPattern::Cbr
            } else {
                on_off(ctx, t, key, transport)?
            };
            Ok(FlowTransport::Udp {
                rate: Rate::from_bps(rate.get_ref().get()),
                len,
                pattern,
            })
        }
        other => {
            let at = t.transport.as_ref().map_or(t.kind.span(), Spanned::span);
            ctx.err(
                at,
                &key("transport"),
                format!("unknown transport `{other}` (expected scheme, udp-cbr or udp-onoff)"),
            )
        }
    }
}

/// The Pareto on/off pattern of a `udp-onoff` flow.
fn on_off(
    ctx: &Ctx<'_>,
    t: &TrafficFile,
    key: &dyn Fn(&str) -> String,
    kind: &str,
) -> Result<UdpPattern, PolicyError> {
    let on = need(ctx, &t.on, &t.kind, &key("on"), kind)?;
    let off = need(ctx, &t.off, &t.kind, &key("off"), kind)?;
    let shape = match &t.shape {
        Some(s) if *s.get_ref() > 1.0 && s.get_ref().is_finite() => *s.get_ref(),
        Some(s) => {
            return ctx.err(
                s.span(),
                &key("shape"),
                "the Pareto shape must be above 1 (for a finite mean)",
            )
        }
        None => 1.5,
    };
    if on.get_ref().get() == 0 || off.get_ref().get() == 0 {
        return ctx.err(on.span(), &key("on"), "on and off periods must be positive");
    }
    Ok(UdpPattern::OnOff {
        on: Duration::from_nanos(on.get_ref().get()),
        off: Duration::from_nanos(off.get_ref().get()),
        shape,
    })
}

fn flows(
    ctx: &Ctx<'_>,
    t: &TrafficFile,
    topo: &Topology,
    i: usize,
    class: u32,
) -> Result<Traffic, PolicyError> {
    let key = |k: &str| format!("traffic[{i}].{k}");
    let src = host(
        ctx,
        topo,
        need(ctx, &t.src, &t.kind, &key("src"), "flows")?,
        &key("src"),
    )?;
    let dst_v = need(ctx, &t.dst, &t.kind, &key("dst"), "flows")?;
    let dst = host(ctx, topo, dst_v, &key("dst"))?;
    if src == dst {
        return ctx.err(
            dst_v.span(),
            &key("dst"),
            "a flow from a host to itself never enters the network",
        );
    }
    let transport = flow_transport(ctx, t, &key)?;
    let udp = matches!(transport, FlowTransport::Udp { .. });
    let size = match &t.size {
        Some(s) if udp => {
            return ctx.err(
                s.span(),
                &key("size"),
                "datagram flows run from `start` to `stop`: no size",
            )
        }
        Some(s) => size_of(ctx, s, &key("size"), true)?,
        None if udp => u64::MAX,
        None => {
            return ctx.err(
                t.kind.span(),
                &key("size"),
                "scheme flows need a `size` (or \"inf\")",
            )
        }
    };
    if let (Some(st), false) = (&t.stop, udp) {
        return ctx.err(
            st.span(),
            &key("stop"),
            "`stop` applies to datagram flows; long-lived flows run to the end",
        );
    }
    let int =
        |v: &Option<Spanned<i64>>, k: &str, lo: i64, hi: i64, d: i64| -> Result<u32, PolicyError> {
            Ok(v.as_ref()
                .map(|c| ctx.int(c, &key(k), lo, hi))
                .transpose()?
                .unwrap_or(d) as u32)
        };
    Ok(Traffic::Flows {
        name: t.name.get_ref().clone(),
        src,
        dst,
        count: int(&t.count, "count", 1, 1 << 20, 1)?,
        size,
        start: Time(t.start.as_ref().map_or(0, |s| s.get_ref().get())),
        stop: t.stop.as_ref().map(|s| Time(s.get_ref().get())),
        transport,
        class,
        class_step: int(&t.class_step, "class_step", 0, 1 << 16, 0)?,
        observe: t.observe.as_ref().is_some_and(|o| *o.get_ref()),
    })
}
