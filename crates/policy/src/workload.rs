//! Workload files: the flows `eiffel run` sends through a policy.
//!
//! ```toml
//! seed = 1                     # generator seed (default 1)
//! duration = "2s"              # simulated time (default 1 s)
//! link_rate = "100Mbit"        # the emulated link (default 1 Gbit/s)
//!
//! [[flow]]
//! name = "web"                 # label in reports (unique)
//! class = 1                    # traffic class the policy's rules see (default 0)
//! count = 100                  # flows in this group (default 1); ids are consecutive
//! packet = "1500B"             # or a uniform range ["64B", "1500B"]
//! arrivals = "poisson"         # constant | poisson | onoff | greedy
//! rate = "5Mbit"               # per flow (constant, poisson, onoff)
//! start = "0s"                 # first flow's start (default 0)
//! stagger = "1ms"              # flow k starts at start + k * stagger
//! stop = "1s"                  # no arrivals from then on
//! size = ["10KB", "1MB"]       # finite flows (sizes taken in turn): FCTs are reported
//! ```
//!
//! `arrivals = "onoff"` takes `on` and `off` (mean period lengths, Pareto
//! distributed) and `shape` (default 1.5); `arrivals = "greedy"` keeps `window`
//! packets (default 32) of each flow queued. `deadline` (EDF: each packet's
//! deadline is its arrival plus this), `slack` (LSTF) and `priority` (strict
//! priority among the flows of a per-flow leaf) set the matching packet fields.
//! Workload flow ids number the flows of all groups in file order from 0; rules
//! with `flow` conditions match these ids.

use eiffel_sim::{FlowGroup, PacketSizes, Process, Workload};
use serde::Deserialize;
use toml::Spanned;

use crate::error::{self, KeyIndex, PolicyError};
use crate::units::{self, Rate, SizeUnit, Time, UnitError};

/// The workload `eiffel run` uses when none is given: [`crate::FIG6_WORKLOAD`].
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadFile {
    /// The flows and the seed.
    pub workload: Workload,
    /// Simulated time.
    pub duration: u64,
    /// Link rate in bits per second.
    pub link_rate: u64,
    /// Where each key is written, for errors about the workload as a whole.
    index: KeyIndex,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    seed: Option<Spanned<i64>>,
    duration: Option<Spanned<Time>>,
    link_rate: Option<Spanned<Rate>>,
    #[serde(default)]
    flow: Vec<FlowFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowFile {
    name: Spanned<String>,
    class: Option<Spanned<i64>>,
    count: Option<Spanned<i64>>,
    packet: Option<Spanned<toml::Value>>,
    arrivals: Spanned<String>,
    rate: Option<Spanned<Rate>>,
    window: Option<Spanned<i64>>,
    on: Option<Spanned<Time>>,
    off: Option<Spanned<Time>>,
    shape: Option<Spanned<f64>>,
    start: Option<Spanned<Time>>,
    stagger: Option<Spanned<Time>>,
    stop: Option<Spanned<Time>>,
    size: Option<Spanned<toml::Value>>,
    deadline: Option<Spanned<Time>>,
    slack: Option<Spanned<Time>>,
    priority: Option<Spanned<i64>>,
}

fn int(
    index: &KeyIndex,
    v: &Spanned<i64>,
    key: &str,
    lo: i64,
    hi: i64,
) -> Result<i64, PolicyError> {
    index.int_in(v, key, lo, hi, None)
}

/// One size, or a list of them, as strings with units.
fn sizes(index: &KeyIndex, v: &Spanned<toml::Value>, key: &str) -> Result<Vec<u64>, PolicyError> {
    let one = |x: &toml::Value| -> Result<u64, UnitError> {
        match x {
            toml::Value::String(s) => units::parse::<SizeUnit>(s).map(|q| q.get()),
            other => Err(units::bare::<SizeUnit>(other)),
        }
    };
    let err = |m: String| index.error(v.span().start, key, m);
    let unit_err = |e: UnitError| err(e.to_string());
    match v.get_ref() {
        toml::Value::Array(a) if a.is_empty() => Err(err("an empty list of sizes".into())),
        toml::Value::Array(a) => a.iter().map(|x| one(x).map_err(unit_err)).collect(),
        x => Ok(vec![one(x).map_err(unit_err)?]),
    }
}

/// Reads `[[flow]]` groups of one workload file, each error at its key.
struct Reader<'a> {
    index: &'a KeyIndex,
}

impl Reader<'_> {
    /// `flow[i].k`.
    fn key(i: usize, k: &str) -> String {
        format!("flow[{i}].{k}")
    }

    /// Flow group `i`; `earlier` are the groups before it.
    fn group(
        &self,
        i: usize,
        f: &FlowFile,
        earlier: &[FlowFile],
    ) -> Result<FlowGroup, PolicyError> {
        let index = self.index;
        let key = |k: &str| Self::key(i, k);
        let name = f.name.get_ref().clone();
        if let Some(j) = earlier.iter().position(|g| *g.name.get_ref() == name) {
            let first = index.line_of(earlier[j].name.span().start);
            let msg = format!("duplicate flow name `{name}` (first at line {first})");
            return Err(index.error(f.name.span().start, &key("name"), msg));
        }
        let class = match &f.class {
            Some(c) => int(index, c, &key("class"), 0, i64::from(u32::MAX))? as u32,
            None => 0,
        };
        let count = match &f.count {
            Some(c) => int(index, c, &key("count"), 1, 1 << 24)? as u32,
            None => 1,
        };
        let packets = self.packets(i, f)?;
        let process = self.process(i, f)?;
        let flow_sizes = match &f.size {
            Some(s) => sizes(index, s, &key("size"))?,
            None => Vec::new(),
        };
        if flow_sizes.contains(&0) {
            return Err(index.at_key(&key("size"), "flow sizes must be at least 1 B"));
        }
        let priority = match &f.priority {
            Some(p) => int(index, p, &key("priority"), 0, i64::MAX)? as u64,
            None => 0,
        };
        if f.slack.is_some() && f.priority.is_some() {
            let msg = "`slack` and `priority` both set the packet's rank: use one";
            return Err(index.at_key(&key("slack"), msg));
        }
        let t = |v: &Option<Spanned<Time>>| v.as_ref().map(|x| x.get_ref().get());
        let start = t(&f.start).unwrap_or(0);
        if let Some(stop) = t(&f.stop).filter(|&s| s <= start) {
            let msg = format!(
                "`stop` ({stop} ns) is not after `start` ({start} ns): the group would send nothing"
            );
            return Err(index.at_key(&key("stop"), msg));
        }
        Ok(FlowGroup {
            name,
            count,
            class,
            packets,
            process,
            start,
            stagger: t(&f.stagger).unwrap_or(0),
            stop: t(&f.stop),
            flow_sizes,
            deadline: t(&f.deadline),
            slack: t(&f.slack),
            priority,
        })
    }

    /// `packet`: one size or a uniform range.
    fn packets(&self, i: usize, f: &FlowFile) -> Result<PacketSizes, PolicyError> {
        let Some(p) = &f.packet else {
            return Ok(PacketSizes::Fixed(1500));
        };
        let key = Self::key(i, "packet");
        let v = sizes(self.index, p, &key)?;
        let bad = |m: &str| self.index.error(p.span().start, &key, m);
        if v.iter().any(|&l| l == 0 || l > u64::from(u16::MAX)) {
            return Err(bad("packet sizes must be 1 B..=65535 B"));
        }
        match v[..] {
            [l] => Ok(PacketSizes::Fixed(l as u32)),
            [a, b] if a <= b => Ok(PacketSizes::Uniform {
                min: a as u32,
                max: b as u32,
            }),
            _ => Err(bad(
                "give one size, or a range [\"min\", \"max\"] with min <= max",
            )),
        }
    }

    /// A key that applies to `kind` arrivals only, set on another kind.
    fn only(&self, i: usize, present: bool, k: &str, kind: &str) -> Result<(), PolicyError> {
        if present {
            let msg = format!("`{k}` applies to `{kind}` arrivals only");
            return Err(self.index.at_key(&Self::key(i, k), msg));
        }
        Ok(())
    }

    /// No `on`, `off` or `shape` outside `onoff` arrivals.
    fn no_onoff_keys(&self, i: usize, f: &FlowFile) -> Result<(), PolicyError> {
        let keys = [
            (f.on.is_some(), "on"),
            (f.off.is_some(), "off"),
            (f.shape.is_some(), "shape"),
        ];
        for (present, k) in keys {
            self.only(i, present, k, "onoff")?;
        }
        Ok(())
    }

    /// `rate`, required and positive.
    fn rate(&self, i: usize, f: &FlowFile) -> Result<u64, PolicyError> {
        let key = Self::key(i, "rate");
        let r = f.rate.as_ref().ok_or_else(|| {
            let msg = format!("`{}` arrivals need a `rate`", f.arrivals.get_ref());
            self.index.error(f.arrivals.span().start, &key, msg)
        })?;
        if r.get_ref().get() == 0 {
            let msg = "the rate must be positive";
            return Err(self.index.error(r.span().start, &key, msg));
        }
        Ok(r.get_ref().get())
    }

    /// `arrivals` and the keys of its process.
    fn process(&self, i: usize, f: &FlowFile) -> Result<Process, PolicyError> {
        match f.arrivals.get_ref().as_str() {
            kind @ ("constant" | "poisson") => {
                self.only(i, f.window.is_some(), "window", "greedy")?;
                self.no_onoff_keys(i, f)?;
                let rate_bps = self.rate(i, f)?;
                Ok(if kind == "constant" {
                    Process::Constant { rate_bps }
                } else {
                    Process::Poisson { rate_bps }
                })
            }
            "onoff" => self.onoff(i, f),
            "greedy" => {
                let others = "constant, poisson and onoff";
                self.only(i, f.rate.is_some(), "rate", others)?;
                self.no_onoff_keys(i, f)?;
                let window = match &f.window {
                    Some(w) => int(self.index, w, &Self::key(i, "window"), 1, 1 << 20)? as u32,
                    None => 32,
                };
                Ok(Process::Greedy { window })
            }
            other => Err(self.index.error(
                f.arrivals.span().start,
                &Self::key(i, "arrivals"),
                format!("unknown arrival process `{other}` (expected constant, poisson, onoff or greedy)"),
            )),
        }
    }

    /// On/off Pareto arrivals: `rate`, `on` and `off` means, `shape`.
    fn onoff(&self, i: usize, f: &FlowFile) -> Result<Process, PolicyError> {
        let index = self.index;
        self.only(i, f.window.is_some(), "window", "greedy")?;
        let need = |v: &Option<Spanned<Time>>, k: &str| -> Result<u64, PolicyError> {
            let v = v.as_ref().ok_or_else(|| {
                let msg = format!("`onoff` arrivals need `{k}` (mean period length)");
                index.error(f.arrivals.span().start, &Self::key(i, k), msg)
            })?;
            if v.get_ref().get() == 0 {
                return Err(index.error(v.span().start, &Self::key(i, k), "must be positive"));
            }
            Ok(v.get_ref().get())
        };
        let shape = match &f.shape {
            Some(s) => {
                let v = *s.get_ref();
                if !(v > 1.0 && v.is_finite()) {
                    let msg = "the Pareto shape must be above 1 (for a finite mean)";
                    return Err(index.error(s.span().start, &Self::key(i, "shape"), msg));
                }
                v
            }
            None => 1.5,
        };
        Ok(Process::OnOff {
            rate_bps: self.rate(i, f)?,
            mean_on: need(&f.on, "on")?,
            mean_off: need(&f.off, "off")?,
            shape,
        })
    }
}

impl WorkloadFile {
    /// Parses workload `text`; errors name `file_name`.
    ///
    /// # Errors
    /// Any mistake, as `FILE:LINE:COL: key `PATH`: message`.
    pub fn parse(text: &str, file_name: &str) -> Result<WorkloadFile, PolicyError> {
        let (index, file): (KeyIndex, File) = KeyIndex::parse(file_name, text)?;
        let seed = match &file.seed {
            Some(s) => int(&index, s, "seed", 0, i64::MAX)? as u64,
            None => 1,
        };
        let duration = file
            .duration
            .as_ref()
            .map_or(1_000_000_000, |d| d.get_ref().get());
        if duration == 0 {
            return Err(index.at_key("duration", "the duration must be positive"));
        }
        let link_rate = file
            .link_rate
            .as_ref()
            .map_or(1_000_000_000, |r| r.get_ref().get());
        if link_rate == 0 {
            return Err(index.at_key("link_rate", "the link rate must be positive"));
        }
        if file.flow.is_empty() {
            return Err(index.error(0, "flow", "a workload needs at least one [[flow]]"));
        }
        let reader = Reader { index: &index };
        let groups = (0..file.flow.len())
            .map(|i| reader.group(i, &file.flow[i], &file.flow[..i]))
            .collect::<Result<Vec<_>, _>>()?;
        let workload = Workload { groups, seed };
        if workload.flows() > u32::MAX as usize {
            return Err(index.error(0, "flow", "a workload holds fewer than 2^32 flows"));
        }
        Ok(WorkloadFile {
            workload,
            duration,
            link_rate,
            index,
        })
    }

    /// An error pointing at `key` (empty message), for charges and checks that
    /// concern the workload as a whole.
    pub(crate) fn at_key(&self, key: &str) -> PolicyError {
        self.index.at_key(key, "")
    }

    /// An error with `message` at `key`.
    pub(crate) fn error_at(&self, key: &str, message: String) -> PolicyError {
        self.index.at_key(key, message)
    }

    /// Reads and parses the workload file at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or a mistake in it.
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<WorkloadFile, PolicyError> {
        let (name, text) = error::read(path.as_ref())?;
        WorkloadFile::parse(&text, &name)
    }
}
