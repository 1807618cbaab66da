//! Quantities with units, as written in policy and workload files.
//!
//! Every rate, size and duration is a string: a decimal number followed by a
//! unit, with optional spaces between (`"7Mbit"`, `"1.5 Gbit"`, `"64KiB"`,
//! `"250us"`). A bare number is refused, naming the units expected, because a
//! policy that means `"10Mbit"` but says `10` would silently shape to 10 bit/s.
//! The value must come out a whole number of the base unit (bit/s, byte, ns).
//!
//! | quantity | units (base unit first) |
//! |---|---|
//! | rate | `bit`, `kbit` (10^3), `Mbit` (10^6), `Gbit` (10^9), `Tbit` (10^12); each may end in `/s`, and `bps`, `kbps`, `Mbps`, `Gbps`, `Tbps` are the same |
//! | size | `B`; decimal `kB`/`KB` (10^3), `MB` (10^6), `GB` (10^9); binary `KiB` (2^10), `MiB` (2^20), `GiB` (2^30) |
//! | duration | `ns`, `us` (or `µs`, 10^3 ns), `ms` (10^6 ns), `s` (10^9 ns), `m` (or `min`, 60 s) |
//!
//! This is the one grammar of quantities in policy and workload files: node
//! keys, the shaper, the `[classify]` section and workloads all read through it.

use core::fmt;
use core::marker::PhantomData;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// A kind of quantity: its name, its units and what a value looks like.
pub trait Unit {
    /// What the quantity is ("rate").
    const WHAT: &'static str;
    /// Examples for error messages.
    const EXAMPLES: &'static str;
    /// The base unit, in words (`"bytes"`).
    const BASE: &'static str;
    /// The multiplier of a unit name, if known.
    fn scale(unit: &str) -> Option<u64>;
}

/// Bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateUnit {}
/// Bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeUnit {}
/// Nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {}

impl Unit for RateUnit {
    const WHAT: &'static str = "rate";
    const BASE: &'static str = "bits per second";
    const EXAMPLES: &'static str =
        "\"7Mbit\", \"10Gbit\" or \"500kbit\" (bits per second: bit, kbit, Mbit, Gbit, Tbit)";
    fn scale(unit: &str) -> Option<u64> {
        let base = unit
            .strip_suffix("bit/s")
            .or_else(|| unit.strip_suffix("bps"))
            .or_else(|| unit.strip_suffix("bit"))?;
        match base {
            "" => Some(1),
            "k" | "K" => Some(1_000),
            "M" => Some(1_000_000),
            "G" => Some(1_000_000_000),
            "T" => Some(1_000_000_000_000),
            _ => None,
        }
    }
}

impl Unit for SizeUnit {
    const WHAT: &'static str = "size";
    const BASE: &'static str = "bytes";
    const EXAMPLES: &'static str =
        "\"1500B\", \"64KB\" or \"64KiB\" (bytes: B, kB = KB = 1000 B, MB, GB, KiB = 1024 B, MiB, GiB)";
    fn scale(unit: &str) -> Option<u64> {
        match unit {
            "B" => Some(1),
            "kB" | "KB" => Some(1_000),
            "MB" => Some(1_000_000),
            "GB" => Some(1_000_000_000),
            "KiB" => Some(1 << 10),
            "MiB" => Some(1 << 20),
            "GiB" => Some(1 << 30),
            _ => None,
        }
    }
}

impl Unit for TimeUnit {
    const WHAT: &'static str = "duration";
    const BASE: &'static str = "nanoseconds";
    const EXAMPLES: &'static str = "\"2s\", \"10ms\" or \"250us\" (ns, us, ms, s, m)";
    fn scale(unit: &str) -> Option<u64> {
        match unit {
            "ns" => Some(1),
            "us" | "µs" => Some(1_000),
            "ms" => Some(1_000_000),
            "s" => Some(1_000_000_000),
            "m" | "min" => Some(60_000_000_000),
            _ => None,
        }
    }
}

/// A quantity in its base unit (bits/s, bytes or ns).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity<U>(pub u64, PhantomData<U>);

/// A rate in bits per second.
pub type Rate = Quantity<RateUnit>;
/// A size in bytes.
pub type Size = Quantity<SizeUnit>;
/// A duration in nanoseconds.
pub type Time = Quantity<TimeUnit>;

impl<U> Quantity<U> {
    /// The value in the base unit.
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl Quantity<RateUnit> {
    /// The rate.
    #[must_use]
    pub const fn rate(self) -> eiffel_sched::Rate {
        eiffel_sched::Rate::from_bps(self.0)
    }
}

impl Quantity<TimeUnit> {
    /// The duration.
    #[must_use]
    pub const fn duration(self) -> eiffel_sched::Duration {
        eiffel_sched::Duration::from_nanos(self.0)
    }
}

impl<U> fmt::Debug for Quantity<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A quantity that cannot be read: what is wrong, with the text, the kind of
/// quantity and examples of what is expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnitError {
    /// No number in front.
    #[error("`{text}` is not a {what}: expected a number and a unit, such as {examples}")]
    NotAQuantity {
        /// The text given.
        text: String,
        /// The kind of quantity.
        what: &'static str,
        /// What is expected.
        examples: &'static str,
    },
    /// A number without a unit, written as a string.
    #[error("`{text}` has no unit: a {what} needs a unit, such as {examples}")]
    NoUnit {
        /// The text given.
        text: String,
        /// The kind of quantity.
        what: &'static str,
        /// What is expected.
        examples: &'static str,
    },
    /// A number without a unit, written as a number.
    #[error(
        "a bare number ({value}) has no unit: write the {what} as a string such as {examples}"
    )]
    BareNumber {
        /// The number as written.
        value: String,
        /// The kind of quantity.
        what: &'static str,
        /// What is expected.
        examples: &'static str,
    },
    /// A unit this kind of quantity does not have.
    #[error("`{text}`: unknown {what} unit `{unit}`; write it like {examples}")]
    UnknownUnit {
        /// The text given.
        text: String,
        /// The unit given.
        unit: String,
        /// The kind of quantity.
        what: &'static str,
        /// What is expected.
        examples: &'static str,
    },
    /// A malformed number.
    #[error("`{text}`: `{number}` is not a decimal number")]
    NotDecimal {
        /// The text given.
        text: String,
        /// The number part.
        number: String,
    },
    /// More than 64 bits of the base unit.
    #[error("`{text}` is too large")]
    TooLarge {
        /// The text given.
        text: String,
    },
    /// A fraction of the base unit.
    #[error("`{text}` is not a whole number of {base}")]
    NotWhole {
        /// The text given.
        text: String,
        /// The base unit (`bytes`...).
        base: &'static str,
    },
}

/// Parses `text` as a quantity of kind `U`.
///
/// # Errors
/// What is wrong and what is expected.
pub fn parse<U: Unit>(text: &str) -> Result<Quantity<U>, UnitError> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let unit = unit.trim();
    let owned = || text.to_owned();
    if num.is_empty() {
        let (what, examples) = (U::WHAT, U::EXAMPLES);
        return Err(UnitError::NotAQuantity {
            text: owned(),
            what,
            examples,
        });
    }
    if unit.is_empty() {
        let (what, examples) = (U::WHAT, U::EXAMPLES);
        return Err(UnitError::NoUnit {
            text: owned(),
            what,
            examples,
        });
    }
    let scale = U::scale(unit).ok_or_else(|| UnitError::UnknownUnit {
        text: owned(),
        unit: unit.to_owned(),
        what: U::WHAT,
        examples: U::EXAMPLES,
    })?;
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() || frac.contains('.') || (num.contains('.') && frac.is_empty()) {
        let number = num.to_owned();
        return Err(UnitError::NotDecimal {
            text: owned(),
            number,
        });
    }
    let too_big = || UnitError::TooLarge { text: owned() };
    let digits = u32::try_from(frac.len()).map_err(|_| too_big())?;
    let pow = 10u128.checked_pow(digits).ok_or_else(too_big)?;
    let mantissa: u128 = format!("{int}{frac}").parse().map_err(|_| too_big())?;
    let scaled = mantissa
        .checked_mul(u128::from(scale))
        .ok_or_else(too_big)?;
    if scaled % pow != 0 {
        return Err(UnitError::NotWhole {
            text: owned(),
            base: U::BASE,
        });
    }
    u64::try_from(scaled / pow)
        .map(|v| Quantity(v, PhantomData))
        .map_err(|_| too_big())
}

/// The error of a number written without its unit.
pub(crate) fn bare<U: Unit>(v: impl fmt::Display) -> UnitError {
    UnitError::BareNumber {
        value: v.to_string(),
        what: U::WHAT,
        examples: U::EXAMPLES,
    }
}

impl<'de, U: Unit> Deserialize<'de> for Quantity<U> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<U>(PhantomData<U>);
        impl<U: Unit> Visitor<'_> for V<U> {
            type Value = Quantity<U>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a {} with units, such as {}", U::WHAT, U::EXAMPLES)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Quantity<U>, E> {
                parse(s).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity<U>, E> {
                Err(E::custom(bare::<U>(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity<U>, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Quantity<U>, E> {
                Err(E::custom(bare::<U>(v)))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Formats bits per second with the largest unit that keeps it readable
/// (`"7 Mbit/s"`, `"1.5 Gbit/s"`).
#[must_use]
pub fn fmt_rate(bps: f64) -> String {
    eiffel_sched::time::fmt_bps(bps)
}

/// Formats bytes (`"1500 B"`, `"64 KiB"` when a whole number of KiB, else decimal).
#[must_use]
pub fn fmt_size(bytes: u64) -> String {
    for (unit, scale) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= scale && bytes % scale == 0 {
            return format!("{} {unit}", bytes / scale);
        }
    }
    for (unit, scale) in [("GB", 1_000_000_000u64), ("MB", 1_000_000), ("kB", 1_000)] {
        if bytes >= scale && bytes % scale == 0 {
            return format!("{} {unit}", bytes / scale);
        }
    }
    format!("{bytes} B")
}

/// Formats an approximate byte count in binary units with three significant
/// digits (`"3.5 GiB"`, `"712 KiB"`), for estimates.
#[must_use]
pub fn fmt_bytes(bytes: u64) -> String {
    let mut x = bytes as f64;
    for unit in ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] {
        if x < 1024.0 || unit == "PiB" {
            return if unit == "B" {
                format!("{bytes} B")
            } else {
                let digits = if x >= 100.0 {
                    0
                } else if x >= 10.0 {
                    1
                } else {
                    2
                };
                let v = format!("{x:.digits$}");
                let v = if v.contains('.') {
                    v.trim_end_matches('0').trim_end_matches('.')
                } else {
                    &v
                };
                format!("{v} {unit}")
            };
        }
        x /= 1024.0;
    }
    unreachable!("the last unit returns")
}

/// Formats nanoseconds with the largest unit that keeps three significant digits.
#[must_use]
pub fn fmt_time(ns: f64) -> String {
    eiffel_sched::time::fmt_nanos(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_exact() {
        assert_eq!(parse::<RateUnit>("7Mbit").unwrap().get(), 7_000_000);
        assert_eq!(parse::<RateUnit>("10Gbit/s").unwrap().get(), 10_000_000_000);
        assert_eq!(parse::<RateUnit>("500 kbit").unwrap().get(), 500_000);
        assert_eq!(parse::<RateUnit>("1.5Gbps").unwrap().get(), 1_500_000_000);
        assert_eq!(parse::<RateUnit>("64bit").unwrap().get(), 64);
        assert_eq!(parse::<SizeUnit>("1500B").unwrap().get(), 1500);
        assert_eq!(parse::<SizeUnit>("64KB").unwrap().get(), 64_000);
        assert_eq!(parse::<SizeUnit>("64kB").unwrap().get(), 64_000);
        assert_eq!(parse::<SizeUnit>("64KiB").unwrap().get(), 65_536);
        assert_eq!(parse::<SizeUnit>("1.5MiB").unwrap().get(), 1_572_864);
        assert_eq!(parse::<TimeUnit>("2s").unwrap().get(), 2_000_000_000);
        assert_eq!(parse::<TimeUnit>("10us").unwrap().get(), 10_000);
        assert_eq!(parse::<TimeUnit>("0.5ms").unwrap().get(), 500_000);
        assert_eq!(parse::<TimeUnit>("2m").unwrap().get(), 120_000_000_000);
        assert_eq!(parse::<TimeUnit>("1.5min").unwrap().get(), 90_000_000_000);
    }

    #[test]
    fn mistakes_are_explained() {
        let e = parse::<RateUnit>("7").unwrap_err().to_string();
        assert!(e.contains("no unit") && e.contains("Mbit"), "{e}");
        let e = parse::<RateUnit>("7MB").unwrap_err().to_string();
        assert!(e.contains("unknown rate unit `MB`"), "{e}");
        let e = parse::<SizeUnit>("1.5B").unwrap_err().to_string();
        assert!(e.contains("whole number of bytes"), "{e}");
        assert!(parse::<TimeUnit>("1..2s").is_err());
        assert!(parse::<TimeUnit>("s").is_err());
        assert!(parse::<TimeUnit>("99999999999999999999s").is_err());
        #[derive(Debug, Deserialize)]
        struct T {
            #[allow(dead_code)]
            limit: Rate,
        }
        let e = toml::from_str::<T>("limit = 7").unwrap_err();
        assert!(e.message().contains("bare number (7) has no unit"), "{e}");
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_rate(7e6), "7 Mbit/s");
        assert_eq!(fmt_rate(1.25e9), "1.25 Gbit/s");
        assert_eq!(fmt_size(65_536), "64 KiB");
        assert_eq!(fmt_size(1500), "1500 B");
        assert_eq!(fmt_size(64_000), "64 kB");
        assert_eq!(fmt_time(12_345.0), "12.35 us");
    }
}
