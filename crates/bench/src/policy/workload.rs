//! The workloads of `eiffel bench policy` and of its criterion bench
//! (`crates/bench/benches/policy.rs`), each a struct whose [`step`](Pfabric::step)
//! sends one packet and replaces it (see the [`policy`](super) module docs for
//! what each measures).

use std::collections::VecDeque;
use std::hint::black_box;

use eiffel_queue::{
    AnyQueue, BinaryHeapQueue, Handle, OutOfRange, PriorityQueue, QueueConfig, QueueKind,
    TimingWheel, WheelConfig,
};
use eiffel_sched::tree::{
    Discipline, Gcra, NodeSpec, PerFlow, QueueChoice, RateLimit, ShaperSpec, TreeSpec,
};
use eiffel_sched::{
    ConfigError, Duration, Nanos, Packet, PacketFifo, PacketPool, PolicyTree, Rate, Scheduler,
};

/// 1500 bytes at 10 Gbit/s.
pub const PACKET_TIME: Nanos = 1_200;

/// Packets each flow (or leaf) keeps queued.
pub const PER_FLOW: u32 = 4;

/// Flows of the pacing case.
pub const PACED_FLOWS: u32 = 20_000;

/// Each paced flow's rate: 400 kbit/s (8 Gbit/s in all).
pub const PACED_RATE: Rate = Rate::from_kbps(400);

/// A xorshift generator: cheap and deterministic, so every variant sees the same
/// sequence.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    /// The next number.
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Flow sizes of the pFabric workload: a flow that ends restarts with 1 to 1000
/// packets of 1500 bytes.
#[derive(Debug)]
struct Remaining {
    left: Vec<u64>,
}

impl Remaining {
    /// The remaining size of flow `f`'s next packet, this packet included.
    fn next(&mut self, f: u32, rng: &mut Rng) -> u64 {
        let rem = &mut self.left[f as usize];
        if *rem == 0 {
            *rem = (1 + rng.next() % 1000) * 1500;
        }
        let r = *rem;
        *rem -= 1500;
        r
    }
}

/// pFabric over `n` flows of one per-flow leaf, its flow queue of kind `kind`
/// (one bucket per 1500-byte packet).
#[derive(Debug)]
pub struct Pfabric {
    tree: PolicyTree,
    rng: Rng,
    sizes: Remaining,
    n: u32,
}

impl Pfabric {
    /// The leaf, [`PER_FLOW`] packets per flow queued.
    ///
    /// # Errors
    /// A configuration the tree refuses.
    pub fn new(n: u32, kind: QueueKind) -> Result<Pfabric, ConfigError> {
        let mut spec = TreeSpec::new(n * PER_FLOW + 16);
        let mut leaf = NodeSpec::new("flows", None);
        leaf.discipline = Discipline::PFABRIC.on(QueueChoice {
            kind: Some(kind),
            granularity: Some(1500),
            ..QueueChoice::AUTO
        });
        leaf.per_flow = Some(PerFlow {
            max_flows: n,
            flow_limit: None,
            flow_queue_limit: None,
        });
        spec.add(leaf);
        let mut w = Pfabric {
            tree: PolicyTree::new(spec)?,
            rng: Rng(0x9e37_79b9_7f4a_7c15),
            sizes: Remaining {
                left: vec![0; n as usize],
            },
            n,
        };
        for _ in 0..PER_FLOW {
            for f in 0..n {
                let pkt = w.packet(f);
                w.tree
                    .enqueue(pkt, 0)
                    .expect("room for the initial backlog");
            }
        }
        Ok(w)
    }

    fn packet(&mut self, f: u32) -> Packet {
        let mut pkt = Packet::new(f, 1500);
        pkt.remaining = self.sizes.next(f, &mut self.rng);
        pkt
    }

    /// Dequeues the packet pFabric picks and enqueues the next packet of a flow
    /// drawn uniformly at random.
    #[inline]
    pub fn step(&mut self) {
        black_box(self.tree.dequeue(0).expect("backlogged"));
        let f = (self.rng.next() % u64::from(self.n)) as u32;
        let new = self.packet(f);
        let _ = black_box(self.tree.enqueue(new, 0));
    }
}

/// The flow queue of a bare pFabric module: flows keyed by rank.
pub trait FlowQueue {
    /// Files `flow` with `rank`, or moves it there.
    fn set(&mut self, flow: u32, rank: u64);
    /// Takes `flow` out.
    fn remove(&mut self, flow: u32);
    /// The flow with the smallest rank.
    fn min(&self) -> Option<u32>;
}

/// Any `eiffel-queue` queue, re-ranking through handles.
#[derive(Debug)]
pub struct Handled<Q> {
    queue: Q,
    handles: Vec<Option<Handle>>,
}

impl Handled<AnyQueue<u32>> {
    /// A queue of `kind` for `n` flows, one bucket per rank.
    ///
    /// # Errors
    /// A geometry the queue refuses.
    pub fn new(kind: QueueKind, n: u32) -> Result<Self, eiffel_queue::ConfigError> {
        let cfg = QueueConfig::new(1 << 16, n as usize).granularity(1);
        Ok(Handled {
            queue: AnyQueue::new(kind, cfg)?,
            handles: vec![None; n as usize],
        })
    }
}

impl<Q: PriorityQueue<u32>> FlowQueue for Handled<Q> {
    fn set(&mut self, flow: u32, rank: u64) {
        match self.handles[flow as usize] {
            Some(h) => {
                let moved = self.queue.set_rank(h, rank);
                debug_assert!(moved.is_ok());
            }
            None => {
                let Ok(h) = self.queue.insert(rank, flow) else {
                    unreachable!("the flow queue holds one entry per flow");
                };
                self.handles[flow as usize] = Some(h);
            }
        }
    }
    fn remove(&mut self, flow: u32) {
        if let Some(h) = self.handles[flow as usize].take() {
            self.queue.remove(h);
        }
    }
    fn min(&self) -> Option<u32> {
        self.queue.peek().map(|(_, _, &f)| f)
    }
}

/// The paper's baseline: a binary heap of `(rank, flow)` without handles; a rank
/// change finds the flow by a linear search and re-heapifies the whole heap.
#[derive(Debug, Default)]
pub struct RebuiltHeap {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u32)>>,
}

impl FlowQueue for RebuiltHeap {
    fn set(&mut self, flow: u32, rank: u64) {
        let mut v = std::mem::take(&mut self.heap).into_vec();
        match v.iter_mut().find(|e| e.0 .1 == flow) {
            Some(e) => e.0 .0 = rank,
            None => v.push(std::cmp::Reverse((rank, flow))),
        }
        self.heap = v.into();
    }
    fn remove(&mut self, flow: u32) {
        let mut v = std::mem::take(&mut self.heap).into_vec();
        v.retain(|e| e.0 .1 != flow);
        self.heap = v.into();
    }
    fn min(&self) -> Option<u32> {
        self.heap.peek().map(|e| e.0 .1)
    }
}

/// The pFabric workload of [`Pfabric`] in a bare module around flow queue `Q`:
/// per-flow FIFOs of remaining sizes and one flow queue keyed by each flow's
/// smallest (its newest, as they fall along a flow).
#[derive(Debug)]
pub struct PfabricModule<Q> {
    queue: Q,
    fifos: Vec<VecDeque<u64>>,
    rng: Rng,
    sizes: Remaining,
    n: u32,
}

impl<Q: FlowQueue> PfabricModule<Q> {
    /// The module over `n` flows, [`PER_FLOW`] packets per flow queued.
    pub fn new(n: u32, queue: Q) -> Self {
        let mut m = PfabricModule {
            queue,
            fifos: (0..n).map(|_| VecDeque::with_capacity(8)).collect(),
            rng: Rng(0x9e37_79b9_7f4a_7c15),
            sizes: Remaining {
                left: vec![0; n as usize],
            },
            n,
        };
        for _ in 0..PER_FLOW {
            for f in 0..n {
                m.arrive(f);
            }
        }
        m
    }

    fn arrive(&mut self, f: u32) {
        let rem = self.sizes.next(f, &mut self.rng);
        self.fifos[f as usize].push_back(rem);
        self.queue.set(f, rem / 1500);
    }

    /// Sends the head of the flow with the smallest rank and a packet of a flow
    /// drawn uniformly at random arrives.
    #[inline]
    pub fn step(&mut self) {
        let f = self.queue.min().expect("backlogged");
        black_box(self.fifos[f as usize].pop_front());
        if self.fifos[f as usize].is_empty() {
            self.queue.remove(f);
        }
        let g = (self.rng.next() % u64::from(self.n)) as u32;
        self.arrive(g);
    }
}

/// hClock over `n` leaves, each with a reservation (half a 10 Gbit/s link split
/// evenly), a weight (1 to 4) and a limit (4 times its even share); both of the
/// root's queues of kind `kind` (`None`: automatic, cffs).
#[derive(Debug)]
pub struct Hclock {
    tree: PolicyTree,
    now: Nanos,
}

impl Hclock {
    /// The tree, [`PER_FLOW`] packets per leaf queued.
    ///
    /// # Errors
    /// A configuration the tree refuses.
    pub fn new(n: u32, kind: Option<QueueKind>) -> Result<Hclock, ConfigError> {
        let link = 10_000_000_000u64;
        let mut spec = TreeSpec::new(n * PER_FLOW + 16);
        spec.shaper = ShaperSpec {
            horizon: Duration::from_millis(100),
            slots: 1 << 16,
        };
        let mut root = NodeSpec::new("root", None);
        root.discipline = Discipline::HCLOCK.on(QueueChoice {
            kind,
            ..QueueChoice::AUTO
        });
        spec.add(root);
        for i in 0..n {
            let mut leaf = NodeSpec::new(format!("l{i}"), Some(0));
            leaf.weight = 1 + i % 4;
            leaf.reservation = Some(Rate::from_bps((link / 2 / u64::from(n)).max(1)));
            leaf.limit = Some(RateLimit {
                rate: Rate::from_bps((4 * link / u64::from(n)).max(1)),
                burst: 3000,
            });
            spec.add(leaf);
        }
        let mut tree = PolicyTree::new(spec)?;
        for _ in 0..PER_FLOW {
            for i in 0..n {
                let pkt = Packet::new(0, 1500).class(1 + i);
                tree.enqueue(pkt, 0).expect("room for the initial backlog");
            }
        }
        Ok(Hclock { tree, now: 0 })
    }

    /// Sends one packet (time advancing by one packet time, or to the next
    /// release) and queues another at the same leaf.
    #[inline]
    pub fn step(&mut self) {
        loop {
            if let Some(pkt) = self.tree.dequeue(self.now) {
                self.now += PACKET_TIME;
                let next = Packet::new(0, 1500).class(pkt.class).at(self.now);
                let _ = black_box(self.tree.enqueue(next, self.now));
                return;
            }
            self.now = self
                .tree
                .next_ready(self.now)
                .expect("backlogged")
                .max(self.now + 1);
        }
    }
}

/// Where a pacer files flows until their release time.
pub trait Release {
    /// Files `flow` for release at `at`.
    fn file(&mut self, now: Nanos, at: Nanos, flow: u32);
    /// The next flow whose release time has come by `now`.
    fn pop_due(&mut self, now: Nanos) -> Option<u32>;
    /// The earliest release time filed.
    fn next_due(&self) -> Option<Nanos>;
}

/// The timing wheel the policy tree's shaper is, for [`PACED_FLOWS`] flows.
///
/// # Errors
/// A geometry the wheel refuses.
pub fn pacing_wheel() -> Result<TimingWheel<u32>, eiffel_queue::ConfigError> {
    let shaper = pacing_shaper();
    let cfg = WheelConfig::with_horizon(
        shaper.horizon.as_nanos(),
        shaper.slots,
        PACED_FLOWS as usize,
    )
    .beyond_horizon(OutOfRange::Clamp);
    TimingWheel::new(cfg)
}

impl Release for TimingWheel<u32> {
    fn file(&mut self, now: Nanos, at: Nanos, flow: u32) {
        if self.insert(now, at, flow).is_err() {
            unreachable!("one entry per flow");
        }
    }
    fn pop_due(&mut self, now: Nanos) -> Option<u32> {
        TimingWheel::pop_due(self, now).map(|(_, f)| f)
    }
    fn next_due(&self) -> Option<Nanos> {
        TimingWheel::next_due(self)
    }
}

impl Release for BinaryHeapQueue<u32> {
    fn file(&mut self, _now: Nanos, at: Nanos, flow: u32) {
        self.insert(at, flow).expect("one entry per flow");
    }
    fn pop_due(&mut self, now: Nanos) -> Option<u32> {
        if self.peek_min()? <= now {
            self.pop_min().map(|(_, f)| f)
        } else {
            None
        }
    }
    fn next_due(&self) -> Option<Nanos> {
        self.peek_min()
    }
}

/// A per-flow GCRA pacer: the baseline design of the pacing case.
#[derive(Debug)]
pub struct Pacer<R> {
    pool: PacketPool,
    fifos: Vec<PacketFifo>,
    gcra: Vec<Gcra>,
    /// Whether the flow is in `ready` or in the release queue.
    filed: Vec<bool>,
    ready: VecDeque<u32>,
    release: R,
}

impl<R: Release> Pacer<R> {
    /// A pacer of `flows` flows each limited by `limit`, room for `capacity`
    /// packets, releasing through `release`.
    pub fn new(flows: u32, capacity: usize, limit: RateLimit, release: R) -> Self {
        Pacer {
            pool: PacketPool::with_capacity(capacity),
            fifos: (0..flows).map(|_| PacketFifo::new()).collect(),
            gcra: vec![Gcra::new(limit, 1500); flows as usize],
            filed: vec![false; flows as usize],
            ready: VecDeque::with_capacity(flows as usize),
            release,
        }
    }

    fn file(&mut self, f: u32, now: Nanos) {
        let g = &self.gcra[f as usize];
        if g.conforms(now) {
            self.ready.push_back(f);
        } else {
            self.release.file(now, g.release_time(), f);
        }
        self.filed[f as usize] = true;
    }
}

/// What the pacing driver needs of a paced scheduler.
pub trait Paced {
    /// Offers a packet.
    fn offer(&mut self, pkt: Packet, now: Nanos);
    /// Takes the next eligible packet.
    fn take(&mut self, now: Nanos) -> Option<Packet>;
    /// When a packet may next be eligible.
    fn next(&self) -> Option<Nanos>;
}

impl<R: Release> Paced for Pacer<R> {
    fn offer(&mut self, pkt: Packet, now: Nanos) {
        let f = pkt.flow;
        self.pool
            .push_back(&mut self.fifos[f as usize], pkt)
            .expect("pool sized for the backlog");
        if !self.filed[f as usize] {
            self.file(f, now);
        }
    }

    fn take(&mut self, now: Nanos) -> Option<Packet> {
        while let Some(f) = self.release.pop_due(now) {
            self.ready.push_back(f);
        }
        let f = self.ready.pop_front()?;
        let pkt = self
            .pool
            .pop_front(&mut self.fifos[f as usize])
            .expect("a filed flow has a packet");
        self.gcra[f as usize].on_send(now, pkt.len);
        self.filed[f as usize] = false;
        if self.pool.front(&self.fifos[f as usize]).is_some() {
            self.file(f, now);
        }
        Some(pkt)
    }

    fn next(&self) -> Option<Nanos> {
        if self.ready.is_empty() {
            self.release.next_due()
        } else {
            Some(0)
        }
    }
}

impl Paced for PolicyTree {
    fn offer(&mut self, pkt: Packet, now: Nanos) {
        let _ = black_box(self.enqueue(pkt, now));
    }
    fn take(&mut self, now: Nanos) -> Option<Packet> {
        self.dequeue(now)
    }
    fn next(&self) -> Option<Nanos> {
        self.next_ready(0)
    }
}

/// Each paced flow's limit.
#[must_use]
pub fn paced_limit() -> RateLimit {
    RateLimit {
        rate: PACED_RATE,
        burst: 1500,
    }
}

/// The shaper of `examples/policies/pacing-20k-flows.toml`: 20,000 slots over 2 s.
#[must_use]
pub fn pacing_shaper() -> ShaperSpec {
    ShaperSpec {
        horizon: Duration::from_secs(2),
        slots: 20_000,
    }
}

/// The policy tree of the pacing case: one per-flow leaf of [`PACED_FLOWS`] flows,
/// each paced by the tree's shaper.
///
/// # Errors
/// A configuration the tree refuses.
pub fn pacing_tree() -> Result<PolicyTree, ConfigError> {
    let mut spec = TreeSpec::new(PACED_FLOWS * 2 + 16);
    spec.shaper = pacing_shaper();
    let mut leaf = NodeSpec::new("paced", None);
    leaf.per_flow = Some(PerFlow {
        max_flows: PACED_FLOWS,
        flow_limit: Some(paced_limit()),
        flow_queue_limit: None,
    });
    spec.add(leaf);
    PolicyTree::new(spec)
}

/// A paced scheduler with 2 packets per flow queued: send when something is
/// eligible (one packet time each), otherwise jump to the next release; every
/// sent packet is replaced.
#[derive(Debug)]
pub struct Pacing<S> {
    /// The scheduler.
    pub sched: S,
    now: Nanos,
}

impl<S: Paced> Pacing<S> {
    /// `sched`, filled.
    pub fn new(mut sched: S) -> Self {
        for _ in 0..2 {
            for f in 0..PACED_FLOWS {
                sched.offer(Packet::new(f, 1500), 0);
            }
        }
        Pacing { sched, now: 0 }
    }

    /// Sends one packet and replaces it.
    #[inline]
    pub fn step(&mut self) {
        loop {
            if let Some(pkt) = self.sched.take(self.now) {
                self.now += PACKET_TIME;
                self.sched
                    .offer(Packet::new(pkt.flow, 1500).at(self.now), self.now);
                return;
            }
            self.now = self.sched.next().expect("backlogged").max(self.now + 1);
        }
    }
}
