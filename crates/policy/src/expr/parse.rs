//! The grammar of rank expressions, parsed with `winnow` into a small syntax
//! tree whose nodes carry their byte offset in the expression text.
//!
//! ```text
//! program    = statement { ";" statement } [ ";" ]
//! statement  = NAME "=" expr | expr
//! expr       = sum [ ("<" | "<=" | ">" | ">=" | "==" | "!=") sum ]
//! sum        = product { ("+" | "-") product }
//! product    = atom { ("*" | "/" | "%") atom }
//! atom       = INTEGER | NAME "(" expr { "," expr } ")" | NAME [ "." NAME ] | "(" expr ")"
//! INTEGER    = digits, `_` allowed between them
//! NAME       = letter or `_`, then letters, digits or `_`
//! ```

use winnow::ascii::multispace0;
use winnow::combinator::{alt, cut_err, delimited, eof, not, opt, preceded, repeat, separated};
use winnow::error::{AddContext, ContextError, ErrMode, StrContext, StrContextValue};
use winnow::prelude::*;
use winnow::stream::{LocatingSlice, Location};
use winnow::token::{one_of, take_while};

type In<'a> = LocatingSlice<&'a str>;

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// An expression and the offset of its first character.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Expr {
    Int(u64, usize),
    /// A name, optionally qualified (`head.len`): `(qualifier, name, offset)`.
    Name(Option<String>, String, usize),
    /// A function call: name, arguments, offset.
    Call(String, Vec<Expr>, usize),
    /// `lhs op rhs`, with the operator's offset.
    Bin(BinOp, Box<Expr>, Box<Expr>, usize),
}

impl Expr {
    pub(crate) fn offset(&self) -> usize {
        match self {
            Expr::Int(_, at) | Expr::Name(_, _, at) | Expr::Call(_, _, at) => *at,
            Expr::Bin(_, lhs, _, _) => lhs.offset(),
        }
    }
}

/// A statement: an optional assignment target (name and offset) and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stmt {
    pub target: Option<(String, usize)>,
    pub value: Expr,
}

/// A syntax error: where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

fn expected(what: &'static str) -> StrContext {
    StrContext::Expected(StrContextValue::Description(what))
}

fn ws(i: &mut In<'_>) -> ModalResult<()> {
    multispace0.void().parse_next(i)
}

fn name(i: &mut In<'_>) -> ModalResult<(String, usize)> {
    let at = i.current_token_start();
    let first = one_of(|c: char| c.is_ascii_alphabetic() || c == '_');
    let rest = take_while(0.., |c: char| c.is_ascii_alphanumeric() || c == '_');
    let s = (first, rest).take().parse_next(i)?;
    Ok((s.to_string(), at))
}

fn integer(i: &mut In<'_>) -> ModalResult<Expr> {
    let at = i.current_token_start();
    let digits = (
        one_of(|c: char| c.is_ascii_digit()),
        take_while(0.., |c: char| c.is_ascii_digit() || c == '_'),
    )
        .take()
        .parse_next(i)?;
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    match clean.parse::<u64>() {
        Ok(v) => Ok(Expr::Int(v, at)),
        Err(_) => Err(ErrMode::Cut(ContextError::new().add_context(
            i,
            &i.checkpoint(),
            expected("an integer at most 18446744073709551615"),
        ))),
    }
}

fn call_or_name(i: &mut In<'_>) -> ModalResult<Expr> {
    let (n, at) = name.parse_next(i)?;
    ws.parse_next(i)?;
    if opt('(').parse_next(i)?.is_some() {
        let args: Vec<Expr> = cut_err(terminated_list).parse_next(i)?;
        return Ok(Expr::Call(n, args, at));
    }
    if opt('.').parse_next(i)?.is_some() {
        let (field, _) = cut_err(name)
            .context(expected("a field name after `.`"))
            .parse_next(i)?;
        return Ok(Expr::Name(Some(n), field, at));
    }
    Ok(Expr::Name(None, n, at))
}

/// The arguments of a call after its `(`, and the `)`.
fn terminated_list(i: &mut In<'_>) -> ModalResult<Vec<Expr>> {
    let first = expr.parse_next(i)?;
    let rest: Vec<Expr> = repeat(0.., preceded((ws, ','), cut_err(expr))).parse_next(i)?;
    let args: Vec<Expr> = std::iter::once(first).chain(rest).collect();
    let _ = (ws, ')').context(expected("`,` or `)`")).parse_next(i)?;
    Ok(args)
}

fn atom(i: &mut In<'_>) -> ModalResult<Expr> {
    ws.parse_next(i)?;
    alt((
        integer,
        call_or_name,
        delimited(
            '(',
            cut_err(expr),
            cut_err((ws, ')')).context(expected("`)`")),
        ),
    ))
    .context(expected("a number, a name, a call or `(`"))
    .parse_next(i)
}

/// A left-associative chain of `operand` joined by the operators `ops` gives.
fn chain(
    i: &mut In<'_>,
    operand: fn(&mut In<'_>) -> ModalResult<Expr>,
    op: fn(&mut In<'_>) -> ModalResult<BinOp>,
) -> ModalResult<Expr> {
    let mut lhs = operand(i)?;
    loop {
        ws.parse_next(i)?;
        let at = i.current_token_start();
        let Some(o) = opt(op).parse_next(i)? else {
            return Ok(lhs);
        };
        let rhs = cut_err(operand).parse_next(i)?;
        lhs = Expr::Bin(o, Box::new(lhs), Box::new(rhs), at);
    }
}

fn product_op(i: &mut In<'_>) -> ModalResult<BinOp> {
    alt((
        '*'.value(BinOp::Mul),
        '/'.value(BinOp::Div),
        '%'.value(BinOp::Rem),
    ))
    .parse_next(i)
}

fn sum_op(i: &mut In<'_>) -> ModalResult<BinOp> {
    alt(('+'.value(BinOp::Add), '-'.value(BinOp::Sub))).parse_next(i)
}

fn cmp_op(i: &mut In<'_>) -> ModalResult<BinOp> {
    alt((
        "<=".value(BinOp::Le),
        ">=".value(BinOp::Ge),
        "==".value(BinOp::Eq),
        "!=".value(BinOp::Ne),
        '<'.value(BinOp::Lt),
        '>'.value(BinOp::Gt),
    ))
    .parse_next(i)
}

fn product(i: &mut In<'_>) -> ModalResult<Expr> {
    chain(i, atom, product_op)
}

fn sum(i: &mut In<'_>) -> ModalResult<Expr> {
    chain(i, product, sum_op)
}

fn expr(i: &mut In<'_>) -> ModalResult<Expr> {
    let lhs = sum(i)?;
    ws.parse_next(i)?;
    let at = i.current_token_start();
    match opt(cmp_op).parse_next(i)? {
        Some(o) => {
            let rhs = cut_err(sum).parse_next(i)?;
            Ok(Expr::Bin(o, Box::new(lhs), Box::new(rhs), at))
        }
        None => Ok(lhs),
    }
}

fn assignment(i: &mut In<'_>) -> ModalResult<(String, usize)> {
    let target = name.parse_next(i)?;
    let _ = (ws, '=', not('=')).parse_next(i)?;
    Ok(target)
}

fn statement(i: &mut In<'_>) -> ModalResult<Stmt> {
    ws.parse_next(i)?;
    let target = opt(assignment).parse_next(i)?;
    let value = if target.is_some() {
        cut_err(expr).parse_next(i)?
    } else {
        expr.parse_next(i)?
    };
    Ok(Stmt { target, value })
}

fn program(i: &mut In<'_>) -> ModalResult<Vec<Stmt>> {
    let stmts: Vec<Stmt> = separated(1.., statement, (ws, ';')).parse_next(i)?;
    let _: Vec<()> = repeat(0.., (ws, ';').void()).parse_next(i)?;
    let _ = preceded(ws, eof)
        .context(expected("an operator, `;` or the end"))
        .parse_next(i)?;
    Ok(stmts)
}

/// Longest program text, in bytes: it bounds the length of an operator chain,
/// which the later passes walk recursively.
pub(crate) const MAX_PROGRAM_BYTES: usize = 4096;

/// Deepest nesting of parentheses and calls: the parser recurses once per level.
pub(crate) const MAX_NESTING: usize = 32;

/// Refuses a program too long or too deeply nested to parse and lower with
/// bounded recursion, before the parser recurses.
fn check_size(text: &str) -> Result<(), SyntaxError> {
    if text.len() > MAX_PROGRAM_BYTES {
        return Err(SyntaxError {
            offset: MAX_PROGRAM_BYTES,
            message: format!("a rank program is at most {MAX_PROGRAM_BYTES} bytes"),
        });
    }
    let mut depth = 0usize;
    for (offset, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_NESTING {
            return Err(SyntaxError {
                offset,
                message: format!("parentheses and calls nest at most {MAX_NESTING} deep"),
            });
        }
    }
    Ok(())
}

/// Parses a whole program.
pub(crate) fn parse(text: &str) -> Result<Vec<Stmt>, SyntaxError> {
    check_size(text)?;
    program.parse(LocatingSlice::new(text)).map_err(|e| {
        let message = e.inner().to_string();
        SyntaxError {
            offset: e.offset(),
            message: if message.is_empty() {
                "syntax error".to_string()
            } else {
                message.replace('\n', "; ")
            },
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_and_long_programs_are_refused_before_parsing() {
        let deep = format!("{}len{}", "(".repeat(1_000), ")".repeat(1_000));
        let e = parse(&deep).unwrap_err();
        assert_eq!(e.offset, MAX_NESTING);
        assert!(e.message.contains("nest at most"), "{}", e.message);
        let calls = format!("{}len{}", "max(1, ".repeat(40), ")".repeat(40));
        assert!(parse(&calls).unwrap_err().message.contains("nest at most"));
        let long = "1 + ".repeat(2_000) + "1";
        let e = parse(&long).unwrap_err();
        assert!(e.message.contains("at most 4096 bytes"), "{}", e.message);
        let ok = format!("{}len{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert!(parse(&ok).is_ok());
        assert!(parse(&("1 + ".repeat(1_000) + "1")).is_ok());
    }

    #[test]
    fn precedence_and_positions() {
        let p = parse("finish = max(vtime, finish) + len * 1_000 / weight").unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].target, Some(("finish".to_string(), 0)));
        let Expr::Bin(BinOp::Add, lhs, rhs, at) = &p[0].value else {
            panic!("{:?}", p[0].value)
        };
        assert_eq!(*at, 28);
        assert!(matches!(**lhs, Expr::Call(ref n, ref a, 9) if n == "max" && a.len() == 2));
        let Expr::Bin(BinOp::Div, m, w, _) = &**rhs else {
            panic!()
        };
        assert!(matches!(**m, Expr::Bin(BinOp::Mul, _, _, _)));
        assert_eq!(**w, Expr::Name(None, "weight".into(), 44));
    }

    #[test]
    fn statements_comparisons_and_fields() {
        let p = parse("a = 1; b = head.len <= 2 ; if(a == b, 3, 4);").unwrap();
        assert_eq!(p.len(), 3);
        assert!(matches!(p[1].value, Expr::Bin(BinOp::Le, _, _, _)));
        assert!(matches!(p[2].value, Expr::Call(ref n, _, _) if n == "if"));
    }

    #[test]
    fn syntax_errors_point_at_the_fault() {
        let e = parse("len +").unwrap_err();
        assert_eq!(e.offset, 5, "{e:?}");
        let e = parse("max(len, )").unwrap_err();
        assert_eq!(e.offset, 9, "{e:?}");
        let e = parse("len len").unwrap_err();
        assert_eq!(e.offset, 4, "{e:?}");
        assert!(parse("99999999999999999999").is_err());
        assert!(parse("").is_err());
    }
}
