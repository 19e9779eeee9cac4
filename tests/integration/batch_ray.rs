//! `polyprof batch --ray` against a real Ray cluster on this machine (scripts/ray-local.sh: a
//! head and two workers on loopback addresses, two declared GPUs per worker), brought up by
//! each test: 20 jobs across both workers each pinned to its own GPU, labels in Ray's metadata,
//! custom-resource pinning, a worker killed mid-batch (lost, rerun by --resume), Ctrl-C, the
//! time limit, a killed driver resumed without a duplicate, and an unreachable cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use polyprof::model::batch::{Backend, EntryState};

use crate::support::batch::{
    CommandProblem, counted_jobs, index, interrupt, runs_of, sh_job, write_jobs,
};
use crate::support::ray::{RayCluster, ray_available};
use crate::support::slurm::wait_for;

const LIMIT: Duration = Duration::from_secs(180);

/// 20 jobs spread over both workers, each pinned by Ray to one of its node's GPUs (read back
/// from the job's own output), argv words verbatim, labels in the Ray job's metadata; then
/// four jobs pinned by a custom resource to worker 1 alone.
#[test]
fn twenty_jobs_over_two_workers_each_on_its_own_gpu() {
    if !ray_available("batch_ray::twenty_jobs_over_two_workers_each_on_its_own_gpu") {
        return;
    }
    let cluster = RayCluster::up();
    let work = tempfile::tempdir().unwrap();
    let odd = ["it's", "$HOME", "`id`", "--x=(16, 32)"];
    let jobs: Vec<_> = (0..20)
        .map(|i| {
            let mut target = vec![
                "sh".to_string(),
                "-c".to_string(),
                r#"printf '[%s]' "$@"; echo " gpu=$CUDA_VISIBLE_DEVICES"; sleep 1"#.to_string(),
                "sh".to_string(),
            ];
            target.extend(odd.iter().map(|s| s.to_string()));
            serde_json::json!({"id": format!("j{i:02}"), "target": target, "labels": {"gen": i.to_string()}})
        })
        .collect();
    let file = write_jobs(work.path(), &jobs);
    let root = work.path().join("root");
    let out = cluster.batch_jobs(&file, &root).output().unwrap();
    crate::support::assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("at most 4 jobs submitted at once"),
        "{stderr}"
    );
    let index = index(&root);
    assert_eq!(index.backend, Backend::Ray);
    // A Ray batch's index is what the committed schema says batch.json is.
    let validator =
        jsonschema::validator_for(&crate::support::schema::committed("batch.schema.json")).unwrap();
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("batch.json")).unwrap()).unwrap();
    let problems = crate::support::schema::errors(&validator, &written);
    assert!(problems.is_empty(), "{problems:#?}");
    let want: String = odd.iter().map(|w| format!("[{w}]")).collect();
    let mut windows = Vec::new();
    for e in index.jobs.values() {
        assert_eq!(e.state, EntryState::Succeeded, "{}: {:?}", e.id, e.errors);
        let ray = e.ray.as_ref().expect("ray info");
        assert!(ray.submission_id.ends_with("-0"), "{ray:?}");
        let node = ray.node_ip.clone().expect("the node the job ran on");
        let device = e.device.clone().expect("the GPU Ray pinned");
        let gpu = device.strip_prefix("nvidia:").expect("an NVIDIA device");
        let stdout =
            std::fs::read_to_string(root.join(format!("runs/{}/run.1.stdout.log", e.id))).unwrap();
        assert_eq!(stdout.trim(), format!("{want} gpu={gpu}"), "{}", e.id);
        windows.push((
            e.started_unix_s.unwrap(),
            e.finished_unix_s.unwrap(),
            node,
            device,
        ));
    }
    let nodes: BTreeSet<&str> = windows.iter().map(|w| w.2.as_str()).collect();
    assert_eq!(
        nodes,
        BTreeSet::from(["127.0.0.3", "127.0.0.4"]),
        "both workers ran jobs"
    );
    // Jobs that overlapped in time on one node had different GPUs.
    for (i, a) in windows.iter().enumerate() {
        for b in &windows[i + 1..] {
            if a.2 == b.2 && a.0 < b.1 && b.0 < a.1 {
                assert_ne!(a.3, b.3, "two jobs at once on one GPU: {a:?} {b:?}");
            }
        }
    }
    // The labels are in Ray's metadata, where the dashboard shows them.
    let ray_jobs = cluster.jobs_of(&root);
    assert_eq!(ray_jobs.len(), 20, "one Ray job per job, none twice");
    let by_name: BTreeMap<String, &serde_json::Value> = ray_jobs
        .iter()
        .map(|j| (j["metadata"]["job_name"].as_str().unwrap().to_string(), j))
        .collect();
    assert_eq!(by_name["j07"]["metadata"]["gen"], "7");
    assert_eq!(by_name["j07"]["metadata"]["polyprof.task"], "7");
    let entrypoint = by_name["j07"]["entrypoint"].as_str().unwrap();
    assert!(
        entrypoint.starts_with("exec ") && entrypoint.contains("--task-index 7"),
        "{entrypoint}"
    );

    // A custom resource only worker 1 has: every job there, no GPU asked, none pinned.
    let few: Vec<_> = (0..4)
        .map(|i| sh_job(&format!("c{i}"), "echo gpu=${CUDA_VISIBLE_DEVICES:-none}"))
        .collect();
    let file = write_jobs(work.path(), &few);
    let root = work.path().join("custom");
    let out = cluster
        .batch_jobs(&file, &root)
        .args(["--ray-gpus", "0", "--ray-resource", "polyprof_w1=1", "-q"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 0);
    for e in index_of(&root).jobs.values() {
        assert_eq!(
            e.ray.as_ref().unwrap().node_ip.as_deref(),
            Some("127.0.0.3")
        );
        assert_eq!(e.device, None, "{}", e.id);
        let stdout =
            std::fs::read_to_string(root.join(format!("runs/{}/run.1.stdout.log", e.id))).unwrap();
        assert_eq!(stdout.trim(), "gpu=none");
    }
}

fn index_of(root: &std::path::Path) -> polyprof::model::batch::BatchIndex {
    index(root)
}

/// A worker killed while its jobs run: they end `lost` (Ray's supervisor died with the node),
/// the other worker's finish; `--resume` runs just the lost ones again, on the live worker.
#[test]
fn a_worker_killed_mid_batch_loses_its_jobs_and_resume_reruns_them() {
    if !ray_available("batch_ray::a_worker_killed_mid_batch_loses_its_jobs_and_resume_reruns_them")
    {
        return;
    }
    let cluster = RayCluster::up();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (ids, file) = counted_jobs(dir, "n", 4, "sleep 15");
    let root = dir.join("root");
    let mut child = cluster
        .batch_jobs(&file, &root)
        .arg("-q")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Four GPUs, four jobs: two on each worker, all running.
    let running = wait_for(&root, LIMIT, |i| {
        i.jobs.values().all(|e| e.state == EntryState::Running)
            && i.jobs
                .values()
                .all(|e| e.ray.as_ref().is_some_and(|r| r.node_ip.is_some()))
    });
    let on_w2: BTreeSet<String> = running
        .jobs
        .values()
        .filter(|e| e.ray.as_ref().unwrap().node_ip.as_deref() == Some("127.0.0.4"))
        .map(|e| e.id.clone())
        .collect();
    assert_eq!(on_w2.len(), 2, "{running:?}");
    cluster.stop_worker(2);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "some jobs did not succeed");
    let index = index(&root);
    for e in index.jobs.values() {
        if on_w2.contains(&e.id) {
            assert_eq!(e.state, EntryState::Lost, "{}: {:?}", e.id, e.errors);
            let text = e.errors.join("\n");
            assert!(text.contains("JOB_SUPERVISOR_ACTOR_DIED"), "{text}");
            assert!(text.contains("on 127.0.0.4"), "{text}");
        } else {
            assert_eq!(e.state, EntryState::Succeeded, "{}: {:?}", e.id, e.errors);
        }
    }
    let out = cluster
        .batch_jobs(&file, &root)
        .args(["--resume", "-q"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 0);
    let index = crate::support::batch::index(&root);
    for id in &ids {
        let e = &index.jobs[id];
        assert_eq!(e.state, EntryState::Succeeded, "{id}");
        let ray = e.ray.as_ref().unwrap();
        if on_w2.contains(id) {
            assert_eq!(runs_of(dir, id), 2, "{id}");
            assert!(ray.submission_id.ends_with("-1"), "{ray:?}");
            assert_eq!(ray.node_ip.as_deref(), Some("127.0.0.3"));
        } else {
            assert_eq!(runs_of(dir, id), 1, "{id} kept, not run again");
            assert!(ray.submission_id.ends_with("-0"), "{ray:?}");
        }
    }
}

/// Ctrl-C stops every submitted Ray job and submits no more: all end `cancelled`, exit 130,
/// and Ray runs nothing of the batch. A job past `--time` is stopped and `timed_out`.
#[test]
fn ctrl_c_stops_the_jobs_and_the_time_limit_stops_one() {
    if !ray_available("batch_ray::ctrl_c_stops_the_jobs_and_the_time_limit_stops_one") {
        return;
    }
    let cluster = RayCluster::up();
    let work = tempfile::tempdir().unwrap();
    let jobs: Vec<_> = (0..6)
        .map(|i| sh_job(&format!("s{i}"), "sleep 60"))
        .collect();
    let file = write_jobs(work.path(), &jobs);
    let root = work.path().join("root");
    let mut child = cluster
        .batch_jobs(&file, &root)
        .arg("-q")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&root, LIMIT, |i| {
        i.jobs
            .values()
            .filter(|e| e.state == EntryState::Running)
            .count()
            == 4
    });
    assert_eq!(interrupt(&mut child), Some(130));
    let index = index(&root);
    let mut never = 0;
    for e in index.jobs.values() {
        assert_eq!(e.state, EntryState::Cancelled, "{}: {:?}", e.id, e);
        never += usize::from(
            e.errors
                .iter()
                .any(|t| t.contains("before it was submitted")),
        );
    }
    assert_eq!(never, 2, "the two beyond the window were never submitted");
    let ray_jobs = cluster.jobs_of(&root);
    assert_eq!(ray_jobs.len(), 4);
    for j in &ray_jobs {
        assert_eq!(j["status"], "STOPPED", "{j}");
    }

    let file = write_jobs(work.path(), &[sh_job("slow", "sleep 60")]);
    let root = work.path().join("timed");
    let out = cluster
        .batch_jobs(&file, &root)
        .args(["--time", "0:03", "-q"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 1);
    let e = &index_of(&root).jobs["slow"];
    assert_eq!(e.state, EntryState::TimedOut, "{e:?}");
    assert!(
        e.errors.iter().any(|t| t.contains("time limit of 3 s")),
        "{:?}",
        e.errors
    );
    assert_eq!(cluster.jobs_of(&root)[0]["status"], "STOPPED");
}

/// A driver killed outright leaves its Ray jobs running; `--resume` follows those (it does
/// not submit them again) and submits only the jobs never submitted. Every job runs once.
#[test]
fn a_killed_driver_resumes_without_submitting_twice() {
    if !ray_available("batch_ray::a_killed_driver_resumes_without_submitting_twice") {
        return;
    }
    let cluster = RayCluster::up();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (ids, file) = counted_jobs(dir, "d", 4, "sleep 15");
    let root = dir.join("root");
    let mut child = cluster
        .batch_jobs(&file, &root)
        .args(["--max-parallel", "2", "-q"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&root, LIMIT, |i| {
        i.jobs
            .values()
            .filter(|e| e.state == EntryState::Running)
            .count()
            == 2
    });
    // Long enough (15 s jobs) that both are still live when the second driver asks Ray.
    child.kill().unwrap();
    child.wait().unwrap();
    // Without --resume the root is refused (it holds a batch); with it, the live jobs are
    // followed.
    let out = cluster
        .batch_jobs(&file, &root)
        .args(["--resume"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("still live from an earlier driver").count(),
        2,
        "{stderr}"
    );
    let index = index(&root);
    for id in &ids {
        assert_eq!(index.jobs[id].state, EntryState::Succeeded, "{id}");
        assert_eq!(runs_of(dir, id), 1, "{id} ran once");
    }
    let ray_jobs = cluster.jobs_of(&root);
    assert_eq!(ray_jobs.len(), 4, "no job submitted twice: {ray_jobs:?}");
}

/// A cluster that does not answer: a clear error naming the address, before anything is
/// submitted or written (no Ray needed).
#[test]
fn an_unreachable_cluster_is_a_clear_error() {
    let work = tempfile::tempdir().unwrap();
    let file = write_jobs(work.path(), &[sh_job("a", "true")]);
    let root = work.path().join("root");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let address = format!("http://127.0.0.1:{port}");
    let out = crate::support::batch::batch(&file, &root)
        .args(["--ray", &address])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot reach the Ray dashboard at {address}")),
        "{stderr}"
    );
    assert!(!root.join("batch.json").exists());
    assert!(!root.join("runs").exists());
    // A Ray Client address is refused with what to give instead.
    let out = crate::support::batch::batch(&file, &root)
        .args(["--ray", "ray://127.0.0.1:10001"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dashboard"));
}

/// The actor mode's progress file of the root's first Ray job (`ROOT/ray/actors-0.progress.json`).
fn progress(root: &std::path::Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(root.join("ray/actors-0.progress.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Wait until the progress file says `n` jobs run; it then.
fn wait_running(root: &std::path::Path, n: usize) -> serde_json::Value {
    let start = std::time::Instant::now();
    loop {
        if let Some(p) = progress(root) {
            let running = p["jobs"].as_object().map_or(0, |jobs| {
                jobs.values().filter(|j| j["state"] == "running").count()
            });
            if running >= n {
                return p;
            }
        }
        assert!(
            start.elapsed() < LIMIT,
            "{n} jobs never ran: {:?}",
            progress(root)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `--ray-mode actors` (the default): ONE Ray job for the batch, one actor per declared GPU
/// (four, on both workers), 20 jobs each pinned to its actor's GPU; then an actor's worker
/// process killed mid-run: its in-flight jobs go to the other actors (and its restart), every
/// job ends `succeeded`, the killed one ran again, no job ran twice to its end and the index
/// holds each job once.
#[test]
fn actors_run_the_batch_in_one_ray_job_and_a_killed_actor_loses_nothing() {
    if !ray_available(
        "batch_ray::actors_run_the_batch_in_one_ray_job_and_a_killed_actor_loses_nothing",
    ) {
        return;
    }
    let cluster = RayCluster::up();
    let work = tempfile::tempdir().unwrap();
    let jobs: Vec<_> = (0..20)
        .map(|i| {
            sh_job(
                &format!("a{i:02}"),
                "echo gpu=$CUDA_VISIBLE_DEVICES; sleep 0.5",
            )
        })
        .collect();
    let file = write_jobs(work.path(), &jobs);
    let root = work.path().join("root");
    let out = cluster.batch(&file, &root).output().unwrap();
    crate::support::assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("one Ray job, up to 4 actors"), "{stderr}");
    let index = index(&root);
    assert_eq!(index.backend, Backend::Ray);
    assert_eq!(index.jobs.len(), 20);
    let mut windows = Vec::new();
    for e in index.jobs.values() {
        assert_eq!(e.state, EntryState::Succeeded, "{}: {:?}", e.id, e.errors);
        let ray = e.ray.as_ref().expect("ray info");
        assert!(ray.submission_id.ends_with("-actors-0"), "{ray:?}");
        let node = ray.node_ip.clone().expect("the actor's node");
        let device = e.device.clone().expect("the GPU Ray pinned for the actor");
        let gpu = device.strip_prefix("nvidia:").expect("an NVIDIA device");
        let stdout =
            std::fs::read_to_string(root.join(format!("runs/{}/run.1.stdout.log", e.id))).unwrap();
        assert_eq!(stdout.trim(), format!("gpu={gpu}"), "{}", e.id);
        windows.push((
            e.started_unix_s.unwrap(),
            e.finished_unix_s.unwrap(),
            node,
            device,
        ));
    }
    let nodes: BTreeSet<&str> = windows.iter().map(|w| w.2.as_str()).collect();
    assert_eq!(nodes, BTreeSet::from(["127.0.0.3", "127.0.0.4"]));
    for (i, a) in windows.iter().enumerate() {
        for b in &windows[i + 1..] {
            if a.2 == b.2 && a.0 < b.1 && b.0 < a.1 {
                assert_ne!(a.3, b.3, "two jobs at once on one GPU: {a:?} {b:?}");
            }
        }
    }
    let ray_jobs = cluster.jobs_of(&root);
    assert_eq!(ray_jobs.len(), 1, "one Ray job for the batch: {ray_jobs:?}");
    assert_eq!(ray_jobs[0]["status"], "SUCCEEDED");
    assert_eq!(
        progress(&root).unwrap()["actors"].as_array().unwrap().len(),
        4
    );

    // Kill one actor's worker process while it runs a job.
    let dir = work.path().join("kill");
    std::fs::create_dir_all(&dir).unwrap();
    let (ids, file) = counted_jobs(&dir, "k", 8, "sleep 3");
    let root = dir.join("root");
    let mut child = cluster
        .batch(&file, &root)
        .arg("-q")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let running = wait_running(&root, 4);
    let (victim, pid) = running["jobs"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, j)| j["state"] == "running")
        .map(|(i, j)| (i.parse::<usize>().unwrap(), j["pid"].as_i64().unwrap()))
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "every job succeeded in the end");
    let index = crate::support::batch::index(&root);
    assert_eq!(index.jobs.len(), 8, "each job once in the index");
    for e in index.jobs.values() {
        assert_eq!(e.state, EntryState::Succeeded, "{}: {:?}", e.id, e.errors);
    }
    let done = progress(&root).unwrap();
    let killed = &done["jobs"][victim.to_string()];
    assert_eq!(killed["attempts"], 2, "{killed}");
    assert!(
        killed["errors"][0].as_str().unwrap().contains("died"),
        "{killed}"
    );
    for (i, id) in ids.iter().enumerate() {
        // The killed job's first run was cut off and ran again; every other job ran once.
        let want = if i == victim { 2 } else { 1 };
        assert_eq!(runs_of(&dir, id), want, "{id}");
    }
    assert_eq!(cluster.jobs_of(&root).len(), 1);
}

/// Ctrl-C stops the batch's one Ray job: its actors die, their jobs' polyprof write
/// `cancelled`, the driver exits 130; `--resume` runs them again. A driver killed outright
/// leaves the Ray job running: `--resume` follows it (submits nothing) and each job runs once.
#[test]
fn actors_ctrl_c_and_resume() {
    if !ray_available("batch_ray::actors_ctrl_c_and_resume") {
        return;
    }
    let cluster = RayCluster::up();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let flag = dir.join("hold");
    std::fs::write(&flag, "").unwrap();
    let hold = format!("while [ -e '{}' ]; do sleep 0.2; done", flag.display());
    let (ids, file) = counted_jobs(dir, "c", 6, &hold);
    let root = dir.join("root");
    let mut child = cluster
        .batch(&file, &root)
        .arg("-q")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_running(&root, 4);
    assert_eq!(interrupt(&mut child), Some(130));
    let index = index(&root);
    for e in index.jobs.values() {
        assert_eq!(e.state, EntryState::Cancelled, "{}: {:?}", e.id, e);
    }
    let ray_jobs = cluster.jobs_of(&root);
    assert_eq!(ray_jobs.len(), 1);
    assert_eq!(ray_jobs[0]["status"], "STOPPED", "{}", ray_jobs[0]);
    std::fs::remove_file(&flag).unwrap();
    let out = cluster
        .batch(&file, &root)
        .args(["--resume", "-q"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 0);
    let index = crate::support::batch::index(&root);
    for id in &ids {
        assert_eq!(index.jobs[id].state, EntryState::Succeeded, "{id}");
        assert!(
            index.jobs[id]
                .ray
                .as_ref()
                .unwrap()
                .submission_id
                .ends_with("-actors-1")
        );
    }

    // A driver killed outright: the Ray job goes on and --resume follows it.
    let dir = dir.join("killed");
    std::fs::create_dir_all(&dir).unwrap();
    let (ids, file) = counted_jobs(&dir, "d", 4, "sleep 8");
    let root = dir.join("root");
    let mut child = cluster
        .batch(&file, &root)
        .arg("-q")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_running(&root, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    let out = cluster.batch(&file, &root).output().unwrap();
    assert_ne!(
        out.status.code(),
        Some(0),
        "a live Ray job of the root needs --resume"
    );
    let out = cluster
        .batch(&file, &root)
        .args(["--resume"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("still live from an earlier driver"),
        "{stderr}"
    );
    let index = crate::support::batch::index(&root);
    for id in &ids {
        assert_eq!(index.jobs[id].state, EntryState::Succeeded, "{id}");
        assert_eq!(runs_of(&dir, id), 1, "{id} ran once");
    }
    assert_eq!(cluster.jobs_of(&root).len(), 1, "nothing submitted twice");
}

/// Eval jobs of one CPU problem through the actors (tests/programs/eval): each actor's
/// `--task-serve` child judges its candidates through one warm evaluator (a trusted worker per
/// actor, not per candidate), with the same verdicts as the local pool's `--cold-evals`; then
/// an actor killed while it judges a slow candidate: that eval runs again elsewhere, and the
/// index holds every candidate once, each judged.
#[test]
fn eval_jobs_through_actors_are_judged_warm_and_a_killed_actor_loses_none() {
    let test = "batch_ray::eval_jobs_through_actors_are_judged_warm_and_a_killed_actor_loses_none";
    let Some(python) = crate::support::eval::python_with_numpy() else {
        return;
    };
    if !ray_available(test) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    // Slow to set up: long enough to kill its actor while it is judged.
    let slow_setup = work.path().join("slow_setup.py");
    let honest = std::fs::read_to_string(crate::support::eval::problem("honest.py")).unwrap();
    std::fs::write(&slow_setup, format!("import time\ntime.sleep(4)\n{honest}")).unwrap();
    let eval_job = |id: &str, candidate: &std::path::Path| {
        serde_json::json!({
            "id": id,
            "timeout_s": 60,
            "eval": {
                "reference": crate::support::eval::problem("reference.py"),
                "candidate": candidate,
                "device": "cpu",
                "trials": 2,
                "timing_blocks": 2,
                "repeat": 3,
                "python": python,
            }
        })
    };
    let names = [
        "honest",
        "slow",
        "raises",
        "inplace",
        "wrong_shape",
        "numpy_rewrite",
    ];
    let mut jobs: Vec<_> = (0..12)
        .map(|i| {
            let name = names[i % names.len()];
            eval_job(
                &format!("e{i:02}-{name}"),
                &crate::support::eval::problem(&format!("{name}.py")),
            )
        })
        .collect();
    let file = write_jobs(work.path(), &jobs);
    let cold = work.path().join("cold");
    let out = crate::support::batch::batch(&file, &cold)
        .args(["--devices", "cpu", "--jobs", "2", "-q", "--cold-evals"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 1);
    let cold_index = index(&cold);

    let cluster = RayCluster::up();
    let root = work.path().join("root");
    let out = cluster.batch(&file, &root).arg("-q").output().unwrap();
    crate::support::assert_exit(&out, 1);
    let warm_index = index(&root);
    assert_eq!(warm_index.jobs.len(), 12);
    let mut trusted_runs = BTreeSet::new();
    let mut signals_confined = true;
    for (id, e) in &warm_index.jobs {
        let c = &cold_index.jobs[id];
        assert_eq!(e.state, c.state, "{id}: {:?}", e.errors);
        let (w, c) = (e.eval.as_ref().unwrap(), c.eval.as_ref().unwrap());
        assert_eq!(
            (&w.status, w.passed, &w.findings, &w.failure),
            (&c.status, c.passed, &c.findings, &c.failure),
            "{id}: through the actors and cold differ"
        );
        let (evidence, _) = crate::support::eval::documents(&root.join("runs").join(id));
        // A sandbox that confines signals lets the trusted worker outlive a candidate: then
        // the candidate must have been judged warm.
        if !crate::eval_batch_warm::confines_signals(&evidence) {
            signals_confined = false;
            continue;
        }
        let run = evidence
            .trusted_run
            .expect("judged through a warm evaluator");
        assert!(
            run.starts_with(&root.join("warm").display().to_string()),
            "{run}"
        );
        trusted_runs.insert(run);
    }
    if !signals_confined {
        crate::support::record_skip(
            test,
            "the sandbox does not confine signals in the actors: their evals were judged cold (checked: the same verdicts)",
        );
    } else {
        // At most one trusted worker per actor (four), never one per candidate.
        assert!(
            (1..=4).contains(&trusted_runs.len()),
            "{} trusted workers for 12 candidates: {trusted_runs:?}",
            trusted_runs.len()
        );
    }

    // An actor killed while it judges the slow candidate.
    let dir = work.path().join("kill");
    std::fs::create_dir_all(&dir).unwrap();
    jobs.truncate(6);
    jobs.push(eval_job("slow-setup", &slow_setup));
    let file = write_jobs(&dir, &jobs);
    let root = dir.join("root");
    let mut child = cluster
        .batch(&file, &root)
        .arg("-q")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let victim = "6";
    let start = std::time::Instant::now();
    let pid = loop {
        if let Some(p) = progress(&root)
            && p["jobs"][victim]["state"] == "running"
            && let Some(pid) = p["jobs"][victim]["pid"].as_i64()
        {
            break pid;
        }
        assert!(start.elapsed() < LIMIT, "the slow candidate never ran");
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_millis(1000));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "judged, some not passed");
    let index = index(&root);
    assert_eq!(index.jobs.len(), 7, "each candidate once in the index");
    for e in index.jobs.values() {
        assert!(e.eval.is_some(), "{}: judged: {:?}", e.id, e.errors);
    }
    let slow = &index.jobs["slow-setup"];
    assert_eq!(slow.state, EntryState::Succeeded, "{:?}", slow.errors);
    assert!(slow.eval.as_ref().unwrap().passed);
    let killed = &progress(&root).unwrap()["jobs"][victim];
    assert_eq!(killed["attempts"], 2, "{killed}");
}

/// A job file's `problem` through the actors: the cascade in waves (check, time, profile), all
/// sent to ONE Ray job whose actors serve every stage, with the local pool's decisions;
/// `--resume` submits nothing.
#[test]
fn a_problems_stages_run_in_waves_through_one_actors_job() {
    if !ray_available("batch_ray::a_problems_stages_run_in_waves_through_one_actors_job") {
        return;
    }
    let cluster = RayCluster::up();
    let work = tempfile::tempdir().unwrap();
    let problem = CommandProblem::new(work.path());
    let root = work.path().join("root");
    let out = cluster.batch(&problem.file, &root).output().unwrap();
    // `bad` failed its check (grep exits 1): a failed job.
    crate::support::assert_exit(&out, 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("sent the cascade's next wave").count(),
        2,
        "the time and profile waves went to the running Ray job: {stderr}"
    );
    let index = index(&root);
    problem.assert_decided(&index);
    let waves = CommandProblem::waves(&index, |e| {
        e.ray
            .as_ref()
            .expect("the job's Ray job")
            .submission_id
            .clone()
    });
    for wave in &waves {
        assert_eq!(wave.len(), 1, "{waves:?}");
        assert!(
            wave.iter().all(|sid| sid.ends_with("-actors-0")),
            "{waves:?}"
        );
    }
    assert_eq!(
        cluster.jobs_of(&root).len(),
        1,
        "one Ray job for every wave"
    );

    let again = cluster
        .batch(&problem.file, &root)
        .arg("--resume")
        .output()
        .unwrap();
    crate::support::assert_exit(&again, 1);
    assert_eq!(problem.runs(), [2, 1, 1, 0]);
    assert_eq!(cluster.jobs_of(&root).len(), 1, "nothing submitted again");
}

/// A driver killed while the actors' Ray job runs a problem's first wave: `--resume` follows
/// that Ray job to the end of its wave (and tells it no more will come, so it ends at once),
/// then sends the later waves to a Ray job of its own. Every stage ran once.
#[test]
fn a_killed_driver_mid_cascade_resumes_its_waves() {
    if !ray_available("batch_ray::a_killed_driver_mid_cascade_resumes_its_waves") {
        return;
    }
    let cluster = RayCluster::up();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let mut candidates = Vec::new();
    for name in ["a", "b"] {
        let path = dir.join(format!("{name}.sh"));
        std::fs::write(&path, "# ok\necho run >> \"$0.count\"\n").unwrap();
        candidates.push(path);
    }
    let file = write_jobs(
        dir,
        &[serde_json::json!({"problem": {
            "id": "slow",
            "target": ["sh", "{candidate}"],
            "candidates": candidates,
            "stages": ["check", "time", "profile"],
            // Long enough that the checks still run when the second driver asks Ray.
            "check": ["sh", "-c", "echo check >> {candidate}.checks; sleep 8; grep -q ok {candidate}"],
            "profiler": "none"
        }})],
    );
    let root = dir.join("root");
    let mut child = cluster
        .batch(&file, &root)
        .arg("-q")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&root, LIMIT, |i| {
        i.jobs
            .values()
            .filter(|e| e.id.ends_with(".check") && e.state == EntryState::Running)
            .count()
            == 2
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let out = cluster
        .batch(&file, &root)
        .arg("--resume")
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("still live from an earlier driver"),
        "{stderr}"
    );
    assert!(!stderr.contains("still runs after"), "{stderr}");
    let index = index(&root);
    for name in ["a", "b"] {
        for stage in ["check", "time", "profile"] {
            let id = format!("slow.{name}.{stage}");
            assert_eq!(index.jobs[&id].state, EntryState::Succeeded, "{id}");
        }
        let checks = std::fs::read_to_string(dir.join(format!("{name}.sh.checks"))).unwrap();
        assert_eq!(checks.lines().count(), 1, "{name} checked once");
        assert_eq!(
            runs_of(dir, &format!("{name}.sh")),
            2,
            "{name} timed and profiled once"
        );
    }
    let ray_jobs = cluster.jobs_of(&root);
    assert_eq!(
        ray_jobs.len(),
        2,
        "the adopted one, then one for the later waves: {ray_jobs:?}"
    );
    assert!(
        ray_jobs.iter().all(|j| j["status"] == "SUCCEEDED"),
        "{ray_jobs:?}"
    );
}
