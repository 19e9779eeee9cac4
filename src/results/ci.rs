//! What a CI system shows of a `diff`, a `batch` or an `eval`: test suites of test cases (one
//! per kernel, job or candidate), each passed, failed with its reason, skipped or in error, and
//! a few figures per case for a table. The JUnit and Markdown exporters
//! (`export::junit`, `export::markdown`) read this, whatever the command.

/// How one case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseResult {
    Passed,
    /// The thing judged failed (a kernel regressed, a job failed, a candidate did not pass).
    Failed {
        message: String,
        detail: String,
    },
    /// Not judged (a kernel with no time on one side, a job the cascade skipped).
    Skipped {
        message: String,
    },
    /// The judging itself could not be done (polyprof, the profiler or the infrastructure).
    Error {
        message: String,
        detail: String,
    },
}

impl CaseResult {
    pub fn failed(message: impl Into<String>, detail: impl Into<String>) -> Self {
        CaseResult::Failed {
            message: message.into(),
            detail: detail.into(),
        }
    }

    pub fn skipped(message: impl Into<String>) -> Self {
        CaseResult::Skipped {
            message: message.into(),
        }
    }

    pub fn error(message: impl Into<String>, detail: impl Into<String>) -> Self {
        CaseResult::Error {
            message: message.into(),
            detail: detail.into(),
        }
    }

    /// `passed`, `failed`, `skipped`, `error`.
    pub fn name(&self) -> &'static str {
        match self {
            CaseResult::Passed => "passed",
            CaseResult::Failed { .. } => "failed",
            CaseResult::Skipped { .. } => "skipped",
            CaseResult::Error { .. } => "error",
        }
    }

    /// The details of a failure or error (a failed job's errors and the last lines of its
    /// stderr), empty otherwise.
    pub fn detail(&self) -> &str {
        match self {
            CaseResult::Failed { detail, .. } | CaseResult::Error { detail, .. } => detail,
            _ => "",
        }
    }

    /// The one-line reason, empty when it passed.
    pub fn message(&self) -> &str {
        match self {
            CaseResult::Passed => "",
            CaseResult::Failed { message, .. }
            | CaseResult::Skipped { message }
            | CaseResult::Error { message, .. } => message,
        }
    }
}

/// One kernel, job or candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct CiCase {
    pub name: String,
    /// The group it belongs to (JUnit's `classname`): `diff`, the batch's problem, `eval`.
    pub classname: String,
    /// Seconds it took, when that is known and means something (a job, an eval).
    pub time_s: Option<f64>,
    pub result: CaseResult,
    /// Its figures, one per [`CiSuite::columns`] (the Markdown table's cells, JUnit properties).
    pub cells: Vec<String>,
}

/// The cases of one command's result.
#[derive(Debug, Clone, PartialEq)]
pub struct CiSuite {
    /// `polyprof diff`, `polyprof batch`, `polyprof eval`.
    pub name: String,
    /// What the run was about, in a line or two (the headline of the Markdown summary).
    pub summary: Vec<String>,
    /// The figures' headers, besides the case's name and result.
    pub columns: Vec<String>,
    pub cases: Vec<CiCase>,
    /// Seconds the whole run took, when known.
    pub time_s: Option<f64>,
}

impl CiSuite {
    pub fn new(name: impl Into<String>, columns: &[&str]) -> Self {
        CiSuite {
            name: name.into(),
            summary: Vec::new(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            cases: Vec::new(),
            time_s: None,
        }
    }

    /// Cases per result: (passed, failed, skipped, error).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let count = |name: &str| {
            self.cases
                .iter()
                .filter(|c| c.result.name() == name)
                .count()
        };
        (
            count("passed"),
            count("failed"),
            count("skipped"),
            count("error"),
        )
    }

    /// Whether any case failed or was in error: what a CI gate stops on.
    pub fn failed(&self) -> bool {
        let (_, failed, _, errors) = self.counts();
        failed + errors > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_gate_follow_the_results() {
        let mut suite = CiSuite::new("polyprof diff", &["change"]);
        for result in [
            CaseResult::Passed,
            CaseResult::failed("regressed", ""),
            CaseResult::skipped("no time"),
            CaseResult::Passed,
        ] {
            suite.cases.push(CiCase {
                name: "k".into(),
                classname: "diff".into(),
                time_s: None,
                result,
                cells: vec!["+1 %".into()],
            });
        }
        assert_eq!(suite.counts(), (2, 1, 1, 0));
        assert!(suite.failed());
        suite.cases.remove(1);
        assert!(!suite.failed());
        assert_eq!(suite.cases[1].result.message(), "no time");
    }
}
