//! Ranks from packets: the annotations a classifier writes into a descriptor for
//! rank-based disciplines (the packet annotator of the Eiffel architecture).
//!
//! A descriptor carries three rank fields that schedulers read
//! ([`eiffel_sched::Packet`]): `rank` (the level of a `strict` per-flow leaf, the
//! slack of an `lstf` node), `deadline` (`edf`) and `remaining` (`srpt`,
//! `pfabric`, the calendar-queue policies). An [`AnnotateSpec`] says where each
//! comes from for live traffic; an [`Annotator`] (compiled from it) fills them in,
//! per packet, without allocating:
//!
//! | field | source | value |
//! | --- | --- | --- |
//! | `rank` | [`RankFrom::Dscp`] | `63 - DSCP`: the higher the code point, the sooner (EF = 46 gives 17, best effort 63) |
//! | `deadline` | [`DeadlineField::UdpPayload`] | arrival + a 32-bit big-endian budget at a byte offset of the UDP payload, times `unit` |
//! | `deadline` | [`DeadlineField::Ipv4Option`] | arrival + a 32-bit big-endian budget in the first four data bytes of an IPv4 option of a given type, times `unit` |
//! | `deadline` | [`DeadlineSpec::budget`], [`DeadlineSpec::class_budgets`] | arrival + the class's budget (a packet without the header field, or no field configured) |
//! | `remaining` | [`RemainingFrom::Attained`] | bytes the flow has sent, this packet included: least attained service (LAS), pFabric's practical stand-in, when the leaf is `srpt` or `pfabric` |
//! | `remaining` | [`RemainingFrom::Levels`] | PIAS: the number of thresholds the flow's attained bytes have passed (0 until the first), so a flow drops a level each time it crosses one |
//!
//! A packet with no deadline source keeps [`eiffel_sched::NO_DEADLINE`]. Attained
//! bytes are kept per flow-table slot and start again at zero when the slot holds a
//! new flow (first packet, expiry, eviction).

use eiffel_sched::{ClassId, Duration, FlowId, Nanos, Packet, NO_DEADLINE};

use crate::wire::Headers;

/// Where `Packet::rank` comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RankFrom {
    /// Left at 0.
    #[default]
    None,
    /// `63 - DSCP` (0 for a frame without an IP header).
    Dscp,
}

/// A header field that holds a packet's deadline, as a budget relative to its
/// arrival: a 32-bit big-endian unsigned count of [`DeadlineSpec::unit`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeadlineField {
    /// At `offset` bytes into the UDP payload (unfragmented UDP only).
    UdpPayload {
        /// Offset of the field's first byte from the start of the UDP payload.
        offset: u16,
    },
    /// In the first four data bytes of the IPv4 option of type `kind` (the
    /// option's length byte must be at least 6).
    Ipv4Option {
        /// The option type byte (copied flag, class and number), 2..=255.
        kind: u8,
    },
}

/// Where `Packet::deadline` comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlineSpec {
    /// A header field holding the budget, if any.
    pub field: Option<DeadlineField>,
    /// The unit of the field's value.
    pub unit: Duration,
    /// The budget of packets of classes without their own (and without the field).
    pub budget: Option<Duration>,
    /// Budgets by leaf name.
    pub class_budgets: Vec<(String, Duration)>,
}

/// Where `Packet::remaining` comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RemainingFrom {
    /// Left at 0.
    #[default]
    None,
    /// The flow's attained bytes, this packet included (LAS).
    Attained,
    /// The number of these byte thresholds (strictly increasing) the flow's attained
    /// bytes, this packet included, exceed (PIAS).
    Levels(Vec<u64>),
}

/// Which descriptor fields a classifier fills in from packets, and how.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AnnotateSpec {
    /// `Packet::rank`.
    pub rank: RankFrom,
    /// `Packet::deadline`; `None` leaves [`NO_DEADLINE`].
    pub deadline: Option<DeadlineSpec>,
    /// `Packet::remaining`.
    pub remaining: RemainingFrom,
}

/// An [`AnnotateSpec`] that cannot be compiled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnnotateError {
    /// A class budget names no leaf.
    #[error("deadline budget for `{leaf}`: not a leaf of the policy")]
    UnknownLeaf {
        /// The name given.
        leaf: String,
    },
    /// PIAS thresholds that do not increase.
    #[error("remaining-size thresholds must be strictly increasing and positive")]
    Thresholds,
    /// An IPv4 option type that cannot carry data (0 ends the list, 1 pads).
    #[error("IPv4 option type {0} carries no data: use 2..=255")]
    OptionKind(u8),
    /// A zero field unit.
    #[error("the deadline field's unit must be positive")]
    ZeroUnit,
}

impl AnnotateSpec {
    /// Whether the spec sets nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == AnnotateSpec::default()
    }

    /// Compiles the spec for a flow table of `max_flows` slots, with leaves named
    /// through `resolve`.
    ///
    /// # Errors
    /// See [`AnnotateError`].
    pub fn compile(
        &self,
        max_flows: u32,
        mut resolve: impl FnMut(&str) -> Option<ClassId>,
    ) -> Result<Annotator, AnnotateError> {
        let mut budgets = Vec::new();
        let mut default_budget = None;
        if let Some(d) = &self.deadline {
            if let Some(DeadlineField::Ipv4Option { kind: k @ (0 | 1) }) = d.field {
                return Err(AnnotateError::OptionKind(k));
            }
            if d.field.is_some() && d.unit.is_zero() {
                return Err(AnnotateError::ZeroUnit);
            }
            default_budget = d.budget.map(|b| b.as_nanos());
            for (leaf, budget) in &d.class_budgets {
                let id = resolve(leaf)
                    .ok_or_else(|| AnnotateError::UnknownLeaf { leaf: leaf.clone() })?
                    as usize;
                if budgets.len() <= id {
                    budgets.resize(id + 1, None);
                }
                budgets[id] = Some(budget.as_nanos());
            }
        }
        if let RemainingFrom::Levels(t) = &self.remaining {
            if t.first() == Some(&0) || t.windows(2).any(|w| w[0] >= w[1]) {
                return Err(AnnotateError::Thresholds);
            }
        }
        let attained = match self.remaining {
            RemainingFrom::None => Vec::new(),
            _ => vec![0; max_flows as usize],
        };
        Ok(Annotator {
            rank: self.rank,
            deadline: self.deadline.as_ref().map(|d| (d.field, d.unit.as_nanos())),
            default_budget,
            budgets,
            remaining: self.remaining.clone(),
            attained,
        })
    }
}

/// A compiled [`AnnotateSpec`] with its per-flow attained bytes.
#[derive(Clone, Debug, Default)]
pub struct Annotator {
    rank: RankFrom,
    /// The header field and its unit in nanoseconds, when deadlines are set.
    deadline: Option<(Option<DeadlineField>, Nanos)>,
    default_budget: Option<Nanos>,
    /// Budget by class id.
    budgets: Vec<Option<Nanos>>,
    remaining: RemainingFrom,
    /// Attained bytes by flow id (empty when `remaining` is `None`).
    attained: Vec<u64>,
}

impl Annotator {
    /// Fills `pkt`'s rank fields from `frame` (parsed as `headers`); `new_flow`
    /// says the packet's flow slot now holds a new flow.
    #[inline]
    pub fn annotate(&mut self, pkt: &mut Packet, frame: &[u8], headers: &Headers, new_flow: bool) {
        let field = self.read(frame, headers);
        self.annotate_read(pkt, headers, field, new_flow);
    }

    /// What [`Annotator::annotate`] needs from the frame's bytes: the deadline
    /// field's value, when one is configured and the frame carries it. Read
    /// while the frame is at hand; the rest of the annotation needs only the
    /// headers ([`Annotator::annotate_read`]).
    #[inline]
    #[must_use]
    pub fn read(&self, frame: &[u8], headers: &Headers) -> Option<u32> {
        let (field, _) = self.deadline?;
        read_field(frame, headers, field?)
    }

    /// [`Annotator::annotate`] with the deadline field already read
    /// ([`Annotator::read`]).
    #[inline]
    pub fn annotate_read(
        &mut self,
        pkt: &mut Packet,
        headers: &Headers,
        field: Option<u32>,
        new_flow: bool,
    ) {
        if self.rank == RankFrom::Dscp {
            pkt.rank = headers
                .key
                .ip
                .map_or(0, |ip| u64::from(63 - (ip.dscp & 63)));
        }
        if let Some((_, unit)) = self.deadline {
            pkt.deadline = self.deadline_of(pkt, field, unit);
        }
        if !matches!(self.remaining, RemainingFrom::None) {
            pkt.remaining = self.attain(pkt.flow, pkt.len, new_flow);
        }
    }

    fn deadline_of(&self, pkt: &Packet, from_field: Option<u32>, unit: Nanos) -> Nanos {
        let budget = match from_field {
            Some(v) => Some(u64::from(v).saturating_mul(unit)),
            None => self
                .budgets
                .get(pkt.class as usize)
                .copied()
                .flatten()
                .or(self.default_budget),
        };
        budget.map_or(NO_DEADLINE, |b| pkt.arrival.saturating_add(b))
    }

    /// Adds `len` to the flow's attained bytes and returns the `remaining` value.
    fn attain(&mut self, flow: FlowId, len: u32, new_flow: bool) -> u64 {
        let Some(a) = self.attained.get_mut(flow as usize) else {
            return 0;
        };
        if new_flow {
            *a = 0;
        }
        *a = a.saturating_add(u64::from(len));
        match &self.remaining {
            RemainingFrom::Levels(t) => t.partition_point(|&x| x < *a) as u64,
            _ => *a,
        }
    }

    /// The attained bytes of flow `flow` (0 when not tracked).
    #[must_use]
    pub fn attained(&self, flow: FlowId) -> u64 {
        self.attained.get(flow as usize).copied().unwrap_or(0)
    }
}

/// Reads the 32-bit big-endian deadline field, if the frame has it.
fn read_field(frame: &[u8], headers: &Headers, field: DeadlineField) -> Option<u32> {
    let at = match field {
        DeadlineField::UdpPayload { offset } => headers.udp_payload? as usize + usize::from(offset),
        DeadlineField::Ipv4Option { kind } => {
            let (start, len) = headers.ipv4_options?;
            let opts = frame.get(start as usize..(start + len) as usize)?;
            start as usize + find_option(opts, kind)?
        }
    };
    let b = frame.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The offset within `opts` of the data of the first option of type `kind` with
/// at least four data bytes.
fn find_option(opts: &[u8], kind: u8) -> Option<usize> {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return None,
            1 => i += 1,
            t => {
                let len = usize::from(*opts.get(i + 1)?);
                if len < 2 || i + len > opts.len() {
                    return None;
                }
                if t == kind && len >= 6 {
                    return Some(i + 2);
                }
                i += len;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
