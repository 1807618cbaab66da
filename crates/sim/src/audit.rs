//! The service-guarantee auditor: how far a scheduler's service deviates from
//! each flow's share, from the ideal fluid server, and between flows.
//!
//! # Definitions
//!
//! For a run of a trace through a scheduler on a link of constant rate `R`
//! (bytes/ns), with flow `k` of weight `w_k`:
//!
//! - `phi_k = w_k / sum(w_j)`, the sum over all flows given to the auditor
//!   (configured flows, with or without traffic): the share of the link flow `k`
//!   is guaranteed, `sum(phi) = 1` (qfq.txt section 3 assumes `sum(phi) <= 1`).
//! - `L_k` is the largest packet flow `k` sent, `L` the largest of all flows.
//! - `W(t1, t2)` is the number of bytes the link transmitted in `[t1, t2]`, counted
//!   fluidly (a packet's bytes leave at rate `R` during its transmission), and
//!   `W_k(t1, t2)` the same for flow `k`'s packets. `A_k(t)` counts the bytes of flow
//!   `k` that arrived by `t` and were accepted.
//! - Flow `k` is *backlogged* at `t` while it has accepted bytes not yet
//!   transmitted (including the rest of a packet in transmission).
//! - **B-WFI** (qfq.txt eq. (7); Bennett and Zhang): the largest
//!   `phi_k W(t1, t2) - W_k(t1, t2)` over intervals during which `k` is
//!   continuously backlogged, in bytes. `t2` ranges over all instants, not only
//!   packet completions (the paper's slightly more general form).
//! - **B-WFI over queued intervals**: the same maximum over the intervals during
//!   which the flow has a packet waiting in the scheduler, each extended to the end
//!   of the transmission of the packet that emptied its queue. This is the scope of
//!   the proofs of qfq.txt Theorem 1 (and of the exact-timestamp variant for
//!   WF²Q+): they follow the flow's timestamps across `[t1, t2]`, which requires
//!   the flow to stay in the scheduler's set of backlogged flows `B(t)`. A
//!   scheduler drops a flow from `B(t)` when its last queued packet starts
//!   transmission (it has no head packet left to timestamp); a packet that arrives
//!   during that transmission re-enters it through eq. (2), `S = max(V, F)`, after
//!   eq. (3) may have moved `V` to another flow's start. A flow fed just in time
//!   is thus continuously backlogged in the fluid sense while it leaves and
//!   re-enters `B(t)` at every packet, and can lose up to one packet of another
//!   flow at each re-entry: its fluid B-WFI is not bounded by the theorem (the
//!   tests of eiffel-sim show WF²Q+ exceeding it), while the queued B-WFI is.
//! - **T-WFI** (qfq.txt eq. (11)): the largest `t_c - t_a - Q_k(t_a+) / (phi_k R)`
//!   over the packets of `k`, in nanoseconds, where `t_a` and `t_c` are the arrival
//!   and completion times of the packet and `Q_k(t_a+)` is the backlog of `k` just
//!   after its arrival: `A_k` up to and including this packet (not those arriving
//!   later at the same instant) minus `W_k(0, t_a)`.
//! - **Lag**: `G_k(0, t) - W_k(0, t)`, with `G_k` the service of the same accepted
//!   packets by the ideal fluid server ([`Gps`]); the worst lag is its maximum over
//!   `t`, in bytes.
//! - **Delay against GPS**: the largest `t_c - t_gps` over the packets of `k`, with
//!   `t_gps` the time GPS completes the packet.
//! - **Shares** over a measurement window `[a, b]` (by default from the first to
//!   the last arrival): `W_k(a, b) / W(a, b)`, and for GPS `G_k(a, b) / G(a, b)`.
//! - **Jain's fairness index** of the normalised services `x_k = W_k(a, b) /
//!   G_k(a, b)` over the flows GPS served in the window: `(sum x)^2 / (n sum x^2)`,
//!   1 when every flow got what the fluid server would have given it.
//!
//! # How it is computed
//!
//! Every quantity is a maximum of a piecewise-linear function of time, attained at
//! a breakpoint, so no time step is involved. While `k` is backlogged,
//! `D_k(t) = phi_k W(0, t) - W_k(0, t)` rises while another flow transmits and
//! falls while `k` does: the B-WFI is the largest rise of `D_k` from a start of a
//! backlogged period or the end of one of `k`'s transmissions to a later start of
//! one of its transmissions, within one period. The lag only decreases while `k`
//! transmits, so its maximum is at a start of `k`'s transmissions. Cost
//! O(P log P) for P packets.

use crate::gps::Gps;
use crate::link::{Link, Ticks, TICKS_PER_BYTE};
use crate::run::{Outcome, Run};
use crate::trace::{Arrival, Trace};
use eiffel_sched::Nanos;

/// What the auditor found for one flow; see the [module docs](self).
#[derive(Clone, Debug, PartialEq)]
pub struct FlowReport {
    /// The flow id.
    pub flow: usize,
    /// Its weight.
    pub weight: f64,
    /// Its share `phi_k`.
    pub phi: f64,
    /// Packets transmitted.
    pub packets: usize,
    /// Bytes transmitted.
    pub bytes: u64,
    /// Packets dropped.
    pub dropped: usize,
    /// Packets accepted but never transmitted.
    pub held: usize,
    /// `L_k`: the largest packet transmitted.
    pub max_len: u32,
    /// B-WFI in bytes, over intervals in which the flow owns untransmitted bytes.
    pub b_wfi_bytes: f64,
    /// B-WFI in bytes, over intervals in which the flow has packets waiting in the
    /// scheduler (the scope of the papers' proofs; see the module docs).
    pub b_wfi_queued_bytes: f64,
    /// T-WFI in nanoseconds (negative if every packet beat its guarantee).
    pub t_wfi_ns: f64,
    /// Worst lag behind GPS in bytes.
    pub worst_lag_bytes: f64,
    /// Worst completion delay against GPS in nanoseconds.
    pub worst_delay_vs_gps_ns: f64,
    /// Share of the link's service in the window.
    pub share: f64,
    /// Share GPS gave the flow in the window.
    pub gps_share: f64,
    /// Service in the window relative to GPS's (`NaN` if GPS served nothing).
    pub normalized: f64,
}

/// The auditor's report for one run.
#[derive(Clone, Debug)]
pub struct Report {
    /// Per flow, indexed by flow id.
    pub flows: Vec<FlowReport>,
    /// Jain's fairness index of the normalised services.
    pub jain: f64,
    /// The measurement window of the shares, in nanoseconds.
    pub window_ns: (Nanos, Nanos),
    /// `L`: the largest packet transmitted.
    pub max_len: u32,
    /// The link.
    pub link: Link,
}

/// Options of [`audit_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct AuditOptions {
    /// Window of the shares; `None` for first to last arrival.
    pub window_ns: Option<(Nanos, Nanos)>,
}

/// Audits `run` of `trace` with flow weights `weights` (one per flow id); builds
/// the GPS reference itself.
#[must_use]
pub fn audit(trace: &Trace, run: &Run, weights: &[f64]) -> Report {
    let gps = Gps::for_run(trace, weights, run);
    audit_with(trace, run, &gps, weights, AuditOptions::default())
}

/// Cumulative service of a sequence of transmissions, as a function of time.
struct Service {
    /// `(start, end, bytes before this transmission)`, by start.
    tx: Vec<(Ticks, Ticks, f64)>,
}

impl Service {
    fn new(tx: impl Iterator<Item = (Ticks, Ticks)>) -> Self {
        let mut before = 0.0;
        let tx = tx
            .map(|(s, e)| {
                let r = (s, e, before);
                before += ((e - s) / TICKS_PER_BYTE) as f64;
                r
            })
            .collect();
        Service { tx }
    }

    /// Bytes transmitted by `t`.
    fn at(&self, t: Ticks) -> f64 {
        let i = self.tx.partition_point(|&(s, _, _)| s <= t);
        let Some(&(s, e, before)) = i.checked_sub(1).map(|i| &self.tx[i]) else {
            return 0.0;
        };
        before + (t.min(e) - s) as f64 / TICKS_PER_BYTE as f64
    }
}

/// What every flow's audit reads: the run, its GPS reference and the service
/// of the link and of each flow.
struct Audit<'a> {
    arrivals: &'a [Arrival],
    run: &'a Run,
    gps: &'a Gps,
    weights: &'a [f64],
    total_w: f64,
    link: Link,
    /// The link's cumulative service.
    all: Service,
    /// Each flow's sent packets, in sending order.
    sent_by_flow: Vec<Vec<usize>>,
    /// Each flow's packets not dropped at arrival, in arrival order.
    accepted_by_flow: Vec<Vec<usize>>,
    /// The window of the shares, and the link's service in it.
    window: (Nanos, Nanos),
    window_total: f64,
}

impl Audit<'_> {
    /// The transmission of sent packet `i`.
    fn times(&self, i: usize) -> (Ticks, Ticks) {
        match self.run.outcomes[i] {
            Outcome::Sent { start, end } => (start, end),
            _ => unreachable!("only sent packets are listed"),
        }
    }

    /// B-WFI of flow `k` over fluid and over queued backlogged periods.
    fn b_wfi(&self, k: usize, phi: f64, mine: &Service) -> (f64, f64) {
        let (link, arrivals) = (self.link, self.arrivals);
        let d = |t: Ticks| phi * self.all.at(t) - mine.at(t);
        // Events of k in time order; at equal times ends come first (a period
        // closes before the next opens), then arrivals, then starts.
        let mut events: Vec<(Ticks, u8, u32)> = Vec::new();
        for &i in &self.accepted_by_flow[k] {
            events.push((link.ticks(arrivals[i].at), 1, arrivals[i].len));
        }
        for &i in &self.sent_by_flow[k] {
            let (s, e) = self.times(i);
            events.push((s, 2, 0));
            events.push((e, 0, arrivals[i].len));
        }
        events.sort_unstable_by_key(|&(t, kind, _)| (t, kind));
        // Two notions of a backlogged period: the fluid one (untransmitted bytes)
        // and the scheduler's (packets waiting to start); see the module docs.
        let (mut backlog, mut waiting) = (0u64, 0u32);
        let (mut low, mut low_q, mut b_wfi, mut b_wfi_q) = (0f64, 0f64, 0f64, 0f64);
        for &(t, kind, len) in &events {
            match kind {
                0 => {
                    backlog -= u64::from(len);
                    let dt = d(t);
                    low = low.min(dt);
                    low_q = low_q.min(dt);
                }
                1 => {
                    let dt = d(t);
                    if backlog == 0 {
                        low = dt;
                    }
                    if waiting == 0 {
                        low_q = dt;
                    }
                    backlog += u64::from(len);
                    waiting += 1;
                }
                _ => {
                    waiting -= 1;
                    let dt = d(t);
                    b_wfi = b_wfi.max(dt - low);
                    b_wfi_q = b_wfi_q.max(dt - low_q);
                }
            }
        }
        (b_wfi, b_wfi_q)
    }

    /// T-WFI of flow `k` (backlog just after each arrival, against the completion
    /// time), its worst delay against GPS, and its packets still held.
    fn t_wfi(&self, k: usize, phi: f64, mine: &Service) -> (f64, f64, usize) {
        let (link, arrivals) = (self.link, self.arrivals);
        let rate = link.bytes_per_ns();
        let mut arrived = 0f64;
        let mut t_wfi = f64::NEG_INFINITY;
        let mut delay = f64::NEG_INFINITY;
        let mut held = 0;
        for &i in &self.accepted_by_flow[k] {
            arrived += f64::from(arrivals[i].len);
            let Outcome::Sent { end, .. } = self.run.outcomes[i] else {
                held += 1;
                continue;
            };
            let ta = link.ticks(arrivals[i].at);
            let q = arrived - mine.at(ta);
            t_wfi = t_wfi.max(link.nanos(end - ta) - q / (phi * rate));
            if let Some(g) = self.gps.packets[i] {
                delay = delay.max(link.nanos(end) - g.finish_ns);
            }
        }
        (t_wfi, delay, held)
    }

    /// Flow `k`'s worst lag behind GPS, at the starts of its transmissions.
    fn lag(&self, k: usize, mine: &Service) -> f64 {
        let mut lag = 0f64;
        for &i in &self.sent_by_flow[k] {
            let (s, _) = self.times(i);
            lag = lag.max(self.gps.served(k, self.link.nanos(s)) - mine.at(s));
        }
        lag
    }

    /// Flow `k`'s report (its GPS share not yet normalized).
    fn flow(&self, k: usize) -> FlowReport {
        let (link, arrivals) = (self.link, self.arrivals);
        let phi = self.weights[k] / self.total_w;
        let sent = &self.sent_by_flow[k];
        let mine = Service::new(sent.iter().map(|&i| self.times(i)));
        let (b_wfi, b_wfi_q) = self.b_wfi(k, phi, &mine);
        let (t_wfi, delay, held) = self.t_wfi(k, phi, &mine);
        let lag = self.lag(k, &mine);
        let (wa, wb) = self.window;
        let (ta, tb) = (link.ticks(wa), link.ticks(wb));
        let w_k = mine.at(tb) - mine.at(ta);
        let g_k = self.gps.served(k, wb as f64) - self.gps.served(k, wa as f64);
        FlowReport {
            flow: k,
            weight: self.weights[k],
            phi,
            packets: sent.len(),
            bytes: sent.iter().map(|&i| u64::from(arrivals[i].len)).sum(),
            dropped: arrivals
                .iter()
                .enumerate()
                .filter(|&(i, a)| {
                    a.flow as usize == k && matches!(self.run.outcomes[i], Outcome::Dropped(_))
                })
                .count(),
            held,
            max_len: sent.iter().map(|&i| arrivals[i].len).max().unwrap_or(0),
            b_wfi_bytes: b_wfi,
            b_wfi_queued_bytes: b_wfi_q,
            t_wfi_ns: if t_wfi.is_finite() { t_wfi } else { 0.0 },
            worst_lag_bytes: lag,
            worst_delay_vs_gps_ns: if delay.is_finite() { delay } else { 0.0 },
            share: if self.window_total > 0.0 {
                w_k / self.window_total
            } else {
                0.0
            },
            gps_share: g_k,
            normalized: if g_k > 0.0 { w_k / g_k } else { f64::NAN },
        }
    }
}

/// Jain's fairness index of the flows' normalized services (1 with none).
fn jain(flows: &[FlowReport]) -> f64 {
    let xs: Vec<f64> = flows
        .iter()
        .map(|f| f.normalized)
        .filter(|x| x.is_finite())
        .collect();
    let (sum, sq): (f64, f64) = xs.iter().fold((0.0, 0.0), |(s, q), x| (s + x, q + x * x));
    if xs.is_empty() {
        1.0
    } else {
        sum * sum / (xs.len() as f64 * sq)
    }
}

/// Audits with a given GPS reference and options.
///
/// # Panics
/// If a flow of the trace has no weight in `weights`.
#[must_use]
pub fn audit_with(
    trace: &Trace,
    run: &Run,
    gps: &Gps,
    weights: &[f64],
    opts: AuditOptions,
) -> Report {
    let link = run.link;
    let arrivals = trace.arrivals();
    let n = weights.len();
    assert!(trace.flows() <= n, "the trace has flows without a weight");
    let all = Service::new(run.order.iter().map(|&i| match run.outcomes[i] {
        Outcome::Sent { start, end } => (start, end),
        _ => unreachable!("order lists sent packets"),
    }));
    let mut sent_by_flow: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &i in &run.order {
        sent_by_flow[arrivals[i].flow as usize].push(i);
    }
    let mut accepted_by_flow: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, a) in arrivals.iter().enumerate() {
        if !matches!(run.outcomes[i], Outcome::Dropped(_)) {
            accepted_by_flow[a.flow as usize].push(i);
        }
    }
    let first = arrivals.first().map_or(0, |a| a.at);
    let last = arrivals.last().map_or(0, |a| a.at);
    let (wa, wb) = opts.window_ns.unwrap_or((first, last));
    let window_total = all.at(link.ticks(wb)) - all.at(link.ticks(wa));
    let audit = Audit {
        arrivals,
        run,
        gps,
        weights,
        total_w: weights.iter().sum(),
        link,
        all,
        sent_by_flow,
        accepted_by_flow,
        window: (wa, wb),
        window_total,
    };
    let mut flows: Vec<FlowReport> = (0..n).map(|k| audit.flow(k)).collect();
    let gps_total: f64 = flows.iter().map(|f| f.gps_share).sum();
    for f in &mut flows {
        f.gps_share = if gps_total > 0.0 {
            f.gps_share / gps_total
        } else {
            0.0
        };
    }
    let max_len = flows.iter().map(|f| f.max_len).max().unwrap_or(0);
    Report {
        jain: jain(&flows),
        flows,
        window_ns: (wa, wb),
        max_len,
        link,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::run;
    use crate::trace::Arrival;
    use eiffel_sched::Fifo;

    /// One byte per nanosecond.
    const LINK: Link = Link::new(8_000_000_000);

    fn trace(a: &[(u64, u32, u32)]) -> Trace {
        Trace::new(
            a.iter()
                .map(|&(at, flow, len)| Arrival { at, flow, len })
                .collect(),
        )
    }

    #[test]
    fn fifo_behind_a_burst() {
        // Flow 0 dumps ten 1000-byte packets at t = 0; flow 1 sends one 1000-byte
        // packet at t = 0 (after them in FIFO order). Equal weights: phi = 1/2.
        let mut a: Vec<_> = (0..10).map(|_| (0, 0, 1000)).collect();
        a.push((0, 1, 1000));
        let t = trace(&a);
        let mut q = Fifo::new(64);
        let r = run(&mut q, &t, LINK);
        let rep = audit(&t, &r, &[1.0, 1.0]);
        let f1 = &rep.flows[1];
        // Completes at 11000 ns; Q = 1000 bytes at rate 1/2: T-WFI = 11000 - 2000.
        assert_eq!(f1.t_wfi_ns, 9000.0);
        // Backlogged over [0, 11000]: phi W = 5500, W_1 over [0, 10000] is 0:
        // the largest deficit is 0.5 * 10000 - 0 = 5000 bytes.
        assert_eq!(f1.b_wfi_bytes, 5000.0);
        assert_eq!(f1.b_wfi_queued_bytes, 5000.0);
        // GPS finishes flow 1 at 2000: delay 9000; its lag peaks at 1000 bytes
        // (GPS done, FIFO not started) when its transmission starts.
        assert_eq!(f1.worst_delay_vs_gps_ns, 9000.0);
        assert_eq!(f1.worst_lag_bytes, 1000.0);
        // Flow 0: FIFO completes each of its packets 1000 ns before GPS does.
        assert_eq!(rep.flows[0].worst_delay_vs_gps_ns, -1000.0);
        assert_eq!(
            (rep.flows[0].packets, rep.flows[1].bytes, rep.max_len),
            (10, 1000, 1000)
        );
    }

    #[test]
    fn fair_round_robin_has_small_indices_and_fair_shares() {
        // Two flows alternating 1000-byte packets, arriving together.
        let a: Vec<_> = (0..20)
            .map(|i| (i / 2 * 2000, i as u32 % 2, 1000))
            .collect();
        let t = trace(&a);
        let mut q = Fifo::new(64);
        let r = run(&mut q, &t, LINK);
        let rep = audit_with(
            &t,
            &r,
            &Gps::for_run(&t, &[1.0, 1.0], &r),
            &[1.0, 1.0],
            AuditOptions {
                window_ns: Some((0, 20_000)),
            },
        );
        for f in &rep.flows {
            assert!((f.share - 0.5).abs() < 1e-12, "{f:?}");
            assert!((f.gps_share - 0.5).abs() < 1e-12);
            assert!(f.t_wfi_ns <= 1000.0 + 1e-9, "{f:?}");
        }
        assert!((rep.jain - 1.0).abs() < 1e-12);
    }

    #[test]
    fn jain_index_of_an_unfair_split() {
        // Flow 0 backlogged with 100 packets before flow 1's 100 in FIFO order:
        // in [0, 100000] flow 0 gets everything, GPS would split evenly.
        let mut a: Vec<_> = (0..100).map(|_| (0, 0, 1000)).collect();
        a.extend((0..100).map(|_| (0, 1, 1000)));
        let t = trace(&a);
        let mut q = Fifo::new(256);
        let r = run(&mut q, &t, LINK);
        let rep = audit_with(
            &t,
            &r,
            &Gps::for_run(&t, &[1.0, 1.0], &r),
            &[1.0, 1.0],
            AuditOptions {
                window_ns: Some((0, 100_000)),
            },
        );
        // x = (2, 0): (2)^2 / (2 * 4) = 0.5.
        assert!((rep.jain - 0.5).abs() < 1e-12, "{}", rep.jain);
        assert!((rep.flows[0].share - 1.0).abs() < 1e-12);
    }
}
