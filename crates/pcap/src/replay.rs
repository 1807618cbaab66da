//! A capture replayed through a policy on the emulated link.
//!
//! Each frame arrives at its capture time (relative to the first frame) and is
//! classified by the policy's own classifier, the one `eiffel shape` runs:
//! headers parsed, the flow looked up in the bounded flow table (idle flows
//! expire on the capture's clock), the rules run on a flow's first packet.
//! The scheduler charges the frame's length on the wire, even when the capture
//! holds fewer bytes (a snap length).
//!
//! The report is `eiffel run`'s ([`RunReport`]): one flow group per leaf that
//! received packets, named by the leaf's path, whose `count` is the number of
//! distinct flows the classifier gave it. Malformed frames that the policy drops
//! (`malformed = "drop"`) never reach the tree: they are counted in
//! [`CaptureSummary`]. The run lasts, unless told otherwise, the capture's span
//! plus the time the link needs to send every captured byte, long enough for a
//! work-conserving policy to send everything; what a rate limit still holds then
//! is reported as queued, as in every run.
//!
//! Every frame is accounted for: `frames = malformed drops + after the end +
//! enqueued` and `enqueued = dequeued + dropped +
//! queued` (tests check both).

use eiffel_classify::ClassifyError;
use eiffel_policy::Policy;
use eiffel_sched::{ClassId, FlowId, Nanos, Packet, PolicyTree};
use eiffel_sim::policy_run::{run_tree_source, RunOptions, RunReport, SourceRun};
use eiffel_sim::{FlowGroup, Link, Observer, Process, Route, Source, Ticks, Workload};
use serde::Serialize;

use crate::capture::Capture;

/// How to replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Link rate in bits per second (default: the policy root's limit).
    pub link_rate: Option<u64>,
    /// Simulated time (default: see the module docs).
    pub duration: Option<Nanos>,
}

/// Why a replay cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// No link rate given and the policy's root has no limit.
    #[error("{policy}: the root has no rate limit to use as the link rate: give one (--link-rate 1Gbit)")]
    NoLinkRate {
        /// The policy's name.
        policy: String,
    },
    /// A zero link rate or duration.
    #[error("the {what} must be positive")]
    Zero {
        /// `link rate` or `duration`.
        what: &'static str,
    },
    /// The capture has no packets.
    #[error("{capture}: the capture holds no packets")]
    Empty {
        /// The capture's name.
        capture: String,
    },
    /// The policy's classifier cannot be built.
    #[error(transparent)]
    Classify(#[from] ClassifyError),
}

/// What the classifier saw of the capture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CaptureSummary {
    /// The capture's name.
    pub name: String,
    /// Packets in the capture.
    pub frames: u64,
    /// Their bytes on the wire.
    pub bytes: u64,
    /// Time from the first packet to the last.
    pub span_ns: u64,
    /// Capture time of the first packet, ns since the Unix epoch.
    pub start_ns: u64,
    /// Distinct flows the classifier created.
    pub flows: u64,
    /// Frames whose headers could not be parsed.
    pub malformed: u64,
    /// Of those, frames dropped before the tree (`malformed = "drop"`).
    pub malformed_dropped: u64,
    /// Frames captured at or after the end of the run (a `duration` shorter
    /// than the capture), never offered to the tree.
    pub after_end: u64,
}

/// One packet that left the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// Index of the frame in [`Capture::frames`].
    pub frame: u32,
    /// Start of its transmission, ns after the first frame's capture time.
    pub start: Nanos,
    /// End of its transmission (its departure).
    pub end: Nanos,
}

/// The result of [`replay`].
#[derive(Clone, Debug)]
pub struct Replay {
    /// The run, as `eiffel run` reports it.
    pub report: RunReport,
    /// The capture as classified.
    pub capture: CaptureSummary,
    /// The packets sent, in departure order.
    pub departures: Vec<Departure>,
}

/// A classified frame.
#[derive(Clone, Copy, Debug)]
struct Classified {
    /// Capture time relative to the first frame.
    arrival: Nanos,
    leaf: ClassId,
    flow: FlowId,
    len: u32,
}

/// The capture classified: one entry per frame (`None`: dropped as malformed).
fn classify(
    policy: &Policy,
    capture: &Capture,
) -> Result<(Vec<Option<Classified>>, CaptureSummary), ClassifyError> {
    let mut classifier = policy.classifier()?;
    let start = capture.start();
    let mut bytes = 0u64;
    let frames = capture
        .frames()
        .iter()
        .map(|f| {
            let now = f.timestamp - start;
            bytes += u64::from(f.wire_len);
            classifier.expire(now, 8, |_, _| {});
            classifier
                .classify(capture.data(f), now)
                .ok()
                .map(|p| Classified {
                    arrival: now,
                    leaf: p.class,
                    flow: p.flow,
                    len: f.wire_len,
                })
        })
        .collect();
    let c = classifier.counters();
    let summary = CaptureSummary {
        name: capture.name().to_string(),
        frames: capture.frames().len() as u64,
        bytes,
        span_ns: capture.span(),
        start_ns: start,
        flows: classifier.flows().counters().created,
        malformed: c.malformed.total(),
        malformed_dropped: c.dropped,
        after_end: 0,
    };
    Ok((frames, summary))
}

/// The flow groups of the report, one per leaf reached (each frame is a
/// workload flow of its leaf's group, so the metrics find a packet's group
/// from its id); returns the workload, each frame's workload flow id, the
/// routes, and each group's count of distinct flows.
fn groups(
    policy: &Policy,
    frames: &[Option<Classified>],
) -> (Workload, Vec<u32>, Vec<Route>, Vec<u32>) {
    let spec = policy.spec();
    let mut per_leaf: Vec<Vec<usize>> = vec![Vec::new(); spec.nodes.len()];
    for (i, c) in frames.iter().enumerate() {
        if let Some(c) = c {
            per_leaf[c.leaf as usize].push(i);
        }
    }
    let tree = policy.build();
    let mut ids = vec![u32::MAX; frames.len()];
    let mut routes = Vec::new();
    let mut groups = Vec::new();
    let mut flow_counts = Vec::new();
    for (leaf, members) in per_leaf.iter().enumerate().filter(|(_, m)| !m.is_empty()) {
        let mut flows: Vec<FlowId> = Vec::with_capacity(members.len());
        for &i in members {
            let c = frames[i].expect("classified");
            ids[i] = routes.len() as u32;
            routes.push(Route {
                leaf: c.leaf,
                flow: c.flow,
            });
            flows.push(c.flow);
        }
        flows.sort_unstable();
        flows.dedup();
        flow_counts.push(flows.len() as u32);
        let name = tree.node(leaf).path;
        groups.push(FlowGroup::new(
            name,
            members.len() as u32,
            leaf as u32,
            0,
            Process::Greedy { window: 1 },
        ));
    }
    let workload = Workload { groups, seed: 0 };
    (workload, ids, routes, flow_counts)
}

/// The classified frames in capture order, as descriptors whose `buffer` is
/// their workload flow id.
struct Frames<'a> {
    frames: &'a [Option<Classified>],
    ids: &'a [u32],
    next: usize,
}

impl Frames<'_> {
    fn skip_dropped(&mut self) {
        while self.frames.get(self.next).is_some_and(Option::is_none) {
            self.next += 1;
        }
    }
}

impl Source for Frames<'_> {
    fn peek(&mut self) -> Option<Nanos> {
        self.skip_dropped();
        self.frames
            .get(self.next)
            .and_then(|c| c.map(|c| c.arrival))
    }

    fn pop(&mut self) -> Option<Packet> {
        self.skip_dropped();
        let c = (*self.frames.get(self.next)?)?;
        let id = self.ids[self.next];
        self.next += 1;
        Some(
            Packet::new(c.flow, c.len)
                .at(c.arrival)
                .class(c.leaf)
                .buffer(id),
        )
    }
}

/// Records every departure.
struct Departures<'a> {
    link: Link,
    /// Frame index of each workload flow id.
    frame_of: &'a [u32],
    out: Vec<Departure>,
}

impl Observer<PolicyTree> for Departures<'_> {
    fn on_sent(&mut self, _: &PolicyTree, pkt: &Packet, start: Ticks, end: Ticks) {
        self.out.push(Departure {
            frame: self.frame_of[pkt.buffer as usize],
            start: self.link.nanos_floor(start),
            end: self.link.nanos_floor(end),
        });
    }
}

/// The link rate and duration a replay of `capture` through `policy` runs
/// with (see the module docs).
///
/// # Errors
/// No link rate given and none in the policy, or a zero rate or duration.
pub fn run_options(
    policy: &Policy,
    capture: &Capture,
    opts: ReplayOptions,
) -> Result<RunOptions, ReplayError> {
    let spec = policy.spec();
    let link_rate = opts
        .link_rate
        .or_else(|| {
            spec.root()
                .and_then(|r| spec.nodes[r].limit)
                .map(|l| l.rate.bps())
        })
        .ok_or_else(|| ReplayError::NoLinkRate {
            policy: policy.file_name().to_string(),
        })?;
    if link_rate == 0 {
        return Err(ReplayError::Zero { what: "link rate" });
    }
    let bytes: u64 = capture.frames().iter().map(|f| u64::from(f.wire_len)).sum();
    let drain = u128::from(bytes) * 8 * 1_000_000_000 / u128::from(link_rate);
    let duration = opts.duration.unwrap_or_else(|| {
        capture
            .span()
            .saturating_add(u64::try_from(drain).unwrap_or(u64::MAX))
            .saturating_add(1)
    });
    if duration == 0 {
        return Err(ReplayError::Zero { what: "duration" });
    }
    Ok(RunOptions {
        duration,
        link_rate,
        bins: 100,
        seed: 0,
    })
}

/// Replays `capture` through `policy` (see the module docs); `progress` hears
/// the simulated time every few thousand packets.
///
/// # Errors
/// No link rate, an empty capture, or a classifier that cannot be built.
pub fn replay(
    policy: &Policy,
    capture: &Capture,
    opts: ReplayOptions,
    progress: impl FnMut(Nanos) + 'static,
) -> Result<Replay, ReplayError> {
    if capture.frames().is_empty() {
        return Err(ReplayError::Empty {
            capture: capture.name().to_string(),
        });
    }
    let (frames, summary) = classify(policy, capture)?;
    let run_opts = run_options(policy, capture, opts)?;
    let summary = CaptureSummary {
        after_end: frames
            .iter()
            .flatten()
            .filter(|c| c.arrival >= run_opts.duration)
            .count() as u64,
        ..summary
    };
    let (workload, ids, routes, flow_counts) = groups(policy, &frames);
    let mut frame_of = vec![0u32; routes.len()];
    for (frame, &id) in ids.iter().enumerate() {
        if id != u32::MAX {
            frame_of[id as usize] = frame as u32;
        }
    }
    let mut departures = Departures {
        link: Link::new(run_opts.link_rate),
        frame_of: &frame_of,
        out: Vec::new(),
    };
    let mut source = Frames {
        frames: &frames,
        ids: &ids,
        next: 0,
    };
    let run = SourceRun {
        policy: policy.file_name(),
        workload: &workload,
        routes: &routes,
        opts: run_opts,
    };
    let mut report = run_tree_source(&run, policy.build(), &mut source, progress, &mut departures);
    for (f, &n) in report.flows.iter_mut().zip(&flow_counts) {
        f.count = n;
    }
    Ok(Replay {
        report,
        capture: summary,
        departures: departures.out,
    })
}
