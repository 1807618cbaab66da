//! Every example policy, loaded from `examples/policies/` and run with its
//! workload from `examples/workloads/`, checked against the definition of what it
//! configures: shares against weights, limits against their rate and burst
//! (packet by packet), strict priority, pFabric and EDF order, hClock
//! reservations, per-flow pacing, and the accounting invariant at every node.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

use eiffel_policy::run::{run_with, NodeReport, RunOptions, RunReport};
use eiffel_policy::{Policy, WorkloadFile, FIG6_POLICY, FIG6_WORKLOAD};
use eiffel_sched::{DropReason, Packet, PolicyTree};
use eiffel_sim::{Observer, Ticks};

fn example(name: &str) -> (Policy, WorkloadFile) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let policy = Policy::load(root.join("policies").join(format!("{name}.toml")))
        .unwrap_or_else(|e| panic!("{e}"));
    let workload = WorkloadFile::load(root.join("workloads").join(format!("{name}.toml")))
        .unwrap_or_else(|e| panic!("{e}"));
    (policy, workload)
}

/// Checks the tree's invariants every few hundred departures.
struct Invariants {
    sent: u64,
}

impl Observer<PolicyTree> for Invariants {
    fn on_sent(&mut self, tree: &PolicyTree, _: &Packet, _: Ticks, _: Ticks) {
        self.sent += 1;
        if self.sent % 499 == 0 {
            tree.check_invariants();
        }
    }
}

/// A packet-by-packet replica of a rate limit: every packet `pick` selects must
/// leave no earlier than the limit allows, given the shaper's precision `slack`.
struct Conforms<F: Fn(&Packet) -> bool> {
    name: &'static str,
    pick: F,
    rate: f64,
    tau: f64,
    slack: f64,
    link_bps: f64,
    /// Theoretical arrival time, ns.
    tat: f64,
    checked: u64,
}

impl<F: Fn(&Packet) -> bool> Conforms<F> {
    fn new(
        name: &'static str,
        rate: u64,
        burst: u64,
        mtu: u32,
        slack: u64,
        link: u64,
        pick: F,
    ) -> Self {
        Conforms {
            name,
            pick,
            rate: rate as f64,
            tau: burst.saturating_sub(u64::from(mtu)) as f64 * 8e9 / rate as f64,
            slack: slack as f64,
            link_bps: link as f64,
            tat: 0.0,
            checked: 0,
        }
    }
}

impl<F: Fn(&Packet) -> bool> Observer<PolicyTree> for Conforms<F> {
    fn on_sent(&mut self, _: &PolicyTree, pkt: &Packet, start: Ticks, _: Ticks) {
        if !(self.pick)(pkt) {
            return;
        }
        // The scheduler saw `now` rounded down to the nanosecond.
        let t = (start as f64 / self.link_bps).floor();
        assert!(
            t + self.slack + 1.0 >= self.tat - self.tau,
            "{}: packet {} sent at {t} ns, {} ns before its limit allows",
            self.name,
            self.checked,
            self.tat - self.tau - t
        );
        self.tat = self.tat.max(t) + f64::from(pkt.len) * 8e9 / self.rate;
        self.checked += 1;
    }
}

fn node<'a>(r: &'a RunReport, path: &str) -> &'a NodeReport {
    r.nodes
        .iter()
        .find(|n| n.path == path)
        .unwrap_or_else(|| panic!("no node {path}"))
}

fn within(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance * want,
        "{what}: {got:.0} vs {want:.0} (tolerance {:.1}%)",
        tolerance * 100.0
    );
}

/// The accounting invariant at every node and for the tree.
fn accounts(r: &RunReport) {
    for n in &r.nodes {
        assert_eq!(
            n.enqueued,
            n.dequeued + n.dropped + n.queued,
            "node {}",
            n.path
        );
    }
    let t = &r.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued, "totals");
    let root = &r.nodes.iter().find(|n| n.depth == 0).unwrap();
    assert_eq!((root.enqueued, root.dequeued), (t.enqueued, t.dequeued));
}

#[test]
fn fig6_shares_and_both_limits_on_one_path() {
    let (policy, w) = example("fig6");
    let spec = policy.spec().clone();
    let slack = policy.build().shaper_granularity();
    let opts = RunOptions::from_workload(&w);
    let link = opts.link_rate;
    let limit = |name: &str| spec.nodes[spec.find(name).unwrap()].limit.unwrap();
    let (gold, silver, video, bulk) = (
        policy.leaf("gold").unwrap(),
        policy.leaf("silver").unwrap(),
        policy.leaf("video").unwrap(),
        policy.leaf("bulk").unwrap(),
    );
    let (r, c, v) = (limit("root"), limit("capped"), limit("video"));
    let mut obs = (
        (
            Conforms::new("root", r.rate.bps(), r.burst, spec.mtu, slack, link, |_| {
                true
            }),
            Conforms::new(
                "capped",
                c.rate.bps(),
                c.burst,
                spec.mtu,
                slack,
                link,
                move |p| p.class == video || p.class == bulk,
            ),
        ),
        (
            Conforms::new(
                "video",
                v.rate.bps(),
                v.burst,
                spec.mtu,
                slack,
                link,
                move |p| p.class == video,
            ),
            Invariants { sent: 0 },
        ),
    );
    let report = run_with(&policy, &w, opts, |_| {}, &mut obs);
    assert!(obs.0 .0.checked > 10_000 && obs.1 .0.checked > 1_000);
    accounts(&report);
    let rate = |p: &str| node(&report, p).throughput_bps;
    within("paced root", rate("root"), 50e6, 0.01);
    within("internal limit", rate("root/capped"), 10e6, 0.01);
    within("leaf limit", rate("root/capped/video"), 7e6, 0.01);
    within(
        "bulk, the rest of capped",
        rate("root/capped/bulk"),
        3e6,
        0.02,
    );
    // gold and silver split what capped leaves of the root 2:1.
    within("gold", rate("root/gold"), 40e6 * 2.0 / 3.0, 0.02);
    within("silver", rate("root/silver"), 40e6 / 3.0, 0.02);
    assert!(gold != silver);
    // video offers 9 Mbit/s into a 7 Mbit/s limit: its leaf overflows.
    assert!(node(&report, "root/capped/video").drops["leaf_full"] > 0);
}

#[test]
fn wfq_shares_follow_weights() {
    let (policy, w) = example("wfq");
    let mut inv = Invariants { sent: 0 };
    let report = run_with(&policy, &w, RunOptions::from_workload(&w), |_| {}, &mut inv);
    accounts(&report);
    let link = 1e9;
    for (path, share) in [
        ("root/a", 0.1),
        ("root/b", 0.2),
        ("root/c", 0.3),
        ("root/d", 0.4),
        ("root/d/d1", 0.1),
        ("root/d/d2", 0.3),
    ] {
        within(path, node(&report, path).throughput_bps, link * share, 0.02);
    }
}

/// Strict priority: a packet leaves only when no higher class has one queued.
struct StrictOrder {
    priority: HashMap<u32, u32>,
    leaves: Vec<u32>,
    lower_served: u64,
}

impl Observer<PolicyTree> for StrictOrder {
    fn on_sent(&mut self, tree: &PolicyTree, pkt: &Packet, _: Ticks, _: Ticks) {
        let p = self.priority[&pkt.class];
        for &l in &self.leaves {
            if self.priority[&l] < p {
                let waiting = tree.node(l as usize).backlog.packets;
                assert_eq!(
                    waiting, 0,
                    "served priority {p} while leaf {l} (priority {}) holds {waiting} packets",
                    self.priority[&l]
                );
            }
        }
        if p > 0 {
            self.lower_served += 1;
        }
    }
}

#[test]
fn strict_priority_never_serves_a_lower_class_while_a_higher_one_waits() {
    let (policy, w) = example("strict");
    let spec = policy.spec();
    let leaves: Vec<u32> = ["voice", "video", "best_effort"]
        .iter()
        .map(|n| policy.leaf(n).unwrap())
        .collect();
    let priority = leaves
        .iter()
        .map(|&l| (l, spec.nodes[l as usize].priority))
        .collect();
    let mut obs = (
        StrictOrder {
            priority,
            leaves,
            lower_served: 0,
        },
        Invariants { sent: 0 },
    );
    let report = run_with(&policy, &w, RunOptions::from_workload(&w), |_| {}, &mut obs);
    accounts(&report);
    assert!(obs.0.lower_served > 1_000, "the lower classes were served");
    // Voice and video get all they offer; best effort the rest of the link.
    let f = |n: &str| report.flows.iter().find(|f| f.name == n).unwrap();
    within(
        "voice",
        f("voice").throughput_bps,
        f("voice").offered_bps,
        0.001,
    );
    let rest = 100e6 - f("voice").throughput_bps - f("video").throughput_bps;
    within("best effort", f("best_effort").throughput_bps, rest, 0.01);
}

/// A model of every flow's queued packets, fed by arrivals and drops.
#[derive(Default)]
struct Queued {
    flows: HashMap<(u32, u32), VecDeque<Packet>>,
    served: u64,
}

impl Queued {
    fn arrive(&mut self, pkt: &Packet) {
        self.flows
            .entry((pkt.class, pkt.flow))
            .or_default()
            .push_back(*pkt);
    }

    fn refuse(&mut self, pkt: &Packet) {
        let q = self.flows.get_mut(&(pkt.class, pkt.flow)).unwrap();
        assert_eq!(q.pop_back().map(|p| p.buffer), Some(pkt.buffer));
    }

    /// Removes the sent packet, which must be its flow's oldest.
    fn send(&mut self, pkt: &Packet) {
        let q = self.flows.get_mut(&(pkt.class, pkt.flow)).unwrap();
        let head = q.pop_front().expect("sent from a flow with nothing queued");
        assert_eq!(
            (head.arrival, head.remaining, head.deadline),
            (pkt.arrival, pkt.remaining, pkt.deadline),
            "flow {} reordered",
            pkt.flow
        );
        self.served += 1;
    }
}

/// pFabric (Eiffel Fig. 10): the flow served has the fewest remaining bytes among
/// its queued packets (at the queue's granularity), and no flow is reordered.
struct PfabricOrder {
    queued: Queued,
    granularity: u64,
}

impl Observer<PolicyTree> for PfabricOrder {
    fn on_arrival(&mut self, pkt: &Packet, _: Ticks) {
        self.queued.arrive(pkt);
    }
    fn on_drop(&mut self, pkt: &Packet, _: DropReason, _: Ticks) {
        self.queued.refuse(pkt);
    }
    fn on_sent(&mut self, _: &PolicyTree, pkt: &Packet, _: Ticks, _: Ticks) {
        // A flow's smallest remaining is its newest packet's (remaining only falls).
        let rank = |q: &VecDeque<Packet>| q.back().map(|p| p.remaining / self.granularity);
        let best = self.queued.flows.values().filter_map(rank).min().unwrap();
        let mine = rank(&self.queued.flows[&(pkt.class, pkt.flow)]).unwrap();
        assert_eq!(
            mine, best,
            "served a flow with more remaining packets than another"
        );
        self.queued.send(pkt);
    }
}

#[test]
fn pfabric_serves_the_fewest_remaining_packets_and_never_reorders() {
    let (policy, w) = example("pfabric");
    let granularity = policy.spec().nodes[0]
        .discipline
        .queue()
        .unwrap()
        .granularity
        .unwrap();
    let mut obs = (
        PfabricOrder {
            queued: Queued::default(),
            granularity,
        },
        Invariants { sent: 0 },
    );
    let report = run_with(&policy, &w, RunOptions::from_workload(&w), |_| {}, &mut obs);
    accounts(&report);
    assert!(obs.0.queued.served > 50_000);
    // Short flows finish far sooner than long ones.
    let fct = |n: &str| {
        report
            .flows
            .iter()
            .find(|f| f.name == n)
            .unwrap()
            .fct
            .unwrap()
    };
    assert!(fct("short").completed > 800);
    assert!(
        fct("short").p99_ns < 10_000_000,
        "short flows p99 FCT {}",
        fct("short").p99_ns
    );
}

/// EDF: the packet sent has the earliest deadline among the flows' heads (at
/// the queue's 10 us granularity), and no flow is reordered.
struct EdfOrder {
    queued: Queued,
}

impl Observer<PolicyTree> for EdfOrder {
    fn on_arrival(&mut self, pkt: &Packet, _: Ticks) {
        self.queued.arrive(pkt);
    }
    fn on_drop(&mut self, pkt: &Packet, _: DropReason, _: Ticks) {
        self.queued.refuse(pkt);
    }
    fn on_sent(&mut self, tree: &PolicyTree, pkt: &Packet, _: Ticks, _: Ticks) {
        let granularity = tree.node(pkt.class as usize).queues[0].config.granularity;
        let best = self
            .queued
            .flows
            .values()
            .filter_map(|q| q.front().map(|p| p.deadline / granularity))
            .min()
            .unwrap();
        assert_eq!(
            pkt.deadline / granularity,
            best,
            "not the earliest deadline"
        );
        self.queued.send(pkt);
    }
}

#[test]
fn edf_serves_the_earliest_deadline_first() {
    let (policy, w) = example("edf");
    let mut obs = (
        EdfOrder {
            queued: Queued::default(),
        },
        Invariants { sent: 0 },
    );
    let report = run_with(&policy, &w, RunOptions::from_workload(&w), |_| {}, &mut obs);
    accounts(&report);
    assert!(obs.0.queued.served > 20_000);
    let p99 = |n: &str| {
        report
            .flows
            .iter()
            .find(|f| f.name == n)
            .unwrap()
            .latency
            .p99_latency_ns
    };
    assert!(p99("urgent") < p99("interactive") && p99("interactive") < p99("background"));
}

/// The EDF example at 113% load: the backlog's deadlines spread wider than the
/// queue's automatic window, the overflow is reported per node, and a window
/// wide enough for the spread restores the earliest-deadline order.
#[test]
fn edf_reports_ranks_outside_the_window_and_a_wider_window_keeps_the_order() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let text = std::fs::read_to_string(root.join("workloads/edf.toml")).unwrap();
    let overloaded = text
        .replace("seed = 2", "seed = 5")
        .replace("rate = \"13Mbit\"", "rate = \"20Mbit\"");
    assert_ne!(
        overloaded, text,
        "the example workload changed: update this test"
    );
    let w = WorkloadFile::parse(&overloaded, "edf-overload.toml").unwrap();
    let (policy, _) = example("edf");
    let report = run_with(&policy, &w, RunOptions::from_workload(&w), |_| {}, &mut ());
    accounts(&report);
    assert!(node(&report, "flows").out_of_window > 0);

    let wide_text = std::fs::read_to_string(root.join("policies/edf.toml"))
        .unwrap()
        .replace("flows = 256", "flows = 256\nbuckets = 65536");
    let wide = Policy::parse(&wide_text, "edf-wide.toml").unwrap();
    let mut obs = (
        EdfOrder {
            queued: Queued::default(),
        },
        Invariants { sent: 0 },
    );
    let report = run_with(&wide, &w, RunOptions::from_workload(&w), |_| {}, &mut obs);
    accounts(&report);
    assert_eq!(node(&report, "flows").out_of_window, 0);
    assert!(obs.0.queued.served > 20_000);
}

#[test]
fn hclock_meets_reservations_before_sharing_the_rest() {
    let (policy, w) = example("hclock");
    let spec = policy.spec().clone();
    let slack = policy.build().shaper_granularity();
    let a = policy.leaf("a").unwrap();
    let la = spec.nodes[a as usize].limit.unwrap();
    let mut obs = (
        Conforms::new(
            "a",
            la.rate.bps(),
            la.burst,
            spec.mtu,
            slack,
            1_000_000_000,
            move |p| p.class == a,
        ),
        Invariants { sent: 0 },
    );
    let report = run_with(&policy, &w, RunOptions::from_workload(&w), |_| {}, &mut obs);
    accounts(&report);
    let rate = |p: &str| node(&report, p).throughput_bps;
    // By weight alone a would get 1/6 of the link; its 300 Mbit/s reservation is
    // a floor, so a gets 300 and b and c share the other 700 as 3:2 (mClock).
    within("a", rate("root/a"), 300e6, 0.02);
    within("b", rate("root/b"), 420e6, 0.02);
    within("c", rate("root/c"), 280e6, 0.02);
}

#[test]
fn hclock_limits_cap_and_the_excess_goes_to_the_others() {
    let (_, w) = example("hclock");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let text = std::fs::read_to_string(root.join("policies/hclock.toml")).unwrap();
    let capped = text.replace(
        "reservation = \"100Mbit\"\nweight = 3\n",
        "reservation = \"100Mbit\"\nweight = 3\nlimit = \"400Mbit\"\nburst = \"15kB\"\n",
    );
    assert_ne!(capped, text, "the example's tenant b changed");
    let policy = Policy::parse(&capped, "hclock-capped.toml").unwrap_or_else(|e| panic!("{e}"));
    let report = run_with(
        &policy,
        &w,
        RunOptions::from_workload(&w),
        |_| {},
        &mut Invariants { sent: 0 },
    );
    accounts(&report);
    let rate = |p: &str| node(&report, p).throughput_bps;
    within("a", rate("root/a"), 300e6, 0.02);
    within("b", rate("root/b"), 400e6, 0.02);
    within("c", rate("root/c"), 300e6, 0.02);
}

/// Per-flow pacing: every flow of the paced leaf conforms to its own limit, and
/// the aggregate after the first packets is the sum of the rates.
struct Pacing {
    link_bps: f64,
    rate: f64,
    slack: f64,
    tat: Vec<f64>,
    /// Bytes sent from `from` on.
    bytes: u64,
    from: f64,
}

impl Observer<PolicyTree> for Pacing {
    fn on_sent(&mut self, _: &PolicyTree, pkt: &Packet, start: Ticks, _: Ticks) {
        let t = (start as f64 / self.link_bps).floor();
        let tat = &mut self.tat[pkt.flow as usize];
        assert!(
            t + self.slack + 1.0 >= *tat,
            "flow {} sent {} ns early",
            pkt.flow,
            *tat - t
        );
        *tat = tat.max(t) + f64::from(pkt.len) * 8e9 / self.rate;
        if t >= self.from {
            self.bytes += u64::from(pkt.len);
        }
    }
}

#[test]
fn pacing_20k_flows_with_one_shaper() {
    let (policy, w) = example("pacing-20k-flows");
    let pf = policy.spec().nodes[0].per_flow.unwrap();
    assert_eq!(pf.max_flows, 20_000);
    let tree = policy.build();
    assert_eq!(tree.shaper_granularity(), 100_000, "2 s in 20,000 slots");
    let opts = RunOptions::from_workload(&w);
    let mut obs = (
        Pacing {
            link_bps: opts.link_rate as f64,
            rate: pf.flow_limit.unwrap().rate.bps() as f64,
            slack: tree.shaper_granularity() as f64,
            tat: vec![0.0; 20_000],
            bytes: 0,
            from: 100e6,
        },
        Invariants { sent: 0 },
    );
    let report = run_with(&policy, &w, opts, |_| {}, &mut obs);
    accounts(&report);
    let steady = obs.0.bytes as f64 * 8.0 / (opts.duration as f64 / 1e9 - 0.1);
    within(
        "aggregate of 20k paced flows",
        steady,
        20_000.0 * 400e3,
        0.01,
    );
}

#[test]
fn the_built_in_demo_runs_and_reports_consistent_json() {
    let policy = Policy::parse(FIG6_POLICY, "fig6.toml").unwrap();
    let w = WorkloadFile::parse(FIG6_WORKLOAD, "fig6-workload.toml").unwrap();
    let mut opts = RunOptions::from_workload(&w);
    opts.duration = 2_000_000_000;
    let a = eiffel_policy::run(&policy, &w, opts, |_| {});
    let b = eiffel_policy::run(&policy, &w, opts, |_| {});
    assert_eq!(a, b, "deterministic");
    accounts(&a);
    let json: serde_json::Value = serde_json::to_value(&a).unwrap();
    for n in json["nodes"].as_array().unwrap() {
        assert!(n["path"].is_string() && n["throughput_bps"].is_number());
        assert!(n.get("limit_bps").is_some());
    }
    assert!(json["nodes"][1]["limit_bps"].is_null());
    for f in json["flows"].as_array().unwrap() {
        assert!(f["name"].is_string() && f["throughput_bps"].is_number());
        assert!(f["p99_latency_ns"].is_number() && f["dropped"].is_number());
    }
    let t = &json["totals"];
    let n = |k: &str| t[k].as_u64().unwrap();
    assert_eq!(n("enqueued"), n("dequeued") + n("dropped") + n("queued"));
    // Every leaf has a rates-over-time series.
    assert_eq!(a.series.len(), 4);
    assert!(a.series.iter().all(|s| s.rates_bps.len() == 100));
}

fn flow<'a>(r: &'a RunReport, name: &str) -> &'a eiffel_policy::run::FlowReport {
    r.flows
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no flow group {name}"))
}

/// Runs a calendar-queue example with invariant checks and the accounting check.
fn run_cq(name: &str) -> RunReport {
    let (policy, w) = example(name);
    let mut inv = Invariants { sent: 0 };
    let report = run_with(&policy, &w, RunOptions::from_workload(&w), |_| {}, &mut inv);
    accounts(&report);
    assert!(inv.sent > 1_000, "{name}: only {} packets sent", inv.sent);
    report
}

#[test]
fn cq_wfq_shares_follow_weights() {
    let r = run_cq("cq-wfq");
    within("web", node(&r, "root/web").throughput_bps, 750e6, 0.02);
    within("bulk", node(&r, "root/bulk").throughput_bps, 250e6, 0.02);
}

#[test]
fn cq_edf_meets_the_deadlines_it_can() {
    let r = run_cq("cq-edf");
    // Control at top priority, then 3.5 Mbit/s of deadline traffic on a 100 Mbit/s
    // link: every deadline class keeps its p99 well within its deadline.
    assert!(flow(&r, "urgent").latency.p99_latency_ns < 2_000_000);
    assert!(flow(&r, "relaxed").latency.p99_latency_ns < 10_000_000);
    assert!(flow(&r, "urgent").latency.p99_latency_ns < flow(&r, "relaxed").latency.p99_latency_ns);
}

#[test]
fn cq_pfabric_fair_finishes_short_flows_without_starving_long_ones() {
    let r = run_cq("cq-pfabric-fair");
    let short = flow(&r, "short");
    let done = short.fct.as_ref().expect("finite flows report completions");
    assert_eq!(done.completed, done.flows, "every short flow completes");
    assert!(
        flow(&r, "long").throughput_bps > 1e9,
        "long flows keep a share"
    );
}

#[test]
fn cq_policer_holds_each_unit_to_its_rate_and_counts_drops() {
    let r = run_cq("cq-policer");
    // Ten tenant flows policed at 20 Mbit/s each, gold (weight 4) and silver at
    // 50 Mbit/s per unit of weight: the excess is dropped and counted.
    within(
        "tenants",
        node(&r, "root/tenants").throughput_bps,
        200e6,
        0.01,
    );
    within(
        "gold",
        node(&r, "root/classes/gold").throughput_bps,
        200e6,
        0.01,
    );
    within(
        "silver",
        node(&r, "root/classes/silver").throughput_bps,
        50e6,
        0.01,
    );
    for g in ["tenant", "gold", "silver"] {
        let f = flow(&r, g);
        assert_eq!(
            f.drops.get("policer").copied().unwrap_or(0),
            f.dropped,
            "{g}: every drop is a policer drop"
        );
        assert!(f.dropped > 0, "{g} offers more than its rate");
    }
}

/// The calendar-queue paper's Fig. 9 shape: the burst allowance shortens short
/// flows' completion times among long flows, without changing the long flows'
/// throughput; without it, cq-wfq behaves like exact WFQ.
#[test]
fn fig9_burst_allowance_speeds_up_short_flows() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let (burst, w) = example("fig9-burst");
    let plain = Policy::load(root.join("policies/fig9-cq.toml")).unwrap_or_else(|e| panic!("{e}"));
    let exact = Policy::load(root.join("policies/fig9-wfq.toml")).unwrap_or_else(|e| panic!("{e}"));
    let opts = RunOptions::from_workload(&w);
    let run = |p: &Policy| {
        let mut inv = Invariants { sent: 0 };
        let r = run_with(p, &w, opts, |_| {}, &mut inv);
        accounts(&r);
        r
    };
    let (b, c, e) = (run(&burst), run(&plain), run(&exact));
    let mean_fct = |r: &RunReport| {
        let f = flow(r, "short")
            .fct
            .as_ref()
            .expect("short flows are finite");
        assert_eq!(
            f.completed, f.flows,
            "{}: every short flow completes",
            r.policy
        );
        f.mean_ns
    };
    assert!(
        mean_fct(&b) * 4.0 < mean_fct(&c),
        "burst {} vs plain {}",
        mean_fct(&b),
        mean_fct(&c)
    );
    within("cq-wfq vs exact wfq", mean_fct(&c), mean_fct(&e), 0.05);
    for r in [&c, &e] {
        within(
            "long flows keep their throughput",
            flow(&b, "long").throughput_bps,
            flow(r, "long").throughput_bps,
            0.01,
        );
    }
}

/// Every file in `examples/policies/` (TOML or DOT) compiles, and each has a
/// workload in `examples/workloads/` (`x.dot` and `x-expr.toml` use `x.toml`'s)
/// except the live-traffic examples (`live-*.toml`, which
/// classify by header fields) and Fig. 9's, which share `fig9-burst`'s.
#[test]
fn every_example_policy_compiles() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut names: Vec<String> = std::fs::read_dir(root.join("policies"))
        .expect("examples/policies")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml") || n.ends_with(".dot"))
        .collect();
    names.sort();
    assert!(names.len() >= 15, "{names:?}");
    for name in names {
        Policy::load(root.join("policies").join(&name)).unwrap_or_else(|e| panic!("{e}"));
        let mirrored = (name.strip_suffix("-expr.toml"))
            .or_else(|| name.strip_suffix(".dot"))
            .map(|b| format!("{b}.toml"));
        let workload = if let Some(m) = &mirrored {
            m
        } else if name.starts_with("fig9-") {
            "fig9-burst.toml"
        } else if name.starts_with("live-") {
            continue;
        } else {
            &name
        };
        WorkloadFile::load(root.join("workloads").join(workload)).unwrap_or_else(|e| panic!("{e}"));
    }
}
