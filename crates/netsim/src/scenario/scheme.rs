//! The `[[scheme]]` sections.
//!
//! | key | value | default |
//! |---|---|---|
//! | `name` | string, unique | |
//! | `transport` | `tcp`, `dctcp`, `pfabric` | |
//! | `policy` | a policy file (relative to the scenario), or `fifo` | |
//! | `host_policy` | the same, for host NICs | `policy` |
//! | `policy_vars` | `{ name = "value" }`: `${name}` in the policy files is replaced by `value` | |
//! | `buffer` | size of each switch port's buffer | `225KB` (pFabric: `36KB`) |
//! | `host_buffer` | size of each host NIC's buffer | `1MB` |
//! | `drop` | `tail`, `lowest-priority` | `tail` (pFabric: `lowest-priority`) |
//! | `ecn_threshold` | DCTCP's marking threshold `K` at every port | `97500B` (65 packets) for DCTCP |
//! | `init_window`, `max_window` | segments | TCP 10 and 511; pFabric 12 and 12 |
//! | `min_rto`, `init_rto`, `max_rto` | durations (TCP, DCTCP) | 200 ms, 1 s, 60 s |
//! | `rto` | duration (pFabric) | 45 us |
//! | `dctcp_gain` | DCTCP's `g` | 1/16 |

use std::collections::BTreeMap;
use std::sync::Arc;

use eiffel_policy::{Policy, PolicyError};
use toml::Spanned;

use super::file::SchemeFile;
use super::Ctx;
use crate::port::DropPolicy;
use crate::setup::Scheme;
use crate::sim::SchemeTransport;
use crate::time::Delay;
use crate::transport::pfabric::PfabricParams;
use crate::transport::tcp::TcpParams;
use crate::transport::MAX_WINDOW;

/// The built-in `fifo` policy: one FIFO.
pub const FIFO_POLICY: &str = "[[node]]\nname = \"fifo\"\n";

/// Replaces `${name}` by its value; an unset variable is an error naming it.
fn substitute(text: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err("an unterminated `${`".into());
        };
        let name = &after[..end];
        let value = vars.get(name).ok_or_else(|| {
            format!("the policy uses `${{{name}}}`, which `policy_vars` does not set")
        })?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn policy(
    ctx: &Ctx<'_>,
    v: &Spanned<String>,
    vars: &BTreeMap<String, String>,
    key: &str,
) -> Result<Arc<Policy>, PolicyError> {
    if v.get_ref() == "fifo" {
        return Ok(Arc::new(Policy::parse(FIFO_POLICY, "fifo (built in)")?));
    }
    let path = ctx.path(v.get_ref());
    let name = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        ctx.index.error(
            v.span().start,
            key,
            format!("cannot read policy {name}: {e}"),
        )
    })?;
    let text = substitute(&text, vars)
        .map_err(|m| ctx.index.error(v.span().start, key, format!("{name}: {m}")))?;
    Ok(Arc::new(Policy::parse(&text, &name)?))
}

/// Builds every scheme section.
pub(super) fn build(
    ctx: &Ctx<'_>,
    list: &[Spanned<SchemeFile>],
) -> Result<Vec<Scheme>, PolicyError> {
    let mut out = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let s = s.get_ref();
        let key = |k: &str| format!("scheme[{i}].{k}");
        if let Some(j) = list[..i]
            .iter()
            .position(|u| u.get_ref().name.get_ref() == s.name.get_ref())
        {
            return ctx.err(
                s.name.span(),
                &key("name"),
                format!("duplicate scheme name (also scheme[{j}])"),
            );
        }
        let kind = s.transport.get_ref().as_str();
        let tcp_only = [
            ("min_rto", s.min_rto.as_ref().map(Spanned::span)),
            ("init_rto", s.init_rto.as_ref().map(Spanned::span)),
            ("max_rto", s.max_rto.as_ref().map(Spanned::span)),
        ];
        let refuse = |k: &str,
                      at: Option<core::ops::Range<usize>>,
                      applies: &str|
         -> Result<(), PolicyError> {
            match at {
                Some(at) => ctx.err(at, &key(k), format!("`{k}` applies to {applies} schemes")),
                None => Ok(()),
            }
        };
        let window = |v: &Option<Spanned<i64>>, k: &str, d: u32| -> Result<u32, PolicyError> {
            v.as_ref().map_or(Ok(d), |w| {
                ctx.int(w, &key(k), 1, i64::from(MAX_WINDOW))
                    .map(|w| w as u32)
            })
        };
        let dur = |v: &Option<Spanned<eiffel_policy::units::Time>>, d: Delay| {
            v.as_ref().map_or(d, |x| Delay(x.get_ref().get()))
        };
        let transport = match kind {
            "tcp" | "dctcp" => {
                refuse("rto", s.rto.as_ref().map(Spanned::span), "pfabric")?;
                if kind == "tcp" {
                    refuse(
                        "dctcp_gain",
                        s.dctcp_gain.as_ref().map(Spanned::span),
                        "dctcp",
                    )?;
                }
                let d = TcpParams::default();
                let gain = match &s.dctcp_gain {
                    Some(g) if *g.get_ref() > 0.0 && *g.get_ref() <= 1.0 => *g.get_ref(),
                    Some(g) => {
                        return ctx.err(g.span(), &key("dctcp_gain"), "DCTCP's gain is in (0, 1]")
                    }
                    None => d.dctcp_gain,
                };
                let p = TcpParams {
                    init_window: window(&s.init_window, "init_window", d.init_window)?,
                    max_window: window(&s.max_window, "max_window", d.max_window)?,
                    min_rto: dur(&s.min_rto, d.min_rto),
                    init_rto: dur(&s.init_rto, d.init_rto),
                    max_rto: dur(&s.max_rto, d.max_rto),
                    dctcp_gain: gain,
                };
                if p.min_rto.0 == 0 || p.min_rto > p.max_rto {
                    return ctx.err(
                        s.transport.span(),
                        &key("min_rto"),
                        "need 0 < min_rto <= max_rto",
                    );
                }
                if kind == "tcp" {
                    SchemeTransport::Tcp(p)
                } else {
                    SchemeTransport::Dctcp(p)
                }
            }
            "pfabric" => {
                for (k, at) in tcp_only {
                    refuse(k, at, "tcp and dctcp")?;
                }
                refuse(
                    "dctcp_gain",
                    s.dctcp_gain.as_ref().map(Spanned::span),
                    "dctcp",
                )?;
                let d = PfabricParams::default();
                let init = window(&s.init_window, "init_window", d.init_window)?;
                let p = PfabricParams {
                    init_window: init,
                    max_window: window(&s.max_window, "max_window", init.max(d.max_window))?,
                    rto: dur(&s.rto, d.rto),
                };
                if p.rto.0 == 0 {
                    return ctx.err(
                        s.transport.span(),
                        &key("rto"),
                        "the timeout must be positive",
                    );
                }
                SchemeTransport::Pfabric(p)
            }
            other => {
                return ctx.err(
                    s.transport.span(),
                    &key("transport"),
                    format!("unknown transport `{other}` (expected tcp, dctcp or pfabric)"),
                );
            }
        };
        let pfabric = matches!(transport, SchemeTransport::Pfabric(_));
        let drop = match s.drop.as_ref().map(|d| (d.get_ref().as_str(), d.span())) {
            None if pfabric => DropPolicy::LowestPriority,
            None | Some(("tail", _)) => DropPolicy::Tail,
            Some(("lowest-priority", _)) => DropPolicy::LowestPriority,
            Some((other, at)) => {
                return ctx.err(
                    at,
                    &key("drop"),
                    format!("unknown drop rule `{other}` (expected tail or lowest-priority)"),
                )
            }
        };
        let ecn_threshold = match (&s.ecn_threshold, kind) {
            (Some(k), _) => Some(k.get_ref().get()),
            (None, "dctcp") => Some(65 * 1500),
            (None, _) => None,
        };
        let vars = s
            .policy_vars
            .as_ref()
            .map(|v| v.get_ref().clone())
            .unwrap_or_default();
        let switch_policy = policy(ctx, &s.policy, &vars, &key("policy"))?;
        let host_policy = match &s.host_policy {
            Some(h) => policy(ctx, h, &vars, &key("host_policy"))?,
            None => Arc::clone(&switch_policy),
        };
        let size = |v: &Option<Spanned<eiffel_policy::units::Size>>,
                    k: &str,
                    d: u64|
         -> Result<u64, PolicyError> {
            match v {
                Some(b) if b.get_ref().get() < 1500 => ctx.err(
                    b.span(),
                    &key(k),
                    "a buffer holds at least one 1500-byte packet",
                ),
                Some(b) => Ok(b.get_ref().get()),
                None => Ok(d),
            }
        };
        out.push(Scheme {
            name: s.name.get_ref().clone(),
            transport,
            switch_policy,
            host_policy,
            buffer: size(&s.buffer, "buffer", if pfabric { 36_000 } else { 225_000 })?,
            host_buffer: size(&s.host_buffer, "host_buffer", 1_000_000)?,
            drop,
            ecn_threshold,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_substituted() {
        let mut v = BTreeMap::new();
        v.insert("d".to_string(), "qfq".to_string());
        assert_eq!(substitute("a = \"${d}\"\nb", &v).unwrap(), "a = \"qfq\"\nb");
        assert!(substitute("${e}", &v).unwrap_err().contains("`${e}`"));
        assert!(substitute("${d", &v).is_err());
    }
}
