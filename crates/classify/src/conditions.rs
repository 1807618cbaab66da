//! The conditions of a classification rule as written ([`RuleSpec`]): which
//! values each condition takes and how they are read from a configuration file.
//!
//! ```toml
//! leaf = "web"                          # the leaf matching frames go to
//! protocol = "tcp"
//! dst = ["198.18.0.0/15", "2001:db8::/32"]
//! dst_port = [80, 443, "8000-8080"]
//! ```
//!
//! Every condition is optional; a rule matches when all its conditions match, and a
//! condition given as a list matches when any element does. A rule with no condition
//! matches every frame. Conditions:
//!
//! | key | values | matches |
//! | --- | --- | --- |
//! | `ether_type` | `"ipv4"`, `"ipv6"`, `"arp"` or a number | innermost EtherType |
//! | `vlan`, `inner_vlan` | id `0..=4095` or `"lo-hi"` | outer / inner 802.1Q id; untagged frames never match |
//! | `src`, `dst` | `"addr/len"` or `"addr"` (IPv4 or IPv6) | address prefix |
//! | `protocol` | `"tcp"`, `"udp"`, `"icmp"`, `"icmpv6"`, `"sctp"`, `"gre"`, `"esp"`, `"ah"` or `0..=255` | transport protocol |
//! | `src_port`, `dst_port` | `0..=65535` or `"lo-hi"` | TCP/UDP port; frames without ports (other protocols, fragments) never match |
//! | `dscp` | `0..=63`, `"lo-hi"`, or a name: `ef`, `cs0`..`cs7`, `af11`..`af43` | DSCP |
//! | `flow`, `class` | id `0..=4294967295` or `"lo-hi"` | a simulated packet's workload flow id / traffic class |
//!
//! Any IP condition (addresses, protocol, ports, DSCP) never matches a non-IP frame.
//! The id conditions `flow` and `class` are for simulated workloads
//! ([`RuleSet::classify_ids`](crate::RuleSet::classify_ids)), which carry ids instead
//! of headers: a rule with id conditions never matches a frame, a rule with header
//! conditions never matches a workload packet, and a rule mixing both is refused. A
//! rule without conditions matches both.
//! Values are checked while they are read (a prefix with host bits set, a port above
//! 65535, an unknown protocol name, an empty list are errors); leaf names are checked
//! by [`RuleSet::compile`](crate::RuleSet::compile) against the policy's leaves.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use crate::wire::{ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6};

/// One classification rule as written: a leaf and conditions on the frame.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Leaf the matching frames go to.
    pub leaf: String,
    /// Innermost EtherType.
    pub ether_type: Option<Matches<EtherType>>,
    /// Outer VLAN id.
    pub vlan: Option<Matches<VlanRange>>,
    /// Inner VLAN id (double-tagged frames).
    pub inner_vlan: Option<Matches<VlanRange>>,
    /// Source address prefix.
    pub src: Option<Matches<Prefix>>,
    /// Destination address prefix.
    pub dst: Option<Matches<Prefix>>,
    /// Transport protocol.
    pub protocol: Option<Matches<Protocol>>,
    /// TCP/UDP source port.
    pub src_port: Option<Matches<PortRange>>,
    /// TCP/UDP destination port.
    pub dst_port: Option<Matches<PortRange>>,
    /// DSCP.
    pub dscp: Option<Matches<DscpRange>>,
    /// Workload flow id (simulated packets only).
    pub flow: Option<Matches<IdRange>>,
    /// Workload traffic class (simulated packets only).
    pub class: Option<Matches<IdRange>>,
}

impl RuleSpec {
    /// Whether the rule has a header condition (it can then match frames only).
    #[must_use]
    pub fn has_header_conditions(&self) -> bool {
        self.ether_type.is_some()
            || self.vlan.is_some()
            || self.inner_vlan.is_some()
            || self.src.is_some()
            || self.dst.is_some()
            || self.protocol.is_some()
            || self.src_port.is_some()
            || self.dst_port.is_some()
            || self.dscp.is_some()
    }

    /// Whether the rule has a workload id condition (it can then match simulated
    /// packets only).
    #[must_use]
    pub fn has_id_conditions(&self) -> bool {
        self.flow.is_some() || self.class.is_some()
    }
}

/// A condition value that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// A range bound that is not a number.
    #[error("{what} `{text}`: expected a number or a range \"lo-hi\"")]
    NotANumber {
        /// What the value is (`port`, `DSCP`...).
        what: &'static str,
        /// The text given.
        text: String,
    },
    /// A range reaching outside `0..=max`.
    #[error("{what} `{text}` is outside 0..={max}")]
    RangeOutside {
        /// What the value is.
        what: &'static str,
        /// The text given.
        text: String,
        /// The largest value accepted.
        max: i64,
    },
    /// A range whose low end is above its high end.
    #[error("{what} range `{text}` is empty (low end above high end)")]
    EmptyRange {
        /// What the value is.
        what: &'static str,
        /// The text given.
        text: String,
    },
    /// A number outside `0..=max`.
    #[error("{what} {value} is outside 0..={max}")]
    Outside {
        /// What the value is.
        what: &'static str,
        /// The number given.
        value: i64,
        /// The largest value accepted.
        max: i64,
    },
    /// A number beyond any accepted value.
    #[error("{value} is too large")]
    TooLarge {
        /// The number given.
        value: u64,
    },
    /// A name the condition does not know.
    #[error("unknown {what} `{text}` (use {known})")]
    UnknownName {
        /// What the value is.
        what: &'static str,
        /// The text given.
        text: String,
        /// The names (and forms) accepted.
        known: &'static str,
    },
    /// An EtherType in hex that does not fit 16 bits.
    #[error("EtherType `{text}` is not a 16-bit hex number")]
    BadHex {
        /// The text given.
        text: String,
    },
    /// Text that is not an address.
    #[error("`{text}` is not an IPv4 or IPv6 address or prefix")]
    NotAnAddress {
        /// The text given.
        text: String,
    },
    /// A prefix length beyond the address family's width.
    #[error("prefix `{text}`: length must be 0..={width}")]
    PrefixLength {
        /// The text given.
        text: String,
        /// The family's width in bits.
        width: u8,
    },
    /// A prefix with bits set beyond its length.
    #[error("prefix `{text}` has host bits set (did you mean {network}/{len}?)")]
    HostBits {
        /// The text given.
        text: String,
        /// The network the prefix most likely means.
        network: IpAddr,
        /// The prefix length.
        len: u8,
    },
    /// A number where an address prefix belongs.
    #[error("{value} is not an address prefix (write it as a string, such as \"10.0.0.0/8\")")]
    PrefixAsNumber {
        /// The number given.
        value: i64,
    },
}

/// A value that one element of a condition list can take, read from an integer or a
/// string.
pub trait Atom: Sized {
    /// What the value looks like, for error messages.
    const EXPECTING: &'static str;
    /// From an integer.
    ///
    /// # Errors
    /// Why the integer is not acceptable.
    fn from_int(v: i64) -> Result<Self, ValueError>;
    /// From a string.
    ///
    /// # Errors
    /// Why the string is not acceptable.
    fn from_text(s: &str) -> Result<Self, ValueError>;
}

/// A condition: one value or a non-empty list of values, any of which may match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matches<T>(pub Vec<T>);

impl<T> Matches<T> {
    /// The accepted values.
    #[must_use]
    pub fn values(&self) -> &[T] {
        &self.0
    }
}

struct AtomVisitor<T>(core::marker::PhantomData<T>);

impl<T: Atom> Visitor<'_> for AtomVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        T::from_int(v).map_err(E::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        let v = i64::try_from(v).map_err(|_| E::custom(ValueError::TooLarge { value: v }))?;
        T::from_int(v).map_err(E::custom)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
        T::from_text(s).map_err(E::custom)
    }
}

struct One<T>(T);

impl<'de, T: Atom> Deserialize<'de> for One<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AtomVisitor(core::marker::PhantomData))
            .map(One)
    }
}

impl<'de, T: Atom> Deserialize<'de> for Matches<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(core::marker::PhantomData<T>);
        impl<'de, T: Atom> Visitor<'de> for V<T> {
            type Value = Matches<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}, or a list of them", T::EXPECTING)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Matches<T>, E> {
                AtomVisitor::<T>(core::marker::PhantomData)
                    .visit_i64(v)
                    .map(|a| Matches(vec![a]))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Matches<T>, E> {
                AtomVisitor::<T>(core::marker::PhantomData)
                    .visit_u64(v)
                    .map(|a| Matches(vec![a]))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Matches<T>, E> {
                AtomVisitor::<T>(core::marker::PhantomData)
                    .visit_str(s)
                    .map(|a| Matches(vec![a]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Matches<T>, A::Error> {
                let mut out = Vec::new();
                while let Some(One(v)) = seq.next_element::<One<T>>()? {
                    out.push(v);
                }
                if out.is_empty() {
                    return Err(de::Error::custom(
                        "an empty list matches nothing; leave the key out to match anything",
                    ));
                }
                Ok(Matches(out))
            }
        }
        d.deserialize_any(V(core::marker::PhantomData))
    }
}

/// Parses `"lo-hi"` or `"n"` into an inclusive range within `0..=max`.
fn parse_range(s: &str, max: i64, what: &'static str) -> Result<(i64, i64), ValueError> {
    let parse = |t: &str| -> Result<i64, ValueError> {
        t.trim().parse::<i64>().map_err(|_| ValueError::NotANumber {
            what,
            text: s.to_owned(),
        })
    };
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (parse(a)?, parse(b)?),
        None => {
            let v = parse(s)?;
            (v, v)
        }
    };
    if lo < 0 || hi > max {
        return Err(ValueError::RangeOutside {
            what,
            text: s.to_owned(),
            max,
        });
    }
    if lo > hi {
        return Err(ValueError::EmptyRange {
            what,
            text: s.to_owned(),
        });
    }
    Ok((lo, hi))
}

fn int_in(v: i64, max: i64, what: &'static str) -> Result<i64, ValueError> {
    if (0..=max).contains(&v) {
        Ok(v)
    } else {
        Err(ValueError::Outside {
            what,
            value: v,
            max,
        })
    }
}

macro_rules! inclusive_range {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $max:expr, $what:literal, $expecting:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            /// Lowest value matched.
            pub lo: $ty,
            /// Highest value matched.
            pub hi: $ty,
        }

        impl $name {
            /// Whether `v` lies in the range.
            #[must_use]
            pub fn contains(&self, v: $ty) -> bool {
                self.lo <= v && v <= self.hi
            }
        }

        impl Atom for $name {
            const EXPECTING: &'static str = $expecting;
            fn from_int(v: i64) -> Result<Self, ValueError> {
                let v = int_in(v, $max, $what)? as $ty;
                Ok($name { lo: v, hi: v })
            }
            fn from_text(s: &str) -> Result<Self, ValueError> {
                let (lo, hi) = parse_range(s, $max, $what)?;
                Ok($name {
                    lo: lo as $ty,
                    hi: hi as $ty,
                })
            }
        }
    };
}

inclusive_range!(
    /// An inclusive range of TCP/UDP ports.
    PortRange, u16, 65_535, "port", "a port 0..=65535 or a range \"lo-hi\""
);
inclusive_range!(
    /// An inclusive range of workload flow or class ids.
    IdRange, u32, 4_294_967_295, "id", "an id 0..=4294967295 or a range \"lo-hi\""
);
inclusive_range!(
    /// An inclusive range of VLAN ids.
    VlanRange, u16, 4_095, "VLAN id", "a VLAN id 0..=4095 or a range \"lo-hi\""
);

/// An inclusive range of DSCP values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DscpRange {
    /// Lowest value matched.
    pub lo: u8,
    /// Highest value matched.
    pub hi: u8,
}

impl DscpRange {
    /// Whether `v` lies in the range.
    #[must_use]
    pub fn contains(&self, v: u8) -> bool {
        self.lo <= v && v <= self.hi
    }
}

/// The DSCP value of a per-hop-behaviour name (RFC 2474, 2597, 3246).
fn dscp_name(s: &str) -> Option<u8> {
    let s = s.to_ascii_lowercase();
    if s == "ef" {
        return Some(46);
    }
    if let Some(n) = s.strip_prefix("cs") {
        let n: u8 = n.parse().ok()?;
        return (n <= 7).then_some(n * 8);
    }
    let n = s.strip_prefix("af")?;
    let mut digits = n.chars().map(|c| c.to_digit(10));
    match (digits.next(), digits.next(), digits.next()) {
        (Some(Some(class @ 1..=4)), Some(Some(drop @ 1..=3)), None) => {
            Some((class * 8 + drop * 2) as u8)
        }
        _ => None,
    }
}

impl Atom for DscpRange {
    const EXPECTING: &'static str =
        "a DSCP 0..=63, a range \"lo-hi\", or a name (ef, cs0..cs7, af11..af43)";
    fn from_int(v: i64) -> Result<Self, ValueError> {
        let v = int_in(v, 63, "DSCP")? as u8;
        Ok(DscpRange { lo: v, hi: v })
    }
    fn from_text(s: &str) -> Result<Self, ValueError> {
        if let Some(v) = dscp_name(s) {
            return Ok(DscpRange { lo: v, hi: v });
        }
        if s.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(ValueError::UnknownName {
                what: "DSCP name",
                text: s.to_owned(),
                known: "ef, cs0..cs7, af11..af43 or a number",
            });
        }
        let (lo, hi) = parse_range(s, 63, "DSCP")?;
        Ok(DscpRange {
            lo: lo as u8,
            hi: hi as u8,
        })
    }
}

/// A transport protocol number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protocol(pub u8);

impl Atom for Protocol {
    const EXPECTING: &'static str =
        "a protocol name (tcp, udp, icmp, icmpv6, sctp, gre, esp, ah) or number 0..=255";
    fn from_int(v: i64) -> Result<Self, ValueError> {
        Ok(Protocol(int_in(v, 255, "protocol")? as u8))
    }
    fn from_text(s: &str) -> Result<Self, ValueError> {
        let n = match s.to_ascii_lowercase().as_str() {
            "icmp" => 1,
            "tcp" => 6,
            "udp" => 17,
            "gre" => 47,
            "esp" => 50,
            "ah" => 51,
            "icmpv6" => 58,
            "sctp" => 132,
            _ => {
                return Err(ValueError::UnknownName {
                    what: "protocol",
                    text: s.to_owned(),
                    known: "tcp, udp, icmp, icmpv6, sctp, gre, esp, ah or a number",
                })
            }
        };
        Ok(Protocol(n))
    }
}

/// An EtherType.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EtherType(pub u16);

impl Atom for EtherType {
    const EXPECTING: &'static str = "an EtherType name (ipv4, ipv6, arp) or number";
    fn from_int(v: i64) -> Result<Self, ValueError> {
        Ok(EtherType(int_in(v, 0xffff, "EtherType")? as u16))
    }
    fn from_text(s: &str) -> Result<Self, ValueError> {
        match s.to_ascii_lowercase().as_str() {
            "ipv4" => Ok(EtherType(ETHERTYPE_IPV4)),
            "ipv6" => Ok(EtherType(ETHERTYPE_IPV6)),
            "arp" => Ok(EtherType(ETHERTYPE_ARP)),
            _ => match s.strip_prefix("0x") {
                Some(hex) => u16::from_str_radix(hex, 16)
                    .map(EtherType)
                    .map_err(|_| ValueError::BadHex { text: s.to_owned() }),
                None => Err(ValueError::UnknownName {
                    what: "EtherType",
                    text: s.to_owned(),
                    known: "ipv4, ipv6, arp or a number such as 0x88cc",
                }),
            },
        }
    }
}

/// An IPv4 or IPv6 address prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    /// The network address (host bits zero).
    pub addr: IpAddr,
    /// Prefix length in bits.
    pub len: u8,
}

impl Prefix {
    /// The address bits left-aligned in a `u128`, and the family's width.
    pub(crate) fn bits(addr: IpAddr) -> (u128, u8) {
        match addr {
            IpAddr::V4(a) => (u128::from(u32::from(a)) << 96, 32),
            IpAddr::V6(a) => (u128::from(a), 128),
        }
    }

    /// The mask of the first `len` bits of a `u128`.
    pub(crate) fn mask(len: u8) -> u128 {
        if len == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(len))
        }
    }
}

impl FromStr for Prefix {
    type Err = ValueError;

    fn from_str(s: &str) -> Result<Self, ValueError> {
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| ValueError::NotAnAddress { text: s.to_owned() })?;
        let (bits, width) = Prefix::bits(addr);
        let len = match len {
            None => width,
            Some(l) => l
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|&l| l <= width)
                .ok_or_else(|| ValueError::PrefixLength {
                    text: s.to_owned(),
                    width,
                })?,
        };
        if bits & !Prefix::mask(len) != 0 {
            let net = bits & Prefix::mask(len);
            let net = match addr {
                IpAddr::V4(_) => IpAddr::from(((net >> 96) as u32).to_be_bytes()),
                IpAddr::V6(_) => IpAddr::from(net.to_be_bytes()),
            };
            return Err(ValueError::HostBits {
                text: s.to_owned(),
                network: net,
                len,
            });
        }
        Ok(Prefix { addr, len })
    }
}

impl Atom for Prefix {
    const EXPECTING: &'static str = "an address prefix such as \"10.0.0.0/8\" or \"fd00::/8\"";
    fn from_int(v: i64) -> Result<Self, ValueError> {
        Err(ValueError::PrefixAsNumber { value: v })
    }
    fn from_text(s: &str) -> Result<Self, ValueError> {
        s.parse()
    }
}
