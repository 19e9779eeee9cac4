//! JUnit XML of a CI result (quick-junit, nextest's model and writer): one `<testsuite>`, one
//! `<testcase>` per kernel, job or candidate; a failure or error carries the reason as its
//! message and the details as its text; each figure of the case is a `<property>`.

use std::io::Write;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::model::error::{Error, Result};
use crate::results::ci::{CaseResult, CiCase, CiSuite};
use crate::results::escape::junit;
use crate::results::export::CiExporter;

/// The JUnit exporter.
pub struct JunitExporter;

/// A time for JUnit's `time` attribute; nothing for one that is unknown or not a duration.
fn duration(seconds: Option<f64>) -> Option<Duration> {
    seconds
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

fn status(result: &CaseResult) -> TestCaseStatus {
    let (mut status, message, detail) = match result {
        CaseResult::Passed => return TestCaseStatus::success(),
        CaseResult::Failed { message, detail } => (
            TestCaseStatus::non_success(NonSuccessKind::Failure),
            message,
            detail.as_str(),
        ),
        CaseResult::Error { message, detail } => (
            TestCaseStatus::non_success(NonSuccessKind::Error),
            message,
            detail.as_str(),
        ),
        CaseResult::Skipped { message } => (TestCaseStatus::skipped(), message, ""),
    };
    status.set_message(junit::text(message).as_ref());
    if !detail.is_empty() {
        status.set_description(junit::text(detail).as_ref());
    }
    status
}

fn test_case(suite: &CiSuite, case: &CiCase) -> TestCase {
    let mut test = TestCase::new(junit::text(&case.name).as_ref(), status(&case.result));
    test.set_classname(junit::text(&case.classname).as_ref());
    if let Some(time) = duration(case.time_s) {
        test.set_time(time);
    }
    for (column, cell) in suite.columns.iter().zip(&case.cells) {
        test.add_property((junit::text(column).as_ref(), junit::text(cell).as_ref()));
    }
    test
}

/// The XML document of `suite`.
pub fn render(suite: &CiSuite) -> Result<String> {
    let mut test_suite = TestSuite::new(junit::text(&suite.name).as_ref());
    for line in &suite.summary {
        test_suite.add_property(("summary", junit::text(line).as_ref()));
    }
    if let Some(time) = duration(suite.time_s) {
        test_suite.set_time(time);
    }
    test_suite.add_test_cases(suite.cases.iter().map(|case| test_case(suite, case)));
    let mut report = Report::new("polyprof");
    report.add_test_suite(test_suite);
    report
        .to_string()
        .map_err(|e| Error::invalid("JUnit XML", format!("cannot serialize the report: {e}")))
}

impl CiExporter for JunitExporter {
    fn export(&self, suite: &CiSuite, out: &mut dyn Write) -> Result<()> {
        let text = render(suite)?;
        out.write_all(text.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .map_err(|e| Error::io("write the JUnit XML", "output", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_carry_their_reason_and_text_is_escaped() {
        let mut suite = CiSuite::new("polyprof diff", &["change"]);
        suite.summary.push("A = a, B = b".into());
        suite.cases.push(CiCase {
            name: "k<<<(1,1,1),(32,1,1)>>>".into(),
            classname: "polyprof.diff".into(),
            time_s: None,
            result: CaseResult::failed("regressed: 1 us → 2 us & more", "void k<float>()"),
            cells: vec!["+100.0 %".into()],
        });
        suite.cases.push(CiCase {
            name: "ok".into(),
            classname: "polyprof.diff".into(),
            time_s: Some(1.5),
            result: CaseResult::Passed,
            cells: vec!["+0.1 %".into()],
        });
        let xml = render(&suite).unwrap();
        assert!(
            xml.contains(r#"tests="2""#) && xml.contains(r#"failures="1""#),
            "{xml}"
        );
        assert!(
            xml.contains("k&lt;&lt;&lt;(1,1,1),(32,1,1)&gt;&gt;&gt;"),
            "{xml}"
        );
        assert!(
            xml.contains(r#"message="regressed: 1 us → 2 us &amp; more""#),
            "{xml}"
        );
        assert!(xml.contains("void k&lt;float&gt;()"), "{xml}");
        assert!(
            xml.contains(r#"<property name="change" value="+100.0 %"/>"#),
            "{xml}"
        );
        assert!(xml.contains(r#"time="1.500""#), "{xml}");
    }
}
