//! `--tracking cgroup`: the command runs in a cgroup v2 of its own, which is killed and removed
//! at the end, also when the supervisor itself was killed. Skipped (and said so) where no
//! cgroup can be created: cgroup v1 only, no delegation, or a kernel without `cgroup.kill`.

use crate::support::runner as runner_support;

use polyprof::model::outcome::Outcome;
use polyprof::pipeline::runner::cgroup;
use runner_support::{Fixture, assert_no_survivors, run};

/// The shell records its pid, starts a descendant that leaves its session (`setsid`, so outside
/// the process group) and records it too, then waits until both pids are written.
const START_AN_ESCAPEE: &str = r#"echo $$ >> "$PIDFILE"; setsid sh -c 'echo $$ >> "$PIDFILE"; exec sleep 1000' & while [ "$(wc -l < "$PIDFILE")" -lt 2 ]; do sleep 0.01; done"#;

fn available() -> bool {
    let support = cgroup::probe();
    if !support.available {
        eprintln!("skipped: no cgroup v2 per run here: {}", support.detail);
    }
    support.available
}

#[test]
fn the_command_runs_in_its_own_cgroup_which_is_removed_with_what_escaped() {
    if !available() {
        return;
    }
    let fx = Fixture::new();
    let script = format!("{START_AN_ESCAPEE}; cat /proc/self/cgroup");
    let ran = run(&fx, &["--tracking", "cgroup"], &["sh", "-c", &script]);
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::Exited { code: 0 });
    let line = attempt
        .stdout
        .head
        .iter()
        .find(|l| l.starts_with("0::"))
        .unwrap_or_else(|| panic!("no cgroup v2 line: {:?}", attempt.stdout.head));
    let name = line.rsplit('/').next().unwrap();
    assert!(name.starts_with("polyprof-run-"), "{line}");
    let recorded = fx.recorded_pids(2);
    assert!(
        attempt.killed.iter().any(|k| k.pid == recorded[1]),
        "{:?}",
        attempt.killed
    );
    assert_no_survivors(&fx);
    // The cgroup is gone.
    let mounts = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"];
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let own = own.lines().find_map(|l| l.strip_prefix("0::")).unwrap();
    for root in mounts {
        let dir = std::path::Path::new(root)
            .join(own.trim_start_matches('/'))
            .join(name);
        assert!(!dir.exists(), "{} was left", dir.display());
    }
}

#[test]
fn a_killed_supervisor_still_leaves_nothing_behind_its_cgroup() {
    if !available() {
        return;
    }
    let fx = Fixture::new();
    // The command kills its own supervisor ($PPID) after starting a descendant that left the
    // session: nothing is left to reap it, and it is outside the process group.
    let script = format!("{START_AN_ESCAPEE}; kill -9 $PPID; exec sleep 1000");
    let ran = run(&fx, &["--tracking", "cgroup"], &["sh", "-c", &script]);
    let attempt = ran.attempt();
    assert_eq!(
        attempt.outcome,
        Outcome::SupervisorKilled { signal: 9 },
        "{:?}",
        ran.run.warnings
    );
    let recorded = fx.recorded_pids(2);
    assert!(
        attempt.killed.iter().any(|k| k.pid == recorded[1]),
        "{:?}",
        attempt.killed
    );
    assert_no_survivors(&fx);
}

#[test]
fn a_command_started_in_its_cgroup_gets_default_signals_and_exec_errors() {
    if !available() {
        return;
    }
    let fx = Fixture::new();
    // SIGPIPE at its default: `yes` dies quietly when `head` is done (ignored, it would print
    // "Broken pipe").
    let ran = run(
        &fx,
        &["--tracking", "cgroup"],
        &["sh", "-c", "yes | head -n 1; echo done"],
    );
    let attempt = ran.attempt();
    assert_eq!(attempt.outcome, Outcome::Exited { code: 0 });
    assert_eq!(attempt.stdout.head, ["y", "done"]);
    assert!(attempt.stderr.head.is_empty(), "{:?}", attempt.stderr.head);
    // A missing program is 127 and an unexecutable file 126, as without a cgroup.
    let fx = Fixture::new();
    let plain = fx.dir.path().join("plain.sh");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    for (program, code) in [
        ("/nonexistent/program", 127),
        (plain.to_str().unwrap(), 126),
    ] {
        crate::support::polyprof()
            .args([
                "run",
                "-q",
                "--force",
                "--tracking",
                "cgroup",
                "--output-dir",
            ])
            .arg(fx.out())
            .args(["--", program])
            .assert()
            .code(code);
    }
}
