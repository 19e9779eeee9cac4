//! `polyprof batch --slurm` against fake Slurm commands (first on PATH; they log their argv):
//! Ctrl-C while a Slurm command hangs is acted on at once (the hung command's process group
//! is killed, scancel goes out), and a `%` in the batch root reaches sbatch's `--output=`
//! doubled, as sbatch expands it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::batch::{sh_job, write_jobs};

/// Fake Slurm commands in `work/bin`: sbatch answers job 77, `scontrol show config` nothing
/// useful, scancel succeeds, squeue runs `squeue_body`. Each logs to `work/calls.log`.
fn fakes(work: &Path, squeue_body: &str) -> PathBuf {
    let bin = work.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = work.join("calls.log");
    for (name, body) in [
        ("sbatch", "echo 77"),
        ("scontrol", "echo 'MaxArraySize = 1001'"),
        ("scancel", ""),
        ("sacct", "exit 1"),
        ("squeue", squeue_body),
    ] {
        crate::support::slurm::fake_command(&bin, &log, name, body);
    }
    bin
}

fn slurm_driver(work: &Path, bin: &Path, root: &Path) -> Child {
    let file = write_jobs(work, &[sh_job("a", "true")]);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin.to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .arg("batch")
        .arg(file)
        .arg("--output-dir")
        .arg(root)
        .args(["--slurm", "--poll", "0.1", "-q"])
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn calls(work: &Path) -> String {
    std::fs::read_to_string(work.join("calls.log")).unwrap_or_default()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sigint(child: &Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
}

#[test]
fn ctrl_c_while_squeue_hangs_cancels_at_once_and_kills_the_hung_command() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let pids = w.join("squeue.pids");
    // Every squeue hangs (a controller that accepts and never answers); its shell's pid is
    // its process group's.
    let bin = fakes(w, &format!("echo $$ >> '{}'; sleep 600", pids.display()));
    let mut driver = slurm_driver(w, &bin, &w.join("root"));
    wait_until("squeue was called", Duration::from_secs(60), || {
        pids.exists()
    });
    sigint(&driver);
    // Before: the Ctrl-C waited out the hung squeue's 60 s timeout.
    wait_until(
        "scancel went out soon after Ctrl-C",
        Duration::from_secs(15),
        || calls(w).contains("scancel 77"),
    );
    // The second Ctrl-C stops waiting for Slurm's confirmation (its squeue hangs too).
    sigint(&driver);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = driver.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the driver ended after the second Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        // The group (the shell and its sleep) is gone: no hung squeue outlives the driver.
        let live = live_members(pid.parse().unwrap());
        assert!(live.is_empty(), "squeue group {pid} still has {live:?}");
    }
}

/// Processes of group `pgid` that are not zombies (an orphan killed with its group may wait
/// a while for init to reap it).
fn live_members(pgid: i32) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // `pid (comm) state ppid pgrp …`; comm may hold spaces, so split after `)`.
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
            fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z"
        })
        .collect()
}

#[test]
fn a_percent_in_the_batch_root_is_doubled_in_sbatch_output() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    // squeue reports nothing: the task is forgotten and judged lost after the grace.
    let bin = fakes(w, r#"echo '{"jobs": []}'"#);
    let root = w.join("100%_done");
    let mut driver = slurm_driver(w, &bin, &root);
    wait_until("sbatch was called", Duration::from_secs(60), || {
        calls(w).contains("sbatch ")
    });
    sigint(&driver);
    let _ = driver.wait();
    let sbatch = calls(w)
        .lines()
        .find(|l| l.starts_with("sbatch "))
        .unwrap()
        .to_string();
    let expected = format!(
        "--output={}/slurm/%A_%a.out",
        root.canonicalize()
            .unwrap()
            .display()
            .to_string()
            .replace('%', "%%")
    );
    assert!(sbatch.contains(&expected), "{sbatch}");
}

#[test]
fn a_hung_slurm_command_dies_with_a_killed_driver() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let pids = w.join("squeue.pids");
    // squeue is one hung process, as the real one is.
    let bin = fakes(
        w,
        &format!("echo $$ >> '{}'; exec sleep 600", pids.display()),
    );
    let mut driver = slurm_driver(w, &bin, &w.join("root"));
    wait_until("squeue was called", Duration::from_secs(60), || {
        pids.exists()
    });
    driver.kill().unwrap();
    driver.wait().unwrap();
    let pid: i32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(
        "the hung squeue died with the driver",
        Duration::from_secs(10),
        || live_members(pid).is_empty(),
    );
}
