//! Quick Fair Queueing (Checconi, Valente and Rizzo, "QFQ: Efficient packet
//! scheduling with tight bandwidth distribution guarantees", 2010; qfq.txt
//! sections 3 to 5): WF²Q+ with rounded timestamps, O(1) per packet.
//!
//! # Definitions (qfq.txt sections 3 and 4.1)
//!
//! - Flow `k` has weight `w_k`; its share is `phi_k = w_k / W` with `W` the sum of
//!   configured weights ([`crate::vtime::VirtualClock`]), so `sum(phi) = 1`. `L_k`
//!   is the flow's declared maximum packet size, `L` the scheduler's (the largest
//!   packet any flow may send).
//! - Exact timestamps (eq. (2)): `S_k = max(V, F_k)` when the flow becomes
//!   backlogged, `S_k = F_k` when it is served, then `F_k = S_k + l_k/phi_k` for its
//!   head of `l_k` bytes. `V` grows by every served length and jumps to the
//!   smallest rounded start of the backlogged flows when it lags behind (eq. (3)).
//! - Flow `k` belongs to group `i = ceil(log2(L_k/phi_k))` whose *slot size* is
//!   `sigma_i = 2^i` (eq. (4)), so `F_k - S_k <= sigma_i`.
//! - Rounded timestamps (eq. (5)): `S^_k = floor(S_k / sigma_i) * sigma_i`; a group's
//!   timestamps are `S_i = min S^_k` over its flows and `F_i = S_i + 2 sigma_i` (6).
//! - A group is *eligible* if `S_i <= V`, and *blocked* if some eligible group of
//!   higher index has a lower finish time (section 4.1.3). Backlogged groups are
//!   partitioned into the four sets ER, EB, IR, IB (Eligible/Ineligible,
//!   Ready/Blocked), each one `u64` word with bit `i` for group `i`. ER is ordered
//!   by finish time, so the next flow to serve is the first flow of the first
//!   bucket of the lowest group in ER.
//!
//! # Data structures
//!
//! - Per flow (32 bytes, two to a cache line): exact `F`, `inv_w`, the link in
//!   its bucket list, the head length and the group index; `S = F - l * inv_w` is
//!   not stored, and the wrap count of an idle flow's `F` is kept apart.
//! - Per group: `S_i`, `F_i`, and a *bucket list*: 64 FIFO buckets of flows, one per
//!   slot of `sigma_i` starting at `S_i`, used as a circular array (`front` is the
//!   bucket of slot 0) with a `u64` word whose bit `j` marks slot `j` non-empty.
//!   Inserting a flow is one append; finding the group's next flow is one
//!   find-first-set; moving the window forward when slot 0 empties is a shift.
//! - The four set words.
//! - `V` ([`VirtualClock`]) and the bytes served that it does not count yet. A
//!   service after which the served group's slot 0 still holds flows and no
//!   group is ineligible changes no group's state and reads no `V` (Fig. 5:
//!   `make_eligible` has nothing to move), so it only adds its length to that
//!   sum; the clock takes the sum ([`VirtualClock::serve_bytes`], exactly what
//!   serving the packets one by one gives) before anything reads `V` or changes
//!   `W`. Most services of a busy scheduler are of this kind: they skip the
//!   128-bit update of `V` and its remainder.
//!
//! Every path is loop-free: `activate` (qfq.txt Fig. 4), `peek` and `served`
//! (Fig. 5, with `make_eligible` and `unblock_groups` of Fig. 6) are a fixed number
//! of word operations. Cost O(1) per packet.
//!
//! # Constants and fixed-point layout (derived)
//!
//! Timestamps are the `u64` fixed-point virtual times of [`crate::vtime`]:
//! 40 fractional bits, a flow advancing by `l * inv_w` with
//! `inv_w = ceil(2^40 / w)` (the fixed-point `1/phi` up to the common factor `W`,
//! which normalises `V` instead: `V` grows by `l * 2^40 / W`). In these units
//! `l_k/phi_k` becomes `l_k * inv_w`, and the group of a flow is
//! `i = ceil(log2(L_k * inv_w))`: the smallest `i` with `2^i >= L_k * inv_w`. The
//! group index is therefore independent of `W` (the paper's `sigma_i` in bytes is
//! `2^i * W / 2^40`, see [`QfqCore::slot_bytes`]).
//!
//! - Weights `1..=2^16` ([`MAX_WEIGHT`]): `inv_w` ranges over `2^24..=2^40`, exact
//!   to 2^-24 relative.
//! - Packets `1..=2^16` bytes ([`MAX_PACKET`]): `L_k * inv_w` ranges over
//!   `2^24..=2^56`, so group indexes run from [`MIN_GROUP`] = 24 to
//!   [`MAX_GROUP`] = 56: 33 groups, all of them bits of one `u64` (bit `i` is group
//!   `i`, which makes the masks of `make_eligible` direct).
//! - Weight sum up to 2^32 ([`MAX_WEIGHT_SUM`]): enough for 65536 flows of the
//!   largest weight; only the precision of `V`'s increments depends on it.
//! - Live timestamps stay within `V - L - 2 sigma` and `V + 3 sigma` (Theorems 3 and
//!   4), under 2^59 from `V`: comparisons are wrap-safe ([`crate::vtime::vt_lt`]).
//! - 64 buckets per group: Theorem 5 shows that at most `2 + ceil(L/sigma_i)` slots
//!   are occupied (`L` in virtual time, `L * 2^40 / W`). The group of a flow is
//!   computed with `max(L_k, ceil(L / 62))` in place of `L_k`, so that
//!   `sigma_i >= (L/62) * 2^40 / w_k >= (L * 2^40 / W) / 62` and the bound is at
//!   most 64 slots whatever the weights. Memory: 64 groups x 544 bytes, plus 40
//!   bytes per flow (32 hot, 8 read only when an idle flow becomes backlogged).
//!
//! # Guarantees (qfq.txt section 5)
//!
//! For flow `k` in group `i`, on a link of constant rate `R`:
//! B-WFI `<= 3 phi_k sigma_i + 2 phi_k L` (Theorem 1) and T-WFI
//! `<= (3 sigma_i + 2L)/R` (Theorem 2), with `sigma_i` in bytes as above. The
//! auditor of eiffel-sim checks both on random traces.
//!
//! # Where this code differs from the paper, and why
//!
//! 1. *Group of a flow*: computed from `max(L_k, ceil(L/62))` (see above), so that
//!    64 buckets always suffice. A flow whose `L_k < L/62` lands in a group of larger
//!    slot than eq. (4) gives; its bounds are those of the group it is in. With
//!    `L = 1500` this only concerns flows declaring packets under 25 bytes.
//! 2. *Normalisation*: the paper assumes `sum(phi) <= 1`; here `phi = w/W` with `W`
//!    the configured weight sum, and a decrease of `W` (removing a flow) waits until
//!    the scheduler is empty ([`crate::vtime::VirtualClock`]).
//! 3. *Fixed point*: `l/phi` rounds up and `V`'s increments round down (with an
//!    exact remainder), so flows are never charged less than they sent and `V` never
//!    runs ahead; the proofs of Theorems 3 to 5 hold unchanged with these
//!    inequalities.
//! 4. *Stale finish times*: `S = max(V, F)` for a flow that was idle compares
//!    through wrap counts ([`crate::vtime`]), exact after any idle time.
//! 5. *Back-shifting (eq. (29), appendix A.2)*: applied when a group that was idle
//!    becomes backlogged, would be blocked, and `V` exceeds the finish time `F_b` of
//!    the lowest ER group above it: the flow then starts at `max(F_b, F_k)`.
//! 6. *Enqueue into a backlogged group whose timestamps do not change*: Fig. 4 runs
//!    `compute_group_state` and ORs the group into its set even then; the group is
//!    already in its set and nothing that decides the state changed, so the code
//!    leaves the sets alone.
//! 7. *Ties*: flows in the same bucket are served in FIFO order of insertion.
//! 8. *A gap in Theorem 8, kept as in the paper*. `unblock_groups` moves every
//!    blocked group below the group `i` just served to the ready sets when `F_i`
//!    grew (Theorem 8). The proof needs `S_h <= F_i` for each group `h` that `i`
//!    blocks, from Lemma 4, whose proof covers a group start set by eq. (29) or by
//!    the finish time of a served flow, but not the third way a group start grows:
//!    a flow that joins a backlogged group gets `S = V` (eq. (2)) and sits in a far
//!    slot; when the earlier slots drain, `S_h` jumps to `floor(V)` at once and can
//!    pass `F_i`. Serving `i` raises `F_i` by `sigma_i`, and `h` is moved to ER
//!    although `F_h` may still exceed `F_i`, by less than `L + 2 sigma_h`
//!    (`F_h <= V + 2 sigma_h` and `V <= F_i + L` by Theorem 4). ER is then ordered
//!    by finish time only up to that slack, and `h` may be served one turn early.
//!    Re-checking the moved groups one by one would put a loop over groups on the
//!    dequeue path, so the code keeps the paper's word operations. Model-based
//!    tests met this state once in 20,000 random operation sequences; the
//!    invariant checks allow the slack, and the service bounds of Theorems 1 and
//!    2 held on every randomized trace of the auditor's tests.
//!
//! # Invariants
//!
//! Checked after every operation by [`FlowCore::check_invariants`] in tests: the
//! sets are disjoint and hold exactly the backlogged groups; every flow sits in
//! the bucket of its rounded start; slot 0 of a backlogged group is non-empty and
//! `S_i` is its start; IR ∪ IB is ordered by `S_i` and `F_i`; eligibility matches
//! its definition; every blocked group has a blocker and no ready group finishes
//! later than an ER group above it by `L + 2 sigma_i` or more (exactly ordered
//! but for deviation 8); ER is non-empty whenever a group is backlogged; and the
//! GBT bounds `S_i <= ceil(V / sigma_i) sigma_i` (Theorem 3) and `V <= F_i + L`
//! (Theorem 4) hold.

use crate::flows::{FlowCore, FlowQueue, FlowRecord, FlowTable, PerFlow};
use crate::packet::FlowId;
use crate::scheduler::{ConfigError, FlowConfig};
use crate::vtime::{
    check_weight_and_size, inv_weight, vt_le, vt_lt, VirtualClock, FRAC_BITS, MAX_PACKET,
};

pub use crate::vtime::{MAX_WEIGHT, MAX_WEIGHT_SUM};

/// Buckets per group: one bit each in a `u64`.
pub const SLOTS: u32 = 64;

/// Smallest group index: a 1-byte packet of a flow of weight [`MAX_WEIGHT`].
pub const MIN_GROUP: u32 = group_index(1, inv_weight(MAX_WEIGHT));

/// Largest group index: a [`MAX_PACKET`] packet of a flow of weight 1.
pub const MAX_GROUP: u32 = group_index(MAX_PACKET, inv_weight(1));

const _: () = {
    assert!(MIN_GROUP == 24 && MAX_GROUP == 56);
    // 3 sigma_max + L (Theorems 3 and 4) stays far inside the 2^63 window.
    assert!(MAX_GROUP + 3 <= 62);
};

const NIL: u32 = u32::MAX;

/// The four group sets; the index of each set word.
const ER: usize = 0;
const EB: usize = 1;
const IR: usize = 2;
const IB: usize = 3;

/// `ceil(log2(len * inv_w))`: the group of a flow whose largest packet is `len`.
#[inline]
#[must_use]
pub const fn group_index(len: u32, inv_w: u64) -> u32 {
    let x = len as u64 * inv_w;
    if x <= 1 {
        0
    } else {
        64 - (x - 1).leading_zeros()
    }
}

/// `t` rounded down to a multiple of `2^shift`.
#[inline]
const fn round_down(t: u64, shift: u32) -> u64 {
    t & !((1u64 << shift) - 1)
}

/// The bits of `set` strictly above bit `i`.
#[inline]
const fn bits_above(set: u64, i: u32) -> u64 {
    set & ((u64::MAX << i) << 1)
}

/// The bits `0..i` (strictly below bit `i`), `i < 64`.
#[inline]
const fn bits_below(i: u32) -> u64 {
    (1u64 << i) - 1
}

/// The bits `0..=j`.
#[inline]
const fn bits_through(j: u32) -> u64 {
    u64::MAX >> (63 - j)
}

/// Index of the lowest set bit of a non-zero word (find-first-set).
#[inline]
const fn ffs(word: u64) -> u32 {
    word.trailing_zeros()
}

/// Index of the highest set bit of a non-zero word (find-last-set).
#[inline]
const fn fls(word: u64) -> u32 {
    63 - word.leading_zeros()
}

/// Adds the service of `unfolded` bytes to `clock` and clears it.
#[inline]
fn fold(clock: &mut VirtualClock, unfolded: &mut u64) {
    if *unfolded != 0 {
        clock.serve_bytes(*unfolded);
        *unfolded = 0;
    }
}

/// Hot per-flow state (32 bytes: two flows per cache line); `inv_w == 0` marks
/// an unconfigured flow. The exact start of the head packet is not kept: it is
/// `f - head_len * inv_w`, and only `activate` and `served`, which compute it,
/// use it. The wrap count of an idle flow's `f` lives apart, in
/// [`QfqCore::epochs`].
// Aligned to 32 bytes: with the 20-byte `FlowQueue` of a `PerFlow` beside
// it, one 64-byte record per flow (measured: a 56-byte record made the
// dequeue slower).
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(32))]
struct Flow {
    /// Exact virtual finish of the head packet (of the last one while idle).
    f: u64,
    /// `ceil(2^40 / weight)`.
    inv_w: u64,
    /// Next flow in the same bucket, or `NIL`.
    next: u32,
    head_len: u32,
    /// Group index (slot size `2^group`).
    group: u8,
    backlogged: bool,
}

const _: () = assert!(core::mem::size_of::<Flow>() == 32);
// A `PerFlow`'s record of a flow: QFQ's state and the flow's FIFO, 64 bytes.
const _: () = assert!(core::mem::size_of::<crate::flows::Record<Flow, FlowQueue>>() == 64);

impl Flow {
    /// The exact virtual start of the head packet.
    fn start(&self) -> u64 {
        self.f.wrapping_sub(u64::from(self.head_len) * self.inv_w)
    }
}

/// What a flow's record held about the head it just sent.
#[derive(Clone, Copy, Debug)]
struct SentHead {
    /// The head's exact virtual start (the previous finish).
    s: u64,
    /// The flow that followed in the bucket.
    next: u32,
    /// The head's length.
    len: u32,
}

impl Flow {
    /// The flow sent its head: its record is read and rewritten once, its old
    /// link and head length out, then its new finish time (or idleness) and a
    /// cleared link in.
    #[inline(always)]
    fn serve(&mut self, next: Option<u32>) -> SentHead {
        let sent = SentHead {
            s: self.f,
            next: self.next,
            len: self.head_len,
        };
        if let Some(len) = next {
            // Eq. (2) on dequeue: S = F, F = S + l/phi for the new head.
            self.f = sent.s.wrapping_add(u64::from(len) * self.inv_w);
            self.head_len = len;
            self.next = NIL;
        } else {
            self.backlogged = false;
        }
        sent
    }
}

impl FlowRecord for Flow {
    #[inline]
    fn backlogged(&self) -> bool {
        self.backlogged
    }
}

/// One FIFO bucket of flows sharing a rounded start.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    head: u32,
    tail: u32,
}

const EMPTY: Bucket = Bucket {
    head: NIL,
    tail: NIL,
};

/// A group: its rounded timestamps and bucket list.
#[derive(Clone, Debug)]
struct Group {
    /// `S_i`: start of slot 0, a multiple of `2^shift`.
    s: u64,
    /// `F_i = S_i + 2 * 2^shift`.
    f: u64,
    /// Bit `j` set iff slot `j` (bucket `(front + j) % 64`) holds flows.
    full: u64,
    /// Bucket holding slot 0.
    front: u32,
    buckets: [Bucket; SLOTS as usize],
}

impl Group {
    const fn new() -> Self {
        Group {
            s: 0,
            f: 0,
            full: 0,
            front: 0,
            buckets: [EMPTY; SLOTS as usize],
        }
    }
}

/// The QFQ [`FlowCore`]; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct QfqCore<A = ()> {
    /// The four group sets, indexed by `ER`, `EB`, `IR`, `IB`.
    sets: [u64; 4],
    /// `V` and `W`, but for the service counted in `unfolded`.
    clock: VirtualClock,
    /// Bytes served whose service `V` does not count yet: a service that
    /// changes no group's state adds here, and the clock takes the sum
    /// ([`VirtualClock::serve_bytes`], exactly as packet by packet) before
    /// anything reads `V`. At most the bytes one group's slot 0 holds, as the
    /// slot emptying folds them.
    unfolded: u64,
    /// `L`: the largest packet of any flow.
    max_packet: u32,
    /// Groups by index (only `MIN_GROUP..=MAX_GROUP` are used; 64 so that a
    /// group index masked to 6 bits needs no bounds check).
    groups: Box<[Group; 64]>,
    flows: FlowTable<Flow, A>,
    /// Per flow, the wrap count of `f`, recorded when the flow goes idle: read
    /// only when it becomes backlogged again.
    epochs: Vec<u64>,
}

impl QfqCore {
    /// A core for flow ids `0..max_flows` with nothing attached to its flows
    /// (see [`QfqCore::with_attached`]).
    pub fn new(max_flows: u32, max_packet: u32) -> Result<Self, ConfigError> {
        Self::with_attached(max_flows, max_packet)
    }
}

impl<A: Clone + Default> QfqCore<A> {
    /// A core for flow ids `0..max_flows` whose packets are at most `max_packet`
    /// bytes (`L`, at most [`MAX_PACKET`]).
    ///
    /// Each flow's record carries an `A` for the core's user
    /// ([`FlowCore::attached`]).
    pub fn with_attached(max_flows: u32, max_packet: u32) -> Result<Self, ConfigError> {
        let flows = FlowTable::new(max_flows)?;
        if max_packet == 0 || max_packet > MAX_PACKET {
            return Err(ConfigError::OutOfRange {
                what: "QFQ maximum packet size",
                value: u64::from(max_packet),
                range: "1..=65536",
            });
        }
        let groups = vec![Group::new(); 64].into_boxed_slice();
        Ok(QfqCore {
            sets: [0; 4],
            clock: VirtualClock::new(),
            unfolded: 0,
            max_packet,
            groups: groups.try_into().expect("64 groups"),
            epochs: vec![0; max_flows as usize],
            flows,
        })
    }

    /// `L`, the largest packet any flow may send.
    #[must_use]
    pub fn max_packet(&self) -> u32 {
        self.max_packet
    }

    /// The group index `i` of a configured flow (its slot is `2^i` virtual units).
    #[must_use]
    pub fn group_of(&self, flow: FlowId) -> Option<u32> {
        self.flows.config(flow)?;
        Some(u32::from(self.flows[flow].group))
    }

    /// `sigma_i` of a flow's group in bytes: `2^i * W / 2^40` for the current weight
    /// sum `W` (the quantity of Theorems 1 and 2).
    #[must_use]
    pub fn slot_bytes(&self, flow: FlowId) -> Option<f64> {
        let i = self.group_of(flow)?;
        Some((2f64).powi(i as i32 - FRAC_BITS as i32) * self.clock.weight_sum() as f64)
    }

    /// The system virtual clock, every packet served so far counted.
    #[must_use]
    pub fn clock(&self) -> VirtualClock {
        self.folded_clock()
    }

    /// The group sets `[ER, EB, IR, IB]` (bit `i` is group `i`).
    #[must_use]
    pub fn group_sets(&self) -> [u64; 4] {
        self.sets
    }

    /// Group `i` (`i < 64`; masked, so indexing needs no bounds check).
    #[inline]
    fn group(&self, i: u32) -> &Group {
        &self.groups[(i % 64) as usize]
    }

    /// Appends flow `k`, whose `next` link the caller has set to `NIL`, to slot
    /// `slot` of group `gi`.
    #[inline]
    fn bucket_insert(&mut self, gi: usize, k: u32, slot: u32) {
        let front = self.groups[gi % 64].front;
        Self::append(&mut self.groups[gi % 64], &mut self.flows, front, k, slot);
    }

    /// Appends flow `k` (its `next` link `NIL`) to slot `slot` of group `g`, whose
    /// slot 0 is bucket `front`. One comparison tells an empty bucket (its tail
    /// `NIL`, beyond every flow id) from a tail flow to link behind.
    #[inline(always)]
    fn append(g: &mut Group, flows: &mut FlowTable<Flow, A>, front: u32, k: u32, slot: u32) {
        debug_assert!(
            slot < SLOTS,
            "flow {k}: slot {slot} beyond the bucket window"
        );
        debug_assert_eq!(flows[k].next, NIL, "flow {k}: linked twice");
        let b = &mut g.buckets[((front + slot) % SLOTS) as usize];
        match flows.core_mut(b.tail) {
            Some(tail) => tail.next = k,
            None => b.head = k,
        }
        b.tail = k;
        g.full |= 1 << (slot % SLOTS);
    }

    /// The state of group `gi`: eligible or not, blocked or not (Fig. 4,
    /// `compute_group_state`). A group is blocked by the lowest ER group above it
    /// if that one finishes earlier; ER being ordered by finish time, no other
    /// ER group needs a look.
    #[inline]
    fn group_state(&self, gi: usize) -> usize {
        let g = &self.groups[gi % 64];
        let mut state = if vt_le(g.s, self.clock.now()) { ER } else { IR };
        let above = bits_above(self.sets[ER], gi as u32);
        if above != 0 && vt_lt(self.group(ffs(above)).f, g.f) {
            state += 1; // EB or IB
        }
        state
    }

    /// Moves the groups of `mask` from set `src` to set `dst` (Fig. 6).
    #[inline]
    fn move_groups(&mut self, mask: u64, src: usize, dst: usize) {
        let moving = self.sets[src] & mask;
        self.sets[dst] |= moving;
        self.sets[src] &= !moving;
    }

    /// Moves to ER/EB the ineligible groups whose start `V` passed while growing
    /// from `v1` to `v2` (Fig. 6, `make_eligible`). Starts of ineligible groups are
    /// the first multiple of their slot size above `V` (section 4.1.3, item 1), so
    /// group `i` becomes eligible iff bit `i` or a higher bit of `V` changed: the
    /// groups through the highest changed bit.
    #[inline]
    fn make_eligible(&mut self, v1: u64, v2: u64) {
        let changed = v1 ^ v2;
        if changed != 0 {
            let mask = bits_through(fls(changed));
            self.move_groups(mask, IR, ER);
            self.move_groups(mask, IB, EB);
        }
    }

    /// After group `gi` was served with finish time `old_f` and its finish grew
    /// or it went idle: if no ER group now finishes at or before `old_f`, every
    /// blocked group below `gi` becomes ready (Fig. 6, `unblock_groups`, Theorem 8).
    #[inline]
    fn unblock_groups(&mut self, gi: usize, old_f: u64) {
        let er = self.sets[ER];
        if er == 0 || vt_lt(old_f, self.group(ffs(er)).f) {
            let mask = bits_below(gi as u32);
            self.move_groups(mask, EB, ER);
            self.move_groups(mask, IB, IR);
        }
    }

    /// Fig. 5 after flow `k` of group `gi`, the head flow of the first ER group
    /// (whose slot 0 is bucket `front`), sent `head`: it leaves slot 0 and, if
    /// `backlogged`, joins the slot of its new start; `V` grows by the packet.
    #[inline(always)]
    fn requeue(&mut self, k: FlowId, gi: usize, front: u32, head: SentHead, backlogged: bool) {
        let shift = gi as u32;
        debug_assert_eq!(
            ffs(self.sets[ER]) as usize,
            gi,
            "served({k}) is not in the first ER group"
        );
        // The group's fields are read once and kept in registers: its window
        // does not move here (only `slot0_emptied` moves it).
        let g = &mut self.groups[gi % 64];
        debug_assert_eq!(front, g.front);
        let b = &mut g.buckets[(front % SLOTS) as usize];
        debug_assert_eq!(b.head, k, "served({k}) is not the group's head flow");
        b.head = head.next;
        if head.next == NIL {
            b.tail = NIL;
            g.full &= !1;
        }
        let mut all_idle = false;
        if backlogged {
            // `g.s` is a multiple of the slot size: the distance from it
            // rounds down as the start itself would.
            let slot = (head.s.wrapping_sub(g.s) >> shift) as u32;
            Self::append(g, &mut self.flows, front, k, slot);
        } else {
            fold(&mut self.clock, &mut self.unfolded);
            self.epochs[k as usize] = self.clock.epoch_of(head.s);
            self.flows.went_idle();
            all_idle = self.flows.backlogged() == 0;
        }
        let slot0_full = g.full & 1 == 1;
        if slot0_full && self.sets[IR] | self.sets[IB] == 0 {
            // `after_service` would change nothing and read no `V`: the
            // packet's service waits in `unfolded` (most services).
            self.unfolded += u64::from(head.len);
        } else {
            self.fold_service();
            let old_v = self.clock.now();
            self.clock.serve(head.len);
            self.after_service(gi, slot0_full, old_v);
        }
        if all_idle {
            self.clock.on_idle();
        }
    }

    /// Adds the service waiting in `unfolded` to `V`: before anything reads
    /// `V` or changes `W`.
    #[inline]
    fn fold_service(&mut self) {
        fold(&mut self.clock, &mut self.unfolded);
    }

    /// The clock with the service waiting in `unfolded` added.
    fn folded_clock(&self) -> VirtualClock {
        let mut clock = self.clock;
        clock.serve_bytes(self.unfolded);
        clock
    }

    /// The rest of Fig. 5 after group `gi` served a packet (`slot0_full`: its
    /// slot 0 still holds flows) and `V` grew from `old_v`: the group's window moves to its first full slot (or the group
    /// leaves ER), groups it blocked may unblock, and groups whose start `V`
    /// passed become eligible.
    #[inline(always)]
    fn after_service(&mut self, gi: usize, slot0_full: bool, old_v: u64) {
        // Slot 0 still holding flows (most services) leaves the group as it
        // was: one test on the packet path.
        if !slot0_full {
            self.slot0_emptied(gi);
        }

        // Eq. (3): if nothing is eligible V jumps to the smallest start, the
        // lowest ineligible group's (IR ∪ IB is ordered by start).
        let ineligible = self.sets[IR] | self.sets[IB];
        if ineligible != 0 {
            if self.sets[ER] == 0 {
                let s = self.group(ffs(ineligible)).s;
                self.clock.advance_to(s);
            }
            self.make_eligible(old_v, self.clock.now());
        }
    }

    /// Group `gi`'s slot 0 emptied: its window moves to its first full slot
    /// and `F_i` grows (it may change set and unblock others), or it went idle
    /// and leaves ER.
    #[inline]
    fn slot0_emptied(&mut self, gi: usize) {
        let shift = gi as u32;
        let g = &mut self.groups[gi % 64];
        let old_f = g.f;
        let bit = 1u64 << shift;
        self.sets[ER] &= !bit;
        if g.full != 0 {
            let skip = ffs(g.full);
            g.full >>= skip;
            g.front = (g.front + skip) % SLOTS;
            g.s = g.s.wrapping_add(u64::from(skip) << shift);
            g.f = g.s.wrapping_add(2u64 << shift);
            let state = self.group_state(gi);
            self.sets[state] |= bit;
        }
        self.unblock_groups(gi, old_f);
    }

    /// `L` in virtual time: the largest increment one packet gives `V`.
    fn max_packet_virtual(&self) -> u64 {
        let w = self.clock.weight_sum().max(1);
        ((u128::from(self.max_packet) << FRAC_BITS).div_ceil(u128::from(w))) as u64
    }
}

impl<A: Clone + Default> FlowCore for QfqCore<A> {
    type Attached = A;

    #[inline]
    fn attached(&self, flow: FlowId) -> Option<&A> {
        self.flows.attached(flow)
    }

    #[inline]
    fn attached_mut(&mut self, flow: FlowId) -> Option<&mut A> {
        self.flows.attached_mut(flow)
    }

    fn name(&self) -> &'static str {
        "qfq"
    }

    fn max_flows(&self) -> u32 {
        self.flows.max_flows()
    }

    fn add_flow(&mut self, flow: FlowId, cfg: FlowConfig) -> Result<(), ConfigError> {
        // The service so far was at the old `W`.
        self.fold_service();
        let (clock, max_packet) = (&mut self.clock, self.max_packet);
        self.flows.add(flow, cfg, |cfg| {
            check_weight_and_size(flow, cfg.weight, cfg.max_packet, max_packet)?;
            clock.add_weight(flow, cfg.weight)?;
            let inv_w = inv_weight(cfg.weight);
            let grouping_len = cfg.max_packet.max(max_packet.div_ceil(SLOTS - 2));
            let group = group_index(grouping_len, inv_w);
            debug_assert!((MIN_GROUP..=MAX_GROUP).contains(&group));
            Ok(Flow {
                f: clock.now(),
                inv_w,
                next: NIL,
                head_len: 0,
                group: group as u8,
                backlogged: false,
            })
        })?;
        self.epochs[flow as usize] = self.clock.epoch();
        Ok(())
    }

    fn remove_flow(&mut self, flow: FlowId) -> Result<(), ConfigError> {
        let cfg = self.flows.remove(flow)?;
        self.fold_service();
        self.clock
            .remove_weight(cfg.weight, self.flows.backlogged() == 0);
        Ok(())
    }

    fn flow_config(&self, flow: FlowId) -> Option<FlowConfig> {
        self.flows.config(flow)
    }

    fn is_backlogged(&self, flow: FlowId) -> bool {
        self.flows.is_backlogged(flow)
    }

    fn backlogged(&self) -> u32 {
        self.flows.backlogged()
    }

    /// qfq.txt Fig. 4, `enqueue`, for a flow that was idle. Out of line: the
    /// packet path inlines `peek` and `served`, and a flow becomes backlogged
    /// far less often than it sends.
    #[inline(never)]
    fn activate(&mut self, k: FlowId, len: u32) {
        self.fold_service();
        let v = self.clock.now();
        let fl = self.flows[k];
        debug_assert!(
            fl.inv_w != 0 && !fl.backlogged,
            "activate({k}): not an idle flow"
        );
        let f_epoch = self.epochs[k as usize];
        let gi = usize::from(fl.group);
        let shift = u32::from(fl.group);
        let sigma = 1u64 << shift;
        let group_idle = self.group(shift).full == 0;

        // Eq. (2): S = max(V, F), F compared exactly through its wrap count.
        let ahead = self.clock.is_ahead(fl.f, f_epoch);
        let mut s = if ahead { fl.f } else { v };
        if group_idle && !ahead {
            // Eq. (29): an idle group that would enter as blocked while V is past
            // the finish F_b of the lowest ER group above it starts at
            // max(F_b, F) instead, keeping EB ordered by finish time (Lemma 4).
            let above = bits_above(self.sets[ER], shift);
            if above != 0 {
                let fb = self.group(ffs(above)).f;
                if vt_lt(fb, round_down(s, shift).wrapping_add(2 * sigma)) && vt_lt(fb, v) {
                    let f_abs = crate::vtime::absolute(fl.f, f_epoch);
                    s = if f_abs > self.clock.absolute(fb) {
                        fl.f
                    } else {
                        fb
                    };
                }
            }
        }
        let flow = &mut self.flows[k];
        flow.f = s.wrapping_add(u64::from(len) * flow.inv_w);
        flow.head_len = len;
        flow.next = NIL;
        flow.backlogged = true;
        self.flows.activated();

        let rs = round_down(s, shift);
        let g = &mut self.groups[gi % 64];
        if group_idle || vt_lt(rs, g.s) {
            // The group was idle or ineligible (S_k >= V, so S^_k < S_i implies
            // V < S_i): it leaves IR/IB and takes the flow's timestamps. A
            // backlogged group's bucket window moves back to start at the new slot.
            self.sets[IR] &= !(1 << shift);
            self.sets[IB] &= !(1 << shift);
            if group_idle {
                g.full = 0;
            } else {
                let back = g.s.wrapping_sub(rs) >> shift;
                debug_assert!(
                    back < u64::from(SLOTS) && g.full >> (u64::from(SLOTS) - back) == 0,
                    "group {gi}: moving the window back {back} slots loses full={:#b}",
                    g.full
                );
                g.full <<= back;
                g.front = (g.front + SLOTS - back as u32 % SLOTS) % SLOTS;
            }
            g.s = rs;
            g.f = rs.wrapping_add(2 * sigma);
            self.bucket_insert(gi, k, 0);
            // Eq. (3) when the system was empty: V catches up with the only group.
            if self.sets[ER] == 0 {
                self.clock.advance_to(rs);
            }
            let state = self.group_state(gi);
            self.sets[state] |= 1 << shift;
        } else {
            let slot = (rs.wrapping_sub(g.s) >> shift) as u32;
            self.bucket_insert(gi, k, slot);
        }
    }

    #[inline(always)]
    fn peek(&mut self) -> Option<FlowId> {
        let er = self.sets[ER];
        if er == 0 {
            debug_assert_eq!(
                self.flows.backlogged(),
                0,
                "backlogged flows but ER is empty"
            );
            return None;
        }
        let g = self.group(ffs(er));
        Some(g.buckets[(g.front % SLOTS) as usize].head)
    }

    /// qfq.txt Fig. 5, `dequeue`, after `peek` chose the flow.
    // NB: always inlined, with `after_service`: out of line, the call saved and
    // restored six registers per packet (callgrind, balanced workload at 64
    // flows: 213 instructions per pair before, 199 after, generator included).
    #[inline(always)]
    fn served(&mut self, k: FlowId, next: Option<u32>) {
        let fl = &mut self.flows[k];
        let gi = usize::from(fl.group) % 64;
        let head = fl.serve(next);
        let front = self.groups[gi].front % SLOTS;
        self.requeue(k, gi, front, head, next.is_some());
    }

    /// `peek`, the user's `pop` and `served` with one lookup of the flow's
    /// record, which holds both the core's state and what `pop` works on.
    #[inline(always)]
    fn serve<R>(&mut self, pop: impl FnOnce(FlowId, &mut A) -> (R, Option<u32>)) -> Option<R> {
        let er = self.sets[ER];
        if er == 0 {
            debug_assert_eq!(
                self.flows.backlogged(),
                0,
                "backlogged flows but ER is empty"
            );
            return None;
        }
        let gi = ffs(er) as usize % 64;
        let g = &self.groups[gi];
        let front = g.front % SLOTS;
        let k = g.buckets[front as usize].head;
        let rec = self.flows.record_mut(k);
        let (r, next) = pop(k, &mut rec.attached);
        debug_assert_eq!(usize::from(rec.core.group), gi, "flow {k} in group {gi}");
        let head = rec.core.serve(next);
        self.requeue(k, gi, front, head, next.is_some());
        Some(r)
    }

    fn check_invariants(&self) {
        let [er, eb, ir, ib] = self.sets;
        assert_eq!(
            er & eb | er & ir | er & ib | eb & ir | eb & ib | ir & ib,
            0,
            "sets overlap: {:?}",
            self.sets
        );
        let mut flows_seen = vec![false; self.flows.max_flows() as usize];
        let mut n_flows = 0u32;
        for gi in 0..self.groups.len() {
            n_flows += self.check_group_buckets(gi, &mut flows_seen);
            self.check_group_state(gi);
        }
        assert_eq!(
            n_flows,
            self.flows.backlogged(),
            "flows in buckets vs backlogged count"
        );
        assert!(
            self.flows.backlogged() == 0 || er != 0,
            "backlog but ER empty: sets={:?}",
            self.sets
        );
        self.check_order(ir | ib, |g| g.s, "S");
        self.check_order(ir | ib, |g| g.f, "F");
    }
}

// The parts of `check_invariants`, group by group.
impl<A: Clone + Default> QfqCore<A> {
    /// Group `gi`'s buckets against its bitmap and its flows' starts; marks the
    /// flows seen and returns how many it holds.
    fn check_group_buckets(&self, gi: usize, flows_seen: &mut [bool]) -> u32 {
        let v = self.folded_clock().now();
        let g = &self.groups[gi];
        let [er, eb, ir, ib] = self.sets;
        assert_eq!(
            g.full != 0,
            (er | eb | ir | ib) & (1u64 << gi) != 0,
            "group {gi}: full={:#b} but sets={:?}",
            g.full,
            self.sets
        );
        let mut n_flows = 0;
        for slot in 0..SLOTS {
            let b = g.buckets[((g.front + slot) % SLOTS) as usize];
            assert_eq!(
                b.head != NIL,
                g.full >> slot & 1 == 1,
                "group {gi} slot {slot}: full bit vs bucket"
            );
            let (mut k, mut last) = (b.head, NIL);
            while k != NIL {
                let fl = &self.flows[k];
                assert!(!flows_seen[k as usize], "flow {k} in two buckets");
                flows_seen[k as usize] = true;
                n_flows += 1;
                assert!(fl.backlogged, "idle flow {k} in a bucket");
                assert_eq!(usize::from(fl.group), gi, "flow {k} in the wrong group");
                let want = g.s.wrapping_add(u64::from(slot) << gi);
                assert_eq!(
                    round_down(fl.start(), gi as u32),
                    want,
                    "flow {k}: rounded start vs slot {slot}"
                );
                assert!(
                    vt_lt(fl.start(), v.wrapping_add(2u64 << gi)),
                    "flow {k}: S beyond V + 2 sigma (Theorem 3)"
                );
                last = k;
                k = fl.next;
            }
            assert_eq!(last, b.tail, "group {gi} slot {slot}: tail");
        }
        n_flows
    }

    /// A non-empty group `gi`'s timestamps, eligibility and blocking against the
    /// paper's theorems.
    fn check_group_state(&self, gi: usize) {
        let v = self.folded_clock().now();
        let g = &self.groups[gi];
        if g.full == 0 {
            return;
        }
        let [er, eb, _, ib] = self.sets;
        let bit = 1u64 << gi;
        assert_eq!(g.full & 1, 1, "group {gi}: slot 0 empty");
        assert_eq!(
            g.f,
            g.s.wrapping_add(2u64 << gi),
            "group {gi}: F != S + 2 sigma"
        );
        assert_eq!(
            vt_le(g.s, v),
            (er | eb) & bit != 0,
            "group {gi}: eligibility S={} V={v}",
            g.s
        );
        let sigma = 1u64 << gi;
        let ceil_v = round_down(v.wrapping_add(sigma - 1), gi as u32);
        assert!(
            vt_le(g.s, ceil_v),
            "group {gi}: S={} beyond ceil(V)={ceil_v} (Theorem 3)",
            g.s
        );
        let l = self.max_packet_virtual();
        assert!(
            vt_le(v, g.f.wrapping_add(l)),
            "group {gi}: V={v} beyond F+L={} (Theorem 4)",
            g.f.wrapping_add(l)
        );
        // Blocked: some ER group above finishes earlier. A blocked group always
        // has a blocker; a ready one may, after `unblock_groups`, finish later
        // than an ER group above it by less than L + 2 sigma (deviation 8).
        let slack = l.wrapping_add(2u64 << gi);
        let above =
            |x: usize, s: u64| er >> x & 1 == 1 && vt_lt(self.groups[x].f.wrapping_add(s), g.f);
        if (eb | ib) & bit != 0 {
            assert!(
                (gi + 1..64).any(|x| above(x, 0)),
                "group {gi}: blocked without a blocker, sets={:?}",
                self.sets
            );
        } else {
            assert!(
                !(gi + 1..64).any(|x| above(x, slack)),
                "group {gi}: ready with a blocker beyond slack, sets={:?}",
                self.sets
            );
        }
    }

    /// The groups of `set` in increasing index order have non-decreasing `key`.
    fn check_order(&self, set: u64, key: impl Fn(&Group) -> u64, name: &str) {
        let mut prev: Option<u64> = None;
        for gi in (0..64).filter(|&i| set >> i & 1 == 1) {
            let k = key(&self.groups[gi]);
            if let Some(p) = prev {
                assert!(vt_le(p, k), "set {set:#b} not ordered by {name}");
            }
            prev = Some(k);
        }
    }
}

/// The QFQ packet scheduler: a [`PerFlow`] around a [`QfqCore`].
pub type Qfq = PerFlow<QfqCore<FlowQueue>>;

impl PerFlow<QfqCore<FlowQueue>> {
    /// A scheduler for flow ids `0..max_flows` holding at most `capacity` packets,
    /// for packets up to [`MAX_PACKET`] bytes.
    pub fn new(max_flows: u32, capacity: usize) -> Result<Self, ConfigError> {
        Self::with_max_packet(max_flows, capacity, MAX_PACKET)
    }

    /// As [`Qfq::new`] for packets up to `max_packet` bytes (`L`; see the module
    /// docs for how it bounds the grouping of flows with small packets).
    pub fn with_max_packet(
        max_flows: u32,
        capacity: usize,
        max_packet: u32,
    ) -> Result<Self, ConfigError> {
        Ok(PerFlow::from_core(
            QfqCore::with_attached(max_flows, max_packet)?,
            capacity,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_helpers() {
        assert_eq!(bits_above(0b1011_0110, 2), 0b1011_0000);
        assert_eq!(bits_above(u64::MAX, 63), 0);
        assert_eq!(bits_below(3), 0b111);
        assert_eq!(bits_below(0), 0);
        assert_eq!(bits_through(0), 1);
        assert_eq!(bits_through(63), u64::MAX);
        assert_eq!((ffs(0b1000), fls(0b1001)), (3, 3));
        assert_eq!(round_down(0x1234, 8), 0x1200);
    }

    #[test]
    fn group_index_is_the_smallest_covering_power_of_two() {
        assert_eq!(group_index(1, 1 << 24), 24);
        assert_eq!(group_index(1500, inv_weight(1)), 40 + 11); // 1500 <= 2^11
        assert_eq!(group_index(1024, inv_weight(1)), 50);
        assert_eq!(group_index(1025, inv_weight(1)), 51);
        assert_eq!((MIN_GROUP, MAX_GROUP), (24, 56));
        for (len, w) in [(64u32, 1u32), (1500, 3), (9000, 65536), (65536, 7)] {
            let inv = inv_weight(w);
            let i = group_index(len, inv);
            assert!(u64::from(len) * inv <= 1 << i && u64::from(len) * inv > 1 << (i - 1));
        }
    }

    fn core(weights: &[(u32, u32)]) -> QfqCore {
        let mut c = QfqCore::new(weights.len() as u32, 1500).unwrap();
        for (f, &(w, l)) in weights.iter().enumerate() {
            c.add_flow(f as u32, FlowConfig::weight(w).max_packet(l))
                .unwrap();
        }
        c
    }

    #[test]
    fn equal_flows_round_robin() {
        let mut c = core(&[(1, 1500); 3]);
        for f in 0..3 {
            c.activate(f, 1500);
            c.check_invariants();
        }
        let mut order = Vec::new();
        for _ in 0..9 {
            let f = c.peek().unwrap();
            c.served(f, Some(1500));
            c.check_invariants();
            order.push(f);
        }
        assert_eq!(order, [0, 1, 2, 0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn weighted_flows_get_weighted_service_and_drain() {
        let mut c = core(&[(1, 1500), (4, 1500), (16, 1500)]);
        let mut left = [200u32, 200, 200];
        for f in 0..3 {
            c.activate(f, 1000);
        }
        let mut served = [0u32; 3];
        for _ in 0..210 {
            let f = c.peek().unwrap();
            left[f as usize] -= 1;
            served[f as usize] += 1;
            c.served(f, (left[f as usize] > 0).then_some(1000));
            c.check_invariants();
        }
        // 210 packets at shares 1/21, 4/21, 16/21: about 10, 40, 160.
        assert!(
            served[0].abs_diff(10) <= 2
                && served[1].abs_diff(40) <= 2
                && served[2].abs_diff(160) <= 2,
            "{served:?}"
        );
        while let Some(f) = c.peek() {
            left[f as usize] -= 1;
            c.served(f, (left[f as usize] > 0).then_some(1000));
            c.check_invariants();
        }
        assert_eq!(left, [0, 0, 0]);
        assert_eq!(c.backlogged(), 0);
    }

    #[test]
    fn tiny_declared_packets_share_a_group_window_that_fits() {
        let mut c = QfqCore::new(2, MAX_PACKET).unwrap();
        c.add_flow(0, FlowConfig::weight(MAX_WEIGHT).max_packet(64))
            .unwrap();
        c.add_flow(1, FlowConfig::weight(1).max_packet(MAX_PACKET))
            .unwrap();
        // Grouped as if its packets were ceil(65536 / 62) = 1058 bytes.
        assert_eq!(
            c.group_of(0),
            Some(group_index(1058, inv_weight(MAX_WEIGHT)))
        );
        c.activate(0, 64);
        c.activate(1, MAX_PACKET);
        for _ in 0..2000 {
            let f = c.peek().unwrap();
            c.served(f, Some(if f == 0 { 64 } else { MAX_PACKET }));
            c.check_invariants();
        }
    }

    #[test]
    fn rejects_bad_configs() {
        assert!(QfqCore::new(1, 0).is_err());
        assert!(QfqCore::new(1, MAX_PACKET + 1).is_err());
        let mut c = QfqCore::new(2, 1500).unwrap();
        assert!(matches!(
            c.add_flow(0, FlowConfig::weight(1).max_packet(1501)),
            Err(ConfigError::BadMaxPacket {
                flow: 0,
                bytes: 1501,
                max: 1500
            })
        ));
        assert!(matches!(
            c.add_flow(0, FlowConfig::weight(MAX_WEIGHT + 1)),
            Err(ConfigError::WeightTooLarge { .. })
        ));
        assert_eq!(
            c.add_flow(9, FlowConfig::weight(1)),
            Err(ConfigError::FlowOutOfRange {
                flow: 9,
                max_flows: 2
            })
        );
        assert_eq!(c.remove_flow(1), Err(ConfigError::NoSuchFlow { flow: 1 }));
    }
}
