//! rocprofv3's CSV files, read by header name (columns moved between releases) and tolerant of
//! a file cut short: every complete row before the damage is kept and the damage becomes a
//! warning, never an error that loses what was readable.

use std::collections::HashMap;

use crate::model::number::{self, BadNumbers};
use crate::profilers::{Diagnostic, Severity};

/// One CSV file: its header, the complete rows, and what was wrong with the rest.
#[derive(Debug, Default)]
pub struct Table {
    columns: HashMap<String, usize>,
    pub rows: Vec<csv::StringRecord>,
    pub warnings: Vec<Diagnostic>,
}

/// Kind of the diagnostic for a file whose end is missing or damaged.
pub const TRUNCATED: &str = "truncated_output";

impl Table {
    /// Read `bytes` (the file `name`). An empty file gives an empty table and a warning.
    pub fn read(name: &str, bytes: &[u8]) -> Table {
        let mut table = Table::default();
        if bytes.iter().all(u8::is_ascii_whitespace) {
            table.warn(TRUNCATED, format!("`{name}` is empty"), HINT_EMPTY);
            return table;
        }
        // The csv reader closes a quote left open at the end of input, so a row cut inside a
        // quoted name would pass as whole: an odd number of quotes after the last newline
        // marks that row as cut before the reader sees it.
        let tail_start = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let open_tail = bytes[tail_start..].iter().filter(|b| **b == b'"').count() % 2 == 1;
        let readable = if open_tail && tail_start > 0 {
            &bytes[..tail_start]
        } else {
            bytes
        };
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_reader(readable);
        match reader.headers() {
            Ok(header) => {
                table.columns = header
                    .iter()
                    .enumerate()
                    .map(|(index, name)| (name.trim().to_string(), index))
                    .collect();
            }
            Err(e) => {
                table.warn(
                    TRUNCATED,
                    format!("`{name}`: the header cannot be read: {e}"),
                    HINT_CUT,
                );
                return table;
            }
        }
        let width = table.columns.len();
        // A file cut mid-write ends in a short row or an open quote; the rows before it are whole.
        let mut damaged = 0usize;
        let mut first_damage: Option<String> = None;
        if open_tail && tail_start > 0 {
            damaged += 1;
            first_damage = Some("the last row ends inside a quoted field".to_string());
        }
        let mut record = csv::StringRecord::new();
        loop {
            match reader.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) if record.len() == width && !record.iter().any(|f| f.contains('\0')) => {
                    table.rows.push(record.clone())
                }
                Ok(true) => {
                    damaged += 1;
                    let line = record.position().map_or(0, |p| p.line());
                    first_damage.get_or_insert_with(|| {
                        format!("row at line {line} has {} of {width} fields", record.len())
                    });
                }
                Err(e) => {
                    damaged += 1;
                    first_damage.get_or_insert_with(|| e.to_string());
                    // The reader cannot resynchronise inside a broken quoted field.
                    if !matches!(e.kind(), csv::ErrorKind::UnequalLengths { .. }) {
                        break;
                    }
                }
            }
        }
        if damaged > 0 {
            table.warn(
                TRUNCATED,
                format!(
                    "`{name}`: {damaged} damaged row(s) skipped ({}); {} complete row(s) kept",
                    first_damage.unwrap_or_default(),
                    table.rows.len()
                ),
                HINT_CUT,
            );
        }
        table
    }

    /// Whether the header names `column`.
    pub fn has(&self, column: &str) -> bool {
        self.columns.contains_key(column)
    }

    /// The index of the first of `names` that the header has.
    pub fn index(&self, names: &[&str]) -> Option<usize> {
        names
            .iter()
            .find_map(|name| self.columns.get(*name).copied())
    }

    /// Every cell of `columns` (those the header has) that holds no number a normalized field
    /// may take (`-5`, `1e308`, `inf`, `abc`), noted for the file `name` by line and column;
    /// the cell readers below give `None` for them.
    pub fn bad_numbers(&self, name: &str, columns: &[&str]) -> BadNumbers {
        let mut bad = BadNumbers::new(name);
        let present: Vec<(&str, usize)> = columns
            .iter()
            .filter_map(|c| Some((*c, *self.columns.get(*c)?)))
            .collect();
        for row in &self.rows {
            for (column, index) in &present {
                if let Some(text) = row.get(*index)
                    && let Err(problem) = number::parse_measure(text)
                {
                    bad.note(line_of(row), column, text, problem);
                }
            }
        }
        bad
    }

    /// Every column of `required` the header lacks.
    pub fn missing<'a>(&self, required: &[&'a str]) -> Vec<&'a str> {
        required.iter().copied().filter(|c| !self.has(c)).collect()
    }

    fn warn(&mut self, kind: &str, message: String, hint: &str) {
        self.warnings.push(Diagnostic {
            severity: Severity::Warning,
            kind: kind.to_string(),
            message,
            hint: Some(hint.to_string()),
            metric: None,
        });
    }
}

const HINT_EMPTY: &str = "rocprofv3 writes its CSV files when the application exits; the run \
                          may have been stopped first, or no kernel ran";
const HINT_CUT: &str = "the file ends mid-row: rocprofv3 was probably stopped while writing; \
                        let the application exit by itself (raise the marker grace) to get \
                        whole files";

/// The line of the file a row started on (1 is the header).
pub fn line_of(row: &csv::StringRecord) -> u64 {
    row.position().map_or(0, |p| p.line())
}

/// A cell as an unsigned integer (`"12"`, `12`, `16384.000000`) no larger than
/// [`number::LARGEST`].
pub fn cell_u64(row: &csv::StringRecord, index: Option<usize>) -> Option<u64> {
    let text = row.get(index?)?.trim();
    let value = text.parse::<u64>().ok().or_else(|| {
        let value = number::parse_measure(text).ok()??;
        (value.fract() == 0.0).then_some(value as u64)
    })?;
    (value as f64 <= number::LARGEST).then_some(value)
}

/// A cell as a float (fixed or exponent notation), finite, non-negative and no larger than
/// [`number::LARGEST`].
pub fn cell_f64(row: &csv::StringRecord, index: Option<usize>) -> Option<f64> {
    number::parse_measure(row.get(index?)?).ok().flatten()
}

/// A cell as trimmed text; `None` when empty.
pub fn cell_str(row: &csv::StringRecord, index: Option<usize>) -> Option<&str> {
    Some(row.get(index?)?.trim()).filter(|s| !s.is_empty())
}

/// An agent as rocprofv3 names it: `"Agent 4"` in current releases, `4` in older ones.
pub fn agent_label(text: &str) -> String {
    if text.bytes().all(|b| b.is_ascii_digit()) {
        format!("Agent {text}")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_by_name_and_cells_in_both_notations() {
        let t = Table::read("x.csv", b"\"B\",\"A\"\n1,2.920e-03\n16384.000000,x\n");
        assert!(t.warnings.is_empty());
        assert_eq!(t.index(&["A"]), Some(1));
        assert_eq!(t.index(&["Z", "B"]), Some(0));
        assert_eq!(cell_f64(&t.rows[0], t.index(&["A"])), Some(2.92e-3));
        assert_eq!(cell_u64(&t.rows[1], t.index(&["B"])), Some(16384));
        assert_eq!(cell_u64(&t.rows[1], t.index(&["A"])), None);
        assert_eq!(t.missing(&["A", "C"]), vec!["C"]);
    }

    #[test]
    fn cut_row_and_open_quote_keep_the_rows_before() {
        let t = Table::read("k.csv", b"\"A\",\"B\"\n1,2\n3,4\n5");
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.warnings.len(), 1);
        assert!(
            t.warnings[0].message.contains("1 damaged row"),
            "{:?}",
            t.warnings
        );
        let t = Table::read("k.csv", b"\"A\",\"B\"\n1,2\n3,\"void f(int");
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.warnings[0].kind, TRUNCATED);
    }

    #[test]
    fn empty_and_nul_bytes_are_warnings() {
        let t = Table::read("e.csv", b"");
        assert!(t.rows.is_empty());
        assert!(t.warnings[0].message.contains("is empty"));
        let t = Table::read("n.csv", b"\"A\",\"B\"\n1,2\n\0\0,\0\n");
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.warnings.len(), 1);
    }

    #[test]
    fn agent_labels_from_both_releases() {
        assert_eq!(agent_label("4"), "Agent 4");
        assert_eq!(agent_label("Agent 4"), "Agent 4");
        assert_eq!(agent_label("GPU 3"), "GPU 3");
    }
}
