//! The service bounds of the fair schedulers, checked by the auditor on many
//! randomized traces (qfq.txt Theorems 1 and 2, section 5.2 for WF²Q+), the
//! long-run shares of continuously backlogged flows, the growth of DRR's
//! worst-case fairness index with the number of flows, and QFQ serving exactly like
//! WF²Q+ where its timestamp rounding is exact.
//!
//! Run `cargo test -p eiffel-sim --test bounds -- --nocapture` to see the tables;
//! `-- --ignored` adds a larger sweep.

use eiffel_sched::{Drr, FlowConfig, FlowScheduler, PacketCore, PerFlow, Qfq, Stfq, Wf2qPlus};
use eiffel_sim::{audit, generate, run, Arrival, FlowSpec, Link, Pattern, Report, Trace};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const LINK: Link = Link::new(1_000_000_000);

/// A random workload: 2 to 24 flows with weights log-uniform over 1..=2^16,
/// declared maximum packets of 64 to 1500 bytes, and a mix of smooth (Poisson),
/// bursty (up to 32 back-to-back packets) and backlogged arrivals offering
/// 60% to 150% of the link.
struct Case {
    weights: Vec<u32>,
    max_packets: Vec<u32>,
    trace: Trace,
}

fn random_case(seed: u64, target_packets: usize) -> Case {
    let mut rng = SmallRng::seed_from_u64(seed);
    let n = rng.gen_range(2..=24);
    let load = rng.gen_range(0.6..1.5);
    let mut weights = Vec::new();
    let mut max_packets = Vec::new();
    let mut specs = Vec::new();
    let mean_len_all = 600.0;
    let duration_ns =
        (target_packets as f64 * mean_len_all * 8.0 / (LINK.rate_bps() as f64 / 1e9) / load) as u64;
    for _ in 0..n {
        weights.push((2f64.powf(rng.gen_range(0.0..=16.0)) as u32).clamp(1, 1 << 16));
        let max = rng.gen_range(64..=1500);
        let min = rng.gen_range(64..=max);
        max_packets.push(max);
        let rate_bps = (LINK.rate_bps() as f64 * load / n as f64) as u64;
        let pattern = match rng.gen_range(0..4) {
            0 | 1 => Pattern::Smooth { rate_bps },
            2 => {
                let burst = rng.gen_range(2..=32);
                let mean_len = f64::from(min + max) / 2.0;
                let mean_gap_ns =
                    (f64::from(burst + 1) / 2.0 * mean_len * 8e9 / rate_bps as f64) as u64;
                Pattern::Bursty {
                    max_burst: burst,
                    mean_gap_ns,
                }
            }
            _ => Pattern::Backlogged {
                packets: rng.gen_range(10..=(target_packets / n).max(11) as u32),
                start_ns: rng.gen_range(0..=duration_ns / 2),
            },
        };
        specs.push(FlowSpec {
            min_packet: min,
            max_packet: max,
            pattern,
        });
    }
    let trace = generate(&specs, duration_ns, seed ^ 0x5eed);
    Case {
        weights,
        max_packets,
        trace,
    }
}

fn configure<C: PacketCore>(mut s: PerFlow<C>, case: &Case) -> PerFlow<C> {
    for (f, (&w, &l)) in case.weights.iter().zip(&case.max_packets).enumerate() {
        s.add_flow(f as u32, FlowConfig::weight(w).max_packet(l))
            .unwrap();
    }
    s
}

fn weights_f64(case: &Case) -> Vec<f64> {
    case.weights.iter().map(|&w| f64::from(w)).collect()
}

/// Worst ratios measured / bound over all flows of all cases: T-WFI, B-WFI over
/// queued intervals (checked), B-WFI over fluid-backlogged intervals (reported).
#[derive(Default, Debug)]
struct Worst {
    t_wfi: f64,
    b_wfi: f64,
    b_wfi_fluid: f64,
}

/// Runs QFQ and WF²Q+ on `seeds` random cases and checks their bounds.
fn check_bounds(seeds: std::ops::Range<u64>, target_packets: usize) -> (Worst, Worst) {
    let (mut qfq_worst, mut wf2q_worst) = (Worst::default(), Worst::default());
    let r = LINK.bytes_per_ns();
    for seed in seeds {
        let case = random_case(seed, target_packets);
        let weights = weights_f64(&case);
        let cap = case.trace.len();

        let mut q = configure(
            Qfq::with_max_packet(case.weights.len() as u32, cap, 1500).unwrap(),
            &case,
        );
        let run_q = run(&mut q, &case.trace, LINK);
        assert_eq!(
            run_q.sent(),
            case.trace.len(),
            "seed {seed}: QFQ lost packets"
        );
        let rep = audit(&case.trace, &run_q, &weights);
        let l = f64::from(rep.max_len);
        for f in &rep.flows {
            // Theorem 2: T-WFI <= (3 sigma_i + 2L)/R; Theorem 1: B-WFI <= 3 phi sigma_i + 2 phi L.
            let sigma = q.core().slot_bytes(f.flow as u32).unwrap();
            let t_bound = (3.0 * sigma + 2.0 * l) / r;
            let b_bound = f.phi * (3.0 * sigma + 2.0 * l);
            assert!(
                f.t_wfi_ns <= t_bound,
                "seed {seed} QFQ flow {}: T-WFI {} > {t_bound}\n{f:?}",
                f.flow,
                f.t_wfi_ns
            );
            assert!(
                f.b_wfi_queued_bytes <= b_bound,
                "seed {seed} QFQ flow {}: B-WFI {} > {b_bound}\n{f:?}",
                f.flow,
                f.b_wfi_queued_bytes
            );
            qfq_worst.t_wfi = qfq_worst.t_wfi.max(f.t_wfi_ns / t_bound);
            qfq_worst.b_wfi = qfq_worst.b_wfi.max(f.b_wfi_queued_bytes / b_bound);
            qfq_worst.b_wfi_fluid = qfq_worst.b_wfi_fluid.max(f.b_wfi_bytes / b_bound);
        }

        let mut w = configure(
            Wf2qPlus::new(case.weights.len() as u32, cap).unwrap(),
            &case,
        );
        let run_w = run(&mut w, &case.trace, LINK);
        let rep = audit(&case.trace, &run_w, &weights);
        let l = f64::from(rep.max_len);
        for f in &rep.flows {
            if f.packets == 0 {
                continue;
            }
            // Section 5.2: T-WFI <= (L_k/phi_k + 2L)/R. For the B-WFI, section
            // 5.1's parenthetical on exact timestamps is garbled ("(L^k +
            // 2 phi^k)L"); repeating the passages of Theorem 1 with exact
            // timestamps gives F_k(t1) <= V(t1) + L_k/phi_k (eligible) and
            // S_k(t2) >= V(t2) - L - L_k/phi_k (V <= F_k + L), hence
            // B-WFI <= 2 L_k + 2 phi_k L. A run exceeded L_k + 2 phi_k L
            // (seed 14: 204.4 > 199.1 bytes), so the derived form is checked.
            let lk = f64::from(f.max_len);
            let t_bound = (lk / f.phi + 2.0 * l) / r;
            let b_bound = 2.0 * lk + 2.0 * f.phi * l;
            assert!(
                f.t_wfi_ns <= t_bound,
                "seed {seed} WF2Q+ flow {}: T-WFI {} > {t_bound}\n{f:?}",
                f.flow,
                f.t_wfi_ns
            );
            assert!(
                f.b_wfi_queued_bytes <= b_bound,
                "seed {seed} WF2Q+ flow {}: B-WFI {} > {b_bound}\n{f:?}",
                f.flow,
                f.b_wfi_queued_bytes
            );
            wf2q_worst.t_wfi = wf2q_worst.t_wfi.max(f.t_wfi_ns / t_bound);
            wf2q_worst.b_wfi = wf2q_worst.b_wfi.max(f.b_wfi_queued_bytes / b_bound);
            wf2q_worst.b_wfi_fluid = wf2q_worst.b_wfi_fluid.max(f.b_wfi_bytes / b_bound);
        }
    }
    (qfq_worst, wf2q_worst)
}

#[test]
fn qfq_and_wf2q_meet_their_wfi_bounds_on_random_traces() {
    let (q, w) = check_bounds(0..120, 1500);
    println!("worst measured/bound: QFQ {q:?}, WF2Q+ {w:?}");
}

#[test]
#[ignore = "a larger sweep: cargo test --release -p eiffel-sim --test bounds -- --ignored"]
fn qfq_and_wf2q_meet_their_wfi_bounds_on_many_long_traces() {
    let (q, w) = check_bounds(1000..1400, 6000);
    println!("worst measured/bound: QFQ {q:?}, WF2Q+ {w:?}");
}

/// Every flow backlogged from t = 0 with enough packets to stay so for the
/// whole window; the share of each must be within 1% of its weight.
#[test]
fn backlogged_flows_get_their_weights_within_one_percent() {
    let weights: [u32; 8] = [1, 2, 3, 5, 8, 13, 21, 47];
    let total: u32 = weights.iter().sum();
    // The smallest flow gets 1/100 of the window: 200 maximal packets of it.
    let window_bytes = 200.0 * 1500.0 * f64::from(total);
    let window_ns = (window_bytes / LINK.bytes_per_ns()) as u64;
    let specs: Vec<FlowSpec> = weights
        .iter()
        .map(|&w| FlowSpec {
            min_packet: 64,
            max_packet: 1500,
            pattern: Pattern::Backlogged {
                packets: (f64::from(w) / f64::from(total) * window_bytes / 782.0 * 1.3) as u32 + 50,
                start_ns: 0,
            },
        })
        .collect();
    let trace = generate(&specs, 0, 11);
    let wf: Vec<f64> = weights.iter().map(|&w| f64::from(w)).collect();
    let cap = trace.len();
    let n = weights.len() as u32;
    let mut schedulers: Vec<Box<dyn FlowScheduler>> = vec![
        Box::new(Qfq::with_max_packet(n, cap, 1500).unwrap()),
        Box::new(Wf2qPlus::new(n, cap).unwrap()),
        Box::new(Drr::new(n, cap).unwrap()),
        Box::new(Stfq::new(n, cap).unwrap()),
    ];
    for s in &mut schedulers {
        for (f, &w) in weights.iter().enumerate() {
            s.add_flow(f as u32, FlowConfig::weight(w)).unwrap();
        }
        let r = run(s.as_mut(), &trace, LINK);
        let rep = eiffel_sim::audit_with(
            &trace,
            &r,
            &eiffel_sim::Gps::for_run(&trace, &wf, &r),
            &wf,
            eiffel_sim::AuditOptions {
                window_ns: Some((0, window_ns)),
            },
        );
        let worst = rep
            .flows
            .iter()
            .map(|f| (f.share / f.phi - 1.0).abs())
            .fold(0.0, f64::max);
        println!(
            "{:6} worst |share/weight - 1| = {:.5}, Jain {:.6}",
            s.name(),
            worst,
            rep.jain
        );
        for f in &rep.flows {
            assert!(
                (f.share / f.phi - 1.0).abs() <= 0.01,
                "{}: flow {} share {} vs weight share {}",
                s.name(),
                f.flow,
                f.share,
                f.phi
            );
        }
        assert!(rep.jain > 0.999, "{}: Jain {}", s.name(), rep.jain);
    }
}

/// One flow with half the link sends a small packet now and then, while N - 1
/// weight-1 flows stay backlogged with 1500-byte packets. DRR makes the packet wait
/// for the rest of the round, up to (N - 1) quanta: its T-WFI grows linearly with
/// N (pspat.txt section 5.2, eq. (3)). QFQ's stays under its bound, which does not
/// depend on N.
#[test]
fn drr_wfi_grows_with_the_number_of_flows_and_qfq_does_not() {
    let r = LINK.bytes_per_ns();
    println!("   N   DRR T-WFI (us)  (N-1) L/R (us)   QFQ T-WFI (us)  QFQ bound (us)");
    let mut drr_prev = 0.0;
    for n in [2usize, 4, 8, 16, 32, 64] {
        let others = n - 1;
        let round_ns = others as f64 * 1500.0 / r;
        let mut arrivals = Vec::new();
        // Flow 0: 200 packets of 64 bytes, at irregular times over 200 rounds.
        let mut rng = SmallRng::seed_from_u64(n as u64);
        for i in 0..200u64 {
            let at = (i as f64 * round_ns * 1.37 + rng.gen_range(0.0..round_ns)) as u64;
            arrivals.push(Arrival {
                at,
                flow: 0,
                len: 64,
            });
        }
        let horizon_bytes = 200.0 * round_ns * 1.37 * r + 2.0 * round_ns * r;
        let per_flow = (horizon_bytes / 1500.0 / others as f64) as u32 + 4;
        for f in 1..n as u32 {
            arrivals.extend((0..per_flow).map(|_| Arrival {
                at: 0,
                flow: f,
                len: 1500,
            }));
        }
        let trace = Trace::new(arrivals);
        let mut weights = vec![others as f64];
        weights.extend(std::iter::repeat_n(1.0, others));
        let cap = trace.len();
        let flow0_t_wfi = |s: &mut dyn FlowScheduler| -> (f64, Report) {
            s.add_flow(0, FlowConfig::weight(others as u32).max_packet(64))
                .unwrap();
            for f in 1..n as u32 {
                s.add_flow(f, FlowConfig::weight(1).max_packet(1500))
                    .unwrap();
            }
            let run = run(s, &trace, LINK);
            let rep = audit(&trace, &run, &weights);
            (rep.flows[0].t_wfi_ns, rep)
        };
        let (drr, _) = flow0_t_wfi(&mut Drr::new(n as u32, cap).unwrap());
        let mut qfq = Qfq::with_max_packet(n as u32, cap, 1500).unwrap();
        let (q, rep) = flow0_t_wfi(&mut qfq);
        let sigma = qfq.core().slot_bytes(0).unwrap();
        let q_bound = (3.0 * sigma + 2.0 * f64::from(rep.max_len)) / r;
        println!(
            "{n:4} {:16.1} {:15.1} {:16.1} {:15.1}",
            drr / 1e3,
            round_ns / 1e3,
            q / 1e3,
            q_bound / 1e3
        );
        // DRR: the packet waits most of a round, less its guaranteed service time
        // 64 / (R / 2), and at most the round plus one packet in transmission.
        let guaranteed = 64.0 / (0.5 * r);
        assert!(
            drr >= 0.8 * round_ns - guaranteed,
            "N={n}: DRR T-WFI {drr} is not about a round {round_ns}"
        );
        assert!(
            drr <= round_ns + 1500.0 / r,
            "N={n}: DRR T-WFI {drr} above a round and a packet"
        );
        assert!(drr > drr_prev, "DRR's T-WFI must grow with N");
        drr_prev = drr;
        assert!(
            q <= q_bound,
            "N={n}: QFQ T-WFI {q} above its bound {q_bound}"
        );
        assert!(
            q_bound < 4.0 * 1500.0 / r,
            "QFQ's bound for a half-link flow is a few packets"
        );
    }
}

/// Equal flows in one QFQ group, all backlogged from t = 0, with packets whose
/// `l / phi` is exactly the slot size: timestamps are multiples of the slot, so the
/// rounding of qfq.txt eq. (5) is the identity, the group ordering reduces to the
/// flows' start times, and QFQ must serve exactly as WF²Q+ (qfq.txt section 4:
/// QFQ is WF²Q+ with rounded timestamps). Flows drain at different times.
#[test]
fn qfq_serves_like_wf2q_when_rounding_is_exact() {
    for (n, weight, len) in [
        (1u32, 1u32, 1024u32),
        (2, 1, 1024),
        (4, 4, 512),
        (8, 2, 2048),
        (16, 16, 64),
    ] {
        let mut rng = SmallRng::seed_from_u64(u64::from(n));
        let mut arrivals = Vec::new();
        for f in 0..n {
            let count = rng.gen_range(5..40);
            arrivals.extend((0..count).map(|_| Arrival {
                at: 0,
                flow: f,
                len,
            }));
        }
        let trace = Trace::new(arrivals);
        let cap = trace.len();
        let order = |s: &mut dyn FlowScheduler| {
            for f in 0..n {
                s.add_flow(f, FlowConfig::weight(weight).max_packet(len))
                    .unwrap();
            }
            run(s, &trace, LINK).order
        };
        let q = order(&mut Qfq::with_max_packet(n, cap, len).unwrap());
        let w = order(&mut Wf2qPlus::new(n, cap).unwrap());
        assert_eq!(q, w, "n={n} weight={weight} len={len}");
    }
}

/// The scope of the B-WFI bound, shown on a random case where it matters:
/// flow 1 has almost the whole link (weight 11787 against 3) and small packets
/// that often arrive while its previous packet is being transmitted. Each time
/// its queue empties it leaves WF²Q+'s set of backlogged flows; `V` jumps to the
/// other flow's start (eq. (3)), and on re-entry (eq. (2)) flow 1 starts a hair
/// after `V` (its `l/phi` exceeds the `l` that `V` advanced), so the other flow's
/// 1200-byte packet goes first. Over an interval in which flow 1 always owns
/// untransmitted bytes this repeats, and its fluid B-WFI exceeds the bound, while
/// over the intervals it stays queued (the proof's scope) it does not.
#[test]
fn wf2q_b_wfi_bound_holds_while_queued_not_over_fluid_backlog() {
    let case = random_case(52, 1500);
    assert_eq!(case.weights, [3, 11787]);
    let mut w = configure(Wf2qPlus::new(2, case.trace.len()).unwrap(), &case);
    let rep = audit(
        &case.trace,
        &run(&mut w, &case.trace, LINK),
        &weights_f64(&case),
    );
    let f = &rep.flows[1];
    let bound = 2.0 * f64::from(f.max_len) + 2.0 * f.phi * f64::from(rep.max_len);
    println!(
        "flow 1: fluid B-WFI {:.0}, queued B-WFI {:.0}, bound {bound:.0}",
        f.b_wfi_bytes, f.b_wfi_queued_bytes
    );
    assert!(f.b_wfi_queued_bytes <= bound);
    assert!(f.b_wfi_bytes > bound);
}
