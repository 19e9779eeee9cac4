//! `polyprof report BATCH_ROOT --format html`: every job of a batch (profiling or eval) on
//! one page: state, time, speedup and findings, jobs that did not succeed first, each linking
//! to its own report.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::model::batch::{BatchEntry, BatchIndex, EntryState};
use crate::results::escape::html;
use crate::results::export::html_page::{number_cell, page, text_cell};
use crate::results::export::roofline_chart::escape;
use crate::results::units;

/// Links of one job: (label, href relative to the page).
pub type JobLinks = BTreeMap<String, Vec<(String, String)>>;

/// The last lines of stderr of each job that did not succeed, by job id.
pub type StderrTails = BTreeMap<String, Vec<String>>;

/// Where a job goes in the page: the ones to look at first.
fn rank(entry: &BatchEntry) -> u8 {
    match entry.state {
        EntryState::Crashed => 0,
        EntryState::Failed => 1,
        EntryState::TimedOut => 2,
        EntryState::Lost => 3,
        EntryState::Cancelled => 4,
        // Left out by the batch's cascade (an earlier stage failed, or too slow to profile).
        EntryState::Skipped => 6,
        EntryState::Running => 7,
        EntryState::Pending => 8,
        // An eval job that ran to its end but did not pass is a failure of the candidate.
        EntryState::Succeeded if entry.eval.as_ref().is_some_and(|e| !e.passed) => 5,
        EntryState::Succeeded => 9,
    }
}

/// The jobs in page order: by `rank`, then in the job file's order.
pub fn ordered(index: &BatchIndex) -> Vec<&BatchEntry> {
    let position: BTreeMap<&str, usize> = index
        .order
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut entries: Vec<&BatchEntry> = index.jobs.values().collect();
    entries.sort_by_key(|e| {
        (
            rank(e),
            position.get(e.id.as_str()).copied().unwrap_or(usize::MAX),
        )
    });
    entries
}

/// The page of `index`; `links` holds each job's reports, by job id.
pub fn render(index: &BatchIndex, root: &str, links: &JobLinks) -> String {
    render_with_tails(index, root, links, &StderrTails::new())
}

/// [`render`], the note of each job in `tails` followed by its stderr's last lines, collapsed
/// (what JUnit's `system-err` and the Markdown summary carry too).
pub fn render_with_tails(
    index: &BatchIndex,
    root: &str,
    links: &JobLinks,
    tails: &StderrTails,
) -> String {
    let mut body = String::new();
    let counts = index.counts();
    let summary: Vec<String> = counts
        .iter()
        .map(|(state, count)| format!("{count} {state}"))
        .collect();
    let not_passed = index
        .jobs
        .values()
        .filter(|e| e.eval.as_ref().is_some_and(|v| !v.passed))
        .count();
    let _ = write!(
        body,
        "<p>{} jobs from <code>{}</code> ({:?} backend): {}{}.</p>\
         <p class=\"note\">Jobs that did not succeed come first (crashed, failed, timed out, \
         lost, cancelled, eval candidates that did not pass), then the job file's order. Click \
         a column to sort.</p>",
        index.jobs.len(),
        escape(&index.job_file),
        index.backend,
        escape(&summary.join(", ")),
        if not_passed > 0 {
            format!("; {not_passed} eval candidate(s) not passed")
        } else {
            String::new()
        }
    );
    // Columns no job has a value for are left out, so the table fits a narrow window (a
    // profiling batch has no speedups or findings; a failed batch no kernel times).
    let jobs = || index.jobs.values();
    let shown = Optional {
        kernel_time: jobs().any(|e| e.total_kernel_ns.is_some()),
        speedup: jobs().any(|e| e.eval.as_ref().is_some_and(|v| v.speedup.is_some())),
        findings: jobs().any(|e| e.eval.as_ref().is_some_and(|v| !v.findings.is_empty())),
    };
    let left_out: Vec<&str> = [
        (!shown.kernel_time, "kernel time"),
        (!shown.speedup, "speedup"),
        (!shown.findings, "findings"),
    ]
    .into_iter()
    .filter_map(|(out, name)| out.then_some(name))
    .collect();
    if !left_out.is_empty() {
        let names = match left_out.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        let _ = write!(
            body,
            "<p class=\"note\">No job has a value for {names}: {} left out.</p>",
            if left_out.len() == 1 {
                "its column is"
            } else {
                "their columns are"
            }
        );
    }
    let _ = write!(
        body,
        "<table class=\"sortable batch\"><thead><tr><th data-sort>Job</th>\
         <th data-sort>State</th><th data-sort>Device</th><th data-sort>Attempts</th>\
         <th data-sort>Time</th><th data-sort>Kernels</th>{}{}{}<th data-sort>Note</th>\
         <th>Report</th></tr></thead><tbody>",
        if shown.kernel_time {
            "<th data-sort>Kernel time</th>"
        } else {
            ""
        },
        if shown.speedup {
            "<th data-sort>Speedup</th>"
        } else {
            ""
        },
        if shown.findings {
            "<th data-sort>Findings</th>"
        } else {
            ""
        },
    );
    for entry in ordered(index) {
        let state = match &entry.eval {
            Some(eval) if eval.passed => format!("{} (passed)", entry.state),
            Some(eval) => format!("{} (not passed: {})", entry.state, eval.status),
            None => entry.state.to_string(),
        };
        let bad = rank(entry) < 6;
        let speedup = entry.eval.as_ref().and_then(|e| e.speedup);
        let findings = entry
            .eval
            .as_ref()
            .map(|e| e.findings.join(", "))
            .unwrap_or_default();
        let job_links: String = links
            .get(&entry.id)
            .map(|list| {
                list.iter()
                    .map(|(label, href)| match html::relative_link(href) {
                        Some(href) => format!("<a href=\"{href}\">{}</a>", html::name(label)),
                        None => html::name(label),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let _ = write!(
            body,
            "<tr data-job=\"{id}\" data-state=\"{state_name}\"><td class=\"name\">{id_html}</td>\
             <td class=\"{class}\">{state}</td>{device}{attempts}{time}{kernels}{ktime}{speedup}\
             {findings}{note}<td>{job_links}</td></tr>",
            id = escape(&entry.id),
            id_html = html::name(&entry.id),
            state_name = entry.state,
            class = if bad { "bad" } else { "" },
            state = escape(&state),
            device = text_cell(entry.device.as_deref().unwrap_or("-")),
            attempts = number_cell(Some(entry.attempts as f64), &entry.attempts.to_string()),
            time = number_cell(
                entry.duration_s,
                &units::or_dash(entry.duration_s.map(|s| format!("{s:.2} s")))
            ),
            kernels = number_cell(Some(entry.kernels as f64), &entry.kernels.to_string()),
            ktime = match shown.kernel_time {
                true => number_cell(
                    entry.total_kernel_ns,
                    &units::or_dash(entry.total_kernel_ns.map(units::time_ns)),
                ),
                false => String::new(),
            },
            speedup = match shown.speedup {
                true => number_cell(
                    speedup.map(|s| s.value),
                    &units::or_dash(speedup.map(|s| {
                        format!("{:.2}× [{:.2}–{:.2}]", s.value, s.ci_low, s.ci_high)
                    })),
                ),
                false => String::new(),
            },
            findings = match shown.findings {
                true => text_cell(&findings),
                false => String::new(),
            },
            note = note_cell(
                &note(entry),
                tails.get(&entry.id).map_or(&[][..], Vec::as_slice)
            ),
        );
    }
    body.push_str("</tbody></table>");
    page(&format!("polyprof batch — {root}"), &body)
}

/// The note, then the stderr tail (if any) in a closed `<details>`: the table stays one line a
/// job until a reader opens it.
fn note_cell(note: &str, tail: &[String]) -> String {
    if tail.is_empty() {
        return text_cell(note);
    }
    format!(
        "<td>{}<details class=\"stderr-tail\"><summary>stderr (last {} lines)</summary>\
         <pre style=\"white-space:pre-wrap;overflow-wrap:anywhere;max-height:24em;\
         overflow:auto\">{}</pre></details></td>",
        escape(note),
        tail.len(),
        escape(&tail.join("\n"))
    )
}

/// Which of the columns that may have no value at all are shown.
struct Optional {
    kernel_time: bool,
    speedup: bool,
    findings: bool,
}

/// How a job ended in a few words: its top kernel, or its outcome and last error.
fn note(entry: &BatchEntry) -> String {
    if entry.state == EntryState::Succeeded && entry.eval.as_ref().is_none_or(|e| e.passed) {
        return entry
            .top_kernel
            .as_ref()
            .map(|k| format!("top kernel {k}"))
            .unwrap_or_default();
    }
    let mut parts = Vec::new();
    if let Some(outcome) = &entry.outcome {
        parts.push(outcome.to_string());
    }
    if let Some(failure) = entry.eval.as_ref().and_then(|e| e.failure.as_ref()) {
        parts.push(format!("stopped: {failure}"));
    }
    if let Some(error) = entry.device_error.as_ref().or(entry.errors.last()) {
        parts.push(error.chars().take(300).collect());
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::batch::{Backend, EvalSummary};

    fn entry(id: &str, state: EntryState, passed: Option<bool>) -> BatchEntry {
        BatchEntry {
            state,
            eval: passed.map(|passed| EvalSummary {
                passed,
                status: if passed { "correct" } else { "incorrect" }.to_string(),
                device: "cuda".to_string(),
                ..Default::default()
            }),
            ..BatchEntry::pending(id, Default::default())
        }
    }

    #[test]
    fn jobs_that_did_not_succeed_come_first_then_the_job_file_order() {
        let index = BatchIndex::new(
            "jobs.toml",
            Backend::Local,
            [
                entry("a", EntryState::Succeeded, None),
                entry("b", EntryState::Failed, None),
                entry("c", EntryState::Succeeded, Some(false)),
                entry("d", EntryState::Crashed, None),
                entry("e", EntryState::Succeeded, Some(true)),
            ],
        );
        let ids: Vec<&str> = ordered(&index).iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["d", "b", "c", "a", "e"]);
        let html = render(&index, "root", &JobLinks::new());
        assert!(html.find("data-job=\"d\"") < html.find("data-job=\"a\""));
        assert!(html.contains("not passed: incorrect"));
    }

    #[test]
    fn a_failed_jobs_stderr_tail_is_collapsed_under_its_note_and_escaped() {
        let mut failed = entry("b", EntryState::Failed, None);
        failed.outcome = Some(crate::model::outcome::Outcome::Exited { code: 3 });
        let index = BatchIndex::new(
            "jobs.toml",
            Backend::Local,
            [failed, entry("a", EntryState::Succeeded, None)],
        );
        let tails = StderrTails::from([(
            "b".to_string(),
            vec![
                "preparing".to_string(),
                "<script>diverged</script>".to_string(),
            ],
        )]);
        let html = render_with_tails(&index, "root", &JobLinks::new(), &tails);
        let row = &html[html.find("data-job=\"b\"").unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(row.contains("exited with code 3"), "{row}");
        assert!(
            row.contains("<details class=\"stderr-tail\"><summary>stderr (last 2 lines)"),
            "{row}"
        );
        assert!(row.contains("preparing\n&lt;script&gt;diverged"), "{row}");
        assert!(!html.contains("<script>diverged"));
        // No tail, no details: the page without tails is the same as before.
        assert!(!render(&index, "root", &JobLinks::new()).contains("<details"));
    }
}
