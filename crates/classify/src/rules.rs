//! Compiled classification rules: a flow key (or a simulated packet's ids) to a
//! leaf, first match wins.
//!
//! # Cost
//! Rules are evaluated once per new flow (the flow table remembers the leaf), in
//! order: O(rules × conditions). A prefix test is one mask-and-compare on a `u128`, a
//! protocol or DSCP test one bit test.

use std::net::IpAddr;

use eiffel_sched::ClassId;

use crate::conditions::{EtherType, IdRange, Matches, PortRange, Prefix, RuleSpec, VlanRange};
use crate::wire::{FlowKey, PROTO_TCP, PROTO_UDP};

/// A rule set that cannot be compiled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// The default leaf is not a leaf of the policy.
    #[error("classify.default: `{leaf}` is not a leaf of the policy")]
    UnknownDefault {
        /// The name given.
        leaf: String,
    },
    /// A rule names a leaf the policy does not have.
    #[error("classify rule #{rule}: leaf `{leaf}` is not a leaf of the policy")]
    UnknownLeaf {
        /// 1-based position of the rule in the file.
        rule: usize,
        /// The name given.
        leaf: String,
    },
    /// A rule has port conditions but a protocol condition that excludes TCP and UDP,
    /// so it can never match.
    #[error(
        "classify rule #{rule} (leaf `{leaf}`): port conditions need protocol tcp or udp, \
         but the rule's protocols carry no ports"
    )]
    PortsWithoutTransport {
        /// 1-based position of the rule in the file.
        rule: usize,
        /// The rule's leaf.
        leaf: String,
    },
    /// A rule mixes header conditions with workload id conditions (`flow`,
    /// `class`), so it can never match: frames carry no ids, workload packets no
    /// headers.
    #[error(
        "classify rule #{rule} (leaf `{leaf}`): `flow`/`class` conditions match simulated \
         packets, header conditions match frames; one rule cannot have both"
    )]
    MixedConditions {
        /// 1-based position of the rule in the file.
        rule: usize,
        /// The rule's leaf.
        leaf: String,
    },
    /// More rules than the classifier supports.
    #[error("classify: {count} rules given, at most {max} are supported")]
    TooManyRules {
        /// Rules given.
        count: usize,
        /// The limit.
        max: usize,
    },
}

/// A compiled prefix: family width, network bits left-aligned, mask.
#[derive(Clone, Copy, Debug)]
struct Net {
    v6: bool,
    bits: u128,
    mask: u128,
}

impl Net {
    fn new(p: Prefix) -> Net {
        let (bits, width) = Prefix::bits(p.addr);
        Net {
            v6: width == 128,
            bits,
            mask: Prefix::mask(p.len),
        }
    }

    #[inline]
    fn contains(&self, addr: IpAddr) -> bool {
        let (bits, width) = Prefix::bits(addr);
        (width == 128) == self.v6 && bits & self.mask == self.bits
    }
}

/// One rule, compiled. Empty vectors and `None` bitmaps mean "any".
#[derive(Clone, Debug)]
struct Rule {
    leaf: ClassId,
    ether_types: Vec<u16>,
    vlan: Vec<VlanRange>,
    inner_vlan: Vec<VlanRange>,
    /// Whether any IP condition is present (then non-IP frames never match).
    needs_ip: bool,
    src: Vec<Net>,
    dst: Vec<Net>,
    /// Bit `p` set when protocol `p` matches.
    protocols: Option<[u64; 4]>,
    /// Bit `d` set when DSCP `d` matches.
    dscp: Option<u64>,
    needs_ports: bool,
    src_port: Vec<PortRange>,
    dst_port: Vec<PortRange>,
    /// Whether the rule has workload id conditions (then frames never match).
    needs_ids: bool,
    /// Whether the rule has header conditions (then workload packets never match).
    needs_headers: bool,
    flow: Vec<IdRange>,
    class: Vec<IdRange>,
}

/// The values of an optional condition; empty means "any".
fn list<T: Clone>(m: &Option<Matches<T>>) -> Vec<T> {
    m.as_ref().map_or_else(Vec::new, |m| m.0.clone())
}

fn any_or<T>(set: &[T], f: impl Fn(&T) -> bool) -> bool {
    set.is_empty() || set.iter().any(f)
}

fn vlan_matches(ranges: &[VlanRange], id: Option<u16>) -> bool {
    ranges.is_empty() || id.is_some_and(|id| ranges.iter().any(|r| r.contains(id)))
}

impl Rule {
    fn compile(index: usize, spec: &RuleSpec, leaf: ClassId) -> Result<Rule, RuleError> {
        let needs_ids = spec.has_id_conditions();
        let needs_headers = spec.has_header_conditions();
        if needs_ids && needs_headers {
            return Err(RuleError::MixedConditions {
                rule: index + 1,
                leaf: spec.leaf.clone(),
            });
        }
        let protocols = spec.protocol.as_ref().map(|m| {
            let mut bits = [0u64; 4];
            for p in &m.0 {
                bits[usize::from(p.0 / 64)] |= 1 << (p.0 % 64);
            }
            bits
        });
        let needs_ports = spec.src_port.is_some() || spec.dst_port.is_some();
        if needs_ports {
            if let Some(m) = &spec.protocol {
                if !m.0.iter().any(|p| p.0 == PROTO_TCP || p.0 == PROTO_UDP) {
                    return Err(RuleError::PortsWithoutTransport {
                        rule: index + 1,
                        leaf: spec.leaf.clone(),
                    });
                }
            }
        }
        let dscp = spec.dscp.as_ref().map(|m| {
            m.0.iter()
                .flat_map(|r| r.lo..=r.hi)
                .fold(0u64, |acc, d| acc | 1 << d)
        });
        Ok(Rule {
            leaf,
            ether_types: list(&spec.ether_type)
                .iter()
                .map(|e: &EtherType| e.0)
                .collect(),
            vlan: list(&spec.vlan),
            inner_vlan: list(&spec.inner_vlan),
            needs_ip: spec.src.is_some()
                || spec.dst.is_some()
                || protocols.is_some()
                || dscp.is_some()
                || needs_ports,
            src: list(&spec.src).into_iter().map(Net::new).collect(),
            dst: list(&spec.dst).into_iter().map(Net::new).collect(),
            protocols,
            dscp,
            needs_ports,
            src_port: list(&spec.src_port),
            dst_port: list(&spec.dst_port),
            needs_ids,
            needs_headers,
            flow: list(&spec.flow),
            class: list(&spec.class),
        })
    }

    #[inline]
    fn matches_ids(&self, flow: u32, class: u32) -> bool {
        !self.needs_headers
            && any_or(&self.flow, |r| r.contains(flow))
            && any_or(&self.class, |r| r.contains(class))
    }

    #[inline]
    fn matches(&self, key: &FlowKey) -> bool {
        if self.needs_ids {
            return false;
        }
        if !any_or(&self.ether_types, |&e| e == key.ether_type)
            || !vlan_matches(&self.vlan, key.vlan)
            || !vlan_matches(&self.inner_vlan, key.inner_vlan)
        {
            return false;
        }
        if !self.needs_ip {
            return true;
        }
        let Some(ip) = &key.ip else {
            return false;
        };
        if let Some(bits) = &self.protocols {
            if bits[usize::from(ip.protocol / 64)] & (1 << (ip.protocol % 64)) == 0 {
                return false;
            }
        }
        if let Some(bits) = self.dscp {
            if ip.dscp >= 64 || bits & (1 << ip.dscp) == 0 {
                return false;
            }
        }
        if !any_or(&self.src, |n| n.contains(ip.src)) || !any_or(&self.dst, |n| n.contains(ip.dst))
        {
            return false;
        }
        if self.needs_ports {
            let Some(ports) = ip.ports else {
                return false;
            };
            return any_or(&self.src_port, |r| r.contains(ports.src))
                && any_or(&self.dst_port, |r| r.contains(ports.dst));
        }
        true
    }
}

/// Compiled rules: maps a flow key to a leaf, first match wins.
#[derive(Clone, Debug)]
pub struct RuleSet {
    rules: Vec<Rule>,
    default: ClassId,
}

impl RuleSet {
    /// The most rules a set may hold (each new flow scans them in order).
    pub const MAX_RULES: usize = 4_096;

    /// Compiles `rules`, resolving leaf names with `resolve` (the policy tree's
    /// name-to-leaf lookup).
    ///
    /// # Errors
    /// An unknown leaf name, a rule that can never match, or too many rules.
    pub fn compile(
        rules: &[RuleSpec],
        default: &str,
        mut resolve: impl FnMut(&str) -> Option<ClassId>,
    ) -> Result<RuleSet, RuleError> {
        if rules.len() > Self::MAX_RULES {
            return Err(RuleError::TooManyRules {
                count: rules.len(),
                max: Self::MAX_RULES,
            });
        }
        let default_id = resolve(default).ok_or_else(|| RuleError::UnknownDefault {
            leaf: default.to_owned(),
        })?;
        let compiled = rules
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let leaf = resolve(&spec.leaf).ok_or_else(|| RuleError::UnknownLeaf {
                    rule: i + 1,
                    leaf: spec.leaf.clone(),
                })?;
                Rule::compile(i, spec, leaf)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RuleSet {
            rules: compiled,
            default: default_id,
        })
    }

    /// A rule set with no rules: everything goes to `default`.
    #[must_use]
    pub fn default_only(default: ClassId) -> RuleSet {
        RuleSet {
            rules: Vec::new(),
            default,
        }
    }

    /// The leaf of a frame with this key.
    #[must_use]
    pub fn classify(&self, key: &FlowKey) -> ClassId {
        self.matching_rule(key)
            .map_or(self.default, |i| self.rules[i].leaf)
    }

    /// Index (0-based) of the first rule matching `key`, if any.
    #[must_use]
    pub fn matching_rule(&self, key: &FlowKey) -> Option<usize> {
        self.rules.iter().position(|r| r.matches(key))
    }

    /// The leaf of a simulated packet of workload flow `flow` and traffic class
    /// `class` (rules with header conditions are skipped).
    #[must_use]
    pub fn classify_ids(&self, flow: u32, class: u32) -> ClassId {
        self.matching_rule_ids(flow, class)
            .map_or(self.default, |i| self.rules[i].leaf)
    }

    /// Index (0-based) of the first rule matching a simulated packet's ids, if any.
    #[must_use]
    pub fn matching_rule_ids(&self, flow: u32, class: u32) -> Option<usize> {
        self.rules.iter().position(|r| r.matches_ids(flow, class))
    }

    /// The default leaf.
    #[must_use]
    pub fn default_leaf(&self) -> ClassId {
        self.default
    }

    /// Number of rules.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there is no rule.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}
