//! End-host transports, as sans-IO state machines.
//!
//! A sender is told what happened (start, an acknowledgement, its timer) with
//! the current time and answers by appending the segments to send to a reusable
//! buffer of [`Emit`]s and by updating its retransmission deadline; the
//! simulator turns those into packets and events. Sequence numbers count
//! segments of [`MSS`] payload bytes (the last one shorter); every data packet
//! carries a [`HEADER`] as well, and acknowledgements are [`ACK_LEN`] bytes.
//! Receivers acknowledge every data packet, echoing its send time (for RTT
//! samples, as with TCP timestamps), its CE mark (DCTCP's exact echo) and its
//! segment number (a one-block selective acknowledgement pFabric uses).
//!
//! - [`tcp`]: TCP NewReno (slow start, congestion avoidance, fast retransmit and
//!   recovery, RTO with backoff) and DCTCP on top of it.
//! - [`pfabric`]: pFabric's minimal rate control.
//! - [`udp`]: constant-rate and on/off datagram sources.
//! - [`recv`]: the receiver of the window-based transports.

pub mod pfabric;
pub mod recv;
pub mod tcp;
pub mod udp;

/// Payload bytes of a full segment.
pub const MSS: u32 = 1460;
/// Header bytes of every data packet.
pub const HEADER: u32 = 40;
/// Bytes of an acknowledgement on the wire.
pub const ACK_LEN: u16 = 40;
/// Largest window in segments: the receiver's reordering window.
pub const MAX_WINDOW: u32 = BitRing::BITS - 1;

/// A segment a sender wants transmitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Emit {
    /// Segment number.
    pub seq: u32,
    /// Bytes on the wire (payload and header).
    pub len: u16,
    /// Whether it was sent before.
    pub retx: bool,
}

/// Segment arithmetic of a flow of `size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segments {
    /// Segments in the flow (`u32::MAX`: unbounded).
    pub total: u32,
    /// Payload bytes of the last segment.
    pub last: u32,
}

impl Segments {
    /// The segments of a flow of `size` bytes (`u64::MAX`: a long-lived flow).
    #[must_use]
    pub fn of(size: u64) -> Segments {
        if size == u64::MAX {
            return Segments {
                total: u32::MAX,
                last: MSS,
            };
        }
        let size = size.max(1);
        let total = size.div_ceil(u64::from(MSS)).min(u64::from(u32::MAX - 1)) as u32;
        let last = (size - u64::from(total - 1) * u64::from(MSS)) as u32;
        Segments {
            total,
            last: last.min(MSS),
        }
    }

    /// Bytes on the wire of segment `seq`.
    #[must_use]
    #[inline]
    pub fn wire_len(&self, seq: u32) -> u16 {
        let payload = if seq + 1 == self.total {
            self.last
        } else {
            MSS
        };
        (payload + HEADER) as u16
    }

    /// Payload bytes from segment `seq` to the end.
    #[must_use]
    #[inline]
    pub fn bytes_from(&self, seq: u32) -> u64 {
        if self.total == u32::MAX {
            return u64::MAX;
        }
        if seq >= self.total {
            return 0;
        }
        u64::from(self.total - 1 - seq) * u64::from(MSS) + u64::from(self.last)
    }

    /// Payload bytes of segments `0..seq`.
    #[must_use]
    #[inline]
    pub fn bytes_before(&self, seq: u32) -> u64 {
        if seq == 0 {
            return 0;
        }
        if self.total == u32::MAX || seq < self.total {
            return u64::from(seq) * u64::from(MSS);
        }
        u64::from(self.total - 1) * u64::from(MSS) + u64::from(self.last)
    }

    /// Payload bytes on the wire: every segment's payload and header.
    #[must_use]
    pub fn wire_bytes(&self) -> u64 {
        self.bytes_before(self.total) + u64::from(self.total) * u64::from(HEADER)
    }

    /// Whether the flow is unbounded.
    #[must_use]
    pub fn unbounded(&self) -> bool {
        self.total == u32::MAX
    }
}

/// A ring of [`BitRing::BITS`] bits indexed by segment number modulo its size:
/// a window of segment states anchored at a moving base.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BitRing([u64; 8]);

impl BitRing {
    /// Bits in the ring.
    pub const BITS: u32 = 512;

    #[inline]
    fn at(seq: u32) -> (usize, u64) {
        let i = seq % Self::BITS;
        ((i / 64) as usize, 1 << (i % 64))
    }

    /// Whether `seq`'s bit is set.
    #[inline]
    #[must_use]
    pub fn get(&self, seq: u32) -> bool {
        let (w, m) = Self::at(seq);
        self.0[w] & m != 0
    }

    /// Sets `seq`'s bit; whether it was clear.
    #[inline]
    pub fn set(&mut self, seq: u32) -> bool {
        let (w, m) = Self::at(seq);
        let was = self.0[w] & m == 0;
        self.0[w] |= m;
        was
    }

    /// Clears `seq`'s bit; whether it was set.
    #[inline]
    pub fn clear(&mut self, seq: u32) -> bool {
        let (w, m) = Self::at(seq);
        let was = self.0[w] & m != 0;
        self.0[w] &= !m;
        was
    }

    /// Clears every bit.
    pub fn reset(&mut self) {
        self.0 = [0; 8];
    }
}

/// Retransmission timeout estimation (RFC 6298) with exponential backoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtoEstimator {
    srtt: u64,
    rttvar: u64,
    rto: u64,
    min: u64,
    max: u64,
    backoff: u32,
    sampled: bool,
}

impl RtoEstimator {
    /// Before any sample the timeout is `initial`; it never goes below `min` or
    /// above `max` (ns).
    #[must_use]
    pub fn new(initial: u64, min: u64, max: u64) -> RtoEstimator {
        RtoEstimator {
            srtt: 0,
            rttvar: 0,
            rto: initial.clamp(min, max),
            min,
            max,
            backoff: 0,
            sampled: false,
        }
    }

    /// Takes an RTT sample (ns) and clears the backoff.
    #[inline]
    pub fn sample(&mut self, rtt: u64) {
        let rtt = rtt.max(1);
        if self.sampled {
            let err = self.srtt.abs_diff(rtt);
            self.rttvar = (3 * self.rttvar + err) / 4;
            self.srtt = (7 * self.srtt + rtt) / 8;
        } else {
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            self.sampled = true;
        }
        self.rto = (self.srtt + (4 * self.rttvar).max(1)).clamp(self.min, self.max);
        self.backoff = 0;
    }

    /// Doubles the timeout after an expiry.
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
    }

    /// The current timeout, backoff included (ns).
    #[must_use]
    #[inline]
    pub fn rto(&self) -> u64 {
        self.rto.saturating_mul(1 << self.backoff).min(self.max)
    }

    /// The smoothed RTT (ns), 0 before any sample.
    #[must_use]
    pub fn srtt(&self) -> u64 {
        self.srtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_of_a_flow() {
        let s = Segments::of(3000);
        assert_eq!((s.total, s.last), (3, 80));
        assert_eq!(s.wire_len(0), 1500);
        assert_eq!(s.wire_len(2), 120);
        assert_eq!(s.bytes_from(0), 3000);
        assert_eq!(s.bytes_from(2), 80);
        assert_eq!(s.bytes_from(3), 0);
        let one = Segments::of(1460);
        assert_eq!((one.total, one.last), (1, 1460));
        assert!(Segments::of(u64::MAX).unbounded());
        assert_eq!(s.bytes_before(1), 1460);
        assert_eq!(s.bytes_before(3), 3000);
        assert_eq!(s.wire_bytes(), 3120);
    }

    #[test]
    fn bit_ring_wraps() {
        let mut r = BitRing::default();
        assert!(r.set(5));
        assert!(!r.set(5));
        assert!(r.get(5 + BitRing::BITS));
        assert!(r.clear(5));
        assert!(!r.get(5));
    }

    #[test]
    fn rto_follows_rfc6298() {
        let mut e = RtoEstimator::new(1_000_000, 200_000, 1_000_000_000);
        assert_eq!(e.rto(), 1_000_000);
        e.sample(100_000);
        // srtt 100 us, rttvar 50 us: 300 us.
        assert_eq!(e.rto(), 300_000);
        e.back_off();
        assert_eq!(e.rto(), 600_000);
        e.sample(100_000);
        // rttvar (3 x 50 + 0) / 4 = 37.5 us: 100 + 150 = 250 us, above the minimum.
        assert_eq!(e.rto(), 250_000);
    }
}
