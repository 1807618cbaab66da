//! Output helpers shared by every subcommand: aligned text tables and the JSON
//! envelope `{"results": [...]}` used by `eiffel bench ... --json`.

use serde::Serialize;
use std::fmt::Write as _;

/// An aligned text table built row by row.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with the given column headers.
    pub fn new<I, S>(header: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; missing trailing cells print empty.
    pub fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Renders the table: the first column left-aligned, the others right-aligned.
    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut width: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String]| {
            for (i, w) in width.iter().enumerate() {
                let cell = cells.get(i).map_or("", String::as_str);
                if i == 0 {
                    let _ = write!(out, "{cell:<w$}");
                } else {
                    let _ = write!(out, "  {cell:>w$}");
                }
            }
            out.truncate(out.trim_end().len());
            out.push('\n');
        };
        line(&mut out, &self.header);
        let total: usize = width.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
        out.push_str(&"-".repeat(total));
        out.push('\n');
        for row in &self.rows {
            line(&mut out, row);
        }
        out
    }
}

/// Prints `{"results": records}` as pretty JSON on stdout.
///
/// # Errors
/// The records do not serialise, or standard output is closed.
pub fn print_results<T: Serialize>(records: &[T]) -> Result<(), Box<dyn std::error::Error>> {
    #[derive(Serialize)]
    struct Envelope<'a, T> {
        results: &'a [T],
    }
    crate::outln!(
        "{}",
        serde_json::to_string_pretty(&Envelope { results: records })?
    );
    Ok(())
}

/// Formats a float with `digits` decimals.
pub fn fmt_f(value: f64, digits: usize) -> String {
    format!("{value:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let mut t = Table::new(["queue", "mpps"]);
        t.row(["cffs", "123.4"]);
        t.row(["binary_heap", "9.1"]);
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "queue         mpps");
        assert_eq!(lines[2], "cffs         123.4");
        assert_eq!(lines[3], "binary_heap    9.1");
    }
}
