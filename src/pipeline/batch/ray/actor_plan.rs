//! What the actor mode's two drivers say to each other through the batch root: the plan
//! polyprof writes for the Python driver (`ROOT/ray/actors-<n>.json`), the progress that
//! driver writes back (`actors-<n>.progress.json`), the submission ids, and how one job's
//! entry is judged from its entry.json, that progress and the Ray job's status. Pure but for
//! reading the entry file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::batch::{BatchEntry, EntryState, RayJobInfo};
use crate::pipeline::batch::eval_job::problem_key;
use crate::pipeline::batch::spec::JobSpec;

use super::api::{JobDetails, JobStatus};
use super::judge::{cut_off, final_entry};

/// The Python driver, written into the batch root at each submission.
pub(super) const DRIVER_PY: &str = include_str!("polyprof_ray_actors.py");
pub(super) const DRIVER_FILE: &str = "polyprof_ray_actors.py";
/// How many times a job whose actor died is sent to another actor before it is `lost`.
pub(super) const MAX_LOST: u32 = 3;

/// `polyprof-<key>-actors-<n>`: the n-th actor-mode Ray job of this root.
pub(super) fn submission_id(key: &str, n: u32) -> String {
    format!("polyprof-{key}-actors-{n}")
}

/// n of one of this root's actor-mode submission ids.
pub(super) fn parse_submission_id(key: &str, id: &str) -> Option<u32> {
    id.strip_prefix("polyprof-")?
        .strip_prefix(key)?
        .strip_prefix("-actors-")?
        .parse()
        .ok()
}

/// The plan file of submission n, and its progress file.
pub(super) fn plan_path(ray_dir: &Path, n: u32) -> PathBuf {
    ray_dir.join(format!("actors-{n}.json"))
}

pub(super) fn progress_path(ray_dir: &Path, n: u32) -> PathBuf {
    ray_dir.join(format!("actors-{n}.progress.json"))
}

pub(super) fn more_path(ray_dir: &Path, n: u32) -> PathBuf {
    ray_dir.join(format!("actors-{n}.more.json"))
}

/// The jobs this side adds to a running actors' job (the cascade's later waves), rewritten
/// whole each time: the Python driver queues those it has not seen, and ends once `closed`
/// and its jobs are done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct More {
    /// `(task index, job id)`, every wave added so far, in order.
    pub jobs: Vec<(usize, String)>,
    pub closed: bool,
}

impl More {
    pub(super) fn read(path: &Path) -> Option<More> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    pub(super) fn write(&self, path: &Path) -> crate::model::error::Result<()> {
        let text = serde_json::to_vec(self).map_err(|e| {
            crate::model::error::Error::invalid("the Ray job's more jobs", e.to_string())
        })?;
        crate::model::atomic_file::write_atomic(path, &text)
            .map_err(|e| crate::model::error::Error::io("write the Ray job's more jobs", path, e))
    }
}

/// What the Python driver runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Plan {
    pub submission_id: String,
    /// `[polyprof, batch, JOBS, --output-dir, ROOT, …]`; the actor adds `--task-index N
    /// --ray-submission-id ID`.
    pub task_argv: Vec<String>,
    /// `(task index, job id)`, in the order they are sent.
    pub jobs: Vec<(usize, String)>,
    /// Task index → the number of the problem an eval job's warm evaluator is kept for
    /// (one per distinct `eval_job::problem_key`): the driver sends a job to an actor that
    /// already judged that problem when one is free.
    #[serde(default)]
    pub affinity: BTreeMap<usize, usize>,
    /// How many actors to start (one per slot).
    pub actors: usize,
    pub num_gpus: f64,
    pub num_cpus: f64,
    pub resources: BTreeMap<String, f64>,
    pub time_limit_s: Option<f64>,
    pub max_lost: u32,
    pub runs_dir: PathBuf,
    pub progress: PathBuf,
    /// Where later waves of jobs come ([`More`]); absent: the plan's jobs are all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more: Option<PathBuf>,
}

/// The problem number of each eval job of `planned` (task indices), numbered in order of
/// first appearance.
pub(super) fn affinity(specs: &[JobSpec], planned: &[usize]) -> BTreeMap<usize, usize> {
    let mut numbers: std::collections::HashMap<String, usize> = Default::default();
    planned
        .iter()
        .filter_map(|&i| {
            let key = problem_key(specs.get(i)?)?;
            let next = numbers.len();
            Some((i, *numbers.entry(key).or_insert(next)))
        })
        .collect()
}

/// What the Python driver says of its actors and jobs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(super) struct Progress {
    #[serde(default)]
    pub actors: Vec<ActorView>,
    /// By task index (as text: JSON keys).
    #[serde(default)]
    pub jobs: BTreeMap<String, JobView>,
    #[serde(default)]
    pub finished: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(super) struct ActorView {
    pub slot: usize,
    #[serde(default)]
    pub node_ip: Option<String>,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub restarts: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(super) struct JobView {
    /// `queued` (sent back after its actor died), `running`, `done`, `timed_out`, `lost`.
    pub state: String,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub node_id: Option<String>,
    #[serde(default)]
    pub node_ip: Option<String>,
    /// The actor's process.
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub exit: Option<i32>,
    /// The last lines of the task's output.
    #[serde(default)]
    pub output: Vec<String>,
    #[serde(default)]
    pub errors: Vec<String>,
}

/// Read a progress file; `None` while it is missing or half-written elsewhere.
pub(super) fn read_progress(path: &Path) -> Option<Progress> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

impl Progress {
    pub(super) fn job(&self, index: usize) -> Option<&JobView> {
        self.jobs.get(&index.to_string())
    }
}

/// What holds for every job of one poll.
#[derive(Debug, Clone, Copy)]
pub(super) struct Round<'a> {
    pub root: &'a Path,
    pub submission_id: &'a str,
    /// The Ray job as Ray last reported it.
    pub driver: Option<&'a JobDetails>,
    /// Whether Ray has reported the Ray job over for longer than the grace.
    pub driver_over: bool,
    /// Whether a stop was sent (Ctrl-C).
    pub cancelled: bool,
    pub time_limit: Option<Duration>,
}

/// One job's new entry, when it changed. `over_for`: how long the progress has said the job's
/// task ended while no final entry.json showed up (the grace is the caller's).
pub(super) fn judge(
    spec: &JobSpec,
    index: usize,
    old: &BatchEntry,
    progress: Option<&JobView>,
    past_grace: bool,
    round: &Round,
) -> Option<BatchEntry> {
    let info = RayJobInfo {
        submission_id: round.submission_id.to_string(),
        status: round.driver.map(|d| d.status().name().to_string()),
        error_type: None,
        node_id: progress
            .and_then(|p| p.node_id.clone())
            .or_else(|| old.ray.as_ref().and_then(|r| r.node_id.clone())),
        node_ip: progress
            .and_then(|p| p.node_ip.clone())
            .or_else(|| old.ray.as_ref().and_then(|r| r.node_ip.clone())),
    };
    let timed_out = progress.is_some_and(|p| p.state == "timed_out");
    let task_ended = progress.is_some_and(|p| p.state == "done" || p.state == "timed_out");
    // An entry is taken once the progress names the job: the driver saves every few tenths of
    // a second, so a short job can end before the save that says where it ran (after the Ray
    // job's end no save will come). A run cut off when its actor died wrote `cancelled`; the
    // driver sends the job to another actor, so that entry is the answer only once nothing
    // more will run it.
    let taken = |e: &BatchEntry| {
        (progress.is_some() || round.driver_over || round.cancelled)
            && (e.state != EntryState::Cancelled
                || round.cancelled
                || task_ended
                || round.driver_over)
    };
    if let Some(mut entry) =
        final_entry(round.root, &spec.id, round.submission_id).filter(|e| taken(e))
    {
        if entry.state != EntryState::Succeeded && cut_off(&entry) {
            if timed_out {
                entry.state = EntryState::TimedOut;
                entry.errors.push(time_limit_message(round));
            } else if round.cancelled {
                entry.state = EntryState::Cancelled;
            }
        }
        if entry.state != EntryState::Succeeded
            && let Some(p) = progress
        {
            entry.errors.extend(p.errors.iter().cloned());
        }
        entry.ray = Some(info);
        return Some(entry);
    }
    let mut entry = old.clone();
    entry.ray = Some(info);
    match progress.map(|p| p.state.as_str()) {
        Some("lost") => {
            entry.state = EntryState::Lost;
            entry.errors = progress.map(|p| p.errors.clone()).unwrap_or_default();
        }
        Some("done" | "timed_out") if past_grace => {
            let p = progress.cloned().unwrap_or_default();
            entry.state = if timed_out {
                EntryState::TimedOut
            } else {
                EntryState::Crashed
            };
            let mut text = format!(
                "polyprof batch --task-index {index} exited{} on {} under Ray job {} but wrote no final runs/{}/entry.json",
                p.exit.map(|c| format!(" {c}")).unwrap_or_default(),
                p.node_ip.as_deref().unwrap_or("its node"),
                round.submission_id,
                spec.id
            );
            if !p.output.is_empty() {
                text.push_str(&format!("; its output ends: {}", p.output.join(" | ")));
            }
            entry.errors = p.errors.clone();
            if timed_out {
                entry.errors.push(time_limit_message(round));
            }
            entry.errors.push(text);
        }
        _ if round.driver_over => {
            let driver = round.driver;
            entry.state = if round.cancelled {
                EntryState::Cancelled
            } else {
                EntryState::Lost
            };
            let mut text = format!(
                "Ray job {} ended {}{} before this job's task wrote a final entry.json",
                round.submission_id,
                driver.map_or("(unknown to Ray)".to_string(), |d| d
                    .status()
                    .name()
                    .to_string()),
                driver
                    .and_then(|d| d.error_type.as_deref())
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default(),
            );
            if let Some(first) = driver
                .and_then(|d| d.message.as_deref())
                .and_then(|m| m.lines().next())
            {
                text.push_str(&format!(": {first}"));
            }
            entry.errors = progress.map(|p| p.errors.clone()).unwrap_or_default();
            entry.errors.push(text);
        }
        Some("running") => entry.state = EntryState::Running,
        _ => {
            entry.state = if round
                .driver
                .is_some_and(|d| d.status() == JobStatus::Running)
                || progress.is_some()
            {
                EntryState::Pending
            } else {
                old.state
            }
        }
    }
    (entry != *old).then_some(entry)
}

fn time_limit_message(round: &Round) -> String {
    format!(
        "ran past the time limit of {:.0} s; its actor stopped it",
        round.time_limit.unwrap_or_default().as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::batch::task::run_dir;

    fn round<'a>(root: &'a Path, driver_over: bool, cancelled: bool) -> Round<'a> {
        Round {
            root,
            submission_id: "polyprof-k-actors-0",
            driver: None,
            driver_over,
            cancelled,
            time_limit: Some(Duration::from_secs(7)),
        }
    }

    fn view(state: &str) -> JobView {
        JobView {
            state: state.into(),
            attempts: 1,
            node_ip: Some("127.0.0.3".into()),
            exit: Some(0),
            ..Default::default()
        }
    }

    #[test]
    fn eval_jobs_of_one_problem_share_an_affinity_number() {
        let job = |json: serde_json::Value| serde_json::from_value::<JobSpec>(json).unwrap();
        let eval = |id: &str, reference: &str| {
            job(
                serde_json::json!({"id": id, "eval": {"reference": reference, "candidate": format!("{id}.py")}}),
            )
        };
        let specs = vec![
            eval("a", "p.py"),
            job(serde_json::json!({"id": "t", "target": ["true"]})),
            eval("b", "q.py"),
            eval("c", "p.py"),
        ];
        let numbers = affinity(&specs, &[0, 1, 2, 3]);
        assert_eq!(numbers, BTreeMap::from([(0, 0), (2, 1), (3, 0)]));
        assert_eq!(affinity(&specs, &[3, 2]), BTreeMap::from([(3, 0), (2, 1)]));
    }

    #[test]
    fn submission_ids_round_trip_apart_from_job_mode_ids() {
        let id = submission_id("abc", 4);
        assert_eq!(parse_submission_id("abc", &id), Some(4));
        assert_eq!(parse_submission_id("abd", &id), None);
        assert_eq!(parse_submission_id("abc", "polyprof-abc-4-0"), None);
        assert_eq!(
            super::super::api::parse_submission_id("abc", &id),
            None,
            "job mode never reads an actor-mode id as one of its own"
        );
    }

    #[test]
    fn the_entry_this_submission_wrote_wins_and_others_are_judged_from_the_progress() {
        let root = tempfile::tempdir().unwrap();
        let spec = JobSpec::new("j", vec!["true".into()]);
        let old = BatchEntry::pending("j", BTreeMap::new());
        let r = round(root.path(), false, false);
        let running = judge(&spec, 0, &old, Some(&view("running")), false, &r).unwrap();
        assert_eq!(running.state, EntryState::Running);
        assert_eq!(
            running.ray.as_ref().unwrap().node_ip.as_deref(),
            Some("127.0.0.3")
        );
        // Its actor died: back in the queue, pending, not lost.
        let mut queued = view("queued");
        queued.errors.push("actor 1 died while running it".into());
        let pending = judge(&spec, 0, &running, Some(&queued), false, &r).unwrap();
        assert_eq!(pending.state, EntryState::Pending);
        // Done without an entry: only after the grace, then crashed with the output.
        let mut done = view("done");
        done.output = vec!["polyprof: boom".into()];
        assert_eq!(
            judge(&spec, 0, &pending, Some(&done), false, &r)
                .map(|e| e.state)
                .unwrap_or(pending.state),
            EntryState::Pending
        );
        let crashed = judge(&spec, 0, &pending, Some(&done), true, &r).unwrap();
        assert_eq!(crashed.state, EntryState::Crashed);
        assert!(crashed.errors.join("\n").contains("polyprof: boom"));
        // The entry written under this submission id is the truth; one of another is not.
        let dir = run_dir(root.path(), "j");
        std::fs::create_dir_all(&dir).unwrap();
        let mut entry = BatchEntry::pending("j", BTreeMap::new());
        entry.state = EntryState::Succeeded;
        entry.ray = Some(RayJobInfo {
            submission_id: "polyprof-k-actors-1".into(),
            ..Default::default()
        });
        entry.write_atomic(&dir).unwrap();
        assert_eq!(
            judge(&spec, 0, &pending, Some(&done), true, &r)
                .unwrap()
                .state,
            EntryState::Crashed
        );
        entry.ray.as_mut().unwrap().submission_id = "polyprof-k-actors-0".into();
        entry.write_atomic(&dir).unwrap();
        // Ended before the driver's progress named it: wait for the save that says where it ran.
        assert!(judge(&spec, 0, &pending, None, false, &r).is_none());
        let taken = judge(&spec, 0, &pending, Some(&done), true, &r).unwrap();
        assert_eq!(taken.state, EntryState::Succeeded);
        assert!(taken.errors.is_empty());
        assert_eq!(taken.ray.unwrap().node_ip.as_deref(), Some("127.0.0.3"));
        // Cut off when its actor died and sent to another: not the answer while it runs again.
        entry.state = EntryState::Cancelled;
        entry.write_atomic(&dir).unwrap();
        assert_eq!(
            judge(&spec, 0, &pending, Some(&view("running")), false, &r)
                .unwrap()
                .state,
            EntryState::Running
        );
        let stopped = round(root.path(), false, true);
        assert_eq!(
            judge(&spec, 0, &pending, Some(&view("running")), false, &stopped)
                .unwrap()
                .state,
            EntryState::Cancelled
        );
    }

    #[test]
    fn lost_jobs_timeouts_and_a_driver_that_ended() {
        let root = tempfile::tempdir().unwrap();
        let spec = JobSpec::new("j", vec!["true".into()]);
        let old = BatchEntry::pending("j", BTreeMap::new());
        let mut lost = view("lost");
        lost.errors = vec!["actor 0 died".into(); 4];
        let r = round(root.path(), false, false);
        let e = judge(&spec, 0, &old, Some(&lost), false, &r).unwrap();
        assert_eq!(e.state, EntryState::Lost);
        assert_eq!(e.errors.len(), 4);
        let e = judge(&spec, 0, &old, Some(&view("timed_out")), true, &r).unwrap();
        assert_eq!(e.state, EntryState::TimedOut);
        assert!(e.errors.join("\n").contains("time limit of 7 s"));
        // The Ray job ended with the job never run: lost, or cancelled after our stop.
        let over = round(root.path(), true, false);
        assert_eq!(
            judge(&spec, 0, &old, None, false, &over).unwrap().state,
            EntryState::Lost
        );
        let stopped = round(root.path(), true, true);
        assert_eq!(
            judge(&spec, 0, &old, Some(&view("running")), false, &stopped)
                .unwrap()
                .state,
            EntryState::Cancelled
        );
    }
}
