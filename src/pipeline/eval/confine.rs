//! The sandbox of the candidate's workers (docs/eval-harness.md, "The sandbox"): what they may
//! read (the system's libraries and toolchains, the Python environment, the candidate's folder,
//! the harness, /proc, /sys, the device nodes), what they may write (a fresh scratch folder per
//! worker; on CUDA the GPU's device nodes, /dev/shm and its own `/proc/<pid>`), no network, no
//! signal or abstract socket outside their own processes, and their resource limits. Decided
//! once per eval from the kernel's Landlock ABI; recorded in the evidence as `sandbox`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::eval::evidence::SandboxEvidence;
use crate::pipeline::eval::spec::{Device, EvalSpec, SandboxSetting};
use crate::pipeline::sandbox::{Confinement, Limits, landlock_abi};

/// Beneath these the candidate may read (those that exist here).
const SYSTEM_READ: [&str; 12] = [
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/dev",
    "/nix/store",
];
/// Device files a process writes without writing anything of the user's.
const DEVICE_WRITE: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];
/// What CUDA needs to write: the GPU's device nodes and the shared memory torch's IPC uses.
const CUDA_WRITE: [&str; 2] = ["/dev/dri", "/dev/shm"];
/// The largest file a candidate worker may write (its build caches included).
const FILE_SIZE_LIMIT: u64 = 16 << 30;

/// How the candidate's workers of one eval are started.
#[derive(Debug, Clone)]
pub struct CandidateSandbox {
    pub launcher: PathBuf,
    pub abi: u32,
    pub read: Vec<PathBuf>,
    /// Besides each worker's scratch folder.
    pub write: Vec<PathBuf>,
    pub limits: Limits,
    /// Its own `/proc/<pid>` writable too (CUDA: the driver library needs it).
    pub own_proc: bool,
}

impl CandidateSandbox {
    /// The confinement of one worker whose scratch folder is `scratch`; `under_profiler`: the
    /// worker runs under a profiler's injection (the witness and work passes), whose library
    /// must reach the profiler's process, so TCP and the IPC scopes stay open for it.
    pub fn confinement(&self, scratch: &Path, under_profiler: bool) -> Confinement {
        let mut write = vec![scratch.to_path_buf()];
        write.extend(self.write.iter().cloned());
        Confinement {
            abi: self.abi,
            read: self.read.clone(),
            write,
            limits: self.limits.clone(),
            profiler_ipc: under_profiler,
            own_proc: self.own_proc,
        }
    }
}

/// The eval's sandbox (or why there is none) and its evidence. `harness_dir` holds the worker
/// scripts; `candidate` is the candidate's file (absolute).
pub fn plan(
    spec: &EvalSpec,
    harness_dir: &Path,
    candidate: &Path,
) -> (Option<CandidateSandbox>, SandboxEvidence) {
    let launcher = match &spec.sandbox {
        SandboxSetting::Off => {
            return (
                None,
                not_confined("turned off (--sandbox off or POLYPROF_SANDBOX=off)"),
            );
        }
        SandboxSetting::NoLauncher => {
            return (
                None,
                not_confined(
                    "no sandbox launcher: polyprof-supervise is neither beside the running program nor on PATH",
                ),
            );
        }
        SandboxSetting::On { launcher } => launcher.clone(),
    };
    let Some(abi) = landlock_abi() else {
        return (
            None,
            not_confined("this kernel has no Landlock (Linux 5.13 or later, enabled at boot)"),
        );
    };
    let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
    read.extend(python_paths(&spec.python));
    read.push(harness_dir.to_path_buf());
    if let Some(folder) = candidate.parent() {
        read.push(folder.to_path_buf());
    }
    for variable in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(path) = std::env::var_os(variable).filter(|p| !p.is_empty()) {
            read.push(PathBuf::from(path));
        }
    }
    read.retain(|p| p.exists());
    read.sort();
    read.dedup();
    let mut write: Vec<PathBuf> = DEVICE_WRITE.iter().map(PathBuf::from).collect();
    if spec.device == Device::Cuda {
        write.extend(CUDA_WRITE.iter().map(PathBuf::from));
        write.extend(nvidia_nodes());
    }
    write.retain(|p| p.exists());
    let sandbox = CandidateSandbox {
        launcher,
        abi,
        read,
        write,
        limits: limits(spec),
        own_proc: spec.device == Device::Cuda,
    };
    let probe = sandbox.confinement(Path::new("<scratch>"), false);
    let evidence = SandboxEvidence {
        kind: "landlock".to_string(),
        abi: Some(abi),
        confines: probe.confines().iter().map(|c| c.to_string()).collect(),
        read: probe.read.iter().map(|p| p.display().to_string()).collect(),
        write: probe
            .write
            .iter()
            .map(|p| p.display().to_string())
            .chain(probe.own_proc.then(|| "/proc/<own pid>".to_string()))
            .collect(),
        limits: sandbox
            .limits
            .named()
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect::<BTreeMap<_, _>>(),
        note: None,
    };
    (Some(sandbox), evidence)
}

fn not_confined(why: &str) -> SandboxEvidence {
    SandboxEvidence {
        kind: "none".to_string(),
        note: Some(why.to_string()),
        ..Default::default()
    }
}

/// Each worker's limits. The address space is bounded on the CPU only (CUDA reserves far more
/// address space than it uses); CPU time is the eval's longest possible wall time on every
/// core; files up to [`FILE_SIZE_LIMIT`].
fn limits(spec: &EvalSpec) -> Limits {
    let o = &spec.options;
    let requests = u64::from(o.trials)
        + 2 * u64::from(o.timing_blocks)
        + u64::from(o.witness_calls)
        + u64::from(o.work_calls) * 10
        + 8;
    let wall = o.setup_timeout.as_secs() + o.call_timeout.as_secs().saturating_mul(requests);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    Limits {
        address_space: (spec.device == Device::Cpu).then(memory_limit).flatten(),
        cpu_seconds: Some(wall.saturating_mul(cores).max(60)),
        file_size: Some(FILE_SIZE_LIMIT),
    }
}

/// Half of the machine's memory (`MemTotal`), at least 4 GiB.
fn memory_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some((kib * 1024 / 2).max(4 << 30))
}

/// `/dev/nvidia*` (the control, UVM and per-GPU nodes).
fn nvidia_nodes() -> Vec<PathBuf> {
    std::fs::read_dir("/dev")
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("nvidia"))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// The interpreter's prefixes and import path, as it reports them when isolated (`-I`), and
/// the interpreter itself: what its imports read.
fn python_paths(python: &Path) -> Vec<PathBuf> {
    const SCRIPT: &str = "import sys\nfor p in [sys.prefix, sys.base_prefix, sys.exec_prefix, \
                          sys.base_exec_prefix, sys.executable] + sys.path:\n    print(p)";
    let mut paths = Vec::new();
    if let Ok(resolved) = which::which(python) {
        paths.push(resolved.clone());
        if let Ok(real) = std::fs::canonicalize(&resolved) {
            paths.push(real);
        }
    }
    let Ok(out) = std::process::Command::new(python)
        .args(["-I", "-c", SCRIPT])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return paths;
    };
    paths.extend(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with('/'))
            .map(PathBuf::from),
    );
    paths
}
