//! The `[report]` section: size classes, queue sampling, the measurement window
//! and the panels of the SVG plot.
//!
//! | key | value | default |
//! |---|---|---|
//! | `size_classes` | increasing sizes splitting flows into classes | `["100KB", "10MB"]`: `small` (at most 100 KB), `medium`, `large` (above 10 MB) |
//! | `sample_ports` | port names `"a->b"` whose queue is sampled | none |
//! | `sample_interval` | duration | `100us` |
//! | `measure_from` | duration: long-lived goodput and datagram delays count from here | `0s` |
//! | `check` | verify every packet balance at the end of each run | `false` |
//! | `[[report.panel]]` | `title`, `metric`, `size_class`, `traffic`, `x` (`load` or `scheme`), `log_y` | |
//!
//! Metrics: `mean_slowdown`, `p99_slowdown`, `mean_fct_ms`, `p99_fct_ms`,
//! `mean_rate_mbps` (flow size over FCT) by size class; `mean_cct_ms`,
//! `p99_cct_ms` of coflows; `mean_delay_ms`, `max_delay_ms`, `stddev_delay_ms`,
//! `jitter_ms` of an observed traffic; `goodput_mbps` and `jain` of long-lived
//! flows.

use eiffel_policy::units::{self, SizeUnit};
use eiffel_policy::PolicyError;

use super::file::{PanelFile, ReportFile};
use super::Ctx;
use crate::time::Duration;
use crate::topology::Topology;
use crate::workload::Traffic;
use toml::Spanned;

/// What a panel plots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Mean FCT over ideal FCT.
    MeanSlowdown,
    /// 99th percentile of the same.
    P99Slowdown,
    /// Mean flow completion time, ms.
    MeanFct,
    /// 99th percentile FCT, ms.
    P99Fct,
    /// Mean of size / FCT, Mbit/s.
    MeanRate,
    /// Mean coflow completion time, ms.
    MeanCct,
    /// 99th percentile CCT, ms.
    P99Cct,
    /// Mean one-way delay of an observed traffic, ms.
    MeanDelay,
    /// Largest delay, ms.
    MaxDelay,
    /// Standard deviation of the delay, ms.
    StddevDelay,
    /// RFC 3550 jitter, ms.
    Jitter,
    /// Mean goodput of long-lived flows, Mbit/s.
    Goodput,
    /// Jain's fairness index of long-lived flows' goodputs.
    Jain,
}

impl Metric {
    /// Every metric with its name.
    pub const ALL: [(Metric, &'static str); 13] = [
        (Metric::MeanSlowdown, "mean_slowdown"),
        (Metric::P99Slowdown, "p99_slowdown"),
        (Metric::MeanFct, "mean_fct_ms"),
        (Metric::P99Fct, "p99_fct_ms"),
        (Metric::MeanRate, "mean_rate_mbps"),
        (Metric::MeanCct, "mean_cct_ms"),
        (Metric::P99Cct, "p99_cct_ms"),
        (Metric::MeanDelay, "mean_delay_ms"),
        (Metric::MaxDelay, "max_delay_ms"),
        (Metric::StddevDelay, "stddev_delay_ms"),
        (Metric::Jitter, "jitter_ms"),
        (Metric::Goodput, "goodput_mbps"),
        (Metric::Jain, "jain"),
    ];

    /// The name used in scenario files and JSON.
    #[must_use]
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(m, _)| *m == self)
            .map_or("?", |(_, n)| n)
    }

    /// Whether it is measured per size class.
    #[must_use]
    pub fn by_size(self) -> bool {
        matches!(
            self,
            Metric::MeanSlowdown
                | Metric::P99Slowdown
                | Metric::MeanFct
                | Metric::P99Fct
                | Metric::MeanRate
        )
    }

    /// Whether it is a delay of an observed traffic.
    #[must_use]
    pub fn is_delay(self) -> bool {
        matches!(
            self,
            Metric::MeanDelay | Metric::MaxDelay | Metric::StddevDelay | Metric::Jitter
        )
    }
}

/// The x axis of a panel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// One line per scheme over the loads.
    Load,
    /// One bar per scheme.
    Scheme,
}

/// One panel of the plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    /// Title.
    pub title: String,
    /// What it shows.
    pub metric: Metric,
    /// Size class (per-size metrics; `None`: all flows).
    pub size_class: Option<String>,
    /// Traffic it is restricted to (required for delays).
    pub traffic: Option<String>,
    /// Its x axis.
    pub x: Axis,
    /// Logarithmic y axis.
    pub log_y: bool,
}

/// Reporting options.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportSpec {
    /// Class boundaries in bytes (a flow of size `s` is in the first class
    /// whose boundary is `>= s`, or the last).
    pub size_edges: Vec<u64>,
    /// Class names, one more than the edges.
    pub size_names: Vec<String>,
    /// Ports whose queues are sampled.
    pub sample_ports: Vec<u32>,
    /// Sampling interval.
    pub sample_interval: Duration,
    /// Start of the measurement window.
    pub measure_from: Duration,
    /// Check every balance at the end of every run.
    pub check: bool,
    /// Plot panels.
    pub panels: Vec<Panel>,
}

impl Default for ReportSpec {
    fn default() -> Self {
        ReportSpec {
            size_edges: vec![100_000, 10_000_000],
            size_names: vec!["small".into(), "medium".into(), "large".into()],
            sample_ports: Vec::new(),
            sample_interval: Duration::from_micros(100),
            measure_from: Duration::ZERO,
            check: false,
            panels: Vec::new(),
        }
    }
}

impl ReportSpec {
    /// The size class of a flow of `size` bytes.
    #[must_use]
    pub fn class_of(&self, size: u64) -> usize {
        self.size_edges
            .iter()
            .position(|&e| size <= e)
            .unwrap_or(self.size_edges.len())
    }
}

fn human(b: u64) -> String {
    units::fmt_size(b).replace(' ', "")
}

/// Class boundaries and names from `size_classes`.
fn size_classes(
    ctx: &Ctx<'_>,
    sc: &Spanned<Vec<String>>,
) -> Result<(Vec<u64>, Vec<String>), PolicyError> {
    let mut edges = Vec::new();
    for s in sc.get_ref() {
        let b = units::parse::<SizeUnit>(s).map_err(|e| {
            ctx.index
                .error(sc.span().start, "report.size_classes", e.to_string())
        })?;
        edges.push(b.get());
    }
    if edges.is_empty() || edges.windows(2).any(|w| w[0] >= w[1]) {
        return ctx.err(sc.span(), "report.size_classes", "give increasing sizes");
    }
    let mut names = Vec::new();
    let mut lo = 0;
    for &e in &edges {
        names.push(format!("({},{}]", human(lo), human(e)));
        lo = e;
    }
    names.push(format!("({},inf)", human(lo)));
    Ok((edges, names))
}

/// One `[[report.panel]]`.
fn panel(
    ctx: &Ctx<'_>,
    i: usize,
    p: &PanelFile,
    spec: &ReportSpec,
    traffic: &[Traffic],
) -> Result<Panel, PolicyError> {
    let key = |k: &str| format!("report.panel[{i}].{k}");
    let Some(&(metric, _)) = Metric::ALL.iter().find(|(_, n)| n == p.metric.get_ref()) else {
        let names: Vec<&str> = Metric::ALL.iter().map(|(_, n)| *n).collect();
        let msg = format!(
            "unknown metric `{}` (expected one of {})",
            p.metric.get_ref(),
            names.join(", ")
        );
        return ctx.err(p.metric.span(), &key("metric"), msg);
    };
    let size_class = match &p.size_class {
        Some(c) if !metric.by_size() => {
            let msg = format!("`{}` is not measured by size class", metric.name());
            return ctx.err(c.span(), &key("size_class"), msg);
        }
        Some(c) if c.get_ref() != "all" && !spec.size_names.contains(c.get_ref()) => {
            let msg = format!(
                "unknown size class (expected all, {})",
                spec.size_names.join(", ")
            );
            return ctx.err(c.span(), &key("size_class"), msg);
        }
        Some(c) => Some(c.get_ref().clone()),
        None => None,
    };
    let traffic_name = match &p.traffic {
        Some(t) if !traffic.iter().any(|x| x.name() == t.get_ref()) => {
            return ctx.err(
                t.span(),
                &key("traffic"),
                format!("no traffic called `{}`", t.get_ref()),
            );
        }
        Some(t) => Some(t.get_ref().clone()),
        None if metric.is_delay() => {
            return ctx.err(
                p.metric.span(),
                &key("traffic"),
                "a delay panel names the observed `traffic`",
            )
        }
        None => None,
    };
    let x = match p.x.as_ref().map(|x| (x.get_ref().as_str(), x.span())) {
        None | Some(("load", _)) => Axis::Load,
        Some(("scheme", _)) => Axis::Scheme,
        Some((other, at)) => {
            return ctx.err(
                at,
                &key("x"),
                format!("unknown axis `{other}` (expected load or scheme)"),
            )
        }
    };
    Ok(Panel {
        title: p.title.get_ref().clone(),
        metric,
        size_class,
        traffic: traffic_name,
        x,
        log_y: p.log_y.as_ref().is_some_and(|l| *l.get_ref()),
    })
}

/// Builds the report section.
pub(super) fn build(
    ctx: &Ctx<'_>,
    r: Option<&ReportFile>,
    topo: &Topology,
    traffic: &[Traffic],
) -> Result<ReportSpec, PolicyError> {
    let mut spec = ReportSpec::default();
    let Some(r) = r else {
        return Ok(spec);
    };
    if let Some(sc) = &r.size_classes {
        (spec.size_edges, spec.size_names) = size_classes(ctx, sc)?;
    }
    if let Some(ports) = &r.sample_ports {
        for name in ports.get_ref() {
            let Some(p) = topo.find_port(name) else {
                let msg =
                    format!("`{name}` is not a port (write it as \"from->to\", two linked nodes)");
                return ctx.err(ports.span(), "report.sample_ports", msg);
            };
            spec.sample_ports.push(p);
        }
    }
    if let Some(i) = &r.sample_interval {
        if i.get_ref().get() == 0 {
            return ctx.err(i.span(), "report.sample_interval", "must be positive");
        }
        spec.sample_interval = Duration::from_nanos(i.get_ref().get());
    }
    if let Some(m) = &r.measure_from {
        spec.measure_from = Duration::from_nanos(m.get_ref().get());
    }
    spec.check = r.check.as_ref().is_some_and(|c| *c.get_ref());
    for (i, p) in r.panel.iter().enumerate() {
        let panel = panel(ctx, i, p.get_ref(), &spec, traffic)?;
        spec.panels.push(panel);
    }
    Ok(spec)
}
