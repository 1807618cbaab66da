//! pFabric's minimal rate control (Alizadeh et al., SIGCOMM 2013, section 4.2).
//!
//! pFabric moves scheduling into the switches (each packet carries its flow's
//! remaining bytes as its priority; ports serve the smallest and drop the
//! largest when full), so the end hosts need only a simple window:
//!
//! - a flow starts at line rate: the initial window is one bandwidth-delay
//!   product (`init_window`), with no slow start from one segment;
//! - acknowledgements grow the window as TCP does (`+1` per acknowledgement
//!   below `ssthresh`, `+1/cwnd` above), up to `max_window`;
//! - there is no fast retransmit: a dropped packet is recovered by the
//!   retransmission timer, set to a small fixed multiple of the fabric RTT;
//!   on expiry `ssthresh = cwnd / 2`, `cwnd = 1`, and the unacknowledged
//!   segments are resent in order (segments the receiver reported in its
//!   one-block selective acknowledgements are skipped).
//!
//! Each packet's rank is the flow's payload bytes not yet acknowledged when it
//! is sent, as in the paper.
//!
//! Departure: the paper's probe mode (after several consecutive timeouts a flow
//! sends only small probes) is replaced by an exponential backoff of the
//! timeout over consecutive expiries (reset by any new acknowledgement), which
//! bounds a starved flow's retransmissions the same way.

use super::{BitRing, Emit, Segments, MAX_WINDOW};
use crate::time::{Duration, Time};

/// Parameters of pFabric's rate control.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PfabricParams {
    /// Initial window: one bandwidth-delay product, in segments.
    pub init_window: u32,
    /// Largest window in segments.
    pub max_window: u32,
    /// Retransmission timeout (the paper: about three fabric RTTs).
    pub rto: Duration,
}

impl Default for PfabricParams {
    fn default() -> Self {
        PfabricParams {
            init_window: 12,
            max_window: 12,
            rto: Duration::from_micros(45),
        }
    }
}

/// The sending side of a pFabric flow.
#[derive(Clone, Debug, PartialEq)]
pub struct PfabricSender {
    seg: Segments,
    una: u32,
    /// Next segment never sent.
    nxt: u32,
    /// Next segment to consider for resending after a timeout (in `una..nxt`).
    resend: u32,
    acked: BitRing,
    /// Sent since the last timeout and not yet acknowledged.
    outstanding: BitRing,
    in_flight: u32,
    cwnd: f64,
    ssthresh: f64,
    max_window: u32,
    rto: Duration,
    backoff: u32,
    rto_at: Time,
    /// Segments retransmitted.
    pub retransmits: u32,
    /// Timer expiries.
    pub timeouts: u32,
}

impl PfabricSender {
    /// A sender of `seg`.
    #[must_use]
    pub fn new(seg: Segments, p: &PfabricParams) -> PfabricSender {
        let max_window = p.max_window.clamp(1, MAX_WINDOW);
        PfabricSender {
            seg,
            una: 0,
            nxt: 0,
            resend: 0,
            acked: BitRing::default(),
            outstanding: BitRing::default(),
            in_flight: 0,
            cwnd: f64::from(p.init_window.clamp(1, max_window)),
            ssthresh: f64::INFINITY,
            max_window,
            rto: p.rto,
            backoff: 0,
            rto_at: Time::NEVER,
            retransmits: 0,
            timeouts: 0,
        }
    }

    /// When the retransmission timer expires.
    #[must_use]
    pub fn rto_at(&self) -> Time {
        self.rto_at
    }

    /// Payload bytes not yet acknowledged: the rank of the next packet.
    #[must_use]
    pub fn remaining(&self) -> u64 {
        self.seg.bytes_from(self.una)
    }

    /// Segments acknowledged in order.
    #[must_use]
    pub fn acked(&self) -> u32 {
        self.una
    }

    /// The congestion window in segments.
    #[must_use]
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Starts the flow at line rate.
    pub fn start(&mut self, now: Time, out: &mut Vec<Emit>) {
        self.send(now, out);
    }

    fn emit(&mut self, seq: u32, retx: bool, out: &mut Vec<Emit>) {
        if self.outstanding.set(seq) {
            self.in_flight += 1;
        }
        if retx {
            self.retransmits += 1;
        }
        out.push(Emit {
            seq,
            len: self.seg.wire_len(seq),
            retx,
        });
    }

    fn send(&mut self, now: Time, out: &mut Vec<Emit>) {
        let window = (self.cwnd.floor() as u32).clamp(1, self.max_window);
        while self.in_flight < window && self.resend < self.nxt {
            let s = self.resend;
            self.resend += 1;
            if !self.acked.get(s) && !self.outstanding.get(s) {
                self.emit(s, true, out);
            }
        }
        while self.in_flight < window
            && self.nxt < self.seg.total
            && self.nxt - self.una < self.max_window
        {
            let s = self.nxt;
            self.nxt += 1;
            self.resend = self.nxt;
            self.emit(s, false, out);
        }
        if self.una < self.nxt && self.rto_at == Time::NEVER {
            self.arm(now);
        }
    }

    fn arm(&mut self, now: Time) {
        self.rto_at = now + self.rto.times(1 << self.backoff.min(6));
    }

    /// Handles an acknowledgement: cumulative `ack` and the segment `sack` that
    /// triggered it. Returns whether the flow is complete.
    pub fn on_ack(&mut self, now: Time, ack: u32, sack: u32, out: &mut Vec<Emit>) -> bool {
        let mut progress = false;
        if sack >= self.una && sack < self.nxt && !self.acked.get(sack) {
            self.acked.set(sack);
            if self.outstanding.clear(sack) {
                self.in_flight -= 1;
            }
            progress = true;
        }
        while self.una < ack.min(self.nxt) || (self.una < self.nxt && self.acked.get(self.una)) {
            let s = self.una;
            self.acked.clear(s);
            if self.outstanding.clear(s) {
                self.in_flight -= 1;
            }
            self.una += 1;
            progress = true;
        }
        self.resend = self.resend.max(self.una);
        if progress {
            self.backoff = 0;
            self.cwnd += if self.cwnd < self.ssthresh {
                1.0
            } else {
                1.0 / self.cwnd
            };
            self.cwnd = self.cwnd.min(f64::from(self.max_window));
        }
        if self.una >= self.seg.total {
            self.rto_at = Time::NEVER;
            return true;
        }
        if progress {
            self.rto_at = Time::NEVER;
        }
        self.send(now, out);
        false
    }

    /// The timer expired: resend the unacknowledged segments from the start.
    pub fn on_timeout(&mut self, now: Time, out: &mut Vec<Emit>) {
        self.rto_at = Time::NEVER;
        if self.una >= self.nxt {
            return;
        }
        self.timeouts += 1;
        self.backoff += 1;
        self.ssthresh = (self.cwnd / 2.0).max(2.0);
        self.cwnd = 1.0;
        self.outstanding.reset();
        self.in_flight = 0;
        self.resend = self.una;
        self.send(now, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seqs(out: &[Emit]) -> Vec<u32> {
        out.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn starts_at_line_rate_and_resends_only_holes() {
        let p = PfabricParams {
            init_window: 4,
            max_window: 8,
            rto: Duration::from_nanos(1000),
        };
        let mut s = PfabricSender::new(Segments::of(10 * 1460), &p);
        let mut out = Vec::new();
        s.start(Time(0), &mut out);
        assert_eq!(seqs(&out), vec![0, 1, 2, 3]);
        assert_eq!(s.remaining(), 10 * 1460);
        out.clear();
        // Segment 1 is lost; 0, 2, 3 arrive.
        assert!(!s.on_ack(Time(10), 1, 0, &mut out));
        assert!(!s.on_ack(Time(11), 1, 2, &mut out));
        assert!(!s.on_ack(Time(12), 1, 3, &mut out));
        // No fast retransmit: only new segments went out.
        assert!(out.iter().all(|e| !e.retx));
        let before = out.len();
        assert!(before > 0);
        out.clear();
        s.on_timeout(Time(2000), &mut out);
        assert_eq!(
            out,
            vec![Emit {
                seq: 1,
                len: 1500,
                retx: true
            }]
        );
        assert_eq!(s.rto_at(), Time(2000 + 2000), "backed off");
    }

    #[test]
    fn completes() {
        let mut s = PfabricSender::new(Segments::of(3000), &PfabricParams::default());
        let mut out = Vec::new();
        s.start(Time(0), &mut out);
        assert_eq!(seqs(&out), vec![0, 1, 2]);
        assert!(!s.on_ack(Time(5), 1, 0, &mut out));
        assert!(!s.on_ack(Time(6), 1, 2, &mut out));
        assert!(s.on_ack(Time(7), 3, 1, &mut out));
        assert_eq!(s.rto_at(), Time::NEVER);
    }
}
