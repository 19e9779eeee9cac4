//! The Ray driver: each job still to run becomes one Ray job (`POST /api/jobs/`) whose
//! entrypoint runs `polyprof batch … --task-index N` on a node with the resources it asks and
//! writes `runs/<id>/entry.json` into the shared batch root; the driver keeps a window of jobs
//! submitted (as many as the cluster holds at once, so none waits in Ray past its start
//! timeout), polls them and those files, keeps `batch.json` up to date, and stops the jobs on
//! cancellation or past the time limit.
//!
//! Per job, the truth is its entry.json once it says a final state (written by this very
//! submission). Without one, Ray's word decides: pending/running as such; a final Ray status
//! (after `grace`) maps to cancelled / timed_out / lost (the supervisor died with its node) /
//! crashed (polyprof ended without an entry); a job Ray no longer knows is lost.
//!
//! Submission ids are `polyprof-<root key>-<task index>-<n>`. A driver started on the same root
//! lists what Ray has of it first: a live job is followed (with `--resume`), never submitted
//! again; a submission whose answer was lost is looked up by its id, which Ray never runs twice.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::model::batch::{Backend, BatchEntry, BatchIndex, EntryState, RayBatchInfo, RayJobInfo};
use crate::model::error::Error;
use crate::pipeline::batch::index::Prepared;
use crate::pipeline::batch::remote_index;
use crate::pipeline::batch::spec::JobSpec;
use crate::pipeline::batch::task::{lock_job, run_dir};

use super::api::{
    JobDetails, JobStatus, META_BATCH, Resources, SubmitRequest, batch_key, capacity, entrypoint,
    metadata, no_gpu_warning, parse_submission_id, submission_id,
};
use super::client::RayClient;
use super::error::RayError;
use super::judge::{Answer, Judged, NodeNames, Round, Tracked, judge};

/// The folder, in the batch root, where the output of Ray jobs that ended without an entry is
/// kept (`<submission id>.log`).
pub const RAY_DIR: &str = "ray";

/// How the batch's jobs reach the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RayMode {
    /// One Ray job per batch job (Ray's start-up per job: seconds; for long jobs).
    #[default]
    Jobs,
    /// One Ray job for the batch, whose driver sends the jobs to one long-lived actor per slot
    /// (milliseconds per job; for short jobs and evals).
    Actors,
}

/// How the driver runs.
#[derive(Debug, Clone)]
pub struct RayRun {
    /// The batch root, absolute (the nodes see it at the same path).
    pub root: PathBuf,
    /// The dashboard (`http://head:8265`).
    pub address: String,
    /// `[polyprof, batch, JOBS, --output-dir, ROOT, …]` as the nodes run it; the driver adds
    /// `--task-index N --ray-submission-id ID`.
    pub task_argv: Vec<String>,
    /// What each job's entrypoint asks Ray for.
    pub resources: Resources,
    /// At most this many jobs submitted and not finished [default: what the live nodes hold].
    pub max_parallel: Option<usize>,
    /// A job running longer is stopped and marked timed_out.
    pub time_limit: Option<Duration>,
    /// Follow this root's jobs that Ray still runs (a killed driver's) instead of refusing.
    pub resume: bool,
    pub poll: Duration,
    /// How long a job may be over in Ray's eyes before its missing entry.json is judged.
    pub grace: Duration,
    /// After the stop requests, how long to wait for Ray to report the jobs ended.
    pub cancel_wait: Duration,
    /// Fired by Ctrl-C/SIGTERM: stop the submitted jobs, submit no more.
    pub cancel: CancellationToken,
    /// Fired by a second Ctrl-C: stop waiting for Ray to confirm.
    pub give_up: CancellationToken,
    /// The batch's profile cache (`--profile-cache`), to know which jobs' run documents to
    /// read for the index's cache figures at the end (the tasks get it on their command line).
    pub profile_cache: Option<crate::pipeline::profile_cache::ProfileCacheOptions>,
    pub mode: RayMode,
    /// The Python that runs the actor mode's driver on the node Ray picks (it must import
    /// `ray`): the word the entrypoint starts with.
    pub python: String,
}

impl RayRun {
    pub fn new(root: PathBuf, address: String, task_argv: Vec<String>) -> Self {
        RayRun {
            root,
            address,
            task_argv,
            resources: Resources {
                gpus: Some(1.0),
                ..Default::default()
            },
            max_parallel: None,
            time_limit: None,
            resume: false,
            poll: Duration::from_millis(500),
            grace: Duration::from_secs(3),
            cancel_wait: Duration::from_secs(30),
            cancel: CancellationToken::new(),
            give_up: CancellationToken::new(),
            profile_cache: None,
            mode: RayMode::default(),
            python: "python3".into(),
        }
    }
}

/// What the driver reports while it runs.
#[derive(Debug)]
pub enum RayEvent<'a> {
    Connected {
        address: &'a str,
        version: &'a str,
        window: usize,
    },
    Submitted {
        id: &'a str,
        submission_id: &'a str,
    },
    /// The cascade's next wave of jobs, sent to the running actors' Ray job.
    Fed {
        jobs: usize,
        submission_id: &'a str,
    },
    /// A job of this root that Ray was still running, followed instead of submitted again.
    Adopted {
        id: &'a str,
        submission_id: &'a str,
    },
    Changed {
        entry: &'a BatchEntry,
    },
    Cancelling {
        jobs: usize,
    },
    /// Something that does not stop the batch (a failed poll, an index write).
    Warning(&'a str),
}

pub type RayObserver = Arc<dyn Fn(&RayEvent) + Send + Sync>;

/// Run the jobs `prepared.to_run` of `specs` as one Ray job each; returns the final index.
pub(super) async fn run_jobs(
    specs: &[JobSpec],
    prepared: Prepared,
    run: &RayRun,
    observer: Option<RayObserver>,
) -> Result<BatchIndex, RayError> {
    let say = |event: &RayEvent| {
        if let Some(o) = &observer {
            o(event)
        }
    };
    let client = RayClient::new(&run.address)?;
    // Nothing is written or submitted before the cluster has answered.
    let version = client.version().await?;
    let root = &run.root;
    let key = batch_key(root);
    let mut index = prepared.index;
    let to_run = prepared.to_run;
    start_index(&mut index, &client, &key, root, specs, &to_run);
    // What Ray has of this root: the last submission of each job.
    let mut last: HashMap<usize, (u32, JobDetails)> = HashMap::new();
    if !to_run.is_empty() {
        for job in client.jobs().await? {
            if job.meta(META_BATCH) != Some(key.as_str()) {
                continue;
            }
            let Some((i, n)) = job
                .submission_id
                .as_deref()
                .and_then(|s| parse_submission_id(&key, s))
            else {
                continue;
            };
            if last.get(&i).is_none_or(|(m, _)| n > *m) {
                last.insert(i, (n, job));
            }
        }
    }
    let mut adopted: Vec<(usize, String)> = Vec::new();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut next_n: HashMap<usize, u32> = HashMap::new();
    for &i in &to_run {
        match last.get(&i) {
            Some((n, job)) if !job.status().is_final() => {
                adopted.push((i, submission_id(&key, i, *n)));
            }
            Some((n, _)) => {
                next_n.insert(i, n + 1);
                queue.push_back(i);
            }
            None => {
                next_n.insert(i, 0);
                queue.push_back(i);
            }
        }
    }
    if !adopted.is_empty() && !run.resume {
        return Err(RayError::StillRunning {
            count: adopted.len(),
            first: adopted[0].1.clone(),
        });
    }
    clear_run_dirs(root, specs, queue.iter().copied())?;
    if to_run.is_empty() {
        index.write_atomic(root)?;
        return Ok(index);
    }
    let (window, mut nodes) = window(&client, run, &say).await;
    say(&RayEvent::Connected {
        address: client.address(),
        version: &version,
        window,
    });

    let mut active: BTreeMap<usize, Tracked> = BTreeMap::new();
    for (i, sid) in adopted {
        let status = last.get(&i).map(|(_, j)| j.status());
        if let Some(entry) = index.jobs.get_mut(&specs[i].id) {
            entry.state = if status == Some(JobStatus::Running) {
                EntryState::Running
            } else {
                EntryState::Pending
            };
            entry.ray = Some(RayJobInfo {
                submission_id: sid.clone(),
                status: status.map(|s| s.name().to_string()),
                ..Default::default()
            });
        }
        say(&RayEvent::Adopted {
            id: &specs[i].id,
            submission_id: &sid,
        });
        active.insert(i, Tracked::new(sid));
    }
    write_index(&mut index, root, &say);

    let mut submitted_any = !active.is_empty();
    let mut cancel_sent: Option<Instant> = None;
    let mut writes = remote_index::IndexWrites::new(specs.len());
    loop {
        if run.cancel.is_cancelled() && cancel_sent.is_none() {
            say(&RayEvent::Cancelling { jobs: active.len() });
            for i in queue.drain(..) {
                if let Some(entry) = index.jobs.get_mut(&specs[i].id) {
                    entry.state = EntryState::Cancelled;
                    entry
                        .errors
                        .push("cancelled before it was submitted to Ray".into());
                    say(&RayEvent::Changed { entry });
                }
            }
            for t in active.values_mut() {
                stop(&client, t, &run.give_up).await;
            }
            cancel_sent = Some(Instant::now());
        }
        // Fill the window.
        while cancel_sent.is_none() && active.len() < window {
            let Some(&i) = queue.front() else { break };
            let spec = &specs[i];
            let sid = submission_id(&key, i, next_n.get(&i).copied().unwrap_or(0));
            let request = SubmitRequest {
                entrypoint: entrypoint(&run.task_argv, i, &sid)?,
                submission_id: sid.clone(),
                entrypoint_num_gpus: run.resources.gpus,
                entrypoint_num_cpus: run.resources.cpus,
                entrypoint_resources: run.resources.custom.clone(),
                metadata: metadata(&key, root, spec, i),
            };
            if let Err(e) = client.submit(&request).await {
                // The submission may have gone through with its answer lost: Ray knows the id
                // then (and would refuse it a second time).
                match client.job(&sid).await {
                    Ok(Some(_)) => {}
                    Err(RayError::Unreachable { .. }) | Ok(None)
                        if matches!(e, RayError::Unreachable { .. }) =>
                    {
                        say(&RayEvent::Warning(&format!(
                            "{e}; trying again (the same submission id, so never twice)"
                        )));
                        break;
                    }
                    Err(RayError::Unreachable { .. }) => {
                        say(&RayEvent::Warning(&format!("{e}; trying again")));
                        break;
                    }
                    _ if !submitted_any => return Err(e),
                    _ => {
                        queue.pop_front();
                        if let Some(entry) = index.jobs.get_mut(&spec.id) {
                            entry.state = EntryState::Crashed;
                            entry.errors.push(e.to_string());
                            say(&RayEvent::Changed { entry });
                        }
                        writes.changed();
                        continue;
                    }
                }
            }
            queue.pop_front();
            submitted_any = true;
            if let Some(entry) = index.jobs.get_mut(&spec.id) {
                entry.ray = Some(RayJobInfo {
                    submission_id: sid.clone(),
                    status: Some(JobStatus::Pending.name().to_string()),
                    ..Default::default()
                });
            }
            say(&RayEvent::Submitted {
                id: &spec.id,
                submission_id: &sid,
            });
            active.insert(i, Tracked::new(sid));
            writes.changed();
        }
        if active.is_empty() && queue.is_empty() {
            break;
        }
        // A poll stops when the user does: on Ctrl-C before the stop requests (which then go
        // out at once), on the second Ctrl-C after them.
        let stop_polls = if cancel_sent.is_some() {
            &run.give_up
        } else {
            &run.cancel
        };
        let mut answers: Vec<(usize, Answer)> = Vec::with_capacity(active.len());
        let mut warned = false;
        for (&i, t) in &active {
            let answer = tokio::select! {
                r = client.job(&t.submission_id) => match r {
                    Ok(job) => Answer::Known(job),
                    Err(e) => {
                        if !warned {
                            say(&RayEvent::Warning(&format!("{e}; the jobs keep their state until Ray answers")));
                            warned = true;
                        }
                        Answer::Unanswered
                    }
                },
                _ = stop_polls.cancelled() => Answer::Unanswered,
            };
            answers.push((i, answer));
        }
        // A job on a node this driver has not seen: the node list once more.
        let unknown_node = answers.iter().any(|(_, a)| {
            matches!(a, Answer::Known(Some(j)) if j.driver_node_id.as_ref().is_some_and(|n| !nodes.ips.contains_key(n)))
        });
        if unknown_node && let Ok(list) = client.nodes().await {
            nodes.learn(&list);
        }
        let round = Round {
            root,
            cancelled: cancel_sent.is_some(),
            grace: run.grace,
            time_limit: run.time_limit,
        };
        for (i, answer) in answers {
            let spec = &specs[i];
            let (Some(old), Some(t)) = (index.jobs.get(&spec.id), active.get_mut(&i)) else {
                continue;
            };
            let judged = judge(t, spec, old, &answer, &nodes, &round);
            if let Some(Judged {
                mut entry,
                from_ray,
            }) = judged
            {
                if from_ray {
                    // Ray's own output says why (polyprof not found on the node, …).
                    let note = keep_log(&client, root, &t.submission_id).await;
                    if let Some(last) = entry.errors.last_mut() {
                        last.push_str(&note);
                    }
                }
                if entry.state.is_final()
                    && let Some(why) = &t.stop_error
                {
                    entry.errors.push(why.clone());
                }
                say(&RayEvent::Changed { entry: &entry });
                let done = entry.state.is_final();
                index.jobs.insert(spec.id.clone(), entry);
                writes.changed();
                if done {
                    active.remove(&i);
                    continue;
                }
            }
            // Past the time limit: stopped, and timed_out once Ray says it ended.
            if let (Some(limit), Some(since)) = (run.time_limit, t.running_since)
                && since.elapsed() >= limit
                && !t.stop_sent
            {
                t.timed_out = true;
                stop(&client, t, &run.give_up).await;
            }
        }
        if let Some(sent) = cancel_sent
            && (sent.elapsed() >= run.cancel_wait || run.give_up.is_cancelled())
        {
            for (i, t) in &active {
                if let Some(entry) = index.jobs.get_mut(&specs[*i].id)
                    && !entry.state.is_final()
                {
                    entry.state = EntryState::Cancelled;
                    entry.errors.push(format!(
                        "Ray had not reported job {} ended {:.0} s after the stop request",
                        t.submission_id,
                        sent.elapsed().as_secs_f64()
                    ));
                    if let Some(why) = &t.stop_error {
                        entry.errors.push(why.clone());
                    }
                }
            }
            break;
        }
        // Each write is the whole index: at most one per `index_interval`, and at the end.
        writes.write_if_due(&mut index, root, &warn_through(&say));
        remote_index::next_poll(run.poll, &run.cancel, &run.give_up, cancel_sent.is_some()).await;
    }
    remote_index::finish(
        &mut index,
        root,
        specs,
        run.profile_cache.as_ref(),
        &warn_through(&say),
    );
    Ok(index)
}

/// The index a Ray batch starts from: this cluster and root named, and the jobs kept from an
/// earlier run given back their last Ray view (their entry.json has none).
pub(super) fn start_index(
    index: &mut BatchIndex,
    client: &RayClient,
    key: &str,
    root: &Path,
    specs: &[JobSpec],
    to_run: &[usize],
) {
    index.backend = Backend::Ray;
    index.ray = Some(RayBatchInfo {
        address: client.address().to_string(),
        batch_key: key.to_string(),
    });
    if let Ok(old) = BatchIndex::read(root) {
        for (i, spec) in specs.iter().enumerate() {
            if to_run.contains(&i) {
                continue;
            }
            if let (Some(entry), Some(was)) = (index.jobs.get_mut(&spec.id), old.jobs.get(&spec.id))
                && entry.ray.is_none()
            {
                entry.ray = was.ray.clone();
            }
        }
    }
}

/// Clear the run directories of the jobs about to run (an old run's entry.json would be read
/// as this run's result); a job still running elsewhere (a task Ray lost track of) holds its
/// lock and stops this with [`Error::Busy`].
pub(super) fn clear_run_dirs(
    root: &Path,
    specs: &[JobSpec],
    indices: impl Iterator<Item = usize>,
) -> Result<(), RayError> {
    for i in indices {
        let id = &specs[i].id;
        drop(lock_job(root, id)?);
        let dir = run_dir(root, id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("clear the old run directory", dir, e).into()),
        }
    }
    Ok(())
}

/// How many jobs run at once (`--max-parallel`, else what the live nodes hold of what each
/// job asks) and the nodes' addresses.
pub(super) async fn window(
    client: &RayClient,
    run: &RayRun,
    say: &impl Fn(&RayEvent),
) -> (usize, NodeNames) {
    let mut nodes = NodeNames::default();
    let window = match client.nodes().await {
        Ok(list) => {
            nodes.learn(&list);
            if let Some(warning) = no_gpu_warning(&list, &run.resources) {
                say(&RayEvent::Warning(&warning));
            }
            match (run.max_parallel, capacity(&list, &run.resources)) {
                (Some(m), _) => m.max(1),
                (None, Some(0)) => {
                    say(&RayEvent::Warning(&format!(
                        "no live node of the cluster has {} now; submitting one job at a time until Ray places one (an autoscaler may add nodes)",
                        run.resources.describe()
                    )));
                    1
                }
                (None, Some(c)) => c,
                // Jobs that ask for nothing all start at once: one per CPU of the cluster.
                (None, None) => capacity(
                    &list,
                    &Resources {
                        cpus: Some(1.0),
                        ..Default::default()
                    },
                )
                .unwrap_or(1)
                .max(1),
            }
        }
        Err(e) => {
            let window = run.max_parallel.unwrap_or(1).max(1);
            say(&RayEvent::Warning(&format!(
                "cannot list the cluster's nodes ({e}); {window} job(s) at a time (--max-parallel)"
            )));
            window
        }
    };

    (window, nodes)
}

/// `POST /api/jobs/{id}/stop`, once; a failure is kept for the entry (the job may still run).
pub(super) async fn stop(client: &RayClient, t: &mut Tracked, give_up: &CancellationToken) {
    if t.stop_sent {
        return;
    }
    t.stop_sent = true;
    let result = tokio::select! {
        r = client.stop(&t.submission_id) => r.map(|_| ()),
        _ = give_up.cancelled() => Err(RayError::Other(Error::invalid("stop", "interrupted by a second Ctrl-C"))),
    };
    if let Err(e) = result {
        t.stop_error = Some(format!(
            "could not stop Ray job {}: {e}; it may still run (`ray job stop {}`)",
            t.submission_id, t.submission_id
        ));
    }
}

/// Ray's output of a job that ended without an entry, saved as `ROOT/ray/<id>.log`; the note
/// for the entry's error (its last lines and where the rest is).
pub(super) async fn keep_log(client: &RayClient, root: &Path, submission_id: &str) -> String {
    let logs = match client.logs(submission_id).await {
        Ok(logs) => logs,
        Err(e) => return format!("; its output could not be read: {e}"),
    };
    let dir = root.join(RAY_DIR);
    let path = dir.join(format!("{submission_id}.log"));
    let saved = std::fs::create_dir_all(&dir).is_ok()
        && crate::model::atomic_file::write_atomic(&path, logs.as_bytes()).is_ok();
    let tail: Vec<&str> = logs
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    let mut note = String::new();
    if !tail.is_empty() {
        note.push_str(&format!("; its output ends: {}", tail.join(" | ")));
    }
    if saved {
        note.push_str(&format!(" (all of it in {})", path.display()));
    }
    note
}

fn write_index(index: &mut BatchIndex, root: &Path, say: &impl Fn(&RayEvent)) {
    remote_index::write_index(index, root, &warn_through(say));
}

/// A warning said as the driver's event.
fn warn_through(say: &impl Fn(&RayEvent)) -> impl Fn(&str) + '_ {
    move |text: &str| say(&RayEvent::Warning(text))
}
