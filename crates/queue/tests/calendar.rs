//! Calendar queues against the ideal calendar: an ordered map of `(day, arrival)`
//! with unbounded days, plus the calendar's rules for where the head is, which ranks
//! are in the past or beyond the reach, and when a physical calendar may serve. Every
//! variant (flat and hierarchical; logical, physical work-conserving and
//! non-work-conserving) runs long random sequences of trait and calendar operations,
//! with many rotations and wraps of the ring, and must give the same answers, the
//! same counters and the same head. For hierarchical calendars the harness also
//! follows every element's level: each move takes it down exactly one level, so it
//! leaves each level at most once, and the per-level move counters equal the moves
//! observed.

use std::collections::{BTreeMap, HashMap};

use eiffel_queue::{
    AnyQueue, Calendar, CalendarConfig, CalendarStats, Handle, InsertError, OutOfRange,
    PriorityQueue, QueueConfig, QueueKind, RankError, Rotation, MAX_CALENDAR_LEVELS,
};
use proptest::prelude::*;

/// A rank for the trait interface, relative to the model's head.
#[derive(Clone, Copy, Debug)]
enum RankSpec {
    /// Days ahead (reduced modulo a little more than the reach), and a rank within
    /// the day.
    Near(u32, u16),
    /// Before the head's first rank.
    Past(u16),
    /// Far beyond any reach.
    Far(u32),
    /// Near the top of the rank space.
    Max(u16),
}

/// Days ahead for `enqueue`.
#[derive(Clone, Copy, Debug)]
enum AheadSpec {
    /// Reduced modulo a little more than the reach.
    Within(u32),
    /// At or beyond the reach.
    Beyond(u32),
    /// Near `u64::MAX`.
    Huge(u16),
}

#[derive(Clone, Debug)]
enum Op {
    Insert(RankSpec),
    Enqueue(AheadSpec),
    Pop,
    /// Moves the clock on by this many quarter days (or, when large, many days).
    Advance(u32),
    Rotate,
    Remove(usize),
    SetRank(usize, RankSpec),
    Peek,
}

fn rank_spec() -> impl Strategy<Value = RankSpec> {
    prop_oneof![
        14 => (any::<u32>(), any::<u16>()).prop_map(|(d, o)| RankSpec::Near(d, o)),
        2 => any::<u16>().prop_map(RankSpec::Past),
        1 => any::<u32>().prop_map(RankSpec::Far),
        1 => any::<u16>().prop_map(RankSpec::Max),
    ]
}

fn ahead_spec() -> impl Strategy<Value = AheadSpec> {
    prop_oneof![
        14 => any::<u32>().prop_map(AheadSpec::Within),
        2 => any::<u32>().prop_map(AheadSpec::Beyond),
        1 => any::<u16>().prop_map(AheadSpec::Huge),
    ]
}

fn ops(len: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        5 => rank_spec().prop_map(Op::Insert),
        5 => ahead_spec().prop_map(Op::Enqueue),
        8 => Just(Op::Pop),
        4 => prop_oneof![9 => 0u32..12, 1 => 12u32..5_000].prop_map(Op::Advance),
        1 => Just(Op::Rotate),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), rank_spec()).prop_map(|(i, r)| Op::SetRank(i, r)),
        1 => Just(Op::Peek),
    ];
    proptest::collection::vec(op, 1..len)
}

/// The ideal calendar and the rules a real one follows.
struct Ideal {
    /// `(day, arrival)`: arrivals are increasing, except that elements carried by a
    /// manual rotation take keys below every other.
    map: BTreeMap<(u64, i64), (u64, u32)>,
    loc: HashMap<u32, (u64, i64)>,
    seq: i64,
    low: i64,
    head: u64,
    clock: u64,
    g: u64,
    reach: u64,
    max_day: u64,
    reject: bool,
    rotation: Rotation,
    cap: usize,
    stats: CalendarStats,
}

impl Ideal {
    fn new(cfg: &CalendarConfig) -> Self {
        let g = cfg.granularity;
        Ideal {
            map: BTreeMap::new(),
            loc: HashMap::new(),
            seq: 0,
            low: 0,
            head: cfg.start / g,
            clock: cfg.start,
            g,
            reach: cfg.levels[..cfg.depth].iter().map(|&n| n as u64).product(),
            max_day: u64::MAX / g,
            reject: cfg.beyond_reach == OutOfRange::Reject,
            rotation: cfg.rotation,
            cap: cfg.capacity,
            stats: CalendarStats::default(),
        }
    }

    fn clock_day(&self) -> u64 {
        self.clock / self.g
    }

    fn admit_ahead(&mut self, ahead: u64) -> Option<u64> {
        let room = self.max_day - self.head;
        if ahead < self.reach && ahead <= room {
            Some(self.head + ahead)
        } else if self.reject {
            self.stats.rejected += 1;
            None
        } else {
            self.stats.clamped += 1;
            Some(self.head + (self.reach - 1).min(room))
        }
    }

    fn admit_day(&mut self, day: u64) -> Option<u64> {
        if day < self.head {
            self.stats.past += 1;
            Some(self.head)
        } else {
            self.admit_ahead(day - self.head)
        }
    }

    fn put(&mut self, day: u64, rank: u64, id: u32) {
        self.seq += 1;
        self.map.insert((day, self.seq), (rank, id));
        self.loc.insert(id, (day, self.seq));
    }

    fn insert(&mut self, rank: u64, id: u32) -> Result<u64, bool> {
        if self.map.len() >= self.cap {
            return Err(true);
        }
        let day = self.admit_day(rank / self.g).ok_or(false)?;
        self.put(day, rank, id);
        Ok(day)
    }

    fn enqueue(&mut self, ahead: u64, id: u32) -> Result<u64, bool> {
        if self.map.len() >= self.cap {
            return Err(true);
        }
        let day = self.admit_ahead(ahead).ok_or(false)?;
        self.put(day, day * self.g, id);
        Ok(day)
    }

    fn first_day(&self) -> Option<u64> {
        self.map.keys().next().map(|k| k.0)
    }

    fn count_rotation(&mut self, days: u64) {
        self.stats.rotations += days;
        if days > 1 {
            self.stats.jumps += 1;
            self.stats.skipped += days - 1;
        }
    }

    /// The head moves towards `target` but never past a non-empty day.
    fn settle(&mut self, target: u64) {
        let next = target.min(self.first_day().unwrap_or(u64::MAX));
        if next > self.head {
            self.count_rotation(next - self.head);
            self.head = next;
        }
    }

    fn take_first(&mut self) -> Option<(u64, u32)> {
        let (&key, _) = self.map.iter().next()?;
        let v = self.map.remove(&key).unwrap();
        self.loc.remove(&v.1);
        Some(v)
    }

    fn dequeue(&mut self) -> Option<(u64, u32)> {
        match self.rotation {
            Rotation::Logical => {
                let first = self.first_day()?;
                if first > self.head {
                    self.settle(self.max_day);
                }
                self.take_first()
            }
            Rotation::Physical { work_conserving } => {
                let clock_day = self.clock_day();
                if self.head < clock_day {
                    self.settle(clock_day);
                }
                let first = self.first_day()?;
                if self.head <= clock_day && first == self.head {
                    return self.take_first();
                }
                if !work_conserving {
                    return None;
                }
                self.stats.early += 1;
                self.take_first()
            }
        }
    }

    fn peek(&self) -> Option<(u64, u32)> {
        let (&(day, _), &v) = self.map.iter().next()?;
        let nwc = self.rotation
            == Rotation::Physical {
                work_conserving: false,
            };
        (!nwc || day <= self.clock_day()).then_some(v)
    }

    fn advance(&mut self, now: u64) {
        self.clock = self.clock.max(now);
        if let Rotation::Physical { .. } = self.rotation {
            let clock_day = self.clock_day();
            if self.head < clock_day {
                self.settle(clock_day);
            }
        }
    }

    fn rotate(&mut self) -> bool {
        if self.head == self.max_day {
            return false;
        }
        let carried: Vec<(u64, i64)> = self
            .map
            .range((self.head, i64::MIN)..(self.head + 1, i64::MIN))
            .map(|(&k, _)| k)
            .collect();
        let k = carried.len() as i64;
        for (i, key) in carried.into_iter().enumerate() {
            let v = self.map.remove(&key).unwrap();
            let new_key = (self.head + 1, self.low - k + i as i64);
            self.map.insert(new_key, v);
            self.loc.insert(v.1, new_key);
        }
        self.low -= k;
        self.stats.carried += k as u64;
        self.head += 1;
        self.count_rotation(1);
        true
    }

    fn remove(&mut self, id: u32) -> Option<(u64, u32)> {
        let key = self.loc.remove(&id)?;
        self.map.remove(&key)
    }

    fn set_rank(&mut self, id: u32, rank: u64) -> Result<u64, RankError> {
        let key = *self.loc.get(&id).ok_or(RankError::StaleHandle)?;
        let day = self.admit_day(rank / self.g).ok_or(RankError::OutOfRange)?;
        self.map.remove(&key);
        if day == key.0 {
            self.map.insert(key, (rank, id));
        } else {
            self.put(day, rank, id);
        }
        Ok(day)
    }

    /// The per-day occupancy and the times the calendar reports.
    fn check_schedule(&self, q: &Calendar<u32>, step: usize) {
        for ahead in [0, 1, self.reach / 2, self.reach - 1, self.reach] {
            let want = self
                .map
                .keys()
                .filter(|k| Some(k.0) == self.head.checked_add(ahead))
                .count();
            let want = if ahead < self.reach { want } else { 0 };
            assert_eq!(q.day_len(ahead), want, "step {step}: day_len({ahead})");
        }
        let due = self.first_day().map(|d| d * self.g);
        assert_eq!(q.next_due(), due, "step {step}: next_due");
        let now = self.clock;
        let ready = match self.rotation {
            Rotation::Physical {
                work_conserving: false,
            } => due.map(|t| t.max(now)),
            _ => (!self.map.is_empty()).then_some(now),
        };
        assert_eq!(q.next_ready(now), ready, "step {step}: next_ready");
        let rotation = match self.rotation {
            Rotation::Logical => None,
            Rotation::Physical { .. } => (now / self.g)
                .checked_add(1)
                .and_then(|d| d.checked_mul(self.g)),
        };
        assert_eq!(q.next_rotation(now), rotation, "step {step}: next_rotation");
    }

    fn rank_of(&self, spec: RankSpec) -> u64 {
        let base = self.head.saturating_mul(self.g);
        match spec {
            RankSpec::Near(d, o) => {
                let days = u64::from(d) % (self.reach + 3);
                base.saturating_add(days.saturating_mul(self.g))
                    .saturating_add(u64::from(o) % self.g)
            }
            RankSpec::Past(d) => base.saturating_sub(1 + u64::from(d)),
            RankSpec::Far(d) => base.saturating_add(1 << 40).saturating_add(u64::from(d)),
            RankSpec::Max(d) => u64::MAX - u64::from(d),
        }
    }

    fn ahead_of(&self, spec: AheadSpec) -> u64 {
        match spec {
            AheadSpec::Within(x) => u64::from(x) % (self.reach + 2),
            AheadSpec::Beyond(x) => self.reach + u64::from(x),
            AheadSpec::Huge(d) => u64::MAX - u64::from(d),
        }
    }
}

/// The level the placement rule files day `day` at under head `head`: the lowest
/// level whose window holds it (level 0: the `n_0` days from the head; level `j`:
/// the `n_j` blocks of `P_j` days after the head's).
fn expected_level(day: u64, head: u64, sizes: &[usize]) -> usize {
    if day - head < sizes[0] as u64 {
        return 0;
    }
    let mut span = sizes[0] as u64;
    for (j, &n) in sizes.iter().enumerate().skip(1) {
        if day / span - head / span <= n as u64 {
            return j;
        }
        span *= n as u64;
    }
    panic!("day {day} beyond the reach from head {head}");
}

/// Follows every element's level and the moves it implies.
struct LevelTracker {
    level: HashMap<u32, usize>,
    moves: [u64; MAX_CALENDAR_LEVELS],
}

impl LevelTracker {
    /// A new element, filed at its level.
    fn filed(&mut self, id: u32, level: usize) {
        self.level.insert(id, level);
    }

    /// After an operation: every survivor's level may only have gone down (one
    /// move out of each level passed); the popped element, if any, went from its
    /// last level down to where it was served, also a level at a time; the
    /// counters must show exactly these moves.
    fn observe(
        &mut self,
        q: &Calendar<u32>,
        live: &[(Handle, u32)],
        popped: Option<u32>,
        step: usize,
    ) {
        let mut seen = [0u64; MAX_CALENDAR_LEVELS];
        for &(h, id) in live {
            let now = q.level_of(h).expect("live handle");
            let before = self.level.insert(id, now).expect("tracked element");
            assert!(
                now <= before,
                "step {step}: element {id} went up from level {before} to {now}"
            );
            for m in &mut seen[now + 1..=before] {
                *m += 1;
            }
        }
        let mut per_level = [0usize; MAX_CALENDAR_LEVELS];
        for &(h, _) in live {
            per_level[q.level_of(h).unwrap()] += 1;
        }
        for (j, &n) in per_level.iter().enumerate() {
            assert_eq!(q.level_len(j), n, "step {step}: elements at level {j}");
        }
        let got = q.calendar_stats().moves;
        let residual: Vec<u64> = (0..MAX_CALENDAR_LEVELS)
            .map(|j| got[j] - self.moves[j] - seen[j])
            .collect();
        match popped.and_then(|id| self.level.remove(&id)) {
            None => assert!(
                residual.iter().all(|&r| r == 0),
                "step {step}: moves {got:?} unexplained (residual {residual:?})"
            ),
            Some(last) => {
                // Levels `served + 1 ..= last` each once, nothing else.
                let served = (1..=last)
                    .find(|&j| residual[j] == 1)
                    .map_or(last, |j| j - 1);
                for (j, &r) in residual.iter().enumerate() {
                    let want = u64::from(j > served && j <= last);
                    assert_eq!(
                        r, want,
                        "step {step}: popped element from level {last}: residual {residual:?}"
                    );
                }
            }
        }
        self.moves = got;
    }
}

fn compare_stats(got: CalendarStats, want: &CalendarStats, step: usize) {
    let strip = |s: CalendarStats| CalendarStats {
        moves: [0; MAX_CALENDAR_LEVELS],
        ..s
    };
    assert_eq!(strip(got), strip(*want), "step {step}: counters");
}

/// Runs `ops` on a calendar built from `cfg` and on the ideal calendar.
fn run(cfg: CalendarConfig, ops: &[Op]) {
    let mut q: Calendar<u32> = Calendar::new(cfg).unwrap();
    let mut m = Ideal::new(&cfg);
    let sizes = cfg.levels[..cfg.depth].to_vec();
    let mut levels = LevelTracker {
        level: HashMap::new(),
        moves: [0; MAX_CALENDAR_LEVELS],
    };
    let mut live: Vec<(Handle, u32)> = Vec::new();
    let (mut accepted, mut popped_total, mut removed_total) = (0usize, 0usize, 0usize);
    let mut next_id = 0u32;
    for (step, op) in ops.iter().enumerate() {
        let mut popped = None;
        match *op {
            Op::Insert(spec) => {
                let rank = m.rank_of(spec);
                let id = next_id;
                next_id += 1;
                let head = m.head;
                let want = m.insert(rank, id);
                match (q.insert(rank, id), want) {
                    (Ok(h), Ok(day)) => {
                        assert_eq!(q.scheduled_day(h), Some(day), "step {step}");
                        let level = q.level_of(h).unwrap();
                        assert_eq!(level, expected_level(day, head, &sizes), "step {step}");
                        levels.filed(id, level);
                        live.push((h, id));
                        accepted += 1;
                    }
                    (Err(InsertError::Full(v)), Err(true))
                    | (Err(InsertError::OutOfRange(v)), Err(false)) => assert_eq!(v, id),
                    (got, want) => panic!("step {step}: insert {rank}: {got:?} vs {want:?}"),
                }
            }
            Op::Enqueue(spec) => {
                let ahead = m.ahead_of(spec);
                let id = next_id;
                next_id += 1;
                let head = m.head;
                let want = m.enqueue(ahead, id);
                match (q.enqueue(ahead, id), want) {
                    (Ok(h), Ok(day)) => {
                        assert_eq!(q.get(h), Some((day * m.g, &id)), "step {step}");
                        let level = q.level_of(h).unwrap();
                        assert_eq!(level, expected_level(day, head, &sizes), "step {step}");
                        levels.filed(id, level);
                        live.push((h, id));
                        accepted += 1;
                    }
                    (Err(InsertError::Full(v)), Err(true))
                    | (Err(InsertError::OutOfRange(v)), Err(false)) => assert_eq!(v, id),
                    (got, want) => panic!("step {step}: enqueue {ahead}: {got:?} vs {want:?}"),
                }
            }
            Op::Pop => {
                let got = q.pop_min();
                assert_eq!(got, m.dequeue(), "step {step}: pop");
                if let Some((_, id)) = got {
                    live.retain(|&(_, i)| i != id);
                    popped = Some(id);
                    popped_total += 1;
                }
            }
            Op::Advance(quarters) => {
                let dt = if quarters < 12 {
                    u64::from(quarters) * m.g / 4
                } else {
                    u64::from(quarters).saturating_mul(m.g)
                };
                let now = m.clock.saturating_add(dt);
                q.advance(now);
                m.advance(now);
            }
            Op::Rotate => assert_eq!(q.rotate(), m.rotate(), "step {step}: rotate"),
            Op::Remove(k) => {
                if live.is_empty() {
                    continue;
                }
                let (h, id) = live.swap_remove(k % live.len());
                assert_eq!(q.remove(h), m.remove(id), "step {step}: remove {id}");
                assert_eq!(q.remove(h), None, "step {step}: stale handle refused");
                levels.level.remove(&id);
                removed_total += 1;
            }
            Op::SetRank(k, spec) => {
                if live.is_empty() {
                    continue;
                }
                let (h, id) = live[k % live.len()];
                let rank = m.rank_of(spec);
                let head = m.head;
                let old_day = q.scheduled_day(h).unwrap();
                let want = m.set_rank(id, rank);
                assert_eq!(
                    q.set_rank(h, rank),
                    want.map(|_| ()),
                    "step {step}: set_rank {id} -> {rank}"
                );
                if let Ok(day) = want {
                    assert_eq!(q.scheduled_day(h), Some(day));
                    assert_eq!(q.get(h), Some((rank, &id)));
                    if day != old_day {
                        // Filed afresh: a placement, not a move.
                        let level = q.level_of(h).unwrap();
                        assert_eq!(level, expected_level(day, head, &sizes), "step {step}");
                        levels.filed(id, level);
                    }
                }
            }
            Op::Peek => {
                assert_eq!(
                    q.peek().map(|(_, r, &i)| (r, i)),
                    m.peek(),
                    "step {step}: peek"
                );
                assert_eq!(q.first_day(), m.first_day(), "step {step}: first day");
                m.check_schedule(&q, step);
            }
        }
        assert_eq!(q.len(), m.map.len(), "step {step}: len");
        assert_eq!(
            accepted,
            popped_total + removed_total + q.len(),
            "step {step}: accounting"
        );
        assert_eq!(q.head_day(), m.head, "step {step}: head");
        compare_stats(q.calendar_stats(), &m.stats, step);
        levels.observe(&q, &live, popped, step);
        if step % 16 == 0 {
            q.check_invariants();
        }
    }
    q.check_invariants();
    // Drain: the whole remaining order must agree.
    q.advance(u64::MAX);
    m.advance(u64::MAX);
    loop {
        let got = q.dequeue();
        assert_eq!(got, m.dequeue(), "drain");
        let Some((_, id)) = got else { break };
        live.retain(|&(_, i)| i != id);
        popped_total += 1;
        levels.observe(&q, &live, Some(id), usize::MAX);
    }
    assert!(q.is_empty() && m.map.is_empty());
    assert_eq!(
        accepted,
        popped_total + removed_total,
        "accounting after drain"
    );
    q.check_invariants();
}

fn rotation() -> impl Strategy<Value = Rotation> {
    prop_oneof![
        Just(Rotation::Logical),
        Just(Rotation::Physical {
            work_conserving: true
        }),
        Just(Rotation::Physical {
            work_conserving: false
        }),
    ]
}

fn config(
    sizes: &[usize],
    g: u64,
    start: u64,
    cap: usize,
    reject: bool,
    rotation: Rotation,
) -> CalendarConfig {
    let mode = if reject {
        OutOfRange::Reject
    } else {
        OutOfRange::Clamp
    };
    CalendarConfig::hierarchical(sizes, cap)
        .granularity(g)
        .start(start)
        .beyond_reach(mode)
        .rotation(rotation)
}

const CASES: u32 = if cfg!(miri) { 2 } else { 160 };

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn flat_calendars_match_the_ideal(
        n in prop_oneof![Just(1usize), Just(2), Just(7), Just(64), Just(100)],
        g in prop_oneof![Just(1u64), Just(3), Just(8), Just(1000)],
        (seed, cap, reject, rot) in (any::<u64>(), 1usize..120, any::<bool>(), rotation()),
        ops in ops(500),
    ) {
        let start = match seed % 4 {
            0 | 1 => seed % 1_000,
            2 => seed,
            _ => u64::MAX - seed % (4 * n as u64 * g),
        };
        run(config(&[n], g, start, cap, reject, rot), &ops);
    }

    #[test]
    fn hierarchical_calendars_match_the_ideal_and_move_once_per_level(
        sizes in prop_oneof![
            Just(vec![4usize, 4, 4]),
            Just(vec![3, 5]),
            Just(vec![1, 3, 2]),
            Just(vec![2, 2, 2, 2]),
            Just(vec![5, 1, 3]),
            Just(vec![2, 3, 2, 3, 2, 2]),
        ],
        g in prop_oneof![Just(1u64), Just(3), Just(8)],
        (seed, cap, reject, rot) in (any::<u64>(), 1usize..120, any::<bool>(), rotation()),
        ops in ops(500),
    ) {
        let reach: u64 = sizes.iter().map(|&n| n as u64).product();
        let start = match seed % 4 {
            0 | 1 => seed % 1_000,
            2 => seed,
            _ => u64::MAX - seed % (4 * reach * g),
        };
        run(config(&sizes, g, start, cap, reject, rot), &ops);
    }
}

/// Every phase of the head against the top level: `n < reach` is filed in its own
/// day, `reach` is the first refused (or clamped to the last day), and the far
/// element leaves each coarse level exactly once on its way down.
#[test]
fn hierarchical_reach_and_one_move_per_level_at_every_phase() {
    for sizes in [
        &[4usize, 4, 4][..],
        &[3, 5],
        &[16, 16],
        &[16, 8, 8],
        &[2, 1, 3, 2],
    ] {
        let reach: u64 = sizes.iter().map(|&n| n as u64).product();
        let depth = sizes.len();
        let top_span = reach / *sizes.last().unwrap() as u64;
        for phase in 0..(2 * reach).min(3 * top_span + 7) {
            let cfg = CalendarConfig::hierarchical(sizes, 4)
                .start(phase)
                .beyond_reach(OutOfRange::Reject);
            let mut q: Calendar<u64> = Calendar::new(cfg).unwrap();
            assert_eq!(q.reach(), reach);
            let far = q.enqueue(reach - 1, 0).unwrap();
            assert_eq!(q.scheduled_day(far), Some(phase + reach - 1));
            assert_eq!(
                q.enqueue(reach, 1),
                Err(InsertError::OutOfRange(1)),
                "{sizes:?} phase {phase}"
            );
            let filed = q.level_of(far).unwrap();
            assert_eq!(filed, expected_level(phase + reach - 1, phase, sizes));
            q.check_invariants();
            assert_eq!(q.dequeue(), Some((phase + reach - 1, 0)));
            let s = q.calendar_stats();
            let mut want = [0u64; MAX_CALENDAR_LEVELS];
            for m in &mut want[1..=filed] {
                *m = 1;
            }
            assert_eq!(s.moves, want, "{sizes:?} phase {phase}");
            assert_eq!(s.rotations, reach - 1);
            assert!(filed < depth);

            let mut c: Calendar<u64> =
                Calendar::new(CalendarConfig::hierarchical(sizes, 4).start(phase)).unwrap();
            let h = c.enqueue(reach, 7).unwrap();
            assert_eq!(c.scheduled_day(h), Some(phase + reach - 1), "clamped");
            assert_eq!(c.calendar_stats().clamped, 1);
        }
    }
}

/// The paper's examples: 16 x 16 queues reach 256 periods, 16 x 8 x 8 reach 1024.
#[test]
fn paper_hierarchies_reach_the_product_of_their_levels() {
    let two: Calendar<u8> = Calendar::new(CalendarConfig::hierarchical(&[16, 16], 1)).unwrap();
    assert_eq!(two.reach(), 256);
    let three: Calendar<u8> = Calendar::new(CalendarConfig::hierarchical(&[16, 8, 8], 1)).unwrap();
    assert_eq!(three.reach(), 1024);
    assert_eq!(three.level_sizes(), [16, 8, 8]);
}

/// A long clock-like trace through a three-level calendar: the head rotates tens of
/// thousands of days and wraps every level many times; the order is the ideal one
/// and the cost is at most one move per element per level it was filed above 0.
#[test]
fn hierarchical_long_trace_serves_in_ideal_order() {
    let sizes = [8usize, 4, 8];
    let reach = 256u64;
    for rotation in [
        Rotation::Logical,
        Rotation::Physical {
            work_conserving: true,
        },
        Rotation::Physical {
            work_conserving: false,
        },
    ] {
        let cfg = CalendarConfig::hierarchical(&sizes, 512)
            .granularity(10)
            .rotation(rotation);
        let mut q: Calendar<(u64, u32)> = Calendar::new(cfg).unwrap();
        let mut ideal: BTreeMap<(u64, u32), ()> = BTreeMap::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut id = 0u32;
        let mut filed_above = 0u64;
        let mut now = 0u64;
        for step in 0..60_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if q.len() < 300 && x % 8 < 5 {
                let ahead = (x >> 8) % reach;
                let day = q.head_day() + ahead;
                let h = q.enqueue(ahead, (day, id)).unwrap();
                filed_above += q.level_of(h).unwrap() as u64;
                ideal.insert((day, id), ());
                id += 1;
            } else {
                now += (x >> 20) % 40;
                match q.dequeue_at(now) {
                    Some((_, (day, i))) => {
                        let ((want_day, want_id), ()) = ideal.pop_first().unwrap();
                        assert_eq!((day, i), (want_day, want_id), "step {step}");
                        if rotation
                            == (Rotation::Physical {
                                work_conserving: false,
                            })
                        {
                            assert!(day * 10 <= now, "step {step}: day {day} served at {now}");
                        }
                    }
                    None => {
                        let due = ideal.first_key_value().map(|(&(d, _), _)| d * 10);
                        assert!(
                            due.is_none_or(|t| t > now),
                            "step {step}: {due:?} not served"
                        );
                        assert_eq!(q.next_ready(now), due);
                    }
                }
            }
            if step % 4096 == 0 {
                q.check_invariants();
            }
        }
        let s = q.calendar_stats();
        assert!(s.rotations > 10_000, "only {} rotations", s.rotations);
        assert_eq!(s.past + s.clamped, 0);
        assert!(s.total_moves() <= filed_above);
        assert!(s.moves[1] > 1_000 && s.moves[2] > 100, "{:?}", s.moves);
    }
}

#[test]
fn the_calendar_is_a_queue_kind() {
    let kind: QueueKind = "calendar".parse().unwrap();
    assert_eq!(kind, QueueKind::Calendar);
    assert!(kind.is_circular() && kind.is_exact());
    let cfg = QueueConfig::new(64, 16).granularity(10).base(1_000);
    let mut q: AnyQueue<u32> = AnyQueue::new(kind, cfg).unwrap();
    assert_eq!(q.kind(), QueueKind::Calendar);
    let cal = q.as_calendar().unwrap();
    assert_eq!(
        (cal.head_day(), cal.reach(), cal.granularity()),
        (100, 64, 10)
    );
    q.insert(1_005, 1).unwrap();
    q.insert(990, 2).unwrap();
    q.insert(1_700, 3).unwrap();
    q.as_calendar_mut().unwrap().enqueue(2, 4).unwrap();
    let stats = q.stats();
    assert_eq!(
        (stats.underflow, stats.clamped_high),
        (1, 1),
        "990 past, 1700 beyond"
    );
    let order: Vec<u32> = std::iter::from_fn(|| q.pop_min().map(|(_, v)| v)).collect();
    assert_eq!(order, [1, 2, 4, 3]);
    // Served at the clamped day 163, the last of the reach from day 100.
    assert_eq!(q.stats().rotations, 63);
    q.check_invariants();
}

/// The edges: an empty calendar, a full one, one day, the last day there is.
#[test]
fn calendar_edges() {
    for cfg in [
        CalendarConfig::new(1, 2),
        CalendarConfig::hierarchical(&[1, 1, 1], 2),
        CalendarConfig::new(8, 2).rotation(Rotation::Physical {
            work_conserving: false,
        }),
    ] {
        let mut q: Calendar<u32> = Calendar::new(cfg).unwrap();
        assert!(q.is_empty());
        assert_eq!(q.dequeue(), None);
        assert!(q.peek().is_none());
        assert_eq!(
            (q.first_day(), q.next_due(), q.next_ready(5)),
            (None, None, None)
        );
        assert_eq!(
            q.head_day(),
            0,
            "an empty calendar does not rotate on dequeue"
        );
        q.enqueue(0, 1).unwrap();
        q.enqueue(0, 2).unwrap();
        assert_eq!(q.enqueue(0, 3), Err(InsertError::Full(3)));
        assert_eq!(q.insert(0, 3), Err(InsertError::Full(3)));
        assert_eq!(q.dequeue(), Some((0, 1)));
        q.enqueue(0, 4).unwrap();
        assert_eq!(q.dequeue(), Some((0, 2)));
        assert_eq!(q.dequeue(), Some((0, 4)));
        q.check_invariants();
    }

    // One day: everything is filed today; beyond is clamped to today.
    let mut one: Calendar<u32> = Calendar::new(CalendarConfig::new(1, 4)).unwrap();
    one.enqueue(5, 1).unwrap();
    one.insert(0, 2).unwrap();
    assert_eq!(one.calendar_stats().clamped, 1);
    assert_eq!(one.dequeue(), Some((0, 1)));

    // The last day there is: u64::MAX / g.
    let g = 1_000u64;
    let last = u64::MAX / g;
    let cfg = CalendarConfig::new(16, 8)
        .granularity(g)
        .start(u64::MAX - 3 * g);
    let mut top: Calendar<u32> = Calendar::new(cfg).unwrap();
    assert_eq!(top.head_day(), last - 3);
    let h = top.enqueue(10, 1).unwrap();
    assert_eq!(top.scheduled_day(h), Some(last), "clamped to the last day");
    assert_eq!(top.calendar_stats().clamped, 1);
    top.insert(u64::MAX, 2).unwrap();
    for _ in 0..3 {
        assert!(top.rotate());
    }
    assert_eq!(top.head_day(), last);
    assert!(!top.rotate(), "no day after the last");
    assert_eq!(top.dequeue(), Some((last * g, 1)));
    assert_eq!(top.dequeue(), Some((u64::MAX, 2)));
    let mut phys: Calendar<u32> = Calendar::new(cfg.rotation(Rotation::Physical {
        work_conserving: true,
    }))
    .unwrap();
    phys.advance(u64::MAX);
    assert_eq!(phys.head_day(), last);
    assert_eq!(phys.next_rotation(u64::MAX), None);
    phys.enqueue(0, 9).unwrap();
    assert_eq!(phys.dequeue(), Some((last * g, 9)));
    phys.check_invariants();
}
