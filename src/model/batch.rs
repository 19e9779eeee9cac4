//! The batch index (`batch.json`) and its entries: what a batch of jobs ran, where each job's
//! run directory is, and how each ended. Written by the batch driver (the local pool or the
//! Slurm driver); per-job truth lives in `runs/<id>/entry.json` beside each run's `run.json`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::error::{Error, Result};
use crate::model::outcome::Outcome;

/// File name of the batch index in the batch root.
pub const BATCH_FILE: &str = "batch.json";
/// File name of one job's entry inside its run directory.
pub const ENTRY_FILE: &str = "entry.json";
/// Folder of the run directories inside the batch root.
pub const RUNS_DIR: &str = "runs";
/// Bumped whenever a field of the index changes meaning or is removed.
pub const BATCH_SCHEMA_VERSION: u32 = 1;

/// Which driver ran the batch.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// The device pool on this host.
    #[default]
    Local,
    /// A Slurm job array.
    Slurm,
    /// Ray jobs through a Ray cluster's Job Submission API.
    Ray,
}

/// Where one job stands.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    /// Not started yet.
    #[default]
    Pending,
    /// Started and not finished (or the driver died while it ran).
    Running,
    /// The command succeeded and polyprof did its pass.
    Succeeded,
    /// The command itself failed (non-zero exit, killed by a signal it was not sent).
    Failed,
    /// The overall or inactivity timeout stopped it.
    TimedOut,
    /// polyprof, the profiler or the infrastructure failed (profiler unavailable, unreadable
    /// output, a device error); rerun by `--resume`.
    Crashed,
    /// Stopped by the user (Ctrl-C) or the scheduler.
    Cancelled,
    /// Its result never arrived (a Slurm node failure); rerun by `--resume`.
    Lost,
    /// Not run: a stage of the cascade left it out (`cascade.skip` says which stage, which
    /// figure against which limit); decided again by `--resume`.
    Skipped,
}

impl EntryState {
    /// Whether the job has ended (well or badly).
    pub fn is_final(self) -> bool {
        !matches!(self, EntryState::Pending | EntryState::Running)
    }

    /// Whether `--resume` keeps this state (when the run document reads back): the job ran to
    /// its own end. Crashed, lost and cancelled jobs (cut off by Ctrl-C or the scheduler) and
    /// unfinished ones are run again.
    pub fn kept_on_resume(self) -> bool {
        matches!(
            self,
            EntryState::Succeeded | EntryState::Failed | EntryState::TimedOut
        )
    }

    /// The lowercase name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            EntryState::Pending => "pending",
            EntryState::Running => "running",
            EntryState::Succeeded => "succeeded",
            EntryState::Failed => "failed",
            EntryState::TimedOut => "timed_out",
            EntryState::Crashed => "crashed",
            EntryState::Cancelled => "cancelled",
            EntryState::Lost => "lost",
            EntryState::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for EntryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What Slurm said about the array task that ran a job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SlurmTaskInfo {
    pub array_job_id: String,
    pub task_id: u32,
    /// Slurm's state name (`COMPLETED`, `NODE_FAIL`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// What Ray said about the Ray job that ran a batch job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RayJobInfo {
    /// The Ray job's submission id (`polyprof-<batch key>-<task index>-<n>`).
    pub submission_id: String,
    /// Ray's job status (`PENDING`, `RUNNING`, `SUCCEEDED`, `FAILED`, `STOPPED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Ray's error type of a failed job (`JOB_SUPERVISOR_ACTOR_DIED`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The Ray node the job's entrypoint ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// That node's address, as Ray lists it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ip: Option<String>,
}

/// The Ray cluster a batch went to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RayBatchInfo {
    /// The dashboard address given (`http://host:8265`).
    pub address: String,
    /// The key every submission id and metadata of this batch root carries.
    pub batch_key: String,
}

/// One job of a batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BatchEntry {
    pub id: String,
    pub state: EntryState,
    /// The job's run directory, relative to the batch root (`runs/<id>`).
    pub run_dir: String,
    /// The run directories of each profiler pass, relative to the batch root; one pass: just
    /// `run_dir`, several (a selection with three unitrace passes): `runs/<id>/<profiler>.<NNN>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passes: Vec<String>,
    /// Attempts made (1 + retries used); 0 before it ran.
    pub attempts: u32,
    /// The device it ran on (`nvidia:0`, `cpu:1`), as the pool names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Host name of the node it ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_unix_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// The command's exit code, when it exited by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How the main step of the last pass ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Kernel records over every pass.
    pub kernels: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_kernel_ns: Option<f64>,
    /// Short name of the kernel with the largest total duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_kernel: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The line of output that marks the failure as the device's, not the job's (the pool
    /// counts these towards quarantining the device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_error: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmTaskInfo>,
    /// The Ray job that ran it (a `--ray` batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray: Option<RayJobInfo>,
    /// Digest of the job's definition as it ran (command, profiler, settings, environment;
    /// not its id, labels or retries): `--resume` reruns a finished job whose definition has
    /// changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_digest: Option<String>,
    /// What an eval job's verdict said (`verdict.json` in the run directory has it all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval: Option<EvalSummary>,
    /// The cascade stage this job is (a job of a `problem` of the job file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cascade: Option<CascadeStage>,
}

/// Which stage of which candidate of which problem a job is, and why it did not run when the
/// cascade skipped it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CascadeStage {
    pub problem: String,
    pub candidate: String,
    /// `compile`, `check`, `time` or `profile`.
    pub stage: String,
    /// Why the cascade skipped it (state `skipped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<CascadeSkip>,
}

/// Why a stage did not run: the stage whose result decided, the figure and the limit it
/// failed (for the profile rule: the candidate's time against the margin or the top K).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CascadeSkip {
    /// The stage that decided (`check`: it did not pass; `profile`: the margin or top-K rule).
    pub decided_by: String,
    /// In words, with the figures.
    pub reason: String,
    /// The candidate's figure (its time, ms or s) where a figure decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<f64>,
    /// The limit it was held against (the best time × (1 + margin), or the K-th best time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<f64>,
}

/// The cascade in figures, per stage (in the problems' stage order).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CascadeSummary {
    pub stages: Vec<StageCounts>,
    /// Device seconds the skipped jobs would have cost, estimated: an eval stage skipped after
    /// an earlier stage failed, as much as that failed job took (the eval would have stopped
    /// at the same point); any other, the mean duration of the jobs of its stage that ran
    /// (stages of which nothing ran count nothing and are named in `unestimated`).
    pub saved_device_s: f64,
    /// Stages with skipped jobs but no run to estimate their cost from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unestimated: Vec<String>,
    /// Device seconds the profile cache saved (`profile_cache.saved_s`); absent when no run
    /// of the batch used the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_by_cache_s: Option<f64>,
}

/// One stage's counts over every problem of the batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StageCounts {
    pub stage: String,
    /// Jobs of the stage that ran (in this run or kept from an earlier one).
    pub ran: usize,
    /// Of those, the ones that passed (what lets the next stage run).
    pub passed: usize,
    pub skipped: usize,
    /// Their device time, seconds (the sum of the entries' `duration_s`).
    pub device_s: f64,
}

/// An eval job's verdict in brief: enough for the summary table and for the pool to decide
/// whether the device needs a health check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvalSummary {
    /// Correct and no finding.
    pub passed: bool,
    /// `correct`, `incorrect` or `failed` (the verdict's status).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup: Option<SpeedupSummary>,
    /// The candidate's score time (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_ms: Option<f64>,
    /// The kind of each finding (`suspicious_speedup`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// Why the eval stopped early (`raised`, `timeout`, `device_fault`, …), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Where the arrays lived: `cuda` or `cpu`.
    pub device: String,
    /// What the problem was written in (`torch`, `numpy`), as the trusted worker said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
}

/// The candidate's speedup over the reference, with its confidence interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpeedupSummary {
    pub value: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

impl BatchEntry {
    /// A pending entry for job `id` at `runs/<id>`.
    pub fn pending(id: &str, labels: BTreeMap<String, String>) -> Self {
        BatchEntry {
            id: id.to_string(),
            run_dir: format!("{RUNS_DIR}/{id}"),
            labels,
            ..Default::default()
        }
    }

    /// Write `entry.json` into `dir` atomically.
    pub fn write_atomic(&self, dir: &Path) -> Result<()> {
        write_json_atomic(&dir.join(ENTRY_FILE), self, "batch entry")
    }

    /// Read `entry.json` from a run directory.
    pub fn read(dir: &Path) -> Result<Self> {
        read_json(&dir.join(ENTRY_FILE), "batch entry")
    }
}

/// The state of one device of the pool, as the index reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeviceStatus {
    /// `nvidia:0`, `amd:1`, `intel:0`, `cpu:0`.
    pub name: String,
    /// `nvidia`, `amd`, `intel` or `cpu`.
    pub kind: String,
    /// Model name, when discovery said one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub jobs_done: u32,
    pub jobs_failed: u32,
    /// Taken out of the pool after repeated device-level failures; the reason says which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantined: Option<String>,
}

/// `batch.json`: the index of a batch root.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BatchIndex {
    pub schema_version: u32,
    pub polyprof_version: String,
    /// The job file, as given.
    pub job_file: String,
    pub started_unix_s: f64,
    pub updated_unix_s: f64,
    pub backend: Backend,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_job_id: Option<String>,
    /// The Ray cluster of a `--ray` batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray: Option<RayBatchInfo>,
    /// Job id → entry (iteration is by id; the job file's order is `order`).
    pub jobs: BTreeMap<String, BatchEntry>,
    /// Job ids in the order of the job file (`--task-index N` counts in it).
    #[serde(default)]
    pub order: Vec<String>,
    #[serde(default)]
    pub devices: Vec<DeviceStatus>,
    /// The cascade's counts and savings, for a job file with `problem`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cascade: Option<CascadeSummary>,
    /// The profile cache's figures summed over the finished runs that used it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_cache: Option<BatchProfileCache>,
}

/// The profile cache over a batch: each finished run's `run.json` → `profile_cache`, summed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BatchProfileCache {
    /// Run documents (passes) that used the cache.
    pub runs: u64,
    /// Of those, runs that bypassed it (a graph launch, no fingerprint support) and profiled
    /// as without it.
    #[serde(default)]
    pub bypassed: u64,
    /// Launches the fingerprint passes saw, and their distinct fingerprints (per run).
    pub launches: u64,
    pub fingerprints: u64,
    /// Fingerprints profiled (misses) and served from the cache (hits).
    pub profiled: u64,
    pub hits: u64,
    /// hits / fingerprints (0 when none were looked up).
    pub hit_rate: f64,
    /// Launches not profiled because their fingerprint was profiled in the run or cached.
    pub repeats: u64,
    /// Hits re-profiled by the audit sample, and those that disagreed (each invalidated).
    pub audited: u64,
    pub disagreements: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreed: Vec<BatchCacheDisagreement>,
    /// Profiler seconds the hits and repeats saved, by the entries' own profiling cost.
    pub saved_s: f64,
    /// Seconds the fingerprint passes took (what the cache costs).
    pub fingerprint_s: f64,
}

/// An audited hit that disagreed with its stored profile, and the job whose run found it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BatchCacheDisagreement {
    pub job: String,
    /// The key's digest (the entry's file name in the cache).
    pub key: String,
    pub kernel: String,
    pub cached_ns: f64,
    pub measured_ns: f64,
    pub tolerance: f64,
}

impl BatchIndex {
    /// A fresh index for `job_file`, with every job pending.
    pub fn new(
        job_file: &str,
        backend: Backend,
        jobs: impl IntoIterator<Item = BatchEntry>,
    ) -> Self {
        let now = now_unix_s();
        let mut index = BatchIndex {
            schema_version: BATCH_SCHEMA_VERSION,
            polyprof_version: env!("CARGO_PKG_VERSION").to_string(),
            job_file: job_file.to_string(),
            started_unix_s: now,
            updated_unix_s: now,
            backend,
            ..Default::default()
        };
        for entry in jobs {
            index.order.push(entry.id.clone());
            index.jobs.insert(entry.id.clone(), entry);
        }
        index
    }

    /// Count of entries in each state.
    pub fn counts(&self) -> BTreeMap<EntryState, usize> {
        let mut counts = BTreeMap::new();
        for entry in self.jobs.values() {
            *counts.entry(entry.state).or_default() += 1;
        }
        counts
    }

    /// Read `batch.json` from the batch root.
    pub fn read(root: &Path) -> Result<Self> {
        let index: BatchIndex = read_json(&root.join(BATCH_FILE), "batch index")?;
        if index.schema_version > BATCH_SCHEMA_VERSION {
            return Err(Error::invalid(
                "batch index",
                format!(
                    "{} has schema version {}, this polyprof reads up to {BATCH_SCHEMA_VERSION}; upgrade polyprof",
                    root.join(BATCH_FILE).display(),
                    index.schema_version
                ),
            ));
        }
        Ok(index)
    }

    /// Write `batch.json` into the batch root atomically (a temporary file in the same
    /// directory, then a rename), stamping `updated_unix_s`.
    pub fn write_atomic(&mut self, root: &Path) -> Result<()> {
        self.updated_unix_s = now_unix_s();
        write_json_atomic(&root.join(BATCH_FILE), self, "batch index")
    }
}

/// Seconds since the Unix epoch.
pub fn now_unix_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

fn write_json_atomic<T: Serialize>(path: &Path, value: &T, what: &str) -> Result<()> {
    let text = serde_json::to_vec_pretty(value).map_err(|source| Error::Json {
        context: what.to_string(),
        source,
    })?;
    crate::model::atomic_file::write_atomic(path, &text).map_err(|e| Error::io("write", path, e))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    // Regular files only: a FIFO planted as batch.json or entry.json would hang `--resume`.
    let text = crate::model::input::read_regular(path).map_err(|e| Error::io("read", path, e))?;
    serde_json::from_slice(&text).map_err(|source| Error::Json {
        context: format!("{what} {}", path.display()),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_round_trips_and_keeps_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut entry = BatchEntry::pending("b", BTreeMap::new());
        entry.state = EntryState::TimedOut;
        entry.outcome = Some(Outcome::TimedOut { after_s: 1.0 });
        let mut index = BatchIndex::new(
            "jobs.jsonl",
            Backend::Local,
            [entry, BatchEntry::pending("a", BTreeMap::new())],
        );
        index.write_atomic(dir.path()).unwrap();
        let back = BatchIndex::read(dir.path()).unwrap();
        assert_eq!(back, index);
        assert_eq!(back.order, ["b", "a"]);
        assert_eq!(back.jobs["b"].run_dir, "runs/b");
        let text = std::fs::read_to_string(dir.path().join(BATCH_FILE)).unwrap();
        assert!(text.contains("\"timed_out\""), "{text}");
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn resume_keeps_final_states_except_crashed_and_lost() {
        use EntryState::*;
        let kept: Vec<_> = [
            Pending, Running, Succeeded, Failed, TimedOut, Crashed, Cancelled, Lost,
        ]
        .into_iter()
        .filter(|s| s.kept_on_resume())
        .collect();
        assert_eq!(kept, [Succeeded, Failed, TimedOut]);
    }

    #[test]
    fn a_truncated_entry_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(ENTRY_FILE), "{\"id\": \"x").unwrap();
        let err = BatchEntry::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("entry.json"), "{err}");
    }
}
