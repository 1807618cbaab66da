//! Lowering a parsed rank expression to a checked stack [`Program`]: names
//! resolved, constants folded, a divisor that is always zero refused.

use eiffel_sched::tree::{Field, Op, Program, ProgramError, Var};

use super::parse::{BinOp, Expr, Stmt};
use super::ExprError;

/// What a program computes, which decides the built-in names it may read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// A rank: every built-in name.
    Rank,
    /// A flow's release time (`release` on a per-flow leaf): no virtual time,
    /// no unit settings, no `min_remaining`, which belong to ranking.
    Release,
    /// A node's release time (`release` on a node without flows): as
    /// [`Role::Release`], and no `unit` either (the node is the only one).
    NodeRelease,
}

/// The names a program may use besides the built-in ones.
pub(crate) struct Names<'a> {
    /// Per-unit state variables, in slot order.
    pub state: &'a [String],
    /// Per-node state variables, in slot order.
    pub node_state: &'a [String],
    /// Named constants and their values (the node's `constants`).
    pub constants: &'a [(String, u64)],
    /// Whether the node is a per-flow leaf (`min_remaining` is kept there only).
    pub per_flow: bool,
    /// What the program computes.
    pub role: Role,
}

impl Names<'_> {
    fn constant(&self, n: &str) -> Option<u64> {
        self.constants.iter().find(|(c, _)| c == n).map(|&(_, v)| v)
    }
}

fn field(name: &str) -> Option<Field> {
    Field::ALL.into_iter().find(|f| f.name() == name)
}

fn var(name: &str) -> Option<Var> {
    Var::ALL.into_iter().find(|v| v.name() == name)
}

/// Whether `name` is built in (a packet field, a variable or a function), and
/// so cannot name state.
pub(crate) fn is_builtin(name: &str) -> bool {
    field(name).is_some() || var(name).is_some() || ["head", "min", "max", "if"].contains(&name)
}

fn fold(op: BinOp, a: u64, b: u64) -> u64 {
    match op {
        BinOp::Add => a.saturating_add(b),
        BinOp::Sub => a.saturating_sub(b),
        BinOp::Mul => a.saturating_mul(b),
        BinOp::Div => a.checked_div(b).unwrap_or(u64::MAX),
        BinOp::Rem => a.checked_rem(b).unwrap_or(a),
        BinOp::Lt => u64::from(a < b),
        BinOp::Le => u64::from(a <= b),
        BinOp::Gt => u64::from(a > b),
        BinOp::Ge => u64::from(a >= b),
        BinOp::Eq => u64::from(a == b),
        BinOp::Ne => u64::from(a != b),
    }
}

fn op_of(op: BinOp) -> Op {
    match op {
        BinOp::Add => Op::Add,
        BinOp::Sub => Op::Sub,
        BinOp::Mul => Op::Mul,
        BinOp::Div => Op::Div,
        BinOp::Rem => Op::Rem,
        BinOp::Lt => Op::Lt,
        BinOp::Le => Op::Le,
        BinOp::Gt => Op::Gt,
        BinOp::Ge => Op::Ge,
        BinOp::Eq => Op::Eq,
        BinOp::Ne => Op::Ne,
    }
}

/// The value of `e` if it does not depend on anything but constants (numbers
/// and the names of `names.constants`).
fn constant(e: &Expr, names: &Names<'_>) -> Option<u64> {
    match e {
        Expr::Int(v, _) => Some(*v),
        Expr::Name(None, n, _) => names.constant(n),
        Expr::Name(..) => None,
        Expr::Bin(op, a, b, _) => Some(fold(*op, constant(a, names)?, constant(b, names)?)),
        Expr::Call(f, args, _) => {
            let vals: Option<Vec<u64>> = args.iter().map(|a| constant(a, names)).collect();
            let vals = vals?;
            match (f.as_str(), vals.as_slice()) {
                ("min", v) if v.len() >= 2 => v.iter().copied().min(),
                ("max", v) if v.len() >= 2 => v.iter().copied().max(),
                ("if", [c, a, b]) => Some(if *c != 0 { *a } else { *b }),
                _ => None,
            }
        }
    }
}

struct Lower<'a> {
    names: &'a Names<'a>,
    ops: Vec<Op>,
}

impl Lower<'_> {
    fn name(&self, qualifier: Option<&str>, n: &str, at: usize) -> Result<Op, ExprError> {
        if let Some(q) = qualifier {
            if q != "head" {
                let msg = format!("unknown qualifier `{q}`: only `head.FIELD` (the unit's next packet) is qualified");
                return Err(ExprError::at(at, msg));
            }
            return field(n).map(Op::Head).ok_or_else(|| {
                ExprError::at(at, format!("unknown packet field `head.{n}`: {}", fields()))
            });
        }
        if let Some(i) = self.names.state.iter().position(|s| s == n) {
            return Ok(Op::State(i as u8));
        }
        if let Some(i) = self.names.node_state.iter().position(|s| s == n) {
            return Ok(Op::NodeState(i as u8));
        }
        if let Some(v) = var(n) {
            let ranking = matches!(
                v,
                Var::Vtime | Var::Weight | Var::Priority | Var::Reservation | Var::MinRemaining
            );
            if v == Var::Unit && self.names.role == Role::NodeRelease {
                let msg = "`unit` is a flow's id: a node's own release program has no units (keep per-flow state on a per-flow leaf)";
                return Err(ExprError::at(at, msg));
            }
            if ranking && self.names.role != Role::Rank {
                let msg = format!(
                    "`{n}` belongs to ranking: a release time may read packet fields, `head.FIELD`, now, unit, `constants` and `release_state`"
                );
                return Err(ExprError::at(at, msg));
            }
            if v == Var::MinRemaining && !self.names.per_flow {
                let msg = "`min_remaining` is kept by per-flow leaves only (`flows = N`)";
                return Err(ExprError::at(at, msg));
            }
            return Ok(Op::Var(v));
        }
        if let Some(f) = field(n) {
            return Ok(Op::Packet(f));
        }
        let vars = match self.names.role {
            Role::Rank => Var::ALL.map(Var::name).join(", "),
            Role::Release => "now, unit".to_string(),
            Role::NodeRelease => "now".to_string(),
        };
        let msg = format!(
            "unknown name `{n}`: expected a declared state variable or constant{}, {}, `head.FIELD`, or one of {vars}",
            self.declared(),
            fields(),
        );
        Err(ExprError::at(at, msg))
    }

    fn declared(&self) -> String {
        let all: Vec<&str> = self
            .names
            .state
            .iter()
            .chain(self.names.node_state)
            .chain(self.names.constants.iter().map(|(c, _)| c))
            .map(String::as_str)
            .collect();
        let table = match self.names.role {
            Role::Rank => "state",
            Role::Release | Role::NodeRelease => "release_state",
        };
        if all.is_empty() {
            format!(" (none declared: add `{table} = {{ name = 0 }}`)")
        } else {
            format!(" ({})", all.join(", "))
        }
    }

    fn expr(&mut self, e: &Expr) -> Result<(), ExprError> {
        if let Expr::Bin(BinOp::Div | BinOp::Rem, _, rhs, _) = e {
            if constant(rhs, self.names) == Some(0) {
                let msg = "division by zero: this divisor is always 0";
                return Err(ExprError::at(rhs.offset(), msg));
            }
        }
        if let Some(v) = constant(e, self.names) {
            self.ops.push(Op::Const(v));
            return Ok(());
        }
        match e {
            Expr::Int(v, _) => self.ops.push(Op::Const(*v)),
            Expr::Name(q, n, at) => {
                let op = self.name(q.as_deref(), n, *at)?;
                self.ops.push(op);
            }
            Expr::Bin(op, a, b, _) => {
                self.expr(a)?;
                self.expr(b)?;
                self.ops.push(op_of(*op));
            }
            Expr::Call(f, args, at) => self.call(f, args, *at)?,
        }
        Ok(())
    }

    fn call(&mut self, f: &str, args: &[Expr], at: usize) -> Result<(), ExprError> {
        match f {
            "min" | "max" => {
                if args.len() < 2 {
                    return Err(ExprError::at(
                        at,
                        format!("`{f}` takes two or more arguments"),
                    ));
                }
                let op = if f == "min" { Op::Min } else { Op::Max };
                self.expr(&args[0])?;
                for a in &args[1..] {
                    self.expr(a)?;
                    self.ops.push(op);
                }
            }
            "if" => {
                if args.len() != 3 {
                    let msg = "`if` takes three arguments: if(condition, then, else)";
                    return Err(ExprError::at(at, msg));
                }
                for a in args {
                    self.expr(a)?;
                }
                self.ops.push(Op::Select);
            }
            _ => {
                let msg = format!("unknown function `{f}`: the functions are min, max and if");
                return Err(ExprError::at(at, msg));
            }
        }
        Ok(())
    }

    fn target(&self, n: &str, at: usize) -> Result<Op, ExprError> {
        if let Some(i) = self.names.state.iter().position(|s| s == n) {
            return Ok(Op::SetState(i as u8));
        }
        if let Some(i) = self.names.node_state.iter().position(|s| s == n) {
            return Ok(Op::SetNodeState(i as u8));
        }
        let tables = match self.names.role {
            Role::Rank => "`state` or `node_state`",
            Role::Release | Role::NodeRelease => "`release_state`",
        };
        let msg = if is_builtin(n) {
            format!("`{n}` is built in: only declared state variables can be assigned")
        } else if self.names.constant(n).is_some() {
            format!("`{n}` is a constant: only declared state variables can be assigned")
        } else {
            format!(
                "unknown state variable `{n}`: declare it in {tables}{}",
                self.declared()
            )
        };
        Err(ExprError::at(at, msg))
    }
}

fn fields() -> String {
    format!("packet fields {}", Field::ALL.map(Field::name).join(", "))
}

/// Lowers parsed statements to a checked program.
pub(crate) fn lower(stmts: &[Stmt], names: &Names<'_>) -> Result<Program, ExprError> {
    let mut l = Lower {
        names,
        ops: Vec::new(),
    };
    for (k, s) in stmts.iter().enumerate() {
        l.expr(&s.value)?;
        if let Some((t, at)) = &s.target {
            let op = l.target(t, *at)?;
            l.ops.push(op);
        }
        if k + 1 < stmts.len() {
            l.ops.push(Op::Pop);
        }
    }
    Program::new(l.ops).map_err(|e| {
        let msg = match e {
            ProgramError::TooDeep { depth } => format!(
                "the expression nests too deeply ({depth} pending values, at most {})",
                eiffel_sched::tree::MAX_STACK
            ),
            other => other.to_string(),
        };
        ExprError::at(0, msg)
    })
}
