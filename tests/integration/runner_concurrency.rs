//! Hundreds of runs at once through the library: no leaked file descriptors, no zombies.

use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use polyprof::pipeline::{Outcome, RunOptions, run_command};
use polyprof::profilers::CommandSpec;

use crate::support::alone::in_own_process;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

// One test function in a process of its own: descriptor counts are per process, so nothing
// else may run meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_leak_no_descriptors_and_no_zombies() {
    if !in_own_process("runner_concurrency::concurrent_runs_leak_no_descriptors_and_no_zombies") {
        return;
    }
    two_hundred_concurrent_runs_leak_nothing().await;
    cancelled_and_timed_out_runs_leak_nothing().await;
    dropping_a_run_midway_kills_its_group().await;
}

async fn two_hundred_concurrent_runs_leak_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spec = CommandSpec::new(vec![
        "sh".into(),
        "-c".into(),
        "echo out $$; echo err >&2; sleep 0.2".into(),
    ]);
    let opts = |i: usize| RunOptions {
        log_dir: Some(dir.path().to_path_buf()),
        log_name: format!("r{i}"),
        timeout: Some(Duration::from_secs(60)),
        // 200 runs on 2 worker threads: on a loaded 2-core CI machine a reader can see EOF later
        // than the default grace, which would read as a held pipe. A real leak still shows.
        leak_timeout: Duration::from_secs(10),
        ..RunOptions::default()
    };
    // Warm up once: the runtime's process driver and the spawner thread open their files lazily.
    run_command(&spec, &opts(9999)).await;
    let before = open_fds();

    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let (spec, opts) = (spec.clone(), opts(i));
            tokio::spawn(async move { run_command(&spec, &opts).await })
        })
        .collect();
    let mut pids = Vec::new();
    for task in tasks {
        let result = task.await.unwrap();
        assert_eq!(result.outcome, Outcome::Exited { code: 0 }, "{result:?}");
        assert!(!result.leaked);
        assert_eq!(result.stdout.head, [format!("out {}", result.pid.unwrap())]);
        assert_eq!(result.stderr.head, ["err"]);
        pids.push(result.pid.unwrap() as i32);
    }
    assert_eq!(open_fds(), before, "file descriptors leaked");
    // Reaped: a zombie would still accept signal 0.
    for pid in pids {
        assert_eq!(
            kill(Pid::from_raw(pid), None),
            Err(Errno::ESRCH),
            "pid {pid} not reaped"
        );
    }
}

async fn cancelled_and_timed_out_runs_leak_nothing() {
    let spec = CommandSpec::new(vec![
        "sh".into(),
        "-c".into(),
        "echo hi; exec sleep 1000".into(),
    ]);
    run_command(
        &CommandSpec::new(vec!["true".into()]),
        &RunOptions::default(),
    )
    .await;
    let before = open_fds();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let mut opts = RunOptions::default();
        if i % 2 == 0 {
            opts.timeout = Some(Duration::from_millis(1500));
        } else {
            let cancel = opts.cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                cancel.cancel();
            });
        }
        let spec = spec.clone();
        tasks.push(tokio::spawn(async move { run_command(&spec, &opts).await }));
    }
    for (i, task) in tasks.into_iter().enumerate() {
        let result = task.await.unwrap();
        let expected = i % 2 == 0;
        assert_eq!(
            matches!(result.outcome, Outcome::TimedOut { .. }),
            expected,
            "{result:?}"
        );
        assert_eq!(
            matches!(result.outcome, Outcome::Cancelled),
            !expected,
            "{result:?}"
        );
        assert_eq!(result.stdout.head, ["hi"]);
        assert_eq!(
            kill(Pid::from_raw(result.pid.unwrap() as i32), None),
            Err(Errno::ESRCH)
        );
    }
    assert_eq!(open_fds(), before, "file descriptors leaked");
}

async fn dropping_a_run_midway_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let spec = CommandSpec::new(vec![
        "sh".into(),
        "-c".into(),
        format!("echo $$ > {}; exec sleep 1000", pidfile.display()).into(),
    ]);
    let opts = RunOptions::default();
    let run = run_command(&spec, &opts);
    // Abandon the run after it started.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), run)
            .await
            .is_err()
    );
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for _ in 0..100 {
        if kill(Pid::from_raw(pid), None) == Err(Errno::ESRCH) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("process {pid} survived its dropped run");
}
