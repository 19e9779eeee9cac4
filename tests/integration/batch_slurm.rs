//! `polyprof batch --slurm` against a real single-host Slurm cluster (slurmctld + slurmd +
//! munged on localhost, two fake GPUs) that each test brings up with scripts/slurm-local.sh:
//! argv through the task script, GPU pinning per task, cancel (SIGINT → scancel) and resume.

use std::collections::BTreeSet;
use std::time::Duration;

use polyprof::model::batch::EntryState;

use crate::support::batch::{CommandProblem, counting, entry, index, runs_of, sh_job, write_jobs};
use crate::support::slurm::{LocalCluster, slurm_batch, slurm_installed, wait_for};

/// Words a shell would mangle reach the job verbatim through sbatch and the task script, and
/// each task runs pinned to the GPU Slurm gave it (two GPUs, so at most two at once).
#[test]
fn argv_and_gpus_reach_each_task() {
    if !slurm_installed("batch_slurm::argv_and_gpus_reach_each_task") {
        return;
    }
    let cluster = LocalCluster::up();
    let work = tempfile::tempdir().unwrap();
    let odd = ["it's", "$HOME", "a  b", "`id`", "--x=(16, 32)", "\"q\""];
    let mut jobs = Vec::new();
    for i in 0..4 {
        let mut target = vec![
            "sh".to_string(),
            "-c".to_string(),
            r#"printf '[%s]' "$@"; echo " gpu=$CUDA_VISIBLE_DEVICES"; sleep 1"#.to_string(),
            "sh".to_string(),
        ];
        target.extend(odd.iter().map(|s| s.to_string()));
        jobs.push(serde_json::json!({"id": format!("j{i}"), "target": target}));
    }
    let file = write_jobs(work.path(), &jobs);
    let root = work.path().join("root");
    let out = slurm_batch(cluster.polyprof(), &file, &root)
        .args(["--gpus-per-task", "1"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 0);
    let index = index(&root);
    assert_eq!(index.backend, polyprof::model::batch::Backend::Slurm);
    let job_id = index.slurm_job_id.clone().expect("the array's job id");
    let want: String = odd.iter().map(|w| format!("[{w}]")).collect();
    let mut windows = Vec::new();
    for i in 0..4 {
        let id = format!("j{i}");
        let e = &index.jobs[&id];
        assert_eq!(e.state, EntryState::Succeeded, "{id}: {:?}", e.errors);
        let slurm = e.slurm.as_ref().expect("slurm info");
        assert_eq!(
            (slurm.array_job_id.as_str(), slurm.task_id),
            (job_id.as_str(), i)
        );
        let stdout =
            std::fs::read_to_string(root.join(format!("runs/{id}/run.1.stdout.log"))).unwrap();
        let device = e.device.clone().expect("the pinned device");
        let gpu = device.strip_prefix("nvidia:").expect("an NVIDIA device");
        assert_eq!(stdout.trim(), format!("{want} gpu={gpu}"), "{id}");
        windows.push((
            e.started_unix_s.unwrap(),
            e.finished_unix_s.unwrap(),
            device,
        ));
    }
    // Tasks that overlapped in time had different GPUs.
    for (i, a) in windows.iter().enumerate() {
        for b in &windows[i + 1..] {
            if a.0 < b.1 && b.0 < a.1 {
                assert_ne!(a.2, b.2, "two tasks at once on one GPU: {windows:?}");
            }
        }
    }
    let devices: BTreeSet<&str> = windows.iter().map(|w| w.2.as_str()).collect();
    assert!(
        devices.iter().all(|d| ["nvidia:0", "nvidia:1"].contains(d)),
        "{devices:?}"
    );
}

/// SIGINT to the driver scancels the array: running and pending tasks end `cancelled`, the
/// driver exits 130, and Slurm has nothing of the array left running.
#[test]
fn sigint_cancels_the_array() {
    if !slurm_installed("batch_slurm::sigint_cancels_the_array") {
        return;
    }
    let cluster = LocalCluster::up();
    let work = tempfile::tempdir().unwrap();
    let jobs: Vec<_> = (0..4)
        .map(|i| sh_job(&format!("s{i}"), "sleep 60"))
        .collect();
    let file = write_jobs(work.path(), &jobs);
    let root = work.path().join("root");
    let mut child = slurm_batch(cluster.polyprof(), &file, &root)
        .args(["--gres", "gpu:1", "--quiet"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Two run (two GPUs), two wait.
    wait_for(&root, Duration::from_secs(60), |i| {
        i.jobs
            .values()
            .filter(|e| e.state == EntryState::Running)
            .count()
            == 2
    });
    assert_eq!(crate::support::batch::interrupt(&mut child), Some(130));
    let index = index(&root);
    for e in index.jobs.values() {
        assert_eq!(e.state, EntryState::Cancelled, "{}: {:?}", e.id, e);
    }
    let job_id = index.slurm_job_id.unwrap();
    let out = cluster
        .command("squeue")
        .args(["-h", "-j", &job_id, "-t", "PD,R,CG", "-o", "%i %T"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "",
        "tasks left in Slurm"
    );
}

/// `--resume` submits only what is missing: a job whose run directory is gone and one whose
/// entry says `lost`; the others are kept and not run again.
#[test]
fn resume_submits_only_what_is_missing() {
    if !slurm_installed("batch_slurm::resume_submits_only_what_is_missing") {
        return;
    }
    let cluster = LocalCluster::up();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let jobs: Vec<_> = (0..4)
        .map(|i| {
            let id = format!("r{i}");
            sh_job(&id, &counting(dir, &id, "true"))
        })
        .collect();
    let file = write_jobs(dir, &jobs);
    let root = dir.join("root");
    let run = |resume: bool| {
        let mut cmd = slurm_batch(cluster.polyprof(), &file, &root);
        cmd.args(["--quiet"]);
        if resume {
            cmd.arg("--resume");
        } else {
            // One task at a time (`--array=0-3%1`), though the node has room for two.
            cmd.args(["--max-parallel", "1"]);
        }
        let out = cmd.output().unwrap();
        crate::support::assert_exit(&out, 0);
    };
    run(false);
    let first_index = index(&root);
    let mut windows: Vec<(f64, f64)> = first_index
        .jobs
        .values()
        .map(|e| (e.started_unix_s.unwrap(), e.finished_unix_s.unwrap()))
        .collect();
    windows.sort_by(|a, b| a.0.total_cmp(&b.0));
    for pair in windows.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "tasks overlapped under --max-parallel 1: {windows:?}"
        );
    }
    let first = first_index.slurm_job_id.unwrap();
    std::fs::remove_dir_all(root.join("runs/r1")).unwrap();
    let mut lost = entry(&root, "r3");
    lost.state = EntryState::Lost;
    lost.write_atomic(&root.join("runs/r3")).unwrap();
    run(true);
    let index = index(&root);
    let second = index.slurm_job_id.clone().unwrap();
    assert_ne!(first, second);
    for (id, runs, array) in [
        ("r0", 1, &first),
        ("r1", 2, &second),
        ("r2", 1, &first),
        ("r3", 2, &second),
    ] {
        assert_eq!(runs_of(dir, id), runs, "{id}");
        let e = &index.jobs[id];
        assert_eq!(e.state, EntryState::Succeeded, "{id}");
        assert_eq!(&e.slurm.as_ref().unwrap().array_job_id, array, "{id}");
    }
    // The second array had exactly the two missing tasks.
    let out = cluster
        .command("scontrol")
        .args(["show", "job", &second])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut tasks: Vec<&str> = text
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("ArrayTaskId="))
        .collect();
    tasks.sort();
    assert_eq!(tasks, ["1", "3"], "{text}");
}

/// Slurm's own failures are reported, never lost: a task whose polyprof cannot start on the
/// node ends `crashed` with the task's output in the error; an array sbatch refuses stops the
/// driver with sbatch's message before any job runs.
#[test]
fn node_side_failures_are_reported() {
    if !slurm_installed("batch_slurm::node_side_failures_are_reported") {
        return;
    }
    let cluster = LocalCluster::up();
    let work = tempfile::tempdir().unwrap();
    let file = write_jobs(work.path(), &[sh_job("a", "true"), sh_job("b", "true")]);
    let root = work.path().join("root");
    let out = slurm_batch(cluster.polyprof(), &file, &root)
        .args(["--quiet", "--polyprof-bin", "/nonexistent/polyprof"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 1);
    let index = index(&root);
    for e in index.jobs.values() {
        assert_eq!(e.state, EntryState::Crashed, "{}", e.id);
        let message = e.errors.join("\n");
        assert!(message.contains("wrote no runs/"), "{message}");
        assert!(message.contains("/nonexistent/polyprof"), "{message}");
    }
    let refused = work.path().join("refused");
    let out = slurm_batch(cluster.polyprof(), &file, &refused)
        .args(["--quiet", "--gres", "gpu:3"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Requested node configuration is not available"),
        "{stderr}"
    );
    assert!(!refused.join("runs/a/entry.json").exists());
}

/// A driver killed outright leaves its array running: `--resume` refuses to clear run
/// directories its tasks still write (and says to scancel), then, once they are gone, reruns
/// the jobs that never finished.
#[test]
fn resume_after_a_killed_driver() {
    if !slurm_installed("batch_slurm::resume_after_a_killed_driver") {
        return;
    }
    let cluster = LocalCluster::up();
    let work = tempfile::tempdir().unwrap();
    let fast = work.path().join("fast");
    let script = format!("[ -e '{}' ] || sleep 60", fast.display());
    let file = write_jobs(work.path(), &[sh_job("k0", &script), sh_job("k1", &script)]);
    let root = work.path().join("root");
    let driver = || {
        let mut cmd = slurm_batch(cluster.polyprof(), &file, &root);
        cmd.args(["--gres", "gpu:1", "--quiet"]);
        cmd
    };
    let mut child = driver()
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let running = wait_for(&root, Duration::from_secs(60), |i| {
        i.jobs.values().all(|e| e.state == EntryState::Running)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let old = running.slurm_job_id.unwrap();
    let refused = driver().arg("--resume").output().unwrap();
    assert_ne!(refused.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!("array {old} of this batch still has 2 tasks")),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("scancel {old}")), "{stderr}");
    let out = cluster.command("scancel").arg(&old).output().unwrap();
    assert!(out.status.success());
    let start = std::time::Instant::now();
    loop {
        let out = cluster
            .command("squeue")
            .args(["-h", "-j", &old, "-t", "PD,R,CG", "-o", "%i"])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).trim().is_empty() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "scancel did not end the tasks"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::fs::write(&fast, "").unwrap();
    let out = driver().arg("--resume").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(root.join("batch.json")).unwrap_or_default()
    );
    let index = index(&root);
    assert_ne!(index.slurm_job_id.as_deref(), Some(old.as_str()));
    assert!(
        index
            .jobs
            .values()
            .all(|e| e.state == EntryState::Succeeded)
    );
}

/// `--slurm-mode shares --tasks 2`: one array of two tasks (one per GPU), task k running the
/// jobs at positions k, k+2, … one after the other on its GPU; every job's entry is its own,
/// the index holds each once; `--resume` runs only what is missing, again as two shares.
#[test]
fn shares_run_the_jobs_in_one_task_per_gpu() {
    if !slurm_installed("batch_slurm::shares_run_the_jobs_in_one_task_per_gpu") {
        return;
    }
    let cluster = LocalCluster::up();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let jobs: Vec<_> = (0..8)
        .map(|i| {
            let id = format!("s{i}");
            sh_job(
                &id,
                &counting(dir, &id, "echo gpu=$CUDA_VISIBLE_DEVICES; sleep 0.3"),
            )
        })
        .collect();
    let file = write_jobs(dir, &jobs);
    let root = dir.join("root");
    let run = |extra: &[&str]| {
        let out = slurm_batch(cluster.polyprof(), &file, &root)
            .args([
                "--slurm-mode",
                "shares",
                "--tasks",
                "2",
                "--gpus-per-task",
                "1",
            ])
            .args(["--quiet"])
            .args(extra)
            .output()
            .unwrap();
        crate::support::assert_exit(&out, 0);
    };
    run(&[]);
    let first = index(&root);
    let job_id = first.slurm_job_id.clone().unwrap();
    let mut by_task: std::collections::BTreeMap<u32, Vec<(f64, f64, String)>> = Default::default();
    for i in 0..8u32 {
        let e = &first.jobs[&format!("s{i}")];
        assert_eq!(e.state, EntryState::Succeeded, "{}: {:?}", e.id, e.errors);
        let slurm = e.slurm.as_ref().unwrap();
        assert_eq!(slurm.array_job_id, job_id);
        // Eight plain jobs in two shares: two runs of four, in job-file order.
        assert_eq!(slurm.task_id, i / 4, "job {i} is in share {}", i / 4);
        let device = e.device.clone().expect("the GPU Slurm pinned for the task");
        let stdout =
            std::fs::read_to_string(root.join(format!("runs/s{i}/run.1.stdout.log"))).unwrap();
        assert_eq!(
            stdout.trim(),
            format!("gpu={}", device.strip_prefix("nvidia:").unwrap())
        );
        by_task.entry(slurm.task_id).or_default().push((
            e.started_unix_s.unwrap(),
            e.finished_unix_s.unwrap(),
            device,
        ));
    }
    for (task, runs) in &by_task {
        assert_eq!(runs.len(), 4, "share {task}");
        // One after the other, all on the task's one GPU.
        for pair in runs.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "share {task} overlapped: {runs:?}");
            assert_eq!(pair[0].2, pair[1].2);
        }
    }
    // Two array tasks, so two output files.
    let outs: Vec<_> = std::fs::read_dir(root.join("slurm"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{job_id}_")))
        .collect();
    assert_eq!(outs.len(), 2, "{outs:?}");

    std::fs::remove_dir_all(root.join("runs/s1")).unwrap();
    let mut lost = entry(&root, "s6");
    lost.state = EntryState::Lost;
    lost.write_atomic(&root.join("runs/s6")).unwrap();
    run(&["--resume"]);
    let index = index(&root);
    let second = index.slurm_job_id.clone().unwrap();
    assert_ne!(second, job_id);
    assert_eq!(index.jobs.len(), 8);
    for i in 0..8 {
        let id = format!("s{i}");
        let e = &index.jobs[&id];
        assert_eq!(e.state, EntryState::Succeeded, "{id}");
        let again = i == 1 || i == 6;
        assert_eq!(runs_of(dir, &id), if again { 2 } else { 1 }, "{id}");
        let array = &e.slurm.as_ref().unwrap().array_job_id;
        assert_eq!(array, if again { &second } else { &job_id }, "{id}");
    }
}

/// Eval jobs of one CPU problem in `--slurm-mode shares --tasks 2`: each share task judges
/// its candidates through one warm evaluator (one trusted worker per share, the later
/// candidates reusing it), with the same verdicts as the local pool's `--cold-evals`.
#[test]
fn eval_jobs_in_shares_reuse_one_warm_evaluator_per_share() {
    let test = "batch_slurm::eval_jobs_in_shares_reuse_one_warm_evaluator_per_share";
    let Some(python) = crate::support::eval::python_with_numpy() else {
        return;
    };
    if !slurm_installed(test) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let names = [
        "honest",
        "slow",
        "raises",
        "inplace",
        "wrong_shape",
        "numpy_rewrite",
    ];
    let jobs: Vec<_> = names
        .iter()
        .map(|name| {
            serde_json::json!({
                "id": name,
                "timeout_s": 60,
                "eval": {
                    "reference": crate::support::eval::problem("reference.py"),
                    "candidate": crate::support::eval::problem(&format!("{name}.py")),
                    "device": "cpu",
                    "trials": 2,
                    "timing_blocks": 2,
                    "repeat": 3,
                    "python": python,
                }
            })
        })
        .collect();
    let file = write_jobs(dir, &jobs);
    let cold = dir.join("cold");
    let out = crate::support::batch::batch(&file, &cold)
        .args(["--devices", "cpu", "--jobs", "2", "-q", "--cold-evals"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 1);
    let cold_index = index(&cold);

    let cluster = LocalCluster::up();
    let root = dir.join("root");
    let out = slurm_batch(cluster.polyprof(), &file, &root)
        .args([
            "--slurm-mode",
            "shares",
            "--tasks",
            "2",
            "--gpus-per-task",
            "1",
        ])
        .arg("--quiet")
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 1);
    let warm_index = index(&root);
    let mut by_share: std::collections::BTreeMap<u32, BTreeSet<String>> = Default::default();
    let mut confined = true;
    for name in names {
        let (w, c) = (&warm_index.jobs[name], &cold_index.jobs[name]);
        assert_eq!(w.state, c.state, "{name}: {:?}", w.errors);
        let (ws, cs) = (w.eval.as_ref().unwrap(), c.eval.as_ref().unwrap());
        assert_eq!(
            (&ws.status, ws.passed, &ws.findings, &ws.failure),
            (&cs.status, cs.passed, &cs.findings, &cs.failure),
            "{name}: in a share and cold differ"
        );
        let (evidence, _) = crate::support::eval::documents(&root.join("runs").join(name));
        if !crate::eval_batch_warm::confines_signals(&evidence) {
            confined = false;
            continue;
        }
        let run = evidence
            .trusted_run
            .expect("judged through a warm evaluator");
        assert!(
            run.starts_with(&root.join("warm").display().to_string()),
            "{run}"
        );
        let task = w.slurm.as_ref().unwrap().task_id;
        by_share.entry(task).or_default().insert(run);
    }
    if !confined {
        crate::support::record_skip(
            test,
            "the sandbox does not confine signals in the share tasks: their evals were judged cold (checked: the same verdicts)",
        );
        return;
    }
    // Three candidates per share, one trusted worker each (the raising candidate does not
    // cost the share its trusted worker).
    assert_eq!(by_share.len(), 2, "{by_share:?}");
    for (task, runs) in &by_share {
        assert_eq!(runs.len(), 1, "share {task}: {runs:?}");
    }
}

/// A job file's `problem` on Slurm: the cascade in waves, one array per wave (check, time,
/// profile), with the local pool's decisions (the top 1 profiled, a failed check skipping the
/// rest, the summary per stage); `--resume` submits nothing.
#[test]
fn a_problems_stages_run_as_one_array_per_wave() {
    if !slurm_installed("batch_slurm::a_problems_stages_run_as_one_array_per_wave") {
        return;
    }
    let cluster = LocalCluster::up();
    let work = tempfile::tempdir().unwrap();
    let problem = CommandProblem::new(work.path());
    let root = work.path().join("root");
    let out = slurm_batch(cluster.polyprof(), &problem.file, &root)
        .output()
        .unwrap();
    // `bad` failed its check (grep exits 1): a failed job.
    crate::support::assert_exit(&out, 1);
    let index = index(&root);
    problem.assert_decided(&index);
    let waves = CommandProblem::waves(&index, |e| {
        e.slurm
            .as_ref()
            .expect("the job's array")
            .array_job_id
            .clone()
    });
    for wave in &waves {
        assert_eq!(wave.len(), 1, "one array per wave: {waves:?}");
    }
    let all: BTreeSet<&String> = waves.iter().flatten().collect();
    assert_eq!(all.len(), 3, "three waves, three arrays: {waves:?}");

    let again = slurm_batch(cluster.polyprof(), &problem.file, &root)
        .arg("--resume")
        .output()
        .unwrap();
    crate::support::assert_exit(&again, 1);
    assert_eq!(problem.runs(), [2, 1, 1, 0]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!stderr.contains("submitted"), "{stderr}");
}
