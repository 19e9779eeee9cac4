//! A Markdown summary of a CI result, for a pull-request comment or a CI summary page (GitHub's
//! `$GITHUB_STEP_SUMMARY`): a headline with the counts, the run's summary lines, one table row
//! per case (every case up to [`ALL_ROWS_UP_TO`], beyond that the ones that did not pass), and
//! each failure's reason. Like hyperfine's `--export-markdown`, a GitHub-flavoured table.

use std::io::Write;

use crate::model::error::{Error, Result};
use crate::results::ci::{CaseResult, CiSuite};
use crate::results::export::CiExporter;

/// The Markdown exporter.
pub struct MarkdownExporter;

/// Up to this many cases every case gets a row; in a larger result only the ones that did not
/// pass do (a comment stays readable and under the hosts' size limits).
pub const ALL_ROWS_UP_TO: usize = 50;

/// `text` as inline Markdown that shows as written (the one Markdown rule).
pub use crate::results::escape::markdown::text as escape;

fn mark(result: &CaseResult) -> &'static str {
    match result {
        CaseResult::Passed => "✅",
        CaseResult::Failed { .. } => "❌",
        CaseResult::Skipped { .. } => "⏭️",
        CaseResult::Error { .. } => "⚠️",
    }
}

/// The Markdown text of `suite`.
pub fn render(suite: &CiSuite) -> String {
    let (passed, failed, skipped, errors) = suite.counts();
    let mut counts = Vec::new();
    for (n, what) in [
        (failed, "failed"),
        (errors, "in error"),
        (passed, "passed"),
        (skipped, "skipped"),
    ] {
        if n > 0 {
            counts.push(format!("{n} {what}"));
        }
    }
    if counts.is_empty() {
        counts.push("nothing to judge".to_string());
    }
    let verdict = if suite.failed() { "❌" } else { "✅" };
    let mut text = format!(
        "## {verdict} {}: {}\n\n",
        escape(&suite.name),
        counts.join(", ")
    );
    for line in &suite.summary {
        text.push_str(&format!("{}  \n", escape(line)));
    }
    if !suite.summary.is_empty() {
        text.push('\n');
    }
    let shown: Vec<_> = suite
        .cases
        .iter()
        .filter(|c| suite.cases.len() <= ALL_ROWS_UP_TO || c.result != CaseResult::Passed)
        .collect();
    if !shown.is_empty() {
        let mut header = vec![String::new(), "name".to_string()];
        header.extend(suite.columns.iter().map(|c| escape(c)));
        text.push_str(&format!("| {} |\n", header.join(" | ")));
        text.push_str(&format!("|{}\n", "---|".repeat(header.len())));
        for case in &shown {
            let mut row = vec![mark(&case.result).to_string(), escape(&case.name)];
            row.extend(case.cells.iter().map(|c| escape(c)));
            text.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        text.push('\n');
    }
    if shown.len() < suite.cases.len() {
        text.push_str(&format!(
            "{} passed cases not listed (more than {ALL_ROWS_UP_TO} cases).\n\n",
            suite.cases.len() - shown.len()
        ));
    }
    let reasons: Vec<String> = suite
        .cases
        .iter()
        .filter(|c| {
            matches!(
                c.result,
                CaseResult::Failed { .. } | CaseResult::Error { .. }
            )
        })
        .map(|c| {
            let mut reason = format!(
                "- {} **{}**: {}\n",
                mark(&c.result),
                escape(&c.name),
                escape(c.result.message())
            );
            // The details (a failed job's stderr tail) collapsed under the reason; a fence
            // longer than any run of backticks in them keeps them verbatim, their control
            // characters shown as a terminal shows them (a summary is also read with `cat`).
            let detail = crate::results::escape::terminal::text(c.result.detail());
            if !detail.is_empty() {
                let longest = detail
                    .split(|ch| ch != '`')
                    .map(str::len)
                    .max()
                    .unwrap_or(0);
                let fence = "`".repeat(longest.max(2) + 1);
                reason.push_str(&format!(
                    "\n  <details><summary>details</summary>\n\n{fence}text\n{}\n{fence}\n\n  </details>\n\n",
                    detail.trim_end()
                ));
            }
            reason
        })
        .collect();
    if !reasons.is_empty() {
        text.push_str("### Why\n\n");
        text.push_str(&reasons.concat());
    }
    text
}

impl CiExporter for MarkdownExporter {
    fn export(&self, suite: &CiSuite, out: &mut dyn Write) -> Result<()> {
        out.write_all(render(suite).as_bytes())
            .map_err(|e| Error::io("write the Markdown summary", "output", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ci::CiCase;

    fn case(name: &str, result: CaseResult) -> CiCase {
        CiCase {
            name: name.into(),
            classname: "c".into(),
            time_s: None,
            result,
            cells: vec!["1 | 2".into()],
        }
    }

    #[test]
    fn escapes_what_markdown_or_html_would_eat() {
        assert_eq!(
            escape("void k<float>(a|b) *x* `y`\n"),
            r"void k&lt;float&gt;(a\|b) \*x\* \`y\` "
        );
    }

    #[test]
    fn headline_counts_rows_and_reasons() {
        let mut suite = CiSuite::new("polyprof batch", &["state"]);
        suite.cases.push(case("a", CaseResult::Passed));
        suite
            .cases
            .push(case("b", CaseResult::failed("exited with code 3", "")));
        let text = render(&suite);
        assert!(
            text.starts_with("## ❌ polyprof batch: 1 failed, 1 passed\n"),
            "{text}"
        );
        assert!(text.contains("| ✅ | a | 1 \\| 2 |"), "{text}");
        assert!(text.contains("- ❌ **b**: exited with code 3"), "{text}");
    }

    #[test]
    fn a_failed_jobs_details_show_their_escape_sequences() {
        let mut suite = CiSuite::new("polyprof batch", &["state"]);
        let tail = "Traceback\n\x1b]52;c;aGk=\x07\x1b[2J``` done";
        suite
            .cases
            .push(case("b", CaseResult::failed("exited with code 1", tail)));
        let text = render(&suite);
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
        assert!(
            text.contains("````text\nTraceback\n\\x1b]52;c;aGk=\\x07\\x1b[2J``` done\n````"),
            "{text}"
        );
    }

    #[test]
    fn a_large_result_lists_only_what_did_not_pass() {
        let mut suite = CiSuite::new("polyprof batch", &["state"]);
        for i in 0..=ALL_ROWS_UP_TO {
            suite
                .cases
                .push(case(&format!("job{i}"), CaseResult::Passed));
        }
        suite.cases.push(case("bad", CaseResult::failed("x", "")));
        let text = render(&suite);
        assert_eq!(text.matches("| ✅ |").count(), 0, "{text}");
        assert!(text.contains("| ❌ | bad |"));
        assert!(text.contains(&format!("{} passed cases not listed", ALL_ROWS_UP_TO + 1)));
    }
}
