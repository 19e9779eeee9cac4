//! Shared helpers of the runner tests: run the real binary on a fixture program, read back its
//! run document, and check that no process of the fixture survived.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg};
use nix::unistd::Pid;
use polyprof::pipeline::RunResult;
use polyprof::results::ProfileRun;
use tempfile::TempDir;

use super::polyprof;

pub struct Fixture {
    pub dir: TempDir,
    pub pidfile: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pids");
        Fixture { dir, pidfile }
    }

    /// The pids the fixture's programs wrote to `pidfile`, once there are `want` (20 s at most).
    pub fn recorded_pids(&self, want: usize) -> Vec<i32> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&self.pidfile).unwrap_or_default();
            let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.len() >= want {
                return pids;
            }
            assert!(Instant::now() < deadline, "the fixture recorded {pids:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }
}

/// Path of a fixture program in tests/programs.
pub fn program(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(name)
        .display()
        .to_string()
}

pub struct Ran {
    pub run: ProfileRun,
    pub code: i32,
    pub wall: Duration,
}

impl Ran {
    /// The last attempt of the last step that ran.
    pub fn attempt(&self) -> &RunResult {
        self.run
            .steps
            .iter()
            .rev()
            .find_map(|s| s.attempts.last())
            .expect("no attempt ran")
    }
}

/// `polyprof run --json -q --output-dir <tmp>/out ARGS -- CMD` with PIDFILE set.
pub fn run(fx: &Fixture, args: &[&str], cmd: &[&str]) -> Ran {
    let out = fx.out();
    let mut command = polyprof();
    command
        .args(["run", "--json", "-q", "--output-dir"])
        .arg(&out)
        .args(args)
        .arg("--")
        .args(cmd)
        .env("PIDFILE", &fx.pidfile)
        .timeout(Duration::from_secs(60));
    let started = Instant::now();
    let output = command.output().unwrap();
    let wall = started.elapsed();
    let run: ProfileRun = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not a run document ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    // run.json on disk says the same.
    assert_eq!(ProfileRun::read(&out).unwrap(), run);
    Ran {
        run,
        code: output.status.code().unwrap_or(-1),
        wall,
    }
}

/// Every pid the fixture recorded (and its process group) is gone, allowing a moment for init
/// to reap reparented grandchildren.
pub fn assert_no_survivors(fx: &Fixture) {
    let text = std::fs::read_to_string(&fx.pidfile).unwrap_or_default();
    let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert!(!pids.is_empty(), "the fixture recorded no pids");
    let deadline = Instant::now() + Duration::from_secs(5);
    for pid in pids {
        loop {
            let gone = kill(Pid::from_raw(pid), None) == Err(Errno::ESRCH)
                && killpg(Pid::from_raw(pid), None) == Err(Errno::ESRCH);
            if gone {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "process {pid} (or its group) survived"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The raw log of a stream of the last attempt.
pub fn log_bytes(ran: &Ran, stderr: bool) -> Vec<u8> {
    let capture = if stderr {
        &ran.attempt().stderr
    } else {
        &ran.attempt().stdout
    };
    std::fs::read(capture.log_path.as_ref().expect("no log path")).unwrap()
}
