//! What `eiffel bench hqos`'s hierarchy costs when a pipe's whole subtree is
//! laid out in dense arrays, as `rte_sched` lays out its fixed pipe: a
//! measurement of the layout the README names as the way to close the gap at
//! 64K queues, not a scheduler to use.
//!
//! The per-packet work is the tree's at the levels that matter here: a FIFO of
//! 64-byte slots for each queue; queued counts at the queue, the pipe and the
//! subport; a rate limit checked and charged at the port, the subport, the
//! pipe and each of the 12 capped classes; strict priority among the classes
//! by a word of levels; DRR among the best-effort queues (the file's four
//! profiles' weights), among a subport's pipes (turns of 64 MTUs) and among the
//! subports (16 MTUs); sent counts at the queue, the pipe and the subport. What
//! it leaves out: views, runs, the shaper's filing of a throttled node (no
//! limit binds here), and any choice of shape or discipline.
//!
//! The layout: a pipe's hot state in one line; its 16 queues' FIFO ends and
//! counts four to a line; their sent counts four to a line; its sent count and
//! its classes' caps in lines of their own. Same stream, same backlog (one
//! packet a queue), same bursts of 32 as the benchmark.
//!
//! ```sh
//! taskset -c 1 cargo run --release -p eiffel-bench --example pipe_layout -- 1024 4096 65536
//! taskset -c 1 cargo run --release -p eiffel-bench --example pipe_layout -- --grinders 65536
//! ```
//!
//! - `--grinders` looks one pipe further ahead when a subport turns to its
//!   next pipe, as `rte_sched`'s grinders do: it hints the head slot of every
//!   queued queue of the new pipe (whose queue lines were hinted a turn
//!   before) and the lines of the pipe after it.
//! - `--sparse` keeps each queue in a record of two lines of its own, as the
//!   tree keeps a leaf.
//! - `--exact` limits with the tree's own GCRA (`eiffel_sched::tree::Gcra`,
//!   48 bytes, exact at any rate) instead of a whole-nanosecond one (24 bytes,
//!   exact only where a byte takes whole nanoseconds, as here).

use std::hint::black_box;

use eiffel_bench::clock::CpuInstant;
use eiffel_bench::hqos::stream::Stream;
use eiffel_queue::{prefetch, prefetch_lines};
use eiffel_sched::tree::{Gcra, RateLimit};
use eiffel_sched::{Packet, Rate};

const BURST: usize = 32;
const QUEUES: usize = 16;
const CAPPED: usize = 12;
const NIL: u32 = u32::MAX;
const MTU: i32 = 1500;
const SUBPORT_TURN: i32 = 16 * MTU;
const PIPE_TURN: i32 = 64 * MTU;
const SUBPORTS: u32 = 4;
/// The best-effort weights of the file's four pipe profiles.
const BE_WEIGHTS: [[i32; 4]; 4] = [[1, 1, 1, 1], [1, 2, 1, 2], [4, 3, 2, 1], [1, 2, 3, 4]];
/// One port byte's time in nanoseconds at 1 Gbit/s: every rate lifted to the
/// port's.
const NS_PER_BYTE: u64 = 8;
const PACKETS_PER_REP: u64 = 3_000_000;

/// A rate limit at the port's rate, as every limit is here.
trait Bucket: Copy {
    fn lifted() -> Self;
    /// Whether the unit may send at `now` (ns).
    fn conforms(&self, now: u64) -> bool;
    /// `len` bytes sent at `now`.
    fn charge(&mut self, now: u64, len: u32);
}

/// A GCRA in whole nanoseconds: the theoretical arrival time of the next
/// byte, and how far ahead of the clock it may run (`rte_sched`'s kind of
/// integer credit).
#[derive(Clone, Copy, Default)]
struct Limit {
    tat: u64,
    ns_per_byte: u64,
    tolerance: u64,
}

impl Bucket for Limit {
    fn lifted() -> Limit {
        Limit {
            tat: 0,
            ns_per_byte: NS_PER_BYTE,
            tolerance: BURST_NS,
        }
    }

    #[inline]
    fn conforms(&self, now: u64) -> bool {
        self.tat <= now + self.tolerance
    }

    #[inline]
    fn charge(&mut self, now: u64, len: u32) {
        self.tat = self.tat.max(now) + self.ns_per_byte * u64::from(len);
    }
}

/// 10 ms of the rate, the file's token buckets' burst.
const BURST_NS: u64 = 10_000_000;

/// The tree's own GCRA (`eiffel_sched::tree::Gcra`): exact at any rate, in
/// 64-bit arithmetic where the bounds decide and 128-bit ticks between them.
impl Bucket for Gcra {
    fn lifted() -> Gcra {
        let rate = Rate::from_bps(8_000_000_000 / NS_PER_BYTE);
        let burst = rate.bytes_in(eiffel_sched::Duration::from_nanos(BURST_NS));
        Gcra::new(RateLimit { rate, burst }, MTU as u32)
    }

    #[inline]
    fn conforms(&self, now: u64) -> bool {
        Gcra::conforms(self, now)
    }

    #[inline]
    fn charge(&mut self, now: u64, len: u32) {
        self.on_send(now, len);
    }
}

#[derive(Clone, Copy, Default)]
struct Sent {
    packets: u64,
    bytes: u64,
}

impl Sent {
    #[inline]
    fn add(&mut self, len: u32) {
        self.packets += 1;
        self.bytes += u64::from(len);
    }
}

/// A queue's FIFO ends, count and head length.
#[derive(Clone, Copy)]
struct Queue {
    head: u32,
    tail: u32,
    count: u32,
    head_len: u32,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct QueueLines([Queue; QUEUES]);

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct SentLines([Sent; QUEUES]);

/// A pipe's hot line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Pipe<B> {
    /// Bit `i` for a queued class `i` (12 for best effort).
    levels: u64,
    limit: B,
    be_deficit: [i32; 4],
    queued: u32,
    deficit: i32,
    next: u32,
    be_queued: u8,
    be_turn: u8,
    profile: u8,
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct PipeCold {
    sent: Sent,
}

/// Where the queues' state lives.
trait Store<B> {
    fn new(pipes: usize) -> Self;
    fn queue(&mut self, p: usize, i: usize) -> &mut Queue;
    fn sent(&mut self, p: usize, i: usize) -> &mut Sent;
    fn cap(&mut self, p: usize, i: usize) -> &mut B;
    /// Hints what an enqueue to queue `i` of pipe `p` reads.
    fn hint_queue(&self, p: usize, i: usize);
    /// Hints what serving pipe `p` reads of its queues.
    fn hint_queues(&self, p: usize);
}

const EMPTY: Queue = Queue {
    head: NIL,
    tail: NIL,
    count: 0,
    head_len: 0,
};

/// A pipe's queues in dense arrays: FIFO ends and counts four to a line, sent
/// counts four to a line, the classes' caps in lines of their own.
struct Dense<B> {
    queues: Vec<QueueLines>,
    sent: Vec<SentLines>,
    caps: Vec<CapLines<B>>,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct CapLines<B>([B; CAPPED]);

impl<B: Bucket> Store<B> for Dense<B> {
    fn new(pipes: usize) -> Dense<B> {
        Dense {
            queues: vec![QueueLines([EMPTY; QUEUES]); pipes],
            sent: vec![SentLines::default(); pipes],
            caps: vec![CapLines([B::lifted(); CAPPED]); pipes],
        }
    }
    #[inline]
    fn queue(&mut self, p: usize, i: usize) -> &mut Queue {
        &mut self.queues[p].0[i]
    }
    #[inline]
    fn sent(&mut self, p: usize, i: usize) -> &mut Sent {
        &mut self.sent[p].0[i]
    }
    #[inline]
    fn cap(&mut self, p: usize, i: usize) -> &mut B {
        &mut self.caps[p].0[i]
    }
    #[inline]
    fn hint_queue(&self, p: usize, i: usize) {
        prefetch(&self.queues[p].0[i]);
    }
    #[inline]
    fn hint_queues(&self, p: usize) {
        for line in 0..4 {
            prefetch(&self.queues[p].0[line * 4]);
            prefetch(&self.sent[p].0[line * 4]);
        }
        prefetch_lines(&self.caps[p], CAP_LINES);
    }
}

/// Lines of a pipe's caps: 12 limits of at most 48 bytes.
const CAP_LINES: usize = 9;

/// Each queue in a record of two lines of its own, as the tree keeps a leaf:
/// what an enqueue touches in the first, what a dequeue adds in the second.
struct Sparse<B> {
    nodes: Vec<QueueNode<B>>,
}

/// One line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line<T>(T);

#[derive(Clone, Copy)]
struct QueueNode<B> {
    queue: Line<Queue>,
    second: Line<(Sent, B)>,
}

impl<B: Bucket> Store<B> for Sparse<B> {
    fn new(pipes: usize) -> Sparse<B> {
        let node = QueueNode {
            queue: Line(EMPTY),
            second: Line((Sent::default(), B::lifted())),
        };
        Sparse {
            nodes: vec![node; pipes * QUEUES],
        }
    }
    #[inline]
    fn queue(&mut self, p: usize, i: usize) -> &mut Queue {
        &mut self.nodes[p * QUEUES + i].queue.0
    }
    #[inline]
    fn sent(&mut self, p: usize, i: usize) -> &mut Sent {
        &mut self.nodes[p * QUEUES + i].second.0 .0
    }
    #[inline]
    fn cap(&mut self, p: usize, i: usize) -> &mut B {
        &mut self.nodes[p * QUEUES + i].second.0 .1
    }
    #[inline]
    fn hint_queue(&self, p: usize, i: usize) {
        prefetch(&self.nodes[p * QUEUES + i].queue);
    }
    #[inline]
    fn hint_queues(&self, p: usize) {
        for node in &self.nodes[p * QUEUES..(p + 1) * QUEUES] {
            prefetch_lines(node, 2);
        }
    }
}

#[derive(Clone, Copy)]
struct Subport<B> {
    head: u32,
    tail: u32,
    limit: B,
    queued: u32,
    sent: Sent,
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Slot {
    pkt: Packet,
    next: u32,
}

/// How far the dequeue looks ahead when a subport turns to its next pipe.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ahead {
    /// The new pipe's lines.
    Pipe,
    /// The new pipe's head slots and the lines of the pipe after it.
    Grinders,
}

struct Port<S, B> {
    slots: Vec<Slot>,
    free: Vec<u32>,
    pipes: Vec<Pipe<B>>,
    cold: Vec<PipeCold>,
    store: S,
    subports: Vec<Subport<B>>,
    limit: B,
    pipes_per_subport: usize,
    turn: usize,
    turn_left: i32,
    capacity: u32,
    drops: u64,
    ahead: Ahead,
}

impl<S: Store<B>, B: Bucket> Port<S, B> {
    fn new(pipes_per_subport: u32, packets: usize, ahead: Ahead) -> Port<S, B> {
        let n = (SUBPORTS * pipes_per_subport) as usize;
        let pipes = (0..n)
            .map(|p| Pipe {
                levels: 0,
                limit: B::lifted(),
                be_deficit: [0; 4],
                queued: 0,
                deficit: 0,
                next: NIL,
                be_queued: 0,
                be_turn: 0,
                profile: (p % 4) as u8,
            })
            .collect();
        let subport = Subport {
            head: NIL,
            tail: NIL,
            limit: B::lifted(),
            queued: 0,
            sent: Sent::default(),
        };
        Port {
            slots: vec![Slot::default(); packets],
            free: (0..packets as u32).rev().collect(),
            pipes,
            cold: vec![PipeCold::default(); n],
            store: S::new(n),
            subports: vec![subport; SUBPORTS as usize],
            limit: B::lifted(),
            pipes_per_subport: pipes_per_subport as usize,
            turn: 0,
            turn_left: SUBPORT_TURN,
            capacity: packets as u32,
            drops: 0,
            ahead,
        }
    }

    /// Queues `pkt` (its flow is the global queue index).
    #[inline]
    fn enqueue(&mut self, pkt: Packet) {
        let (p, i) = (pkt.flow as usize / QUEUES, pkt.flow as usize % QUEUES);
        let q = self.store.queue(p, i);
        if q.count >= self.capacity {
            self.drops += 1;
            return;
        }
        let Some(s) = self.free.pop() else {
            self.drops += 1;
            return;
        };
        self.slots[s as usize] = Slot { pkt, next: NIL };
        if q.count == 0 {
            q.head = s;
            q.head_len = pkt.len;
        } else {
            self.slots[q.tail as usize].next = s;
        }
        q.tail = s;
        q.count += 1;
        let first = q.count == 1;
        let pipe = &mut self.pipes[p];
        if first && i < CAPPED {
            pipe.levels |= 1 << i;
        } else if first {
            pipe.levels |= 1 << CAPPED;
            pipe.be_queued |= 1 << (i - CAPPED);
        }
        pipe.queued += 1;
        let sp = p / self.pipes_per_subport;
        if pipe.queued == 1 {
            pipe.deficit = PIPE_TURN;
            self.append(sp, p);
        }
        self.subports[sp].queued += 1;
    }

    /// Puts pipe `p` at the end of subport `sp`'s round.
    #[inline]
    fn append(&mut self, sp: usize, p: usize) {
        self.pipes[p].next = NIL;
        let subport = &mut self.subports[sp];
        if subport.head == NIL {
            subport.head = p as u32;
        } else {
            self.pipes[subport.tail as usize].next = p as u32;
        }
        subport.tail = p as u32;
    }

    /// Queues a burst in stages two packets apart, as the tree's burst
    /// enqueue does: hint the queue's line and the pipe, then the old tail
    /// slot, then queue.
    fn enqueue_burst(&mut self, burst: &[Packet]) {
        let n = burst.len();
        for k in 0..n + 4 {
            if let Some(pkt) = burst.get(k) {
                let (p, i) = (pkt.flow as usize / QUEUES, pkt.flow as usize % QUEUES);
                self.store.hint_queue(p, i);
                prefetch(&self.pipes[p]);
            }
            if let Some(pkt) = k.checked_sub(2).and_then(|j| burst.get(j)) {
                let (p, i) = (pkt.flow as usize / QUEUES, pkt.flow as usize % QUEUES);
                let tail = self.store.queue(p, i).tail;
                if tail != NIL {
                    prefetch(&self.slots[tail as usize]);
                }
            }
            if let Some(pkt) = k.checked_sub(4).and_then(|j| burst.get(j)) {
                self.enqueue(*pkt);
            }
        }
    }

    /// The next packet at `now` (nanoseconds of the port's byte clock).
    fn dequeue(&mut self, now: u64) -> Option<Packet> {
        if !self.limit.conforms(now) {
            return None;
        }
        let subports = self.subports.len();
        for _ in 0..2 * subports {
            let sp = self.turn;
            let subport = &self.subports[sp];
            if subport.queued > 0 && subport.limit.conforms(now) && self.turn_left > 0 {
                let p = subport.head as usize;
                if let Some(pkt) = self.serve_pipe(sp, p, now) {
                    return Some(pkt);
                }
            }
            self.turn = (sp + 1) % subports;
            self.turn_left = SUBPORT_TURN;
        }
        None
    }

    /// The queue pipe `p` serves next: the lowest queued class, or the best-
    /// effort queue whose DRR turn it is.
    #[inline]
    fn choose(&mut self, p: usize) -> usize {
        let pipe = &mut self.pipes[p];
        let level = pipe.levels.trailing_zeros() as usize;
        if level < CAPPED {
            return level;
        }
        let weights = BE_WEIGHTS[usize::from(pipe.profile)];
        loop {
            let c = usize::from(pipe.be_turn);
            if pipe.be_queued & (1 << c) != 0 && pipe.be_deficit[c] > 0 {
                return CAPPED + c;
            }
            pipe.be_deficit[c] += weights[c] * MTU;
            pipe.be_turn = ((c + 1) % 4) as u8;
        }
    }

    /// Takes pipe `p`'s next packet, if its limit and its class's cap let it.
    #[inline]
    fn serve_pipe(&mut self, sp: usize, p: usize, now: u64) -> Option<Packet> {
        if !self.pipes[p].limit.conforms(now) {
            return None;
        }
        let i = self.choose(p);
        if i < CAPPED && !self.store.cap(p, i).conforms(now) {
            return None;
        }
        let (pkt, left) = self.pop(p, i);
        let len = pkt.len;
        if i < CAPPED {
            self.store.cap(p, i).charge(now, len);
        }
        self.cold[p].sent.add(len);
        self.store.sent(p, i).add(len);
        let pipe = &mut self.pipes[p];
        if left == 0 && i < CAPPED {
            pipe.levels &= !(1 << i);
        } else if i >= CAPPED {
            self.best_effort_sent(p, i - CAPPED, len, left);
        }
        let pipe = &mut self.pipes[p];
        pipe.limit.charge(now, len);
        pipe.queued -= 1;
        pipe.deficit -= len as i32;
        let subport = &mut self.subports[sp];
        subport.limit.charge(now, len);
        self.limit.charge(now, len);
        subport.queued -= 1;
        subport.sent.add(len);
        self.turn_left -= len as i32;
        self.after_send(sp, p);
        Some(pkt)
    }

    /// Takes queue `i` of pipe `p`'s head; returns it and what is left.
    #[inline]
    fn pop(&mut self, p: usize, i: usize) -> (Packet, u32) {
        let q = self.store.queue(p, i);
        let slot = self.slots[q.head as usize];
        self.free.push(q.head);
        q.head = slot.next;
        q.count -= 1;
        if q.count > 0 {
            let next = &self.slots[q.head as usize];
            q.head_len = next.pkt.len;
            prefetch(next);
        }
        (slot.pkt, q.count)
    }

    /// A best-effort queue `c` of pipe `p` sent `len`, `left` packets left.
    #[inline]
    fn best_effort_sent(&mut self, p: usize, c: usize, len: u32, left: u32) {
        let pipe = &mut self.pipes[p];
        pipe.be_deficit[c] -= len as i32;
        if left == 0 {
            pipe.be_queued &= !(1 << c);
            if pipe.be_queued == 0 {
                pipe.levels &= !(1 << CAPPED);
            }
        }
        if left == 0 || pipe.be_deficit[c] <= 0 {
            pipe.be_turn = ((c + 1) % 4) as u8;
        }
    }

    /// After a send from pipe `p`: the subport turns to its next pipe when `p`
    /// emptied or spent its turn.
    #[inline]
    fn after_send(&mut self, sp: usize, p: usize) {
        let pipe = self.pipes[p];
        if pipe.queued > 0 && pipe.deficit > 0 {
            return;
        }
        let subport = &mut self.subports[sp];
        subport.head = pipe.next;
        if subport.head == NIL {
            subport.tail = NIL;
        }
        if pipe.queued > 0 {
            self.pipes[p].deficit += PIPE_TURN;
            self.append(sp, p);
        }
        let head = self.subports[sp].head;
        if head != NIL {
            self.hint_pipe(head as usize);
            if self.ahead == Ahead::Grinders {
                self.hint_heads(head as usize);
                let after = self.pipes[head as usize].next;
                if after != NIL {
                    self.hint_pipe(after as usize);
                }
            }
        }
    }

    /// Hints pipe `p`'s lines.
    #[inline]
    fn hint_pipe(&self, p: usize) {
        prefetch(&self.pipes[p]);
        prefetch(&self.cold[p]);
        self.store.hint_queues(p);
    }

    /// Hints the head slot of every queued queue of pipe `p`.
    #[inline]
    fn hint_heads(&mut self, p: usize) {
        let pipe = self.pipes[p];
        let mut queued =
            (pipe.levels & ((1 << CAPPED) - 1)) | (u64::from(pipe.be_queued) << CAPPED);
        while queued != 0 {
            let i = queued.trailing_zeros() as usize;
            queued &= queued - 1;
            let head = self.store.queue(p, i).head;
            prefetch(&self.slots[head as usize]);
        }
    }
}

/// The benchmark's loop: bursts of up to 32 dequeued at the port's byte
/// clock, as many new packets enqueued; `packets` sent.
fn steady<S: Store<B>, B: Bucket>(
    port: &mut Port<S, B>,
    stream: &mut Stream,
    clock: &mut u64,
    packets: u64,
) {
    let mut sent = 0;
    while sent < packets {
        let mut got = 0;
        while got < BURST {
            let Some(pkt) = port.dequeue(*clock) else {
                break;
            };
            *clock += u64::from(pkt.len) * NS_PER_BYTE;
            black_box(pkt);
            got += 1;
        }
        let mut burst = [Packet::default(); BURST];
        for slot in burst.iter_mut().take(got) {
            let a = stream.next_arrival();
            *slot = Packet::new(a.queue, a.len);
        }
        port.enqueue_burst(&burst[..got]);
        sent += got as u64;
        if got == 0 {
            *clock += 1_000_000;
        }
    }
}

/// `queues` rounded down to whole pipes in every subport.
fn rounded(queues: u32) -> u32 {
    queues / (QUEUES as u32 * SUBPORTS) * (QUEUES as u32 * SUBPORTS)
}

/// The most memory a run may take.
const MAX_BYTES: u64 = 8 << 30;

/// Bytes a run at `queues` (rounded) takes at most: the largest variant's
/// pipes and queues, and a slot and its free-list entry for each packet.
fn bytes_for(queues: u32) -> u64 {
    let pipe = size_of::<Pipe<Gcra>>() + size_of::<PipeCold>();
    let queue = size_of::<QueueNode<Gcra>>() + size_of::<Slot>() + size_of::<u32>();
    u64::from(queues) * (pipe / QUEUES + queue) as u64
}

/// CPU ns a packet over `reps` repetitions (sorted) at `queues` queues
/// (rounded).
fn measure<S: Store<B>, B: Bucket>(queues: u32, reps: usize, ahead: Ahead) -> (Vec<f64>, u64) {
    let pipes_per_subport = queues / QUEUES as u32 / SUBPORTS;
    let backlog = queues as usize;
    let mut port = Port::<S, B>::new(pipes_per_subport, backlog + 4 * BURST, ahead);
    let mut stream = Stream::new(queues as usize, 1 << 20);
    for _ in 0..backlog {
        let a = stream.next_arrival();
        port.enqueue(Packet::new(a.queue, a.len));
    }
    let mut clock = 0;
    steady(&mut port, &mut stream, &mut clock, backlog as u64);
    let mut ns = Vec::with_capacity(reps);
    for _ in 0..reps {
        let cpu = CpuInstant::now();
        steady(&mut port, &mut stream, &mut clock, PACKETS_PER_REP);
        ns.push(cpu.elapsed().as_nanos() as f64 / PACKETS_PER_REP as f64);
    }
    ns.sort_by(f64::total_cmp);
    (ns, port.drops)
}

fn main() {
    let mut ahead = Ahead::Pipe;
    let mut sparse = false;
    let mut exact = false;
    let mut reps = 5;
    let mut sizes = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--grinders" => ahead = Ahead::Grinders,
            "--sparse" => sparse = true,
            "--exact" => exact = true,
            "--reps" => match args.next().and_then(|r| r.parse().ok()) {
                Some(r) if r > 0 => reps = r,
                _ => usage(),
            },
            size => match size.parse::<u32>() {
                Ok(q) if q >= QUEUES as u32 * SUBPORTS => sizes.push(rounded(q)),
                _ => usage(),
            },
        }
    }
    if sizes.is_empty() {
        sizes = vec![1024, 4096, 65536];
    }
    if let Some(&q) = sizes.iter().find(|&&q| bytes_for(q) > MAX_BYTES) {
        eprintln!(
            "pipe_layout: {q} queues would take about {} MiB, more than the {} MiB a run may",
            bytes_for(q) >> 20,
            MAX_BYTES >> 20
        );
        std::process::exit(2);
    }
    println!("queues  ns/pkt (median)  Mpps   repetitions");
    for q in sizes {
        let (ns, drops) = match (sparse, exact) {
            (false, false) => measure::<Dense<Limit>, Limit>(q, reps, ahead),
            (true, false) => measure::<Sparse<Limit>, Limit>(q, reps, ahead),
            (false, true) => measure::<Dense<Gcra>, Gcra>(q, reps, ahead),
            (true, true) => measure::<Sparse<Gcra>, Gcra>(q, reps, ahead),
        };
        let median = ns[ns.len() / 2];
        println!(
            "{q:>6}  {median:>15.1}  {:>5.2}  {ns:.1?}  drops {drops}",
            1e3 / median
        );
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: pipe_layout [--grinders] [--sparse] [--exact] [--reps N] [QUEUES ...] (QUEUES at least 64)"
    );
    std::process::exit(2);
}
