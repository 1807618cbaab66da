//! A pipe's discipline in a [`PipeTree`](super::PipeTree): `ets` (strict
//! priority between levels, DRR by weight among the children that share a
//! level), its order exactly that of the general tree's `ets` node, its state
//! in a few dense bytes.
//!
//! What all pipes of one configuration share (each child's level, the unit of
//! each strict level, the shared levels' members and quanta) is a
//! [`Profile`]; what each pipe keeps is a [`Band`] (the word of queued levels,
//! in the pipe's node) and one [`Member`] record per child of a shared level,
//! four to a cache line. Shared level `g`'s round (its first and last member)
//! rides in the spare bytes of member record `g`: a shared level has two
//! members at least, so there are records enough.

use super::super::ets::MAX_ETS_UNITS;
use super::super::levels::MAX_LEVELS;

/// `Member::next` of the last member of the round.
const NIL: u8 = u8::MAX;
/// `Member::next` of a member out of the round.
const IDLE: u8 = u8::MAX - 1;
/// `Profile::place` mark of a shared level's unit, `Profile::entry` mark of
/// a shared level.
const SHARED: u8 = 1 << 7;

/// What the pipes of one configuration share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Profile {
    /// Per unit: its level, `| SHARED` for a shared level's members.
    place: [u8; MAX_ETS_UNITS],
    /// Per unit of a shared level: its member index.
    member: [u8; MAX_ETS_UNITS],
    /// Per level: its unit, or `SHARED | g` for shared level `g`.
    entry: [u8; MAX_LEVELS],
    /// Per member: its unit.
    unit: Vec<u8>,
    /// Per member: its quantum, its weight times the MTU.
    quantum: Vec<u64>,
    /// Per shared level: its members' units, one bit each.
    groups: Vec<u64>,
    /// Per four levels from level 0 to the last used, per pattern of those
    /// levels queued: their units, one bit each (see `Band::queued_units`).
    nibbles: Vec<[u64; 16]>,
}

impl Profile {
    /// The profile of children with these `(priority, weight)`s (priorities
    /// below [`MAX_LEVELS`], at most [`MAX_ETS_UNITS`] children: validated).
    pub(super) fn new(children: &[(u32, u32)], mtu: u32) -> Profile {
        let mut by_level: Vec<Vec<u8>> = vec![Vec::new(); MAX_LEVELS];
        for (u, &(prio, _)) in children.iter().enumerate() {
            by_level[prio as usize].push(u as u8);
        }
        let mut p = Profile {
            place: [0; MAX_ETS_UNITS],
            member: [0; MAX_ETS_UNITS],
            entry: [0; MAX_LEVELS],
            unit: Vec::new(),
            quantum: Vec::new(),
            groups: Vec::new(),
            nibbles: Vec::new(),
        };
        for (level, units) in by_level.iter().enumerate() {
            match units[..] {
                [] => {}
                [u] => {
                    p.entry[level] = u;
                    p.place[u as usize] = level as u8;
                }
                _ => {
                    p.entry[level] = SHARED | p.groups.len() as u8;
                    let mut bits = 0u64;
                    for &u in units {
                        p.place[u as usize] = SHARED | level as u8;
                        p.member[u as usize] = p.unit.len() as u8;
                        p.unit.push(u);
                        let weight = children[u as usize].1;
                        p.quantum.push(u64::from(weight) * u64::from(mtu));
                        bits |= 1 << u;
                    }
                    p.groups.push(bits);
                }
            }
        }
        p.nibbles = nibbles(&by_level);
        p
    }

    /// Members of the shared levels.
    pub(super) fn members(&self) -> usize {
        self.unit.len()
    }

    /// The shared level `level` is, by its entry.
    #[inline(always)]
    fn group_of(&self, level: u8) -> usize {
        usize::from(self.entry[usize::from(level) & (MAX_LEVELS - 1)] & !SHARED)
    }
}

/// Per four levels of `by_level` (each level's units), up to the last level
/// with any, per pattern of those four queued: the bits of their units.
fn nibbles(by_level: &[Vec<u8>]) -> Vec<[u64; 16]> {
    let used = by_level
        .iter()
        .rposition(|u| !u.is_empty())
        .map_or(0, |l| l + 1);
    let bits = |level: usize| -> u64 {
        by_level
            .get(level)
            .map_or(0, |units| units.iter().fold(0, |b, &u| b | 1 << u))
    };
    (0..used.div_ceil(4))
        .map(|k| {
            let mut table = [0u64; 16];
            for (pattern, units) in table.iter_mut().enumerate() {
                *units = (0..4)
                    .filter(|b| pattern & (1 << b) != 0)
                    .fold(0, |acc, b| acc | bits(4 * k + b));
            }
            table
        })
        .collect()
}

/// A pipe's own state: its queued levels, and where its members are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Band {
    /// Bit `l` set: level `l` has a queued unit.
    pub(super) mask: u64,
    /// Its first member record's index.
    pub(super) members_at: u32,
    /// Its profile's index.
    pub(super) profile: u32,
}

/// A member of a shared level, as a DRR core keeps a flow; record `g` also
/// holds shared level `g`'s round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Member {
    deficit: u64,
    head_len: u32,
    next: u8,
    /// Shared level `g`'s first member (in record `g`).
    head: u8,
    /// Its last.
    tail: u8,
}

impl Default for Member {
    fn default() -> Self {
        Member {
            deficit: 0,
            head_len: 0,
            next: IDLE,
            head: NIL,
            tail: NIL,
        }
    }
}

impl Band {
    /// An empty band of profile `profile` whose members start at `members_at`.
    pub(super) fn new(profile: u32, members_at: u32) -> Band {
        Band {
            mask: 0,
            members_at,
            profile,
        }
    }

    /// Whether no unit is queued.
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.mask == 0
    }

    /// Unit `u` became backlogged and eligible, its head `len` bytes.
    #[inline]
    pub(super) fn activate(&mut self, p: &Profile, m: &mut [Member], u: u32, len: u32) {
        let place = p.place[u as usize & (MAX_ETS_UNITS - 1)];
        let level = place & !SHARED;
        self.mask |= 1 << level;
        if place & SHARED != 0 {
            let k = p.member[u as usize & (MAX_ETS_UNITS - 1)];
            let rec = &mut m[usize::from(k)];
            rec.head_len = len;
            rec.deficit = p.quantum[usize::from(k)];
            push_back(m, p.group_of(level), k);
        }
    }

    /// The unit to serve next.
    #[inline(always)]
    pub(super) fn select(&mut self, p: &Profile, m: &mut [Member]) -> Option<u32> {
        if self.mask == 0 {
            return None;
        }
        let e = p.entry[self.mask.trailing_zeros() as usize];
        if e & SHARED == 0 {
            return Some(u32::from(e));
        }
        peek(p, m, usize::from(e & !SHARED)).map(|k| u32::from(p.unit[usize::from(k)]))
    }

    /// Unit `u`, the one `select` returned, sent; `next_len` is its next
    /// head's length, `None` if it left. Returns the unit to serve next.
    #[inline(always)]
    pub(super) fn served_select(
        &mut self,
        p: &Profile,
        m: &mut [Member],
        u: u32,
        next_len: Option<u32>,
    ) -> Option<u32> {
        let place = p.place[u as usize & (MAX_ETS_UNITS - 1)];
        let level = place & !SHARED;
        if place & SHARED != 0 {
            let k = p.member[u as usize & (MAX_ETS_UNITS - 1)];
            if let Some(next) = served_peek(p, m, p.group_of(level), k, next_len) {
                return Some(u32::from(p.unit[usize::from(next)]));
            }
        } else if next_len.is_some() {
            return Some(u);
        }
        self.mask &= !(1 << level);
        self.select(p, m)
    }

    /// Bit `u` set for every unit of a queued level (a shared level's
    /// members all): the units a dequeue may soon serve.
    #[inline]
    pub(super) fn queued_units(&self, p: &Profile) -> u64 {
        let mut levels = self.mask;
        let mut units = 0u64;
        for table in &p.nibbles {
            if levels == 0 {
                break;
            }
            units |= table[(levels & 15) as usize];
            levels >>= 4;
        }
        units
    }

    /// Checks that a level is queued exactly when a unit of it is, and that
    /// each round holds each queued member of its level once.
    ///
    /// # Panics
    /// On the first disagreement.
    pub(super) fn check(&self, p: &Profile, m: &[Member], queued: impl Fn(u32) -> bool) {
        let mut in_rounds = 0u64;
        for (g, &bits) in p.groups.iter().enumerate() {
            let mut round = 0u64;
            let mut k = m[g].head;
            while k != NIL {
                let u = p.unit[usize::from(k)];
                assert_eq!(round & (1 << u), 0, "member {k} twice in its round");
                assert_ne!(bits & (1 << u), 0, "member {k} in another level's round");
                assert!(queued(u32::from(u)), "member {k} idle in the round");
                round |= 1 << u;
                k = m[usize::from(k)].next;
            }
            let level = p.place[bits.trailing_zeros() as usize] & !SHARED;
            assert_eq!(self.mask & (1 << level) != 0, round != 0, "level {level}");
            in_rounds |= round;
        }
        for (k, rec) in m.iter().enumerate().take(p.members()) {
            let idle = in_rounds & (1 << p.unit[k]) == 0;
            assert_eq!(rec.next == IDLE, idle, "member {k}'s link");
            assert!(!idle || rec.deficit == 0, "idle member {k} keeps a deficit");
        }
    }
}

/// Member `k` of shared level `g` sent: DRR's report and next turn, from one
/// lookup while `k` keeps its turn.
#[inline(always)]
fn served_peek(p: &Profile, m: &mut [Member], g: usize, k: u8, next: Option<u32>) -> Option<u8> {
    debug_assert_eq!(k, m[g].head, "served {k} out of its turn");
    let rec = &mut m[usize::from(k)];
    rec.deficit -= u64::from(rec.head_len);
    match next {
        Some(len) => {
            rec.head_len = len;
            if rec.deficit >= u64::from(len) {
                return Some(k);
            }
        }
        None => {
            rec.deficit = 0;
            pop_front(m, g);
            m[usize::from(k)].next = IDLE;
        }
    }
    peek(p, m, g)
}

/// The member of shared level `g` whose turn it is, recharging and rotating
/// the ones whose deficit no longer covers their head.
#[inline]
fn peek(p: &Profile, m: &mut [Member], g: usize) -> Option<u8> {
    loop {
        let k = m[g].head;
        if k == NIL {
            return None;
        }
        let rec = &mut m[usize::from(k)];
        if rec.deficit >= u64::from(rec.head_len) {
            return Some(k);
        }
        rec.deficit += p.quantum[usize::from(k)];
        if m[g].head != m[g].tail {
            pop_front(m, g);
            push_back(m, g, k);
        }
    }
}

#[inline]
fn push_back(m: &mut [Member], g: usize, k: u8) {
    m[usize::from(k)].next = NIL;
    let tail = m[g].tail;
    if tail == NIL {
        m[g].head = k;
    } else {
        m[usize::from(tail)].next = k;
    }
    m[g].tail = k;
}

#[inline]
fn pop_front(m: &mut [Member], g: usize) {
    let next = m[usize::from(m[g].head)].next;
    m[g].head = next;
    if next == NIL {
        m[g].tail = NIL;
    }
}

#[cfg(test)]
mod tests {
    use super::{Band, Profile};

    /// `queued_units` by its definition: every unit of every queued level.
    fn by_definition(children: &[(u32, u32)], mask: u64) -> u64 {
        children
            .iter()
            .enumerate()
            .filter(|&(_, &(prio, _))| mask & (1 << prio) != 0)
            .fold(0, |bits, (u, _)| bits | 1 << u)
    }

    // Plain indexing only (no store lookups): nothing for miri to add.
    #[cfg_attr(miri, ignore)]
    #[test]
    fn queued_units_of_every_pattern_of_levels() {
        let hqos: Vec<(u32, u32)> = (0..16).map(|u| (u.min(12), 1 + u % 3)).collect();
        let sparse = vec![(5, 1), (0, 1), (63, 2), (5, 3), (17, 1), (63, 1), (4, 1)];
        let alone = vec![(0, 1)];
        let high = vec![(40, 1), (40, 2)];
        for children in [hqos, sparse, alone, high] {
            let p = Profile::new(&children, 1500);
            let levels: Vec<u32> = {
                let mut l: Vec<u32> = children.iter().map(|c| c.0).collect();
                l.sort_unstable();
                l.dedup();
                l
            };
            for pattern in 0u64..1 << levels.len() {
                let mask = levels
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| pattern & (1 << i) != 0)
                    .fold(0u64, |m, (_, &l)| m | 1 << l);
                let band = Band {
                    mask,
                    ..Band::default()
                };
                assert_eq!(
                    band.queued_units(&p),
                    by_definition(&children, mask),
                    "{children:?}, levels {mask:#x}"
                );
            }
        }
    }
}
