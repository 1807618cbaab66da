//! TCP NewReno (RFC 5681, RFC 6582, RFC 6298) and DCTCP (Alizadeh et al.,
//! SIGCOMM 2010; RFC 8257), in segments.
//!
//! - Slow start: `cwnd += 1` per acknowledgement of new data while
//!   `cwnd < ssthresh`; congestion avoidance: `cwnd += 1/cwnd`.
//! - Fast retransmit on the third duplicate acknowledgement when the cumulative
//!   acknowledgement has passed `recover`: `ssthresh = max(flight / 2, 2)`,
//!   retransmit the first unacknowledged segment, `cwnd = ssthresh + 3`.
//! - Fast recovery: each further duplicate inflates `cwnd` by one; a partial
//!   acknowledgement retransmits the next hole and deflates `cwnd` by the
//!   amount acknowledged minus one; a full one (reaching `recover`) sets
//!   `cwnd = min(ssthresh, flight + 1)` and ends recovery.
//! - Retransmission timeout: `ssthresh = max(flight / 2, 2)`, `cwnd = 1`, go back
//!   to the first unacknowledged segment, `recover` = the highest segment sent,
//!   the timeout doubles until an acknowledgement of new data arrives.
//! - DCTCP: data is ECN-capable; once per window of data
//!   `alpha = (1 - g) alpha + g F`, `F` the fraction of acknowledged segments
//!   that echoed a mark; on the first echo of a window
//!   `cwnd = cwnd (1 - alpha / 2)` and `ssthresh = cwnd`. `alpha` starts at 1.
//!
//! Departures from a kernel stack: every segment is acknowledged (no delayed
//! acknowledgements) and RTT samples come from the echoed send time of the
//! segment that triggered the acknowledgement (as with TCP timestamps), so
//! retransmissions give valid samples; there is no connection setup; the
//! receive window is [`MAX_WINDOW`] segments.

use super::{Emit, RtoEstimator, Segments, MAX_WINDOW};
use crate::time::{Duration, Time};

/// Parameters of the TCP family.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpParams {
    /// Initial congestion window in segments.
    pub init_window: u32,
    /// Largest window in segments (capped at [`MAX_WINDOW`]).
    pub max_window: u32,
    /// Smallest retransmission timeout.
    pub min_rto: Duration,
    /// Timeout before the first RTT sample.
    pub init_rto: Duration,
    /// Largest timeout, backoff included.
    pub max_rto: Duration,
    /// DCTCP's gain `g` (DCTCP only).
    pub dctcp_gain: f64,
}

impl Default for TcpParams {
    fn default() -> Self {
        TcpParams {
            init_window: 10,
            max_window: MAX_WINDOW,
            min_rto: Duration::from_millis(200),
            init_rto: Duration::from_millis(1000),
            max_rto: Duration::from_millis(60_000),
            dctcp_gain: 1.0 / 16.0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Dctcp {
    alpha: f64,
    gain: f64,
    acked: u64,
    marked: u64,
    /// The observation window ends when this segment is acknowledged.
    window_end: u32,
    /// No further reduction until this segment is acknowledged.
    cwr_end: u32,
}

/// What an acknowledgement did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// Segments newly acknowledged.
    pub newly: u32,
    /// Every segment is acknowledged.
    pub done: bool,
}

/// The sending side of a NewReno or DCTCP connection.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpSender {
    seg: Segments,
    una: u32,
    nxt: u32,
    high: u32,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    recover: u32,
    in_recovery: bool,
    max_window: u32,
    rto: RtoEstimator,
    rto_at: Time,
    dctcp: Option<Dctcp>,
    /// Segments retransmitted.
    pub retransmits: u32,
    /// Timer expiries.
    pub timeouts: u32,
}

impl TcpSender {
    /// A sender of `seg`; DCTCP when `dctcp` is set.
    #[must_use]
    pub fn new(seg: Segments, p: &TcpParams, dctcp: bool) -> TcpSender {
        TcpSender {
            seg,
            una: 0,
            nxt: 0,
            high: 0,
            cwnd: f64::from(p.init_window.max(1)),
            ssthresh: f64::INFINITY,
            dupacks: 0,
            recover: 0,
            in_recovery: false,
            max_window: p.max_window.clamp(1, MAX_WINDOW),
            rto: RtoEstimator::new(
                p.init_rto.as_nanos(),
                p.min_rto.as_nanos(),
                p.max_rto.as_nanos(),
            ),
            rto_at: Time::NEVER,
            dctcp: dctcp.then_some(Dctcp {
                alpha: 1.0,
                gain: p.dctcp_gain,
                acked: 0,
                marked: 0,
                window_end: 0,
                cwr_end: 0,
            }),
            retransmits: 0,
            timeouts: 0,
        }
    }

    /// When the retransmission timer expires ([`Time::NEVER`]: not armed).
    #[must_use]
    pub fn rto_at(&self) -> Time {
        self.rto_at
    }

    /// The congestion window in segments.
    #[must_use]
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Segments acknowledged so far.
    #[must_use]
    pub fn acked(&self) -> u32 {
        self.una
    }

    /// DCTCP's current `alpha`.
    #[must_use]
    pub fn alpha(&self) -> Option<f64> {
        self.dctcp.map(|d| d.alpha)
    }

    /// Payload bytes not yet acknowledged (pFabric-style rank for a TCP flow).
    #[must_use]
    pub fn remaining(&self) -> u64 {
        self.seg.bytes_from(self.una)
    }

    /// Starts the flow: sends the initial window.
    pub fn start(&mut self, now: Time, out: &mut Vec<Emit>) {
        self.send(now, out);
    }

    fn emit(&mut self, seq: u32, out: &mut Vec<Emit>) {
        let retx = seq < self.high;
        if retx {
            self.retransmits += 1;
        }
        out.push(Emit {
            seq,
            len: self.seg.wire_len(seq),
            retx,
        });
    }

    /// Sends what the window allows and arms the timer if data is outstanding.
    fn send(&mut self, now: Time, out: &mut Vec<Emit>) {
        let window = (self.cwnd.floor() as u32).clamp(1, self.max_window);
        while self.nxt < self.seg.total && self.nxt - self.una < window {
            let s = self.nxt;
            self.emit(s, out);
            self.nxt += 1;
            self.high = self.high.max(self.nxt);
        }
        if self.una < self.high && self.rto_at == Time::NEVER {
            self.rto_at = now + Duration::from_nanos(self.rto.rto());
        }
    }

    fn restart_timer(&mut self, now: Time) {
        self.rto_at = if self.una < self.high {
            now + Duration::from_nanos(self.rto.rto())
        } else {
            Time::NEVER
        };
    }

    fn flight(&self) -> f64 {
        f64::from(self.nxt - self.una)
    }

    /// Handles an acknowledgement: cumulative `ack`, ECN echo `ece`, echoed send
    /// time `echo`.
    pub fn on_ack(
        &mut self,
        now: Time,
        ack: u32,
        ece: bool,
        echo: Time,
        out: &mut Vec<Emit>,
    ) -> AckOutcome {
        if ack > self.una {
            let newly = ack - self.una;
            self.rto.sample(now.since(echo).as_nanos());
            self.new_data(now, ack, newly, ece, out);
            if self.una >= self.seg.total {
                self.rto_at = Time::NEVER;
                return AckOutcome { newly, done: true };
            }
            self.send(now, out);
            return AckOutcome { newly, done: false };
        }
        if ack == self.una && self.una < self.high {
            self.duplicate(now, out);
        }
        AckOutcome::default()
    }

    fn new_data(&mut self, now: Time, ack: u32, newly: u32, ece: bool, out: &mut Vec<Emit>) {
        self.una = ack;
        if self.nxt < self.una {
            self.nxt = self.una;
        }
        if self.in_recovery {
            if ack >= self.recover {
                self.cwnd = self.ssthresh.min(self.flight() + 1.0);
                self.in_recovery = false;
                self.dupacks = 0;
            } else {
                // Partial acknowledgement: the next hole is lost too.
                self.emit(ack, out);
                self.cwnd = (self.cwnd - f64::from(newly) + 1.0).max(1.0);
            }
        } else {
            self.dupacks = 0;
            if self.cwnd < self.ssthresh {
                self.cwnd += 1.0;
            } else {
                self.cwnd += 1.0 / self.cwnd;
            }
        }
        self.cwnd = self.cwnd.min(f64::from(self.max_window));
        self.dctcp_update(newly, ece);
        self.restart_timer(now);
    }

    fn dctcp_update(&mut self, newly: u32, ece: bool) {
        let Some(d) = &mut self.dctcp else {
            return;
        };
        d.acked += u64::from(newly);
        if ece {
            d.marked += u64::from(newly);
        }
        if self.una >= d.window_end {
            if d.acked > 0 {
                let f = d.marked as f64 / d.acked as f64;
                d.alpha = (1.0 - d.gain) * d.alpha + d.gain * f;
            }
            d.acked = 0;
            d.marked = 0;
            d.window_end = self.high.max(self.una + 1);
        }
        if ece && !self.in_recovery && self.una >= d.cwr_end {
            self.cwnd = (self.cwnd * (1.0 - d.alpha / 2.0)).max(1.0);
            self.ssthresh = self.cwnd;
            d.cwr_end = self.high.max(self.una + 1);
        }
    }

    fn duplicate(&mut self, now: Time, out: &mut Vec<Emit>) {
        self.dupacks += 1;
        if self.in_recovery {
            self.cwnd = (self.cwnd + 1.0).min(f64::from(self.max_window));
            self.send(now, out);
        } else if self.dupacks == 3 && self.una >= self.recover {
            self.ssthresh = (self.flight() / 2.0).max(2.0);
            self.recover = self.high;
            self.in_recovery = true;
            let s = self.una;
            self.emit(s, out);
            self.cwnd = self.ssthresh + 3.0;
            self.restart_timer(now);
            self.send(now, out);
        }
    }

    /// The retransmission timer expired at `now`: go back and resend.
    pub fn on_timeout(&mut self, now: Time, out: &mut Vec<Emit>) {
        if self.una >= self.high {
            self.rto_at = Time::NEVER;
            return;
        }
        self.timeouts += 1;
        self.ssthresh = (self.flight() / 2.0).max(2.0);
        self.cwnd = 1.0;
        self.nxt = self.una;
        self.recover = self.high;
        self.in_recovery = false;
        self.dupacks = 0;
        self.rto.back_off();
        if let Some(d) = &mut self.dctcp {
            d.cwr_end = self.high;
        }
        self.rto_at = Time::NEVER;
        self.send(now, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sender(segs: u32, dctcp: bool) -> TcpSender {
        let p = TcpParams {
            init_window: 2,
            ..TcpParams::default()
        };
        TcpSender::new(Segments::of(u64::from(segs) * 1460), &p, dctcp)
    }

    fn seqs(out: &[Emit]) -> Vec<u32> {
        out.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn slow_start_doubles_per_round() {
        let mut s = sender(100, false);
        let mut out = Vec::new();
        s.start(Time(0), &mut out);
        assert_eq!(seqs(&out), vec![0, 1]);
        out.clear();
        s.on_ack(Time(10), 1, false, Time(0), &mut out);
        s.on_ack(Time(11), 2, false, Time(0), &mut out);
        assert_eq!(seqs(&out), vec![2, 3, 4, 5]);
        assert_eq!(s.cwnd(), 4.0);
    }

    #[test]
    fn fast_retransmit_and_newreno_recovery() {
        let mut s = sender(100, false);
        s.cwnd = 8.0;
        let mut out = Vec::new();
        s.start(Time(0), &mut out);
        assert_eq!(out.len(), 8);
        out.clear();
        // Segments 0 and 3 are lost: 1, 2 and 4..8 arrive.
        for _ in 0..3 {
            s.on_ack(Time(10), 0, false, Time(0), &mut out);
        }
        assert_eq!(seqs(&out), vec![0], "third duplicate retransmits");
        assert_eq!(s.ssthresh, 4.0);
        out.clear();
        for _ in 0..4 {
            s.on_ack(Time(11), 0, false, Time(0), &mut out);
        }
        // Inflated to 4 + 3 + 4 = 11: segments 8, 9, 10 go out.
        assert_eq!(seqs(&out), vec![8, 9, 10]);
        out.clear();
        // Partial acknowledgement up to the second hole.
        s.on_ack(Time(20), 3, false, Time(0), &mut out);
        assert_eq!(
            out[0],
            Emit {
                seq: 3,
                len: 1500,
                retx: true
            }
        );
        assert!(s.in_recovery);
        out.clear();
        // Full acknowledgement: recovery ends at ssthresh.
        s.on_ack(Time(30), 11, false, Time(0), &mut out);
        assert!(!s.in_recovery);
        assert!(s.cwnd() <= 4.0);
        assert_eq!(s.retransmits, 2);
    }

    #[test]
    fn timeout_goes_back() {
        let mut s = sender(10, false);
        let mut out = Vec::new();
        s.start(Time(0), &mut out);
        assert_eq!(s.rto_at(), Time(1_000_000_000));
        out.clear();
        s.on_timeout(Time(1_000_000_000), &mut out);
        assert_eq!(
            out,
            vec![Emit {
                seq: 0,
                len: 1500,
                retx: true
            }]
        );
        assert_eq!(s.cwnd(), 1.0);
        assert_eq!(s.rto_at(), Time(3_000_000_000), "backed off");
        out.clear();
        let r = s.on_ack(
            Time(3_000_000_100),
            10,
            false,
            Time(3_000_000_000),
            &mut out,
        );
        assert!(r.done);
        assert_eq!(s.rto_at(), Time::NEVER);
    }

    #[test]
    fn dctcp_cuts_by_alpha_once_per_window() {
        let mut s = sender(1000, true);
        s.cwnd = 20.0;
        s.ssthresh = 10.0;
        let mut out = Vec::new();
        s.start(Time(0), &mut out);
        // First marked acknowledgement: alpha is 1, so the window halves.
        s.on_ack(Time(1), 1, true, Time(0), &mut out);
        let after = s.cwnd();
        assert!((after - 10.0).abs() < 0.2, "cwnd {after}");
        // More marks in the same window do not cut again.
        s.on_ack(Time(2), 2, true, Time(0), &mut out);
        assert!(s.cwnd() >= after);
        // Unmarked windows decay alpha.
        let mut ack = 2;
        for _ in 0..2000 {
            ack += 1;
            out.clear();
            s.on_ack(Time(3), ack, false, Time(0), &mut out);
            if ack >= 900 {
                break;
            }
        }
        assert!(s.alpha().unwrap() < 0.5);
    }
}
