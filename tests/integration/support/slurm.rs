//! Helpers of the `batch_slurm` tests: real Slurm clusters brought up by the scripts
//! (`scripts/slurm-local.sh`, `scripts/slurm-docker.sh`), one at a time, torn down on drop.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use polyprof::model::batch::BatchIndex;

/// One cluster at a time in this process (the Docker one has fixed container names, and
/// both would fight over this machine's two cores).
static ONE_CLUSTER: Mutex<()> = Mutex::new(());

/// Port of the tests' single-host cluster (not Slurm's default, so a cluster someone runs by
/// hand with the script's defaults is left alone).
const LOCAL_PORT: &str = "6827";

/// Whether Slurm's daemons are installed; tests print why they skip when not, and fail under CI
/// (`.ci/run` installs them).
pub fn slurm_installed(test: &str) -> bool {
    let found = ["slurmctld", "slurmd", "munged"]
        .iter()
        .all(|b| which(b) || Path::new("/usr/sbin").join(b).exists());
    if !found {
        super::skip(
            test,
            "slurmctld/slurmd/munged are not installed (apt-get install -y slurm-wlm munge)",
        );
    }
    found
}

fn which(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).exists()))
}

fn lock() -> MutexGuard<'static, ()> {
    // A test that panicked while holding it leaves its cluster torn down by Drop.
    ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner())
}

fn script(cmd: &str, name: &str, dir: &Path) {
    let out = Command::new(super::script(name))
        .args([cmd, dir.to_str().unwrap()])
        .env("POLYPROF_SLURM_PORT", LOCAL_PORT)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name} {cmd} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `scripts/slurm-local.sh up`: slurmctld + slurmd on localhost, 2 CPUs, 2 fake GPUs.
pub struct LocalCluster {
    pub dir: tempfile::TempDir,
    _lock: MutexGuard<'static, ()>,
}

impl LocalCluster {
    pub fn up() -> Self {
        let lock = lock();
        let dir = tempfile::tempdir().unwrap();
        script("up", "slurm-local.sh", dir.path());
        LocalCluster { dir, _lock: lock }
    }

    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("etc/slurm.conf")
    }

    /// A Slurm client command against this cluster.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("SLURM_CONF", self.conf());
        cmd
    }

    /// `polyprof` with this cluster's config in its environment (the tasks inherit it).
    pub fn polyprof(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_polyprof"));
        cmd.env("SLURM_CONF", self.conf());
        cmd
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        let _ = Command::new(super::script("slurm-local.sh"))
            .args(["down", self.dir.path().to_str().unwrap()])
            .output();
    }
}

/// `scripts/slurm-docker.sh up`: slurmctld in `pp-slurm-ctl`, slurmd in `pp-slurm-n1` and
/// `pp-slurm-n2`, one fake GPU each; `shared()` is mounted at the same path in all three.
pub struct DockerCluster {
    pub dir: tempfile::TempDir,
    _lock: MutexGuard<'static, ()>,
}

pub const CTL: &str = "pp-slurm-ctl";

impl DockerCluster {
    pub fn up() -> Self {
        let lock = lock();
        let dir = tempfile::tempdir().unwrap();
        script("up", "slurm-docker.sh", dir.path());
        let cluster = DockerCluster { dir, _lock: lock };
        // The binaries the nodes run, on the "shared filesystem".
        let bin = cluster.shared().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let me = Path::new(env!("CARGO_BIN_EXE_polyprof"));
        for name in ["polyprof", "polyprof-supervise"] {
            std::fs::copy(me.with_file_name(name), bin.join(name)).unwrap();
        }
        cluster
    }

    pub fn shared(&self) -> PathBuf {
        self.dir.path().join("shared")
    }

    /// `docker exec pp-slurm-ctl <shared>/bin/polyprof ARGS…`: the driver on the controller.
    pub fn polyprof(&self) -> Command {
        let mut cmd = Command::new("docker");
        cmd.args(["exec", CTL])
            .arg(self.shared().join("bin/polyprof"));
        cmd
    }

    pub fn docker(&self, args: &[&str]) -> std::process::Output {
        Command::new("docker").args(args).output().unwrap()
    }
}

impl Drop for DockerCluster {
    fn drop(&mut self) {
        let _ = Command::new(super::script("slurm-docker.sh"))
            .args(["down", self.dir.path().to_str().unwrap()])
            .output();
    }
}

/// `polyprof batch FILE --output-dir ROOT --slurm` on `polyprof` (either cluster's driver
/// command); the test adds the rest.
pub fn slurm_batch(mut polyprof: Command, file: &Path, root: &Path) -> Command {
    polyprof
        .arg("batch")
        .arg(file)
        .arg("--output-dir")
        .arg(root)
        .arg("--slurm");
    polyprof
}

/// Wait (polling batch.json, at most `limit`) until `ready` holds of the index; the index
/// then. Not a speed check: the limit only keeps a broken cluster from hanging the suite.
pub fn wait_for(root: &Path, limit: Duration, ready: impl Fn(&BatchIndex) -> bool) -> BatchIndex {
    let start = Instant::now();
    loop {
        if let Ok(index) = BatchIndex::read(root)
            && ready(&index)
        {
            return index;
        }
        assert!(
            start.elapsed() < limit,
            "batch.json in {} never reached the awaited state within {limit:?}: {:?}",
            root.display(),
            BatchIndex::read(root).ok().map(|i| i
                .jobs
                .values()
                .map(|e| (e.id.clone(), e.state))
                .collect::<Vec<_>>())
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A fake Slurm command `bin/NAME`: it appends its name and arguments to `log`, then runs the
/// shell `body` (the outputs the tests captured from a real Slurm, a hang, a failure).
pub fn fake_command(bin: &Path, log: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = bin.join(name);
    let text = format!(
        "#!/bin/sh\n{{ printf '%s' {name}; for w in \"$@\"; do printf ' %s' \"$w\"; done; echo; }} >> '{}'\n{body}\n",
        log.display()
    );
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
