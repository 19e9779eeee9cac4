//! What one eval is asked to do ([`EvalSpec`]), with its defaults, and what it returns.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::pipeline::eval::bystanders::Bystanders;

use crate::eval::{EvalEvidence, EvalVerdict};
use crate::pipeline::runner::Tracking;

/// `cuda` or `cpu`: where the arrays live and how they cross between workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Cuda,
    Cpu,
}

impl Device {
    pub fn as_str(self) -> &'static str {
        match self {
            Device::Cuda => "cuda",
            Device::Cpu => "cpu",
        }
    }

    /// Whose GPUs this device is (its device tool reads their conditions); `None` for the CPU.
    pub fn vendor(self) -> Option<crate::profilers::registry::Vendor> {
        match self {
            Device::Cuda => Some(crate::profilers::registry::Vendor::Nvidia),
            Device::Cpu => None,
        }
    }

    /// How arrays cross between the workers: CUDA IPC handles, or bytes through polyprof.
    pub fn transport(self) -> &'static str {
        match self {
            Device::Cuda => "ipc",
            Device::Cpu => "bytes",
        }
    }
}

impl std::str::FromStr for Device {
    type Err = crate::model::error::Error;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "cuda" => Ok(Device::Cuda),
            "cpu" => Ok(Device::Cpu),
            other => Err(crate::model::error::Error::UnknownValue {
                what: "eval device",
                value: other.to_string(),
                valid: "cuda, cpu".to_string(),
            }),
        }
    }
}

/// What to do when the output directory already holds an eval (or anything else).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IfExists {
    /// Refuse it: the caller named the directory.
    #[default]
    Refuse,
    /// Take the next free `<name>.NNN` beside it.
    Number,
}

/// The tunable parts of an eval; [`Default`] is the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalOptions {
    pub trials: u32,
    pub timing_blocks: u32,
    pub repeat: u32,
    pub warmup: u32,
    pub atol: f64,
    pub rtol: f64,
    pub flush_l2: bool,
    pub witness_calls: u32,
    /// The witness profiler (`ncu`); `None`: no witness pass. Only used with `--device cuda`.
    pub witness_profiler: Option<String>,
    pub witness_tolerance: f64,
    /// Trace the candidate's scored pass (the witness profiler's GPU tracer) and judge its calls
    /// on the GPU timeline; the separate witness pass is then not taken. CUDA only; where the
    /// tracer cannot be built the witness pass is taken instead and the evidence says why.
    pub scored_trace: bool,
    pub suspicious_speedup: f64,
    pub min_plausible_ms: f64,
    pub require_candidate_kernels: bool,
    /// A correct candidate gets a work pass (counters of what its calls moved and computed,
    /// under the witness profiler); CUDA only.
    pub work_pass: bool,
    /// Calls the work pass profiles, each on fresh inputs, each checked (0: no work pass).
    pub work_calls: u32,
    /// The FLOPs one call must do (an analytic count the user gives), for the FLOP floor.
    pub flops_per_call: Option<f64>,
    /// TF32 tensor math counts as FP32 work (the task allows it).
    pub allow_tf32: bool,
    /// The init seed both sides build their model under; `None`: a fresh one from the OS.
    pub init_seed: Option<u64>,
    /// Limit of each call, check and timing request.
    pub call_timeout: Duration,
    /// Limit of starting a worker and its `setup` (imports, compilation).
    pub setup_timeout: Duration,
}

/// `reported_time_below_witness` below this share of the witnessed time. Measured from honest
/// runs: the 60 H200 captures whose candidate passed (tests/fixtures/eval-h200: the corpus's
/// honest candidates, KernelBench problems as their own candidates, 0.02–11 ms) read score /
/// witness 0.976–1.081; the lowest, 0.976, is a 19 µs reduction (honest_prod_torch). 0.9 sits
/// three times that 2.4 % shortfall below it; the hostile captures read 0.34, 0.05 and 0.0001.
/// (`eval_h200_captures::the_witness_tolerance_is_measured_from_honest_runs` re-derives it.)
pub const DEFAULT_WITNESS_TOLERANCE: f64 = 0.9;

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            trials: 3,
            timing_blocks: 5,
            repeat: 50,
            warmup: 5,
            atol: 1e-2,
            rtol: 1e-2,
            flush_l2: true,
            witness_calls: 3,
            witness_profiler: Some("ncu".to_string()),
            witness_tolerance: DEFAULT_WITNESS_TOLERANCE,
            scored_trace: true,
            suspicious_speedup: 10.0,
            min_plausible_ms: 0.001,
            require_candidate_kernels: false,
            work_pass: true,
            work_calls: 1,
            flops_per_call: None,
            allow_tf32: false,
            init_seed: None,
            call_timeout: Duration::from_secs(120),
            setup_timeout: Duration::from_secs(600),
        }
    }
}

impl EvalOptions {
    /// Values an eval cannot run with, said plainly.
    pub fn validate(&self) -> crate::model::error::Result<()> {
        let invalid = |what: &str, why: &str| {
            Err(crate::model::error::Error::invalid(
                what.to_string(),
                why.to_string(),
            ))
        };
        if self.trials == 0 {
            return invalid("trials", "at least one correctness trial is needed");
        }
        if self.repeat == 0 {
            return invalid("repeat", "at least one timed call per block is needed");
        }
        if let Some(flops) = self.flops_per_call
            && (!flops.is_finite() || flops <= 0.0)
        {
            return invalid("flops per call", "give a finite number above 0");
        }
        for (what, value) in [
            ("atol", self.atol),
            ("rtol", self.rtol),
            ("witness tolerance", self.witness_tolerance),
            ("suspicious speedup", self.suspicious_speedup),
            ("min plausible ms", self.min_plausible_ms),
        ] {
            if !value.is_finite() || value < 0.0 {
                return invalid(what, "give a finite number of 0 or more");
            }
        }
        Ok(())
    }
}

/// One eval: the two files, where it goes, how it runs.
#[derive(Debug, Clone)]
pub struct EvalSpec {
    pub reference: PathBuf,
    pub candidate: PathBuf,
    pub output_dir: PathBuf,
    pub if_exists: IfExists,
    pub device: Device,
    /// The Python interpreter of the workers.
    pub python: PathBuf,
    pub options: EvalOptions,
    /// How each worker's process tree is tracked and ended.
    pub tracking: Tracking,
    /// Variables set for both workers on top of their environment policy (a batch pool's
    /// device pinning: the same device for both sides).
    pub extra_env: BTreeMap<String, String>,
    /// Stops the eval (workers get SIGTERM, then SIGKILL after their grace).
    pub cancel: CancellationToken,
    /// Stops the eval at once (SIGKILL).
    pub kill_now: CancellationToken,
    /// The workers started ahead of their turn (the next candidate's scored worker, this one's
    /// work pass worker), held stopped while this eval's timing blocks run. Whoever runs evals
    /// one after another gives them all the same.
    pub bystanders: Bystanders,
    /// How the candidate's workers are confined (on by default).
    pub sandbox: SandboxSetting,
}

/// Whether the candidate's workers start under the sandbox launcher
/// (`pipeline::sandbox`), and which binary launches them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSetting {
    /// Confined with Landlock where the kernel has it; `launcher` is a binary whose `main`
    /// calls `pipeline::sandbox::run_if_requested` (`polyprof-supervise`, `polyprof`).
    On { launcher: PathBuf },
    /// Not confined (`--sandbox off`, `POLYPROF_SANDBOX=off`): the verdict says so.
    Off,
    /// No launcher was found (no `polyprof-supervise` beside the running program or on
    /// `PATH`): not confined, and the verdict says why.
    NoLauncher,
}

impl SandboxSetting {
    /// On, launched by `polyprof-supervise` beside the running executable, else the running
    /// executable when it is a polyprof binary, else `polyprof-supervise` on `PATH` (the
    /// Python package runs in the interpreter's process); off when `POLYPROF_SANDBOX` is
    /// `off`.
    pub fn from_environment() -> SandboxSetting {
        if std::env::var("POLYPROF_SANDBOX").is_ok_and(|v| v.trim().eq_ignore_ascii_case("off")) {
            return SandboxSetting::Off;
        }
        let me = std::env::current_exe().ok();
        let beside = me
            .as_ref()
            .map(|me| me.with_file_name("polyprof-supervise"))
            .filter(|p| p.is_file());
        let polyprof_itself = me.filter(|me| {
            me.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("polyprof"))
        });
        match beside
            .or(polyprof_itself)
            .or_else(|| which::which("polyprof-supervise").ok())
        {
            Some(launcher) => SandboxSetting::On { launcher },
            None => SandboxSetting::NoLauncher,
        }
    }
}

impl EvalSpec {
    pub fn new(
        reference: impl Into<PathBuf>,
        candidate: impl Into<PathBuf>,
        output_dir: impl Into<PathBuf>,
    ) -> Self {
        EvalSpec {
            reference: reference.into(),
            candidate: candidate.into(),
            output_dir: output_dir.into(),
            if_exists: IfExists::Refuse,
            device: Device::Cuda,
            python: default_python(),
            options: EvalOptions::default(),
            tracking: Tracking::default(),
            extra_env: BTreeMap::new(),
            cancel: CancellationToken::new(),
            kill_now: CancellationToken::new(),
            bystanders: Bystanders::default(),
            sandbox: SandboxSetting::from_environment(),
        }
    }
}

/// `$POLYPROF_PYTHON`, else `python3`.
pub fn default_python() -> PathBuf {
    std::env::var_os("POLYPROF_PYTHON")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

/// What an eval produced: both documents (also written in `dir`).
#[derive(Debug, Clone)]
pub struct EvalOutcome {
    pub dir: PathBuf,
    pub evidence: EvalEvidence,
    pub verdict: EvalVerdict,
}

impl EvalOutcome {
    /// Whether the eval itself could not run (bad reference, no Python, polyprof's own
    /// failure), as opposed to judging the candidate.
    pub fn harness_failed(&self) -> bool {
        use crate::eval::evidence::FailureKind;
        self.evidence
            .failure
            .as_ref()
            .is_some_and(|f| matches!(f.kind, FailureKind::ReferenceError | FailureKind::Harness))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_documented_ones() {
        let o = EvalOptions::default();
        assert_eq!(
            (o.trials, o.timing_blocks, o.repeat, o.warmup),
            (3, 5, 50, 5)
        );
        assert_eq!((o.atol, o.rtol), (1e-2, 1e-2));
        assert!(o.flush_l2 && !o.require_candidate_kernels);
        assert_eq!(o.witness_calls, 3);
        assert!(o.work_pass && !o.allow_tf32 && o.flops_per_call.is_none());
        assert_eq!(o.work_calls, 1);
        assert_eq!(o.call_timeout, Duration::from_secs(120));
        assert_eq!(o.setup_timeout, Duration::from_secs(600));
        o.validate().unwrap();
    }

    #[test]
    fn unusable_options_are_refused() {
        let zero = EvalOptions {
            trials: 0,
            ..EvalOptions::default()
        };
        assert!(zero.validate().unwrap_err().to_string().contains("trials"));
        let nan = EvalOptions {
            atol: f64::NAN,
            ..EvalOptions::default()
        };
        assert!(nan.validate().unwrap_err().to_string().contains("atol"));
        let flops = EvalOptions {
            flops_per_call: Some(0.0),
            ..EvalOptions::default()
        };
        assert!(flops.validate().unwrap_err().to_string().contains("flops"));
        assert!("gpu".parse::<Device>().is_err());
        assert_eq!("cpu".parse::<Device>().unwrap(), Device::Cpu);
    }
}
