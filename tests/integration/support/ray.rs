//! Helpers of the `batch_ray` tests: a real three-node Ray cluster on this host's loopback
//! addresses (scripts/ray-local.sh: head 127.0.0.2, workers 127.0.0.3 and 127.0.0.4 with two
//! declared GPUs each), one at a time, torn down on drop.

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// One cluster at a time in this process (fixed ports, and this machine has two cores).
static ONE_CLUSTER: Mutex<()> = Mutex::new(());

/// The head's GCS port in the tests (the dashboard is the next one); not the script's
/// default, so a cluster someone runs by hand is left alone.
const PORT: &str = "6490";

fn script(args: &[&str]) -> std::process::Output {
    Command::new(super::script("ray-local.sh"))
        .args(args)
        .env("POLYPROF_RAY_PORT", PORT)
        .output()
        .unwrap()
}

/// Whether Ray is installed in the tests' virtual environment, installing it the first time
/// (`ray[default]` from PyPI, about a minute; `.ci/run` does it before the tests). Tests say
/// SKIPPED only when that fails (no python3, no registry); under CI that is a failure.
pub fn ray_available(test: &str) -> bool {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        let out = script(&["install"]);
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    });
    if let Err(why) = installed {
        super::skip(
            test,
            &format!("Ray could not be installed (scripts/ray-local.sh install): {why}"),
        );
    }
    installed.is_ok()
}

/// `scripts/ray-local.sh up`: the head and two workers.
pub struct RayCluster {
    pub dir: tempfile::TempDir,
    pub address: String,
    _lock: MutexGuard<'static, ()>,
}

impl RayCluster {
    pub fn up() -> Self {
        // A test that panicked while holding it left its cluster torn down by Drop.
        let lock = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let out = script(&["up", dir.path().to_str().unwrap()]);
        assert!(
            out.status.success(),
            "ray-local.sh up failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let address = String::from_utf8_lossy(&out.stdout).trim().to_string();
        RayCluster {
            dir,
            address,
            _lock: lock,
        }
    }

    /// Kill worker `n` (1 or 2) and everything it started, as a node that dies.
    pub fn stop_worker(&self, n: u32) {
        let out = script(&[
            "stop-node",
            self.dir.path().to_str().unwrap(),
            &n.to_string(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Every job Ray keeps (`GET /api/jobs/`), read with the venv's Python (no HTTP client in
    /// the tests' dependencies).
    pub fn jobs(&self) -> Vec<serde_json::Value> {
        let out = Command::new("python3")
            .args([
                "-c",
                "import json, sys, urllib.request; print(urllib.request.urlopen(sys.argv[1] + '/api/jobs/', timeout=10).read().decode())",
                &self.address,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The jobs of one batch root (by the key in their metadata).
    pub fn jobs_of(&self, root: &Path) -> Vec<serde_json::Value> {
        let index = polyprof::model::batch::BatchIndex::read(root).unwrap();
        let key = index.ray.expect("the index names its Ray batch").batch_key;
        self.jobs()
            .into_iter()
            .filter(|j| j["metadata"]["polyprof.batch"] == key.as_str())
            .collect()
    }

    /// `polyprof batch FILE --output-dir ROOT --ray ADDRESS --ray-mode jobs` (one Ray job per
    /// job); the test adds the rest.
    pub fn batch_jobs(&self, file: &Path, root: &Path) -> Command {
        let mut cmd = self.batch(file, root);
        cmd.args(["--ray-mode", "jobs"]);
        cmd
    }

    /// `polyprof batch FILE --output-dir ROOT --ray ADDRESS` (the default mode: actors); the
    /// test adds the rest.
    pub fn batch(&self, file: &Path, root: &Path) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_polyprof"));
        cmd.arg("batch")
            .arg(file)
            .arg("--output-dir")
            .arg(root)
            .args(["--ray", &self.address]);
        cmd
    }
}

impl Drop for RayCluster {
    fn drop(&mut self) {
        let _ = script(&["down", self.dir.path().to_str().unwrap()]);
    }
}
