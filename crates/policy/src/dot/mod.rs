//! Policies written in DOT, the graph language of Graphviz that the PIFO model's
//! and Eiffel's compilers read their policies from (Eiffel, NSDI'19, section 4):
//! a `digraph` whose edges go from a node to its children.
//!
//! ```dot
//! digraph policy {
//!     capacity = 20000                       // tree-wide settings
//!     root   [discipline = wfq, limit = "50Mbit"]
//!     video  [weight = 3, limit = "7Mbit", rule = "class=2"]
//!     bulk   [weight = 1]
//!     root -> { video bulk }
//! }
//! ```
//!
//! The file is parsed with `winnow` (`dot/parse.rs`) and lowered (`dot/lower.rs`) to the
//! policy file it means, which the TOML compiler then checks and compiles: one
//! language of keys for both inputs, and the same tree. Every error is reported
//! at the place in the DOT file the key came from, as
//! `FILE:LINE:COL: key `NODE.KEY`: message`.

mod lower;
mod parse;

use crate::error::{KeyIndex, PolicyError};

/// Where one key of the lowered policy file came from in the DOT text.
#[derive(Clone, Debug)]
pub(crate) struct Origin {
    /// The key's path in the lowered file (`node[2].weight`).
    path: String,
    /// Byte offset of the value in the DOT text.
    at: usize,
    /// A quoted value written without escapes: the offset of its first
    /// character and its length, to point inside it (rank expressions).
    text_at: Option<(usize, usize)>,
    /// The key as the DOT file names it (`video.weight`).
    label: String,
}

/// Every key of the lowered file and where it came from.
#[derive(Clone, Debug)]
pub(crate) struct SourceMap {
    origins: Vec<Origin>,
    /// Offset of `digraph`, for errors about the graph as a whole.
    graph_at: usize,
}

/// A DOT policy: its text's index (for lines and columns), the policy file it
/// means, and the map between them.
#[derive(Clone, Debug)]
pub(crate) struct DotSource {
    dot: KeyIndex,
    map: SourceMap,
}

/// Lowers DOT `text` of file `file` to policy-file text.
pub(crate) fn to_toml(text: &str, file: &str) -> Result<(String, DotSource), PolicyError> {
    let dot = KeyIndex::new(file, text);
    let graph = parse::parse(text).map_err(|e| dot.error(e.offset, "graph", e.message))?;
    let (doc, map) =
        lower::lower(&graph, text).map_err(|e| dot.error(e.offset, &e.key, e.message))?;
    Ok((doc.to_string(), DotSource { dot, map }))
}

/// Byte offset of 1-based `line` and `column` (in characters) of `text`.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let rest = text.get(start..).unwrap_or("");
    start
        + rest
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(rest.len(), |(i, _)| i)
}

impl DotSource {
    /// The origin of `key`: itself, or the longest recorded key it lies under.
    fn origin(&self, key: &str) -> Option<&Origin> {
        self.map
            .origins
            .iter()
            .filter(|o| {
                key == o.path
                    || (key.starts_with(&o.path) && key[o.path.len()..].starts_with(['.', '[']))
            })
            .max_by_key(|o| o.path.len())
    }

    /// `e`, an error in the lowered file indexed by `toml`, at the place in the
    /// DOT file its key came from.
    pub(crate) fn translate(&self, e: PolicyError, toml: &KeyIndex) -> PolicyError {
        let PolicyError::Invalid {
            line,
            column,
            key,
            message,
            ..
        } = e
        else {
            return e;
        };
        let Some(o) = self.origin(&key) else {
            return self.dot.error(self.map.graph_at, &key, message);
        };
        let label = format!("{}{}", o.label, &key[o.path.len()..]);
        let mut at = o.at;
        if let (Some((text_at, len)), Some(span)) = (o.text_at, toml.span_of(&o.path)) {
            // A value the lowered file wrote as it was (quotes and text alone):
            // the error's offset inside it is the same inside the DOT string.
            let offset = offset_of(toml.text(), line, column);
            let delta = offset.wrapping_sub(span.start + 1);
            if span.len() == len + 2 && delta <= len {
                at = text_at + delta;
            }
        }
        self.dot.error(at, &label, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_lowers_to_nodes_parents_and_rules() {
        let text = "digraph p {\n  capacity = 100\n  root [discipline = wfq]\n  a [weight = 2, rule = \"class=1 | flow=0-9\"]\n  root -> { a b }\n}\n";
        let (toml, _) = to_toml(text, "p.dot").unwrap();
        let doc: toml::Table = toml::from_str(&toml).unwrap();
        assert_eq!(doc["capacity"].as_integer(), Some(100));
        let nodes = doc["node"].as_array().unwrap();
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[1]["parent"].as_str(), Some("root"));
        assert_eq!(nodes[1]["weight"].as_integer(), Some(2));
        assert_eq!(nodes[2]["name"].as_str(), Some("b"));
        let rules = doc["classify"]["rule"].as_array().unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0]["class"].as_integer(), Some(1));
        assert_eq!(rules[1]["flow"].as_str(), Some("0-9"));
    }

    #[test]
    fn offsets_are_found_by_line_and_column() {
        let t = "ab\ncdé\nf";
        assert_eq!(offset_of(t, 1, 1), 0);
        assert_eq!(offset_of(t, 2, 3), 5);
        assert_eq!(offset_of(t, 3, 1), 8);
    }
}
