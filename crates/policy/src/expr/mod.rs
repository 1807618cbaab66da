//! Rank expressions: a node's rank function written in the policy file and
//! compiled, when the file is loaded, into an `eiffel-sched`
//! [`RankProgram`](eiffel_sched::tree::RankProgram) (a checked stack program);
//! nothing is parsed per packet.
//!
//! ```text
//! rank            = "start = max(vtime, finish)"
//! rank_on_dequeue = "finish = start + len * 65536 / weight; start = finish"
//! state           = { start = 0, finish = 0 }
//! ```
//!
//! A program is statements separated by `;`; each is an expression or an
//! assignment `name = expression` to a declared state variable, and the value of
//! the last one is the rank. Operators, loosest first: comparisons (`<`, `<=`,
//! `>`, `>=`, `==`, `!=`, giving 0 or 1), `+` `-`, `*` `/` `%`; parentheses;
//! functions `min(a, b, ...)`, `max(a, b, ...)`, `if(condition, then, else)`.
//! Values are unsigned 64-bit integers and arithmetic saturates (`-` at 0, `+`
//! and `*` at 2^64 - 1); `x / 0` is 2^64 - 1 and `x % 0` is `x` at run time, and a
//! divisor that is always 0 is refused at load.
//!
//! Names: declared state variables (`state`, per unit: per child, or per flow of
//! a per-flow leaf; `node_state`, per node); the packet fields `len`, `flow`,
//! `class`, `arrival`, `deadline`, `remaining`, `dscp`, `annotation` (the
//! annotator's rank: a workload's `priority` or `slack`) of the event's packet
//! (the arriving packet in `rank`, the sent one in `rank_on_dequeue`) and the
//! same fields of the unit's next packet as `head.len`, `head.deadline`, ...;
//! `now`; `vtime`, the node's virtual time (the largest rank it has served a
//! unit at); the unit's `weight`, `priority`, `reservation` (bit/s) and `unit`
//! (its index); on per-flow leaves `min_remaining`, the smallest `remaining`
//! among the flow's queued packets; and the node's named `constants`, folded
//! into the program when it is compiled.
//!
//! Release-time programs (`release`, `release_on_dequeue`, with `release_state`:
//! per flow on a per-flow leaf, one set for the node's own output elsewhere) use
//! the same language; their result is a time in ns, and they may not read what
//! belongs to ranking (`vtime`, `weight`, `priority`, `reservation`,
//! `min_remaining`), nor, on a node's own, `unit`.

mod lower;
mod parse;

pub(crate) use lower::{is_builtin, Names, Role};

use eiffel_sched::tree::Program;

/// A mistake in an expression, at a byte offset in its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExprError {
    pub offset: usize,
    pub message: String,
}

impl ExprError {
    fn at(offset: usize, message: impl Into<String>) -> Self {
        ExprError {
            offset,
            message: message.into(),
        }
    }
}

/// Parses and lowers one program.
pub(crate) fn compile(text: &str, names: &Names<'_>) -> Result<Program, ExprError> {
    let stmts = parse::parse(text).map_err(|e| ExprError::at(e.offset, e.message))?;
    lower::lower(&stmts, names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use eiffel_sched::tree::{Field, Op, Var};

    fn names<'a>(state: &'a [String], node: &'a [String]) -> Names<'a> {
        Names {
            state,
            node_state: node,
            constants: &[],
            per_flow: false,
            role: Role::Rank,
        }
    }

    #[test]
    fn wfq_lowers_to_a_short_program() {
        let state = ["start".to_string(), "finish".to_string()];
        let n = names(&state, &[]);
        let p = compile("start = max(vtime, finish)", &n).unwrap();
        assert_eq!(
            p.ops(),
            [Op::Var(Var::Vtime), Op::State(1), Op::Max, Op::SetState(0)]
        );
        let p = compile("finish = start + len * (1 << 0 == 0) + head.len", &n);
        assert!(p.is_err(), "`<<` is not an operator");
        let p = compile("x = 2 * 3; x", &n).unwrap_err();
        assert_eq!(p.offset, 0);
        let p = compile("finish = start + len * (60000 + 5536) / weight", &n).unwrap();
        assert_eq!(
            p.ops(),
            [
                Op::State(0),
                Op::Packet(Field::Len),
                Op::Const(65536),
                Op::Mul,
                Op::Var(Var::Weight),
                Op::Div,
                Op::Add,
                Op::SetState(1)
            ]
        );
    }

    #[test]
    fn constants_fold_and_release_programs_cannot_read_ranking_names() {
        let state = ["tat".to_string()];
        let constants = [("rate".to_string(), 2_000_000u64), ("zero".to_string(), 0)];
        let n = Names {
            state: &state,
            node_state: &[],
            constants: &constants,
            per_flow: true,
            role: Role::Release,
        };
        let p = compile("tat = max(tat, now) + len * 8000000000 / rate", &n).unwrap();
        assert_eq!(
            p.ops(),
            [
                Op::State(0),
                Op::Var(Var::Now),
                Op::Max,
                Op::Packet(Field::Len),
                Op::Const(8_000_000_000),
                Op::Mul,
                Op::Const(2_000_000),
                Op::Div,
                Op::Add,
                Op::SetState(0)
            ]
        );
        let e = compile("len / zero", &n).unwrap_err();
        assert!(e.message.contains("division by zero"), "{}", e.message);
        let e = compile("rate = 3", &n).unwrap_err();
        assert!(e.message.contains("is a constant"), "{}", e.message);
        for name in ["vtime", "weight", "min_remaining"] {
            let e = compile(name, &n).unwrap_err();
            assert!(e.message.contains("belongs to ranking"), "{}", e.message);
        }
        let e = compile("finish = 1", &n).unwrap_err();
        assert!(e.message.contains("`release_state`"), "{}", e.message);
    }

    #[test]
    fn load_errors_point_at_the_name_or_divisor() {
        let n = names(&[], &[]);
        let e = compile("len / (2 - 2)", &n).unwrap_err();
        assert_eq!(e.offset, 7);
        assert!(e.message.contains("division by zero"), "{}", e.message);
        let e = compile("max(len, lenn)", &n).unwrap_err();
        assert_eq!(e.offset, 9);
        assert!(e.message.contains("unknown name `lenn`"), "{}", e.message);
        let e = compile("len = 3", &n).unwrap_err();
        assert!(e.message.contains("built in"), "{}", e.message);
        let e = compile("head.size", &n).unwrap_err();
        assert!(e.message.contains("head.size"), "{}", e.message);
        let e = compile("min_remaining", &n).unwrap_err();
        assert!(e.message.contains("per-flow"), "{}", e.message);
        let e = compile("sqrt(len)", &n).unwrap_err();
        assert!(e.message.contains("unknown function"), "{}", e.message);
    }
}
