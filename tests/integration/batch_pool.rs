//! `polyprof batch` over a local pool: every job gets a run directory and an index entry, a
//! job's crash, hang or failure never stops the batch, retries, pinning to one device per
//! job, and a device that keeps failing at the device level taken out of the pool.

use crate::support;

use std::collections::BTreeMap;

use polyprof::model::batch::EntryState;
use polyprof::results::ProfileRun;
use predicates::str::contains;
use serde_json::json;
use support::batch::{batch, counting, entry, index, runs_of, sh_job, write_jobs};
use support::polyprof;

#[test]
fn twenty_none_jobs_on_two_cpu_slots_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<_> = (0..20)
        .map(|i| sh_job(&format!("j{i:02}"), &format!("echo job {i}")))
        .collect();
    let file = write_jobs(dir.path(), &jobs);
    let root = dir.path().join("out");
    let out = batch(&file, &root)
        .args(["--jobs", "2", "--devices", "cpu", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let printed: polyprof::model::batch::BatchIndex = serde_json::from_slice(&out).unwrap();
    let index = index(&root);
    assert_eq!(printed.jobs, index.jobs, "--json prints the index");
    assert_eq!(index.jobs.len(), 20);
    assert_eq!(index.order.len(), 20);
    assert_eq!(index.order[0], "j00");
    let mut per_slot: BTreeMap<String, usize> = BTreeMap::new();
    for (id, e) in &index.jobs {
        assert_eq!(e.state, EntryState::Succeeded, "{id}: {:?}", e.errors);
        assert_eq!(e.run_dir, format!("runs/{id}"));
        assert_eq!(e.attempts, 1);
        *per_slot.entry(e.device.clone().unwrap()).or_default() += 1;
        let run = ProfileRun::read(&root.join(&e.run_dir)).unwrap();
        assert!(run.succeeded());
        assert_eq!(&entry(&root, id), e, "entry.json and the index agree");
    }
    assert_eq!(
        per_slot.keys().collect::<Vec<_>>(),
        ["cpu:0", "cpu:1"],
        "two CPU slots"
    );
    assert_eq!(index.devices.len(), 2);
}

#[test]
fn a_crash_a_hang_and_a_failure_do_not_stop_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_jobs(
        dir.path(),
        &[
            sh_job("segv", "kill -SEGV $$"),
            json!({"id": "hang", "target": ["sleep", "30"], "timeout_s": 0.5}),
            sh_job("fail", "echo broken >&2; exit 3"),
            json!({"id": "missing", "target": ["/nonexistent/polyprof-test-binary"]}),
            sh_job("ok1", "true"),
            sh_job("ok2", "true"),
        ],
    );
    let root = dir.path().join("out");
    batch(&file, &root)
        .args(["--jobs", "2", "--devices", "cpu"])
        .assert()
        .code(1)
        .stdout(contains("timed out after"))
        .stdout(contains("6 jobs"));
    let index = index(&root);
    let state = |id: &str| index.jobs[id].state;
    assert_eq!(state("segv"), EntryState::Failed);
    assert_eq!(state("hang"), EntryState::TimedOut);
    assert_eq!(state("fail"), EntryState::Failed);
    assert_eq!(index.jobs["fail"].exit_code, Some(3));
    assert_eq!(state("missing"), EntryState::Failed);
    assert_eq!(state("ok1"), EntryState::Succeeded);
    assert_eq!(state("ok2"), EntryState::Succeeded);
}

#[test]
fn retries_rerun_a_job_until_it_succeeds_or_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Fails twice, then succeeds.
    let flaky = counting(
        d,
        "flaky",
        &format!("[ $(wc -l < '{}') -ge 3 ]", d.join("flaky.count").display()),
    );
    let mut flaky_job = sh_job("flaky", &flaky);
    flaky_job["retries"] = json!(2);
    let mut never = sh_job("never", &counting(d, "never", "exit 1"));
    never["labels"] = json!({"kind": "always fails"});
    let mut no_retry = sh_job("once", &counting(d, "once", "exit 1"));
    no_retry["retries"] = json!(0);
    let file = write_jobs(d, &[flaky_job, never, no_retry]);
    let root = d.join("out");
    batch(&file, &root)
        .args(["--retries", "1", "-q"])
        .assert()
        .code(1);
    let index = index(&root);
    assert_eq!(index.jobs["flaky"].state, EntryState::Succeeded);
    assert_eq!(index.jobs["flaky"].attempts, 3);
    assert_eq!(runs_of(d, "flaky"), 3);
    // --retries 1 applies to a job that gives none, not to one that says 0.
    assert_eq!(index.jobs["never"].attempts, 2);
    assert_eq!(runs_of(d, "never"), 2);
    assert_eq!(index.jobs["once"].attempts, 1);
    assert_eq!(runs_of(d, "once"), 1);
    assert!(
        index.jobs["never"].errors[0].starts_with("attempt 1 failed"),
        "{:?}",
        index.jobs["never"].errors
    );
}

#[test]
fn each_job_is_pinned_to_its_own_device_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<_> = (0..8)
        .map(|i| {
            let mut j = sh_job(
                &format!("p{i}"),
                "echo \"cuda=$CUDA_VISIBLE_DEVICES\"; sleep 0.2",
            );
            // The pool's pinning wins over a job's own setting.
            j["env"] = json!({"CUDA_VISIBLE_DEVICES": "7"});
            j
        })
        .collect();
    let file = write_jobs(dir.path(), &jobs);
    let root = dir.path().join("out");
    batch(&file, &root)
        .args(["--devices", "0,1", "-q"])
        .assert()
        .success();
    let index = index(&root);
    let mut spans: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (id, e) in &index.jobs {
        let device = e.device.clone().unwrap();
        let n = device.strip_prefix("nvidia:").unwrap();
        let run = ProfileRun::read(&root.join(&e.run_dir)).unwrap();
        let out = &run.steps[0].attempts[0].stdout.head;
        assert_eq!(out, &[format!("cuda={n}")], "{id} on {device}");
        spans
            .entry(device)
            .or_default()
            .push((e.started_unix_s.unwrap(), e.finished_unix_s.unwrap()));
    }
    assert_eq!(spans.keys().collect::<Vec<_>>(), ["nvidia:0", "nvidia:1"]);
    for (device, mut s) in spans {
        s.sort_by(|a, b| a.0.total_cmp(&b.0));
        for pair in s.windows(2) {
            assert!(
                pair[1].0 >= pair[0].1,
                "two jobs at once on {device}: {pair:?}"
            );
        }
    }
}

#[test]
fn a_failing_device_is_quarantined_and_its_jobs_move() {
    let dir = tempfile::tempdir().unwrap();
    // Device 1 is "dead": every job on it fails with the CUDA runtime's no-device error.
    let script = "if [ \"$CUDA_VISIBLE_DEVICES\" = 1 ]; then echo 'RuntimeError: CUDA error: CUDA_ERROR_NO_DEVICE' >&2; exit 1; fi; sleep 0.05";
    let jobs: Vec<_> = (0..10).map(|i| sh_job(&format!("q{i}"), script)).collect();
    let file = write_jobs(dir.path(), &jobs);
    let root = dir.path().join("out");
    batch(&file, &root)
        .args(["--devices", "0,1", "--quarantine-after", "2"])
        .assert()
        .success()
        .stderr(contains("device nvidia:1 taken out of the pool"))
        .stderr(contains("CUDA_ERROR_NO_DEVICE"));
    let index = index(&root);
    for (id, e) in &index.jobs {
        assert_eq!(e.state, EntryState::Succeeded, "{id}");
        assert_eq!(e.device.as_deref(), Some("nvidia:0"), "{id}");
    }
    let dead = index.devices.iter().find(|d| d.name == "nvidia:1").unwrap();
    assert!(dead.quarantined.is_some(), "{dead:?}");
    assert_eq!(dead.jobs_failed, 2);
    assert!(index.devices[0].quarantined.is_none());
}

#[test]
fn jobs_no_device_can_run_end_crashed_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_jobs(
        dir.path(),
        &[
            json!({"id": "needs-nvidia", "target": ["true"], "profiler": "ncu"}),
            sh_job("cpu-ok", "true"),
        ],
    );
    let root = dir.path().join("out");
    batch(&file, &root)
        .args(["--devices", "cpu", "--jobs", "1", "-q"])
        .assert()
        .code(1);
    let index = index(&root);
    let e = &index.jobs["needs-nvidia"];
    assert_eq!(e.state, EntryState::Crashed);
    assert!(
        e.errors[0].contains("needs an NVIDIA GPU"),
        "{:?}",
        e.errors
    );
    assert_eq!(index.jobs["cpu-ok"].state, EntryState::Succeeded);
}

#[test]
fn a_fake_nvidia_smi_gives_the_pool_its_gpus() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let smi = bin.join("nvidia-smi");
    std::fs::write(
        &smi,
        "#!/bin/sh\necho 'GPU 0: Fake GPU (UUID: GPU-a)'\necho 'GPU 1: Fake GPU (UUID: GPU-b)'\n",
    )
    .unwrap();
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = write_jobs(dir.path(), &[sh_job("a", "true"), sh_job("b", "true")]);
    let root = dir.path().join("out");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    polyprof()
        .env("PATH", path)
        .arg("batch")
        .arg(&file)
        .args(["-q", "--output-dir"])
        .arg(&root)
        .assert()
        .success();
    let index = index(&root);
    let fake: Vec<_> = index
        .devices
        .iter()
        .filter(|d| d.model.as_deref() == Some("Fake GPU"))
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(fake, ["nvidia:0", "nvidia:1"]);
}

#[test]
fn a_root_that_holds_a_batch_is_refused_without_resume() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_jobs(dir.path(), &[sh_job("a", "true")]);
    let root = dir.path().join("out");
    let run = || {
        let mut cmd = polyprof();
        cmd.arg("batch")
            .arg(&file)
            .args(["-q", "--devices", "cpu", "--output-dir"])
            .arg(&root);
        cmd
    };
    run().assert().success();
    run()
        .assert()
        .code(2)
        .stderr(contains("already holds a batch"))
        .stderr(contains("--resume"));
}

#[test]
fn when_the_only_device_is_quarantined_the_rest_end_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<_> = (0..3)
        .map(|i| sh_job(&format!("x{i}"), "echo 'FAKE-GPU-DEAD' >&2; exit 1"))
        .collect();
    let file = write_jobs(dir.path(), &jobs);
    let root = dir.path().join("out");
    batch(&file, &root)
        .args(["--devices", "0", "--quarantine-after", "1"])
        .args(["--device-error", "fake-gpu-dead", "-q"])
        .assert()
        .code(1)
        .stderr(contains("device nvidia:0 taken out of the pool"));
    let index = index(&root);
    let first = &index.jobs["x0"];
    assert_eq!(first.state, EntryState::Crashed);
    assert_eq!(first.device_error.as_deref(), Some("FAKE-GPU-DEAD"));
    assert_eq!(first.attempts, 1);
    for id in ["x1", "x2"] {
        let e = &index.jobs[id];
        assert_eq!(e.state, EntryState::Crashed, "{id}");
        assert!(
            e.errors.iter().any(|m| m.contains("no device left")),
            "{id}: {:?}",
            e.errors
        );
        assert_eq!(e.attempts, 0, "{id} never ran");
    }
}

#[test]
fn a_language_and_arch_job_runs_every_selected_pass_pinned_to_its_vendor() {
    let dir = tempfile::tempdir().unwrap();
    // SYCL on Battlemage selects three unitrace passes; unitrace is not installed here (it
    // is not on this PATH), so each pass says why and the job is crashed, not failed.
    let file = write_jobs(
        dir.path(),
        &[json!({"id": "sycl", "target": ["true"], "language": "sycl", "arch": "bmg"})],
    );
    let root = dir.path().join("out");
    polyprof()
        .env("PATH", "/usr/bin:/bin")
        .arg("batch")
        .arg(&file)
        .args(["--devices", "intel:3", "-q", "--output-dir"])
        .arg(&root)
        .assert()
        .code(1);
    let e = &index(&root).jobs["sycl"];
    assert_eq!(e.state, EntryState::Crashed, "{:?}", e.errors);
    assert_eq!(e.device.as_deref(), Some("intel:3"));
    assert_eq!(
        e.passes,
        [
            "runs/sycl/unitrace.000",
            "runs/sycl/unitrace.001",
            "runs/sycl/unitrace.002"
        ]
    );
    for pass in &e.passes {
        let run = ProfileRun::read(&root.join(pass)).unwrap();
        assert_eq!(run.profiler.name, "unitrace");
        assert!(!run.errors.is_empty());
    }
}

#[test]
fn a_clean_environment_policy_keeps_host_variables_from_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let mut job = sh_job(
        "env",
        "echo \"secret=$POLYPROF_TEST_SECRET own=$OWN cuda=$CUDA_VISIBLE_DEVICES\"",
    );
    job["env"] = json!({"OWN": "mine"});
    let file = write_jobs(dir.path(), &[job]);
    let root = dir.path().join("out");
    polyprof()
        .env("POLYPROF_TEST_SECRET", "leaked")
        .arg("batch")
        .arg(&file)
        .args([
            "--devices",
            "2",
            "--env-policy",
            "clean",
            "-q",
            "--output-dir",
        ])
        .arg(&root)
        .assert()
        .success();
    let run = ProfileRun::read(&root.join("runs/env")).unwrap();
    assert_eq!(
        run.steps[0].attempts[0].stdout.head,
        ["secret= own=mine cuda=2"]
    );
    assert_eq!(run.env_policy, "clean");
}
