//! A container does not outlive its polyprof, however polyprof ends: SIGKILLed at random moments
//! (starting up, creating, attaching, starting, running), the container is gone soon after
//! (the watchdog, `pipeline::container::watchdog`), not at the next run's reaping.

use std::hash::{BuildHasher, Hasher};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::container::{containers, image, out_dir, tempdir};

const KILLS: usize = 20;
/// The watchdog's retry window for a create still in flight, plus the engine's own time.
const GONE_WITHIN: Duration = Duration::from_secs(40);

fn random_below(n: u64) -> u64 {
    std::hash::RandomState::new().build_hasher().finish() % n
}

#[test]
fn twenty_sigkills_at_random_moments_leave_no_container() {
    image();
    let mut seen_after_kill = 0;
    let mut slowest = Duration::ZERO;
    for i in 0..KILLS {
        let dir = tempdir();
        let out = out_dir(&dir);
        let mut command = Command::new(env!("CARGO_BIN_EXE_polyprof"));
        command
            .args(["run", "--json", "--container", image(), "--output-dir"])
            .arg(&out)
            .args(["--", "sh", "-c", "touch started; sleep 60"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group, so that every fourth kill can take the whole group at once (as a
            // job control or a batch system does).
            .process_group(0);
        let mut child = command.spawn().unwrap();
        let pid = child.id();
        // Even kills: any moment of the first 0.4 s or 1.5 s (start-up, reaping, create,
        // attach, start). Odd kills: the command is certainly running in its container
        // (checked, so the test cannot pass without containers to remove).
        let delay = if i % 2 == 0 {
            Duration::from_millis(random_below(if i % 4 == 0 { 400 } else { 1500 }))
        } else {
            let until = Instant::now() + Duration::from_secs(30);
            while !out.join("started").exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(
                out.join("started").exists(),
                "kill {i}: the command never ran"
            );
            assert!(
                !containers(&format!("label=polyprof.pid={pid}")).is_empty(),
                "kill {i}: the running command's container is not labelled with its polyprof"
            );
            Duration::from_millis(random_below(300))
        };
        std::thread::sleep(delay);
        let target = if i % 4 == 3 {
            -(pid as i32)
        } else {
            pid as i32
        };
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(target),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let killed_at = Instant::now();
        child.wait().unwrap();
        let label = format!("label=polyprof.pid={pid}");
        let listed = !containers(&label).is_empty();
        seen_after_kill += usize::from(listed);
        loop {
            let left = containers(&label);
            if left.is_empty() {
                break;
            }
            assert!(
                killed_at.elapsed() < GONE_WITHIN,
                "kill {i} (after {delay:?}): polyprof {pid} left containers {left:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        slowest = slowest.max(killed_at.elapsed());
        eprintln!(
            "kill {i} after {delay:?}: container listed after the kill: {listed}; none left {:?} after it",
            killed_at.elapsed()
        );
    }
    eprintln!(
        "{KILLS} kills: a container was still listed right after {seen_after_kill} of them; all gone, the slowest {slowest:?} after its kill"
    );
}

#[test]
fn a_second_stop_request_kills_the_container_without_waiting_for_the_kill_grace() {
    let dir = tempdir();
    let out = out_dir(&dir);
    let child = Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["run", "--json", "--container", image(), "--output-dir"])
        .arg(&out)
        .args(["--kill-grace", "60", "--", "sh", "-c"])
        // Ignores SIGTERM: only SIGKILL ends it.
        .arg("trap '' TERM; touch started; while :; do sleep 1; done")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let until = Instant::now() + Duration::from_secs(30);
    while !out.join("started").exists() {
        assert!(Instant::now() < until, "the container never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let first = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let output = child.wait_with_output().unwrap();
    let took = first.elapsed();
    assert!(
        took < Duration::from_secs(15),
        "waited for the kill grace: {took:?}"
    );
    assert_eq!(output.status.code(), Some(130));
    let run: polyprof::results::ProfileRun = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("second stop request")),
        "{:?}",
        run.warnings
    );
    assert!(containers(&format!("label=polyprof.pid={pid}")).is_empty());
}
