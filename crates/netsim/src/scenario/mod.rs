//! Scenario files: a network, its traffic and the schemes to compare, in TOML.
//!
//! ```toml
//! name = "example"
//! seed = 1                      # or seeds = [1, 2, 3]: every run is repeated per seed
//! loads = [0.2, 0.5, 0.8]       # fractions of host link capacity (random traffic)
//! duration = "1s"               # datagram and long-lived flows stop here (default 1 s)
//! drain = "1s"                  # a run may go on this long after the last arrival
//!
//! [topology]
//! kind = "leaf-spine"           # leaf-spine | fat-tree | dumbbell | parking-lot | custom
//! leaves = 9
//! spines = 4
//! hosts_per_leaf = 16
//! host_link = { rate = "10Gbit", delay = "2.5us" }
//! fabric_link = { rate = "40Gbit", delay = "0.2us" }
//!
//! [[traffic]]
//! name = "background"
//! kind = "poisson"              # poisson | coflows | incast | flows
//! sizes = "web-search"          # web-search | data-mining | a distribution file | "100KB" | ["1KB", "10KB"]
//! flows = 10000
//!
//! [[scheme]]
//! name = "dctcp"
//! transport = "dctcp"           # tcp | dctcp | pfabric
//! policy = "fifo"               # a policy file (relative to this file), or fifo
//! buffer = "225KB"
//! ecn_threshold = "97500B"
//!
//! [quick]                       # what --quick changes
//! loads = [0.5]
//! flows = 1000
//!
//! [report]
//! sample_ports = ["leaf0->h0"]  # queue occupancy over time
//! sample_interval = "10us"
//! [[report.panel]]              # one panel of the SVG plot
//! title = "(0,100KB]: mean slowdown"
//! metric = "mean_slowdown"
//! size_class = "small"
//! ```
//!
//! The sections are documented key by key in `examples/scenarios/README.md`.
//! Every mistake is reported as `FILE:LINE:COL: key `PATH`: message`: unknown
//! keys, quantities without units, unknown hosts, flows from a host to itself,
//! topologies that do not connect every host, policy files with errors (reported
//! in their own file's terms).

mod file;
mod report;
mod scheme;
mod topology;
mod traffic;

use std::path::{Path, PathBuf};

use eiffel_policy::{KeyIndex, PolicyError};
use toml::Spanned;

use crate::routing::Routes;
use crate::setup::{LinkExtras, Scheme};
use crate::time::Duration;
use crate::topology::Topology;
use crate::workload::Traffic;

pub use report::{Axis, Metric, Panel, ReportSpec};

/// A scenario that cannot be used.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A mistake in the scenario file or a file it names, with file, line and key.
    #[error(transparent)]
    File(#[from] PolicyError),
    /// A scheme asked for by name that the scenario does not have.
    #[error("scheme {name}: the scenario's schemes are {known}")]
    UnknownScheme {
        /// The name asked for.
        name: String,
        /// The scenario's schemes, comma-separated.
        known: String,
    },
    /// A load outside (0, 2] asked for.
    #[error("load {0} is outside (0, 2] (a fraction of host link capacity)")]
    Load(f64),
    /// An empty list of loads or seeds asked for.
    #[error("give at least one {0}")]
    Empty(&'static str),
}

/// What `--quick` changes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuickSpec {
    /// Loads.
    pub loads: Option<Vec<f64>>,
    /// Seeds.
    pub seeds: Option<Vec<u64>>,
    /// Flows of every counted random traffic.
    pub flows: Option<u32>,
    /// Coflows of every counted coflow traffic.
    pub coflows: Option<u32>,
    /// Duration.
    pub duration: Option<Duration>,
    /// Drain.
    pub drain: Option<Duration>,
    /// Start of the measurement window.
    pub measure_from: Option<Duration>,
    /// Incast rounds.
    pub rounds: Option<u32>,
}

/// A parsed, validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Short name.
    pub name: String,
    /// One-line description.
    pub title: String,
    /// The file it was read from.
    pub file: String,
    /// The network.
    pub topology: Topology,
    /// Its routes.
    pub routes: Routes,
    /// Random loss per port.
    pub extras: LinkExtras,
    /// The traffic.
    pub traffic: Vec<Traffic>,
    /// The schemes to compare.
    pub schemes: Vec<Scheme>,
    /// Loads of the sweep.
    pub loads: Vec<f64>,
    /// Seeds of the sweep.
    pub seeds: Vec<u64>,
    /// When datagram and long-lived flows stop (and random traffic without a
    /// flow count ends).
    pub duration: Duration,
    /// How long a run may continue after the last arrival.
    pub drain: Duration,
    /// Reporting options.
    pub report: ReportSpec,
    /// What `--quick` changes.
    pub quick: QuickSpec,
}

/// Parsing context: the file's key index and where relative paths start.
pub(crate) struct Ctx<'a> {
    pub index: &'a KeyIndex,
    pub dir: &'a Path,
}

impl Ctx<'_> {
    pub fn err<T>(
        &self,
        span: core::ops::Range<usize>,
        key: &str,
        msg: impl Into<String>,
    ) -> Result<T, PolicyError> {
        Err(self.index.error(span.start, key, msg))
    }

    pub fn int(&self, v: &Spanned<i64>, key: &str, lo: i64, hi: i64) -> Result<i64, PolicyError> {
        self.index.int_in(v, key, lo, hi, None)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

fn loads(ctx: &Ctx<'_>, v: &Spanned<Vec<f64>>, key: &str) -> Result<Vec<f64>, PolicyError> {
    if v.get_ref().is_empty() {
        return ctx.err(v.span(), key, "give at least one load");
    }
    for &l in v.get_ref() {
        if !(l > 0.0 && l <= 2.0) {
            return ctx.err(
                v.span(),
                key,
                format!("load {l} outside (0, 2] (a fraction of host link capacity)"),
            );
        }
    }
    Ok(v.get_ref().clone())
}

fn seeds(ctx: &Ctx<'_>, v: &Spanned<Vec<i64>>, key: &str) -> Result<Vec<u64>, PolicyError> {
    if v.get_ref().is_empty() || v.get_ref().iter().any(|&s| s < 0) {
        return ctx.err(v.span(), key, "give one or more non-negative seeds");
    }
    Ok(v.get_ref().iter().map(|&s| s as u64).collect())
}

fn positive(
    ctx: &Ctx<'_>,
    v: &Spanned<eiffel_policy::units::Time>,
    key: &str,
) -> Result<Duration, PolicyError> {
    let d = v.get_ref().get();
    if d == 0 {
        return ctx.err(v.span(), key, "must be positive");
    }
    Ok(Duration::from_nanos(d))
}

impl Scenario {
    /// Reads the scenario at `path`; relative paths in it start from its
    /// directory.
    ///
    /// # Errors
    /// The file cannot be read, or any mistake in it or in a file it names.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| PolicyError::Io {
            file: name.clone(),
            source: std::sync::Arc::new(e),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Scenario::parse(&text, &name, dir)
    }

    /// Parses scenario `text`, reported as `file_name`, with relative paths from
    /// `dir`.
    ///
    /// # Errors
    /// Any mistake in the text or in a file it names.
    pub fn parse(text: &str, file_name: &str, dir: &Path) -> Result<Scenario, ScenarioError> {
        let (index, f): (KeyIndex, file::File) = KeyIndex::parse(file_name, text)?;
        let ctx = Ctx { index: &index, dir };
        let (topology, extras) = topology::build(&ctx, &f.topology)?;
        let routes = Routes::new(&topology).map_err(|e| index.at_key("topology", e.to_string()))?;
        let seeds = match (&f.seed, &f.seeds) {
            (Some(s), None) => vec![ctx.int(s, "seed", 0, i64::MAX)? as u64],
            (None, Some(v)) => seeds(&ctx, v, "seeds")?,
            (None, None) => vec![1],
            (Some(_), Some(v)) => {
                return Ok(ctx.err(v.span(), "seeds", "give `seed` or `seeds`, not both")?)
            }
        };
        let loads = match &f.loads {
            Some(v) => loads(&ctx, v, "loads")?,
            None => vec![1.0],
        };
        let duration = match &f.duration {
            Some(d) => positive(&ctx, d, "duration")?,
            None => Duration::from_millis(1_000),
        };
        let drain = f.drain.as_ref().map_or(crate::setup::DEFAULT_DRAIN, |d| {
            Duration::from_nanos(d.get_ref().get())
        });
        if f.traffic.is_empty() {
            return Err(index
                .error(0, "traffic", "a scenario needs at least one [[traffic]]")
                .into());
        }
        let traffic = traffic::build(&ctx, &f.traffic, &topology)?;
        if f.scheme.is_empty() {
            return Err(index
                .error(0, "scheme", "a scenario needs at least one [[scheme]]")
                .into());
        }
        let schemes = scheme::build(&ctx, &f.scheme)?;
        let report = report::build(&ctx, f.report.as_ref(), &topology, &traffic)?;
        let quick = match &f.quick {
            Some(q) => quick(&ctx, q)?,
            None => QuickSpec::default(),
        };
        Ok(Scenario {
            name: f.name.map_or_else(
                || {
                    Path::new(file_name)
                        .file_stem()
                        .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned())
                },
                |n| n.into_inner(),
            ),
            title: f.title.map_or_else(String::new, Spanned::into_inner),
            file: file_name.to_string(),
            topology,
            routes,
            extras,
            traffic,
            schemes,
            loads,
            seeds,
            duration,
            drain,
            report,
            quick,
        })
    }

    /// Keeps only the schemes named in `names`, in the scenario's order.
    ///
    /// # Errors
    /// A name that is not one of the scenario's schemes, or no names.
    pub fn keep_schemes<S: AsRef<str>>(&mut self, names: &[S]) -> Result<(), ScenarioError> {
        if names.is_empty() {
            return Err(ScenarioError::Empty("scheme"));
        }
        if let Some(n) = names
            .iter()
            .find(|n| !self.schemes.iter().any(|x| x.name == n.as_ref()))
        {
            let known: Vec<&str> = self.schemes.iter().map(|x| x.name.as_str()).collect();
            return Err(ScenarioError::UnknownScheme {
                name: n.as_ref().to_owned(),
                known: known.join(", "),
            });
        }
        self.schemes
            .retain(|x| names.iter().any(|n| n.as_ref() == x.name));
        Ok(())
    }

    /// Sweeps `loads` instead of the file's.
    ///
    /// # Errors
    /// A load outside (0, 2], or no loads.
    pub fn set_loads(&mut self, loads: &[f64]) -> Result<(), ScenarioError> {
        if loads.is_empty() {
            return Err(ScenarioError::Empty("load"));
        }
        if let Some(&l) = loads.iter().find(|&&l| !(l > 0.0 && l <= 2.0)) {
            return Err(ScenarioError::Load(l));
        }
        self.loads = loads.to_vec();
        Ok(())
    }

    /// Repeats every run with `seeds` instead of the file's.
    ///
    /// # Errors
    /// No seeds.
    pub fn set_seeds(&mut self, seeds: &[u64]) -> Result<(), ScenarioError> {
        if seeds.is_empty() {
            return Err(ScenarioError::Empty("seed"));
        }
        self.seeds = seeds.to_vec();
        Ok(())
    }

    /// Applies the `[quick]` section.
    pub fn make_quick(&mut self) {
        let q = self.quick.clone();
        if let Some(l) = q.loads {
            self.loads = l;
        }
        if let Some(s) = q.seeds {
            self.seeds = s;
        }
        if let Some(d) = q.duration {
            self.duration = d;
        }
        if let Some(d) = q.drain {
            self.drain = d;
        }
        if let Some(m) = q.measure_from {
            self.report.measure_from = m;
        }
        for t in &mut self.traffic {
            match t {
                Traffic::Poisson { flows: Some(n), .. } => {
                    if let Some(q) = q.flows {
                        *n = q;
                    }
                }
                Traffic::Coflows {
                    coflows: Some(n), ..
                } => {
                    if let Some(q) = q.coflows {
                        *n = q;
                    }
                }
                Traffic::Incast { rounds, .. } => {
                    if let Some(q) = q.rounds {
                        *rounds = q;
                    }
                }
                _ => {}
            }
        }
    }
}

fn quick(ctx: &Ctx<'_>, q: &file::QuickFile) -> Result<QuickSpec, PolicyError> {
    Ok(QuickSpec {
        loads: q
            .loads
            .as_ref()
            .map(|v| loads(ctx, v, "quick.loads"))
            .transpose()?,
        seeds: q
            .seeds
            .as_ref()
            .map(|v| seeds(ctx, v, "quick.seeds"))
            .transpose()?,
        flows: q
            .flows
            .as_ref()
            .map(|v| ctx.int(v, "quick.flows", 1, 1 << 28).map(|n| n as u32))
            .transpose()?,
        coflows: q
            .coflows
            .as_ref()
            .map(|v| ctx.int(v, "quick.coflows", 1, 1 << 28).map(|n| n as u32))
            .transpose()?,
        duration: q
            .duration
            .as_ref()
            .map(|d| positive(ctx, d, "quick.duration"))
            .transpose()?,
        drain: q
            .drain
            .as_ref()
            .map(|d| Duration::from_nanos(d.get_ref().get())),
        measure_from: q
            .measure_from
            .as_ref()
            .map(|d| Duration::from_nanos(d.get_ref().get())),
        rounds: q
            .rounds
            .as_ref()
            .map(|v| ctx.int(v, "quick.rounds", 1, 1 << 20).map(|n| n as u32))
            .transpose()?,
    })
}
