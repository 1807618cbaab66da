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
use crate::time::Duration;
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

/// Field helpers bound to one scheme section.
struct Fields<'a> {
    ctx: &'a Ctx<'a>,
    i: usize,
    s: &'a SchemeFile,
}

type Dur = Option<Spanned<eiffel_policy::units::Time>>;

impl Fields<'_> {
    fn key(&self, k: &str) -> String {
        format!("scheme[{}].{k}", self.i)
    }

    /// An error if `k` (at `at`) is set on a scheme it does not apply to.
    fn refuse(
        &self,
        k: &str,
        at: Option<core::ops::Range<usize>>,
        applies: &str,
    ) -> Result<(), PolicyError> {
        match at {
            Some(at) => self.ctx.err(
                at,
                &self.key(k),
                format!("`{k}` applies to {applies} schemes"),
            ),
            None => Ok(()),
        }
    }

    fn window(&self, v: &Option<Spanned<i64>>, k: &str, d: u32) -> Result<u32, PolicyError> {
        v.as_ref().map_or(Ok(d), |w| {
            self.ctx
                .int(w, &self.key(k), 1, i64::from(MAX_WINDOW))
                .map(|w| w as u32)
        })
    }

    fn dur(v: &Dur, d: Duration) -> Duration {
        v.as_ref()
            .map_or(d, |x| Duration::from_nanos(x.get_ref().get()))
    }

    fn buffer(
        &self,
        v: &Option<Spanned<eiffel_policy::units::Size>>,
        k: &str,
        d: u64,
    ) -> Result<u64, PolicyError> {
        match v {
            Some(b) if b.get_ref().get() < 1500 => self.ctx.err(
                b.span(),
                &self.key(k),
                "a buffer holds at least one 1500-byte packet",
            ),
            Some(b) => Ok(b.get_ref().get()),
            None => Ok(d),
        }
    }

    fn tcp(&self, dctcp: bool) -> Result<SchemeTransport, PolicyError> {
        let s = self.s;
        self.refuse("rto", s.rto.as_ref().map(Spanned::span), "pfabric")?;
        if !dctcp {
            self.refuse(
                "dctcp_gain",
                s.dctcp_gain.as_ref().map(Spanned::span),
                "dctcp",
            )?;
        }
        let d = TcpParams::default();
        let gain = match &s.dctcp_gain {
            Some(g) if *g.get_ref() > 0.0 && *g.get_ref() <= 1.0 => *g.get_ref(),
            Some(g) => {
                return self.ctx.err(
                    g.span(),
                    &self.key("dctcp_gain"),
                    "DCTCP's gain is in (0, 1]",
                )
            }
            None => d.dctcp_gain,
        };
        let p = TcpParams {
            init_window: self.window(&s.init_window, "init_window", d.init_window)?,
            max_window: self.window(&s.max_window, "max_window", d.max_window)?,
            min_rto: Self::dur(&s.min_rto, d.min_rto),
            init_rto: Self::dur(&s.init_rto, d.init_rto),
            max_rto: Self::dur(&s.max_rto, d.max_rto),
            dctcp_gain: gain,
        };
        if p.min_rto.is_zero() || p.min_rto > p.max_rto {
            return self.ctx.err(
                s.transport.span(),
                &self.key("min_rto"),
                "need 0 < min_rto <= max_rto",
            );
        }
        Ok(if dctcp {
            SchemeTransport::Dctcp(p)
        } else {
            SchemeTransport::Tcp(p)
        })
    }

    fn pfabric(&self) -> Result<SchemeTransport, PolicyError> {
        let s = self.s;
        for (k, at) in [
            ("min_rto", &s.min_rto),
            ("init_rto", &s.init_rto),
            ("max_rto", &s.max_rto),
        ] {
            self.refuse(k, at.as_ref().map(Spanned::span), "tcp and dctcp")?;
        }
        self.refuse(
            "dctcp_gain",
            s.dctcp_gain.as_ref().map(Spanned::span),
            "dctcp",
        )?;
        let d = PfabricParams::default();
        let init = self.window(&s.init_window, "init_window", d.init_window)?;
        let p = PfabricParams {
            init_window: init,
            max_window: self.window(&s.max_window, "max_window", init.max(d.max_window))?,
            rto: Self::dur(&s.rto, d.rto),
        };
        if p.rto.is_zero() {
            return self.ctx.err(
                s.transport.span(),
                &self.key("rto"),
                "the timeout must be positive",
            );
        }
        Ok(SchemeTransport::Pfabric(p))
    }

    fn transport(&self) -> Result<SchemeTransport, PolicyError> {
        match self.s.transport.get_ref().as_str() {
            "tcp" => self.tcp(false),
            "dctcp" => self.tcp(true),
            "pfabric" => self.pfabric(),
            other => self.ctx.err(
                self.s.transport.span(),
                &self.key("transport"),
                format!("unknown transport `{other}` (expected tcp, dctcp or pfabric)"),
            ),
        }
    }

    fn drop(&self, pfabric: bool) -> Result<DropPolicy, PolicyError> {
        match self
            .s
            .drop
            .as_ref()
            .map(|d| (d.get_ref().as_str(), d.span()))
        {
            None if pfabric => Ok(DropPolicy::LowestPriority),
            None | Some(("tail", _)) => Ok(DropPolicy::Tail),
            Some(("lowest-priority", _)) => Ok(DropPolicy::LowestPriority),
            Some((other, at)) => self.ctx.err(
                at,
                &self.key("drop"),
                format!("unknown drop rule `{other}` (expected tail or lowest-priority)"),
            ),
        }
    }

    fn scheme(&self) -> Result<Scheme, PolicyError> {
        let s = self.s;
        let transport = self.transport()?;
        let pfabric = matches!(transport, SchemeTransport::Pfabric(_));
        let ecn_threshold = match (&s.ecn_threshold, transport) {
            (Some(k), _) => Some(k.get_ref().get()),
            (None, SchemeTransport::Dctcp(_)) => Some(65 * 1500),
            (None, _) => None,
        };
        let vars = s
            .policy_vars
            .as_ref()
            .map(|v| v.get_ref().clone())
            .unwrap_or_default();
        let switch_policy = policy(self.ctx, &s.policy, &vars, &self.key("policy"))?;
        let host_policy = match &s.host_policy {
            Some(h) => policy(self.ctx, h, &vars, &self.key("host_policy"))?,
            None => Arc::clone(&switch_policy),
        };
        Ok(Scheme {
            name: s.name.get_ref().clone(),
            transport,
            switch_policy,
            host_policy,
            buffer: self.buffer(&s.buffer, "buffer", if pfabric { 36_000 } else { 225_000 })?,
            host_buffer: self.buffer(&s.host_buffer, "host_buffer", 1_000_000)?,
            drop: self.drop(pfabric)?,
            ecn_threshold,
        })
    }
}

/// Builds every scheme section.
pub(super) fn build(
    ctx: &Ctx<'_>,
    list: &[Spanned<SchemeFile>],
) -> Result<Vec<Scheme>, PolicyError> {
    let mut out = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let s = s.get_ref();
        if let Some(j) = list[..i]
            .iter()
            .position(|u| u.get_ref().name.get_ref() == s.name.get_ref())
        {
            let key = format!("scheme[{i}].name");
            return ctx.err(
                s.name.span(),
                &key,
                format!("duplicate scheme name (also scheme[{j}])"),
            );
        }
        out.push(Fields { ctx, i, s }.scheme()?);
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
