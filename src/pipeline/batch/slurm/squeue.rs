//! `squeue --json` (and `sacct --json`): the tasks of one job array. Read through
//! `serde_json::Value` by field name, so both the 22.05 layout (`"job_state": "RUNNING"`,
//! `"array_task_id": 3`, `"exit_code": 768` as a wait status) and the newer one (state lists,
//! `{"set": true, "number": 3}` numbers, `{"return_code": …}` exit codes) read. 22.05's
//! `squeue --json` ignores `--jobs`, so the records are filtered by array job id here.

use serde_json::Value;

use super::report::{SlurmState, TaskReport, expand_indices};
use crate::model::error::{Error, Result};

/// The tasks of array `array_job_id` in `squeue --json` output. A pending remainder that Slurm
/// still holds as one record (`"array_task_string": "2-19%4"`) is expanded into its tasks.
pub fn parse_squeue(text: &str, array_job_id: &str) -> Result<Vec<TaskReport>> {
    let doc = parse_doc(text, "squeue --json output")?;
    let jobs = doc
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or_else(|| parse_error("squeue --json output", "no `jobs` list"))?;
    let mut out = Vec::new();
    for job in jobs {
        if number(job.get("array_job_id"))
            .map(|n| n.to_string())
            .as_deref()
            != Some(array_job_id)
        {
            continue;
        }
        let report = |task_id| TaskReport {
            array_job_id: array_job_id.to_string(),
            task_id,
            state: state(job.get("job_state")),
            reason: text_field(job, "state_reason").filter(|r| r != "None"),
            node: text_field(job, "nodes"),
            exit_code: exit_code(job.get("exit_code")),
            restarts: number(job.get("restart_cnt")).unwrap_or(0) as u32,
        };
        match number(job.get("array_task_id")) {
            Some(task) => out.push(report(task as u32)),
            None => {
                let spec = text_field(job, "array_task_string").unwrap_or_default();
                for task in expand_indices(&spec).unwrap_or_default() {
                    out.push(report(task));
                }
            }
        }
    }
    Ok(out)
}

/// The tasks of array `array_job_id` in `sacct --json` output (`array.job_id`,
/// `array.task_id`, `state.current`, `exit_code.return_code`, `nodes`, `requeue`).
/// sacct lists every run of a requeued task; the last one (highest job id) is kept.
pub fn parse_sacct(text: &str, array_job_id: &str) -> Result<Vec<TaskReport>> {
    let doc = parse_doc(text, "sacct --json output")?;
    let jobs = doc
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or_else(|| parse_error("sacct --json output", "no `jobs` list"))?;
    let mut out: Vec<(u64, TaskReport)> = Vec::new();
    for job in jobs {
        let array = job.get("array").unwrap_or(&Value::Null);
        if number(array.get("job_id"))
            .map(|n| n.to_string())
            .as_deref()
            != Some(array_job_id)
        {
            continue;
        }
        let Some(task_id) = number(array.get("task_id")) else {
            continue;
        };
        let state_value = job.get("state").unwrap_or(&Value::Null);
        let current = state_value.get("current").or(Some(state_value));
        let report = TaskReport {
            array_job_id: array_job_id.to_string(),
            task_id: task_id as u32,
            state: state(current),
            reason: state_value
                .get("reason")
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty() && *r != "None")
                .map(str::to_string),
            node: text_field(job, "nodes").filter(|n| n != "None assigned"),
            exit_code: exit_code(job.get("exit_code")),
            restarts: number(job.get("restart_cnt")).unwrap_or(0) as u32,
        };
        // 22.05 prints `return_code: 0` for a task that exited 3 (its text form says 3:0): a
        // zero beside FAILED is no exit code.
        let report = TaskReport {
            exit_code: report
                .exit_code
                .filter(|&c| c != 0 || report.state != SlurmState::Failed),
            ..report
        };
        let id = number(job.get("job_id")).unwrap_or(0);
        match out.iter_mut().find(|(_, r)| r.task_id == report.task_id) {
            Some(slot) if slot.0 <= id => *slot = (id, report),
            Some(_) => {}
            None => out.push((id, report)),
        }
    }
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

fn parse_doc(text: &str, context: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| parse_error(context, &e.to_string()))
}

fn parse_error(context: &str, message: &str) -> Error {
    Error::Parse {
        context: context.to_string(),
        message: message.to_string(),
    }
}

/// A number in either layout: `3`, or `{"set": true, "number": 3}` (`set: false` is none).
fn number(value: Option<&Value>) -> Option<u64> {
    match value? {
        Value::Number(n) => n.as_u64(),
        Value::Object(map) => {
            if map.get("set").and_then(Value::as_bool) == Some(false) {
                return None;
            }
            map.get("number").and_then(Value::as_u64)
        }
        _ => None,
    }
}

fn text_field(job: &Value, key: &str) -> Option<String> {
    job.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// `"RUNNING"`, or `["RUNNING", "COMPLETING"]` (the first is the base state).
fn state(value: Option<&Value>) -> SlurmState {
    match value {
        Some(Value::String(s)) => SlurmState::parse(s),
        Some(Value::Array(list)) => list
            .first()
            .and_then(Value::as_str)
            .map(SlurmState::parse)
            .unwrap_or_else(|| SlurmState::Other(String::new())),
        _ => SlurmState::Other(String::new()),
    }
}

/// 22.05 prints the wait status (`768` = exit 3); newer ones an object with `return_code`
/// and `signal`. A signal death has no exit code.
fn exit_code(value: Option<&Value>) -> Option<i32> {
    match value? {
        Value::Number(n) => {
            let status = n.as_i64()? as i32;
            (status & 0x7f == 0).then_some((status >> 8) & 0xff)
        }
        Value::Object(map) => {
            let signal = map
                .get("signal")
                .and_then(|s| number(s.get("id")).or_else(|| number(Some(s))));
            if signal.is_some_and(|s| s != 0) {
                return None;
            }
            number(map.get("return_code")).map(|n| n as i32)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/slurm/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn by_task(reports: &[TaskReport], task: u32) -> &TaskReport {
        reports.iter().find(|r| r.task_id == task).expect("task")
    }

    #[test]
    fn running_and_pending_remainder() {
        let reports = parse_squeue(&fixture("squeue-array-running-pending.json"), "9").unwrap();
        let mut ids: Vec<u32> = reports.iter().map(|r| r.task_id).collect();
        ids.sort();
        assert_eq!(ids, vec![0, 1, 2, 3]);
        assert_eq!(by_task(&reports, 0).state, SlurmState::Running);
        assert_eq!(by_task(&reports, 0).node.as_deref(), Some("localhost"));
        assert_eq!(by_task(&reports, 3).state, SlurmState::Pending);
        assert_eq!(by_task(&reports, 3).reason.as_deref(), Some("Resources"));
        // Other arrays and plain jobs in the same output are not this array's.
        assert!(
            parse_squeue(&fixture("squeue-array-running-pending.json"), "1")
                .unwrap()
                .iter()
                .all(|r| r.array_job_id == "1" && r.state == SlurmState::Completed)
        );
    }

    #[test]
    fn requeued_task_is_pending_with_a_restart() {
        let reports = parse_squeue(&fixture("squeue-requeued.json"), "9").unwrap();
        let task = by_task(&reports, 0);
        assert_eq!(task.state, SlurmState::Pending);
        assert_eq!(task.restarts, 1);
        assert_eq!(task.reason.as_deref(), Some("BeginTime"));
    }

    #[test]
    fn cancelled_remainder_expands() {
        let reports = parse_squeue(&fixture("squeue-cancelled-failed.json"), "9").unwrap();
        assert_eq!(reports.len(), 4);
        assert!(reports.iter().all(|r| r.state == SlurmState::Cancelled));
    }

    #[test]
    fn node_fail_and_requeue_in_docker_cluster() {
        let reports = parse_squeue(&fixture("docker-squeue-node-fail.json"), "1").unwrap();
        let task1 = by_task(&reports, 1);
        assert_eq!(task1.state, SlurmState::NodeFail);
        assert_eq!(task1.node.as_deref(), Some("n2"));
        let reports = parse_squeue(&fixture("docker-squeue-requeued.json"), "2").unwrap();
        let task0 = by_task(&reports, 0);
        assert_eq!(
            (task0.state.clone(), task0.restarts),
            (SlurmState::Pending, 1)
        );
    }

    #[test]
    fn exit_codes_in_both_layouts() {
        assert_eq!(exit_code(Some(&serde_json::json!(768))), Some(3));
        assert_eq!(exit_code(Some(&serde_json::json!(9))), None);
        let newer = serde_json::json!({"status": ["EXITED"], "return_code": {"set": true, "number": 2},
            "signal": {"id": {"set": false, "number": 0}}});
        assert_eq!(exit_code(Some(&newer)), Some(2));
    }

    #[test]
    fn newer_layout_reads() {
        let text = r#"{"jobs": [{"array_job_id": {"set": true, "number": 40}, "array_task_id": {"set": true, "number": 2},
            "job_state": ["NODE_FAIL"], "state_reason": "None", "nodes": "n2", "exit_code": 0, "restart_cnt": 0}]}"#;
        let reports = parse_squeue(text, "40").unwrap();
        assert_eq!(reports[0].state, SlurmState::NodeFail);
        assert_eq!(reports[0].task_id, 2);
        assert_eq!(reports[0].reason, None);
    }

    #[test]
    fn sacct_keeps_the_last_run_of_a_task() {
        let text = r#"{"jobs": [
            {"job_id": 41, "array": {"job_id": 40, "task_id": 1}, "state": {"current": "NODE_FAIL", "reason": "None"}, "nodes": "n2", "exit_code": {"status": "SUCCESS", "return_code": 0}},
            {"job_id": 45, "array": {"job_id": 40, "task_id": 1}, "state": {"current": "COMPLETED", "reason": "None"}, "nodes": "n1", "exit_code": {"status": "SUCCESS", "return_code": 0}},
            {"job_id": 50, "array": {"job_id": 49, "task_id": 1}, "state": {"current": "FAILED"}}]}"#;
        let reports = parse_sacct(text, "40").unwrap();
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].state, SlurmState::Completed);
        assert_eq!(reports[0].node.as_deref(), Some("n1"));
    }

    /// Real `sacct --json` of 22.05 with slurmdbd: a requeued task has two records under one
    /// job id (REQUEUED, then the run that counts); the later one wins.
    #[test]
    fn sacct_of_a_real_array() {
        let reports = parse_sacct(&fixture("sacct-array.json"), "1").unwrap();
        assert_eq!(reports.len(), 4);
        assert_eq!(by_task(&reports, 0).state, SlurmState::Completed);
        assert_eq!(by_task(&reports, 0).exit_code, Some(0));
        assert_eq!(by_task(&reports, 1).state, SlurmState::Failed);
        assert_eq!(by_task(&reports, 1).exit_code, None);
        assert_eq!(by_task(&reports, 2).state, SlurmState::Cancelled);
        assert_eq!(by_task(&reports, 2).node, None);
        assert_eq!(by_task(&reports, 3).state, SlurmState::Cancelled);
        assert_eq!(by_task(&reports, 3).node.as_deref(), Some("localhost"));
    }

    #[test]
    fn garbage_is_an_error_that_names_the_command() {
        let err = parse_squeue("Slurm accounting storage is disabled", "1").unwrap_err();
        assert!(err.to_string().contains("squeue --json"), "{err}");
    }
}
