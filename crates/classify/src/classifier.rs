//! The classifier: from frame bytes to a scheduler-ready [`Packet`] descriptor.
//!
//! A [`Classifier`] parses a frame ([`crate::wire::parse`]), looks its
//! [`FlowKey`] up in the bounded [`FlowTable`] (creating the flow and running the
//! [`RuleSet`] on its first packet only), and returns a [`Packet`] whose `flow` is the
//! dense flow id and whose `class` is the leaf. The caller sets `buffer` (where the
//! bytes are) and hands the descriptor to a scheduler.
//!
//! Malformed frames follow the configured [`MalformedAction`]: forwarded in the
//! default leaf as the single flow [`FlowKey::MALFORMED`] (default), or handed back
//! as a [`Dropped`] with [`DropReason::Malformed`]. Either way they are counted by
//! reason in [`ClassifyCounters::malformed`].

use eiffel_sched::{ClassId, ConfigError, Dropped, FlowId, Nanos, Packet};
use serde::Deserialize;

use crate::annotate::{AnnotateError, AnnotateSpec, Annotator};
use crate::conditions::RuleSpec;
use crate::flow_table::{FlowTable, FlowTableConfig};
use crate::rules::{RuleError, RuleSet};
use crate::wire::{FlowKey, MalformedCounts};

/// What happens to a frame whose headers cannot be parsed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MalformedAction {
    /// Forward it, unclassified, in the default leaf (one shared flow,
    /// [`FlowKey::MALFORMED`]). The default: a bump in the wire stays transparent
    /// to protocols it does not understand, the end host stays the judge of its own
    /// packets, and the frames are still scheduled and shaped, so they cannot bypass
    /// a rate limit.
    #[default]
    Forward,
    /// Drop it, counted as [`eiffel_sched::DropReason::Malformed`].
    Drop,
}

/// A classification as a policy compiles it: the default leaf, the rules as
/// written, the flow table and what happens to malformed frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassifySpec {
    /// Leaf of every packet no rule matches.
    pub default: String,
    /// Flow-table capacity and idle timeout.
    pub flow_table: FlowTableConfig,
    /// What happens to malformed frames.
    pub malformed: MalformedAction,
    /// Rules, first match wins.
    pub rules: Vec<RuleSpec>,
    /// Rank fields taken from packets.
    pub annotate: AnnotateSpec,
}

/// A classification that cannot be turned into a classifier.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClassifyError {
    /// A rule problem.
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// A sizing problem.
    #[error("classify: {0}")]
    Config(#[from] ConfigError),
    /// A rank annotation problem.
    #[error("classify: {0}")]
    Annotate(#[from] AnnotateError),
}

impl ClassifySpec {
    /// A frame classifier (rules and flow table) whose leaves are named through
    /// `resolve` (the policy's leaf ids, or the stable ids of a live bump).
    ///
    /// # Errors
    /// A leaf `resolve` does not know; never for the policy's own leaves.
    pub fn classifier(
        &self,
        mut resolve: impl FnMut(&str) -> Option<ClassId>,
    ) -> Result<Classifier, ClassifyError> {
        let rules = RuleSet::compile(&self.rules, &self.default, &mut resolve)?;
        let annotator = self
            .annotate
            .compile(self.flow_table.max_flows, &mut resolve)?;
        Ok(Classifier::new(rules, self.flow_table, self.malformed)?.with_annotator(annotator))
    }
}

/// Counters of a [`Classifier`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassifyCounters {
    /// Frames offered.
    pub frames: u64,
    /// Malformed frames by reason (forwarded or dropped).
    pub malformed: MalformedCounts,
    /// Malformed frames dropped (under [`MalformedAction::Drop`]).
    pub dropped: u64,
}

/// Parser, rules and flow table together: frame bytes in, descriptors out.
#[derive(Clone, Debug)]
pub struct Classifier {
    pub(crate) rules: RuleSet,
    pub(crate) flows: FlowTable,
    pub(crate) malformed: MalformedAction,
    pub(crate) annotator: Annotator,
    /// Added to every flow id (classifiers sharing one id space).
    pub(crate) flow_base: FlowId,
    pub(crate) counters: ClassifyCounters,
}

impl Classifier {
    /// A classifier from compiled rules and a flow-table configuration.
    ///
    /// # Errors
    /// A flow-table size or timeout out of range.
    pub fn new(
        rules: RuleSet,
        flows: FlowTableConfig,
        malformed: MalformedAction,
    ) -> Result<Classifier, ConfigError> {
        Ok(Classifier {
            rules,
            flows: FlowTable::new(flows)?,
            malformed,
            annotator: Annotator::default(),
            flow_base: 0,
            counters: ClassifyCounters::default(),
        })
    }

    /// The classifier with `base` added to every flow id it hands out, so that
    /// several classifiers (one per receive queue) share one id space:
    /// `base..base + max_flows`.
    #[must_use]
    pub fn with_flow_base(mut self, base: FlowId) -> Classifier {
        self.flow_base = base;
        self
    }

    /// The classifier with rank fields filled in by `annotator` (see
    /// [`crate::annotate`]).
    #[must_use]
    pub fn with_annotator(mut self, annotator: Annotator) -> Classifier {
        self.annotator = annotator;
        self
    }

    /// Classifies one frame arriving at `now`: a descriptor with `flow`, `class`,
    /// `len` and `arrival` set (`buffer` 0, for the caller to fill in).
    ///
    /// # Errors
    /// A malformed frame under [`MalformedAction::Drop`], handed back as a [`Dropped`]
    /// (its descriptor carries the length and arrival time, flow 0).
    pub fn classify(&mut self, frame: &[u8], now: Nanos) -> Result<Packet, Dropped> {
        let staged = self.stage(frame);
        self.complete(&staged, now)
    }

    /// The rank annotator.
    #[must_use]
    pub fn annotator(&self) -> &Annotator {
        &self.annotator
    }

    /// Expires up to `budget` idle flows (see [`FlowTable::expire`]).
    pub fn expire(
        &mut self,
        now: Nanos,
        budget: usize,
        on_expire: impl FnMut(FlowId, &FlowKey),
    ) -> usize {
        self.flows.expire(now, budget, on_expire)
    }

    /// The rules.
    #[must_use]
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// The flow table.
    #[must_use]
    pub fn flows(&self) -> &FlowTable {
        &self.flows
    }

    /// Counters since construction.
    #[must_use]
    pub fn counters(&self) -> &ClassifyCounters {
        &self.counters
    }
}
