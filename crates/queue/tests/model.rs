//! Model-based property tests: every exact queue against an ordered-map model over
//! long random sequences of insert / pop / remove / re-rank / peek, including ranks
//! outside the range, ranks near `u64::MAX`, full queues, and (for the circular
//! queue) ranges that move and rotate many times.

use std::collections::{BTreeMap, HashMap};

use eiffel_queue::{
    AnyQueue, BinaryHeapQueue, Cffs, Handle, InsertError, OutOfRange, PriorityQueue, QueueConfig,
    QueueKind, RankError,
};
use proptest::prelude::*;

/// One step of a test sequence. Ranks are drawn relative to a reference point the
/// harness chooses (the base, or the last popped rank), so the same `Op` exercises
/// fixed and moving ranges.
#[derive(Clone, Debug)]
enum Op {
    Insert(RankSpec),
    Pop,
    Remove(usize),
    SetRank(usize, RankSpec),
    Peek,
}

#[derive(Clone, Copy, Debug)]
enum RankSpec {
    /// Offset in buckets from the reference point, and an offset within the bucket.
    Near(u16, u16),
    /// Below the reference point.
    Below(u16),
    /// Far beyond any range.
    Far(u32),
    /// Near the top of the rank space.
    Max(u16),
}

fn rank_spec(span: u16) -> impl Strategy<Value = RankSpec> {
    prop_oneof![
        12 => (0..span, any::<u16>()).prop_map(|(b, o)| RankSpec::Near(b, o)),
        1 => any::<u16>().prop_map(RankSpec::Below),
        1 => any::<u32>().prop_map(RankSpec::Far),
        1 => any::<u16>().prop_map(RankSpec::Max),
    ]
}

fn ops(span: u16, len: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        8 => rank_spec(span).prop_map(Op::Insert),
        6 => Just(Op::Pop),
        2 => any::<usize>().prop_map(Op::Remove),
        3 => (any::<usize>(), rank_spec(span)).prop_map(|(i, r)| Op::SetRank(i, r)),
        1 => Just(Op::Peek),
    ];
    proptest::collection::vec(op, 1..len)
}

fn resolve(spec: RankSpec, reference: u64, g: u64) -> u64 {
    match spec {
        RankSpec::Near(b, o) => reference.saturating_add(u64::from(b) * g + u64::from(o) % g),
        RankSpec::Below(d) => reference.saturating_sub(1 + u64::from(d)),
        RankSpec::Far(d) => reference
            .saturating_add(1 << 40)
            .saturating_add(u64::from(d)),
        RankSpec::Max(d) => u64::MAX - u64::from(d),
    }
}

/// The contract every model implements: the same answers the queue must give.
trait Model {
    fn insert(&mut self, rank: u64, id: u32) -> Result<(), ()>;
    fn pop(&mut self) -> Option<(u64, u32)>;
    fn peek(&self) -> Option<(u64, u32)>;
    fn remove(&mut self, id: u32) -> Option<(u64, u32)>;
    fn set_rank(&mut self, id: u32, rank: u64) -> Result<(), RankError>;
    fn len(&self) -> usize;
    /// The reference point ranks are drawn around.
    fn reference(&self, last_popped: u64) -> u64;
}

/// Fixed range: bucket `(rank - base) / g` clamped to `0..n`, FIFO within a bucket.
struct FixedModel {
    map: BTreeMap<(u64, u64), (u64, u32)>,
    loc: HashMap<u32, (u64, u64)>,
    seq: u64,
    base: u64,
    g: u64,
    n: u64,
    cap: usize,
    reject: bool,
}

impl FixedModel {
    fn bucket(&self, rank: u64) -> Option<u64> {
        if rank < self.base {
            return (!self.reject).then_some(0);
        }
        let b = (rank - self.base) / self.g;
        if b < self.n {
            Some(b)
        } else {
            (!self.reject).then_some(self.n - 1)
        }
    }
}

impl Model for FixedModel {
    fn insert(&mut self, rank: u64, id: u32) -> Result<(), ()> {
        let b = self.bucket(rank).ok_or(())?;
        if self.map.len() >= self.cap {
            return Err(());
        }
        self.seq += 1;
        self.map.insert((b, self.seq), (rank, id));
        self.loc.insert(id, (b, self.seq));
        Ok(())
    }
    fn pop(&mut self) -> Option<(u64, u32)> {
        let (&key, _) = self.map.iter().next()?;
        let v = self.map.remove(&key)?;
        self.loc.remove(&v.1);
        Some(v)
    }
    fn peek(&self) -> Option<(u64, u32)> {
        self.map.values().next().copied()
    }
    fn remove(&mut self, id: u32) -> Option<(u64, u32)> {
        let key = self.loc.remove(&id)?;
        self.map.remove(&key)
    }
    fn set_rank(&mut self, id: u32, rank: u64) -> Result<(), RankError> {
        let key = *self.loc.get(&id).ok_or(RankError::StaleHandle)?;
        let b = self.bucket(rank).ok_or(RankError::OutOfRange)?;
        let new_key = if b == key.0 {
            key
        } else {
            self.seq += 1;
            (b, self.seq)
        };
        self.map.remove(&key);
        self.map.insert(new_key, (rank, id));
        self.loc.insert(id, new_key);
        Ok(())
    }
    fn len(&self) -> usize {
        self.map.len()
    }
    fn reference(&self, _last_popped: u64) -> u64 {
        self.base
    }
}

/// The circular queue's rules, written independently: class 0 is the served-first
/// list, class 1 the two halves keyed by absolute bucket number.
struct CircularModel {
    map: BTreeMap<(u8, u128, u64), (u64, u32)>,
    loc: HashMap<u32, (u8, u128, u64)>,
    seq: u64,
    base: u64,
    g: u64,
    n: u64,
    cap: usize,
    reject: bool,
    rotations: u64,
}

impl CircularModel {
    fn in_halves(&self) -> usize {
        self.map.keys().filter(|k| k.0 == 1).count()
    }
    /// Absolute bucket number of the base (u128: no overflow near `u64::MAX`).
    fn lo(&self) -> u128 {
        u128::from(self.base / self.g)
    }
    fn place(&self, rank: u64) -> Option<(u8, u128)> {
        if rank < self.base {
            return (!self.reject).then_some((0, 0));
        }
        let b = u128::from((rank - self.base) / self.g);
        let n = u128::from(self.n);
        if b < 2 * n {
            Some((1, self.lo() + b))
        } else {
            (!self.reject).then_some((1, self.lo() + 2 * n - 1))
        }
    }
    fn rebase(&mut self, rank: u64) {
        if self.in_halves() > 0 {
            return;
        }
        let outside = if rank >= self.base {
            (rank - self.base) / self.g >= 2 * self.n
        } else {
            !self.map.keys().any(|k| k.0 == 0)
        };
        if outside {
            self.base = rank - rank % self.g;
        }
    }
    fn primary_empty(&self) -> bool {
        let end = self.lo() + u128::from(self.n);
        !self.map.keys().any(|k| k.0 == 1 && k.1 < end)
    }
    /// Swap when the primary is empty and the secondary is not.
    fn rotate(&mut self) {
        if self.primary_empty() && self.in_halves() > 0 {
            self.base += self.n * self.g;
            self.rotations += 1;
        }
    }
    /// What an insert does to the window before placing `rank`.
    fn enter(&mut self, rank: u64) -> Option<(u8, u128)> {
        if self.in_halves() == 0 {
            self.rebase(rank);
        } else if rank >= self.base && (rank - self.base) / self.g >= 2 * self.n {
            self.rotate();
        }
        self.place(rank)
    }
    fn put(&mut self, slot: (u8, u128), rank: u64, id: u32) {
        self.seq += 1;
        let key = (slot.0, slot.1, self.seq);
        self.map.insert(key, (rank, id));
        self.loc.insert(id, key);
    }
}

impl Model for CircularModel {
    fn insert(&mut self, rank: u64, id: u32) -> Result<(), ()> {
        if self.map.len() >= self.cap {
            return Err(());
        }
        let slot = self.enter(rank).ok_or(())?;
        self.put(slot, rank, id);
        Ok(())
    }
    fn pop(&mut self) -> Option<(u64, u32)> {
        if !self.map.keys().any(|k| k.0 == 0) {
            self.rotate();
        }
        let (&key, _) = self.map.iter().next()?;
        let v = self.map.remove(&key)?;
        self.loc.remove(&v.1);
        Some(v)
    }
    fn peek(&self) -> Option<(u64, u32)> {
        self.map.values().next().copied()
    }
    fn remove(&mut self, id: u32) -> Option<(u64, u32)> {
        let key = self.loc.remove(&id)?;
        self.map.remove(&key)
    }
    fn set_rank(&mut self, id: u32, rank: u64) -> Result<(), RankError> {
        let key = *self.loc.get(&id).ok_or(RankError::StaleHandle)?;
        let slot = self.place(rank).ok_or(RankError::OutOfRange)?;
        let beyond = rank >= self.base && (rank - self.base) / self.g >= 2 * self.n;
        if (slot.0, slot.1) == (key.0, key.1) && !beyond {
            self.map.insert(key, (rank, id));
            return Ok(());
        }
        self.map.remove(&key);
        let slot = self.enter(rank).unwrap_or(slot);
        self.put(slot, rank, id);
        Ok(())
    }
    fn len(&self) -> usize {
        self.map.len()
    }
    fn reference(&self, last_popped: u64) -> u64 {
        // Draw around the window, drifting with what was served, so the range moves.
        self.base.max(last_popped)
    }
}

/// Runs `ops` against `queue` and `model`, comparing every answer.
fn run<Q: PriorityQueue<u32>, M: Model>(
    queue: &mut Q,
    model: &mut M,
    ops: &[Op],
    g: u64,
    check: impl Fn(&Q),
) {
    let mut live: Vec<(Handle, u32)> = Vec::new();
    let mut next_id = 0u32;
    let mut last_popped = 0u64;
    for (step, op) in ops.iter().enumerate() {
        let reference = model.reference(last_popped);
        match *op {
            Op::Insert(spec) => {
                let rank = resolve(spec, reference, g);
                let id = next_id;
                next_id += 1;
                let got = queue.insert(rank, id);
                let want = model.insert(rank, id);
                match got {
                    Ok(h) => {
                        assert!(
                            want.is_ok(),
                            "step {step}: queue accepted rank {rank}, model refused"
                        );
                        live.push((h, id));
                    }
                    Err(e) => {
                        assert!(
                            want.is_err(),
                            "step {step}: queue refused rank {rank} ({e}), model accepted"
                        );
                        assert_eq!(e.into_inner(), id, "refused item handed back");
                    }
                }
            }
            Op::Pop => {
                let got = queue.pop_min();
                assert_eq!(got, model.pop(), "step {step}: pop");
                if let Some((rank, id)) = got {
                    live.retain(|&(_, i)| i != id);
                    last_popped = rank;
                }
            }
            Op::Remove(k) => {
                if live.is_empty() {
                    continue;
                }
                let (h, id) = live.swap_remove(k % live.len());
                assert_eq!(
                    queue.remove(h),
                    model.remove(id),
                    "step {step}: remove {id}"
                );
                assert_eq!(queue.remove(h), None, "step {step}: stale handle refused");
            }
            Op::SetRank(k, spec) => {
                if live.is_empty() {
                    continue;
                }
                let (h, id) = live[k % live.len()];
                let rank = resolve(spec, reference, g);
                assert_eq!(
                    queue.set_rank(h, rank),
                    model.set_rank(id, rank),
                    "step {step}: set_rank {id} -> {rank}"
                );
                assert_eq!(queue.get(h).map(|(_, &i)| i), Some(id));
            }
            Op::Peek => {
                assert_eq!(
                    queue.peek().map(|(_, r, &i)| (r, i)),
                    model.peek(),
                    "step {step}: peek"
                );
            }
        }
        assert_eq!(queue.len(), model.len(), "step {step}: len");
        if step % 16 == 0 {
            check(queue);
        }
    }
    check(queue);
    // Drain: the full remaining order must agree.
    while let Some(got) = queue.pop_min() {
        assert_eq!(Some(got), model.pop(), "drain");
    }
    assert_eq!(model.len(), 0);
}

fn fixed_case(
    kind: QueueKind,
    buckets: usize,
    g: u64,
    base: u64,
    cap: usize,
    reject: bool,
    ops: &[Op],
) {
    let mode = if reject {
        OutOfRange::Reject
    } else {
        OutOfRange::Clamp
    };
    let cfg = QueueConfig::new(buckets, cap)
        .granularity(g)
        .base(base)
        .out_of_range(mode);
    let mut q: AnyQueue<u32> = AnyQueue::new(kind, cfg).unwrap();
    let mut m = FixedModel {
        map: BTreeMap::new(),
        loc: HashMap::new(),
        seq: 0,
        base,
        g,
        n: buckets as u64,
        cap,
        reject,
    };
    run(&mut q, &mut m, ops, g, AnyQueue::check_invariants);
}

const CASES: u32 = if cfg!(miri) { 2 } else { 256 };

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn exact_fixed_range_queues_match_the_model(
        ops in ops(300, 600),
        g in prop_oneof![Just(1u64), Just(8), Just(10), Just(1000)],
        base in prop_oneof![Just(0u64), 0..1_000_000u64],
        cap in 1usize..200,
        reject in any::<bool>(),
    ) {
        for kind in [QueueKind::Hffs, QueueKind::Gradient, QueueKind::BucketHeap] {
            fixed_case(kind, 257, g, base, cap, reject, &ops);
        }
        fixed_case(QueueKind::Ffs, 64, g, base, cap, reject, &ops);
        fixed_case(QueueKind::Hffs, 1, g, base, cap, reject, &ops);
    }

    #[test]
    fn cffs_matches_the_model_as_its_range_moves(
        ops in ops(200, 800),
        n in prop_oneof![Just(1usize), Just(3), Just(64), Just(100)],
        g in prop_oneof![Just(1u64), Just(4), Just(7)],
        base in 0..1_000u64,
        cap in 1usize..150,
        reject in any::<bool>(),
    ) {
        let mode = if reject { OutOfRange::Reject } else { OutOfRange::Clamp };
        let cfg = QueueConfig::new(n, cap).granularity(g).base(base).out_of_range(mode);
        let mut q: Cffs<u32> = Cffs::new(cfg).unwrap();
        let mut m = CircularModel {
            map: BTreeMap::new(),
            loc: HashMap::new(),
            seq: 0,
            base: base - base % g,
            g,
            n: n as u64,
            cap,
            reject,
            rotations: 0,
        };
        run(&mut q, &mut m, &ops, g, Cffs::check_invariants);
        prop_assert_eq!(q.stats().rotations, m.rotations);
    }

    #[test]
    fn binary_heap_matches_the_model_on_exact_ranks(ops in ops(1000, 600), cap in 1usize..200) {
        let mut q: BinaryHeapQueue<u32> = BinaryHeapQueue::new(QueueConfig::new(1, cap)).unwrap();
        let mut m = FixedModel {
            map: BTreeMap::new(),
            loc: HashMap::new(),
            seq: 0,
            base: 0,
            g: 1,
            n: u64::MAX,
            cap,
            reject: false,
        };
        run(&mut q, &mut m, &ops, 1, BinaryHeapQueue::check_invariants);
    }
}

/// The circular queue's range really moves: a clock-like workload rotates it many
/// times while serving in exact bucket order.
#[test]
fn cffs_rotates_many_times_in_exact_order() {
    let (n, g) = (16usize, 10u64);
    let mut q: Cffs<u64> = Cffs::new(QueueConfig::new(n, 1_000).granularity(g)).unwrap();
    let mut now = 0u64;
    let mut x = 88172645463325252u64;
    let mut last = 0u64;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if q.len() < 20 {
            // The window starts at most N g below the minimum, so ranks up to N g
            // beyond the last served one are always within its 2 N g.
            let rank = now + x % (n as u64 * g);
            q.insert(rank, rank).unwrap();
        }
        if x % 3 != 0 {
            if let Some((rank, _)) = q.pop_min() {
                assert!(rank / g >= last / g, "bucket order: {rank} after {last}");
                last = rank;
                now = rank;
            }
        }
    }
    let s = q.stats();
    assert!(s.rotations > 2_000, "only {} rotations", s.rotations);
    assert_eq!((s.clamped_high, s.underflow), (0, 0));
}

/// Schedulers that only peek and re-rank (never pop) move a circular queue's
/// window through `set_rank` alone: an element re-ranked beyond the window while
/// it already sits in the clamped last bucket must still swap past the empty
/// primary and take its place behind the elements it now ranks after.
#[test]
fn cffs_re_rank_beyond_the_window_swaps_past_an_empty_primary() {
    let mut q: Cffs<u32> = Cffs::new(QueueConfig::new(4, 2).granularity(10)).unwrap();
    // The window is [0, 80): both in the secondary's last bucket, primary empty.
    let b = q.insert(75, 1).unwrap();
    q.insert(79, 0).unwrap();
    q.set_rank(b, 95).unwrap();
    assert_eq!(q.peek().map(|(_, r, &u)| (r, u)), Some((79, 0)));
    assert_eq!(q.pop_min(), Some((79, 0)));
    assert_eq!(q.pop_min(), Some((95, 1)));
    assert_eq!(q.stats().clamped_high, 0);
}

#[test]
fn full_queues_hand_items_back_and_recover() {
    for kind in QueueKind::ALL {
        let buckets = if kind == QueueKind::Ffs { 64 } else { 100 };
        let mut q: AnyQueue<u32> = AnyQueue::new(kind, QueueConfig::new(buckets, 3)).unwrap();
        for i in 0..3 {
            q.insert(u64::from(i), i).unwrap();
        }
        assert!(
            matches!(q.insert(1, 99), Err(InsertError::Full(99))),
            "{kind}"
        );
        assert_eq!(q.len(), 3);
        assert!(q.pop_min().is_some());
        q.insert(5, 7).unwrap();
        assert_eq!(q.len(), 3, "{kind}");
    }
}

#[test]
fn empty_queues_answer_none() {
    for kind in QueueKind::ALL {
        let buckets = if kind == QueueKind::Ffs { 64 } else { 100 };
        let mut q: AnyQueue<u32> = AnyQueue::new(kind, QueueConfig::new(buckets, 4)).unwrap();
        assert!(q.is_empty());
        assert_eq!(q.pop_min(), None, "{kind}");
        assert!(q.peek().is_none());
        assert_eq!(q.peek_min(), None);
        let h = q.insert(3, 1).unwrap();
        assert_eq!(q.remove(h), Some((3, 1)));
        assert_eq!(q.remove(h), None);
        assert_eq!(q.set_rank(h, 4), Err(RankError::StaleHandle));
        assert_eq!(q.pop_min(), None);
    }
}

#[test]
fn ranks_at_the_edges_of_u64() {
    for kind in QueueKind::ALL {
        let buckets = if kind == QueueKind::Ffs { 64 } else { 100 };
        let cfg = QueueConfig::new(buckets, 8).base(u64::MAX - 50);
        let mut q: AnyQueue<u32> = AnyQueue::new(kind, cfg).unwrap();
        q.insert(u64::MAX, 1).unwrap();
        q.insert(u64::MAX - 50, 2).unwrap();
        q.insert(0, 3).unwrap();
        let order: Vec<u32> = std::iter::from_fn(|| q.pop_min().map(|(_, v)| v)).collect();
        assert_eq!(order.len(), 3, "{kind}");
        if kind.is_exact() && !kind.is_circular() && kind != QueueKind::BinaryHeap {
            // Rank 0 is below the base: clamped into the first bucket, behind rank
            // MAX - 50 which was there first.
            assert_eq!(order, [2, 3, 1], "{kind}");
        }
        if kind == QueueKind::BinaryHeap {
            assert_eq!(order, [3, 2, 1]);
        }
        if kind == QueueKind::Cffs {
            // Below the base: the served-first list.
            assert_eq!(order, [3, 2, 1]);
        }
    }
}

#[test]
fn invalid_configurations_are_refused() {
    use eiffel_queue::ConfigError;
    assert_eq!(
        AnyQueue::<u8>::new(QueueKind::Hffs, QueueConfig::new(0, 1)).err(),
        Some(ConfigError::ZeroBuckets)
    );
    assert_eq!(
        AnyQueue::<u8>::new(QueueKind::Cffs, QueueConfig::new(10, 1).granularity(0)).err(),
        Some(ConfigError::ZeroGranularity)
    );
    assert!(matches!(
        AnyQueue::<u8>::new(QueueKind::Ffs, QueueConfig::new(65, 1)).err(),
        Some(ConfigError::TooManyBuckets {
            requested: 65,
            max: 64
        })
    ));
    assert_eq!(
        AnyQueue::<u8>::new(
            QueueKind::Cffs,
            QueueConfig::new(1 << 20, 1).granularity(u64::MAX / 4)
        )
        .err(),
        Some(ConfigError::HorizonTooLarge)
    );
}

#[test]
fn hffs_supports_two_to_the_24_buckets() {
    let n = 1usize << 24;
    let mut q: AnyQueue<u32> = AnyQueue::new(QueueKind::Hffs, QueueConfig::new(n, 16)).unwrap();
    for (i, r) in [n as u64 - 1, 12_345_678, 7, 0, 8_388_608]
        .into_iter()
        .enumerate()
    {
        q.insert(r, i as u32).unwrap();
    }
    let ranks: Vec<u64> = std::iter::from_fn(|| q.pop_min().map(|(r, _)| r)).collect();
    assert_eq!(ranks, [0, 7, 8_388_608, 12_345_678, n as u64 - 1]);
}
