//! Executing a [`Plan`]: steps in order, each with its own end marker and graces, retries until a
//! validator accepts an attempt, later steps skipped after a failure unless they ask to run.

use std::path::{Path, PathBuf};

use crate::model::outcome::RunResult;
use crate::model::plan::{CommandSpec, Plan, RetryPolicy, Step, Validator};
use crate::model::run::StepRun;
use crate::pipeline::runner::{RunOptions, run_command};

/// Where a step's command runs: a local process group ([`LocalRunner`]) or a container
/// (`pipeline::container`). Everything else about a plan (markers, graces, retries,
/// validators, skipping) is the same for both.
#[async_trait::async_trait]
pub trait CommandRunner: Send + Sync {
    async fn run(&self, spec: &CommandSpec, opts: &RunOptions) -> RunResult;
}

/// Runs commands as local supervised processes.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalRunner;

#[async_trait::async_trait]
impl CommandRunner for LocalRunner {
    async fn run(&self, spec: &CommandSpec, opts: &RunOptions) -> RunResult {
        run_command(spec, opts).await
    }
}

/// Run every step of `plan`. `base` carries the job's options (timeouts, environment,
/// cancellation, line sink, limits); each step sets its marker and graces, and each attempt logs
/// to `<output_dir>/<step>.<attempt>.{stdout,stderr}.log`.
pub async fn execute_plan(plan: &Plan, base: &RunOptions, output_dir: &Path) -> Vec<StepRun> {
    execute_plan_with(&LocalRunner, plan, base, output_dir).await
}

/// [`execute_plan`] with each command run by `runner`.
pub async fn execute_plan_with(
    runner: &dyn CommandRunner,
    plan: &Plan,
    base: &RunOptions,
    output_dir: &Path,
) -> Vec<StepRun> {
    let mut runs: Vec<StepRun> = Vec::with_capacity(plan.steps.len());
    let mut failed: Option<String> = None;
    for step in &plan.steps {
        if base.cancel.is_cancelled() {
            runs.push(skipped(step, "skipped: the run was cancelled".to_string()));
            continue;
        }
        if let Some(previous) = &failed
            && !step.run_after_failure
        {
            runs.push(skipped(step, format!("skipped: step `{previous}` failed")));
            continue;
        }
        let run = execute_step_with(runner, step, base, output_dir).await;
        if !run.accepted && failed.is_none() {
            failed = Some(step.name.clone());
        }
        runs.push(run);
    }
    runs
}

fn skipped(step: &Step, why: String) -> StepRun {
    StepRun {
        name: step.name.clone(),
        attempts: Vec::new(),
        accepted: false,
        rejection: Some(why),
    }
}

/// Run one step, with its retries.
pub async fn execute_step(step: &Step, base: &RunOptions, output_dir: &Path) -> StepRun {
    execute_step_with(&LocalRunner, step, base, output_dir).await
}

/// [`execute_step`] with each attempt run by `runner`.
pub async fn execute_step_with(
    runner: &dyn CommandRunner,
    step: &Step,
    base: &RunOptions,
    output_dir: &Path,
) -> StepRun {
    let max_attempts = step.retry.as_ref().map_or(1, |r| r.max_attempts.max(1));
    let mut run = StepRun {
        name: step.name.clone(),
        attempts: Vec::new(),
        accepted: false,
        rejection: None,
    };
    for attempt in 1..=max_attempts {
        let mut cleanup_warnings = Vec::new();
        if let Some(retry) = &step.retry {
            clean(retry, output_dir, &mut cleanup_warnings);
        }
        let mut opts = base.clone();
        opts.end_marker = step.end_marker.clone();
        opts.graces = step.graces;
        opts.log_dir = Some(output_dir.to_path_buf());
        opts.log_name = format!("{}.{attempt}", step.name);
        opts.stdout_file = step.stdout_file.clone();
        let mut result = runner.run(&step.command, &opts).await;
        result.warnings.splice(0..0, cleanup_warnings);
        let verdict = validate(step.retry.as_ref().map(|r| &r.validator), &result).await;
        let cancelled = matches!(result.outcome, crate::model::Outcome::Cancelled);
        run.attempts.push(result);
        match verdict {
            Ok(()) => {
                run.accepted = true;
                run.rejection = None;
                break;
            }
            Err(why) => {
                run.rejection = Some(if max_attempts > 1 {
                    format!("attempt {attempt} of {max_attempts}: {why}")
                } else {
                    why.to_string()
                });
                if cancelled {
                    break;
                }
            }
        }
    }
    run
}

/// Remove the files whose names start with one of the policy's prefixes, so an older attempt's
/// output is never taken for this one's.
fn clean(retry: &RetryPolicy, dir: &Path, warnings: &mut Vec<String>) {
    if retry.clean_prefixes.is_empty() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        let stale = is_file
            && retry
                .clean_prefixes
                .iter()
                .any(|p| name.starts_with(p.as_str()));
        if stale && let Err(e) = std::fs::remove_file(entry.path()) {
            warnings.push(format!(
                "cannot remove stale {}: {e}",
                entry.path().display()
            ));
        }
    }
}

/// Why an attempt was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum Rejection {
    /// The command itself did not succeed.
    #[error("{0}")]
    Outcome(crate::model::Outcome),
    #[error("no file starting with `{prefix}` in {}", dir.display())]
    NoFile { prefix: String, dir: PathBuf },
    #[error("cannot open {}: {source}", path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} has {lines} lines, fewer than the {min_lines} required", path.display())]
    TooFewLines {
        path: PathBuf,
        lines: usize,
        min_lines: usize,
    },
    #[error("validator failed: {0}")]
    Task(String),
}

async fn validate(validator: Option<&Validator>, result: &RunResult) -> Result<(), Rejection> {
    if !result.outcome.is_success() {
        return Err(Rejection::Outcome(result.outcome.clone()));
    }
    match validator {
        None | Some(Validator::ExitZero) => Ok(()),
        Some(Validator::FileMinLines {
            dir,
            prefix,
            min_lines,
        }) => {
            let (dir, prefix, min_lines) = (dir.clone(), prefix.clone(), *min_lines);
            tokio::task::spawn_blocking(move || check_file_min_lines(&dir, &prefix, min_lines))
                .await
                .unwrap_or_else(|e| Err(Rejection::Task(e.to_string())))
        }
    }
}

/// The newest file (by modification time) in `dir` whose name starts with `prefix`.
pub fn newest_with_prefix(dir: &Path, prefix: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(prefix))
        })
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            meta.is_file().then(|| (meta.modified().ok(), e.path()))
        })
        .max()
        .map(|(_, path)| path)
}

fn check_file_min_lines(dir: &Path, prefix: &str, min_lines: usize) -> Result<(), Rejection> {
    use std::io::Read;
    let path = newest_with_prefix(dir, prefix).ok_or_else(|| Rejection::NoFile {
        prefix: prefix.to_string(),
        dir: dir.to_path_buf(),
    })?;
    let mut file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(source) => return Err(Rejection::Open { path, source }),
    };
    let mut buf = vec![0u8; 64 * 1024];
    let (mut lines, mut last) = (0usize, b'\n');
    loop {
        let n = match file.read(&mut buf) {
            Ok(n) => n,
            Err(source) => return Err(Rejection::Read { path, source }),
        };
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
        last = buf[n - 1];
        if lines >= min_lines {
            return Ok(());
        }
    }
    if last != b'\n' {
        lines += 1;
    }
    if lines >= min_lines {
        Ok(())
    } else {
        Err(Rejection::TooFewLines {
            path,
            lines,
            min_lines,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_file_wins_and_lines_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("metrics_a.csv");
        std::fs::write(&old, "1\n2\n3\n").unwrap();
        let new = dir.path().join("metrics_b.csv");
        std::fs::write(&new, "1\n2").unwrap();
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(past)
            .unwrap();
        assert_eq!(newest_with_prefix(dir.path(), "metrics_"), Some(new));
        assert!(check_file_min_lines(dir.path(), "metrics_", 2).is_ok());
        let err = check_file_min_lines(dir.path(), "metrics_", 3)
            .unwrap_err()
            .to_string();
        assert!(err.contains("has 2 lines"), "{err}");
        assert!(check_file_min_lines(dir.path(), "nothing", 1).is_err());
    }
}
