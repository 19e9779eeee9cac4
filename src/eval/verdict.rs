//! `verdict.json`: what the audit concluded from the evidence. Exit status 0 only when
//! `passed` (correct, and no finding).

use serde::{Deserialize, Serialize};

use super::evidence::Failure;

pub const VERDICT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvalVerdict {
    pub schema_version: u32,
    /// `correct`, no finding, and every check the eval called for ran.
    pub passed: bool,
    pub status: Status,
    pub correctness: Correctness,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<TimingSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness: Option<WitnessSummary>,
    /// The scored pass's calls on the GPU timeline, when the scored pass was traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<TimelineSummary>,
    /// Every check, whether it ran, and why not when it did not.
    pub checks: Vec<CheckRun>,
    /// Checks this eval called for (`eval::required_checks`) that did not run, each as
    /// `check: why not`; `passed` is false while any is listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_checks: Vec<String>,
    /// Distinct input sets the candidate's timed calls ran on, over all its blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_input_sets: Option<u32>,
    /// Timed outputs compared with the reference's (drawn at random after each block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_outputs_compared: Option<u32>,
    pub findings: Vec<Finding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// The device calibration the counter checks rested on, when the evidence had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationCitation>,
}

/// The calibration (`polyprof calibrate`) a verdict's counter checks rested on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CalibrationCitation {
    pub device_name: String,
    /// The profiler and its version.
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Seconds since the epoch when it was measured.
    pub created_unix_s: u64,
    /// Where it was cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every compared output matched the reference within tolerance.
    Correct,
    /// At least one output did not.
    Incorrect,
    /// The eval stopped early (see `failure`).
    Failed,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Correctness {
    pub compared: u32,
    pub passed: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_abs_diff: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rel_diff: Option<f64>,
    pub atol: f64,
    pub rtol: f64,
}

/// Times in milliseconds per call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimingSummary {
    pub method: String,
    pub reference: SideTimes,
    pub candidate: SideTimes,
    /// The candidate's score time: the median of its scored samples.
    pub score_ms: f64,
    pub speedup: Speedup,
    pub scored_samples: u32,
    pub unscored_samples: u32,
    /// Why samples were not scored (a block taken under throttling, another process, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unscored_reasons: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideTimes {
    pub samples: u32,
    pub median_ms: f64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub stddev_ms: f64,
}

/// Reference time over candidate time, with a distribution-free confidence interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Speedup {
    pub value: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub confidence: f64,
    pub method: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WitnessSummary {
    pub profiler: String,
    /// Witnessed GPU time of each profiled call (ms): the sum of its kernels' durations.
    pub per_call_ms: Vec<f64>,
    pub median_ms: f64,
    /// The candidate's score time over its witnessed time (1 is agreement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_over_witnessed: Option<f64>,
    /// Share of the calls' GPU time in kernels the candidate's source defines (0 to 1).
    pub coverage: f64,
    /// The candidate's own kernels that ran inside calls.
    pub candidate_kernels_launched: Vec<String>,
    /// Kernel launches outside any polyprof range (other threads, after the call).
    pub launches_outside_calls: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckRun {
    pub check: String,
    pub ran: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
    /// Parts of a check that ran but could not be judged, each with why (a counter the
    /// calibration marks untrusted, outputs that fit in the L2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<String>,
}

/// The kind of a finding; docs/eval.md says what each means, its rule and its margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    IncorrectOutput,
    UnwrittenOutput,
    InputsModified,
    TimedOutputIncorrect,
    ReportedTimeBelowWitness,
    KernelsOutsideCalls,
    WorkAfterCall,
    InconsistentCalls,
    DecoyKernels,
    NoCandidateKernel,
    SuspiciousSpeedup,
    ImplausibleTime,
    UnscoredSamples,
    DeviceNotReset,
    ConstantOutput,
    OutputIndependentOfInputs,
    OutputEqualsInput,
    TooLittleWork,
    AboveRoofline,
    PrecisionMismatch,
    // GPU work inside a harness step that the harness did not queue (`gpu_timeline`).
    WorkInHarnessStep,
    // The harness's marks on the GPU timeline were missing, doubled or out of order.
    TimelineMarksBroken,
    // The work pass's kernels are not the scored pass's (`work_matches_scored`).
    DifferentUnderProfiler,
    // The tracer lost records, so the timeline cannot show every call's work (`gpu_timeline`).
    TraceIncomplete,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    pub kind: FindingKind,
    /// The check that found it (the `checks` entry).
    pub check: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// The records behind it (trial indices, launch ids, blocks).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub evidence: serde_json::Value,
}

/// What the timeline says about the calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelineSummary {
    /// Call windows found.
    pub calls: usize,
    /// Per timing request (in order): the median GPU time of its calls (ms), and how many.
    pub blocks: Vec<BlockTime>,
    /// Activities outside every call that were not the harness's.
    pub outside: usize,
    /// Their GPU time (ms, summed).
    pub outside_ms: f64,
    pub setup_activities: usize,
    pub harness_activities: usize,
    /// Records the tracer lost.
    pub dropped: u64,
}

/// One timing block's calls on the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BlockTime {
    pub request: usize,
    pub calls: usize,
    /// Median GPU busy time of a call (ms).
    pub median_ms: f64,
    /// The candidate's own median for the block (ms), when the request reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_median_ms: Option<f64>,
}
