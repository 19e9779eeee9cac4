//! End-marker detection over lines, and over whole blocks of complete lines at once (the fast
//! path: one regex search per block instead of one call per line).

use regex::bytes::{Regex, RegexBuilder};

use super::pytest;
use crate::model::error::{Error, Result};
use crate::model::plan::EndMarker;

/// What a detector found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerHit {
    /// The whole line the marker was found in (lossy UTF-8, no newline).
    pub line: String,
    /// pytest: the summary says no failures and no errors; other markers: always true.
    pub passed: bool,
}

/// A compiled end marker.
#[derive(Debug, Clone)]
pub enum Detector {
    Off,
    Pytest {
        /// Cheap search for lines that could be a summary; each candidate is then parsed exactly.
        candidates: Regex,
    },
    Literal(Regex),
    Regex {
        /// `^`/`$` match at line boundaries; used to find candidate lines inside a block.
        multi_line: Regex,
        /// Matched against one line alone to confirm a candidate.
        single_line: Regex,
    },
}

fn build(pattern: &str, multi_line: bool) -> Result<Regex> {
    RegexBuilder::new(pattern)
        .multi_line(multi_line)
        .build()
        .map_err(|e| {
            Error::invalid(
                "end marker",
                format!("`{pattern}` is not a valid regex: {e}"),
            )
        })
}

impl Detector {
    pub fn new(marker: &EndMarker) -> Result<Self> {
        Ok(match marker {
            EndMarker::None => Detector::Off,
            EndMarker::Pytest => Detector::Pytest {
                candidates: build(
                    r"passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|reruns?|no tests ran",
                    false,
                )?,
            },
            EndMarker::Literal(text) => Detector::Literal(build(&regex::escape(text), false)?),
            EndMarker::Regex(pattern) => Detector::Regex {
                multi_line: build(pattern, true)?,
                single_line: build(pattern, false)?,
            },
        })
    }

    pub fn is_active(&self) -> bool {
        !matches!(self, Detector::Off)
    }

    /// Check one line (without its newline).
    pub fn check_line(&self, line: &[u8]) -> Option<MarkerHit> {
        let line = trim_cr(line);
        // A terminal redraws a progress line with `\r`: what shows is what follows the last one.
        let line = match line.iter().rposition(|&b| b == b'\r') {
            Some(cr) if matches!(self, Detector::Pytest { .. }) => &line[cr + 1..],
            _ => line,
        };
        let passed = match self {
            Detector::Off => return None,
            Detector::Pytest { .. } => pytest::parse_summary(line)?.passed(),
            Detector::Literal(re) => {
                re.is_match(line).then_some(())?;
                true
            }
            Detector::Regex { single_line, .. } => {
                single_line.is_match(line).then_some(())?;
                true
            }
        };
        Some(MarkerHit {
            line: String::from_utf8_lossy(line).into_owned(),
            passed,
        })
    }

    /// Find the first marker line in a block of complete lines (each ending with `\n`).
    pub fn scan_block(&self, block: &[u8]) -> Option<MarkerHit> {
        let search = match self {
            Detector::Off => return None,
            Detector::Pytest { candidates } => candidates,
            Detector::Literal(re) => re,
            Detector::Regex { multi_line, .. } => multi_line,
        };
        let mut from = 0;
        while from < block.len() {
            let found = search.find_at(block, from)?;
            let start = block[..found.start()]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let end = block[found.start()..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(block.len(), |i| found.start() + i);
            if let Some(hit) = self.check_line(&block[start..end]) {
                return Some(hit);
            }
            from = end + 1;
        }
        None
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detector(text: &str) -> Detector {
        Detector::new(&text.parse().unwrap()).unwrap()
    }

    #[test]
    fn block_scan_finds_the_summary_among_lookalikes() {
        let d = detector("pytest");
        let block = b"test_a.py::test_x PASSED\n2 failed in the morning\n==PROF== x\n=== 1 failed, 1 passed in 0.1s ===\nlater\n";
        let hit = d.scan_block(block).unwrap();
        assert_eq!(hit.line, "=== 1 failed, 1 passed in 0.1s ===");
        assert!(!hit.passed);
        assert_eq!(d.scan_block(b"nothing here\npassed\n"), None);
    }

    #[test]
    fn literal_and_regex_match_within_one_line_only() {
        let d = detector("literal:VTUNE_DONE");
        assert_eq!(
            d.scan_block(b"a\nxx VTUNE_DONE yy\n").unwrap().line,
            "xx VTUNE_DONE yy"
        );
        let d = detector(r"regex:^done\s+now$");
        // `\s` would span the newline in a block search; the per-line check rejects that.
        assert_eq!(d.scan_block(b"done\nnow\n"), None);
        assert_eq!(
            d.scan_block(b"done\ndone  now\n").unwrap().line,
            "done  now"
        );
        assert!(d.check_line(b"done now\r").is_some());
    }

    #[test]
    fn off_never_matches() {
        let d = detector("none");
        assert!(!d.is_active());
        assert_eq!(d.check_line(b"2 passed in 0.1s"), None);
    }
}
