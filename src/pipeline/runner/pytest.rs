//! pytest's final summary line, parsed by its real grammar.
//!
//! pytest prints it from `build_summary_stats_line` (`src/_pytest/terminal.py`):
//! `=== 1 failed, 2 passed, 1 skipped, 3 warnings, 1 error in 61.23s (0:01:01) ===`. The `-q` form
//! has no `=` decoration; colored output wraps parts in ANSI escapes; `error` and `warning` are
//! pluralized (`1 error`, `2 errors`), the other words are not (`2 passed`); plugins add `rerun(s)`
//! (pytest-rerunfailures) and `subtests passed` (pytest-subtests); "no tests ran" replaces the
//! counts when nothing ran; durations are `0.12s`, `61.23s (0:01:01)`, `1 day, …`, or the pre-6.0
//! `0.12 seconds`.

use std::sync::LazyLock;

use regex::Regex;

/// What one summary line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PytestSummary {
    /// `(count, word)` in the order printed, e.g. `(2, "passed")`, `(1, "errors")`.
    pub counts: Vec<(u64, String)>,
    /// The line said "no tests ran".
    pub no_tests_ran: bool,
    /// Duration as printed, e.g. `61.23s (0:01:01)`.
    pub duration: String,
}

impl PytestSummary {
    fn count_of(&self, stems: &[&str]) -> u64 {
        self.counts
            .iter()
            .filter(|(_, word)| stems.contains(&word.as_str()))
            .map(|(n, _)| n)
            .sum()
    }

    /// No failed test and no error, and at least one test ran. (`no tests ran` makes pytest exit
    /// with status 5, so it is not a pass.)
    pub fn passed(&self) -> bool {
        !self.no_tests_ran
            && self.count_of(&[
                "failed",
                "error",
                "errors",
                "subtests failed",
                "subtest failed",
            ]) == 0
    }
}

/// Longest line considered; pytest pads the decorated line to the terminal width only.
const MAX_SUMMARY_LEN: usize = 4096;

static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]").unwrap_or_else(|e| unreachable!("{e}"))
});

const WORDS: &str = r"(?:subtests? )?(?:passed|failed|skipped|deselected|xfailed|xpassed|warnings?|errors?|reruns?|xfail|xpass)";

static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    let item = format!(r"\d+ {WORDS}");
    let pattern = format!(
        r"^(?:=+ )?(?P<body>no tests ran|{item}(?:, {item})*) in (?P<dur>\d+(?:\.\d+)? ?s(?:econds?)?(?: \((?:\d+ days?, )?\d+:\d\d:\d\d(?:\.\d+)?\))?)(?: =+)?$"
    );
    Regex::new(&pattern).unwrap_or_else(|e| unreachable!("{e}"))
});

static ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?P<n>\d+) (?P<w>{WORDS})")).unwrap_or_else(|e| unreachable!("{e}"))
});

/// Parse one line (without its newline). `None` when it is not a pytest summary line.
pub fn parse_summary(line: &[u8]) -> Option<PytestSummary> {
    if line.len() > MAX_SUMMARY_LEN || line.len() < 10 {
        return None;
    }
    let text = String::from_utf8_lossy(line);
    let plain = if text.contains('\x1b') {
        ANSI.replace_all(&text, "").into_owned()
    } else {
        text.into_owned()
    };
    let caps = SUMMARY.captures(plain.trim())?;
    let body = caps.name("body")?.as_str();
    let duration = caps.name("dur")?.as_str().to_string();
    if body == "no tests ran" {
        return Some(PytestSummary {
            counts: Vec::new(),
            no_tests_ran: true,
            duration,
        });
    }
    let counts = ITEM
        .captures_iter(body)
        .filter_map(|c| {
            Some((
                c.name("n")?.as_str().parse().ok()?,
                c.name("w")?.as_str().to_string(),
            ))
        })
        .collect();
    Some(PytestSummary {
        counts,
        no_tests_ran: false,
        duration,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passed(line: &str) -> Option<bool> {
        parse_summary(line.as_bytes()).map(|s| s.passed())
    }

    #[test]
    fn real_forms_are_recognized_with_their_verdict() {
        let cases = [
            ("2 passed in 8.10s", true),
            ("=== 1 passed in 0.50s ===", true),
            (
                "============================== 3 passed in 0.10s ===============================",
                true,
            ),
            ("1 failed, 2 passed in 0.12s", false),
            ("==== 2 passed, 1 warning in 0.01s ====", true),
            ("2 passed, 3 warnings in 0.01s", true),
            ("1 error in 0.05s", false),
            ("=== 2 errors in 0.05s ===", false),
            ("1 passed, 1 xfailed in 0.02s", true),
            ("1 passed, 1 xpassed in 0.02s", true),
            ("3 passed, 2 skipped, 4 deselected in 1.00s", true),
            ("1 failed, 1 passed, 2 rerun in 0.40s", false),
            ("1 passed, 1 reruns in 0.40s", true),
            ("5 passed in 61.23s (0:01:01)", true),
            ("=== 5 passed in 90061.00s (1 day, 1:01:01) ===", true),
            ("2 passed in 0.12 seconds", true),
            ("=== no tests ran in 0.01s ===", false),
            ("no tests ran in 0.01s", false),
            (
                "==== 1 failed, 2 passed, 1 skipped, 1 deselected, 1 xfailed, 1 xpassed, 3 warnings, 1 error in 0.12s ====",
                false,
            ),
            ("1 passed, 2 subtests passed in 0.01s", true),
            ("2 passed in 8.10s\r", true),
        ];
        for (line, verdict) in cases {
            assert_eq!(passed(line), Some(verdict), "{line:?}");
        }
    }

    #[test]
    fn colored_summary_is_recognized() {
        let line = "\x1b[32m====== \x1b[32m\x1b[1m2 passed\x1b[0m, \x1b[33m1 warning\x1b[0m\x1b[32m in 0.01s\x1b[0m\x1b[32m ======\x1b[0m";
        assert_eq!(passed(line), Some(true));
        let line = "\x1b[31m= \x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m1 passed\x1b[0m\x1b[31m in 0.01s\x1b[0m\x1b[31m =\x1b[0m";
        assert_eq!(passed(line), Some(false));
    }

    #[test]
    fn lookalikes_are_not_summaries() {
        for line in [
            "",
            "test_a.py::test_x PASSED",
            "collected 2 items",
            "2 passed",
            "we passed in 3s",
            "2 passed in the morning",
            "x 2 passed in 0.1s",
            "2 passed in 0.1s and more",
            "!!!!!!! Interrupted: 1 error during collection !!!!!!!",
            "=== short test summary info ===",
            "2 apples in 0.1s",
        ] {
            assert_eq!(passed(line), None, "{line:?}");
        }
        assert_eq!(parse_summary(&vec![b'='; 10_000]), None);
    }

    #[test]
    fn counts_and_duration_are_reported() {
        let summary =
            parse_summary(b"=== 1 failed, 2 passed, 3 warnings in 61.23s (0:01:01) ===").unwrap();
        assert_eq!(
            summary.counts,
            vec![
                (1, "failed".to_string()),
                (2, "passed".to_string()),
                (3, "warnings".to_string())
            ]
        );
        assert_eq!(summary.duration, "61.23s (0:01:01)");
    }
}
