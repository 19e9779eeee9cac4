//! Helpers of the `batch_` tests: job files and reading back what a batch wrote.

use std::path::{Path, PathBuf};

use polyprof::model::batch::{BatchEntry, BatchIndex};

/// A JSON Lines job file at `dir/jobs.jsonl` with one line per value.
pub fn write_jobs(dir: &Path, jobs: &[serde_json::Value]) -> PathBuf {
    let path = dir.join("jobs.jsonl");
    let text: String = jobs.iter().map(|j| format!("{j}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// A `sh -c SCRIPT` job.
pub fn sh_job(id: &str, script: &str) -> serde_json::Value {
    serde_json::json!({"id": id, "target": ["sh", "-c", script]})
}

pub fn index(root: &Path) -> BatchIndex {
    BatchIndex::read(root).unwrap()
}

pub fn entry(root: &Path, id: &str) -> BatchEntry {
    BatchEntry::read(&root.join("runs").join(id)).unwrap()
}

/// Lines a job appended to `dir/<id>.count` (one per run of it).
pub fn runs_of(dir: &Path, id: &str) -> usize {
    std::fs::read_to_string(dir.join(format!("{id}.count"))).map_or(0, |t| t.lines().count())
}

/// A script that appends one line to `dir/<id>.count`, then runs `rest`.
pub fn counting(dir: &Path, id: &str, rest: &str) -> String {
    format!(
        "echo run >> '{}'; {rest}",
        dir.join(format!("{id}.count")).display()
    )
}

/// `n` jobs `PREFIX0`, `PREFIX1`, … that each count their runs ([`counting`]) and then run
/// `then`, in a job file under `dir`: their ids and the file.
pub fn counted_jobs(dir: &Path, prefix: &str, n: usize, then: &str) -> (Vec<String>, PathBuf) {
    let ids: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    let jobs: Vec<_> = ids
        .iter()
        .map(|id| sh_job(id, &counting(dir, id, then)))
        .collect();
    let file = write_jobs(dir, &jobs);
    (ids, file)
}

/// `polyprof batch FILE --output-dir ROOT`, for the caller's options.
pub fn batch(file: &Path, root: &Path) -> assert_cmd::Command {
    let mut command = super::polyprof();
    command.arg("batch").arg(file).arg("--output-dir").arg(root);
    command
}

/// `polyprof batch FILE` on two CPU slots into `root`, quiet, in the background: for tests
/// that signal or kill it half way.
pub fn spawn_cpu_batch(file: &Path, root: &Path) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .arg("batch")
        .arg(file)
        .args(["--jobs", "2", "--devices", "cpu", "-q", "--output-dir"])
        .arg(root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Ctrl-C for a batch driver: SIGINT to `child`, then its exit code once it has ended.
pub fn interrupt(child: &mut std::process::Child) -> Option<i32> {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    child.wait().unwrap().code()
}
