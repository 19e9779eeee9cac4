//! What Slurm says about one array task, whichever command said it (`squeue --json`,
//! `sacct --json`, `scontrol show job`, the jobcomp file), and the array index lists Slurm
//! reads and writes (`0-3,7,9-12%4`). Pure: the parsers beside this file fill these.

use std::collections::BTreeSet;

/// A Slurm job state, by the names every Slurm command prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlurmState {
    Pending,
    Running,
    Suspended,
    Completing,
    Completed,
    Cancelled,
    Failed,
    Timeout,
    NodeFail,
    Preempted,
    BootFail,
    Deadline,
    OutOfMemory,
    /// REQUEUED, REQUEUE_HOLD, REQUEUE_FED: going back to pending.
    Requeued,
    /// Anything else (a state a newer Slurm added), kept by name.
    Other(String),
}

impl SlurmState {
    /// Read a state name; `CANCELLED by 0` (sacct's text form) and flags after `+` are accepted.
    pub fn parse(text: &str) -> SlurmState {
        let name = text
            .split(|c: char| c.is_whitespace() || c == '+')
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        match name.as_str() {
            "PENDING" | "PD" => SlurmState::Pending,
            "RUNNING" | "R" | "CONFIGURING" | "CF" | "RESIZING" | "SIGNALING" | "STAGE_OUT" => {
                SlurmState::Running
            }
            "SUSPENDED" | "S" | "STOPPED" | "ST" => SlurmState::Suspended,
            "COMPLETING" | "CG" => SlurmState::Completing,
            "COMPLETED" | "CD" => SlurmState::Completed,
            "CANCELLED" | "CA" => SlurmState::Cancelled,
            "FAILED" | "F" => SlurmState::Failed,
            "TIMEOUT" | "TO" => SlurmState::Timeout,
            "NODE_FAIL" | "NF" => SlurmState::NodeFail,
            "PREEMPTED" | "PR" => SlurmState::Preempted,
            "BOOT_FAIL" | "BF" => SlurmState::BootFail,
            "DEADLINE" | "DL" => SlurmState::Deadline,
            "OUT_OF_MEMORY" | "OOM" => SlurmState::OutOfMemory,
            "REQUEUED" | "RQ" | "REQUEUE_HOLD" | "REQUEUE_FED" => SlurmState::Requeued,
            _ => SlurmState::Other(name),
        }
    }

    /// The name Slurm prints.
    pub fn name(&self) -> &str {
        match self {
            SlurmState::Pending => "PENDING",
            SlurmState::Running => "RUNNING",
            SlurmState::Suspended => "SUSPENDED",
            SlurmState::Completing => "COMPLETING",
            SlurmState::Completed => "COMPLETED",
            SlurmState::Cancelled => "CANCELLED",
            SlurmState::Failed => "FAILED",
            SlurmState::Timeout => "TIMEOUT",
            SlurmState::NodeFail => "NODE_FAIL",
            SlurmState::Preempted => "PREEMPTED",
            SlurmState::BootFail => "BOOT_FAIL",
            SlurmState::Deadline => "DEADLINE",
            SlurmState::OutOfMemory => "OUT_OF_MEMORY",
            SlurmState::Requeued => "REQUEUED",
            SlurmState::Other(name) => name,
        }
    }

    /// Whether Slurm is done with the task: it will not run (again) by itself. A requeued task
    /// is not final, it goes back to pending; nor is a state this code does not know.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            SlurmState::Completed
                | SlurmState::Cancelled
                | SlurmState::Failed
                | SlurmState::Timeout
                | SlurmState::NodeFail
                | SlurmState::Preempted
                | SlurmState::BootFail
                | SlurmState::Deadline
                | SlurmState::OutOfMemory
        )
    }

    /// Whether the task's process is (or may be) running now.
    pub fn is_active(&self) -> bool {
        matches!(
            self,
            SlurmState::Running | SlurmState::Suspended | SlurmState::Completing
        )
    }
}

/// One array task as a Slurm command reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskReport {
    /// The array's job id (the number `sbatch --parsable` printed).
    pub array_job_id: String,
    pub task_id: u32,
    pub state: SlurmState,
    /// Scheduler's reason (`Resources`, `BeginTime`, `NonZeroExitCode`), when not `None`.
    pub reason: Option<String>,
    /// Node list it ran (or runs) on.
    pub node: Option<String>,
    /// The batch script's exit code, when it exited by itself.
    pub exit_code: Option<i32>,
    /// Times Slurm requeued it.
    pub restarts: u32,
}

/// Expand an array index list (`0-3,7,9-13:2%4`; brackets allowed) into its indices.
pub fn expand_indices(spec: &str) -> Option<BTreeSet<u32>> {
    let spec = spec.trim().trim_start_matches('[').trim_end_matches(']');
    // `%N` is the throttle, not an index.
    let spec = spec.split('%').next().unwrap_or("");
    let mut out = BTreeSet::new();
    if spec.is_empty() {
        return Some(out);
    }
    for part in spec.split(',') {
        let (range, step) = match part.split_once(':') {
            Some((range, step)) => (range, step.trim().parse::<u32>().ok().filter(|s| *s > 0)?),
            None => (part, 1),
        };
        match range.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?);
                if a > b {
                    return None;
                }
                out.extend((a..=b).step_by(step as usize));
            }
            None => {
                out.insert(range.trim().parse().ok()?);
            }
        }
    }
    Some(out)
}

/// The shortest `--array` list for `indices` (runs folded into `a-b`), with `%max` appended.
pub fn compress_indices(indices: &BTreeSet<u32>, max_parallel: Option<u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = indices.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    let mut spec = parts.join(",");
    if let Some(max) = max_parallel {
        spec.push_str(&format!("%{max}"));
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_from_every_spelling() {
        assert_eq!(SlurmState::parse("CANCELLED by 0"), SlurmState::Cancelled);
        assert_eq!(SlurmState::parse("NODE_FAIL"), SlurmState::NodeFail);
        assert_eq!(SlurmState::parse("PD"), SlurmState::Pending);
        assert_eq!(SlurmState::parse("RUNNING+COMPLETING"), SlurmState::Running);
        assert_eq!(
            SlurmState::parse("weird"),
            SlurmState::Other("WEIRD".into())
        );
        assert!(!SlurmState::Requeued.is_final());
        assert!(SlurmState::NodeFail.is_final());
        assert!(!SlurmState::Other("X".into()).is_final());
    }

    #[test]
    fn index_lists_expand_and_compress() {
        let got = expand_indices("[2-3%3]").unwrap();
        assert_eq!(got.into_iter().collect::<Vec<_>>(), vec![2, 3]);
        let got = expand_indices("0-6:3,9").unwrap();
        assert_eq!(got.into_iter().collect::<Vec<_>>(), vec![0, 3, 6, 9]);
        assert!(expand_indices("3-1").is_none());
        assert!(expand_indices("x").is_none());
        let set: BTreeSet<u32> = [0, 1, 2, 3, 5, 7, 8].into_iter().collect();
        assert_eq!(compress_indices(&set, Some(4)), "0-3,5,7-8%4");
        assert_eq!(
            expand_indices(&compress_indices(&set, Some(4))).unwrap(),
            set
        );
        assert_eq!(compress_indices(&BTreeSet::from([4]), None), "4");
    }
}
