//! Errors that name the file, the line, the column and the key.
//!
//! serde's errors from the `toml` crate carry a byte span but no key; our own
//! checks know the key but not always its position. A [`KeyIndex`], built from the
//! same text with `toml_edit`, maps both ways between byte offsets and dotted key
//! paths (`node[2].limit`, `classify.rule[0].leaf`; arrays are indexed from 0), so
//! every error reads `FILE:LINE:COL: key `PATH`: message`.

use std::ops::Range;

/// A policy or workload file that cannot be used.
#[derive(Clone, Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The file name.
        file: String,
        /// Why (shared, so that the error stays `Clone`).
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    /// A mistake in the file.
    #[error("{file}:{line}:{column}: key `{key}`: {message}")]
    Invalid {
        /// The file name.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// Dotted path of the key the mistake is in.
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// The name and text of the file at `path`.
pub(crate) fn read(path: &std::path::Path) -> Result<(String, String), PolicyError> {
    let name = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((name, text)),
        Err(e) => Err(PolicyError::Io {
            file: name,
            source: std::sync::Arc::new(e),
        }),
    }
}

impl PolicyError {
    /// The key named by the error, if it points into the file.
    #[must_use]
    pub fn key(&self) -> Option<&str> {
        match self {
            PolicyError::Invalid { key, .. } => Some(key),
            PolicyError::Io { .. } => None,
        }
    }

    /// The 1-based line of the error, if it points into the file.
    #[must_use]
    pub fn line(&self) -> Option<usize> {
        match self {
            PolicyError::Invalid { line, .. } => Some(*line),
            PolicyError::Io { .. } => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    /// Where the dotted path is in [`Keys::paths`].
    path: Range<usize>,
    /// One past the last entry under this key (entries are in document
    /// order, each followed by the keys under it).
    end: u32,
    key: Range<usize>,
    value: Range<usize>,
}

/// Byte offsets to key paths and back, for one file's text: how every file
/// format built on TOML (policies, workloads, network scenarios) reports
/// `FILE:LINE:COL: key `PATH`: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyIndex {
    file: String,
    text: String,
    /// The keys, indexed when first needed (most files are read without a
    /// lookup by key: errors point at spans the deserializer kept).
    keys: std::sync::OnceLock<Keys>,
    /// Byte offset of the start of each line: a position's line is a binary
    /// search away.
    line_starts: Vec<usize>,
}

/// Every key of a file, with its spans.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Keys {
    /// Every key's path, one after the other: one allocation for a file of any
    /// size rather than one a key.
    paths: String,
    entries: Vec<Entry>,
    /// Each entry's path hash and index, ordered by hash: a key is a binary
    /// search away in files of any size (sorting integers rather than 400,000
    /// paths that share long prefixes).
    by_hash: Vec<(u64, u32)>,
}

/// A path's hash: eight bytes at a time, rotate, xor and multiply (the
/// same in every run; equal hashes are told apart by comparing the paths).
fn hash_path(path: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = path.len() as u64;
    let mut chunks = path.as_bytes().chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("eight bytes"));
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(K)
}

impl Keys {
    /// The keys of `text`, none if it is not TOML.
    fn of(text: &str) -> Keys {
        toml_edit::ImDocument::parse(text)
            .map_or_else(|_| Keys::default(), |d| Keys::from_document(&d))
    }

    fn from_document<S>(doc: &toml_edit::ImDocument<S>) -> Keys {
        let mut keys = Keys::default();
        walk_table(doc.as_table(), &mut String::new(), &mut keys);
        let mut by_hash: Vec<(u64, u32)> = (0..keys.entries.len() as u32)
            .map(|i| (hash_path(keys.path(i)), i))
            .collect();
        by_hash.sort_unstable();
        keys.by_hash = by_hash;
        keys
    }

    /// The path of entry `i`.
    fn path(&self, i: u32) -> &str {
        self.path_of(&self.entries[i as usize])
    }

    fn path_of(&self, e: &Entry) -> &str {
        &self.paths[e.path.clone()]
    }

    /// Adds the key at `path`, then the keys under it (`under`).
    fn push(
        &mut self,
        path: &mut String,
        key: Range<usize>,
        value: Range<usize>,
        under: impl FnOnce(&mut String, &mut Keys),
    ) {
        let start = self.paths.len();
        self.paths.push_str(path);
        let i = self.entries.len();
        self.entries.push(Entry {
            path: start..self.paths.len(),
            end: 0,
            key,
            value,
        });
        under(path, self);
        self.entries[i].end = self.entries.len() as u32;
    }

    /// The index of the entry at `path`.
    fn find(&self, path: &str) -> Option<usize> {
        let h = hash_path(path);
        let first = self.by_hash.partition_point(|&(x, _)| x < h);
        self.by_hash[first..]
            .iter()
            .take_while(|&&(x, _)| x == h)
            .map(|&(_, i)| i as usize)
            .find(|&i| self.path_of(&self.entries[i]) == path)
    }

    fn get(&self, path: &str) -> Option<&Entry> {
        self.find(path).map(|i| &self.entries[i])
    }
}

/// Runs `f` with `key` appended to `path` (after a dot unless `path` is
/// empty), then puts `path` back.
fn with_key(path: &mut String, key: &str, f: impl FnOnce(&mut String)) {
    let len = path.len();
    if len > 0 {
        path.push('.');
    }
    path.push_str(key);
    f(path);
    path.truncate(len);
}

/// Runs `f` with `[i]` appended to `path`, then puts `path` back.
fn with_index(path: &mut String, i: usize, f: impl FnOnce(&mut String)) {
    use std::fmt::Write;
    let len = path.len();
    let _ = write!(path, "[{i}]");
    f(path);
    path.truncate(len);
}

impl KeyIndex {
    /// `v` if it lies in `lo..=hi`; otherwise an error at `v` naming `key` (and
    /// `what` the value is, when given).
    pub fn int_in(
        &self,
        v: &toml::Spanned<i64>,
        key: &str,
        lo: i64,
        hi: i64,
        what: Option<&str>,
    ) -> Result<i64, PolicyError> {
        let x = *v.get_ref();
        if x < lo || x > hi {
            let what = what.map_or(String::new(), |w| format!("{w} "));
            return Err(self.error(
                v.span().start,
                key,
                format!("{what}must be in {lo}..={hi}, got {x}"),
            ));
        }
        Ok(x)
    }

    /// Indexes `text` (already known to be valid TOML) of file `file`.
    pub fn new(file: &str, text: &str) -> KeyIndex {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        KeyIndex {
            file: file.to_string(),
            text: text.to_string(),
            keys: std::sync::OnceLock::new(),
            line_starts,
        }
    }

    /// Parses `text` of file `file` once: `T` deserialized from the document,
    /// and the index of the document's keys. A syntax or type mistake is an
    /// error at its line, naming the key found there.
    ///
    /// # Errors
    /// The text is not TOML, or does not deserialize into `T`.
    pub fn parse<T: serde::de::DeserializeOwned>(
        file: &str,
        text: &str,
    ) -> Result<(KeyIndex, T), PolicyError> {
        KeyIndex::parse_bounded(file, text, |_, _| Ok(()))
    }

    /// [`KeyIndex::parse`], with `bounds` checked on the parsed document first:
    /// a file-wide bound (how many rules a file may hold, say) refuses a huge
    /// file before its keys are indexed or deserialized one by one.
    ///
    /// # Errors
    /// The text is not TOML, `bounds` refuses it, or it does not deserialize
    /// into `T`.
    pub(crate) fn parse_bounded<T: serde::de::DeserializeOwned>(
        file: &str,
        text: &str,
        bounds: impl FnOnce(&KeyIndex, &toml_edit::Table) -> Result<(), PolicyError>,
    ) -> Result<(KeyIndex, T), PolicyError> {
        let index = KeyIndex::new(file, text);
        let doc = match toml_edit::ImDocument::parse(text.to_owned()) {
            Ok(doc) => doc,
            Err(e) => {
                // Not TOML: no keys to index (the error names the key written
                // on its line), and no second parse to find that out.
                let _ = index.keys.set(Keys::default());
                return Err(index.de_error(&e.into()));
            }
        };
        bounds(&index, doc.as_table())?;
        let _ = index.keys.set(Keys::from_document(&doc));
        let value = toml_edit::de::from_document(doc).map_err(|e| index.de_error(&e))?;
        Ok((index, value))
    }

    fn keys(&self) -> &Keys {
        self.keys.get_or_init(|| Keys::of(&self.text))
    }

    /// The innermost key whose name or value contains byte `offset`.
    fn path_at(&self, offset: usize) -> Option<&str> {
        let keys = self.keys();
        let e = keys
            .entries
            .iter()
            .filter(|e| e.key.contains(&offset) || e.value.contains(&offset))
            .min_by_key(|e| {
                let span = e.value.end.max(e.key.end) - e.value.start.min(e.key.start);
                (span, usize::MAX - e.path.len())
            })?;
        Some(keys.path_of(e))
    }

    /// The span of `path`'s value (or of the key when the value has none).
    pub fn span_of(&self, path: &str) -> Option<Range<usize>> {
        self.keys().get(path).map(|e| {
            if e.value.is_empty() {
                e.key.clone()
            } else {
                e.value.clone()
            }
        })
    }

    /// 1-based line and column of byte `offset`.
    fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset);
        let start = self.line_starts[line - 1];
        let column = self
            .text
            .get(start..offset)
            .map_or(1, |l| l.chars().count() + 1);
        (line, column)
    }

    /// The indexed text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// 1-based line of byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_col(offset).0
    }

    /// The source text of `path`'s value.
    pub(crate) fn source_of(&self, path: &str) -> Option<&str> {
        self.span_of(path).and_then(|s| self.text.get(s))
    }

    /// Paths of the keys directly under `prefix` (`prefix.k`), in file order.
    pub(crate) fn children_of(&self, prefix: &str) -> Vec<&str> {
        let start = format!("{prefix}.");
        let keys = self.keys();
        let Some(parent) = keys.find(prefix) else {
            return Vec::new();
        };
        // The keys right under `prefix`: from its first child, hop over each
        // child's own keys.
        let end = keys.entries[parent].end as usize;
        let mut under = Vec::new();
        let mut i = parent + 1;
        while i < end {
            under.push(i);
            i = keys.entries[i].end as usize;
        }
        let mut v: Vec<(usize, &str)> = under
            .into_iter()
            .map(|i| (keys.entries[i].key.start, keys.path(i as u32)))
            .filter(|(_, p)| p.starts_with(&start) && !p[start.len()..].contains(['.', '[']))
            .collect();
        v.sort_by_key(|&(at, _)| at);
        v.into_iter().map(|(_, p)| p).collect()
    }

    /// An error at `path` (pointing at its value), or at the file's start if the
    /// key is absent.
    pub fn at_key(&self, path: &str, message: impl Into<String>) -> PolicyError {
        let offset = self.span_of(path).map_or(0, |s| s.start);
        self.error(offset, path, message)
    }

    /// An error at byte `offset`, naming `key`.
    pub fn error(&self, offset: usize, key: &str, message: impl Into<String>) -> PolicyError {
        let (line, column) = self.line_col(offset);
        PolicyError::Invalid {
            file: self.file.clone(),
            line,
            column,
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// An error at byte `offset`, naming the key found there.
    pub(crate) fn error_at(&self, offset: usize, message: impl Into<String>) -> PolicyError {
        let key = self
            .path_at(offset)
            .map_or_else(|| self.key_on_line(offset), str::to_string);
        self.error(offset, &key, message)
    }

    /// For text that does not parse (no index): the key written on `offset`'s
    /// line, under the last table header above it.
    fn key_on_line(&self, offset: usize) -> String {
        let offset = offset.min(self.text.len());
        let start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line = self.text[start..].lines().next().unwrap_or("");
        let table = self.text[..start]
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('['))
            .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
        let key = line
            .split_once('=')
            .map(|(k, _)| k.trim().trim_matches('"').to_string())
            .filter(|k| !k.is_empty() && !k.starts_with('['));
        match (table, key) {
            (Some(t), Some(k)) => format!("{t}.{k}"),
            (None, Some(k)) => k,
            (Some(t), None) => t,
            (None, None) => "(top level)".to_string(),
        }
    }

    /// A deserialization or syntax error from `toml_edit`.
    fn de_error(&self, e: &toml_edit::de::Error) -> PolicyError {
        let offset = e.span().map_or(0, |s| s.start);
        self.error_at(offset, e.message().trim().to_string())
    }

    /// A deserialization or syntax error from the `toml` crate.
    pub fn toml_error(&self, e: &toml::de::Error) -> PolicyError {
        let offset = e.span().map_or(0, |s| s.start);
        let message = e.message().trim().to_string();
        self.error_at(offset, message)
    }
}

fn walk_table(table: &toml_edit::Table, path: &mut String, out: &mut Keys) {
    for (k, _) in table.iter() {
        if let Some((key, item)) = table.get_key_value(k) {
            with_key(path, k, |p| walk_item(key.span(), item, p, out));
        }
    }
}

fn walk_item(key: Option<Range<usize>>, item: &toml_edit::Item, path: &mut String, out: &mut Keys) {
    let key = key.unwrap_or(0..0);
    match item {
        toml_edit::Item::None => {}
        toml_edit::Item::Value(v) => walk_value(key, v, path, out),
        toml_edit::Item::Table(t) => {
            let value = t.span().unwrap_or(key.clone());
            out.push(path, key, value, |p, out| walk_table(t, p, out));
        }
        toml_edit::Item::ArrayOfTables(a) => {
            for (i, t) in a.iter().enumerate() {
                with_index(path, i, |p| {
                    let value = t.span().unwrap_or(0..0);
                    out.push(p, 0..0, value, |p, out| walk_table(t, p, out));
                });
            }
        }
    }
}

fn walk_value(key: Range<usize>, v: &toml_edit::Value, path: &mut String, out: &mut Keys) {
    out.push(path, key, v.span().unwrap_or(0..0), |path, out| match v {
        toml_edit::Value::InlineTable(t) => {
            for (k, _) in t.iter() {
                if let Some((key, item)) = t.get_key_value(k) {
                    with_key(path, k, |p| walk_item(key.span(), item, p, out));
                }
            }
        }
        toml_edit::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                with_index(path, i, |p| walk_value(0..0, v, p, out));
            }
        }
        _ => {}
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"top = 1
[[node]]
name = "a"
[[node]]
name = "b"
limit = "1Mbit"
state = { x = 1, y = [2, 3] }
[classify]
default = "a"
[[classify.rule]]
leaf = "b"
dscp = [1, 2]
class = 7
"#;

    fn index() -> KeyIndex {
        KeyIndex::parse::<toml::Table>("t.toml", TEXT).unwrap().0
    }

    #[test]
    fn keys_are_found_by_path() {
        let ix = index();
        assert_eq!(ix.source_of("node[1].limit"), Some("\"1Mbit\""));
        assert_eq!(ix.source_of("node[1].state.y[1]"), Some("3"));
        assert_eq!(ix.source_of("classify.rule[0].class"), Some("7"));
        assert_eq!(ix.source_of("node[2].name"), None);
        assert_eq!(ix.source_of("node[1].state.z"), None);
    }

    #[test]
    fn children_are_the_keys_right_under_a_prefix_in_file_order() {
        let ix = index();
        assert_eq!(
            ix.children_of("classify.rule[0]"),
            [
                "classify.rule[0].leaf",
                "classify.rule[0].dscp",
                "classify.rule[0].class"
            ]
        );
        assert_eq!(
            ix.children_of("node[1].state"),
            ["node[1].state.x", "node[1].state.y"]
        );
        assert!(ix.children_of("node[1].state.y").is_empty());
        assert!(ix.children_of("nothing").is_empty());
    }

    #[test]
    fn an_error_names_the_innermost_key_at_its_offset() {
        let ix = index();
        let at = TEXT.find("x = 1").unwrap() + 4;
        let e = ix.error_at(at, "bad");
        assert_eq!(e.key(), Some("node[1].state.x"), "{e}");
        assert_eq!(e.line(), Some(7));
        let e = ix.error_at(TEXT.find("Mbit").unwrap(), "bad");
        assert_eq!(e.key(), Some("node[1].limit"), "{e}");
        let e = ix.error_at(TEXT.find("dscp").unwrap(), "bad");
        assert_eq!(e.key(), Some("classify.rule[0].dscp"), "{e}");
    }
}
