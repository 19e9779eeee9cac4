//! The two `Key=Value` text forms: `scontrol show job` (22.05 has no `--json` for it; records
//! separated by blank lines) and the jobcomp/filetxt file (one line per finished job), which is
//! where finished tasks are found once squeue has forgotten them and no slurmdbd runs.

use super::report::{SlurmState, TaskReport, expand_indices};

/// The tasks of array `array_job_id` in `scontrol show job <id>` output.
pub fn parse_scontrol(text: &str, array_job_id: &str) -> Vec<TaskReport> {
    text.split("\n\n")
        .flat_map(|record| reports(&pairs(record), array_job_id))
        .collect()
}

/// The tasks of array `array_job_id` in a jobcomp/filetxt file. A task requeued and run
/// again has a line per run; the last line wins.
pub fn parse_jobcomp(text: &str, array_job_id: &str) -> Vec<TaskReport> {
    let mut out: Vec<TaskReport> = Vec::new();
    for line in text.lines() {
        for report in reports(&pairs(line), array_job_id) {
            match out.iter_mut().find(|r| r.task_id == report.task_id) {
                Some(slot) => *slot = report,
                None => out.push(report),
            }
        }
    }
    out
}

/// What the driver needs from `scontrol show config`: where finished tasks can be read back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterConfig {
    /// `sacct` works (accounting goes to slurmdbd).
    pub accounting: bool,
    /// The jobcomp/filetxt file, when that plugin is configured.
    pub jobcomp_file: Option<String>,
    /// Largest array index + 1.
    pub max_array_size: Option<u32>,
}

/// Read `scontrol show config` (`Key = Value` lines).
pub fn parse_config(text: &str) -> ClusterConfig {
    let mut config = ClusterConfig::default();
    let mut jobcomp_type = None;
    let mut jobcomp_loc = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "AccountingStorageType" => config.accounting = value.ends_with("/slurmdbd"),
            "JobCompType" => jobcomp_type = Some(value.to_string()),
            "JobCompLoc" => jobcomp_loc = Some(value.to_string()),
            "MaxArraySize" => config.max_array_size = value.parse().ok(),
            _ => {}
        }
    }
    if jobcomp_type.as_deref() == Some("jobcomp/filetxt") {
        config.jobcomp_file = jobcomp_loc.filter(|l| l.starts_with('/'));
    }
    config
}

fn reports(pairs: &[(&str, &str)], array_job_id: &str) -> Vec<TaskReport> {
    let get = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .filter(|v| !v.is_empty() && *v != "(null)")
    };
    if get("ArrayJobId") != Some(array_job_id) {
        return Vec::new();
    }
    let Some(tasks) = get("ArrayTaskId").and_then(expand_indices) else {
        return Vec::new();
    };
    let state = SlurmState::parse(get("JobState").unwrap_or(""));
    // `ExitCode=3:0` is exit:signal; a signal death has no exit code.
    let exit_code = get("ExitCode").and_then(|v| {
        let (code, signal) = v.split_once(':').unwrap_or((v, "0"));
        (signal == "0").then(|| code.parse().ok()).flatten()
    });
    tasks
        .into_iter()
        .map(|task_id| TaskReport {
            array_job_id: array_job_id.to_string(),
            task_id,
            state: state.clone(),
            reason: get("Reason").filter(|r| *r != "None").map(str::to_string),
            node: get("NodeList").map(str::to_string),
            exit_code,
            restarts: get("Restarts").and_then(|r| r.parse().ok()).unwrap_or(0),
        })
        .collect()
}

/// `Key=Value` words. A value runs to the next word that starts a new key, so a value with a
/// space (a WorkDir) stays whole as long as its second half has no `=`.
fn pairs(text: &str) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        match word.split_once('=') {
            Some((key, value)) if is_key(key) => out.push((key, value)),
            _ => {
                // A continuation of the previous value; re-slice it to include this word.
                if let Some(last) = out.last_mut() {
                    let start = last.1.as_ptr() as usize - text.as_ptr() as usize;
                    let stop = word.as_ptr() as usize - text.as_ptr() as usize + word.len();
                    last.1 = &text[start..stop];
                }
            }
        }
        rest = rest[end..].trim_start();
    }
    out
}

fn is_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '/' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/slurm/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn scontrol_running_and_pending() {
        let reports = parse_scontrol(&fixture("scontrol-array-running-pending.txt"), "9");
        let mut ids: Vec<u32> = reports.iter().map(|r| r.task_id).collect();
        ids.sort();
        assert_eq!(ids, vec![0, 1, 2, 3]);
        let first = reports.iter().find(|r| r.task_id == 0).unwrap();
        assert_eq!(first.state, SlurmState::Running);
        assert_eq!(first.node.as_deref(), Some("localhost"));
        let last = reports.iter().find(|r| r.task_id == 3).unwrap();
        assert_eq!(last.state, SlurmState::Pending);
        assert_eq!(last.reason.as_deref(), Some("Resources"));
        assert_eq!(last.node, None);
    }

    #[test]
    fn scontrol_cancelled() {
        let reports = parse_scontrol(&fixture("scontrol-cancelled.txt"), "9");
        assert_eq!(reports.len(), 4);
        assert!(reports.iter().all(|r| r.state == SlurmState::Cancelled));
    }

    #[test]
    fn jobcomp_lines() {
        let reports = parse_jobcomp(&fixture("jobcomp-local.txt"), "1");
        assert_eq!(reports.len(), 6);
        assert!(reports.iter().all(|r| r.state == SlurmState::Completed
            && r.exit_code == Some(0)
            && r.node.as_deref() == Some("localhost")));
    }

    #[test]
    fn node_fail_then_requeued_run_in_docker_cluster() {
        let text = fixture("docker-jobcomp-node-fail-requeue.txt");
        // Array 1 ran with --no-requeue: task 1's node was stopped.
        let lost = parse_jobcomp(&text, "1");
        let task1 = lost.iter().find(|r| r.task_id == 1).unwrap();
        assert_eq!(task1.state, SlurmState::NodeFail);
        assert_eq!(task1.node.as_deref(), Some("n2"));
        // Array 2 was requeued after the node failure; its second run's line wins.
        let requeued = parse_jobcomp(&text, "2");
        assert!(requeued.iter().all(|r| r.state == SlurmState::Completed));
        let scontrol = parse_scontrol(&fixture("docker-scontrol-node-fail.txt"), "1");
        let task1 = scontrol.iter().find(|r| r.task_id == 1).unwrap();
        assert_eq!(task1.state, SlurmState::NodeFail);
        assert_eq!(task1.reason.as_deref(), Some("NodeDown"));
        let scontrol = parse_scontrol(&fixture("docker-scontrol-requeued.txt"), "2");
        let task0 = scontrol.iter().find(|r| r.task_id == 0).unwrap();
        assert_eq!(
            (task0.state.clone(), task0.restarts),
            (SlurmState::Pending, 1)
        );
    }

    #[test]
    fn timeout_and_plain_jobs() {
        let text = fixture("jobcomp-local.txt");
        // Job 7 (TIMEOUT) and 8 (FAILED) are not arrays: no task of any array.
        assert!(parse_jobcomp(&text, "7").is_empty());
        assert!(text.contains("JobState=TIMEOUT"));
        // The pending remainder of a cancelled array is one line without array fields: only
        // the tasks that had started are listed.
        let cancelled = parse_jobcomp(&text, "9");
        assert_eq!(cancelled.len(), 2);
        assert!(cancelled.iter().all(|r| r.state == SlurmState::Cancelled));
    }

    #[test]
    fn config_of_the_local_cluster() {
        let config = parse_config(&fixture("scontrol-show-config.txt"));
        assert!(!config.accounting);
        assert_eq!(
            config.jobcomp_file.as_deref(),
            Some("/tmp/pplocal/log/jobcomp.txt")
        );
        assert_eq!(config.max_array_size, Some(1001));
    }

    #[test]
    fn values_with_spaces_and_signals() {
        let line = "JobId=5 JobState=FAILED WorkDir=/tmp/a b NodeList=n1 ArrayJobId=4 ArrayTaskId=1 ExitCode=0:9";
        let reports = parse_jobcomp(line, "4");
        assert_eq!(reports[0].state, SlurmState::Failed);
        assert_eq!(reports[0].exit_code, None);
        assert_eq!(pairs(line)[2], ("WorkDir", "/tmp/a b"));
    }
}
