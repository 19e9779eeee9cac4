//! What polyprof and a Ray cluster say to each other through the dashboard's Job Submission
//! REST API (`POST /api/jobs/`, `GET /api/jobs/{id}`, `POST /api/jobs/{id}/stop`,
//! `GET /api/jobs/{id}/logs`) and its state API (`GET /api/v0/nodes`): the wire types, the
//! submission ids and metadata of a batch, and what a Ray job's end means for its entry.
//! Pure; the client beside this file does the HTTP.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::batch::EntryState;
use crate::model::error::{Error, Result};
use crate::profilers::quote::join;

use super::super::spec::JobSpec;

/// Metadata keys polyprof sets on every Ray job it submits (the job's labels come beside them).
pub const META_BATCH: &str = "polyprof.batch";
pub const META_JOB: &str = "polyprof.job";
pub const META_TASK: &str = "polyprof.task";
pub const META_ROOT: &str = "polyprof.root";
/// The name the Ray dashboard shows for a job.
pub const META_NAME: &str = "job_name";

/// A Ray job's status, by the names Ray uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobStatus {
    Pending,
    Running,
    Succeeded,
    Failed,
    Stopped,
    /// A status a newer Ray added, kept by name (not final: the driver keeps asking).
    Other(String),
}

impl JobStatus {
    pub fn parse(text: &str) -> JobStatus {
        match text.trim().to_ascii_uppercase().as_str() {
            "PENDING" => JobStatus::Pending,
            "RUNNING" => JobStatus::Running,
            "SUCCEEDED" => JobStatus::Succeeded,
            "FAILED" => JobStatus::Failed,
            "STOPPED" => JobStatus::Stopped,
            other => JobStatus::Other(other.to_string()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            JobStatus::Pending => "PENDING",
            JobStatus::Running => "RUNNING",
            JobStatus::Succeeded => "SUCCEEDED",
            JobStatus::Failed => "FAILED",
            JobStatus::Stopped => "STOPPED",
            JobStatus::Other(name) => name,
        }
    }

    /// Whether Ray is done with the job.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            JobStatus::Succeeded | JobStatus::Failed | JobStatus::Stopped
        )
    }
}

/// One Ray job as `GET /api/jobs/{id}` (and each element of `GET /api/jobs/`) gives it; only
/// the fields polyprof reads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct JobDetails {
    /// Null for drivers started by `ray.init` directly (not submitted).
    #[serde(default)]
    pub submission_id: Option<String>,
    pub status: String,
    #[serde(default)]
    pub message: Option<String>,
    /// `JOB_ENTRYPOINT_COMMAND_ERROR`, `JOB_SUPERVISOR_ACTOR_DIED`, … (Ray 2.9 and later).
    #[serde(default)]
    pub error_type: Option<String>,
    /// Unix ms.
    #[serde(default)]
    pub start_time: Option<u64>,
    #[serde(default)]
    pub end_time: Option<u64>,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub driver_node_id: Option<String>,
    #[serde(default)]
    pub driver_exit_code: Option<i32>,
}

impl JobDetails {
    pub fn status(&self) -> JobStatus {
        JobStatus::parse(&self.status)
    }

    /// The metadata value `key`, when set.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata.as_ref()?.get(key).map(String::as_str)
    }
}

/// Read `GET /api/jobs/{id}`.
pub fn parse_job(text: &str) -> Result<JobDetails> {
    serde_json::from_str(text).map_err(|e| Error::Parse {
        context: "Ray job details (GET /api/jobs/ID)".into(),
        message: e.to_string(),
    })
}

/// Read `GET /api/jobs/`.
pub fn parse_jobs(text: &str) -> Result<Vec<JobDetails>> {
    serde_json::from_str(text).map_err(|e| Error::Parse {
        context: "Ray job list (GET /api/jobs/)".into(),
        message: e.to_string(),
    })
}

/// One node as the state API lists it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct NodeInfo {
    pub node_id: String,
    #[serde(default)]
    pub node_ip: Option<String>,
    /// `ALIVE` or `DEAD`.
    pub state: String,
    #[serde(default)]
    pub resources_total: BTreeMap<String, f64>,
}

impl NodeInfo {
    pub fn alive(&self) -> bool {
        self.state.eq_ignore_ascii_case("ALIVE")
    }
}

/// Read `GET /api/v0/nodes` (`{"result": true, "data": {"result": {"result": [...]}}}`).
pub fn parse_nodes(text: &str) -> Result<Vec<NodeInfo>> {
    #[derive(Deserialize)]
    struct Envelope {
        data: Data,
    }
    #[derive(Deserialize)]
    struct Data {
        result: Inner,
    }
    #[derive(Deserialize)]
    struct Inner {
        result: Vec<NodeInfo>,
    }
    serde_json::from_str::<Envelope>(text)
        .map(|e| e.data.result.result)
        .map_err(|e| Error::Parse {
            context: "Ray node list (GET /api/v0/nodes)".into(),
            message: e.to_string(),
        })
}

/// What each job's entrypoint asks Ray for: the node it runs on must have these free, and
/// Ray holds them for the job (so `gpus: 1` gives each job its own GPU, in
/// `CUDA_VISIBLE_DEVICES`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resources {
    pub gpus: Option<f64>,
    pub cpus: Option<f64>,
    /// Custom resources (`--resources='{"h100": 8}'` on the nodes).
    pub custom: BTreeMap<String, f64>,
}

impl Resources {
    /// `GPU: 1, CPU: 1, h100: 1` for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(g) = self.gpus.filter(|g| *g > 0.0) {
            parts.push(format!("GPU: {g}"));
        }
        if let Some(c) = self.cpus.filter(|c| *c > 0.0) {
            parts.push(format!("CPU: {c}"));
        }
        for (name, amount) in &self.custom {
            parts.push(format!("{name}: {amount}"));
        }
        if parts.is_empty() {
            "no resources".into()
        } else {
            parts.join(", ")
        }
    }

    /// Each requested resource by Ray's name (`GPU`, `CPU`, custom names).
    fn requested(&self) -> Vec<(&str, f64)> {
        let mut out = Vec::new();
        if let Some(g) = self.gpus.filter(|g| *g > 0.0) {
            out.push(("GPU", g));
        }
        if let Some(c) = self.cpus.filter(|c| *c > 0.0) {
            out.push(("CPU", c));
        }
        out.extend(
            self.custom
                .iter()
                .filter(|(_, a)| **a > 0.0)
                .map(|(n, a)| (n.as_str(), *a)),
        );
        out
    }
}

/// How many jobs asking `resources` the live nodes hold at once; `None` when the jobs ask
/// for nothing (Ray would start them all at once).
pub fn capacity(nodes: &[NodeInfo], resources: &Resources) -> Option<usize> {
    let requested = resources.requested();
    if requested.is_empty() {
        return None;
    }
    Some(
        nodes
            .iter()
            .filter(|n| n.alive())
            .map(|n| {
                requested
                    .iter()
                    .map(|(name, amount)| {
                        let total = n.resources_total.get(*name).copied().unwrap_or(0.0);
                        // Ray's resources are fixed-point to 1e-4; a little slack for 0.1 + 0.2.
                        ((total + 1e-6) / amount).floor() as usize
                    })
                    .min()
                    .unwrap_or(0)
            })
            .sum(),
    )
}

/// When each job asks for GPUs and no live node of the cluster has any (Ray would hold every
/// job pending until one joins): the message that says so and names `--ray-gpus 0`.
pub fn no_gpu_warning(nodes: &[NodeInfo], resources: &Resources) -> Option<String> {
    let asked = resources.gpus.filter(|g| *g > 0.0)?;
    let gpus: f64 = nodes
        .iter()
        .filter(|n| n.alive())
        .map(|n| n.resources_total.get("GPU").copied().unwrap_or(0.0))
        .sum();
    (gpus <= 0.0).then(|| {
        format!(
            "the Ray cluster has no GPU (its live nodes report none) and each job asks for {asked} \
             (--ray-gpus, default 1): Ray holds the jobs until a GPU node joins; for CPU work \
             pass --ray-gpus 0"
        )
    })
}

/// The body of `POST /api/jobs/`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubmitRequest {
    pub entrypoint: String,
    pub submission_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_gpus: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_cpus: Option<f64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub entrypoint_resources: BTreeMap<String, f64>,
    pub metadata: BTreeMap<String, String>,
}

/// The batch root's key: the same root (canonical path) gives the same key from any driver,
/// so a resumed driver finds the Ray jobs of the one before it.
pub fn batch_key(root: &Path) -> String {
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// `polyprof-<key>-<task index>-<n>`: the n-th submission of job `index` of this root. Ray
/// refuses a second job with an id it has seen, so a submission repeated after a lost answer
/// can never run twice.
pub fn submission_id(key: &str, index: usize, n: u32) -> String {
    format!("polyprof-{key}-{index}-{n}")
}

/// The task index and submission number of one of this root's submission ids.
pub fn parse_submission_id(key: &str, id: &str) -> Option<(usize, u32)> {
    let rest = id.strip_prefix("polyprof-")?.strip_prefix(key)?;
    let (index, n) = rest.strip_prefix('-')?.split_once('-')?;
    Some((index.parse().ok()?, n.parse().ok()?))
}

/// The entrypoint (a shell command line, as Ray runs it): `exec POLYPROF batch … --task-index
/// N --ray-submission-id ID`, every word quoted so argv reaches the node verbatim; `exec` so
/// Ray's stop signal reaches polyprof itself.
pub fn entrypoint(task_argv: &[String], index: usize, submission_id: &str) -> Result<String> {
    if task_argv.is_empty() {
        return Err(Error::invalid("task command", "the command is empty"));
    }
    let mut argv = task_argv.to_vec();
    argv.extend([
        "--task-index".to_string(),
        index.to_string(),
        "--ray-submission-id".to_string(),
        submission_id.to_string(),
    ]);
    Ok(format!("exec {}", join(&argv)?))
}

/// The Ray job's metadata: the job's labels, so a user finds them in the dashboard, then
/// polyprof's own keys (which win over a label of the same name).
pub fn metadata(key: &str, root: &Path, spec: &JobSpec, index: usize) -> BTreeMap<String, String> {
    let mut meta = spec.labels.clone();
    meta.insert(META_NAME.into(), spec.id.clone());
    meta.insert(META_BATCH.into(), key.into());
    meta.insert(META_JOB.into(), spec.id.clone());
    meta.insert(META_TASK.into(), index.to_string());
    meta.insert(META_ROOT.into(), root.display().to_string());
    meta
}

/// A time limit written as sbatch reads `--time` (`30` minutes, `30:00`, `1:00:00`, `2-0`,
/// `2-12:30`, `2-12:30:00`), so one `--time` serves both schedulers.
pub fn parse_time_limit(text: &str) -> Result<std::time::Duration> {
    let bad = || {
        Error::invalid(
            "--time",
            format!(
                "`{text}` is not a time limit; give minutes (`30`), MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"
            ),
        )
    };
    let number = |t: &str| t.trim().parse::<u64>().map_err(|_| bad());
    let (days, rest) = match text.trim().split_once('-') {
        Some((d, rest)) => (Some(number(d)?), rest),
        None => (None, text.trim()),
    };
    let parts: Vec<u64> = rest.split(':').map(number).collect::<Result<_>>()?;
    let secs = match (days, parts.as_slice()) {
        (None, [m]) => m * 60,
        (None, [m, s]) => m * 60 + s,
        (None, [h, m, s]) => h * 3600 + m * 60 + s,
        (Some(d), [h]) => d * 86400 + h * 3600,
        (Some(d), [h, m]) => d * 86400 + h * 3600 + m * 60,
        (Some(d), [h, m, s]) => d * 86400 + h * 3600 + m * 60 + s,
        _ => return Err(bad()),
    };
    if secs == 0 {
        return Err(Error::invalid(
            "--time",
            "a time limit of 0 would stop every job as it starts",
        ));
    }
    Ok(std::time::Duration::from_secs(secs))
}

/// The entry state of a Ray job that Ray says is over but that wrote no final entry.json.
pub fn state_without_entry(job: &JobDetails) -> EntryState {
    match job.status() {
        JobStatus::Stopped => EntryState::Cancelled,
        // Exited 0 without an entry: not a polyprof task's way to end.
        JobStatus::Succeeded => EntryState::Crashed,
        JobStatus::Failed => match job.error_type.as_deref() {
            // polyprof on the node ran and died, or never started (not installed there, a
            // wrong --polyprof-bin, a runtime_env that did not set up).
            Some(
                "JOB_ENTRYPOINT_COMMAND_ERROR"
                | "JOB_ENTRYPOINT_COMMAND_START_ERROR"
                | "RUNTIME_ENV_SETUP_FAILURE",
            ) => EntryState::Crashed,
            // An exit code without an error type (an older Ray): polyprof's own.
            None if job.driver_exit_code.is_some() => EntryState::Crashed,
            // The supervisor died with its node, never got one, or Ray lost it.
            _ => EntryState::Lost,
        },
        JobStatus::Pending | JobStatus::Running | JobStatus::Other(_) => EntryState::Lost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/ray/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn submission_ids_round_trip_and_belong_to_one_root() {
        let key = batch_key(Path::new("/shared/night/out"));
        assert_eq!(key.len(), 12);
        assert_ne!(key, batch_key(Path::new("/shared/night/out2")));
        let id = submission_id(&key, 17, 2);
        assert_eq!(parse_submission_id(&key, &id), Some((17, 2)));
        assert_eq!(parse_submission_id("000000000000", &id), None);
        assert_eq!(parse_submission_id(&key, "raysubmit_abc"), None);
    }

    #[test]
    fn the_entrypoint_reads_back_through_sh() {
        let argv: Vec<String> = ["printf", "[%s]\\n", "it's", "$HOME", "`id`", "--x=(16, 32)"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let line = entrypoint(&argv, 3, "polyprof-k-3-0").unwrap();
        assert!(line.starts_with("exec "), "{line}");
        let out = std::process::Command::new("sh")
            .args(["-c", &line])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "[it's]\n[$HOME]\n[`id`]\n[--x=(16, 32)]\n[--task-index]\n[3]\n[--ray-submission-id]\n[polyprof-k-3-0]\n"
        );
    }

    #[test]
    fn labels_go_into_the_metadata_and_polyprofs_keys_win() {
        let mut spec = JobSpec::new("k7", vec!["true".into()]);
        spec.labels.insert("gen".into(), "7".into());
        spec.labels.insert(META_JOB.into(), "spoofed".into());
        let meta = metadata("abc", Path::new("/r"), &spec, 7);
        assert_eq!(meta["gen"], "7");
        assert_eq!(meta[META_JOB], "k7");
        assert_eq!(meta[META_NAME], "k7");
        assert_eq!(meta[META_TASK], "7");
        assert_eq!(meta[META_BATCH], "abc");
    }

    /// Real answers of Ray 2.60.0 (tests/fixtures/ray/README.md says how they were made).
    #[test]
    fn real_job_answers_map_to_states() {
        let lost = parse_job(&fixture("job-node-died.json")).unwrap();
        assert_eq!(lost.status(), JobStatus::Failed);
        assert_eq!(state_without_entry(&lost), EntryState::Lost);
        let stopped = parse_job(&fixture("job-stopped.json")).unwrap();
        assert_eq!(state_without_entry(&stopped), EntryState::Cancelled);
        let failed = parse_job(&fixture("job-entrypoint-failed.json")).unwrap();
        assert_eq!(failed.driver_exit_code, Some(127));
        assert_eq!(state_without_entry(&failed), EntryState::Crashed);
        let ok = parse_job(&fixture("job-succeeded.json")).unwrap();
        assert_eq!(ok.status(), JobStatus::Succeeded);
        assert!(ok.meta(META_BATCH).is_some());
        let list = parse_jobs(&fixture("jobs-list.json")).unwrap();
        let ours: Vec<_> = list
            .iter()
            .filter(|j| j.meta(META_BATCH) == Some("0123456789ab"))
            .filter_map(|j| parse_submission_id("0123456789ab", j.submission_id.as_deref()?))
            .collect();
        assert_eq!(ours.len(), 2, "{ours:?}");
        assert!(
            list.len() > ours.len(),
            "other jobs of the cluster are listed too"
        );
    }

    #[test]
    fn time_limits_as_sbatch_reads_them() {
        let secs = |t: &str| parse_time_limit(t).unwrap().as_secs();
        assert_eq!(secs("30"), 1800);
        assert_eq!(secs("0:05"), 5);
        assert_eq!(secs("1:00:00"), 3600);
        assert_eq!(secs("2-0"), 2 * 86400);
        assert_eq!(secs("1-2:30"), 86400 + 2 * 3600 + 30 * 60);
        assert_eq!(secs("1-0:0:7"), 86400 + 7);
        for bad in ["", "1:2:3:4", "x", "0", "-5"] {
            assert!(parse_time_limit(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn capacity_counts_live_nodes_by_the_scarcest_resource() {
        let nodes = parse_nodes(&fixture("nodes.json")).unwrap();
        assert!(
            nodes.iter().any(|n| !n.alive()),
            "the capture has a dead node"
        );
        let gpus = Resources {
            gpus: Some(1.0),
            ..Default::default()
        };
        let alive_gpus: f64 = nodes
            .iter()
            .filter(|n| n.alive())
            .map(|n| n.resources_total.get("GPU").copied().unwrap_or(0.0))
            .sum();
        assert_eq!(capacity(&nodes, &gpus), Some(alive_gpus as usize));
        let none = Resources::default();
        assert_eq!(capacity(&nodes, &none), None);
        let missing = Resources {
            custom: [("tpu".to_string(), 1.0)].into_iter().collect(),
            ..Default::default()
        };
        assert_eq!(capacity(&nodes, &missing), Some(0));
    }

    #[test]
    fn a_cluster_without_gpus_is_said_at_once_naming_ray_gpus_0() {
        let nodes = parse_nodes(&fixture("nodes.json")).unwrap();
        let one_gpu = Resources {
            gpus: Some(1.0),
            ..Default::default()
        };
        let cpu_only: Vec<NodeInfo> = nodes
            .iter()
            .cloned()
            .map(|mut n| {
                n.resources_total.remove("GPU");
                n
            })
            .collect();
        let warning = no_gpu_warning(&cpu_only, &one_gpu).unwrap();
        assert!(warning.contains("--ray-gpus 0"), "{warning}");
        assert_eq!(no_gpu_warning(&cpu_only, &Resources::default()), None);
        let has_gpus = nodes
            .iter()
            .any(|n| n.alive() && n.resources_total.get("GPU").is_some_and(|g| *g > 0.0));
        assert_eq!(no_gpu_warning(&nodes, &one_gpu).is_none(), has_gpus);
    }
}
