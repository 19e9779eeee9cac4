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

/// A `problem` of four shell-script candidates under `dir` (checked, timed, the top 1
/// profiled with no profiler): `a` sleeps 0 s, `b` 0.5 s, `c` 1 s, and `bad` fails its check.
/// Each candidate counts its runs beside itself: [`CommandProblem::runs`].
pub struct CommandProblem {
    pub file: PathBuf,
    dir: PathBuf,
}

impl CommandProblem {
    pub fn new(dir: &Path) -> Self {
        let mut candidates = Vec::new();
        for (name, secs, ok) in [
            ("a", 0.0, true),
            ("b", 0.5, true),
            ("c", 1.0, true),
            ("bad", 0.0, false),
        ] {
            let path = dir.join(format!("{name}.sh"));
            let mark = if ok { "# ok" } else { "# not" };
            std::fs::write(
                &path,
                format!("{mark}\necho run >> \"$0.count\"\nsleep {secs}\n"),
            )
            .unwrap();
            candidates.push(path);
        }
        let file = write_jobs(
            dir,
            &[serde_json::json!({"problem": {
                "id": "bench",
                "target": ["sh", "{candidate}"],
                "candidates": candidates,
                "stages": ["check", "time", "profile"],
                "check": ["grep", "-q", "# ok", "{candidate}"],
                "profile": {"top_k": 1},
                "profiler": "none"
            }})],
        );
        CommandProblem {
            file,
            dir: dir.to_path_buf(),
        }
    }

    /// How often each of `a`, `b`, `c`, `bad` ran (its time and profile stages run it).
    pub fn runs(&self) -> [usize; 4] {
        ["a", "b", "c", "bad"].map(|name| {
            std::fs::read_to_string(self.dir.join(format!("{name}.sh.count")))
                .map_or(0, |t| t.lines().count())
        })
    }

    /// What the cascade must have decided, on any scheduler: `a` profiled; `b` and `c` timed
    /// but outside the top 1; `bad` failed its check and was never run; (stage, ran, passed,
    /// skipped) per stage.
    pub fn assert_decided(&self, index: &BatchIndex) {
        assert_eq!(
            index.jobs["bench.a.profile"].state,
            polyprof::model::batch::EntryState::Succeeded
        );
        for name in ["b", "c"] {
            let e = &index.jobs[&format!("bench.{name}.profile")];
            assert_eq!(
                e.state,
                polyprof::model::batch::EntryState::Skipped,
                "{e:?}"
            );
            let skip = e.cascade.as_ref().unwrap().skip.as_ref().unwrap();
            assert!(
                skip.reason.contains("only the top 1 are profiled"),
                "{}",
                skip.reason
            );
            assert_eq!(skip.limit, index.jobs["bench.a.time"].duration_s);
        }
        let bad = &index.jobs["bench.bad.time"];
        assert_eq!(bad.state, polyprof::model::batch::EntryState::Skipped);
        assert!(
            bad.errors[0].contains("stage `check` did not pass (failed, exited with code 1)"),
            "{:?}",
            bad.errors
        );
        assert_eq!(self.runs(), [2, 1, 1, 0]);
        assert_eq!(
            stage_counts(index),
            counts(&[("check", 4, 3, 0), ("time", 3, 3, 1), ("profile", 1, 1, 3)])
        );
    }

    /// For each wave (the check, time and profile stages), the submissions its jobs that ran
    /// went out in, as `submission` names an entry's (its array, its Ray job).
    pub fn waves(
        index: &BatchIndex,
        submission: impl Fn(&BatchEntry) -> String,
    ) -> [std::collections::BTreeSet<String>; 3] {
        [".check", ".time", ".profile"].map(|stage| {
            index
                .jobs
                .values()
                .filter(|e| {
                    e.id.ends_with(stage) && e.state != polyprof::model::batch::EntryState::Skipped
                })
                .map(&submission)
                .collect()
        })
    }
}

/// (stage, ran, passed, skipped) of the cascade's summary.
pub fn stage_counts(index: &BatchIndex) -> Vec<(String, usize, usize, usize)> {
    index
        .cascade
        .as_ref()
        .expect("a cascade summary")
        .stages
        .iter()
        .map(|s| (s.stage.clone(), s.ran, s.passed, s.skipped))
        .collect()
}

/// [`stage_counts`]' rows, written as literals.
pub fn counts(rows: &[(&str, usize, usize, usize)]) -> Vec<(String, usize, usize, usize)> {
    rows.iter()
        .map(|&(s, r, p, k)| (s.to_string(), r, p, k))
        .collect()
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
