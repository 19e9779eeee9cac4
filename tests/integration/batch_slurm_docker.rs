//! `polyprof batch --slurm` on a three-node cluster in Docker (scripts/slurm-docker.sh:
//! slurmctld + two slurmd containers, one fake GPU each, a shared bind mount as the cluster
//! filesystem). The driver runs on the controller (`docker exec pp-slurm-ctl polyprof …`).

use std::collections::BTreeMap;
use std::time::Duration;

use polyprof::model::batch::EntryState;

use crate::support::batch::{index, sh_job, write_jobs};
use crate::support::slurm::{DockerCluster, slurm_batch, slurm_installed, wait_for};

/// 20 jobs spread over both nodes, each task pinned to its node's GPU.
#[test]
fn twenty_jobs_across_two_nodes() {
    if !slurm_installed("batch_slurm_docker::twenty_jobs_across_two_nodes") {
        return;
    }
    let cluster = DockerCluster::up();
    let work = cluster.shared().join("b");
    std::fs::create_dir_all(&work).unwrap();
    let jobs: Vec<_> = (0..20)
        .map(|i| {
            sh_job(
                &format!("t{i:02}"),
                "echo gpu=$CUDA_VISIBLE_DEVICES host=$(hostname); sleep 0.2",
            )
        })
        .collect();
    let file = write_jobs(&work, &jobs);
    let root = work.join("root");
    let out = slurm_batch(cluster.polyprof(), &file, &root)
        .args(["--gpus-per-task", "1", "--json"])
        .output()
        .unwrap();
    crate::support::assert_exit(&out, 0);
    let index = index(&root);
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for e in index.jobs.values() {
        assert_eq!(e.state, EntryState::Succeeded, "{}: {:?}", e.id, e.errors);
        let node = e.node.clone().expect("the node it ran on");
        let stdout =
            std::fs::read_to_string(root.join(&e.run_dir).join("run.1.stdout.log")).unwrap();
        assert_eq!(stdout.trim(), format!("gpu=0 host={node}"), "{}", e.id);
        assert_eq!(e.device.as_deref(), Some("nvidia:0"));
        assert_eq!(
            e.slurm.as_ref().unwrap().node.as_deref(),
            Some(node.as_str())
        );
        *per_node.entry(node).or_default() += 1;
    }
    assert_eq!(
        per_node.keys().collect::<Vec<_>>(),
        ["n1", "n2"],
        "{per_node:?}"
    );
    assert_eq!(per_node.values().sum::<usize>(), 20);
}

/// A node stopped mid-array: its task ends `lost` (NODE_FAIL, no entry.json), the others
/// finish on the remaining node, nothing is missing; `--resume` then reruns just the lost.
#[test]
fn node_lost_mid_array() {
    if !slurm_installed("batch_slurm_docker::node_lost_mid_array") {
        return;
    }
    let cluster = DockerCluster::up();
    let work = cluster.shared().join("b");
    std::fs::create_dir_all(&work).unwrap();
    let jobs: Vec<_> = (0..10)
        .map(|i| sh_job(&format!("t{i}"), "sleep 3"))
        .collect();
    let file = write_jobs(&work, &jobs);
    let root = work.join("root");
    let driver = |resume: bool| {
        let mut cmd = slurm_batch(cluster.polyprof(), &file, &root);
        cmd.args(["--gpus-per-task", "1", "--quiet"])
            .stdout(std::process::Stdio::null());
        if resume {
            cmd.arg("--resume");
        }
        cmd
    };
    let mut child = driver(false).spawn().unwrap();
    let before = wait_for(&root, Duration::from_secs(60), |i| {
        i.jobs
            .values()
            .any(|e| e.state == EntryState::Running && e.node.as_deref() == Some("n2"))
    });
    let on_n2: Vec<String> = before
        .jobs
        .values()
        .filter(|e| e.state == EntryState::Running && e.node.as_deref() == Some("n2"))
        .map(|e| e.id.clone())
        .collect();
    let stop = cluster.docker(&["stop", "-t", "1", "pp-slurm-n2"]);
    assert!(stop.status.success(), "{stop:?}");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "some job did not succeed");
    let index = index(&root);
    assert_eq!(index.jobs.len(), 10);
    let lost: Vec<_> = index
        .jobs
        .values()
        .filter(|e| e.state == EntryState::Lost)
        .collect();
    assert!(!lost.is_empty(), "no task was reported lost");
    for e in index.jobs.values() {
        assert!(
            matches!(e.state, EntryState::Succeeded | EntryState::Lost),
            "{}: {} {:?}",
            e.id,
            e.state,
            e.errors
        );
    }
    for e in &lost {
        assert!(
            on_n2.contains(&e.id),
            "{} was lost but did not run on n2 ({on_n2:?})",
            e.id
        );
        assert!(
            e.errors.iter().any(|m| m.contains("NODE_FAIL on n2")),
            "{}: {:?}",
            e.id,
            e.errors
        );
    }
    // n2 back: resume reruns the lost tasks only.
    assert!(cluster.docker(&["start", "pp-slurm-n2"]).status.success());
    let out = driver(true).output().unwrap();
    crate::support::assert_exit(&out, 0);
    let after = crate::support::batch::index(&root);
    for e in after.jobs.values() {
        assert_eq!(e.state, EntryState::Succeeded, "{}", e.id);
        let rerun = lost.iter().any(|l| l.id == e.id);
        let array = &e.slurm.as_ref().unwrap().array_job_id;
        assert_eq!(
            array != index.slurm_job_id.as_ref().unwrap(),
            rerun,
            "{} (rerun: {rerun})",
            e.id
        );
    }
}
