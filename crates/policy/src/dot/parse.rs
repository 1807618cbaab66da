//! The DOT language (Graphviz), as much of it as a policy tree needs, parsed
//! with `winnow` into statements whose identifiers carry their byte offsets.
//!
//! ```text
//! graph     = [ "strict" ] ( "digraph" | "graph" ) [ ID ] "{" stmts "}"
//! stmts     = { stmt [ ";" ] }
//! stmt      = ( "graph" | "node" | "edge" ) attrs      (attribute statement)
//!           | ID "=" ID                                  (graph attribute)
//!           | end { ( "->" | "--" ) end } [ attrs ]      (node or edges)
//! end       = ID [ ":" ID ] | subgraph
//! subgraph  = [ "subgraph" [ ID ] ] "{" stmts "}"
//! attrs     = "[" [ ID "=" ID { ( "," | ";" ) ID "=" ID } [ "," | ";" ] ] "]" { ... }
//! ID        = name | numeral | "quoted string" | <html string>
//! ```
//!
//! Keywords are case-insensitive; comments are `//` and `/* */`, and lines
//! starting with `#`. Ports (`a:p`) and HTML strings are parsed so that their
//! errors can name them, and refused when the graph is lowered.

use winnow::combinator::{alt, cut_err, opt, preceded, repeat};
use winnow::error::{AddContext, ContextError, ErrMode, StrContext, StrContextValue};
use winnow::prelude::*;
use winnow::stream::{LocatingSlice, Location, Stream};
use winnow::token::{any, one_of, take_until, take_while};

type In<'a> = LocatingSlice<&'a str>;

/// How an identifier was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdKind {
    /// Letters, digits and `_`, not starting with a digit.
    Name,
    /// A number: `-`, digits, one `.`.
    Numeral,
    /// A double-quoted string (escapes resolved).
    Quoted,
    /// An HTML string `<...>`.
    Html,
}

/// An identifier: its text, how it was written, and where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Id {
    pub text: String,
    pub kind: IdKind,
    pub at: usize,
    /// Whether a quoted string's text is exactly its source between the quotes
    /// (no escapes), so that an offset into the text is an offset into the file.
    pub verbatim: bool,
}

/// `key = value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Attr {
    pub key: Id,
    pub value: Id,
}

/// One end of an edge: a node (with a port, if written) or a subgraph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum End {
    Node { id: Id, port: Option<Id> },
    Subgraph { stmts: Vec<Stmt>, at: usize },
}

/// A statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stmt {
    /// `graph [..]`, `node [..]` or `edge [..]`: the keyword and the attributes.
    Defaults { kind: Id, attrs: Vec<Attr> },
    /// `ID = ID` among the statements.
    Assign(Attr),
    /// A chain of ends joined by edge operators (one end: a node statement or a
    /// subgraph), with the attributes after it. `ops` are the operators'
    /// offsets and whether each is directed (`->`).
    Chain {
        ends: Vec<End>,
        ops: Vec<(usize, bool)>,
        attrs: Vec<Attr>,
    },
}

/// A whole graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Graph {
    /// Offset of `graph` or `digraph`.
    pub at: usize,
    pub directed: bool,
    pub stmts: Vec<Stmt>,
}

/// A syntax error at a byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

/// Deepest nesting of subgraphs and attribute lists: the parser recurses once
/// per level.
pub(crate) const MAX_NESTING: usize = 32;

fn expected(what: &'static str) -> StrContext {
    StrContext::Expected(StrContextValue::Description(what))
}

fn fail(i: &mut In<'_>, what: &'static str) -> ErrMode<ContextError> {
    ErrMode::Cut(ContextError::new().add_context(i, &i.checkpoint(), expected(what)))
}

/// Whitespace and comments (`#` lines included: `#` appears nowhere else
/// outside strings).
fn ws(i: &mut In<'_>) -> ModalResult<()> {
    loop {
        let _ = take_while(0.., char::is_whitespace).parse_next(i)?;
        if opt(alt(("//".void(), '#'.void()))).parse_next(i)?.is_some() {
            let _ = take_while(0.., |c| c != '\n').parse_next(i)?;
        } else if opt("/*").parse_next(i)?.is_some() {
            let _ = cut_err((take_until(0.., "*/"), "*/"))
                .context(expected("`*/` closing the comment"))
                .parse_next(i)?;
        } else {
            return Ok(());
        }
    }
}

fn name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || (!c.is_ascii() && !c.is_whitespace())
}

fn name(i: &mut In<'_>) -> ModalResult<Id> {
    let at = i.current_token_start();
    let first =
        one_of(|c: char| (c.is_alphabetic() || c == '_' || !c.is_ascii()) && !c.is_whitespace());
    let s = (first, take_while(0.., name_char)).take().parse_next(i)?;
    Ok(Id {
        text: s.to_string(),
        kind: IdKind::Name,
        at,
        verbatim: true,
    })
}

fn numeral(i: &mut In<'_>) -> ModalResult<Id> {
    let at = i.current_token_start();
    let digits = |i: &mut In<'_>| {
        take_while(1.., |c: char| c.is_ascii_digit())
            .void()
            .parse_next(i)
    };
    let s = (
        opt('-'),
        alt((
            ('.', digits).void(),
            (digits, opt(('.', opt(digits)))).void(),
        )),
    )
        .take()
        .parse_next(i)?;
    if i.peek_token()
        .is_some_and(|c: char| c.is_alphabetic() || c == '_')
    {
        return Err(fail(
            i,
            "a separator after the number: quote a value with units, such as \"10Mbit\"",
        ));
    }
    Ok(Id {
        text: s.to_string(),
        kind: IdKind::Numeral,
        at,
        verbatim: true,
    })
}

fn quoted(i: &mut In<'_>) -> ModalResult<Id> {
    let at = i.current_token_start();
    '"'.parse_next(i)?;
    let mut text = String::new();
    let mut verbatim = true;
    loop {
        let Some(c) = opt(any).parse_next(i)? else {
            return Err(fail(i, "`\"` closing the string"));
        };
        match c {
            '"' => break,
            '\\' => match opt(any).parse_next(i)? {
                Some('"') => {
                    text.push('"');
                    verbatim = false;
                }
                Some('\n') => verbatim = false,
                Some(other) => {
                    text.push('\\');
                    text.push(other);
                }
                None => return Err(fail(i, "`\"` closing the string")),
            },
            c => text.push(c),
        }
    }
    Ok(Id {
        text,
        kind: IdKind::Quoted,
        at,
        verbatim,
    })
}

fn html(i: &mut In<'_>) -> ModalResult<Id> {
    let at = i.current_token_start();
    '<'.parse_next(i)?;
    let mut depth = 1usize;
    let mut text = String::new();
    while depth > 0 {
        let Some(c) = opt(any).parse_next(i)? else {
            return Err(fail(i, "`>` closing the HTML string"));
        };
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            _ => {}
        }
        if depth > 0 {
            text.push(c);
        }
    }
    Ok(Id {
        text,
        kind: IdKind::Html,
        at,
        verbatim: false,
    })
}

fn id(i: &mut In<'_>) -> ModalResult<Id> {
    alt((quoted, numeral, html, name)).parse_next(i)
}

fn keyword(id: &Id, kw: &str) -> bool {
    id.kind == IdKind::Name && id.text.eq_ignore_ascii_case(kw)
}

fn attr(i: &mut In<'_>) -> ModalResult<Attr> {
    let key = id.parse_next(i)?;
    ws.parse_next(i)?;
    cut_err('=')
        .context(expected("`=` after the attribute's name"))
        .parse_next(i)?;
    ws.parse_next(i)?;
    let value = cut_err(id)
        .context(expected("the attribute's value"))
        .parse_next(i)?;
    Ok(Attr { key, value })
}

/// `[..]` lists, one or more.
fn attr_lists(i: &mut In<'_>) -> ModalResult<Vec<Attr>> {
    let mut attrs = Vec::new();
    while opt(preceded(ws, '[')).parse_next(i)?.is_some() {
        loop {
            ws.parse_next(i)?;
            if opt(']').parse_next(i)?.is_some() {
                break;
            }
            attrs.push(
                cut_err(attr)
                    .context(expected("`key = value` or `]`"))
                    .parse_next(i)?,
            );
            ws.parse_next(i)?;
            let _ = opt(one_of([',', ';'])).parse_next(i)?;
        }
    }
    Ok(attrs)
}

fn block(i: &mut In<'_>) -> ModalResult<Vec<Stmt>> {
    let stmts = stmts.parse_next(i)?;
    ws.parse_next(i)?;
    cut_err('}')
        .context(expected("a statement or `}`"))
        .parse_next(i)?;
    Ok(stmts)
}

fn subgraph(i: &mut In<'_>, head: Option<Id>) -> ModalResult<End> {
    let at = head
        .as_ref()
        .map_or_else(|| i.current_token_start(), |h| h.at);
    if head.is_some() {
        ws.parse_next(i)?;
        let _name = opt(id).parse_next(i)?;
        ws.parse_next(i)?;
    }
    cut_err('{')
        .context(expected("`{` opening the subgraph"))
        .parse_next(i)?;
    let stmts = block.parse_next(i)?;
    Ok(End::Subgraph { stmts, at })
}

/// An edge end: a subgraph, or a node with an optional port.
fn end(i: &mut In<'_>) -> ModalResult<End> {
    ws.parse_next(i)?;
    if i.peek_token() == Some('{') {
        return subgraph(i, None);
    }
    let first = id.parse_next(i)?;
    if keyword(&first, "subgraph") {
        return subgraph(i, Some(first));
    }
    ws.parse_next(i)?;
    let port = if opt(':').parse_next(i)?.is_some() {
        ws.parse_next(i)?;
        Some(
            cut_err(id)
                .context(expected("a port after `:`"))
                .parse_next(i)?,
        )
    } else {
        None
    };
    Ok(End::Node { id: first, port })
}

fn edge_op(i: &mut In<'_>) -> ModalResult<(usize, bool)> {
    ws.parse_next(i)?;
    let at = i.current_token_start();
    alt(("->".value((at, true)), "--".value((at, false)))).parse_next(i)
}

fn stmt(i: &mut In<'_>) -> ModalResult<Stmt> {
    ws.parse_next(i)?;
    let save = i.checkpoint();
    if let Some(first) = opt(id).parse_next(i)? {
        let is_defaults = ["graph", "node", "edge"].iter().any(|k| keyword(&first, k));
        ws.parse_next(i)?;
        if is_defaults && i.peek_token() == Some('[') {
            let attrs = attr_lists.parse_next(i)?;
            return Ok(Stmt::Defaults { kind: first, attrs });
        }
        if opt('=').parse_next(i)?.is_some() {
            ws.parse_next(i)?;
            let value = cut_err(id)
                .context(expected("the attribute's value"))
                .parse_next(i)?;
            return Ok(Stmt::Assign(Attr { key: first, value }));
        }
        i.reset(&save);
    }
    let first = end.parse_next(i)?;
    let rest: Vec<((usize, bool), End)> = repeat(
        0..,
        (
            edge_op,
            cut_err(end).context(expected("a node or subgraph after the edge")),
        ),
    )
    .parse_next(i)?;
    let attrs = attr_lists.parse_next(i)?;
    let mut ends = vec![first];
    let mut ops = Vec::new();
    for (op, e) in rest {
        ops.push(op);
        ends.push(e);
    }
    Ok(Stmt::Chain { ends, ops, attrs })
}

fn stmts(i: &mut In<'_>) -> ModalResult<Vec<Stmt>> {
    let mut out = Vec::new();
    loop {
        ws.parse_next(i)?;
        if i.peek_token().is_none_or(|c| c == '}') {
            return Ok(out);
        }
        out.push(
            cut_err(stmt)
                .context(expected("a statement or `}`"))
                .parse_next(i)?,
        );
        ws.parse_next(i)?;
        let _ = opt(';').parse_next(i)?;
    }
}

fn graph(i: &mut In<'_>) -> ModalResult<Graph> {
    ws.parse_next(i)?;
    let start = i.checkpoint();
    let mut head = cut_err(name).context(expected("`digraph`")).parse_next(i)?;
    if keyword(&head, "strict") {
        ws.parse_next(i)?;
        head = cut_err(name)
            .context(expected("`digraph` after `strict`"))
            .parse_next(i)?;
    }
    let directed = keyword(&head, "digraph");
    if !directed && !keyword(&head, "graph") {
        i.reset(&start);
        return Err(fail(i, "`digraph` (or `graph`) to start the file"));
    }
    ws.parse_next(i)?;
    if i.peek_token() != Some('{') {
        let _ = cut_err(id)
            .context(expected("the graph's name or `{`"))
            .parse_next(i)?;
        ws.parse_next(i)?;
    }
    cut_err('{').context(expected("`{`")).parse_next(i)?;
    let stmts = block.parse_next(i)?;
    ws.parse_next(i)?;
    if i.peek_token().is_some() {
        return Err(fail(i, "the end of the file after the graph's `}`"));
    }
    Ok(Graph {
        at: head.at,
        directed,
        stmts,
    })
}

/// Refuses text nested deeper than [`MAX_NESTING`] before the parser recurses
/// (quoted strings and comments are not counted, which only over-counts).
fn check_nesting(text: &str) -> Result<(), SyntaxError> {
    let mut depth = 0usize;
    for (offset, c) in text.char_indices() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_NESTING {
            return Err(SyntaxError {
                offset,
                message: format!("subgraphs and attribute lists nest at most {MAX_NESTING} deep"),
            });
        }
    }
    Ok(())
}

/// Parses a whole DOT file.
pub(crate) fn parse(text: &str) -> Result<Graph, SyntaxError> {
    check_nesting(text)?;
    graph.parse(LocatingSlice::new(text)).map_err(|e| {
        let message = e.inner().to_string();
        SyntaxError {
            offset: e.offset(),
            message: if message.is_empty() {
                "unexpected text".to_string()
            } else {
                message
            },
        }
    })
}
