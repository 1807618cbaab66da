//! The auditor checked against brute force: on small random runs, every metric
//! is recomputed from its definition by evaluating the service functions at every
//! instant where any of them changes slope, and every pair of such instants.

use eiffel_sched::{Drr, FlowConfig, FlowScheduler, Qfq};
use eiffel_sim::{audit, Arrival, Gps, Link, Outcome, Run, Trace, TICKS_PER_BYTE};
use proptest::prelude::*;

const LINK: Link = Link::new(1_000_000_000);

/// Bytes of the packets `pick` selects transmitted by tick `t` (fluid).
fn served(run: &Run, trace: &Trace, t: u128, pick: impl Fn(usize) -> bool) -> f64 {
    run.order
        .iter()
        .filter(|&&i| pick(trace.arrivals()[i].flow as usize))
        .map(|&i| match run.outcomes[i] {
            Outcome::Sent { start, end } if t > start => {
                (t.min(end) - start) as f64 / TICKS_PER_BYTE as f64
            }
            _ => 0.0,
        })
        .sum()
}

fn scenario() -> impl Strategy<Value = (Vec<u32>, Vec<(u64, u32, u32)>)> {
    (2usize..5).prop_flat_map(|n| {
        (
            proptest::collection::vec(1u32..20, n),
            proptest::collection::vec((0u64..40_000, 0..n as u32, 64u32..1500), 1..40),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn metrics_match_their_definitions((weights, arr) in scenario(), use_drr in any::<bool>()) {
        let n = weights.len();
        let trace = Trace::new(arr.iter().map(|&(at, flow, len)| Arrival { at, flow, len }).collect());
        let mut s: Box<dyn FlowScheduler> = if use_drr {
            Box::new(Drr::new(n as u32, 64).unwrap())
        } else {
            Box::new(Qfq::new(n as u32, 64).unwrap())
        };
        for (f, &w) in weights.iter().enumerate() {
            s.add_flow(f as u32, FlowConfig::weight(w)).unwrap();
        }
        let run = eiffel_sim::run(s.as_mut(), &trace, LINK);
        let wf: Vec<f64> = weights.iter().map(|&w| f64::from(w)).collect();
        let rep = audit(&trace, &run, &wf);
        let gps = Gps::for_run(&trace, &wf, &run);
        let arrivals = trace.arrivals();
        let total: f64 = wf.iter().sum();
        // Every instant where a service function or a backlog changes.
        let mut instants: Vec<u128> = arrivals.iter().map(|a| LINK.ticks(a.at)).collect();
        for o in &run.outcomes {
            if let Outcome::Sent { start, end } = *o {
                instants.push(start);
                instants.push(end);
            }
        }
        instants.sort_unstable();
        instants.dedup();
        for (k, w) in wf.iter().enumerate() {
            let phi = w / total;
            let d = |t: u128| phi * served(&run, &trace, t, |_| true) - served(&run, &trace, t, |f| f == k);
            // Fluid backlog of k just after t: arrived (at or before t) minus sent.
            let backlog = |t: u128| {
                let arrived: f64 = arrivals.iter().filter(|a| a.flow as usize == k && LINK.ticks(a.at) <= t).map(|a| f64::from(a.len)).sum();
                arrived - served(&run, &trace, t, |f| f == k)
            };
            // Brute-force B-WFI: max D(t2) - D(t1) over instants t1 <= t2 with k
            // backlogged throughout (checked at every instant in between).
            let mut best = 0f64;
            for (i, &t1) in instants.iter().enumerate() {
                if backlog(t1) <= 1e-9 {
                    continue;
                }
                for &t2 in &instants[i..] {
                    best = best.max(d(t2) - d(t1));
                    // Stay within the period: stop once k's backlog is gone.
                    if backlog(t2) <= 1e-9 {
                        break;
                    }
                }
            }
            prop_assert!((rep.flows[k].b_wfi_bytes - best).abs() < 1e-6, "flow {k}: B-WFI {} vs brute force {best}", rep.flows[k].b_wfi_bytes);
            prop_assert!(rep.flows[k].b_wfi_queued_bytes <= rep.flows[k].b_wfi_bytes + 1e-9);
            // T-WFI from eq. (11), backlog counted packet by packet in arrival order.
            let mut t_wfi = f64::NEG_INFINITY;
            let mut arrived = 0.0;
            for (i, a) in arrivals.iter().enumerate().filter(|(_, a)| a.flow as usize == k) {
                arrived += f64::from(a.len);
                if let Outcome::Sent { end, .. } = run.outcomes[i] {
                    let ta = LINK.ticks(a.at);
                    let q = arrived - served(&run, &trace, ta, |f| f == k);
                    t_wfi = t_wfi.max(LINK.nanos(end - ta) - q / (phi * LINK.bytes_per_ns()));
                }
            }
            if t_wfi.is_finite() {
                prop_assert!((rep.flows[k].t_wfi_ns - t_wfi).abs() < 1e-6);
            }
            // Worst lag: the maximum over every instant, GPS departures included.
            let mut times: Vec<f64> = instants.iter().map(|&t| LINK.nanos(t)).collect();
            times.extend(gps.packets.iter().flatten().map(|p| p.finish_ns));
            let lag = times
                .iter()
                .map(|&t| gps.served(k, t) - served(&run, &trace, LINK.ticks(0) + (t * LINK.rate_bps() as f64).round() as u128, |f| f == k))
                .fold(0f64, f64::max);
            prop_assert!((rep.flows[k].worst_lag_bytes - lag).abs() < 1e-3, "flow {k}: lag {} vs {lag}", rep.flows[k].worst_lag_bytes);
        }
    }
}
