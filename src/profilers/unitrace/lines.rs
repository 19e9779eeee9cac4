//! Line helpers shared by unitrace's text parsers: splitting padded rows from the right (only
//! the first cell, the kernel name, may contain separators), name unquoting, and warnings
//! capped so a damaged 100,000-line file yields a handful of messages, not 100,000.

use crate::model::parsed::{Diagnostic, Severity};

/// Warnings kept per parse; the rest are counted in one closing warning.
pub const WARNING_CAP: usize = 20;

/// Split `line` into a leading name and `values` trailing cells. Cells are separated by any run
/// of `,` and spaces, which covers unitrace's `", "` tables and the Kernel Properties rows that
/// use spaces only. Values never contain separators; the name may (C++ signatures, which Level
/// Zero quotes and OpenCL does not), so whatever is left after the values is the name.
pub fn split_right(line: &str, values: usize) -> Option<(&str, Vec<&str>)> {
    let bytes = line.as_bytes();
    let is_sep = |b: u8| b == b',' || b == b' ' || b == b'\t';
    let mut end = bytes.len();
    let mut cells = Vec::with_capacity(values);
    while cells.len() < values {
        while end > 0 && is_sep(bytes[end - 1]) {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && !is_sep(bytes[start - 1]) {
            start -= 1;
        }
        if start == end {
            return None;
        }
        cells.push(&line[start..end]);
        end = start;
    }
    cells.reverse();
    let name = unquote(line[..end].trim_end_matches([',', ' ', '\t']).trim());
    (!name.is_empty()).then_some((name, cells))
}

/// Split a comma-separated row into its name and `values` trailing cells, keeping empty cells
/// (metric CSVs may print them). The name is whatever is left on the left.
pub fn split_csv_right(line: &str, values: usize) -> Option<(&str, Vec<&str>)> {
    let mut parts = line.rsplitn(values + 1, ',');
    let mut cells: Vec<&str> = Vec::with_capacity(values);
    for _ in 0..values {
        cells.push(parts.next()?.trim());
    }
    let name = unquote(parts.next()?.trim());
    cells.reverse();
    (!name.is_empty()).then_some((name, cells))
}

/// `"name"` → `name`. Unitrace does not escape quotes inside a name, so only the outer pair goes.
pub fn unquote(cell: &str) -> &str {
    cell.strip_prefix('"')
        .and_then(|c| c.strip_suffix('"'))
        .unwrap_or(cell)
}

/// Collects per-line warnings up to [`WARNING_CAP`], then counts the rest.
#[derive(Debug, Default)]
pub struct Warnings {
    pub diagnostics: Vec<Diagnostic>,
    suppressed: usize,
}

impl Warnings {
    pub fn push(&mut self, kind: &str, message: String, hint: Option<&str>) {
        if self.diagnostics.len() >= WARNING_CAP {
            self.suppressed += 1;
            return;
        }
        self.diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            metric: None,
            kind: kind.into(),
            message,
            hint: hint.map(String::from),
        });
    }

    /// The collected warnings, with one more saying how many were left out.
    pub fn finish(mut self, what: &str) -> Vec<Diagnostic> {
        if self.suppressed > 0 {
            self.diagnostics.push(Diagnostic {
                severity: Severity::Warning,
                metric: None,
                kind: "more_warnings".into(),
                message: format!("{} more warnings like these in the {what}", self.suppressed),
                hint: None,
            });
        }
        self.diagnostics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_commas_survive_right_splitting() {
        let line = r#""f(int, float)",   4,   89769760,    91.937500"#;
        let (name, cells) = split_right(line, 3).unwrap();
        assert_eq!(name, "f(int, float)");
        assert_eq!(cells, ["4", "89769760", "91.937500"]);
        // OpenCL prints such names without quotes; the split is the same.
        let (name, _) = split_right("  g<a, b>,  1,  2,  3", 3).unwrap();
        assert_eq!(name, "g<a, b>");
        // Kernel Properties rows of older unitrace separate values by spaces only.
        let (name, cells) = split_right("k[SIMD16 {56; 1; 1} {64; 8; 1}],   27   8  0", 3).unwrap();
        assert_eq!(name, "k[SIMD16 {56; 1; 1} {64; 8; 1}]");
        assert_eq!(cells, ["27", "8", "0"]);
    }

    #[test]
    fn short_rows_are_refused_not_misread() {
        assert_eq!(split_right("1, 2", 3), None);
        assert_eq!(split_right(", 1, 2, 3", 3), None);
        assert_eq!(split_csv_right("a,1", 3), None);
        let (name, cells) = split_csv_right(r#""k(a, b)",1,,3"#, 3).unwrap();
        assert_eq!(name, "k(a, b)");
        assert_eq!(cells, ["1", "", "3"]);
    }

    #[test]
    fn warnings_are_capped_and_counted() {
        let mut w = Warnings::default();
        for i in 0..(WARNING_CAP + 5) {
            w.push("bad_row", format!("line {i}"), None);
        }
        let all = w.finish("timeline");
        assert_eq!(all.len(), WARNING_CAP + 1);
        assert!(all.last().unwrap().message.starts_with("5 more warnings"));
    }
}
