//! The flow table: flow keys to dense flow ids, with idle expiry and LRU eviction.
//!
//! # Structure
//! All storage is allocated by [`FlowTable::new`] and never grows:
//! - `entries[id]`: one slot per flow id `0..max_flows` holding the key, its hash, the
//!   leaf the rules chose, the time of the last packet, and the links of an intrusive
//!   doubly linked list. A live entry is on the *recency list* (least recently seen at
//!   the head); a free entry is on the *free list* (singly linked through `next`).
//! - `index`: an open-addressing hash index of `2^k >= 2 * max_flows` buckets holding
//!   entry ids (load factor at most 1/2), probed linearly. Deletion shifts later
//!   members of the probe run back (no tombstones), so lookups never degrade.
//!
//! # Operations and cost
//! - [`FlowTable::lookup`]: hash the key (SipHash with a per-table random key, so a
//!   sender cannot aim collisions at the table), probe, move the entry to the tail of
//!   the recency list. New flow: take a free id, or recycle the head of the recency
//!   list: *expired* when it has been idle for `idle_timeout`, *evicted* (the least
//!   recently seen live flow) otherwise. O(1) expected, no allocation.
//! - [`FlowTable::expire`]: frees flows idle for `idle_timeout`, oldest first, at most
//!   `budget` of them, so a caller bounds the work per call. O(1) per expired flow.
//!
//! A packet of a flow that is still in the table but has been idle for `idle_timeout`
//! starts a new flow (counted as one expiry and one creation; the rules run again).
//!
//! # Time
//! `now` is passed in; nothing here reads a clock. Time that goes backwards is
//! treated as no time passing.
//!
//! # Invariants (checked by `check_invariants` in tests)
//! - every id is either on the free list or on the recency list, exactly once;
//! - the index holds exactly the live ids, each reachable from its home bucket without
//!   crossing an empty bucket;
//! - the recency list is ordered by time of last packet when `now` never decreases.
//!
//! # Queued packets
//! A flow expires or is evicted by packet arrivals alone: the table does not know what
//! a scheduler still holds. When a flow id is recycled while packets of the old flow
//! are still queued, those packets are accounted to the new flow; an idle timeout
//! above the longest queueing delay (a shaper's horizon) rules this out for expiry,
//! and [`FlowCounters::evicted`] counts the cases where capacity forced it.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

use eiffel_sched::{ClassId, ConfigError, Duration, FlowId, Nanos};

use crate::wire::FlowKey;

const NIL: u32 = u32::MAX;

/// Flow-table sizing and expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowTableConfig {
    /// Most flows tracked at once; flow ids are `0..max_flows`.
    pub max_flows: u32,
    /// A flow with no packet for this long expires.
    pub idle_timeout: Duration,
}

/// Counts of flow-table events since construction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCounters {
    /// Packets looked up.
    pub lookups: u64,
    /// Flows created (first packet, or first packet after expiry).
    pub created: u64,
    /// Flows that expired after being idle for the timeout.
    pub expired: u64,
    /// Live flows pushed out because the table was full (least recently seen first).
    pub evicted: u64,
}

/// What [`FlowTable::lookup`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct FlowHit {
    /// The flow's id.
    pub flow: FlowId,
    /// The leaf chosen for the flow when it was created.
    pub class: ClassId,
    /// Whether this packet created the flow.
    pub created: bool,
    /// The key of a live flow evicted to make room for this one (its id is now
    /// `flow`).
    pub evicted: Option<FlowKey>,
}

/// A key's hash in one flow table ([`FlowTable::hash`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHash {
    /// The table that computed it (its serial number).
    table: u64,
    value: u64,
}

/// Serial numbers of flow tables, so that a hash is only trusted by its table.
static SERIALS: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy, Debug)]
struct Entry {
    key: FlowKey,
    hash: u64,
    last_seen: Nanos,
    class: ClassId,
    /// Recency list: older neighbour; `NIL` at the head. Unused when free.
    prev: u32,
    /// Recency list: newer neighbour; free list: next free id. `NIL` ends either.
    next: u32,
    live: bool,
}

/// A bounded table of flows keyed by [`FlowKey`].
#[derive(Clone, Debug)]
pub struct FlowTable {
    entries: Box<[Entry]>,
    /// Bucket -> entry id, `NIL` when empty. Length is a power of two.
    index: Box<[u32]>,
    mask: usize,
    hasher: RandomState,
    /// This table's serial number: a hash is trusted by the table that
    /// computed it and its clones, which hash with the same keys.
    serial: u64,
    /// Least recently seen live flow.
    head: u32,
    /// Most recently seen live flow.
    tail: u32,
    free: u32,
    live: u32,
    idle_timeout: Nanos,
    counters: FlowCounters,
}

impl FlowTable {
    /// The largest supported `max_flows`.
    pub const MAX_FLOWS: u32 = 1 << 24;

    /// A table for `cfg.max_flows` flows, all storage allocated now.
    ///
    /// # Errors
    /// `max_flows` outside `1..=MAX_FLOWS`, or a zero idle timeout.
    pub fn new(cfg: FlowTableConfig) -> Result<FlowTable, ConfigError> {
        if cfg.max_flows == 0 || cfg.max_flows > Self::MAX_FLOWS {
            return Err(ConfigError::OutOfRange {
                what: "max_flows",
                value: u64::from(cfg.max_flows),
                range: "1..=16777216",
            });
        }
        if cfg.idle_timeout.is_zero() {
            return Err(ConfigError::OutOfRange {
                what: "idle_timeout (ns)",
                value: 0,
                range: "1..",
            });
        }
        let n = cfg.max_flows as usize;
        let entries = (0..cfg.max_flows)
            .map(|id| Entry {
                key: FlowKey::MALFORMED,
                hash: 0,
                last_seen: 0,
                class: 0,
                prev: NIL,
                next: if id + 1 < cfg.max_flows { id + 1 } else { NIL },
                live: false,
            })
            .collect();
        let buckets = (2 * n).next_power_of_two();
        Ok(FlowTable {
            entries,
            index: vec![NIL; buckets].into_boxed_slice(),
            mask: buckets - 1,
            hasher: RandomState::new(),
            serial: SERIALS.fetch_add(1, Ordering::Relaxed),
            head: NIL,
            tail: NIL,
            free: 0,
            live: 0,
            idle_timeout: cfg.idle_timeout.as_nanos(),
            counters: FlowCounters::default(),
        })
    }

    /// Finds the flow of `key` at time `now`, creating it if needed; `classify` picks
    /// the leaf of a new flow (it runs only on creation).
    pub fn lookup(
        &mut self,
        key: &FlowKey,
        now: Nanos,
        classify: impl FnOnce(&FlowKey) -> ClassId,
    ) -> FlowHit {
        let hash = self.hash(key);
        self.lookup_hashed(key, hash, now, classify)
    }

    /// The hash [`FlowTable::lookup`] computes for `key` in this table, for the
    /// steps of a lookup split over a burst of packets: hash every key and
    /// [`FlowTable::prefetch_bucket`], then [`FlowTable::prefetch_entry`], then
    /// [`FlowTable::lookup_hashed`], so that the cache misses of the burst's
    /// lookups overlap instead of following one another.
    #[inline]
    #[must_use]
    pub fn hash(&self, key: &FlowKey) -> KeyHash {
        KeyHash {
            table: self.serial,
            value: self.hasher.hash_one(key.packed()),
        }
    }

    /// Hints the cache to load the index bucket where a lookup of `hash` starts.
    #[inline]
    pub fn prefetch_bucket(&self, hash: KeyHash) {
        if let Some(b) = self.index.get(self.home(hash.value)) {
            eiffel_queue::prefetch(b);
        }
    }

    /// Hints the cache to load the entry the first bucket of `hash`'s probe
    /// names (the flow a lookup most likely finds); reads that bucket.
    #[inline]
    pub fn prefetch_entry(&self, hash: KeyHash) {
        let id = self
            .index
            .get(self.home(hash.value))
            .copied()
            .unwrap_or(NIL);
        if let Some(e) = self.entries.get(id as usize) {
            eiffel_queue::prefetch(e);
        }
    }

    /// [`FlowTable::lookup`] with the key's hash computed beforehand by
    /// [`FlowTable::hash`]. A hash computed by another table is recomputed.
    pub fn lookup_hashed(
        &mut self,
        key: &FlowKey,
        hash: KeyHash,
        now: Nanos,
        classify: impl FnOnce(&FlowKey) -> ClassId,
    ) -> FlowHit {
        self.counters.lookups += 1;
        let hash = if hash.table == self.serial {
            hash.value
        } else {
            self.hasher.hash_one(key.packed())
        };
        if let Some((_, id)) = self.find(key, hash) {
            let e = &mut self.entries[id as usize];
            let idle = now.saturating_sub(e.last_seen) >= self.idle_timeout;
            e.last_seen = now;
            if idle {
                e.class = classify(key);
                self.counters.expired += 1;
                self.counters.created += 1;
            }
            let class = e.class;
            self.touch(id);
            return FlowHit {
                flow: id,
                class,
                created: idle,
                evicted: None,
            };
        }

        let mut evicted = None;
        let id = if self.free != NIL {
            let id = self.free;
            self.free = self.entries[id as usize].next;
            id
        } else {
            // Full: recycle the least recently seen flow.
            let id = self.head;
            let old = self.entries[id as usize];
            if now.saturating_sub(old.last_seen) >= self.idle_timeout {
                self.counters.expired += 1;
            } else {
                self.counters.evicted += 1;
                evicted = Some(old.key);
            }
            self.unlink(id);
            self.unindex(old.hash, id);
            self.live -= 1;
            id
        };
        let class = classify(key);
        self.entries[id as usize] = Entry {
            key: *key,
            hash,
            last_seen: now,
            class,
            prev: NIL,
            next: NIL,
            live: true,
        };
        self.push_tail(id);
        self.insert_index(hash, id);
        self.live += 1;
        self.counters.created += 1;
        FlowHit {
            flow: id,
            class,
            created: true,
            evicted,
        }
    }

    /// Frees up to `budget` flows idle for the timeout at `now`, least recently seen
    /// first, calling `on_expire` with each one's id and key. Returns how many expired.
    pub fn expire(
        &mut self,
        now: Nanos,
        budget: usize,
        mut on_expire: impl FnMut(FlowId, &FlowKey),
    ) -> usize {
        let mut done = 0;
        while done < budget && self.head != NIL {
            let id = self.head;
            let e = self.entries[id as usize];
            if now.saturating_sub(e.last_seen) < self.idle_timeout {
                break;
            }
            self.unlink(id);
            self.unindex(e.hash, id);
            let slot = &mut self.entries[id as usize];
            slot.live = false;
            slot.next = self.free;
            self.free = id;
            self.live -= 1;
            self.counters.expired += 1;
            on_expire(id, &e.key);
            done += 1;
        }
        done
    }

    /// The key of a live flow.
    #[must_use]
    pub fn key(&self, flow: FlowId) -> Option<&FlowKey> {
        self.entries
            .get(flow as usize)
            .filter(|e| e.live)
            .map(|e| &e.key)
    }

    /// The earliest time at which a flow will have been idle for the timeout (when a
    /// call to [`FlowTable::expire`] will find work), or `None` when the table is
    /// empty. Meaningful when `now` never decreases.
    #[must_use]
    pub fn next_expiry(&self) -> Option<Nanos> {
        (self.head != NIL).then(|| {
            self.entries[self.head as usize]
                .last_seen
                .saturating_add(self.idle_timeout)
        })
    }

    /// Live flows.
    #[must_use]
    pub fn len(&self) -> u32 {
        self.live
    }

    /// Whether no flow is live.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The configured maximum number of flows.
    #[must_use]
    pub fn capacity(&self) -> u32 {
        self.entries.len() as u32
    }

    /// The idle timeout.
    #[must_use]
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_nanos(self.idle_timeout)
    }

    /// Event counters since construction.
    #[must_use]
    pub fn counters(&self) -> &FlowCounters {
        &self.counters
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        // The low bits of SipHash are as good as the high ones.
        hash as usize & self.mask
    }

    /// Bucket and id of `key`, if live.
    fn find(&self, key: &FlowKey, hash: u64) -> Option<(usize, u32)> {
        let mut b = self.home(hash);
        loop {
            let id = self.index[b];
            if id == NIL {
                return None;
            }
            let e = &self.entries[id as usize];
            if e.hash == hash && e.key == *key {
                return Some((b, id));
            }
            b = (b + 1) & self.mask;
        }
    }

    fn insert_index(&mut self, hash: u64, id: u32) {
        let mut b = self.home(hash);
        // Load factor <= 1/2 guarantees an empty bucket.
        while self.index[b] != NIL {
            b = (b + 1) & self.mask;
        }
        self.index[b] = id;
    }

    /// Removes `id` from the index, shifting later members of its probe run back so
    /// that every remaining id stays reachable from its home bucket.
    fn unindex(&mut self, hash: u64, id: u32) {
        let mut hole = self.home(hash);
        while self.index[hole] != id {
            debug_assert!(self.index[hole] != NIL, "flow {id} missing from the index");
            hole = (hole + 1) & self.mask;
        }
        let mut b = hole;
        loop {
            b = (b + 1) & self.mask;
            let moved = self.index[b];
            if moved == NIL {
                break;
            }
            let home = self.home(self.entries[moved as usize].hash);
            // `moved` may fill the hole unless its home lies cyclically in (hole, b].
            let home_after_hole = (home.wrapping_sub(hole) & self.mask) != 0
                && (home.wrapping_sub(hole) & self.mask) <= (b.wrapping_sub(hole) & self.mask);
            if !home_after_hole {
                self.index[hole] = moved;
                hole = b;
            }
        }
        self.index[hole] = NIL;
    }

    fn unlink(&mut self, id: u32) {
        let Entry { prev, next, .. } = self.entries[id as usize];
        if prev == NIL {
            self.head = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
    }

    fn push_tail(&mut self, id: u32) {
        let e = &mut self.entries[id as usize];
        e.prev = self.tail;
        e.next = NIL;
        if self.tail == NIL {
            self.head = id;
        } else {
            self.entries[self.tail as usize].next = id;
        }
        self.tail = id;
    }

    fn touch(&mut self, id: u32) {
        if self.tail != id {
            self.unlink(id);
            self.push_tail(id);
        }
    }

    /// Checks every structural invariant; for tests.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let n = self.entries.len();
        let mut seen = vec![false; n];
        let mut live = 0;
        let mut id = self.head;
        let mut prev = NIL;
        while id != NIL {
            let e = &self.entries[id as usize];
            assert!(e.live, "flow {id} on the recency list is not live");
            assert!(!seen[id as usize], "flow {id} twice on the recency list");
            assert_eq!(e.prev, prev, "flow {id}: broken back link");
            seen[id as usize] = true;
            live += 1;
            let (b, found) = self.find(&e.key, e.hash).expect("live flow not indexed");
            assert_eq!(found, id, "bucket {b} resolves flow {id}'s key to {found}");
            prev = id;
            id = e.next;
        }
        assert_eq!(prev, self.tail, "tail mismatch");
        assert_eq!(live, self.live, "live count mismatch");
        let mut id = self.free;
        while id != NIL {
            assert!(!self.entries[id as usize].live, "free flow {id} is live");
            assert!(
                !seen[id as usize],
                "flow {id} both free and live or free twice"
            );
            seen[id as usize] = true;
            id = self.entries[id as usize].next;
        }
        assert!(seen.iter().all(|&s| s), "an id is neither free nor live");
        let indexed = self.index.iter().filter(|&&b| b != NIL).count();
        assert_eq!(indexed as u32, self.live, "index holds stale ids");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{IpKey, Ports};
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::net::{IpAddr, Ipv4Addr};

    fn key(n: u16) -> FlowKey {
        FlowKey {
            vlan: None,
            inner_vlan: None,
            ether_type: crate::wire::ETHERTYPE_IPV4,
            ip: Some(IpKey {
                src: IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)),
                dst: IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)),
                protocol: 17,
                dscp: 0,
                ports: Some(Ports { src: n, dst: 9 }),
            }),
        }
    }

    fn table(max_flows: u32, idle_timeout: Nanos) -> FlowTable {
        FlowTable::new(FlowTableConfig {
            max_flows,
            idle_timeout: Duration::from_nanos(idle_timeout),
        })
        .unwrap()
    }

    #[test]
    fn rejects_bad_sizes() {
        assert!(FlowTable::new(FlowTableConfig {
            max_flows: 0,
            idle_timeout: Duration::from_nanos(1)
        })
        .is_err());
        assert!(FlowTable::new(FlowTableConfig {
            max_flows: 1,
            idle_timeout: Duration::from_nanos(0)
        })
        .is_err());
        assert!(FlowTable::new(FlowTableConfig {
            max_flows: FlowTable::MAX_FLOWS + 1,
            idle_timeout: Duration::from_nanos(1)
        })
        .is_err());
    }

    #[test]
    fn creates_once_then_hits() {
        let mut t = table(4, 100);
        let a = t.lookup(&key(1), 0, |_| 7);
        assert!(a.created);
        assert_eq!(a.class, 7);
        let b = t.lookup(&key(1), 50, |_| unreachable!("rules run only on creation"));
        assert_eq!((b.flow, b.class, b.created), (a.flow, 7, false));
        assert_eq!(t.len(), 1);
        t.check_invariants();
    }

    #[test]
    fn full_table_evicts_least_recently_seen() {
        let mut t = table(2, 1_000);
        let f1 = t.lookup(&key(1), 0, |_| 0).flow;
        let _ = t.lookup(&key(2), 1, |_| 0);
        let _ = t.lookup(&key(1), 2, |_| 0);
        let hit = t.lookup(&key(3), 3, |_| 0);
        assert_eq!(hit.evicted, Some(key(2)));
        assert_ne!(hit.flow, f1);
        assert_eq!(t.counters().evicted, 1);
        t.check_invariants();
    }

    #[test]
    fn idle_flows_expire_oldest_first_within_budget() {
        let mut t = table(8, 10);
        for i in 0..5 {
            let _ = t.lookup(&key(i), u64::from(i), |_| 0);
        }
        assert_eq!(t.next_expiry(), Some(10));
        let mut gone = Vec::new();
        assert_eq!(t.expire(12, 2, |_, k| gone.push(*k)), 2);
        assert_eq!(gone, vec![key(0), key(1)]);
        assert_eq!(t.expire(12, 10, |_, _| {}), 1);
        assert_eq!(t.len(), 2);
        assert_eq!(t.counters().expired, 3);
        t.check_invariants();
    }

    #[test]
    fn stale_entry_restarts_as_new_flow() {
        let mut t = table(2, 10);
        let _ = t.lookup(&key(1), 0, |_| 1);
        let again = t.lookup(&key(1), 10, |_| 2);
        assert!(again.created);
        assert_eq!(again.class, 2);
        assert_eq!((t.counters().created, t.counters().expired), (2, 1));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Packet(u16, u64),
        Expire(u64, usize),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(
            prop_oneof![
                8 => (0u16..24, 0u64..20).prop_map(|(k, dt)| Op::Packet(k, dt)),
                1 => (0u64..40, 0usize..4).prop_map(|(dt, b)| Op::Expire(dt, b)),
            ],
            1..300,
        )
    }

    /// Reference model: a list of (key, last_seen, class) in recency order, searched
    /// linearly; ids are checked for consistency rather than predicted.
    #[derive(Default)]
    struct Model {
        flows: Vec<(FlowKey, u64, ClassId)>,
        counters: FlowCounters,
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn matches_reference_model(ops in ops(), cap in 1u32..10, timeout in 1u64..60) {
            let mut t = table(cap, timeout);
            let mut m = Model::default();
            let mut ids: HashMap<FlowKey, FlowId> = HashMap::new();
            let mut now = 0u64;
            let mut next_class = 0;
            for op in ops {
                match op {
                    Op::Packet(k, dt) => {
                        now += dt;
                        let k = key(k);
                        next_class += 1;
                        let hit = t.lookup(&k, now, |_| next_class);
                        m.counters.lookups += 1;
                        let pos = m.flows.iter().position(|f| f.0 == k);
                        let (created, evicted, class) = match pos {
                            Some(p) => {
                                let (_, last, class) = m.flows.remove(p);
                                let stale = now - last >= timeout;
                                if stale {
                                    m.counters.expired += 1;
                                    m.counters.created += 1;
                                }
                                let class = if stale { next_class } else { class };
                                m.flows.push((k, now, class));
                                (stale, None, class)
                            }
                            None => {
                                let mut evicted = None;
                                if m.flows.len() == cap as usize {
                                    let (old, last, _) = m.flows.remove(0);
                                    ids.remove(&old);
                                    if now - last >= timeout {
                                        m.counters.expired += 1;
                                    } else {
                                        m.counters.evicted += 1;
                                        evicted = Some(old);
                                    }
                                }
                                m.counters.created += 1;
                                m.flows.push((k, now, next_class));
                                (true, evicted, next_class)
                            }
                        };
                        prop_assert_eq!(hit.created, created);
                        prop_assert_eq!(hit.evicted, evicted);
                        prop_assert_eq!(hit.class, class);
                        prop_assert!(hit.flow < cap);
                        match ids.get(&k) {
                            Some(&id) => prop_assert_eq!(id, hit.flow, "a live key changed id"),
                            None => {
                                prop_assert!(
                                    !ids.values().any(|&id| id == hit.flow),
                                    "id {} given to two live keys", hit.flow
                                );
                                ids.insert(k, hit.flow);
                            }
                        }
                    }
                    Op::Expire(dt, budget) => {
                        now += dt;
                        let mut gone = Vec::new();
                        let n = t.expire(now, budget, |id, k| gone.push((id, *k)));
                        let mut want = Vec::new();
                        while want.len() < budget
                            && m.flows.first().is_some_and(|f| now - f.1 >= timeout)
                        {
                            want.push(m.flows.remove(0).0);
                        }
                        m.counters.expired += want.len() as u64;
                        prop_assert_eq!(n, want.len());
                        for ((id, k), w) in gone.iter().zip(&want) {
                            prop_assert_eq!(k, w);
                            prop_assert_eq!(ids.remove(k), Some(*id));
                        }
                    }
                }
                t.check_invariants();
                prop_assert_eq!(t.len() as usize, m.flows.len());
                prop_assert_eq!(t.counters(), &m.counters);
                for (k, _, _) in &m.flows {
                    prop_assert_eq!(t.key(ids[k]), Some(k));
                }
            }
        }
    }
}
