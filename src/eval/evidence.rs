//! What an eval recorded, as `evidence.json` holds it: the problem, the options, every trial's
//! comparison, every timing block with the device conditions around it, the witness's kernel
//! launches and any failure. The audit ([`super::audit`]) judges this and nothing else, so a
//! saved eval can be re-judged offline (`polyprof audit DIR`).
//!
//! Everything here was measured outside the candidate's process (the orchestrator, the trusted
//! worker, the profiler), except what is marked `candidate_reported`: the candidate process's
//! own timings, which the witness checks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning; the audit refuses newer evidence than it knows.
pub const EVIDENCE_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvalEvidence {
    pub schema_version: u32,
    pub problem: ProblemInfo,
    pub settings: EvalSettings,
    pub environment: Environment,
    /// Kernel names the candidate's source defines (`__global__` functions, `@triton.jit`
    /// functions), read by polyprof from the file: what counts as the candidate's own work.
    #[serde(default)]
    pub candidate_kernels: Vec<String>,
    #[serde(default)]
    pub trials: Vec<TrialEvidence>,
    /// Timing blocks of both sides, in the order they ran (interleaved).
    #[serde(default)]
    pub samples: Vec<TimingBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness: Option<WitnessEvidence>,
    /// The scored pass's GPU timeline: what the tracer recorded in the candidate's worker and
    /// the marks sent with each request (docs/eval-harness.md, "The GPU timeline").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<ScoredTrace>,
    /// The candidate's work pass: one call profiled with work counters (DRAM bytes, FLOPs per
    /// precision, SM clock), caches flushed before each kernel. Run only for a candidate that
    /// is correct and not already judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<WitnessEvidence>,
    /// The reference's work pass, taken when the candidate's work needs comparing with it
    /// (a lower precision than the task's dtypes: did the reference do the same?).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_work: Option<WitnessEvidence>,
    /// Where `reference_work` came from when a warm evaluator reused the pass it took beside an
    /// earlier candidate (docs/eval-harness.md, "The warm evaluator"). Absent when the pass was
    /// taken beside this candidate, or not at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_work_reused: Option<ReferenceWorkReuse>,
    /// The device's calibration the work checks rest on (`polyprof calibrate`), when cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<crate::model::calibration::Calibration>,
    /// How the candidate's processes were confined (docs/eval-harness.md, "The sandbox").
    /// Absent in evidence written before the sandbox existed: the audit reads that as not
    /// confined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxEvidence>,
    /// Where the reference's timing blocks came from when a warm evaluator judged this
    /// candidate (docs/eval-harness.md, "The warm evaluator"). Absent for a cold eval, whose
    /// reference blocks were all measured beside this candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_timing: Option<ReferenceTiming>,
    /// The trusted worker's run directory when it is not this eval's `reference.000`: a warm
    /// evaluator's, set up once and shared by the candidates it judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_run: Option<String>,
    /// The candidate's build stage (docs/eval-harness.md, "The build stage"): its import in a
    /// worker of its own with no device visible, before the judged turn. Absent in evidence
    /// written before the build stage existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildEvidence>,
    /// The judged turn (the trusted worker and the candidate's workers on the device): when it
    /// began and ended. Absent when it never began (a failed build): no device time spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<JudgedTurn>,
    /// Why the eval stopped early, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

/// The scored pass as the tracer saw it. Everything the audit needs to re-judge the calls: the
/// records themselves (not a path to them), and each request as it was sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScoredTrace {
    /// The tracer (its library's name).
    pub tracer: String,
    /// The folder it wrote, relative to the eval directory.
    pub dir: String,
    /// The candidate's worker's pid, from its socket's peer credentials: whose trace holds the
    /// calls. `None` when the worker never connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_pid: Option<u32>,
    /// Each request sent to the candidate's worker, in order, with the marks drawn for it.
    #[serde(default)]
    pub requests: Vec<SentRequest>,
    /// The records themselves, in a file of their own beside evidence.json (a small kernel's
    /// eval records tens of thousands of activities).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<RecordsFile>,
    /// One trace per process that loaded the tracer (the worker, and any child that used the
    /// device): loaded from `records` (`evidence_read::load_records`), or still in memory from
    /// the eval that took them.
    #[serde(skip)]
    #[schemars(skip)]
    pub traces: Vec<crate::model::gpu_trace::GpuTrace>,
    /// The tracer could not be built, loaded or read: why (the timeline is then not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The scored pass's records: gzipped JSON (a list of `GpuTrace`), named relative to the eval
/// directory, with its digest (written once the candidate's processes were gone: a file that
/// no longer matches is not judged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecordsFile {
    pub path: String,
    pub sha256: String,
    /// Activities over all its traces.
    pub activities: u64,
}

/// One request to the candidate's worker and the times its answer reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SentRequest {
    #[serde(flatten)]
    pub request: crate::eval::timeline::MarkedRequest,
    /// A timing block's per-call times as the candidate's worker reported them (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_times_ms: Option<Vec<f64>>,
}

/// The candidate's build stage: where and how long it ran, and whether the judged import
/// found its products unchanged. Recorded by polyprof from outside the build worker (its exit,
/// its build folder's listing), never from anything the worker said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BuildEvidence {
    /// The build worker's run directory (its logs), relative to the eval directory.
    pub run_dir: String,
    /// The devices the build worker could see: `none`.
    pub devices: String,
    /// `TORCH_CUDA_ARCH_LIST` the build was given (the eval's GPU's compute capability, or the
    /// user's own setting); absent on the CPU or when the GPU could not be identified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// When the build worker started and ended (RFC 3339, UTC, nanoseconds).
    pub started_at: String,
    pub ended_at: String,
    pub seconds: f64,
    /// It ran ahead of the judged turn, beside other candidates' builds or judging.
    pub ahead: bool,
    /// Files the build left in its build folder (`POLYPROF_BUILD_DIR`, `TORCH_EXTENSIONS_DIR`,
    /// `TRITON_CACHE_DIR`).
    pub files: u32,
    /// Whether the judged worker's import left the build folder as the build left it (it
    /// reused every product, built nothing again); absent when the judged import never ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused: Option<bool>,
    /// The build's outcome when it did not succeed, or why the judged turn still ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The judged turn of one candidate: from its trusted worker's first request (or a warm one's
/// hand-over) to its last worker's end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JudgedTurn {
    /// RFC 3339, UTC, nanoseconds.
    pub started_at: String,
    pub ended_at: String,
    pub seconds: f64,
    /// The candidate's scored worker was started before this turn, while the previous
    /// candidate's work pass ran (its interpreter and imports only; its code ran in this turn).
    #[serde(default)]
    pub worker_started_ahead: bool,
}

/// A warm evaluator's reference timing blocks: measured beside an earlier candidate under the
/// same conditions and reused after a drift probe, or measured beside this one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReferenceTiming {
    /// The reference blocks in `samples` (by `block`) that were measured beside an earlier
    /// candidate; empty: every reference block was measured beside this one. Block 0 never is:
    /// it is measured here and is the drift probe.
    #[serde(default)]
    pub reused_blocks: Vec<u32>,
    /// The eval directory whose run measured the reused blocks (this one's when none were).
    pub measured_in: String,
    /// When those blocks' timing began (RFC 3339, UTC).
    pub measured_at: String,
    /// The conditions they hold for: device, its identity and driver, interpreter and library
    /// versions, threads. Other conditions are never reused.
    pub conditions: String,
    /// Candidates judged with these blocks before this one.
    pub reused_before: u32,
    /// Why they were measured here rather than reused, when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_because: Option<String>,
    /// The drift probe, when there were stored blocks to compare with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<DriftProbe>,
}

/// A reference work pass taken beside an earlier candidate of the same warm evaluator and
/// reused: the reference's kernels, their precisions and bytes do not depend on the candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReferenceWorkReuse {
    /// The eval directory the pass ran in; `reference_work.run_dir` is relative to it.
    pub measured_in: String,
    /// When it was taken (RFC 3339, UTC).
    pub measured_at: String,
    /// The conditions it holds for (as `ReferenceTiming::conditions`) and the profiler's
    /// settings; under others it is taken again.
    pub conditions: String,
    /// Candidates judged with it before this one.
    pub reused_before: u32,
}

/// This eval's first reference block (timed as any reference block is, the candidate's
/// processes stopped) compared with the stored blocks it would let be reused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DriftProbe {
    /// When it was taken (RFC 3339, UTC).
    pub taken_at: String,
    pub times_ms: Vec<f64>,
    pub median_ms: f64,
    /// The median of the stored reference blocks' medians.
    pub stored_median_ms: f64,
    /// The lowest and the highest of the stored blocks' medians.
    pub stored_low_ms: f64,
    pub stored_high_ms: f64,
    /// `median_ms / stored_median_ms`.
    pub ratio: f64,
    /// `median_ms` must lie within `[stored_low_ms / bound, stored_high_ms · bound]` for the
    /// stored blocks to be reused.
    pub bound: f64,
    /// Outside the bound (or the device's clocks changed): the stored blocks were dropped and
    /// the reference re-measured beside this candidate.
    pub drifted: bool,
}

/// The confinement every process that ran candidate code was started under.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SandboxEvidence {
    /// `landlock`, or `none` (turned off, or the kernel has no Landlock).
    pub kind: String,
    /// The Landlock ABI the rules were enforced at (the launcher refuses to start the worker
    /// when the kernel cannot enforce all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abi: Option<u32>,
    /// What was confined: `filesystem`, `network` (TCP bind and connect), `signals` and
    /// `abstract_unix_sockets` (nothing outside the candidate's own processes).
    #[serde(default)]
    pub confines: Vec<String>,
    /// Paths the candidate may read (and execute) beneath.
    #[serde(default)]
    pub read: Vec<String>,
    /// Paths the candidate may write beneath (its scratch folder, device nodes).
    #[serde(default)]
    pub write: Vec<String>,
    /// Resource limits of each candidate worker (`address_space_bytes`, `cpu_seconds`,
    /// `file_size_bytes`), as set before its Python started.
    #[serde(default)]
    pub limits: BTreeMap<String, u64>,
    /// Why the candidate was not confined, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What a sandbox must confine for the candidate to count as confined.
pub const CONFINED: [&str; 4] = ["filesystem", "network", "signals", "abstract_unix_sockets"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProblemInfo {
    pub reference: SourceFile,
    pub candidate: SourceFile,
    /// `torch` or `numpy`: the array type of the reference's inputs.
    #[serde(default)]
    pub framework: String,
    /// `cuda` or `cpu`.
    pub device: String,
    /// FLOPs of one reference call as the trusted worker counted them analytically
    /// (`torch.utils.flop_counter.FlopCounterMode`: matmuls, convolutions, attention), the FLOP
    /// floor's count when `--flops` is not given. Absent when not counted (`flops_note` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_flops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops_note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SourceFile {
    pub path: String,
    pub sha256: String,
}

/// The options the eval ran with (every one documented in docs/eval.md with its default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvalSettings {
    /// Correctness trials before timing, each on fresh inputs from a secret seed.
    pub trials: u32,
    /// Interleaved timing blocks per side.
    pub timing_blocks: u32,
    /// Timed calls per block.
    pub repeat: u32,
    pub warmup: u32,
    pub atol: f64,
    pub rtol: f64,
    pub flush_l2: bool,
    /// Calls the witness profiles (each on fresh inputs, each checked).
    pub witness_calls: u32,
    /// The profiler the witness ran under (`ncu`), or none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness_profiler: Option<String>,
    /// `reported_time_below_witness` when the candidate's score time is below this share of
    /// its witnessed kernel time.
    pub witness_tolerance: f64,
    /// `suspicious_speedup` above this speedup.
    pub suspicious_speedup: f64,
    /// A candidate that launches none of its own kernels is a finding, not only a figure.
    pub require_candidate_kernels: bool,
    /// Score times below this (ms) are `implausible_time`.
    pub min_plausible_ms: f64,
    /// The init seed (known to both sides: the candidate's weights must match the reference's).
    pub init_seed: u64,
    /// Whether a correct candidate gets a work pass (counters) for the work and physics checks:
    /// asked for, and possible (CUDA, a profiler that takes one). False on the CPU.
    #[serde(default)]
    pub work_pass: bool,
    /// Calls the work pass profiles (each on fresh inputs, each checked).
    #[serde(default)]
    pub work_calls: u32,
    /// The FLOPs one call must do, as the user gave them (analytic count), for the FLOP floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops_per_call: Option<f64>,
    /// TF32 tensor math counts as FP32 work (the task allows it).
    #[serde(default)]
    pub allow_tf32: bool,
    /// Timed calls of each candidate block compared with the reference, drawn at random after
    /// the block ran (0: only the block's last call, as evidence made before pools).
    #[serde(default)]
    pub timed_checks: u32,
    /// The candidate's scored pass ran under polyprof's GPU tracer, its calls bounded by the
    /// harness's marks on the GPU timeline (`timeline`): that pass is the witness, and no
    /// separate witness pass was planned. False in evidence from before the tracer was wired.
    #[serde(default)]
    pub scored_trace: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numpy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness_tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polyprof: Option<String>,
}

/// Which part of the eval a trial served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrialPhase {
    /// Before timing: fresh inputs, one call, compared.
    Correctness,
    /// A timed call's output, compared: one drawn at random after its block (`timed_call`,
    /// `block`), or the block's last (evidence without an input pool, the CUDA path).
    Timed,
    /// A call under the witness, compared too.
    Witness,
    /// A call under the work pass's counters, compared too.
    Work,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrialEvidence {
    pub index: u32,
    pub phase: TrialPhase,
    /// The secret seed, revealed here after the candidate's process is gone.
    pub seed: u64,
    #[serde(default)]
    pub inputs: Vec<TensorSpec>,
    #[serde(default)]
    pub reference_outputs: Vec<TensorSpec>,
    #[serde(default)]
    pub candidate_outputs: Vec<TensorSpec>,
    /// Absent when the candidate failed before giving outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// The inputs handed to the candidate, compared with the trusted copy after the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_unchanged: Option<bool>,
    /// Wall time of the call as the orchestrator saw it (ms), for information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_ms: Option<f64>,
    /// A timed trial: the position of the compared call in its block (0-based), drawn after
    /// the block ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_call: Option<u32>,
    /// A timed trial: the block (`TimingBlock::block`) whose call it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<u32>,
}

/// Shape, dtype and a few cheap statistics of one array (computed by the trusted worker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TensorSpec {
    pub dtype: String,
    pub shape: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stride: Vec<i64>,
    pub nbytes: u64,
    /// Not an array (an int or float argument), as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<ArrayStats>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArrayStats {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    /// Elements that are NaN (the poison pattern reads as NaN in floating point).
    pub nan_count: u64,
    /// A content digest (hex): equal digests mean equal bytes.
    pub digest: String,
}

/// The trusted worker's comparison of one trial's outputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    pub passed: bool,
    /// `shape`, `dtype`, `count` (number of outputs) or `values` when not passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_abs_diff: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rel_diff: Option<f64>,
    /// Elements outside `atol + rtol * |reference|`.
    #[serde(default)]
    pub mismatched_elements: u64,
    #[serde(default)]
    pub total_elements: u64,
    /// Candidate elements still holding the poison written before the call.
    #[serde(default)]
    pub poisoned_elements: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Reference,
    Candidate,
}

/// One block of timed calls of one side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimingBlock {
    pub side: Side,
    pub block: u32,
    /// `graph_pairs`, `events` or `host`.
    pub method: String,
    /// Calls per graph replay (graph pairs), else 1.
    #[serde(default = "one")]
    pub batch: u32,
    /// Per-call times (ms) as the side's own process measured them; the candidate's are what the
    /// witness checks.
    pub times_ms: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_state: Option<DeviceState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions_before: Option<Conditions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions_after: Option<Conditions>,
    /// The distinct input sets the block's timed calls cycled through (trial indices, each from
    /// its own secret seed), in a secret order; empty: every call ran on one trial's inputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_trials: Vec<u32>,
    /// The trial the untimed warm-up calls ran on (in no block's pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_trial: Option<u32>,
    /// Positions of the timed calls whose outputs were compared (candidate blocks), drawn by
    /// the orchestrator after the block had run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checked_calls: Vec<u32>,
    /// The other side's processes were stopped (SIGSTOP) while this block ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_side_stopped: Option<bool>,
    /// Workers started ahead of their turn (the next candidate's scored worker) held stopped
    /// while this block ran; those that connected during it were stopped then.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bystanders_stopped: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn one() -> u32 {
    1
}

/// Device state the side's worker reset and read back before its samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeviceState {
    /// `cudaLimitPersistingL2CacheSize` after the reset (should be 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persisting_l2_limit_bytes: Option<u64>,
    /// `cudaCtxResetPersistingL2Cache` returned success.
    #[serde(default)]
    pub persisting_l2_reset: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The GPU as `nvidia-smi` saw it around a block (outside both workers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Conditions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_clock_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sm_clock_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    /// Active clock event reasons by name (`sw_thermal_slowdown`, `hw_slowdown`, …); idle and
    /// application-clock settings are left out.
    #[serde(default)]
    pub throttle_reasons: Vec<String>,
    /// Processes on the GPU that are not this eval's workers.
    #[serde(default)]
    pub other_processes: Vec<u32>,
}

/// The witness pass: the candidate run again under a profiler, each call in its own range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WitnessEvidence {
    pub profiler: String,
    /// The witness run's directory, relative to the eval directory.
    pub run_dir: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_control: Option<String>,
    /// The profiler's cache policy between kernels: `all` (flushed before each kernel, so DRAM
    /// reads are first touches) or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<String>,
    /// Every kernel launch the profiler recorded in the candidate's process, in launch order.
    #[serde(default)]
    pub launches: Vec<WitnessLaunch>,
    /// The witness could not be taken (profiler missing, run failed): why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WitnessLaunch {
    pub launch_id: u64,
    pub name: String,
    pub short_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<f64>,
    /// The launching thread's open ranges, outermost first (`polyprof/call/3`).
    #[serde(default)]
    pub ranges: Vec<String>,
    /// The launching thread's OS id, when the profiler named it (ncu: inside a range only). The
    /// candidate chooses its range names but not this: a range of the harness's on another
    /// thread than the one that ran the calls was pushed by the candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<u32>,
    /// Work counters (work pass only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<LaunchCounters>,
}

/// What one launch moved and computed, as the work pass's counters read it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LaunchCounters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_bytes_read: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_bytes_write: Option<f64>,
    #[serde(default)]
    pub flops: crate::model::FlopCounts,
    /// The SM clock the kernel ran at (Hz).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_hz: Option<f64>,
    /// The DRAM clock during the kernel (Hz).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_clock_hz: Option<f64>,
}

/// Where an eval stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Build,
    Reference,
    Load,
    Setup,
    Correctness,
    Timing,
    Witness,
    // The work pass (the candidate under the work counters). No doc comment: the schema keeps
    // the stages one plain enum.
    Work,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The candidate's build stage failed: its import raised or its compiler failed in the
    /// build worker (no device visible); its judged turn never began.
    BuildFailed,
    /// The candidate's source did not import or its extension did not compile.
    CompileError,
    /// The candidate raised a Python exception.
    Raised,
    /// A call or setup ran past its time limit.
    Timeout,
    /// The process died (a signal, `os._exit`).
    Crashed,
    /// The GPU reported a fault (illegal address, XID, launch failure): the device is suspect.
    DeviceFault,
    /// Outputs of the wrong type (not an array, a lazy subclass).
    BadOutput,
    /// The reference itself failed: the problem, not the candidate.
    ReferenceError,
    /// polyprof could not run the eval (no Python, no torch): nothing about the candidate.
    Harness,
    /// The candidate reached outside its process: it killed or stopped the trusted worker,
    /// flooded its output, or changed files of the eval (the harness, the reference, the
    /// documents). Judged against it.
    Interfered,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Failure {
    pub stage: Stage,
    pub kind: FailureKind,
    pub message: String,
    /// The log that holds the details, relative to the eval directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}
