//! End-to-end tests of the PSPAT runtime: delivery, backpressure, policy drops,
//! idle sleep, shutdown accounting, and a many-thread stress test.

use eiffel_pspat::{
    Aggregation, Client, Config, CountingSink, Dispatch, Error, Pspat, SendError, ShutdownMode,
    Transmit,
};
use eiffel_sched::{Backlog, Counters, DropReason, Dropped, Fifo, Nanos, Packet, Scheduler};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Sends `pkt`, retrying while the mailbox is full or a drop report comes back.
/// Returns the number of drops reported meanwhile.
fn send_retrying(client: &mut Client, mut pkt: Packet) -> u64 {
    let mut reported = 0;
    loop {
        match client.send(pkt) {
            Ok(()) => return reported,
            Err(SendError::Full(p)) => {
                pkt = p;
                std::thread::yield_now();
            }
            Err(SendError::PolicyDrops { dropped, packet }) => {
                reported += dropped;
                pkt = packet;
            }
            Err(SendError::Closed(_)) => panic!("closed while sending"),
        }
    }
}

/// Checks that each flow's sequence numbers (carried in `buffer`) only grow, and
/// counts packets per flow.
#[derive(Debug, Default)]
struct OrderSink {
    last: HashMap<u32, u32>,
    per_flow: HashMap<u32, u64>,
    out_of_order: u64,
}

impl Transmit for OrderSink {
    fn transmit(&mut self, batch: &[Packet], _now: Nanos) {
        for p in batch {
            if let Some(&prev) = self.last.get(&p.flow) {
                if p.buffer <= prev {
                    self.out_of_order += 1;
                }
            }
            self.last.insert(p.flow, p.buffer);
            *self.per_flow.entry(p.flow).or_default() += 1;
        }
    }
}

/// A scheduler that records what the arbiter asked of it: when each departure
/// was decided (the time of the dequeue, which is what a link or a shaper
/// bounds) and each `next_ready` (which the arbiter asks before it sleeps). A
/// sink sees a packet later than its decision, by as long as the arbiter's
/// thread waited for a core in between: on a busy machine, milliseconds, which
/// can bring the hand-offs of two departures decided 5 ms apart within
/// microseconds of each other.
struct Recorded<S> {
    inner: S,
    log: Arc<Mutex<Log>>,
}

#[derive(Debug, Default)]
struct Log {
    /// The time of each dequeue that returned a packet.
    decided: Vec<Nanos>,
    /// Each `next_ready(now)`: `now` and the answer.
    asked: Vec<(Nanos, Option<Nanos>)>,
}

impl<S> Recorded<S> {
    fn new(inner: S) -> (Self, Arc<Mutex<Log>>) {
        let log = Arc::default();
        let me = Recorded {
            inner,
            log: Arc::clone(&log),
        };
        (me, log)
    }
}

impl<S: Scheduler> Scheduler for Recorded<S> {
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Dropped> {
        self.inner.enqueue(pkt, now)
    }

    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        let pkt = self.inner.dequeue(now)?;
        self.log.lock().unwrap().decided.push(now);
        Some(pkt)
    }

    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        let next = self.inner.next_ready(now);
        self.log.lock().unwrap().asked.push((now, next));
        next
    }

    fn backlog(&self) -> Backlog {
        self.inner.backlog()
    }

    fn counters(&self) -> &Counters {
        self.inner.counters()
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }
}

/// Checks that each packet reached the sink no earlier than its departure was
/// decided (the arbiter never decides at a time still to come).
fn handed_on_after_decided(stamps: &[Nanos], decided: &[Nanos]) {
    assert_eq!(stamps.len(), decided.len(), "one decision per packet");
    for (i, (s, d)) in stamps.iter().zip(decided).enumerate() {
        assert!(s >= d, "packet {i} handed on at {s}, decided at {d}");
    }
}

fn small_config() -> Config {
    Config {
        link_rate_bps: 100_000_000_000,
        mailbox_capacity: 32,
        max_clients: 8,
        tx_capacity: 64,
        idle_spin: Duration::from_micros(20),
        ..Config::default()
    }
}

#[test]
fn delivers_in_order_inline_and_with_dispatchers() {
    for dispatch in [
        Dispatch::Inline(OrderSink::default()),
        Dispatch::Threads(vec![OrderSink::default(), OrderSink::default()]),
    ] {
        let rt = Pspat::start(small_config(), Fifo::new(1024), dispatch).unwrap();
        let mut clients: Vec<Client> = (0..3).map(|_| rt.client().unwrap()).collect();
        for seq in 1..=500u32 {
            for (flow, c) in clients.iter_mut().enumerate() {
                assert_eq!(
                    send_retrying(c, Packet::new(flow as u32, 100).buffer(seq)),
                    0
                );
            }
        }
        let sent: Vec<u64> = clients.iter().map(|c| c.stats().sent).collect();
        drop(clients);
        let report = rt.shutdown(ShutdownMode::Drain);
        let mut per_flow: HashMap<u32, u64> = HashMap::new();
        for sink in &report.sinks {
            assert_eq!(sink.out_of_order, 0);
            for (&f, &n) in &sink.per_flow {
                *per_flow.entry(f).or_default() += n;
            }
        }
        for (i, &s) in sent.iter().enumerate() {
            assert_eq!(s, 500);
            assert_eq!(report.clients[i].delivered, 500);
            assert_eq!(per_flow[&(i as u32)], 500);
        }
        let c = report.scheduler_counters();
        assert_eq!(c.enqueued, 1500);
        assert_eq!(c.dequeued, 1500);
    }
}

trait SchedulerCounters {
    fn scheduler_counters(&self) -> eiffel_sched::Counters;
}

impl<X> SchedulerCounters for eiffel_pspat::Report<Fifo, X> {
    fn scheduler_counters(&self) -> eiffel_sched::Counters {
        use eiffel_sched::Scheduler;
        *self.scheduler.counters()
    }
}

#[test]
fn full_mailbox_is_reported_at_once_and_bounds_packets_in_flight() {
    // 1 kbit/s: a 1500-byte packet takes 12 s, so the scheduler keeps them
    // however long the client thread waits for a core while it fills the
    // mailbox.
    let cfg = Config {
        link_rate_bps: 1_000,
        ..small_config()
    };
    let rt = Pspat::start(cfg, Fifo::new(1024), Dispatch::Inline(CountingSink::new(1))).unwrap();
    let mut c = rt.client().unwrap();
    let cap = c.capacity();
    let mut accepted = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    // Packets read by the arbiter keep their slots until released, so at most
    // `cap` (+ the one on the link) are accepted before the mailbox reports full.
    loop {
        match c.send(Packet::new(0, 1500)) {
            Ok(()) => accepted += 1,
            Err(SendError::Full(p)) => {
                assert_eq!(p.len, 1500);
                break;
            }
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < deadline, "mailbox never filled");
    }
    assert!(
        accepted >= cap && accepted <= cap + 2,
        "accepted {accepted}, capacity {cap}"
    );
    assert_eq!(c.stats().full, 1);
    drop(c);
    let report = rt.shutdown(ShutdownMode::Discard);
    let t = report.totals();
    assert_eq!(t.received, accepted as u64);
    assert_eq!(
        t.delivered + t.dropped.get(DropReason::Shutdown),
        accepted as u64
    );
}

#[test]
fn policy_drops_are_reported_on_the_next_send() {
    // A scheduler with room for 2 packets and a slow link (12 s per packet):
    // most packets are dropped by the scheduler (QueueFull), which the client
    // learns on its next send. The ten go in one batch: sent one by one, the
    // arbiter could read and drop some before the last was sent, and that send
    // would report them.
    let cfg = Config {
        link_rate_bps: 1_000,
        ..small_config()
    };
    let rt = Pspat::start(cfg, Fifo::new(2), Dispatch::Inline(CountingSink::new(1))).unwrap();
    let mut c = rt.client().unwrap();
    let batch = [Packet::new(0, 1500); 10];
    assert_eq!(c.send_batch(&batch).unwrap(), 10, "the mailbox holds 10");
    // Wait until the arbiter has read all ten.
    let deadline = Instant::now() + Duration::from_secs(5);
    while rt.stats().received < 10 {
        assert!(Instant::now() < deadline);
        std::thread::yield_now();
    }
    match c.send(Packet::new(0, 1500).buffer(77)) {
        Err(SendError::PolicyDrops { dropped, packet }) => {
            assert!(dropped >= 7, "dropped {dropped}");
            assert_eq!(packet.buffer, 77, "the packet is handed back");
        }
        other => panic!("expected a drop report, got {other:?}"),
    }
    let reported = c.stats().drops_reported;
    drop(c);
    let report = rt.shutdown(ShutdownMode::Discard);
    let t = report.totals();
    assert_eq!(t.received, 10);
    assert_eq!(t.dropped.get(DropReason::QueueFull), reported);
    assert_eq!(t.delivered + t.dropped.total(), 10);
}

#[test]
fn arbiter_sleeps_when_idle_and_a_send_wakes_it() {
    let sink = CountingSink::new(1);
    let counters = sink.counters();
    let rt = Pspat::start(small_config(), Fifo::new(64), Dispatch::Inline(sink)).unwrap();
    let mut c = rt.client().unwrap();
    for round in 1..=3u64 {
        // Idle well past Tw (20 us): the arbiter goes to sleep.
        let deadline = Instant::now() + Duration::from_secs(5);
        while rt.stats().sleeps < round {
            assert!(Instant::now() < deadline, "arbiter never slept");
            std::thread::sleep(Duration::from_millis(1));
        }
        send_retrying(&mut c, Packet::new(0, 64));
        let deadline = Instant::now() + Duration::from_secs(5);
        while counters.packets() < round {
            assert!(Instant::now() < deadline, "a send did not wake the arbiter");
            std::thread::yield_now();
        }
    }
    drop(c);
    rt.shutdown(ShutdownMode::Drain);
}

#[test]
fn the_link_rate_is_not_exceeded() {
    // 100 packets of 1250 bytes at 100 Mbit/s: 100 us each, 10 ms in all. The last
    // can be released no earlier than 9.9 ms after the first.
    let cfg = Config {
        link_rate_bps: 100_000_000,
        ..small_config()
    };
    #[derive(Default)]
    struct Stamps(Vec<Nanos>);
    impl Transmit for Stamps {
        fn transmit(&mut self, batch: &[Packet], now: Nanos) {
            self.0.extend(batch.iter().map(|_| now));
        }
    }
    let (fifo, log) = Recorded::new(Fifo::new(256));
    let rt = Pspat::start(cfg, fifo, Dispatch::Inline(Stamps::default())).unwrap();
    let mut c = rt.client().unwrap();
    for _ in 0..100 {
        send_retrying(&mut c, Packet::new(0, 1250));
    }
    drop(c);
    let report = rt.shutdown(ShutdownMode::Drain);
    let stamps = &report.sinks[0].0;
    assert_eq!(stamps.len(), 100);
    let log = log.lock().unwrap();
    let decided = &log.decided;
    handed_on_after_decided(stamps, decided);
    let span = decided[99] - decided[0];
    assert!(span >= 9_900_000, "100 packets released in {span} ns");
}

#[test]
fn client_handles_are_limited_and_recycled() {
    let rt = Pspat::start(
        small_config(),
        Fifo::new(64),
        Dispatch::Inline(CountingSink::new(1)),
    )
    .unwrap();
    let clients: Vec<Client> = (0..8).map(|_| rt.client().unwrap()).collect();
    assert!(matches!(rt.client(), Err(Error::TooManyClients { max: 8 })));
    let index = clients[3].index();
    drop(clients);
    let mut again = rt.client().unwrap();
    send_retrying(&mut again, Packet::new(0, 100));
    assert!(index < 8);
    drop(again);
    let report = rt.shutdown(ShutdownMode::Drain);
    assert_eq!(report.totals().delivered, 1);
}

#[test]
fn dropping_the_runtime_stops_its_threads() {
    let rt = Pspat::start(
        small_config(),
        Fifo::new(64),
        Dispatch::Threads(vec![CountingSink::new(1)]),
    )
    .unwrap();
    let mut c = rt.client().unwrap();
    send_retrying(&mut c, Packet::new(0, 100));
    drop(c);
    drop(rt);
}

#[test]
fn invalid_configuration_is_refused() {
    let bad = Config {
        max_clients: 0,
        ..Config::default()
    };
    let err = Pspat::start(bad, Fifo::new(1), Dispatch::Inline(CountingSink::new(0))).unwrap_err();
    assert!(err.to_string().contains("max_clients"), "{err}");
    let err = Pspat::start(
        Config::default(),
        Fifo::new(1),
        Dispatch::<CountingSink>::Threads(vec![]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("dispatch"), "{err}");
}

/// Many client threads through a small scheduler (policy drops) and two
/// dispatchers: per-client order holds and every packet sent is delivered or
/// dropped with a reason.
#[test]
fn stress_many_clients_order_and_accounting() {
    let threads = 16;
    let per_client: u32 = 3_000;
    let cfg = Config {
        // 200-byte packets at 2 Gbit/s: 1.25 Mpps, slower than the clients, so the
        // scheduler fills up and drops.
        link_rate_bps: 2_000_000_000,
        mailbox_capacity: 64,
        max_clients: threads,
        tx_capacity: 128,
        ..Config::default()
    };
    // Room for fewer packets than the mailboxes hold: the scheduler drops some.
    let rt = Pspat::start(
        cfg,
        Fifo::new(256),
        Dispatch::Threads(vec![OrderSink::default(), OrderSink::default()]),
    )
    .unwrap();
    // All handles first: a handle dropped early would hand its index to the next.
    let clients: Vec<Client> = (0..threads).map(|_| rt.client().unwrap()).collect();
    let handles: Vec<_> = clients
        .into_iter()
        .map(|mut c| {
            std::thread::spawn(move || {
                let flow = c.index();
                let mut reported = 0;
                for seq in 1..=per_client {
                    reported += send_retrying(&mut c, Packet::new(flow, 200).buffer(seq));
                }
                (flow, c.stats(), reported)
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let report = rt.shutdown(ShutdownMode::Drain);
    let mut delivered_by_sink: HashMap<u32, u64> = HashMap::new();
    for sink in &report.sinks {
        assert_eq!(sink.out_of_order, 0, "a client's packets were reordered");
        for (&f, &n) in &sink.per_flow {
            *delivered_by_sink.entry(f).or_default() += n;
        }
    }
    for (flow, stats, reported) in results {
        let r = &report.clients[flow as usize];
        assert_eq!(stats.sent, u64::from(per_client));
        assert_eq!(stats.drops_reported, reported);
        assert_eq!(
            r.received, stats.sent,
            "client {flow}: sent = read by the arbiter"
        );
        assert_eq!(
            stats.sent,
            r.delivered + r.dropped.total(),
            "client {flow}: sent = delivered + dropped"
        );
        assert_eq!(r.dropped.total(), r.dropped.get(DropReason::QueueFull));
        assert!(reported <= r.dropped.total());
        assert_eq!(
            delivered_by_sink.get(&flow).copied().unwrap_or(0),
            r.delivered
        );
    }
    let t = report.totals();
    assert_eq!(report.stats.decisions, t.delivered);
    assert_eq!(report.stats.dropped, t.dropped.total());
}

/// Records the runtime clock at which each packet was handed to the sink.
#[derive(Debug, Default)]
struct TimedSink {
    times: std::sync::Arc<std::sync::Mutex<Vec<Nanos>>>,
}

impl Transmit for TimedSink {
    fn transmit(&mut self, batch: &[Packet], now: Nanos) {
        let mut times = self.times.lock().unwrap();
        times.extend(batch.iter().map(|_| now));
    }
}

/// A tree of one leaf, the root, limited to one 1500-byte packet every
/// `interval_ms` ms.
fn paced_tree(interval_ms: u64) -> eiffel_sched::PolicyTree {
    use eiffel_sched::tree::{NodeSpec, RateLimit, TreeSpec};
    let mut spec = TreeSpec::new(64);
    let mut root = NodeSpec::new("root", None);
    root.limit = Some(RateLimit {
        rate: eiffel_sched::Rate::from_bps(1500 * 8 * 1000 / interval_ms),
        burst: 1500,
    });
    spec.add(root);
    eiffel_sched::PolicyTree::new(spec).unwrap()
}

/// The arbiter sleeps exactly until the next departure or the next arrival: an idle
/// runtime does not wake up at all, and a shaped backlog wakes it once per
/// departure, by its timer, never before the departure is due.
#[test]
fn arbiter_sleeps_until_the_next_departure_or_arrival_without_polling() {
    let sink = TimedSink::default();
    let times = std::sync::Arc::clone(&sink.times);
    let cfg = Config {
        link_rate_bps: 10_000_000_000,
        max_clients: 2,
        ..Config::default()
    };
    let tw = cfg.idle_spin.as_nanos() as Nanos;
    let (tree, log) = Recorded::new(paced_tree(5));
    let rt = Pspat::start(cfg, tree, Dispatch::Inline(sink)).unwrap();
    let mut client = rt.client().unwrap();

    // Idle: after the start-up spin the arbiter sleeps once and stays asleep. Its
    // statistics are published before it sleeps; a fixed wait instead could end
    // before a thread that waited for a core has finished its spin.
    let deadline = Instant::now() + Duration::from_secs(5);
    while rt.stats().sleeps == 0 {
        assert!(Instant::now() < deadline, "the idle arbiter never slept");
        std::thread::sleep(Duration::from_millis(1));
    }
    let before = rt.stats();
    std::thread::sleep(Duration::from_millis(300));
    let idle = rt.stats();
    assert_eq!(
        idle.rounds, before.rounds,
        "an idle arbiter ran rounds: {before:?} -> {idle:?}"
    );
    assert_eq!(idle.sleeps, before.sleeps, "{before:?} -> {idle:?}");
    assert_eq!(idle.timer_wakeups, before.timer_wakeups);

    // Shaped: 10 packets at once (one batch: one arrival for the arbiter,
    // however the client thread is scheduled), released one per 5 ms.
    const N: usize = 10;
    let batch: Vec<Packet> = (0..N as u32)
        .map(|seq| Packet::new(0, 1500).buffer(seq))
        .collect();
    assert_eq!(
        client.send_batch(&batch).unwrap(),
        N,
        "the mailbox holds 10"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while times.lock().unwrap().len() < N && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(client);
    let report = rt.shutdown(ShutdownMode::Drain);
    assert_eq!(report.totals().delivered, N as u64);
    // The counts up to the end: the arbiter publishes a round's counts after it
    // hands the round's packets on, so the sink's count alone does not say
    // that the last wake-up is counted yet.
    let end = report.stats;
    let times = times.lock().unwrap().clone();
    assert_eq!(times.len(), N, "all packets delivered");
    let log = log.lock().unwrap();
    let decided = &log.decided;
    handed_on_after_decided(&times, decided);
    // GCRA with a one-packet burst: the first leaves at once, each later one 5 ms
    // after the previous, at most one shaper slot (15 us) early.
    for w in decided.windows(2) {
        assert!(
            w[1] - w[0] >= 5_000_000 - 2 * 16_000,
            "released early: {decided:?}"
        );
    }
    // The departures the arbiter slept for: after the previous one it asked for
    // the next with more than Tw to wait, so it slept until then, woken by its
    // timer (no client sends and no command runs to wake it otherwise). On an
    // idle machine that is every departure but the first; a thread that lost
    // its core for milliseconds after a departure may find the next one due
    // without having slept.
    let slept_for = decided
        .windows(2)
        .filter(|w| {
            log.asked.iter().any(|&(now, next)| {
                (w[0]..w[1]).contains(&now) && next.is_some_and(|t| t > now + tw)
            })
        })
        .count() as u64;
    let timer = end.timer_wakeups - idle.timer_wakeups;
    let sleeps = end.sleeps - idle.sleeps;
    assert!(
        (slept_for..=N as u64 + 1).contains(&timer),
        "{timer} timer wake-ups for {N} departures, {slept_for} slept for: {idle:?} -> {end:?}"
    );
    // One sleep per departure slept for, and the last one, with nothing left.
    assert!(
        sleeps <= N as u64 + 2,
        "{sleeps} sleeps for {N} departures: {idle:?} -> {end:?}"
    );
    // Between departures the arbiter spins Tw (50 rounds of 1 us) and sleeps: far
    // fewer rounds than 1 us polling over 45 ms would run.
    let rounds = end.rounds - idle.rounds;
    assert!(rounds < 45_000 / 4, "{rounds} rounds: polling?");
}

/// `with_scheduler` runs on the arbiter, wakes it when it sleeps, and a closure
/// that replaces the scheduler keeps every packet accounted: moved packets are
/// delivered, dropped ones reach the drop hook with their own buffer.
#[test]
fn commands_replace_the_scheduler_and_drops_reach_the_hook() {
    let dropped = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let hook_dropped = std::sync::Arc::clone(&dropped);
    let cfg = Config {
        // 1500 bytes take 120 ms: the scheduler keeps all but the first packet
        // until the command runs, unless the machine stalls the test for a
        // second; the final drain waits for the first one at most.
        link_rate_bps: 100_000,
        max_clients: 2,
        ..Config::default()
    };
    let sink = CountingSink::new(1);
    let counters = sink.counters();
    let rt = Pspat::start_with_drop_hook(
        cfg,
        Fifo::new(64),
        Dispatch::Inline(sink),
        Some(Box::new(move |p: Packet, r: DropReason| {
            hook_dropped.lock().unwrap().push((p.buffer, r));
        })),
    )
    .unwrap();
    // An idle, sleeping arbiter runs a command at once.
    std::thread::sleep(Duration::from_millis(20));
    let backlog = rt
        .with_scheduler(|ctl| eiffel_sched::Scheduler::backlog(ctl.scheduler()).packets)
        .unwrap();
    assert_eq!(backlog, 0);
    assert_eq!(rt.stats().commands, 1);

    let mut client = rt.client().unwrap();
    for seq in 100..110u32 {
        send_retrying(&mut client, Packet::new(0, 1500).buffer(seq));
    }
    // The arbiter runs a command before it reads the mailboxes: wait until it
    // has read all ten, so that the last one is in the scheduler.
    let deadline = Instant::now() + Duration::from_secs(5);
    while rt.stats().received < 10 {
        assert!(
            Instant::now() < deadline,
            "the arbiter never read the packets"
        );
        std::thread::yield_now();
    }
    // Move everything into a fresh FIFO, dropping the last packet, and speed the
    // link up.
    let (moved, gone) = rt
        .with_scheduler(|ctl| {
            use eiffel_sched::Scheduler;
            let now = ctl.now();
            let mut old = std::mem::replace(ctl.scheduler(), Fifo::new(64));
            let mut taken = Vec::new();
            while let Some(p) = old.dequeue(now) {
                taken.push(p);
            }
            let last = taken.pop().expect("packets held by a slow link");
            for p in &taken {
                ctl.scheduler().enqueue(*p, now).unwrap();
            }
            ctl.drop_packet(last, DropReason::Evicted);
            ctl.set_link_rate(10_000_000_000).unwrap();
            assert!(ctl.set_link_rate(0).is_err());
            (taken.len() as u64, 1u64)
        })
        .unwrap();
    assert!(moved >= 1);
    drop(client);
    let report = rt.shutdown(ShutdownMode::Drain);
    let totals = report.totals();
    assert_eq!(totals.received, 10);
    assert_eq!(totals.dropped.get(DropReason::Evicted), gone);
    assert_eq!(totals.delivered + gone, 10);
    assert_eq!(counters.packets(), totals.delivered);
    assert_eq!(
        *dropped.lock().unwrap(),
        vec![(109, DropReason::Evicted)],
        "the hook sees the packet's own buffer"
    );
}

/// A discarding shutdown drops the packets a shaper still holds back (they are not
/// eligible at any time before their release) instead of leaving them behind.
#[test]
fn discard_drops_what_a_shaper_still_holds() {
    let cfg = Config {
        max_clients: 2,
        ..Config::default()
    };
    // One packet every 10 s: the first may leave before the shutdown, the
    // other nine are held back however late the shutdown comes (at one every
    // 5 ms, a test thread that waited 45 ms for a core saw all ten leave).
    let rt = Pspat::start(
        cfg,
        paced_tree(10_000),
        Dispatch::Inline(CountingSink::new(1)),
    )
    .unwrap();
    let mut client = rt.client().unwrap();
    for seq in 0..10u32 {
        send_retrying(&mut client, Packet::new(0, 1500).buffer(seq));
    }
    std::thread::sleep(Duration::from_millis(12));
    drop(client);
    let report = rt.shutdown(ShutdownMode::Discard);
    let t = report.totals();
    let shutdown = t.dropped.get(DropReason::Shutdown);
    assert!(shutdown >= 9, "{t:?}");
    assert_eq!(t.delivered + shutdown, 10, "{t:?}");
    assert_eq!(
        eiffel_sched::Scheduler::backlog(&report.scheduler).packets,
        0
    );
}

/// Sends `pkts` with `send_batch`, retrying the rest while the mailbox is full.
fn send_batch_retrying(client: &mut Client, pkts: &[Packet]) {
    let mut sent = 0;
    while sent < pkts.len() {
        match client.send_batch(&pkts[sent..]) {
            Ok(0) => std::thread::yield_now(),
            Ok(n) => sent += n,
            Err(e) => panic!("batch refused: {e}"),
        }
    }
}

/// Decision aggregation: runs of one flow become one scheduler entry each, every
/// packet still arrives once, in its flow's order, through inline dispatch and
/// through dispatchers whose TX mailboxes are smaller than one run.
#[test]
fn aggregated_decisions_deliver_every_packet_in_order() {
    for dispatch in [
        Dispatch::Inline(OrderSink::default()),
        Dispatch::Threads(vec![OrderSink::default(), OrderSink::default()]),
    ] {
        let cfg = Config {
            // 1 us at 100 Gbit/s: runs of up to 125 packets of 100 bytes.
            aggregate: Some(Aggregation {
                window: Duration::from_micros(1),
                max_bytes: 1 << 16,
            }),
            tx_capacity: 4,
            ..small_config()
        };
        let rt = Pspat::start(cfg, Fifo::new(1024), dispatch).unwrap();
        let mut clients: Vec<Client> = (0..3).map(|_| rt.client().unwrap()).collect();
        for start in (1..=600u32).step_by(12) {
            for (flow, c) in clients.iter_mut().enumerate() {
                let batch: Vec<Packet> = (start..start + 12)
                    .map(|seq| Packet::new(flow as u32, 100).buffer(seq))
                    .collect();
                send_batch_retrying(c, &batch);
            }
        }
        assert!(clients.iter().all(|c| c.stats().sent == 600));
        drop(clients);
        let report = rt.shutdown(ShutdownMode::Drain);
        let mut per_flow: HashMap<u32, u64> = HashMap::new();
        for sink in &report.sinks {
            assert_eq!(sink.out_of_order, 0);
            for (&f, &n) in &sink.per_flow {
                *per_flow.entry(f).or_default() += n;
            }
        }
        for flow in 0..3 {
            assert_eq!(report.clients[flow].delivered, 600);
            assert_eq!(per_flow[&(flow as u32)], 600);
        }
        assert_eq!(report.stats.released, 1800);
        let entries = report.scheduler_counters().dequeued;
        assert_eq!(report.stats.decisions, entries);
        assert!(
            entries < 1800,
            "{entries} decisions for 1800 packets: nothing aggregated"
        );
    }
}

/// A dropped aggregate is accounted and handed to the drop hook packet by packet,
/// each with its own buffer.
#[test]
fn a_dropped_aggregate_reaches_the_hook_packet_by_packet() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let hook_seen = std::sync::Arc::clone(&seen);
    let cfg = Config {
        // 1 Mbit/s: 1500 bytes take 12 ms; runs of up to 10 such packets.
        link_rate_bps: 1_000_000,
        aggregate: Some(Aggregation {
            window: Duration::from_millis(120),
            max_bytes: 1 << 16,
        }),
        ..small_config()
    };
    let rt = Pspat::start_with_drop_hook(
        cfg,
        Fifo::new(1),
        Dispatch::Inline(CountingSink::new(1)),
        Some(Box::new(move |p: Packet, r: DropReason| {
            hook_seen.lock().unwrap().push((p.buffer, p.len, r));
        })),
    )
    .unwrap();
    let mut c = rt.client().unwrap();
    let batch: Vec<Packet> = (0..20u32)
        .map(|i| Packet::new(0, 1500).buffer(1000 + i))
        .collect();
    send_batch_retrying(&mut c, &batch);
    drop(c);
    let report = rt.shutdown(ShutdownMode::Discard);
    let t = report.totals();
    assert_eq!(t.received, 20);
    assert_eq!(t.delivered + t.dropped.total(), 20);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len() as u64, t.dropped.total());
    assert!(seen
        .iter()
        .all(|&(b, len, _)| (1000..1020).contains(&b) && len == 1500));
    let mut buffers: Vec<u32> = seen.iter().map(|s| s.0).collect();
    buffers.dedup();
    assert_eq!(buffers.len(), seen.len(), "a packet dropped twice");
}
