//! `polyprof batch --slurm` through the driver's fallbacks for tasks squeue no longer lists
//! (sacct with accounting, else the jobcomp file, else `scontrol show job`), which the real
//! test clusters never reach (they keep finished jobs in squeue for MinJobAge=600 s). The real
//! binary runs with a folder of fake Slurm commands first on PATH (the driver runs them by
//! name): shell scripts that print the captured outputs of tests/fixtures/slurm/ (adapted only
//! where the case needs: job ids, paths, the accounting/jobcomp plugin) and log their argv.

use std::path::{Path, PathBuf};
use std::process::Output;

use polyprof::model::batch::{BatchIndex, EntryState};

use crate::support::batch::{index, sh_job, write_jobs};
use crate::support::{assert_exit, fixture};

fn slurm_fixture(name: &str) -> String {
    std::fs::read_to_string(fixture(&format!("slurm/{name}"))).unwrap()
}

/// What the fake commands answer in one case.
#[derive(Default)]
struct Cluster<'a> {
    /// The id the fake sbatch prints.
    job_id: &'a str,
    /// `scontrol show config`.
    config: String,
    /// `squeue --json`.
    squeue: String,
    /// The first this many squeue calls fail as with slurmctld down (exit 1, Slurm's message
    /// for it; not captured: the test clusters' controllers were never down).
    squeue_down_for: u32,
    /// `sacct --json` (exit 0); none: the no-accounting message, exit 1.
    sacct: Option<String>,
    /// `scontrol show job`; none: Slurm's unknown-job error, exit 1.
    scontrol_job: Option<String>,
    /// Tasks the fake sbatch runs for real (the task script with `SLURM_ARRAY_TASK_ID`, output
    /// where `--output` says) before it answers, as if they had run and ended on a node.
    run_tasks: &'a [u32],
}

/// A batch driven against fake Slurm commands in `work/bin`, which log to `work/calls.log`.
struct Fake {
    work: tempfile::TempDir,
}

impl Fake {
    fn new(cluster: &Cluster) -> Fake {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path();
        let bin = dir.join("bin");
        let answers = dir.join("answers");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&answers).unwrap();
        let put = |name: &str, text: &str| std::fs::write(answers.join(name), text).unwrap();
        put("sbatch.txt", &format!("{}\n", cluster.job_id));
        put("config.txt", &cluster.config);
        put("squeue.json", &cluster.squeue);
        put(
            "no-accounting.txt",
            &slurm_fixture("sacct-no-accounting.txt"),
        );
        if let Some(text) = &cluster.sacct {
            put("sacct.json", text);
        }
        if let Some(text) = &cluster.scontrol_job {
            put("scontrol-job.txt", text);
        }
        let a = answers.display();
        let log = dir.join("calls.log");
        let tasks: Vec<String> = cluster.run_tasks.iter().map(u32::to_string).collect();
        let bodies = [
            (
                "squeue",
                format!(
                    r#"n=$(cat '{a}/squeue.count' 2>/dev/null || echo 0); echo $((n + 1)) > '{a}/squeue.count'
if [ "$n" -lt {down} ]; then echo 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2; exit 1; fi
cat '{a}/squeue.json'"#,
                    down = cluster.squeue_down_for,
                ),
            ),
            (
                "sacct",
                format!(
                    "if [ -e '{a}/sacct.json' ]; then cat '{a}/sacct.json'; \
                     else cat '{a}/no-accounting.txt' >&2; exit 1; fi"
                ),
            ),
            (
                "scontrol",
                format!(
                    r#"case "$1 $2" in
"show config") cat '{a}/config.txt' ;;
"show job") if [ -e '{a}/scontrol-job.txt' ]; then cat '{a}/scontrol-job.txt'; else echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1; fi ;;
*) echo "fake scontrol: unexpected $*" >&2; exit 1 ;;
esac"#
                ),
            ),
            (
                "sbatch",
                format!(
                    r#"for arg in "$@"; do script=$arg; case $arg in --output=*) out=${{arg#--output=}} ;; esac; done
for t in {tasks}; do
  file=$(printf '%s' "$out" | sed "s/%A/{id}/; s/%a/$t/")
  SLURM_ARRAY_JOB_ID={id} SLURM_ARRAY_TASK_ID=$t sh "$script" > "$file" 2>&1
done
cat '{a}/sbatch.txt'"#,
                    tasks = tasks.join(" "),
                    id = cluster.job_id,
                ),
            ),
            ("scancel", String::new()),
        ];
        for (name, body) in bodies {
            crate::support::slurm::fake_command(&bin, &log, name, &body);
        }
        Fake { work }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }

    fn root(&self) -> PathBuf {
        self.path("root")
    }

    /// `polyprof batch JOBS --output-dir ROOT --slurm --poll 0.1` with the fakes first on PATH.
    fn batch(&self, jobs: &[serde_json::Value]) -> Output {
        let file = write_jobs(self.work.path(), jobs);
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![self.path("bin")];
        dirs.extend(std::env::split_paths(&path));
        std::process::Command::new(env!("CARGO_BIN_EXE_polyprof"))
            .args(["batch", file.to_str().unwrap(), "--output-dir"])
            .arg(self.root())
            .args(["--slurm", "--poll", "0.1"])
            .env("PATH", std::env::join_paths(dirs).unwrap())
            .output()
            .unwrap()
    }

    /// Each fake command's argv, one line per call, in order.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// The real `scontrol show config` (no accounting, jobcomp/filetxt at /tmp/pplocal/…), with
/// each `(key, value)` replaced.
fn config(changes: &[(&str, &str)]) -> String {
    slurm_fixture("scontrol-show-config.txt")
        .lines()
        .map(|line| {
            let key = line.split('=').next().unwrap_or("").trim();
            match changes.iter().find(|(k, _)| *k == key) {
                Some((k, v)) => format!("{k:<23} = {v}\n"),
                None => format!("{line}\n"),
            }
        })
        .collect()
}

/// A real `squeue --json` with array `forgotten`'s records taken out, as squeue shows the
/// queue once MinJobAge has passed for that array (the other array is still listed).
fn squeue_without(fixture_name: &str, forgotten: u64) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(&slurm_fixture(fixture_name)).unwrap();
    let jobs = doc["jobs"].as_array_mut().unwrap();
    let before = jobs.len();
    jobs.retain(|j| j["array_job_id"].as_u64() != Some(forgotten));
    assert!(jobs.len() < before && !jobs.is_empty(), "{fixture_name}");
    doc.to_string()
}

/// The docker cluster's jobcomp file (array 1: task 0 COMPLETED on n1, task 1 NODE_FAIL on
/// n2, tasks 2 and 3 COMPLETED), copied into the case's folder; its path.
fn jobcomp(fake_dir: &Path) -> PathBuf {
    let path = fake_dir.join("jobcomp.txt");
    std::fs::write(&path, slurm_fixture("docker-jobcomp-node-fail-requeue.txt")).unwrap();
    path
}

/// Every job of the file is in the index, final, with its Slurm view: none silently missing.
fn all_final(index: &BatchIndex, ids: &[&str], job_id: &str) {
    assert_eq!(index.jobs.len(), ids.len(), "{:?}", index.jobs.keys());
    assert_eq!(index.slurm_job_id.as_deref(), Some(job_id));
    for (task, id) in ids.iter().enumerate() {
        let e = &index.jobs[*id];
        assert!(e.state.is_final(), "{id}: {:?}", e.state);
        let slurm = e.slurm.as_ref().expect("the Slurm view");
        assert_eq!(
            (slurm.array_job_id.as_str(), slurm.task_id),
            (job_id, task as u32),
            "{id}"
        );
    }
}

/// The one error of a job that wrote no entry.json, checked to name what Slurm said.
fn slurm_error(index: &BatchIndex, id: &str, state: EntryState, says: &str) {
    let e = &index.jobs[id];
    assert_eq!(e.state, state, "{id}: {:?}", e.errors);
    let message = e.errors.join("\n");
    assert!(message.contains(says), "{id}: {message}");
    assert!(
        message.contains(&format!("wrote no runs/{id}/entry.json")),
        "{id}: {message}"
    );
    assert_eq!(
        e.slurm.as_ref().unwrap().state.as_deref(),
        says.split(' ').next()
    );
}

fn called(calls: &[String], prefix: &str) -> usize {
    calls.iter().filter(|c| c.starts_with(prefix)).count()
}

/// No accounting, a jobcomp file: squeue has forgotten the array, the jobcomp file says one
/// task COMPLETED (polyprof wrote nothing: crashed) and one NODE_FAIL (lost).
#[test]
fn jobcomp_answers_without_accounting() {
    let work = tempfile::tempdir().unwrap();
    let comp = jobcomp(work.path());
    let fake = Fake::new(&Cluster {
        job_id: "1",
        config: config(&[("JobCompLoc", comp.to_str().unwrap())]),
        squeue: squeue_without("docker-squeue-requeued.json", 1),
        ..Default::default()
    });
    let out = fake.batch(&[sh_job("a", "true"), sh_job("b", "true")]);
    assert_exit(&out, 1);
    let index = index(&fake.root());
    all_final(&index, &["a", "b"], "1");
    slurm_error(&index, "a", EntryState::Crashed, "COMPLETED on n1");
    slurm_error(&index, "b", EntryState::Lost, "NODE_FAIL on n2");
    assert_eq!(index.jobs["b"].node.as_deref(), Some("n2"));
    let calls = fake.calls();
    assert_eq!(calls[0], "scontrol show config", "{calls:#?}");
    let sbatch: Vec<&String> = calls.iter().filter(|c| c.starts_with("sbatch")).collect();
    assert_eq!(sbatch.len(), 1, "{calls:#?}");
    assert!(
        sbatch[0].starts_with("sbatch --parsable --array=0-1 "),
        "{calls:#?}"
    );
    assert!(called(&calls, "squeue --json") > 0, "{calls:#?}");
    for never in ["sacct", "scontrol show job", "scancel"] {
        assert_eq!(called(&calls, never), 0, "{never}: {calls:#?}");
    }
}

/// With accounting, `sacct --json` answers (the real 22.05 shape: task 0 COMPLETED, 1 FAILED,
/// 2 requeued then CANCELLED, 3 CANCELLED), not the jobcomp file, which says otherwise here
/// (task 1 NODE_FAIL, tasks 2 and 3 COMPLETED).
#[test]
fn sacct_answers_with_accounting() {
    let work = tempfile::tempdir().unwrap();
    let comp = jobcomp(work.path());
    let fake = Fake::new(&Cluster {
        job_id: "1",
        config: config(&[
            ("AccountingStorageType", "accounting_storage/slurmdbd"),
            ("JobCompLoc", comp.to_str().unwrap()),
        ]),
        squeue: squeue_without("docker-squeue-requeued.json", 1),
        sacct: Some(slurm_fixture("sacct-array.json")),
        ..Default::default()
    });
    let ids = ["a", "b", "c", "d"];
    let jobs: Vec<_> = ids.iter().map(|id| sh_job(id, "true")).collect();
    let out = fake.batch(&jobs);
    assert_exit(&out, 1);
    let index = index(&fake.root());
    all_final(&index, &ids, "1");
    slurm_error(&index, "a", EntryState::Crashed, "COMPLETED");
    slurm_error(&index, "b", EntryState::Crashed, "FAILED");
    slurm_error(&index, "c", EntryState::Cancelled, "CANCELLED");
    slurm_error(&index, "d", EntryState::Cancelled, "CANCELLED");
    let calls = fake.calls();
    assert!(calls.iter().any(|c| c == "sacct --json -j 1"), "{calls:#?}");
    for never in ["scontrol show job", "scancel"] {
        assert_eq!(called(&calls, never), 0, "{never}: {calls:#?}");
    }
}

/// Neither accounting nor a jobcomp file: `scontrol show job` answers (the real output after
/// `scancel 9`: task 0 CANCELLED while pending after a requeue, task 1 CANCELLED on localhost,
/// the pending remainder `2-3%3` as one record).
#[test]
fn scontrol_answers_without_accounting_or_jobcomp() {
    let fake = Fake::new(&Cluster {
        job_id: "9",
        config: config(&[("JobCompType", "jobcomp/none")]),
        squeue: squeue_without("docker-squeue-requeued.json", 1),
        scontrol_job: Some(slurm_fixture("scontrol-cancelled.txt")),
        ..Default::default()
    });
    let ids = ["a", "b", "c", "d"];
    let jobs: Vec<_> = ids.iter().map(|id| sh_job(id, "true")).collect();
    let out = fake.batch(&jobs);
    assert_exit(&out, 1);
    let index = index(&fake.root());
    all_final(&index, &ids, "9");
    slurm_error(&index, "a", EntryState::Cancelled, "CANCELLED");
    slurm_error(&index, "b", EntryState::Cancelled, "CANCELLED on localhost");
    slurm_error(&index, "c", EntryState::Cancelled, "CANCELLED");
    slurm_error(&index, "d", EntryState::Cancelled, "CANCELLED");
    let calls = fake.calls();
    assert!(
        calls.iter().any(|c| c == "scontrol show job 9"),
        "{calls:#?}"
    );
    for never in ["sacct", "scancel"] {
        assert_eq!(called(&calls, never), 0, "{never}: {calls:#?}");
    }
}

/// Tasks that ran and wrote a final entry.json keep it, whatever Slurm says: squeue (the real
/// output, array 1 still listed) says task 0 COMPLETED and task 1 NODE_FAIL, but job `a`
/// exited 3 (failed, not crashed) and job `b` succeeded (not lost).
#[test]
fn a_final_entry_wins_over_slurm() {
    let work = tempfile::tempdir().unwrap();
    let comp = jobcomp(work.path());
    let fake = Fake::new(&Cluster {
        job_id: "1",
        config: config(&[("JobCompLoc", comp.to_str().unwrap())]),
        squeue: slurm_fixture("docker-squeue-requeued.json"),
        run_tasks: &[0, 1],
        ..Default::default()
    });
    let out = fake.batch(&[sh_job("a", "exit 3"), sh_job("b", "true")]);
    assert_exit(&out, 1);
    let root = fake.root();
    let index = index(&root);
    all_final(&index, &["a", "b"], "1");
    let (a, b) = (&index.jobs["a"], &index.jobs["b"]);
    assert_eq!(a.state, EntryState::Failed, "{a:?}");
    assert_eq!(a.exit_code, Some(3));
    assert_eq!(b.state, EntryState::Succeeded, "{b:?}");
    assert!(b.errors.is_empty(), "{:?}", b.errors);
    assert_eq!(
        b.slurm.as_ref().unwrap().state.as_deref(),
        Some("NODE_FAIL")
    );
    // The tasks ran through the real task script, output where sbatch's --output said.
    for t in 0..2 {
        assert!(root.join(format!("slurm/1_{t}.out")).exists());
    }
    let calls = fake.calls();
    for never in ["sacct", "scontrol show job", "scancel"] {
        assert_eq!(called(&calls, never), 0, "{never}: {calls:#?}");
    }
}

/// While slurmctld cannot be reached (squeue fails for 40 polls, longer than the 3 s grace),
/// a task absent from every answer is unseen, not forgotten: once squeue answers again (the
/// real output, array 1 listed) its word decides, not "Slurm no longer reports".
#[test]
fn an_unreachable_controller_loses_no_task() {
    let fake = Fake::new(&Cluster {
        job_id: "1",
        config: config(&[("JobCompType", "jobcomp/none")]),
        squeue: slurm_fixture("docker-squeue-requeued.json"),
        squeue_down_for: 40,
        ..Default::default()
    });
    let out = fake.batch(&[sh_job("a", "true"), sh_job("b", "true")]);
    assert_exit(&out, 1);
    let index = index(&fake.root());
    all_final(&index, &["a", "b"], "1");
    slurm_error(&index, "a", EntryState::Crashed, "COMPLETED on n1");
    slurm_error(&index, "b", EntryState::Lost, "NODE_FAIL on n2");
    let calls = fake.calls();
    assert!(called(&calls, "squeue --json") > 40, "{calls:#?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Unable to contact slurm controller"),
        "the failed polls are warned about"
    );
}
