//! Packet classification for Eiffel, sans-IO: from the bytes of a frame to a
//! scheduler-ready [`eiffel_sched::Packet`] descriptor, with no system call, no
//! clock (`now` is passed in) and no `libc`, so the same code classifies frames
//! from a Linux ring, a pcap file, a simulator or a fuzzer.
//!
//! - [`annotate`]: rank, deadline and remaining size of a descriptor taken from
//!   the packet (DSCP, a header field, per-class budgets, attained bytes per flow).
//! - [`checksum`]: TCP and UDP checksums left for hardware, completed in software.
//! - [`wire`]: Ethernet / 802.1Q / 802.1ad / IPv4 / IPv6 / TCP / UDP headers (via
//!   `etherparse`) to a `Copy` [`wire::FlowKey`]; malformed frames named by layer.
//! - [`rules`]: classification rules, first match wins: their conditions as
//!   written ([`RuleSpec`], deserializable from any serde format) and compiled
//!   ([`RuleSet`]).
//! - [`flow_table`]: a bounded [`FlowTable`] of flow keys to dense flow ids, with
//!   idle expiry and LRU eviction.
//! - [`Classifier`]: the three together, frame bytes in, descriptors out.
//!
//! ```
//! use eiffel_classify::{Classifier, FlowTableConfig, MalformedAction, RuleSet, RuleSpec};
//! use eiffel_sched::Duration;
//!
//! // Leaf 1 for SSH, leaf 0 for everything else.
//! let ssh: RuleSpec = toml::from_str("leaf = \"interactive\"\nprotocol = \"tcp\"\ndst_port = 22").unwrap();
//! let leaves = ["bulk", "interactive"];
//! let resolve = |name: &str| leaves.iter().position(|l| *l == name).map(|i| i as u32);
//! let rules = RuleSet::compile(&[ssh], "bulk", resolve).unwrap();
//! let table = FlowTableConfig { max_flows: 1024, idle_timeout: Duration::from_secs(30) };
//! let mut classifier = Classifier::new(rules, table, MalformedAction::Forward).unwrap();
//! // A frame too short to parse goes to the default leaf (the default action).
//! let pkt = classifier.classify(&[0u8; 10], 0).unwrap();
//! assert_eq!((pkt.class, pkt.len), (0, 10));
//! ```

pub mod annotate;
mod burst;
pub mod checksum;
mod classifier;
mod conditions;
pub mod flow_table;
pub mod rules;
pub mod wire;

pub use annotate::{
    AnnotateError, AnnotateSpec, Annotator, DeadlineField, DeadlineSpec, RankFrom, RemainingFrom,
};
pub use burst::{Staged, BURST};
pub use classifier::{Classifier, ClassifyCounters, ClassifyError, ClassifySpec, MalformedAction};
pub use conditions::{
    Atom, DscpRange, EtherType, IdRange, Matches, PortRange, Prefix, Protocol, RuleSpec,
    ValueError, VlanRange,
};
pub use flow_table::{FlowCounters, FlowHit, FlowTable, FlowTableConfig, KeyHash};
pub use rules::{RuleError, RuleSet};

#[cfg(test)]
mod tests;
