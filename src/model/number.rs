//! Numbers a profiler printed, checked before they become normalized fields. A field is finite,
//! non-negative and at most [`LARGEST`], or it is left unmeasured and a `bad_number`
//! diagnostic names the file, row and column, so nothing absurd (`-5`, `1e308`, `inf`) reaches
//! a report or a diff, and nothing unreadable (`abc`, `0x10`) passes as "not measured".

use crate::model::parsed::{Diagnostic, Severity};

/// The largest value a normalized field may hold: 10^18 (31 years in ns, an exabyte). Any real
/// duration, byte count or FLOP count of one profiled run is far below it.
pub const LARGEST: f64 = 1e18;

/// Kind of the diagnostic for a value that cannot be.
pub const BAD_NUMBER: &str = "bad_number";

/// The file name in a diagnostic of a parser that reads a stream without knowing its file
/// (ncu's); the caller that knows it puts it in place.
pub const NCU_OUTPUT: &str = "ncu output";

/// How many bad cells one file reports one by one; the rest are counted in one more diagnostic.
pub const REPORTED_PER_FILE: usize = 5;

/// What is wrong with a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Not a decimal number at all (`abc`, `0x10`).
    NotANumber,
    /// `inf`, `NaN`.
    NotFinite,
    Negative,
    /// Above [`LARGEST`].
    TooLarge,
}

impl Problem {
    pub fn describe(&self) -> &'static str {
        match self {
            Problem::NotANumber => "is not a decimal number",
            Problem::NotFinite => "is not finite",
            Problem::Negative => "is negative",
            Problem::TooLarge => "is larger than 1e18, more than any real measurement",
        }
    }
}

/// A value as a normalized field may hold it.
pub fn check(value: f64) -> Result<f64, Problem> {
    if !value.is_finite() {
        Err(Problem::NotFinite)
    } else if value < 0.0 {
        Err(Problem::Negative)
    } else if value > LARGEST {
        Err(Problem::TooLarge)
    } else {
        // `-0.0` is zero.
        Ok(value.abs())
    }
}

/// Whether a cell says "not measured": empty, `n/a`, `N/A`, `-`.
pub fn is_unmeasured(text: &str) -> bool {
    matches!(text.trim(), "" | "-" | "n/a" | "N/A" | "na" | "NA")
}

/// What is wrong with a cell that a parser's own number reader refused (`Ok` when it only says
/// "not measured").
pub fn classify(text: &str) -> std::result::Result<(), Problem> {
    parse_measure(text).map(|_| ())
}

/// A cell's text: `Ok(None)` when it says "not measured" ([`is_unmeasured`]), the checked value,
/// or what is wrong with it.
pub fn parse_measure(text: &str) -> Result<Option<f64>, Problem> {
    let text = text.trim();
    if is_unmeasured(text) {
        return Ok(None);
    }
    let value: f64 = text.parse().map_err(|_| Problem::NotANumber)?;
    check(value).map(Some)
}

/// The diagnostic for one bad cell: file, row (`row 12`, the 1-based line; `launch 5` where
/// the parser knows launches, not lines), column, the text and what is wrong.
pub fn bad_number(file: &str, row: &str, column: &str, text: &str, problem: Problem) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        kind: BAD_NUMBER.to_string(),
        message: format!(
            "`{file}` {row}, column `{column}`: `{}` {}; the field is left unmeasured",
            shorten(text.trim()),
            problem.describe()
        ),
        hint: Some(
            "the file is damaged or not what the profiler wrote; re-run the profiler, or fix \
             the value"
                .to_string(),
        ),
        metric: Some(column.to_string()),
    }
}

fn shorten(text: &str) -> String {
    const MAX: usize = 40;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head}…")
    }
}

/// Bad cells of one file, collected as the parser meets them: the first
/// [`REPORTED_PER_FILE`] each get a diagnostic, the rest one summary.
#[derive(Debug, Default)]
pub struct BadNumbers {
    file: String,
    diagnostics: Vec<Diagnostic>,
    count: usize,
}

impl BadNumbers {
    pub fn new(file: &str) -> Self {
        BadNumbers {
            file: file.to_string(),
            ..Default::default()
        }
    }

    /// Check `text` from `row`, `column`: the value, `None` when unmeasured or bad (bad ones
    /// are noted).
    pub fn measure(&mut self, row: u64, column: &str, text: &str) -> Option<f64> {
        match parse_measure(text) {
            Ok(value) => value,
            Err(problem) => {
                self.note(row, column, text, problem);
                None
            }
        }
    }

    /// Check a value already read as a number (JSON, a difference of two cells).
    pub fn value(&mut self, row: u64, column: &str, value: f64) -> Option<f64> {
        match check(value) {
            Ok(value) => Some(value),
            Err(problem) => {
                self.note(row, column, &value.to_string(), problem);
                None
            }
        }
    }

    pub fn note(&mut self, row: u64, column: &str, text: &str, problem: Problem) {
        self.note_at(&format!("row {row}"), column, text, problem);
    }

    /// [`note`](Self::note) with the place in words (`event at byte 120`).
    pub fn note_at(&mut self, place: &str, column: &str, text: &str, problem: Problem) {
        self.count += 1;
        if self.count <= REPORTED_PER_FILE {
            self.diagnostics
                .push(bad_number(&self.file, place, column, text, problem));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The diagnostics, with a summary when more cells were bad than were reported.
    pub fn into_diagnostics(mut self) -> Vec<Diagnostic> {
        if self.count > REPORTED_PER_FILE {
            self.diagnostics.push(Diagnostic {
                severity: Severity::Error,
                kind: BAD_NUMBER.to_string(),
                message: format!(
                    "`{}`: {} more bad number(s) not listed ({} in all)",
                    self.file,
                    self.count - REPORTED_PER_FILE,
                    self.count
                ),
                hint: None,
                metric: None,
            });
        }
        self.diagnostics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_numbers_are_problems_and_unmeasured_cells_are_not() {
        assert_eq!(parse_measure("12.5"), Ok(Some(12.5)));
        assert_eq!(parse_measure(" 1e3 "), Ok(Some(1000.0)));
        assert_eq!(parse_measure("-0"), Ok(Some(0.0)));
        assert_eq!(parse_measure(""), Ok(None));
        assert_eq!(parse_measure("n/a"), Ok(None));
        assert_eq!(parse_measure("-5"), Err(Problem::Negative));
        assert_eq!(parse_measure("1e308"), Err(Problem::TooLarge));
        assert_eq!(parse_measure("inf"), Err(Problem::NotFinite));
        assert_eq!(parse_measure("NaN"), Err(Problem::NotFinite));
        assert_eq!(parse_measure("abc"), Err(Problem::NotANumber));
        assert_eq!(parse_measure("0x10"), Err(Problem::NotANumber));
    }

    #[test]
    fn diagnostics_name_file_row_and_column_and_stop_after_a_few() {
        let mut bad = BadNumbers::new("k.csv");
        assert_eq!(bad.measure(3, "Start_Timestamp", "inf"), None);
        for row in 4..20 {
            bad.measure(row, "End_Timestamp", "-1");
        }
        let diagnostics = bad.into_diagnostics();
        assert_eq!(diagnostics.len(), REPORTED_PER_FILE + 1);
        let first = &diagnostics[0].message;
        assert!(
            first.contains("`k.csv` row 3, column `Start_Timestamp`"),
            "{first}"
        );
        assert!(first.contains("`inf` is not finite"), "{first}");
        assert!(diagnostics.iter().all(|d| d.severity == Severity::Error));
        assert!(diagnostics[REPORTED_PER_FILE].message.contains("17 in all"));
    }
}
