//! JUnit XML of a CI result (quick-junit, nextest's model and writer): one `<testsuite>`, one
//! `<testcase>` per kernel, job or candidate; a failure or error carries the reason as its
//! message and the details as its text (and as its `<system-err>`); each figure of the case is
//! a `name: value` line of its `<system-out>`. The file validates against Jenkins' strict
//! junit-10.xsd (schemas/junit/), which allows no `<properties>` in a case and no `skipped`
//! attribute on `<testsuites>`.

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
    // Where CI viewers show a failed test's output (Jenkins, GitLab, GitHub's test reporters).
    if !case.result.detail().is_empty() {
        test.set_system_err(junit::text(case.result.detail()).as_ref());
    }
    test.set_classname(junit::text(&case.classname).as_ref());
    if let Some(time) = duration(case.time_s) {
        test.set_time(time);
    }
    let figures: Vec<String> = suite
        .columns
        .iter()
        .zip(&case.cells)
        .map(|(column, cell)| format!("{}: {}", junit::text(column), junit::text(cell)))
        .collect();
    if !figures.is_empty() {
        test.set_system_out(figures.join("\n"));
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
    let xml = report
        .to_string()
        .map_err(|e| Error::invalid("JUnit XML", format!("cannot serialize the report: {e}")))?;
    Ok(without_testsuites_skipped(xml))
}

/// junit-10.xsd has no `skipped` attribute on `<testsuites>` (quick-junit writes one; each
/// `<testsuite>` keeps its own).
fn without_testsuites_skipped(xml: String) -> String {
    let Some(start) = xml.find("<testsuites") else {
        return xml;
    };
    let end = xml[start..].find('>').map_or(xml.len(), |e| start + e);
    let tag = &xml[start..end];
    let Some(at) = tag.find(" skipped=\"") else {
        return xml;
    };
    let value_end = tag[at + 10..]
        .find('"')
        .map_or(tag.len(), |e| at + 10 + e + 1);
    format!("{}{}{}", &xml[..start + at], &tag[value_end..], &xml[end..])
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
            xml.contains("change: +100.0 %") && !xml.contains("<testcase name=\"k\"><properties>"),
            "{xml}"
        );
        assert!(xml.contains(r#"time="1.500""#), "{xml}");
    }
}
