//! The form a checked stack [`Program`] runs in: three-address instructions over
//! one frame of values.
//!
//! A program's stack is resolved when it is compiled, so no operation pushes or
//! pops at run time. Every value lives in a *slot* of a frame: the unit's and
//! node's state variables, the constants, the packet fields and variables the
//! program reads, and temporaries. An instruction reads one to three slots and
//! writes one, `frame[dst] = op(frame[a], frame[b])`; a statement's assignment
//! writes its state slot directly.
//!
//! Compiling also folds operations whose operands are all constants, reuses a
//! value computed earlier when the same operation is applied to the same
//! operands and none of them has been assigned since (`len * 8000000000` in two
//! statements is computed once), and drops operations whose value nothing uses.
//! Temporaries share slots once their last reader has run.
//!
//! A run loads the state the program reads and the inputs into the frame, runs
//! the operations, stores the state it assigned and returns the result slot,
//! all as instructions of one pass (one dispatch loop: a separate loop for each
//! kind of load cost more than the loads of a short program). Constants are
//! written once, when the frame is made.

use std::collections::HashMap;

use super::{Field, Op, Program, ProgramError, Var};
use crate::packet::{Nanos, Packet};
use crate::tree::txn::Unit;

/// Most slots a frame may have (slot indices are one byte).
pub const MAX_SLOTS: usize = 256;

/// A value a run reads from its event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Input {
    Packet(Field),
    Head(Field),
    Var(Var),
}

/// What one run of a program sees besides state.
pub(crate) struct Ctx<'a> {
    pub pkt: &'a Packet,
    pub head: &'a Packet,
    pub unit: &'a Unit,
    pub index: u32,
    pub now: Nanos,
    pub vtime: u64,
}

impl Input {
    #[inline]
    fn read(self, ctx: &Ctx<'_>) -> u64 {
        match self {
            Input::Packet(f) => f.of(ctx.pkt),
            Input::Head(f) => f.of(ctx.head),
            Input::Var(v) => match v {
                Var::Now => ctx.now,
                Var::Vtime => ctx.vtime,
                Var::Weight => u64::from(ctx.unit.weight),
                Var::Priority => u64::from(ctx.unit.priority),
                Var::Reservation => ctx.unit.reservation.bps(),
                Var::Unit => u64::from(ctx.index),
                Var::MinRemaining => ctx.unit.queued_min,
            },
        }
    }
}

/// An instruction's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
enum Kind {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Min,
    Max,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    /// `a != 0 ? b : c`.
    Select,
    /// `a`.
    Copy,
    /// Unit state variable `a`.
    LoadState,
    /// Node state variable `a`.
    LoadNode,
    /// Input `a` of the code's inputs.
    Input,
    /// Stores slot `b` into unit state variable `a` (writes no slot).
    StoreState,
    /// Stores slot `b` into node state variable `a` (writes no slot).
    StoreNode,
}

impl Kind {
    fn of(op: Op) -> Option<Kind> {
        Some(match op {
            Op::Add => Kind::Add,
            Op::Sub => Kind::Sub,
            Op::Mul => Kind::Mul,
            Op::Div => Kind::Div,
            Op::Rem => Kind::Rem,
            Op::Min => Kind::Min,
            Op::Max => Kind::Max,
            Op::Lt => Kind::Lt,
            Op::Le => Kind::Le,
            Op::Gt => Kind::Gt,
            Op::Ge => Kind::Ge,
            Op::Eq => Kind::Eq,
            Op::Ne => Kind::Ne,
            _ => return None,
        })
    }

    #[cfg(test)]
    /// Whether the instruction moves a value between the frame and the state
    /// or event rather than computing one.
    fn moves(self) -> bool {
        matches!(
            self,
            Kind::LoadState | Kind::LoadNode | Kind::Input | Kind::StoreState | Kind::StoreNode
        )
    }

    /// Whether `op(a, b) == op(b, a)`.
    fn commutes(self) -> bool {
        matches!(
            self,
            Kind::Add | Kind::Mul | Kind::Min | Kind::Max | Kind::Eq | Kind::Ne
        )
    }

    /// The operation, with the documented saturation and division by zero.
    #[inline(always)]
    fn apply(self, a: u64, b: u64, c: u64) -> u64 {
        match self {
            Kind::Add => a.saturating_add(b),
            Kind::Sub => a.saturating_sub(b),
            Kind::Mul => a.saturating_mul(b),
            Kind::Div => a.checked_div(b).unwrap_or(u64::MAX),
            Kind::Rem => a.checked_rem(b).unwrap_or(a),
            Kind::Min => a.min(b),
            Kind::Max => a.max(b),
            Kind::Lt => u64::from(a < b),
            Kind::Le => u64::from(a <= b),
            Kind::Gt => u64::from(a > b),
            Kind::Ge => u64::from(a >= b),
            Kind::Eq => u64::from(a == b),
            Kind::Ne => u64::from(a != b),
            Kind::Select => {
                if a != 0 {
                    b
                } else {
                    c
                }
            }
            Kind::Copy
            | Kind::LoadState
            | Kind::LoadNode
            | Kind::Input
            | Kind::StoreState
            | Kind::StoreNode => a,
        }
    }
}

/// One instruction: `frame[dst] = kind(frame[a], frame[b], frame[c])`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Instr {
    kind: Kind,
    dst: u8,
    a: u8,
    b: u8,
    c: u8,
}

/// A compiled program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Code {
    /// A fresh frame: constants in their slots, zeros elsewhere.
    template: Box<[u64]>,
    /// The inputs the program reads, by index.
    inputs: Box<[Input]>,
    /// Loads of the state and inputs read, the operations, stores of the
    /// state assigned: one pass.
    instrs: Box<[Instr]>,
    result: u8,
    /// Unit and node state variables the program was compiled for.
    state: usize,
    node: usize,
}

impl Code {
    /// Compiles a checked program whose state indices are below `state` (per
    /// unit) and `node` (per node).
    ///
    /// # Errors
    /// A frame of more than [`MAX_SLOTS`] values.
    pub(crate) fn new(p: &Program, state: usize, node: usize) -> Result<Code, ProgramError> {
        let mut b = Builder::default();
        for &op in p.ops() {
            b.op(op);
        }
        let result = b.stack.pop().expect("a checked program leaves one value");
        let live = b.live(result);
        let code = Layout::new(state, node).finish(&live, result)?;
        assert!(
            code.in_bounds(state, node),
            "the compiler names only slots of the frame and declared state"
        );
        Ok(code)
    }

    /// A fresh frame for [`Code::run`].
    pub(crate) fn frame(&self) -> Frame {
        Frame(self.template.clone())
    }

    /// Instructions run per call.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.instrs.iter().filter(|i| !i.kind.moves()).count()
    }

    /// Whether every slot an instruction, load or store names lies in the
    /// frame, and every state variable below `state` and `node`: what
    /// [`Code::run`]'s unchecked indexing relies on.
    fn in_bounds(&self, state: usize, node: usize) -> bool {
        let slots = self.template.len();
        let slot = |s: u8| usize::from(s) < slots;
        let below = |s: u8, n: usize| usize::from(s) < n;
        self.instrs.iter().all(|i| match i.kind {
            Kind::LoadState => slot(i.dst) && below(i.a, state),
            Kind::LoadNode => slot(i.dst) && below(i.a, node),
            Kind::Input => slot(i.dst) && below(i.a, self.inputs.len()),
            Kind::StoreState => below(i.a, state) && slot(i.b),
            Kind::StoreNode => below(i.a, node) && slot(i.b),
            _ => [i.dst, i.a, i.b, i.c].into_iter().all(slot),
        }) && slot(self.result)
    }

    /// Runs the program in `frame` (made by this code's [`Code::frame`]) on
    /// `state` (the unit's variables) and `node` (the node's).
    ///
    /// # Panics
    /// A frame made by another program, or fewer state variables than the
    /// program was compiled for.
    #[inline]
    #[allow(unsafe_code)]
    pub(crate) fn run(
        &self,
        frame: &mut Frame,
        ctx: &Ctx<'_>,
        state: &mut [u64],
        node: &mut [u64],
    ) -> u64 {
        let f = &mut *frame.0;
        assert!(
            f.len() == self.template.len() && state.len() >= self.state && node.len() >= self.node,
            "a frame and state of the program's own shape"
        );
        // SAFETY: every `get_unchecked` below reads or writes an index that
        // `Code::new` checked with `in_bounds`: slots below `template.len()`,
        // unit state indices below `self.state`, node state indices below
        // `self.node`; the assertion above checked that `f`, `state` and `node`
        // are at least that long.
        unsafe {
            for ins in &*self.instrs {
                let (a, b) = (usize::from(ins.a), usize::from(ins.b));
                let v = match ins.kind {
                    Kind::LoadState => *state.get_unchecked(a),
                    Kind::LoadNode => *node.get_unchecked(a),
                    Kind::Input => self.inputs.get_unchecked(a).read(ctx),
                    Kind::StoreState => {
                        *state.get_unchecked_mut(a) = *f.get_unchecked(b);
                        continue;
                    }
                    Kind::StoreNode => {
                        *node.get_unchecked_mut(a) = *f.get_unchecked(b);
                        continue;
                    }
                    Kind::Select => {
                        let pick = if *f.get_unchecked(a) != 0 {
                            b
                        } else {
                            usize::from(ins.c)
                        };
                        *f.get_unchecked(pick)
                    }
                    kind => kind.apply(*f.get_unchecked(a), *f.get_unchecked(b), 0),
                };
                *f.get_unchecked_mut(usize::from(ins.dst)) = v;
            }
            *f.get_unchecked(usize::from(self.result))
        }
    }
}

/// The values of one running program: made by [`Code::frame`], with the
/// program's constants in place.
#[derive(Debug)]
pub(crate) struct Frame(Box<[u64]>);

/// A value while compiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Val {
    Const(u64),
    State(u8),
    Node(u8),
    In(Input),
    Temp(u32),
}

/// Where an instruction writes while compiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dst {
    State(u8),
    Node(u8),
    Temp(u32),
}

impl Dst {
    fn val(self) -> Val {
        match self {
            Dst::State(i) => Val::State(i),
            Dst::Node(i) => Val::Node(i),
            Dst::Temp(t) => Val::Temp(t),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    kind: Kind,
    dst: Dst,
    args: [Val; 3],
}

/// The stack resolved into instructions over values.
#[derive(Default)]
struct Builder {
    stack: Vec<Val>,
    out: Vec<Pending>,
    /// Values already computed: operation and operands to the temporary.
    seen: HashMap<(Kind, [Val; 3]), u32>,
    temps: u32,
}

impl Builder {
    fn op(&mut self, op: Op) {
        let v = match op {
            Op::Const(c) => Val::Const(c),
            Op::Packet(f) => Val::In(Input::Packet(f)),
            Op::Head(f) => Val::In(Input::Head(f)),
            Op::Var(v) => Val::In(Input::Var(v)),
            Op::State(i) => Val::State(i),
            Op::NodeState(i) => Val::Node(i),
            Op::SetState(i) => return self.assign(Dst::State(i)),
            Op::SetNodeState(i) => return self.assign(Dst::Node(i)),
            Op::Pop => {
                self.stack.pop();
                return;
            }
            Op::Select => {
                let b = self.pop();
                let a = self.pop();
                let c = self.pop();
                self.select(c, a, b)
            }
            _ => {
                let kind = Kind::of(op).expect("every other operation is binary");
                let b = self.pop();
                let a = self.pop();
                self.binary(kind, a, b)
            }
        };
        self.stack.push(v);
    }

    fn pop(&mut self) -> Val {
        self.stack
            .pop()
            .expect("a checked program never underflows")
    }

    fn binary(&mut self, kind: Kind, a: Val, b: Val) -> Val {
        if let (Val::Const(x), Val::Const(y)) = (a, b) {
            return Val::Const(kind.apply(x, y, 0));
        }
        if kind.commutes() {
            if let Some(&t) = self.seen.get(&(kind, [b, a, b])) {
                return Val::Temp(t);
            }
        }
        self.emit(kind, [a, b, a])
    }

    fn select(&mut self, c: Val, a: Val, b: Val) -> Val {
        match c {
            Val::Const(0) => b,
            Val::Const(_) => a,
            _ if a == b => a,
            _ => self.emit(Kind::Select, [c, a, b]),
        }
    }

    /// The value of `kind(args)`: one computed earlier, or a new temporary.
    fn emit(&mut self, kind: Kind, args: [Val; 3]) -> Val {
        if let Some(&t) = self.seen.get(&(kind, args)) {
            return Val::Temp(t);
        }
        let t = self.temps;
        self.temps += 1;
        self.seen.insert((kind, args), t);
        self.out.push(Pending {
            kind,
            dst: Dst::Temp(t),
            args,
        });
        Val::Temp(t)
    }

    /// Stores the top of the stack into a state variable (the value stays on
    /// the stack).
    fn assign(&mut self, dst: Dst) {
        let target = dst.val();
        let top = *self
            .stack
            .last()
            .expect("a checked program never underflows");
        if top == target {
            return;
        }
        // Values still pending that read the variable keep its old value.
        let below = self.stack.len() - 1;
        if self.stack[..below].contains(&target) {
            let old = self.fresh(Kind::Copy, [target; 3]);
            for v in &mut self.stack[..below] {
                if *v == target {
                    *v = old;
                }
            }
        }
        // Nothing computed from the old value may stand for the new one.
        self.seen.retain(|(_, args), _| !args.contains(&target));
        let retarget = match (top, self.out.last()) {
            (Val::Temp(t), Some(last)) => {
                last.dst == Dst::Temp(t) && !self.stack[..below].contains(&top)
            }
            _ => false,
        };
        if retarget {
            let Val::Temp(t) = top else { unreachable!() };
            self.seen.retain(|_, v| *v != t);
            self.out.last_mut().expect("checked above").dst = dst;
            *self.stack.last_mut().expect("checked above") = target;
        } else {
            self.out.push(Pending {
                kind: Kind::Copy,
                dst,
                args: [top; 3],
            });
        }
    }

    /// A new temporary holding `kind(args)`, never reused by value.
    fn fresh(&mut self, kind: Kind, args: [Val; 3]) -> Val {
        let t = self.temps;
        self.temps += 1;
        self.out.push(Pending {
            kind,
            dst: Dst::Temp(t),
            args,
        });
        Val::Temp(t)
    }

    /// The instructions whose values are used: those that assign state and
    /// those the result or a used instruction reads.
    fn live(self, result: Val) -> Vec<Pending> {
        let mut used = vec![false; self.temps as usize];
        let mark = |v: Val, used: &mut Vec<bool>| {
            if let Val::Temp(t) = v {
                used[t as usize] = true;
            }
        };
        mark(result, &mut used);
        let mut keep = vec![false; self.out.len()];
        for (k, p) in self.out.iter().enumerate().rev() {
            keep[k] = match p.dst {
                Dst::Temp(t) => used[t as usize],
                Dst::State(_) | Dst::Node(_) => true,
            };
            if keep[k] {
                for &a in &p.args {
                    mark(a, &mut used);
                }
            }
        }
        self.out
            .into_iter()
            .zip(keep)
            .filter_map(|(p, k)| k.then_some(p))
            .collect()
    }
}

/// Slots assigned to values: state first (unit state at its index, then node
/// state), then constants and inputs as they are first read, then temporaries.
struct Layout {
    state: usize,
    template_node: usize,
    slots: HashMap<Val, usize>,
    template: Vec<u64>,
    inputs: Vec<(u8, Input)>,
    /// Free temporary slots.
    free: Vec<usize>,
    /// Index of the last instruction reading each temporary.
    last_use: HashMap<u32, usize>,
}

impl Layout {
    fn new(state: usize, node: usize) -> Self {
        let mut slots = HashMap::new();
        for i in 0..state {
            slots.insert(Val::State(i as u8), i);
        }
        for i in 0..node {
            slots.insert(Val::Node(i as u8), state + i);
        }
        Layout {
            state,
            template_node: node,
            slots,
            template: vec![0; state + node],
            inputs: Vec::new(),
            free: Vec::new(),
            last_use: HashMap::new(),
        }
    }

    /// The slot of a value read, given a slot if it is a constant or input
    /// read for the first time.
    fn read(&mut self, v: Val) -> usize {
        if let Some(&s) = self.slots.get(&v) {
            return s;
        }
        let s = self.template.len();
        self.template.push(match v {
            Val::Const(c) => c,
            _ => 0,
        });
        if let Val::In(input) = v {
            self.inputs.push((s as u8, input));
        }
        self.slots.insert(v, s);
        s
    }

    /// A slot for a new temporary.
    fn temp(&mut self, t: u32) -> usize {
        let s = self.free.pop().unwrap_or_else(|| {
            self.template.push(0);
            self.template.len() - 1
        });
        self.slots.insert(Val::Temp(t), s);
        s
    }

    fn finish(mut self, live: &[Pending], result: Val) -> Result<Code, ProgramError> {
        for (k, p) in live.iter().enumerate() {
            for a in p.args {
                if let Val::Temp(t) = a {
                    self.last_use.insert(t, k);
                }
            }
        }
        if let Val::Temp(t) = result {
            self.last_use.insert(t, usize::MAX);
        }
        let mut instrs = Vec::with_capacity(live.len());
        let (mut load_state, mut load_node) = (Vec::new(), Vec::new());
        let (mut store_state, mut store_node) = (Vec::new(), Vec::new());
        let mut note_read = |v: Val, slot: usize| match v {
            Val::State(i) if !load_state.contains(&i) => load_state.push(i),
            Val::Node(i) if !load_node.contains(&(slot as u8, i)) => {
                load_node.push((slot as u8, i));
            }
            _ => {}
        };
        for (k, p) in live.iter().enumerate() {
            let mut args = [0usize; 3];
            for (slot, &a) in args.iter_mut().zip(&p.args) {
                *slot = self.read(a);
                note_read(a, *slot);
            }
            // Temporaries read for the last time free their slots first: an
            // instruction reads its operands before it writes.
            for a in p.args {
                if let Val::Temp(t) = a {
                    // (An operand read twice is freed once.)
                    if self.last_use.get(&t) == Some(&k) {
                        if let Some(s) = self.slots.remove(&a) {
                            self.free.push(s);
                        }
                    }
                }
            }
            let dst = match p.dst {
                Dst::Temp(t) => self.temp(t),
                Dst::State(i) => {
                    if !store_state.contains(&i) {
                        store_state.push(i);
                    }
                    usize::from(i)
                }
                Dst::Node(i) => {
                    let slot = self.state + usize::from(i);
                    if !store_node.contains(&(slot as u8, i)) {
                        store_node.push((slot as u8, i));
                    }
                    slot
                }
            };
            instrs.push((p.kind, dst, args));
        }
        let result_slot = self.read(result);
        note_read(result, result_slot);
        if self.template.len() > MAX_SLOTS {
            return Err(ProgramError::TooManyValues {
                slots: self.template.len(),
            });
        }
        let moves = Moves {
            load_state: &load_state,
            load_node: &load_node,
            inputs: &self.inputs,
            store_state: &store_state,
            store_node: &store_node,
        };
        let instrs = moves.around(instrs);
        Ok(Code {
            template: self.template.into(),
            inputs: self.inputs.iter().map(|&(_, input)| input).collect(),
            instrs,
            result: result_slot as u8,
            state: self.state,
            node: self.template_node,
        })
    }
}

/// The loads and stores around a program's operations.
struct Moves<'a> {
    /// Unit state variables read (their slot is their index).
    load_state: &'a [u8],
    /// Node state variables read: (slot, variable).
    load_node: &'a [(u8, u8)],
    /// Inputs read: (slot, input).
    inputs: &'a [(u8, Input)],
    /// Unit state variables assigned.
    store_state: &'a [u8],
    /// Node state variables assigned: (slot, variable).
    store_node: &'a [(u8, u8)],
}

impl Moves<'_> {
    /// The instructions of one run: loads, the operations `(kind, dst, args)`,
    /// stores.
    fn around(&self, ops: Vec<(Kind, usize, [usize; 3])>) -> Box<[Instr]> {
        let mv = |kind, dst: u8, a: u8, b: u8| Instr {
            kind,
            dst,
            a,
            b,
            c: 0,
        };
        let loads = (self.load_state.iter())
            .map(|&i| mv(Kind::LoadState, i, i, 0))
            .chain(
                self.load_node
                    .iter()
                    .map(|&(s, i)| mv(Kind::LoadNode, s, i, 0)),
            )
            .chain(
                (self.inputs.iter().enumerate()).map(|(k, &(s, _))| mv(Kind::Input, s, k as u8, 0)),
            );
        let ops = ops.into_iter().map(|(kind, dst, [a, b, c])| Instr {
            kind,
            dst: dst as u8,
            a: a as u8,
            b: b as u8,
            c: c as u8,
        });
        let stores = (self.store_state.iter())
            .map(|&i| mv(Kind::StoreState, 0, i, i))
            .chain(
                self.store_node
                    .iter()
                    .map(|&(s, i)| mv(Kind::StoreNode, 0, i, s)),
            );
        loads.chain(ops).chain(stores).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The stack machine a [`Program`] describes, run operation by operation:
    /// the reference the compiled form must agree with.
    fn reference(ops: &[Op], ctx: &Ctx<'_>, state: &mut [u64], node: &mut [u64]) -> u64 {
        let mut stack = Vec::new();
        for &op in ops {
            let v = match op {
                Op::Const(c) => c,
                Op::Packet(f) => f.of(ctx.pkt),
                Op::Head(f) => f.of(ctx.head),
                Op::Var(v) => Input::Var(v).read(ctx),
                Op::State(i) => state[usize::from(i)],
                Op::NodeState(i) => node[usize::from(i)],
                Op::SetState(i) => {
                    state[usize::from(i)] = *stack.last().unwrap();
                    continue;
                }
                Op::SetNodeState(i) => {
                    node[usize::from(i)] = *stack.last().unwrap();
                    continue;
                }
                Op::Pop => {
                    stack.pop();
                    continue;
                }
                Op::Select => {
                    let b = stack.pop().unwrap();
                    let a = stack.pop().unwrap();
                    let c = stack.pop().unwrap();
                    if c != 0 {
                        a
                    } else {
                        b
                    }
                }
                _ => {
                    let b = stack.pop().unwrap();
                    let a = stack.pop().unwrap();
                    Kind::of(op).unwrap().apply(a, b, 0)
                }
            };
            stack.push(v);
        }
        assert_eq!(stack.len(), 1);
        stack[0]
    }

    const CONSTS: [u64; 7] = [0, 1, 2, 7, 1500, 8_000_000_000, u64::MAX];
    const BINARY: [Op; 13] = [
        Op::Add,
        Op::Sub,
        Op::Mul,
        Op::Div,
        Op::Rem,
        Op::Min,
        Op::Max,
        Op::Lt,
        Op::Le,
        Op::Gt,
        Op::Ge,
        Op::Eq,
        Op::Ne,
    ];

    /// A checked program from random choices: each choice picks an operation
    /// the current depth allows (3 unit and 2 node state variables).
    fn program(choices: &[(u8, u8)]) -> Program {
        let mut ops = Vec::new();
        let mut depth = 0usize;
        for &(what, arg) in choices {
            let arg = usize::from(arg);
            let op = match what % 6 {
                0 | 1 if depth < MAX_STACK_TEST => match arg % 6 {
                    0 => Op::Const(CONSTS[arg / 6 % CONSTS.len()]),
                    1 => Op::Packet(Field::ALL[arg / 6 % Field::ALL.len()]),
                    2 => Op::Head(Field::ALL[arg / 6 % Field::ALL.len()]),
                    3 => Op::Var(Var::ALL[arg / 6 % Var::ALL.len()]),
                    4 => Op::State((arg / 6 % 3) as u8),
                    _ => Op::NodeState((arg / 6 % 2) as u8),
                },
                2 if depth >= 2 => BINARY[arg % BINARY.len()],
                3 if depth >= 3 => Op::Select,
                4 if depth >= 1 => match arg % 2 {
                    0 => Op::SetState((arg / 2 % 3) as u8),
                    _ => Op::SetNodeState((arg / 2 % 2) as u8),
                },
                5 if depth >= 2 => Op::Pop,
                _ => continue,
            };
            let (pop, push) = op.arity();
            depth = depth - pop + push;
            ops.push(op);
        }
        if depth == 0 {
            ops.push(Op::State(0));
            depth = 1;
        }
        while depth > 1 {
            ops.push(BINARY[depth % BINARY.len()]);
            depth -= 1;
        }
        Program::new(ops).unwrap()
    }

    const MAX_STACK_TEST: usize = 12;

    fn packet(len: u32, v: u64) -> Packet {
        let mut p = Packet::new(v as u32 % 5, len).class((v % 3) as u32).at(v);
        p.deadline = v.wrapping_mul(3);
        p.remaining = v / 2;
        p
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 16 } else { 2000 }))]

        /// The compiled program gives the stack machine's result and leaves
        /// the same state, run after run in the same frame.
        #[test]
        fn compiled_programs_agree_with_the_stack_machine(
            choices in proptest::collection::vec((any::<u8>(), any::<u8>()), 0..60),
            runs in proptest::collection::vec((1u32..2000, any::<u64>(), any::<u64>()), 1..4),
        ) {
            let p = program(&choices);
            let code = Code::new(&p, 3, 2).unwrap();
            prop_assert!(code.len() <= p.ops().len());
            let mut frame = code.frame();
            let (mut s1, mut n1) = ([5u64, 0, u64::MAX], [3u64, 9]);
            let (mut s2, mut n2) = (s1, n1);
            for (len, v, now) in runs {
                let (pkt, head) = (packet(len, v), packet(len / 2 + 1, v ^ now));
                let unit = Unit { weight: (v % 7) as u32, priority: 2, queued_min: now, ..Unit::default() };
                let ctx = Ctx { pkt: &pkt, head: &head, unit: &unit, index: 4, now, vtime: v / 3 };
                let want = reference(p.ops(), &ctx, &mut s1, &mut n1);
                let got = code.run(&mut frame, &ctx, &mut s2, &mut n2);
                prop_assert_eq!(got, want, "{:?}", p.ops());
                prop_assert_eq!((s2, n2), (s1, n1), "{:?}", p.ops());
            }
        }
    }

    #[test]
    fn assignments_keep_pending_old_values_and_repeated_work_is_shared() {
        use Op::*;
        // s0 + (s0 = s0 + 1): the left operand is the value before the store.
        let p = Program::new(vec![State(0), State(0), Const(1), Add, SetState(0), Add]).unwrap();
        let code = Code::new(&p, 1, 0).unwrap();
        let pkt = crate::packet::Packet::new(0, 100);
        let unit = Unit::default();
        let ctx = Ctx {
            pkt: &pkt,
            head: &pkt,
            unit: &unit,
            index: 0,
            now: 0,
            vtime: 0,
        };
        let mut s = [10u64];
        assert_eq!(code.run(&mut code.frame(), &ctx, &mut s, &mut []), 21);
        assert_eq!(s, [11]);
        // len * 8 twice: computed once; `len * 8 / 3 + len * 8 % 3` is three instructions.
        let twice = vec![
            Packet(Field::Len),
            Const(8),
            Mul,
            Const(3),
            Div,
            Const(8),
            Packet(Field::Len),
            Mul,
            Const(3),
            Rem,
            Add,
        ];
        let code = Code::new(&Program::new(twice).unwrap(), 0, 0).unwrap();
        assert_eq!(code.len(), 4);
        assert_eq!(
            code.run(&mut code.frame(), &ctx, &mut [], &mut []),
            800 / 3 + 800 % 3
        );
    }
}
