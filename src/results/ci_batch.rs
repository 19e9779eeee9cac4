//! A batch index as CI test cases: one per job, in the job file's order. A job that succeeded
//! passes (an eval job only when its verdict passed); one that failed or timed out fails with
//! its outcome and last error; one that crashed or was lost is an error (polyprof, the profiler
//! or the infrastructure, not the job); one the cascade skipped, or that never ran, is skipped.

use crate::model::batch::{BatchEntry, BatchIndex, EntryState};
use crate::results::ci::{CaseResult, CiCase, CiSuite};
use crate::results::units;

/// The outcome and the last error (or the device's error line), as one line.
fn reason(entry: &BatchEntry) -> String {
    let mut parts = Vec::new();
    if let Some(outcome) = &entry.outcome {
        parts.push(outcome.to_string());
    }
    if let Some(error) = entry.device_error.as_ref().or(entry.errors.last()) {
        parts.push(error.clone());
    }
    if parts.is_empty() {
        parts.push(entry.state.to_string());
    }
    parts.join("; ")
}

fn result(entry: &BatchEntry, stderr_tail: &[String]) -> CaseResult {
    let mut detail = entry.errors.join("\n");
    if !stderr_tail.is_empty() {
        if !detail.is_empty() {
            detail.push('\n');
        }
        detail.push_str(&format!(
            "stderr (last {} lines):\n{}",
            stderr_tail.len(),
            stderr_tail.join("\n")
        ));
    }
    match entry.state {
        EntryState::Succeeded => match &entry.eval {
            Some(eval) if !eval.passed => {
                let mut message = format!("the candidate did not pass ({})", eval.status);
                if !eval.findings.is_empty() {
                    message.push_str(&format!("; findings: {}", eval.findings.join(", ")));
                }
                if let Some(failure) = &eval.failure {
                    message.push_str(&format!("; stopped: {failure}"));
                }
                CaseResult::failed(message, detail)
            }
            _ => CaseResult::Passed,
        },
        EntryState::Failed | EntryState::TimedOut | EntryState::Cancelled => {
            CaseResult::failed(format!("{}: {}", entry.state, reason(entry)), detail)
        }
        EntryState::Crashed | EntryState::Lost => {
            CaseResult::error(format!("{}: {}", entry.state, reason(entry)), detail)
        }
        EntryState::Skipped => CaseResult::skipped(
            entry
                .cascade
                .as_ref()
                .and_then(|c| c.skip.as_ref())
                .map_or_else(
                    || "skipped".to_string(),
                    |s| format!("skipped by the {} stage: {}", s.decided_by, s.reason),
                ),
        ),
        EntryState::Pending | EntryState::Running => {
            CaseResult::skipped(format!("{}: the batch ended before it did", entry.state))
        }
    }
}

fn case(entry: &BatchEntry, stderr_tail: &[String]) -> CiCase {
    let classname = match &entry.cascade {
        Some(stage) => format!("polyprof.batch.{}.{}", stage.problem, stage.stage),
        None => "polyprof.batch".to_string(),
    };
    let note = match &entry.eval {
        Some(eval) => eval
            .speedup
            .map(|s| format!("speedup {:.2}× [{:.2}–{:.2}]", s.value, s.ci_low, s.ci_high))
            .unwrap_or_default(),
        // A job that did not succeed: its stderr's last line says why, where the table has
        // room for one line.
        None if entry.state != EntryState::Succeeded => stderr_tail
            .iter()
            .rev()
            .find(|line| !line.trim().is_empty())
            .cloned()
            .unwrap_or_default(),
        None => entry.top_kernel.clone().unwrap_or_default(),
    };
    CiCase {
        name: entry.id.clone(),
        classname,
        time_s: entry.duration_s,
        result: result(entry, stderr_tail),
        cells: vec![
            entry.state.to_string(),
            entry.device.clone().unwrap_or_else(|| "-".to_string()),
            entry.attempts.to_string(),
            units::or_dash(entry.duration_s.map(|s| format!("{s:.2} s"))),
            note,
        ],
    }
}

/// The batch as one suite, its jobs in the job file's order (ids missing from `order` after).
pub fn suite(index: &BatchIndex) -> CiSuite {
    suite_with_tails(index, &std::collections::BTreeMap::new())
}

/// [`suite`], each job that did not succeed carrying the last lines of its stderr
/// (`stderr_tails`, by job id; the caller reads them from the job's run.json).
pub fn suite_with_tails(
    index: &BatchIndex,
    stderr_tails: &std::collections::BTreeMap<String, Vec<String>>,
) -> CiSuite {
    let mut suite = CiSuite::new(
        "polyprof batch",
        &["state", "device", "attempts", "time", "note"],
    );
    let mut ids: Vec<&String> = index
        .order
        .iter()
        .filter(|id| index.jobs.contains_key(*id))
        .collect();
    ids.extend(index.jobs.keys().filter(|id| !index.order.contains(id)));
    suite.cases = ids
        .into_iter()
        .filter_map(|id| index.jobs.get(id))
        .map(|entry| {
            let tail = stderr_tails.get(&entry.id).map_or(&[][..], Vec::as_slice);
            case(entry, tail)
        })
        .collect();
    let counts: Vec<String> = index
        .counts()
        .iter()
        .map(|(state, n)| format!("{n} {state}"))
        .collect();
    suite.summary = vec![format!(
        "job file {}: {} jobs ({})",
        index.job_file,
        index.jobs.len(),
        counts.join(", ")
    )];
    if let Some(cascade) = &index.cascade {
        suite.summary.push(format!(
            "the cascade saved about {:.1} device seconds",
            cascade.saved_device_s
        ));
    }
    suite.time_s = Some(index.updated_unix_s - index.started_unix_s).filter(|s| *s >= 0.0);
    suite
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::batch::{Backend, CascadeSkip, CascadeStage};

    #[test]
    fn each_state_maps_to_its_result_in_job_file_order() {
        let mut entries = Vec::new();
        for (id, state) in [
            ("ok", EntryState::Succeeded),
            ("bad", EntryState::Failed),
            ("boom", EntryState::Crashed),
            ("cut", EntryState::Skipped),
        ] {
            let mut entry = BatchEntry::pending(id, Default::default());
            entry.state = state;
            entry.duration_s = Some(1.5);
            entries.push(entry);
        }
        entries[1].errors = vec!["exited with code 3".into()];
        entries[3].cascade = Some(CascadeStage {
            problem: "mm".into(),
            candidate: "c".into(),
            stage: "profile".into(),
            skip: Some(CascadeSkip {
                decided_by: "time".into(),
                reason: "2.0 ms is beyond 1.1 × the best".into(),
                ..Default::default()
            }),
        });
        let index = BatchIndex::new("jobs.jsonl", Backend::Local, entries);
        let suite = suite(&index);
        let results: Vec<(&str, &str)> = suite
            .cases
            .iter()
            .map(|c| (c.name.as_str(), c.result.name()))
            .collect();
        assert_eq!(
            results,
            [
                ("ok", "passed"),
                ("bad", "failed"),
                ("boom", "error"),
                ("cut", "skipped")
            ]
        );
        assert!(
            suite.cases[1]
                .result
                .message()
                .contains("exited with code 3")
        );
        assert!(
            suite.cases[3]
                .result
                .message()
                .contains("time stage: 2.0 ms")
        );
        assert_eq!(suite.cases[3].classname, "polyprof.batch.mm.profile");
        assert_eq!(suite.cases[0].time_s, Some(1.5));
    }
}
