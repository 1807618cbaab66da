//! Virtual time shared by the timestamp-based cores (WF2Q+, QFQ, STFQ): the
//! fixed-point layout, wrap-safe comparison, and the system virtual clock.
//!
//! # Units and fixed-point layout
//!
//! A flow of weight `w` that sends `l` bytes advances its virtual finish time by
//! `l / w`. Timestamps are `u64` fixed-point numbers with [`FRAC_BITS`] fractional
//! bits, so the increment is `l * inv_w` with `inv_w = ceil(2^FRAC_BITS / w)`
//! ([`inv_weight`]). Rounding `inv_w` up makes every flow's timestamps advance at
//! least as fast as the exact value: each flow is charged for at least what it sent,
//! which is the safe side for the service bounds (the proofs need `F - S >= l/phi`).
//!
//! The system virtual time of WF2Q+ and QFQ (`V` in qfq.txt eq. (3)) grows by
//! `l / W` when a packet of `l` bytes is served, where `W` is the sum of configured
//! weights: normalised by `W`, weights become the shares `phi = w / W` of the
//! papers, whose sum is 1. The increment is computed by [`VirtualClock::serve`] as
//! `l * inv_wsum` with `inv_wsum = floor(2^(FRAC_BITS + EXTRA_BITS) / W)` carrying
//! [`EXTRA_BITS`] more fractional bits, which accumulate in a remainder so that no
//! rounding error builds up across packets; `V` never runs ahead of the exact value.
//!
//! # Ranges (derived)
//!
//! - Weights are at most [`MAX_WEIGHT`] = 2^16, so `inv_w >= 2^(40-16) = 2^24` and
//!   the relative rounding error of `inv_w` is below 2^-24.
//! - Packets are at most [`MAX_PACKET`] = 2^16 bytes, so one packet advances a
//!   flow's timestamps by at most `2^16 * 2^40 = 2^56`.
//! - The weight sum is at most [`MAX_WEIGHT_SUM`] = 2^32, so `inv_wsum >= 2^31` and
//!   its relative error is below 2^-31.
//! - Live timestamps stay within a few times 2^56 of `V` (the GBT property of each
//!   algorithm, see each module), far inside the 2^63 window in which the wrap-safe
//!   comparison [`vt_lt`] is exact. `V` itself wraps around `u64` after `2^24 * W`
//!   bytes of service (16 MiB when `W = 1`), so wrap-around is the normal case and
//!   every comparison goes through the helpers below.
//!
//! # Stale timestamps of idle flows
//!
//! When an idle flow becomes backlogged again its start is `max(V, F)` (qfq.txt eq.
//! (2)), where `F` is the finish time it had when it went idle. An idle flow's `F`
//! does not follow `V`, so after long idleness it can lie any number of wraps behind
//! and a wrap-safe comparison would be meaningless. The clock therefore counts the
//! wraps of `V` ([`VirtualClock::epoch`]) and a flow going idle records the epoch of
//! its `F` ([`VirtualClock::epoch_of`]); [`VirtualClock::is_ahead`] then compares the
//! two 128-bit values exactly, however long the flow slept.

use crate::scheduler::ConfigError;
use crate::FlowId;

/// Fractional bits of every virtual timestamp.
pub const FRAC_BITS: u32 = 40;

/// Extra fractional bits kept by [`VirtualClock`] for the system virtual time.
pub const EXTRA_BITS: u32 = 23;

/// Largest weight a flow may have in the timestamp-based cores.
pub const MAX_WEIGHT: u32 = 1 << 16;

/// Largest sum of the weights of all configured flows of one scheduler.
pub const MAX_WEIGHT_SUM: u64 = 1 << 32;

/// Largest packet (and largest declared maximum packet size) in bytes.
pub const MAX_PACKET: u32 = 1 << 16;

const _: () = {
    // One maximal packet of a weight-1 flow must fit well inside the 2^63 window.
    assert!(FRAC_BITS + MAX_PACKET.trailing_zeros() <= 56);
    // `inv_wsum` must fit `u64` for the smallest weight sum, 1.
    assert!(FRAC_BITS + EXTRA_BITS < 64);
    // A flow's increment `len * inv_w` must fit `u64`.
    assert!((MAX_PACKET as u128) << FRAC_BITS < 1u128 << 63);
};

/// `a < b` in wrap-around virtual time (exact while `|a - b| < 2^63`).
#[inline]
#[must_use]
pub const fn vt_lt(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// `a > b` in wrap-around virtual time.
#[inline]
#[must_use]
pub const fn vt_gt(a: u64, b: u64) -> bool {
    vt_lt(b, a)
}

/// `a <= b` in wrap-around virtual time.
#[inline]
#[must_use]
pub const fn vt_le(a: u64, b: u64) -> bool {
    !vt_lt(b, a)
}

/// The later of two virtual times.
#[inline]
#[must_use]
pub const fn vt_max(a: u64, b: u64) -> u64 {
    if vt_lt(a, b) {
        b
    } else {
        a
    }
}

/// The fixed-point reciprocal `ceil(2^FRAC_BITS / w)` of a weight (`w >= 1`).
#[inline]
#[must_use]
pub const fn inv_weight(w: u32) -> u64 {
    (1u64 << FRAC_BITS).div_ceil(w as u64)
}

/// Checks a flow's weight and declared maximum packet size against the ranges of
/// the timestamp-based cores ([`MAX_WEIGHT`], `1..=max_packet`).
pub fn check_weight_and_size(
    flow: FlowId,
    weight: u32,
    max_packet: u32,
    limit: u32,
) -> Result<(), ConfigError> {
    if weight == 0 {
        return Err(ConfigError::ZeroWeight { flow });
    }
    if weight > MAX_WEIGHT {
        return Err(ConfigError::WeightTooLarge {
            flow,
            weight,
            max: MAX_WEIGHT,
        });
    }
    if max_packet == 0 || max_packet > limit {
        return Err(ConfigError::BadMaxPacket {
            flow,
            bytes: max_packet,
            max: limit,
        });
    }
    Ok(())
}

/// The system virtual time `V` with its wrap count and sub-unit remainder, and the
/// weight sum `W` that normalises it.
///
/// # Changing `W`
///
/// The service bounds of WF2Q+ and QFQ assume `sum(phi) <= 1`, i.e. that `V` never
/// advances faster than `l / sum(w)` per packet. Adding a flow raises `W` at once
/// (`V` slows down, which keeps the assumption). Removing a flow lowers the
/// configured sum, but `V` keeps the old, larger `W` until the scheduler is next
/// empty ([`VirtualClock::on_idle`]): lowering it while flows are backlogged could
/// let `V` overtake timestamps computed under the old normalisation.
///
/// Invariant: the 128-bit value `epoch * 2^64 + v` never decreases.
#[derive(Clone, Copy, Debug)]
pub struct VirtualClock {
    v: u64,
    /// Number of times `v` wrapped around `u64`.
    epoch: u64,
    /// Fraction of a unit not yet added to `v`, in units of 2^-EXTRA_BITS.
    rem: u64,
    /// `floor(2^(FRAC_BITS + EXTRA_BITS) / W)` for `W = wsum_in_use`, or 0 while no
    /// weight is configured.
    inv_wsum: u64,
    /// Sum of the weights of the configured flows.
    wsum_configured: u64,
    /// The `W` that normalises `V`: at least `wsum_configured`.
    wsum_in_use: u64,
}

impl Default for VirtualClock {
    fn default() -> Self {
        VirtualClock::new()
    }
}

impl VirtualClock {
    /// A clock at zero with no weight configured.
    #[must_use]
    pub const fn new() -> Self {
        VirtualClock {
            v: 0,
            epoch: 0,
            rem: 0,
            inv_wsum: 0,
            wsum_configured: 0,
            wsum_in_use: 0,
        }
    }

    /// The current virtual time (wrapping).
    #[inline]
    #[must_use]
    pub const fn now(&self) -> u64 {
        self.v
    }

    /// How many times the virtual time wrapped around.
    #[inline]
    #[must_use]
    pub const fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The weight sum `W` that currently normalises `V`.
    #[must_use]
    pub const fn weight_sum(&self) -> u64 {
        self.wsum_in_use
    }

    /// Sum of the configured weights.
    #[must_use]
    pub const fn configured_weight_sum(&self) -> u64 {
        self.wsum_configured
    }

    /// Adds a flow of weight `w` to `W`, checking [`MAX_WEIGHT_SUM`].
    pub fn add_weight(&mut self, flow: FlowId, w: u32) -> Result<(), ConfigError> {
        let total = self.wsum_configured + u64::from(w);
        if total > MAX_WEIGHT_SUM {
            return Err(ConfigError::WeightSumTooLarge {
                flow,
                total,
                max: MAX_WEIGHT_SUM,
            });
        }
        self.wsum_configured = total;
        if total > self.wsum_in_use {
            self.set_weight_sum(total);
        }
        Ok(())
    }

    /// Removes a flow of weight `w` from the configured sum; `V` follows when the
    /// scheduler is idle (now if `idle`).
    pub fn remove_weight(&mut self, w: u32, idle: bool) {
        self.wsum_configured -= u64::from(w);
        if idle {
            self.on_idle();
        }
    }

    /// The scheduler became empty: apply a pending decrease of `W`.
    #[inline]
    pub fn on_idle(&mut self) {
        if self.wsum_in_use != self.wsum_configured {
            self.set_weight_sum(self.wsum_configured);
        }
    }

    fn set_weight_sum(&mut self, wsum: u64) {
        self.wsum_in_use = wsum;
        self.inv_wsum = (1u64 << (FRAC_BITS + EXTRA_BITS))
            .checked_div(wsum)
            .unwrap_or(0);
    }

    /// Advances `V` by `len / W`: the service of a packet of `len` bytes.
    #[inline]
    pub fn serve(&mut self, len: u32) {
        let acc = u128::from(len) * u128::from(self.inv_wsum) + u128::from(self.rem);
        self.rem = (acc as u64) & ((1 << EXTRA_BITS) - 1);
        self.add((acc >> EXTRA_BITS) as u64);
    }

    /// Advances `V` by `bytes / W`: the service of packets of `bytes` bytes in
    /// all, exactly as [`VirtualClock::serve`] of each of them in turn would
    /// (the remainder carries the same way), whatever their number.
    pub fn serve_bytes(&mut self, bytes: u64) {
        let acc = u128::from(bytes) * u128::from(self.inv_wsum) + u128::from(self.rem);
        self.rem = (acc as u64) & ((1 << EXTRA_BITS) - 1);
        let total = absolute(self.v, self.epoch) + (acc >> EXTRA_BITS);
        self.v = total as u64;
        self.epoch = (total >> 64) as u64;
    }

    /// Moves `V` forward to `t` if `t` is ahead of it (a virtual-time jump).
    #[inline]
    pub fn advance_to(&mut self, t: u64) {
        if vt_gt(t, self.v) {
            self.add(t.wrapping_sub(self.v));
            self.rem = 0;
        }
    }

    #[inline]
    fn add(&mut self, d: u64) {
        let (v, wrapped) = self.v.overflowing_add(d);
        self.v = v;
        // A branch, not `+= u64::from(wrapped)`: it is taken once in 2^64
        // virtual units, and the flag-to-integer add cost three instructions
        // on every packet.
        if wrapped {
            self.epoch += 1;
        }
    }

    /// The wrap count of a timestamp `t` that lies within 2^63 of `V`.
    #[inline]
    #[must_use]
    pub const fn epoch_of(&self, t: u64) -> u64 {
        let ahead = !vt_lt(t, self.v);
        if ahead && t < self.v {
            self.epoch.wrapping_add(1)
        } else if !ahead && t > self.v {
            self.epoch.wrapping_sub(1)
        } else {
            self.epoch
        }
    }

    /// The exact 128-bit value of a timestamp `t` within 2^63 of `V`.
    #[inline]
    #[must_use]
    pub const fn absolute(&self, t: u64) -> u128 {
        absolute(t, self.epoch_of(t))
    }

    /// Whether the timestamp `(t, epoch)` (see [`VirtualClock::epoch_of`]) lies
    /// strictly after `V`, however far apart the two are.
    #[inline]
    #[must_use]
    pub const fn is_ahead(&self, t: u64, epoch: u64) -> bool {
        absolute(t, epoch) > absolute(self.v, self.epoch)
    }
}

/// The 128-bit value of a wrapping timestamp and its wrap count.
#[inline]
#[must_use]
pub const fn absolute(t: u64, epoch: u64) -> u128 {
    ((epoch as u128) << 64) | t as u128
}

/// A flow's virtual start and finish tags as the timestamp cores (WF²Q+, STFQ)
/// keep them: the tags of its head packet while backlogged, of its last packet
/// while idle. `inv_w == 0` marks an unconfigured flow.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(32))]
pub(crate) struct FlowTags {
    /// Start tag `S`.
    pub(crate) s: u64,
    /// Finish tag `F`.
    pub(crate) f: u64,
    /// `ceil(2^FRAC_BITS / weight)`.
    pub(crate) inv_w: u64,
    /// Length of the head packet.
    pub(crate) head_len: u32,
    pub(crate) backlogged: bool,
}

// Aligned to 32 bytes: with a `PerFlow`'s 20-byte FIFO beside them, one
// 64-byte record per flow.
const _: () = assert!(core::mem::size_of::<FlowTags>() == 32);
const _: () =
    assert!(core::mem::size_of::<crate::flows::Record<FlowTags, crate::flows::FlowQueue>>() == 64);

impl crate::flows::FlowRecord for FlowTags {
    #[inline]
    fn backlogged(&self) -> bool {
        self.backlogged
    }
}

impl FlowTags {
    /// The idle tags of a flow of `weight` configured at the current `V`.
    pub(crate) fn new(clock: &VirtualClock, weight: u32) -> FlowTags {
        FlowTags {
            s: clock.now(),
            f: clock.now(),
            inv_w: inv_weight(weight),
            head_len: 0,
            backlogged: false,
        }
    }

    /// An idle flow turns backlogged with a head of `len` bytes:
    /// `S = max(V, F)`, `F = S + len / w`; `f_epoch` is the wrap count of `F`
    /// recorded when the flow went idle (kept by the core apart from the tags,
    /// which it would push past 32 bytes).
    #[inline]
    pub(crate) fn activate(&mut self, clock: &VirtualClock, len: u32, f_epoch: u64) {
        debug_assert!(
            self.inv_w != 0 && !self.backlogged,
            "activate: not an idle flow"
        );
        self.s = if clock.is_ahead(self.f, f_epoch) {
            self.f
        } else {
            clock.now()
        };
        self.set_head(len);
        self.backlogged = true;
    }

    /// The head was served: the next head, of `next` bytes, starts where it
    /// finished. Without one the flow goes idle: the wrap count of its `F` against
    /// `clock` is returned, for the core to keep until the flow's next
    /// [`FlowTags::activate`].
    #[inline]
    pub(crate) fn served(&mut self, clock: &VirtualClock, next: Option<u32>) -> Option<u64> {
        self.s = self.f;
        match next {
            Some(len) => {
                self.set_head(len);
                None
            }
            None => {
                self.backlogged = false;
                Some(clock.epoch_of(self.f))
            }
        }
    }

    #[inline]
    fn set_head(&mut self, len: u32) {
        self.f = self.s.wrapping_add(u64::from(len) * self.inv_w);
        self.head_len = len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_safe_comparisons() {
        assert!(vt_lt(1, 2) && !vt_lt(2, 1) && !vt_lt(3, 3));
        assert!(vt_lt(u64::MAX - 5, 3), "3 is just past the wrap");
        assert!(vt_gt(3, u64::MAX - 5));
        assert!(vt_le(4, 4) && vt_le(u64::MAX, 0));
        assert_eq!(vt_max(u64::MAX - 1, 7), 7);
        assert_eq!(vt_max(7, 9), 9);
    }

    #[test]
    fn inverse_weight_rounds_up() {
        assert_eq!(inv_weight(1), 1 << FRAC_BITS);
        assert_eq!(inv_weight(3), (1u64 << FRAC_BITS) / 3 + 1);
        assert!(u128::from(inv_weight(MAX_WEIGHT)) * u128::from(MAX_WEIGHT) >= 1 << FRAC_BITS);
    }

    #[test]
    fn service_is_exact_over_many_packets() {
        let mut c = VirtualClock::new();
        c.add_weight(0, 1).unwrap();
        c.add_weight(1, 2).unwrap();
        for _ in 0..3000 {
            c.serve(1);
        }
        // 3000 bytes / W=3 = 1000 units of 2^40, minus at most one unit of rounding.
        let exact = 1000u128 << FRAC_BITS;
        let got = absolute(c.now(), c.epoch());
        assert!(got <= exact && exact - got <= 2, "{got} vs {exact}");
    }

    #[test]
    fn serving_bytes_at_once_equals_serving_each_packet() {
        for wsum in [1u32, 3, 1000, 65_536] {
            let (mut each, mut once) = (VirtualClock::new(), VirtualClock::new());
            each.add_weight(0, wsum).unwrap();
            once.add_weight(0, wsum).unwrap();
            let mut batch = 0u64;
            // Lengths up to 64 KiB, past several wraps when W = 1.
            for i in 0..5000u32 {
                let len = 1 + i.wrapping_mul(2_654_435_761) % 65_536;
                each.serve(len);
                batch += u64::from(len);
                if i % 7 == 0 {
                    once.serve_bytes(batch);
                    batch = 0;
                    assert_eq!((once.now(), once.epoch()), (each.now(), each.epoch()));
                }
            }
            once.serve_bytes(batch);
            assert_eq!(
                (once.now(), once.epoch(), once.rem),
                (each.now(), each.epoch(), each.rem),
                "W = {wsum}"
            );
        }
    }

    #[test]
    fn epochs_track_wraps_and_idle_stamps_stay_comparable() {
        let mut c = VirtualClock::new();
        c.add_weight(0, 1).unwrap();
        let f = c.now().wrapping_add(5);
        let f_epoch = c.epoch_of(f);
        assert!(c.is_ahead(f, f_epoch));
        // Serve far more than one wrap: 2^24 bytes at W = 1 is exactly one wrap.
        for _ in 0..(1 << 10) {
            c.serve(1 << 15);
        }
        assert_eq!(c.epoch(), 2);
        assert!(
            !c.is_ahead(f, f_epoch),
            "a stamp from two wraps ago is behind"
        );
        let g = c.now().wrapping_add(1 << 50);
        assert!(c.is_ahead(g, c.epoch_of(g)));
        let h = c.now().wrapping_sub(1 << 50);
        assert_eq!(c.absolute(h) + (1 << 50), c.absolute(c.now()));
    }

    #[test]
    fn weight_sum_decreases_wait_for_idle() {
        let mut c = VirtualClock::new();
        c.add_weight(0, 4).unwrap();
        c.add_weight(1, 4).unwrap();
        c.remove_weight(4, false);
        assert_eq!((c.weight_sum(), c.configured_weight_sum()), (8, 4));
        c.on_idle();
        assert_eq!(c.weight_sum(), 4);
        let mut d = VirtualClock::new();
        for f in 0..(1 << 16) {
            d.add_weight(f, MAX_WEIGHT).unwrap();
        }
        assert_eq!(
            d.add_weight(7, 1),
            Err(ConfigError::WeightSumTooLarge {
                flow: 7,
                total: MAX_WEIGHT_SUM + 1,
                max: MAX_WEIGHT_SUM
            })
        );
    }

    #[test]
    fn jumps_only_move_forward_and_count_wraps() {
        let mut c = VirtualClock::new();
        c.advance_to(u64::MAX - 1);
        assert_eq!(c.now(), 0, "MAX - 1 is 2 behind 0 in wrap-around time");
        for step in 1..4u64 {
            c.advance_to(step << 62);
        }
        assert_eq!((c.now(), c.epoch()), (3 << 62, 0));
        c.advance_to(5);
        assert_eq!((c.now(), c.epoch()), (5, 1));
        c.advance_to(2);
        assert_eq!(c.now(), 5, "a stamp behind V does not move it");
    }

    #[test]
    fn validation_names_the_problem() {
        assert_eq!(
            check_weight_and_size(3, 0, 100, 1500),
            Err(ConfigError::ZeroWeight { flow: 3 })
        );
        assert!(matches!(
            check_weight_and_size(3, MAX_WEIGHT + 1, 100, 1500),
            Err(ConfigError::WeightTooLarge { flow: 3, .. })
        ));
        assert!(matches!(
            check_weight_and_size(3, 1, 1501, 1500),
            Err(ConfigError::BadMaxPacket { bytes: 1501, .. })
        ));
        assert!(check_weight_and_size(3, MAX_WEIGHT, 1500, 1500).is_ok());
    }
}
