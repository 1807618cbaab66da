//! The simulator's future event list.
//!
//! Every event is a small `Copy` value ([`Event`]: a kind, an index and an
//! argument) filed at an exact nanosecond. Two implementations of
//! [`EventQueue`] order them identically, by time and then by insertion:
//!
//! - [`WheelQueue`], the default: a timing wheel of one-nanosecond slots over
//!   a horizon of `2^k` ns, its occupancy in Eiffel's hierarchical
//!   find-first-set bitmap, holds the near future, where nearly every
//!   event of a data-centre fabric falls (a 1500-byte frame takes 0.3-1.2 us, a
//!   link 0.2-3 us); events beyond the horizon (retransmission timers, flow
//!   arrivals, slow links) wait in a binary heap. A pop takes the earlier of the
//!   wheel's next due slot (found by find-first-set over the wheel's occupancy
//!   bitmap) and the heap's top. With one-nanosecond slots the wheel is exact, and
//!   its slots are FIFO, so ties leave in insertion order.
//! - [`HeapQueue`], the baseline a simulator would otherwise use: `std`'s
//!   `BinaryHeap` keyed by `(time, sequence number)`.
//!
//! ## Why the two orders agree
//! Within the wheel, a slot is one nanosecond and lists its events in insertion
//! order. An event goes to the heap only when its time lies at or beyond the
//! wheel's horizon `cursor + 2^k` at insertion, and the cursor only moves forward:
//! so every heap event at time `t` was inserted before every wheel event at `t`
//! (a wheel insertion at `t` needed `t < cursor' + 2^k` with `cursor' <=` the
//! cursor of any later insertion). Serving the heap first on ties therefore
//! serves equal times in insertion order, exactly as [`HeapQueue`] does; the
//! tests check that both give the same sequence, and a run gives byte-identical
//! results with either. A wheel that is full also sends events to the heap; the
//! wheel is sized so that it never fills ([`WheelQueue::overflowed`] counts it).
//!
//! `cargo bench -p eiffel-bench --bench netsim` and `eiffel bench netsim`
//! measure both.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use eiffel_queue::HierBitmap;

use crate::time::{Duration, Time};

/// What an event does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EventKind {
    /// Flow `index` starts.
    FlowStart,
    /// Port `index` finished transmitting a packet.
    PortFree,
    /// The head packet of port `index`'s link reaches the far end.
    Arrive,
    /// Retransmission timer of flow `index`, generation `arg`.
    Timer,
    /// Flow `index` (UDP) emits its next packet; `arg` counts on/off periods.
    Emit,
    /// Port `index`'s policy may release a packet (a rate limit expired).
    PortWake,
    /// Sample the queues being recorded.
    Sample,
    /// Start of the measurement window: snapshot long-lived flows' progress.
    Measure,
}

/// A scheduled action: 12 bytes, copied, never allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// What to do.
    pub kind: EventKind,
    /// Flow or port index.
    pub index: u32,
    /// Kind-specific argument (timer generation, period count).
    pub arg: u32,
}

impl Event {
    /// An event of `kind` for `index` with argument `arg`.
    #[must_use]
    pub const fn new(kind: EventKind, index: u32, arg: u32) -> Event {
        Event { kind, index, arg }
    }
}

/// A future event list ordered by time, ties in insertion order.
pub trait EventQueue {
    /// A queue expecting up to `capacity` pending events, most of them within
    /// `horizon` of the present.
    fn with_capacity(capacity: usize, horizon: Duration) -> Self
    where
        Self: Sized;

    /// Files `ev` at `at` (`at >= now`, where `now` is the time of the event being
    /// processed).
    fn push(&mut self, now: Time, at: Time, ev: Event);

    /// Removes the earliest event.
    fn pop(&mut self) -> Option<(Time, Event)>;

    /// Pending events.
    fn len(&self) -> usize;

    /// Whether nothing is pending.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Short name for reports.
    fn name(&self) -> &'static str;

    /// Bytes `with_capacity(capacity, horizon)` allocates, for memory
    /// estimates.
    fn memory(capacity: usize, horizon: Duration) -> u64
    where
        Self: Sized;
}

/// A heap entry: ordered so that `BinaryHeap` (a max-heap) pops the earliest
/// time, then the lowest sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    at: u64,
    seq: u64,
    ev: Event,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The baseline: a binary heap of `(time, sequence)`.
#[derive(Debug)]
pub struct HeapQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue for HeapQueue {
    fn with_capacity(capacity: usize, _horizon: Duration) -> Self {
        HeapQueue {
            heap: BinaryHeap::with_capacity(capacity),
            seq: 0,
        }
    }

    #[inline]
    fn push(&mut self, now: Time, at: Time, ev: Event) {
        debug_assert!(at >= now, "event {ev:?} at {at:?} before now {now:?}");
        self.seq += 1;
        self.heap.push(Entry {
            at: at.0,
            seq: self.seq,
            ev,
        });
    }

    #[inline]
    fn pop(&mut self) -> Option<(Time, Event)> {
        self.heap.pop().map(|e| (Time(e.at), e.ev))
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    fn name(&self) -> &'static str {
        "binary-heap"
    }

    fn memory(capacity: usize, _horizon: Duration) -> u64 {
        (capacity * std::mem::size_of::<Entry>()) as u64
    }
}

/// Smallest and largest wheel: 1 us and 1 ms of one-nanosecond slots.
const MIN_SLOTS: usize = 1 << 10;
const MAX_SLOTS: usize = 1 << 20;

/// No node: the end of a slot's list, an empty slot.
const NIL: u32 = u32::MAX;

/// Slots of the wheel for `horizon`: one per nanosecond, a power of two.
fn wheel_slots(horizon: Duration) -> usize {
    (horizon.as_nanos().max(1) as usize)
        .next_power_of_two()
        .clamp(MIN_SLOTS, MAX_SLOTS)
}

/// An event filed in the wheel: its time, the next event of its slot.
#[derive(Clone, Copy, Debug)]
struct Node {
    at: u64,
    next: u32,
    ev: Event,
}

/// A timing wheel of one-nanosecond slots for the near future, a binary heap
/// beyond it.
///
/// The wheel's *cursor* is the time of the latest event popped (the present):
/// every event in the wheel lies in `cursor .. cursor + slots`, so slot
/// `at mod slots` names one instant. A pop finds the first occupied slot from
/// the cursor's, going round, with Eiffel's hierarchical find-first-set bitmap
/// ([`HierBitmap`]); a push appends to its slot's list and sets its bit. Nodes
/// come from a preallocated free list.
// NB: Eiffel's general `TimingWheel` (the policy tree's shaper) moves its
// cursor on every insert and searches the bitmap two to four times per pop;
// an event list only ever pops its minimum, so one search per pop and none per
// push suffice (the event list's cost per event fell by half).
#[derive(Debug)]
pub struct WheelQueue {
    heads: Vec<u32>,
    tails: Vec<u32>,
    nodes: Vec<Node>,
    free: u32,
    occupied: HierBitmap,
    mask: u64,
    cursor: u64,
    in_wheel: usize,
    far: BinaryHeap<Entry>,
    seq: u64,
    overflowed: u64,
}

impl WheelQueue {
    /// Events that went to the heap because the wheel was full (zero when the
    /// wheel is sized right; ties may then leave out of insertion order).
    #[must_use]
    pub fn overflowed(&self) -> u64 {
        self.overflowed
    }

    /// Events pending beyond the wheel's horizon.
    #[must_use]
    pub fn far_len(&self) -> usize {
        self.far.len()
    }

    /// The wheel's horizon in nanoseconds.
    #[must_use]
    pub fn horizon(&self) -> u64 {
        self.mask + 1
    }

    fn push_far(&mut self, at: Time, ev: Event) {
        self.seq += 1;
        self.far.push(Entry {
            at: at.0,
            seq: self.seq,
            ev,
        });
    }

    /// Pops the head of slot `pos`, which holds the event at `at`.
    #[inline]
    fn pop_slot(&mut self, pos: usize, at: u64) -> Event {
        let n = self.heads[pos];
        let node = self.nodes[n as usize];
        self.heads[pos] = node.next;
        if node.next == NIL {
            self.tails[pos] = NIL;
            self.occupied.clear(pos);
        }
        self.nodes[n as usize].next = self.free;
        self.free = n;
        self.in_wheel -= 1;
        self.cursor = at;
        node.ev
    }
}

impl EventQueue for WheelQueue {
    fn with_capacity(capacity: usize, horizon: Duration) -> Self {
        let slots = wheel_slots(horizon);
        let capacity = capacity.clamp(1, NIL as usize - 1);
        let nodes = (0..capacity)
            .map(|i| Node {
                at: 0,
                next: if i + 1 < capacity { i as u32 + 1 } else { NIL },
                ev: Event::new(EventKind::Arrive, 0, 0),
            })
            .collect();
        WheelQueue {
            heads: vec![NIL; slots],
            tails: vec![NIL; slots],
            nodes,
            free: 0,
            occupied: HierBitmap::new(slots),
            mask: slots as u64 - 1,
            cursor: 0,
            in_wheel: 0,
            far: BinaryHeap::with_capacity(64),
            seq: 0,
            overflowed: 0,
        }
    }

    #[inline]
    fn push(&mut self, now: Time, at: Time, ev: Event) {
        debug_assert!(at >= now, "event {ev:?} at {at:?} before now {now:?}");
        debug_assert!(at.0 >= self.cursor, "event {ev:?} before the cursor");
        if at.0 - self.cursor > self.mask {
            self.push_far(at, ev);
            return;
        }
        let n = self.free;
        if n == NIL {
            self.overflowed += 1;
            self.push_far(at, ev);
            return;
        }
        self.free = self.nodes[n as usize].next;
        self.nodes[n as usize] = Node {
            at: at.0,
            next: NIL,
            ev,
        };
        let pos = (at.0 & self.mask) as usize;
        match self.tails[pos] {
            NIL => {
                self.heads[pos] = n;
                self.occupied.set(pos);
            }
            t => self.nodes[t as usize].next = n,
        }
        self.tails[pos] = n;
        self.in_wheel += 1;
    }

    #[inline]
    fn pop(&mut self) -> Option<(Time, Event)> {
        if self.in_wheel == 0 {
            let e = self.far.pop()?;
            self.cursor = e.at;
            return Some((Time(e.at), e.ev));
        }
        let from = (self.cursor & self.mask) as usize;
        let pos = self
            .occupied
            .next_set_wrapping(from)
            .expect("a non-empty wheel has an occupied slot");
        let at = self.cursor + ((pos as u64).wrapping_sub(from as u64) & self.mask);
        // Ties go to the heap (see the module documentation).
        if let Some(e) = self.far.peek() {
            if e.at <= at {
                let e = self.far.pop().expect("peeked");
                self.cursor = e.at;
                return Some((Time(e.at), e.ev));
            }
        }
        debug_assert_eq!(self.nodes[self.heads[pos] as usize].at, at, "slot time");
        Some((Time(at), self.pop_slot(pos, at)))
    }

    fn len(&self) -> usize {
        self.in_wheel + self.far.len()
    }

    fn name(&self) -> &'static str {
        "timing-wheel"
    }

    fn memory(capacity: usize, horizon: Duration) -> u64 {
        // Per slot: a list head and tail (two u32) and its bitmap bits; per
        // element a node; the far heap starts at 64 entries.
        let slots = wheel_slots(horizon) as u64;
        let node = std::mem::size_of::<Node>() as u64;
        let far = 64 * std::mem::size_of::<Entry>() as u64;
        slots * 8 + slots.div_ceil(8) * 2 + (capacity as u64 + 1) * node + far
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn ev(i: u32) -> Event {
        Event::new(EventKind::Arrive, i, 0)
    }

    /// A hold-model run: pop the earliest, push one or two events at random
    /// offsets (mostly near, some far, many ties), record the order.
    fn trace<Q: EventQueue>(seed: u64, steps: usize) -> Vec<(Time, Event)> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut q = Q::with_capacity(4096, Duration::from_nanos(1 << 12));
        let mut id = 0;
        for _ in 0..64 {
            id += 1;
            q.push(Time(0), Time(rng.gen_range(0..5000)), ev(id));
        }
        let mut out = Vec::new();
        while let Some((t, e)) = q.pop() {
            out.push((t, e));
            if out.len() >= steps {
                break;
            }
            for _ in 0..rng.gen_range(0..=2) {
                id += 1;
                let off = match rng.gen_range(0..10) {
                    0 => rng.gen_range(0..1_000_000),
                    1..=3 => rng.gen_range(0..4),
                    _ => rng.gen_range(0..3000),
                };
                q.push(t, t + Duration::from_nanos(off), ev(id));
            }
        }
        out
    }

    #[test]
    fn wheel_and_heap_pop_the_same_sequence() {
        for seed in 0..8 {
            let a = trace::<WheelQueue>(seed, 50_000);
            let b = trace::<HeapQueue>(seed, 50_000);
            assert_eq!(a.len(), b.len());
            assert!(a == b, "seed {seed}: orders differ");
            assert!(a.windows(2).all(|w| w[0].0 <= w[1].0), "time went back");
        }
    }

    #[test]
    fn ties_leave_in_insertion_order() {
        let mut q = WheelQueue::with_capacity(16, Duration::from_nanos(1024));
        // One event far beyond the horizon, then (once the clock is near) two in
        // the wheel at the same instant: insertion order is far, a, b.
        q.push(Time(0), Time(10_000), ev(1));
        q.push(Time(0), Time(9_000), ev(0));
        let (t, e) = q.pop().unwrap();
        assert_eq!((t, e.index), (Time(9_000), 0));
        q.push(t, Time(10_000), ev(2));
        q.push(t, Time(10_000), ev(3));
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e.index)).collect();
        assert_eq!(order, vec![1, 2, 3]);
    }

    #[test]
    fn full_wheel_spills_to_the_heap() {
        let mut q = WheelQueue::with_capacity(2, Duration::from_nanos(1024));
        for i in 0..5 {
            q.push(Time(0), Time(100 + u64::from(i)), ev(i));
        }
        assert_eq!(q.overflowed(), 3);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e.index)).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4]);
    }
}
