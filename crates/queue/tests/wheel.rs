//! The timing wheel against an ordered-map model of its rules: slot-granular release
//! times, a cursor that follows `now` but never passes a non-empty slot, a horizon
//! of `N` slots, past due times released at once.

use std::collections::{BTreeMap, HashMap};

use eiffel_queue::{Handle, InsertError, OutOfRange, RankError, TimingWheel, WheelConfig};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Insert(i64),
    Advance(u32),
    Remove(usize),
    Reschedule(usize, i64),
}

struct Model {
    map: BTreeMap<(u64, u64), (u64, u32)>,
    loc: HashMap<u32, (u64, u64)>,
    cursor: u64,
    seq: u64,
    n: u64,
    g: u64,
    clamp: bool,
}

impl Model {
    fn advance(&mut self, now: u64) {
        let target = now / self.g;
        if target > self.cursor {
            self.cursor = match self.map.keys().next() {
                Some(&(s, _)) => target.min(s),
                None => target,
            };
        }
    }
    fn place(&self, due: u64) -> Option<u64> {
        let s = due / self.g;
        if s < self.cursor {
            Some(self.cursor)
        } else if s - self.cursor < self.n {
            Some(s)
        } else if self.clamp {
            Some(self.cursor + self.n - 1)
        } else {
            None
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 2 } else { 256 }, ..ProptestConfig::default() })]

    #[test]
    fn wheel_matches_the_model(
        n in prop_oneof![Just(1usize), Just(8), Just(100)],
        g in prop_oneof![Just(1u64), Just(10), Just(1000)],
        clamp in any::<bool>(),
        ops in proptest::collection::vec(prop_oneof![
            5 => (-2_000i64..300_000).prop_map(Op::Insert),
            4 => (0u32..50_000).prop_map(Op::Advance),
            1 => any::<usize>().prop_map(Op::Remove),
            1 => (any::<usize>(), -2_000i64..300_000).prop_map(|(i, d)| Op::Reschedule(i, d)),
        ], 1..300),
    ) {
        let mode = if clamp { OutOfRange::Clamp } else { OutOfRange::Reject };
        let mut w = TimingWheel::new(WheelConfig::new(n, g, 64).beyond_horizon(mode)).unwrap();
        let mut m = Model { map: BTreeMap::new(), loc: HashMap::new(), cursor: 0, seq: 0, n: n as u64, g, clamp };
        let mut live: Vec<(Handle, u32)> = Vec::new();
        let mut now = 0u64;
        let mut next = 0u32;
        for op in ops {
            match op {
                Op::Insert(off) => {
                    let due = now.saturating_add_signed(off * g as i64 / 100);
                    m.advance(now);
                    let want = if m.map.len() >= 64 { None } else { m.place(due) };
                    match w.insert(now, due, next) {
                        Ok(h) => {
                            let s = want.expect("model accepts");
                            m.seq += 1;
                            m.map.insert((s, m.seq), (due, next));
                            m.loc.insert(next, (s, m.seq));
                            live.push((h, next));
                        }
                        Err(InsertError::Full(_)) => prop_assert!(m.map.len() >= 64),
                        Err(InsertError::OutOfRange(v)) => {
                            prop_assert_eq!(v, next);
                            prop_assert!(want.is_none() && m.map.len() < 64);
                        }
                    }
                    next += 1;
                }
                Op::Advance(dt) => {
                    now += u64::from(dt);
                    m.advance(now);
                    loop {
                        m.advance(now);
                        let want = match m.map.iter().next() {
                            Some((&k, &v)) if k.0 <= now / g => Some((k, v)),
                            _ => None,
                        };
                        let got = w.pop_due(now);
                        prop_assert_eq!(got, want.map(|(_, v)| v));
                        let Some((k, (_, id))) = want else { break };
                        m.map.remove(&k);
                        m.loc.remove(&id);
                        live.retain(|&(_, i)| i != id);
                    }
                    let expect_next = m.map.keys().next().map(|&(s, _)| s * g);
                    prop_assert_eq!(w.next_due(), expect_next);
                }
                Op::Remove(k) => {
                    if live.is_empty() { continue; }
                    let (h, id) = live.swap_remove(k % live.len());
                    let key = m.loc.remove(&id).unwrap();
                    prop_assert_eq!(w.remove(h), m.map.remove(&key));
                }
                Op::Reschedule(k, off) => {
                    if live.is_empty() { continue; }
                    let (h, id) = live[k % live.len()];
                    let due = now.saturating_add_signed(off * g as i64 / 100);
                    let key = m.loc[&id];
                    match m.place(due) {
                        None => prop_assert_eq!(w.reschedule(h, due), Err(RankError::OutOfRange)),
                        Some(s) => {
                            prop_assert_eq!(w.reschedule(h, due), Ok(()));
                            m.map.remove(&key);
                            let new_key = if s == key.0 { key } else { m.seq += 1; (s, m.seq) };
                            m.map.insert(new_key, (due, id));
                            m.loc.insert(id, new_key);
                        }
                    }
                }
            }
            prop_assert_eq!(w.len(), m.map.len());
        }
        w.check_invariants();
    }
}
