//! Rank programs: a node's rank function written as data rather than code (the
//! policy file's `rank = "..."` and `rank_on_dequeue = "..."`), compiled once into
//! a small stack program and run per packet without allocating.
//!
//! A [`RankProgram`] is Eiffel's per-flow, on-enqueue and on-dequeue ranking
//! (NSDI'19, section 3.2.1) for one node: its units (children, or the flows of a
//! per-flow leaf) each keep the per-unit state the program declares, the node
//! keeps the per-node state, and
//!
//! - the *enqueue* program runs when a unit becomes backlogged; its result is
//!   the unit's rank. It runs again whenever a packet enters the subtree of a
//!   queued unit if it reads something an arrival changes (a field of the
//!   arriving packet or of the unit's head, `now`, or `min_remaining`); a
//!   program that reads only state, the virtual time and the unit's settings is
//!   computed once per backlogged period, like start-time fair queueing's start
//!   tag, and the node ignores arrivals (so nothing above it is re-ranked);
//! - the *dequeue* program runs after a unit sent a packet; its result is the
//!   unit's new rank if it stays queued (it runs for its assignments either way).
//!   Without one, the enqueue program runs instead, on the unit's next packet.
//!
//! Before the dequeue program runs, the node's virtual time `vtime` becomes the
//! larger of itself and the rank the unit was served at (start-time fair
//! queueing's virtual time: the start tag of the packet in service).
//!
//! ## Values
//! Everything is a `u64`. Arithmetic saturates: `+` and `*` at `u64::MAX`, `-`
//! at 0; `x / 0` is `u64::MAX` and `x % 0` is `x` (a constant zero divisor is
//! refused when the program is compiled). Comparisons give 0 or 1; `if(c, a, b)`
//! is `a` when `c` is not 0, else `b` (both are evaluated: expressions have no
//! side effects). An assignment stores its value and is also the statement's
//! value; the last statement's value is the rank.
//!
//! ## Cost
//! A [`Program`] is the checked stack form a compiler emits; [`RankProgram::new`]
//! compiles it once more, into three-address instructions over a frame of values
//! (the stack resolved, constants folded, repeated operations computed once,
//! unused ones dropped: see `code.rs`), so a run is one pass over a few
//! instructions with no stack traffic. Nothing is allocated per packet: the
//! frames (at most [`MAX_SLOTS`] values) are allocated with the node, and state
//! lives in one vector per node, `units * state_len` values.

mod code;

use std::sync::Arc;

use crate::packet::{Nanos, Packet};

use super::txn::Unit;
pub use code::MAX_SLOTS;
use code::{Code, Ctx, Frame};

/// Deepest operand stack a program may need.
pub const MAX_STACK: usize = 32;

/// Most state variables per unit, and per node.
pub const MAX_STATE: usize = 32;

/// A packet field a program reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// Length on the wire, bytes.
    Len,
    /// Flow id.
    Flow,
    /// Class (leaf) id.
    Class,
    /// Arrival time, ns.
    Arrival,
    /// Absolute deadline, ns (`u64::MAX` if none).
    Deadline,
    /// Bytes its flow still has to send, this packet included.
    Remaining,
    /// DSCP of the IP header (0 if none).
    Dscp,
    /// The annotator's rank: a workload's `priority` or `slack`.
    Annotation,
}

impl Field {
    /// Every field.
    pub const ALL: [Field; 8] = [
        Field::Len,
        Field::Flow,
        Field::Class,
        Field::Arrival,
        Field::Deadline,
        Field::Remaining,
        Field::Dscp,
        Field::Annotation,
    ];

    /// The name programs use.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Field::Len => "len",
            Field::Flow => "flow",
            Field::Class => "class",
            Field::Arrival => "arrival",
            Field::Deadline => "deadline",
            Field::Remaining => "remaining",
            Field::Dscp => "dscp",
            Field::Annotation => "annotation",
        }
    }

    #[inline]
    fn of(self, p: &Packet) -> u64 {
        match self {
            Field::Len => u64::from(p.len),
            Field::Flow => u64::from(p.flow),
            Field::Class => u64::from(p.class),
            Field::Arrival => p.arrival,
            Field::Deadline => p.deadline,
            Field::Remaining => p.remaining,
            Field::Dscp => u64::from(p.dscp),
            Field::Annotation => p.rank,
        }
    }
}

/// A value of the node or unit a program reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Var {
    /// The time of the event, ns.
    Now,
    /// The node's virtual time (see the module docs).
    Vtime,
    /// The unit's configured weight (flows: 1).
    Weight,
    /// The unit's configured priority (flows: 0).
    Priority,
    /// The unit's reservation, bit/s (0 if none).
    Reservation,
    /// The unit's index: a child's position among its siblings, or a flow id.
    Unit,
    /// Per-flow leaves: the smallest `remaining` among the flow's queued packets.
    MinRemaining,
}

impl Var {
    /// Every variable.
    pub const ALL: [Var; 7] = [
        Var::Now,
        Var::Vtime,
        Var::Weight,
        Var::Priority,
        Var::Reservation,
        Var::Unit,
        Var::MinRemaining,
    ];

    /// The name programs use.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Var::Now => "now",
            Var::Vtime => "vtime",
            Var::Weight => "weight",
            Var::Priority => "priority",
            Var::Reservation => "reservation",
            Var::Unit => "unit",
            Var::MinRemaining => "min_remaining",
        }
    }
}

/// One operation of a stack program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Pushes a constant.
    Const(u64),
    /// Pushes a field of the event's packet (the arriving packet on enqueue, the
    /// sent one on dequeue).
    Packet(Field),
    /// Pushes a field of the unit's head: the packet it sends next (on dequeue,
    /// the sent packet if the unit left).
    Head(Field),
    /// Pushes a node or unit variable.
    Var(Var),
    /// Pushes per-unit state variable `i`.
    State(u8),
    /// Pushes per-node state variable `i`.
    NodeState(u8),
    /// Stores the top into per-unit state `i` (the value stays on the stack).
    SetState(u8),
    /// Stores the top into per-node state `i` (the value stays on the stack).
    SetNodeState(u8),
    /// Drops the top.
    Pop,
    /// `a + b`, saturating.
    Add,
    /// `a - b`, saturating at 0.
    Sub,
    /// `a * b`, saturating.
    Mul,
    /// `a / b`; `u64::MAX` when `b` is 0.
    Div,
    /// `a % b`; `a` when `b` is 0.
    Rem,
    /// The smaller of `a` and `b`.
    Min,
    /// The larger of `a` and `b`.
    Max,
    /// `a < b` as 0 or 1.
    Lt,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a >= b`.
    Ge,
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
    /// `if(c, a, b)`: pops `b`, `a`, `c`.
    Select,
}

impl Op {
    /// Values popped and pushed.
    const fn arity(self) -> (usize, usize) {
        match self {
            Op::Const(_)
            | Op::Packet(_)
            | Op::Head(_)
            | Op::Var(_)
            | Op::State(_)
            | Op::NodeState(_) => (0, 1),
            Op::SetState(_) | Op::SetNodeState(_) => (1, 1),
            Op::Pop => (1, 0),
            Op::Select => (3, 1),
            _ => (2, 1),
        }
    }
}

/// Why a program is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    /// An operation pops more than the stack holds.
    #[error("operation {at} ({op:?}) pops an empty stack")]
    Underflow {
        /// Index of the operation.
        at: usize,
        /// The operation.
        op: Op,
    },
    /// The program needs a deeper stack than [`MAX_STACK`].
    #[error("the program needs a stack of {depth} values (at most {MAX_STACK})")]
    TooDeep {
        /// Depth needed.
        depth: usize,
    },
    /// The program does not leave exactly one value, the rank.
    #[error("the program leaves {left} values, not one rank")]
    Unbalanced {
        /// Values left.
        left: usize,
    },
    /// A state index beyond the declared state.
    #[error("operation {at} uses {what} state variable {index}, but {declared} are declared")]
    NoSuchState {
        /// Index of the operation.
        at: usize,
        /// `"per-unit"` or `"per-node"`.
        what: &'static str,
        /// The index used.
        index: u8,
        /// Variables declared.
        declared: usize,
    },
    /// The compiled program needs more values than a frame holds.
    #[error("the program needs {slots} values (constants, inputs, state and intermediate results; at most {MAX_SLOTS})")]
    TooManyValues {
        /// Values needed.
        slots: usize,
    },
    /// More state variables than [`MAX_STATE`].
    #[error("{declared} {what} state variables (at most {MAX_STATE})")]
    TooMuchState {
        /// `"per-unit"` or `"per-node"`.
        what: &'static str,
        /// Variables declared.
        declared: usize,
    },
}

/// A checked stack program: every operation finds its operands, the stack stays
/// within [`MAX_STACK`], and exactly one value, the rank, is left.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Program {
    ops: Vec<Op>,
}

impl Program {
    /// Checks `ops`.
    ///
    /// # Errors
    /// An operation without operands, a stack deeper than [`MAX_STACK`], or not
    /// exactly one value left.
    pub fn new(ops: Vec<Op>) -> Result<Self, ProgramError> {
        let mut depth = 0usize;
        for (at, &op) in ops.iter().enumerate() {
            let (pop, push) = op.arity();
            depth = depth
                .checked_sub(pop)
                .ok_or(ProgramError::Underflow { at, op })?;
            depth += push;
            if depth > MAX_STACK {
                return Err(ProgramError::TooDeep { depth });
            }
        }
        if depth != 1 {
            return Err(ProgramError::Unbalanced { left: depth });
        }
        Ok(Program { ops })
    }

    /// The operations.
    #[must_use]
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    fn reads(&self, var: Var) -> bool {
        self.ops.contains(&Op::Var(var))
    }

    /// The largest per-unit and per-node state index used, plus one.
    fn state_used(&self) -> impl Iterator<Item = (usize, &'static str, u8)> + '_ {
        self.ops
            .iter()
            .enumerate()
            .filter_map(|(at, op)| match *op {
                Op::State(i) | Op::SetState(i) => Some((at, "per-unit", i)),
                Op::NodeState(i) | Op::SetNodeState(i) => Some((at, "per-node", i)),
                _ => None,
            })
    }
}

/// A node's rank function: the enqueue program, an optional dequeue program,
/// and the initial values of the per-unit and per-node state.
///
/// ```
/// use eiffel_sched::tree::{Field, Op, Program, RankProgram, Var};
///
/// // Least attained service: rank = bytes sent so far; on dequeue `sent += len`.
/// let enqueue = Program::new(vec![Op::State(0)]).unwrap();
/// let dequeue = Program::new(vec![
///     Op::State(0),
///     Op::Packet(Field::Len),
///     Op::Add,
///     Op::SetState(0),
/// ])
/// .unwrap();
/// let las = RankProgram::new(enqueue, Some(dequeue), vec![0], vec![]).unwrap();
/// assert_eq!(las.state_len(), 1);
/// assert!(!las.reads(Var::MinRemaining));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RankProgram {
    on_enqueue: Program,
    on_dequeue: Option<Program>,
    /// The programs compiled: enqueue, then dequeue (the enqueue program again
    /// if there is none).
    code: [Code; 2],
    state: Vec<u64>,
    node_state: Vec<u64>,
    /// What the program was compiled from, for display (empty if unknown).
    source: String,
}

impl RankProgram {
    /// A rank function from its programs and the initial state values (one per
    /// per-unit variable, one per per-node variable).
    ///
    /// # Errors
    /// More than [`MAX_STATE`] variables of either kind, a program using a
    /// state variable that is not declared, or one needing more than
    /// [`MAX_SLOTS`] values.
    pub fn new(
        on_enqueue: Program,
        on_dequeue: Option<Program>,
        state: Vec<u64>,
        node_state: Vec<u64>,
    ) -> Result<Self, ProgramError> {
        for (what, declared) in [("per-unit", state.len()), ("per-node", node_state.len())] {
            if declared > MAX_STATE {
                return Err(ProgramError::TooMuchState { what, declared });
            }
        }
        for p in std::iter::once(&on_enqueue).chain(on_dequeue.as_ref()) {
            for (at, what, index) in p.state_used() {
                let declared = if what == "per-unit" {
                    state.len()
                } else {
                    node_state.len()
                };
                if usize::from(index) >= declared {
                    return Err(ProgramError::NoSuchState {
                        at,
                        what,
                        index,
                        declared,
                    });
                }
            }
        }
        let enqueue = Code::new(&on_enqueue, state.len(), node_state.len())?;
        let dequeue = match &on_dequeue {
            Some(p) => Code::new(p, state.len(), node_state.len())?,
            None => enqueue.clone(),
        };
        Ok(RankProgram {
            on_enqueue,
            on_dequeue,
            code: [enqueue, dequeue],
            state,
            node_state,
            source: String::new(),
        })
    }

    /// The same program, remembering the text it was compiled from.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }

    /// The text the program was compiled from (empty if unknown).
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Per-unit state variables.
    #[must_use]
    pub fn state_len(&self) -> usize {
        self.state.len()
    }

    /// Whether the enqueue program runs again on arrivals into a queued unit (see
    /// the module docs).
    #[must_use]
    pub fn ranks_on_arrival(&self) -> bool {
        self.on_enqueue.ops.iter().any(|op| {
            matches!(
                op,
                Op::Packet(_) | Op::Head(_) | Op::Var(Var::Now | Var::MinRemaining)
            )
        })
    }

    /// Whether either program reads `var`.
    #[must_use]
    pub fn reads(&self, var: Var) -> bool {
        self.on_enqueue.reads(var) || self.on_dequeue.as_ref().is_some_and(|p| p.reads(var))
    }
}

/// A rank program running at one node: the program, every unit's state, the
/// node's state and virtual time.
#[derive(Debug)]
pub(crate) struct ProgramTxn {
    program: Arc<RankProgram>,
    /// `units * state_len` values, unit `u` at `u * state_len`.
    state: Vec<u64>,
    node_state: Vec<u64>,
    vtime: u64,
    width: usize,
    /// The frames of the enqueue and dequeue programs.
    frames: [Frame; 2],
}

impl ProgramTxn {
    pub(crate) fn new(program: Arc<RankProgram>, units: usize) -> Self {
        let width = program.state.len();
        let state = (0..units)
            .flat_map(|_| program.state.iter().copied())
            .collect();
        ProgramTxn {
            frames: [program.code[0].frame(), program.code[1].frame()],
            node_state: program.node_state.clone(),
            program,
            state,
            vtime: 0,
            width,
        }
    }

    /// Whether arrivals into queued units leave their ranks alone.
    pub(crate) fn ignores_arrivals(&self) -> bool {
        !self.program.ranks_on_arrival()
    }

    /// Runs the enqueue program for unit `u` (activation or an arrival), and
    /// records the rank in `unit.start`.
    #[inline]
    pub(crate) fn on_enqueue(
        &mut self,
        u: u32,
        unit: &mut Unit,
        pkt: &Packet,
        head: &Packet,
        now: Nanos,
    ) -> u64 {
        let ctx = Ctx {
            pkt,
            head,
            unit,
            index: u,
            now,
            vtime: self.vtime,
        };
        let rank = self.run(Which::Enqueue, u, &ctx);
        unit.start = rank;
        rank
    }

    /// Unit `u`, queued at rank `unit.start`, sent `sent`; `next` is its next
    /// packet if it stays queued. Returns its new rank.
    #[inline]
    pub(crate) fn on_dequeue(
        &mut self,
        u: u32,
        unit: &mut Unit,
        sent: &Packet,
        next: Option<&Packet>,
        now: Nanos,
    ) -> u64 {
        self.vtime = self.vtime.max(unit.start);
        let (which, pkt) = match (&self.program.on_dequeue, next) {
            (Some(_), _) => (Which::Dequeue, sent),
            (None, Some(n)) => (Which::Enqueue, n),
            (None, None) => return unit.start,
        };
        let ctx = Ctx {
            pkt,
            head: next.unwrap_or(sent),
            unit,
            index: u,
            now,
            vtime: self.vtime,
        };
        let rank = self.run(which, u, &ctx);
        unit.start = rank;
        rank
    }

    #[inline]
    fn run(&mut self, which: Which, u: u32, ctx: &Ctx<'_>) -> u64 {
        let k = which as usize;
        let at = u as usize * self.width;
        let state = &mut self.state[at..at + self.width];
        self.program.code[k].run(&mut self.frames[k], ctx, state, &mut self.node_state)
    }
}

/// A per-flow leaf's release-time program (`release`, `release_on_dequeue`): the
/// same programs and per-flow state as a rank program, but their result is the
/// time (ns) the flow's next packet may leave, and they never touch the virtual
/// time. The enqueue program runs when a packet arrives into an empty flow (that
/// packet is both the event's packet and the head); the dequeue program runs after
/// every send, for its assignments, and gives the next packet's release time
/// (without one, the enqueue program runs on the next packet).
#[derive(Debug)]
pub(crate) struct Pacer {
    txn: ProgramTxn,
    /// What flows look like to a program: weight 1, nothing else.
    unit: Unit,
}

impl Pacer {
    pub(crate) fn new(program: Arc<RankProgram>, flows: usize) -> Self {
        Pacer {
            txn: ProgramTxn::new(program, flows),
            unit: Unit {
                weight: 1,
                ..Unit::default()
            },
        }
    }

    /// The release time of `pkt`, which arrived into empty flow `f` at `now`.
    #[inline]
    pub(crate) fn on_arrival(&mut self, f: u32, pkt: &Packet, now: Nanos) -> Nanos {
        let ctx = Ctx {
            pkt,
            head: pkt,
            unit: &self.unit,
            index: f,
            now,
            vtime: 0,
        };
        self.txn.run(Which::Enqueue, f, &ctx)
    }

    /// Flow `f` sent `sent` at `now`; the release time of its next packet `next`,
    /// if it has one.
    #[inline]
    pub(crate) fn on_send(
        &mut self,
        f: u32,
        sent: &Packet,
        next: Option<&Packet>,
        now: Nanos,
    ) -> Option<Nanos> {
        let (which, pkt) = match (&self.txn.program.on_dequeue, next) {
            (Some(_), _) => (Which::Dequeue, sent),
            (None, Some(n)) => (Which::Enqueue, n),
            (None, None) => return None,
        };
        let ctx = Ctx {
            pkt,
            head: next.unwrap_or(sent),
            unit: &self.unit,
            index: f,
            now,
            vtime: 0,
        };
        let at = self.txn.run(which, f, &ctx);
        next.map(|_| at)
    }
}

/// A node's own release-time program (`NodeSpec::release`): the same programs
/// as a flow's, with one set of state, whose result is the time the node's
/// output may next send. The enqueue program runs when a packet arrives into
/// the node's empty subtree; the dequeue program after every send from it, its
/// `head` the packet the node sends next (the sent one if none can be seen:
/// every unit of the node held). Without a dequeue program the enqueue program
/// runs after each send, on that next packet.
#[derive(Debug)]
pub(crate) struct NodePacer {
    pacer: Pacer,
    /// When the node may next send (0: now).
    pub(crate) due: Nanos,
}

impl NodePacer {
    pub(crate) fn new(program: Arc<RankProgram>) -> Self {
        NodePacer {
            pacer: Pacer::new(program, 1),
            due: 0,
        }
    }

    /// `pkt` arrived into the node's empty subtree at `now`.
    #[inline]
    pub(crate) fn on_arrival(&mut self, pkt: &Packet, now: Nanos) {
        self.due = self.pacer.on_arrival(0, pkt, now);
    }

    /// The node sent `sent` at `now`; it has packets `left`, `next` the one it
    /// sends next if it can be seen.
    #[inline]
    pub(crate) fn on_send(&mut self, sent: &Packet, next: Option<&Packet>, left: bool, now: Nanos) {
        if !left {
            // For the dequeue program's assignments: the next arrival into the
            // empty subtree gives the release time.
            let _ = self.pacer.on_send(0, sent, None, now);
            return;
        }
        let next = next.unwrap_or(sent);
        if let Some(due) = self.pacer.on_send(0, sent, Some(next), now) {
            self.due = due;
        }
    }
}

#[derive(Clone, Copy)]
enum Which {
    Enqueue = 0,
    Dequeue = 1,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ops: Vec<Op>) -> u64 {
        let p = Program::new(ops).unwrap();
        let code = Code::new(&p, 0, 0).unwrap();
        let pkt = Packet::new(3, 1500);
        let ctx = Ctx {
            pkt: &pkt,
            head: &pkt,
            unit: &Unit::default(),
            index: 0,
            now: 7,
            vtime: 0,
        };
        code.run(&mut code.frame(), &ctx, &mut [], &mut [])
    }

    #[test]
    fn arithmetic_saturates_and_division_by_zero_is_defined() {
        use Op::*;
        assert_eq!(run(vec![Const(u64::MAX), Const(1), Add]), u64::MAX);
        assert_eq!(run(vec![Const(1), Const(2), Sub]), 0);
        assert_eq!(run(vec![Const(u64::MAX), Const(2), Mul]), u64::MAX);
        assert_eq!(run(vec![Const(5), Const(0), Div]), u64::MAX);
        assert_eq!(run(vec![Const(5), Const(0), Rem]), 5);
        assert_eq!(run(vec![Const(7), Const(2), Rem]), 1);
        assert_eq!(run(vec![Const(0), Const(1), Const(2), Select]), 2);
        assert_eq!(
            run(vec![Op::Var(super::Var::Now), Packet(Field::Len), Lt]),
            1
        );
        assert_eq!(run(vec![Packet(Field::Flow), Const(9), Max]), 9);
    }

    #[test]
    fn malformed_programs_are_refused() {
        use Op::*;
        assert!(matches!(
            Program::new(vec![Add]),
            Err(ProgramError::Underflow { at: 0, .. })
        ));
        assert!(matches!(
            Program::new(vec![Const(1), Const(2)]),
            Err(ProgramError::Unbalanced { left: 2 })
        ));
        assert!(matches!(
            Program::new(vec![Const(1); MAX_STACK + 1]),
            Err(ProgramError::TooDeep { .. })
        ));
        let p = Program::new(vec![State(1)]).unwrap();
        assert!(matches!(
            RankProgram::new(p, None, vec![0], vec![]),
            Err(ProgramError::NoSuchState { index: 1, .. })
        ));
    }
}
