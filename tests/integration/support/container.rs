//! Shared helpers of the container tests: the one test image (built once from Debian's
//! busybox-static by scripts/build-test-image.sh), the real binary, the engine's view of
//! containers by label.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use polyprof::pipeline::RunResult;
use polyprof::results::ProfileRun;

pub const IMAGE: &str = "polyprof-test-busybox:1";

/// The test image, built on first use. The tests need a Docker engine: without one they fail
/// and say so (they do not pass silently).
pub fn image() -> &'static str {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let info = Command::new("docker").arg("info").output();
        assert!(
            info.as_ref().is_ok_and(|o| o.status.success()),
            "the container tests need a running Docker engine (`docker info` failed: {info:?})"
        );
        let script = super::script("build-test-image.sh");
        let built = Command::new(&script).arg(IMAGE).output().unwrap();
        assert!(
            built.status.success(),
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&built.stderr)
        );
    });
    IMAGE
}

pub struct Ran {
    pub run: ProfileRun,
    pub code: i32,
    pub wall: Duration,
    pub stderr: String,
}

impl Ran {
    pub fn attempt(&self) -> &RunResult {
        self.run
            .steps
            .iter()
            .rev()
            .find_map(|s| s.attempts.last())
            .expect("no attempt ran")
    }

    pub fn container_id(&self) -> String {
        self.run
            .container
            .as_ref()
            .and_then(|c| c.id.clone())
            .expect("the run names its container")
    }
}

/// `polyprof run --container IMAGE --json <flags> -- <cmd>` with output in `out`.
pub fn run(out: &Path, flags: &[&str], cmd: &[&str]) -> Ran {
    let mut command = Command::new(env!("CARGO_BIN_EXE_polyprof"));
    command
        .args(["run", "--json", "--container", image(), "--output-dir"])
        .arg(out)
        .args(flags)
        .arg("--")
        .args(cmd);
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let started = Instant::now();
    let child = command.spawn().unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    let wall = started.elapsed();
    // Whatever happened, nothing this polyprof labelled is left on the engine.
    let left = containers(&format!("label=polyprof.pid={pid}"));
    assert!(left.is_empty(), "polyprof {pid} left containers {left:?}");
    let run: ProfileRun = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "no run document ({e}); stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    Ran {
        run,
        code: output.status.code().unwrap_or(-1),
        wall,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Ids of containers (running or not) matching a `docker ps` filter.
pub fn containers(filter: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args(["ps", "-aq", "--no-trunc", "--filter", filter])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The container is gone from the engine (not even stopped).
pub fn assert_removed(id: &str) {
    let left = containers(&format!("id={id}"));
    assert!(left.is_empty(), "container {id} was left behind");
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

pub fn out_dir(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("out")
}
