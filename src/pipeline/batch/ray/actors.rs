//! The actor mode of the Ray driver (`--ray-mode actors`): the jobs still to run go to the
//! cluster as ONE Ray job, whose entrypoint is the embedded Python driver
//! (`polyprof_ray_actors.py`, written into `ROOT/ray/`). That driver starts one long-lived
//! actor per slot, sends each job to a free actor as a method call (the job runs as `polyprof
//! batch … --task-index N`, the actor's child, so its run directory and entry.json are what
//! every backend writes), and writes its progress into the root. This side follows the Ray
//! job and that progress, keeps `batch.json`, stops the Ray job on Ctrl-C, and adopts a live
//! one of a killed driver with `--resume`. A job file's problem stages go to the same Ray job
//! a wave at a time (`More`): its actors, and the warm evaluators they hold, serve every stage.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::model::atomic_file::write_atomic;
use crate::model::batch::{BatchEntry, BatchIndex, EntryState};
use crate::model::error::Error;
use crate::pipeline::batch::index::Prepared;
use crate::pipeline::batch::remote_index;
use crate::pipeline::batch::spec::JobSpec;
use crate::pipeline::batch::waves::Waves;
use crate::profilers::quote::join;

use super::actor_plan::{
    self, DRIVER_FILE, DRIVER_PY, MAX_LOST, More, Plan, Round, affinity, more_path, plan_path,
    progress_path, read_progress,
};
use super::api::{JobDetails, META_BATCH, META_NAME, META_ROOT, SubmitRequest, batch_key};
use super::client::RayClient;
use super::driver::{
    RAY_DIR, RayEvent, RayObserver, RayRun, clear_run_dirs, keep_log, start_index, stop, window,
};
use super::error::RayError;
use super::judge::Tracked;

/// Metadata key naming the mode of a Ray job polyprof submitted.
const META_MODE: &str = "polyprof.mode";

/// The cascade's later waves, sent to a running actors' job through its [`More`] file.
struct Feed<'a> {
    waves: &'a mut Waves,
    path: PathBuf,
    more: More,
    /// A wave decided but not sent (the file could not be written): the next Ray job's.
    unsent: Vec<usize>,
}

impl Feed<'_> {
    /// Add `jobs` to the Ray job's queue.
    fn send(&mut self, specs: &[JobSpec], jobs: &[usize]) -> Result<(), Error> {
        let mut more = self.more.clone();
        more.jobs
            .extend(jobs.iter().map(|&i| (i, specs[i].id.clone())));
        more.write(&self.path)?;
        self.more = more;
        Ok(())
    }

    /// No more jobs: the Ray job ends once its jobs are done.
    fn close(&mut self) -> Result<(), Error> {
        self.more.closed = true;
        self.more.write(&self.path)
    }
}

/// Run the jobs `prepared.to_run` of `specs` through actors, a wave at a time with `waves`
/// (all in one Ray job while it lives); returns the final index.
pub(super) async fn run_actors(
    specs: &[JobSpec],
    prepared: Prepared,
    run: &RayRun,
    observer: Option<RayObserver>,
    mut waves: Option<Waves>,
) -> Result<BatchIndex, RayError> {
    let say = |event: &RayEvent| {
        if let Some(o) = &observer {
            o(event)
        }
    };
    let skipped = |entry: &BatchEntry| say(&RayEvent::Changed { entry });
    let client = RayClient::new(&run.address)?;
    let version = client.version().await?;
    let root = &run.root;
    let key = batch_key(root);
    let ray_dir = root.join(RAY_DIR);
    let mut index = prepared.index;
    let to_run = prepared.to_run;
    start_index(&mut index, &client, &key, root, specs, &to_run);
    let mut writes = remote_index::IndexWrites::new(specs.len());
    let first = match waves.as_mut() {
        Some(w) => w.next(specs, &mut index, &skipped),
        None => to_run.clone(),
    };
    if first.is_empty() {
        remote_index::finish(
            &mut index,
            root,
            specs,
            run.profile_cache.as_ref(),
            &|text| say(&RayEvent::Warning(text)),
        );
        return Ok(index);
    }
    // What Ray has of this root: a live Ray job (a killed driver's) is followed with --resume.
    let mut next_n = 0;
    let mut live: Option<(u32, String)> = None;
    let mut live_jobs_of_job_mode = Vec::new();
    for job in client.jobs().await? {
        if job.meta(META_BATCH) != Some(key.as_str()) {
            continue;
        }
        let Some(sid) = job.submission_id.as_deref() else {
            continue;
        };
        match actor_plan::parse_submission_id(&key, sid) {
            Some(n) => {
                next_n = next_n.max(n + 1);
                if !job.status().is_final() {
                    live = Some((n, sid.to_string()));
                }
            }
            None if !job.status().is_final() => live_jobs_of_job_mode.push(sid.to_string()),
            None => {}
        }
    }
    if let Some(first) = live_jobs_of_job_mode.first() {
        return Err(RayError::StillRunning {
            count: live_jobs_of_job_mode.len(),
            first: format!("{first}, of --ray-mode jobs: resume with that mode"),
        });
    }
    if let Some((_, sid)) = &live
        && !run.resume
    {
        return Err(RayError::StillRunning {
            count: 1,
            first: sid.clone(),
        });
    }
    std::fs::create_dir_all(&ray_dir).map_err(|e| Error::io("create", &ray_dir, e))?;
    let (slots, _) = window(&client, run, &say).await;
    say(&RayEvent::Connected {
        address: client.address(),
        version: &version,
        window: slots,
    });
    let mut left: BTreeSet<usize> = first.into_iter().collect();
    // A live Ray job adopted, then one for what it did not hold (and, when that one ended
    // early, one per wave left).
    loop {
        let (n, sid, mut planned, fed) = match live.take() {
            Some((n, sid)) => {
                let plan: Plan = std::fs::read(plan_path(&ray_dir, n))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .ok_or_else(|| {
                        Error::invalid(
                            "--resume",
                            format!(
                                "Ray job {sid} of this root is live but its plan {} cannot be read; stop it (`ray job stop {sid}`) and resume again",
                                plan_path(&ray_dir, n).display()
                            ),
                        )
                    })?;
                // Its later waves too; it gets no more from this driver, which sends what
                // is left to a Ray job of its own.
                let mut held: Vec<usize> = plan.jobs.iter().map(|(i, _)| *i).collect();
                if let Some(path) = &plan.more {
                    let mut more = More::read(path).unwrap_or_default();
                    held.extend(more.jobs.iter().map(|(i, _)| *i));
                    more.closed = true;
                    more.write(path)?;
                }
                let planned: Vec<usize> = held.into_iter().filter(|i| left.contains(i)).collect();
                say(&RayEvent::Adopted {
                    id: &format!("{} jobs", planned.len()),
                    submission_id: &sid,
                });
                (n, sid, planned, false)
            }
            None => {
                let planned: Vec<usize> = left.iter().copied().collect();
                clear_run_dirs(root, specs, planned.iter().copied())?;
                let n = next_n;
                let sid = actor_plan::submission_id(&key, n);
                let waved = waves.is_some();
                submit(
                    &client, run, specs, &planned, &to_run, waved, n, &sid, slots, &key,
                )
                .await?;
                say(&RayEvent::Submitted {
                    id: &format!("{} jobs", planned.len()),
                    submission_id: &sid,
                });
                (n, sid, planned, waved)
            }
        };
        next_n = n + 1;
        for i in &planned {
            left.remove(i);
        }
        let mut feed = waves.as_mut().filter(|_| fed).map(|waves| Feed {
            waves,
            path: more_path(&ray_dir, n),
            more: More::default(),
            unsent: Vec::new(),
        });
        follow(
            &client,
            run,
            specs,
            &mut index,
            &mut planned,
            n,
            &sid,
            &mut writes,
            &say,
            feed.as_mut(),
        )
        .await;
        if let Some(feed) = feed {
            left.extend(feed.unsent);
        }
        if run.cancel.is_cancelled() {
            break;
        }
        if left.is_empty()
            && let Some(w) = waves.as_mut()
        {
            left.extend(w.next(specs, &mut index, &skipped));
        }
        if left.is_empty() {
            break;
        }
    }
    for i in left {
        if let Some(entry) = index.jobs.get_mut(&specs[i].id)
            && !entry.state.is_final()
        {
            entry.state = EntryState::Cancelled;
            entry
                .errors
                .push("cancelled before it was submitted to Ray".into());
            say(&RayEvent::Changed { entry });
        }
    }
    remote_index::finish(
        &mut index,
        root,
        specs,
        run.profile_cache.as_ref(),
        &|text: &str| say(&RayEvent::Warning(text)),
    );
    Ok(index)
}

/// Write the driver and its plan into the root and submit the one Ray job; `waved`: it takes
/// later waves of `to_run` through its more-jobs file (started empty).
#[allow(clippy::too_many_arguments)]
async fn submit(
    client: &RayClient,
    run: &RayRun,
    specs: &[JobSpec],
    planned: &[usize],
    to_run: &[usize],
    waved: bool,
    n: u32,
    sid: &str,
    slots: usize,
    key: &str,
) -> Result<(), RayError> {
    let root = &run.root;
    let ray_dir = root.join(RAY_DIR);
    let script = ray_dir.join(DRIVER_FILE);
    write_atomic(&script, DRIVER_PY.as_bytes())
        .map_err(|e| Error::io("write the Ray driver", &script, e))?;
    let gpus = run.resources.gpus.unwrap_or(0.0);
    let more = waved.then(|| more_path(&ray_dir, n));
    if let Some(path) = &more {
        More::default().write(path)?;
    }
    let plan = Plan {
        submission_id: sid.to_string(),
        task_argv: run.task_argv.clone(),
        jobs: planned.iter().map(|&i| (i, specs[i].id.clone())).collect(),
        // Numbered over every job to run, so a later wave's jobs have their problems' numbers.
        affinity: affinity(specs, if waved { to_run } else { planned }),
        // A later wave may be wider than the first.
        actors: if waved {
            slots
        } else {
            slots.min(planned.len())
        }
        .max(1),
        num_gpus: gpus,
        // An actor asks no CPU beside a GPU or a custom resource (the slot is that); alone,
        // one CPU is its slot.
        num_cpus: run
            .resources
            .cpus
            .unwrap_or(if gpus > 0.0 || !run.resources.custom.is_empty() {
                0.0
            } else {
                1.0
            }),
        resources: run.resources.custom.clone(),
        time_limit_s: run.time_limit.map(|t| t.as_secs_f64()),
        max_lost: MAX_LOST,
        runs_dir: root.join(crate::model::batch::RUNS_DIR),
        progress: progress_path(&ray_dir, n),
        more,
    };
    let plan_file = plan_path(&ray_dir, n);
    let text = serde_json::to_vec_pretty(&plan)
        .map_err(|e| Error::invalid("the Ray plan", e.to_string()))?;
    write_atomic(&plan_file, &text).map_err(|e| Error::io("write the Ray plan", &plan_file, e))?;
    let text = |p: &Path| p.to_string_lossy().into_owned();
    let entrypoint = format!(
        "exec {}",
        join(&[run.python.clone(), text(&script), text(&plan_file)])?
    );
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert(
        META_NAME.to_string(),
        format!("polyprof batch ({} jobs)", planned.len()),
    );
    metadata.insert(META_BATCH.to_string(), key.to_string());
    metadata.insert(META_ROOT.to_string(), root.display().to_string());
    metadata.insert(META_MODE.to_string(), "actors".to_string());
    let request = SubmitRequest {
        entrypoint,
        submission_id: sid.to_string(),
        entrypoint_num_gpus: None,
        entrypoint_num_cpus: None,
        entrypoint_resources: Default::default(),
        metadata,
    };
    if let Err(e) = client.submit(&request).await {
        // The answer may have been lost with the job submitted: Ray knows the id then.
        if !matches!(client.job(sid).await, Ok(Some(_))) {
            return Err(e);
        }
    }
    Ok(())
}

/// Follow Ray job `sid` until every planned job has a final entry (or Ctrl-C's wait ends);
/// with `feed`, each time they all have, the cascade's next wave is sent to it and followed
/// too, until none is left.
#[allow(clippy::too_many_arguments)]
async fn follow(
    client: &RayClient,
    run: &RayRun,
    specs: &[JobSpec],
    index: &mut BatchIndex,
    planned: &mut Vec<usize>,
    n: u32,
    sid: &str,
    writes: &mut remote_index::IndexWrites,
    say: &(impl Fn(&RayEvent) + Sync),
    mut feed: Option<&mut Feed<'_>>,
) {
    let root = &run.root;
    let progress_file = progress_path(&root.join(RAY_DIR), n);
    let mut tracked = Tracked::new(sid.to_string());
    let mut cancel_sent: Option<Instant> = None;
    let mut driver: Option<JobDetails> = None;
    let mut task_over_since: HashMap<usize, Instant> = HashMap::new();
    let mut log_kept = false;
    let mut all_done: Option<Instant> = None;
    let warn = |text: &str| say(&RayEvent::Warning(text));
    loop {
        if run.cancel.is_cancelled() && cancel_sent.is_none() {
            let open = planned
                .iter()
                .filter(|&&i| {
                    index
                        .jobs
                        .get(&specs[i].id)
                        .is_some_and(|e| !e.state.is_final())
                })
                .count();
            say(&RayEvent::Cancelling { jobs: open });
            stop(client, &mut tracked, &run.give_up).await;
            if let Some(why) = &tracked.stop_error {
                warn(why);
            }
            cancel_sent = Some(Instant::now());
        }
        let stop_polls = if cancel_sent.is_some() {
            &run.give_up
        } else {
            &run.cancel
        };
        tokio::select! {
            r = client.job(sid) => match r {
                Ok(Some(job)) => driver = Some(job),
                Ok(None) => {
                    tracked.unknown_since.get_or_insert_with(Instant::now);
                }
                Err(e) => warn(&format!("{e}; the jobs keep their state until Ray answers")),
            },
            _ = stop_polls.cancelled() => {}
        }
        let over = driver.as_ref().is_some_and(|d| d.status().is_final())
            || tracked.unknown_since.is_some();
        let driver_over = if over {
            tracked
                .over_since
                .get_or_insert_with(Instant::now)
                .elapsed()
                >= run.grace
        } else {
            false
        };
        // A Ray job that ended by itself with jobs undone: its output says why (no `ray`
        // module for `--ray-python`, …), kept beside the progress.
        let mut note = String::new();
        if driver_over
            && !log_kept
            && cancel_sent.is_none()
            && driver
                .as_ref()
                .is_some_and(|d| d.status() != super::api::JobStatus::Succeeded)
        {
            log_kept = true;
            note = keep_log(client, root, sid).await;
        }
        let progress = read_progress(&progress_file).unwrap_or_default();
        let round = Round {
            root,
            submission_id: sid,
            driver: driver.as_ref(),
            driver_over,
            cancelled: cancel_sent.is_some(),
            time_limit: run.time_limit,
        };
        let mut open = 0;
        for &i in planned.iter() {
            let spec = &specs[i];
            let Some(old) = index.jobs.get(&spec.id) else {
                continue;
            };
            if old.state.is_final() {
                continue;
            }
            let view = progress.job(i);
            let task_ended = view.is_some_and(|v| v.state == "done" || v.state == "timed_out");
            let past_grace = task_ended
                && task_over_since
                    .entry(i)
                    .or_insert_with(Instant::now)
                    .elapsed()
                    >= run.grace;
            match actor_plan::judge(spec, i, old, view, past_grace, &round) {
                Some(mut entry) => {
                    if !note.is_empty()
                        && entry.state.is_final()
                        && let Some(last) = entry.errors.last_mut()
                    {
                        last.push_str(&note);
                    }
                    say(&RayEvent::Changed { entry: &entry });
                    open += usize::from(!entry.state.is_final());
                    index.jobs.insert(spec.id.clone(), entry);
                    writes.changed();
                }
                None => open += 1,
            }
        }
        // Every job has its answer: the next wave goes to the same Ray job while it lives.
        if open == 0
            && !over
            && cancel_sent.is_none()
            && let Some(feed) = feed.as_deref_mut()
            && !feed.more.closed
        {
            let next = feed
                .waves
                .next(specs, index, &|entry| say(&RayEvent::Changed { entry }));
            writes.changed();
            let sent = if next.is_empty() {
                feed.close().map_err(RayError::from)
            } else {
                clear_run_dirs(root, specs, next.iter().copied())
                    .and_then(|()| feed.send(specs, &next).map_err(RayError::from))
            };
            match sent {
                Ok(()) if !next.is_empty() => {
                    say(&RayEvent::Fed {
                        jobs: next.len(),
                        submission_id: sid,
                    });
                    planned.extend(&next);
                    open = next.len();
                }
                Ok(()) => {}
                Err(e) => {
                    // Its driver ends by itself once it has waited long enough for more.
                    warn(&format!("cannot send Ray job {sid} its next jobs: {e}"));
                    feed.more.closed = true;
                    feed.unsent = next;
                }
            }
        }
        // Every job has its answer: wait (a little) for the Ray job to end too, so its actors'
        // resources are free and a next driver on this root does not find it live.
        if open == 0 {
            if over {
                break;
            }
            let since = *all_done.get_or_insert_with(Instant::now);
            if since.elapsed() >= run.cancel_wait {
                warn(&format!(
                    "every job ended but Ray job {sid} still runs after {:.0} s; stop it with `ray job stop {sid}`",
                    since.elapsed().as_secs_f64()
                ));
                break;
            }
        }
        if let Some(sent) = cancel_sent
            && (sent.elapsed() >= run.cancel_wait || run.give_up.is_cancelled())
        {
            for &i in planned.iter() {
                if let Some(entry) = index.jobs.get_mut(&specs[i].id)
                    && !entry.state.is_final()
                {
                    entry.state = EntryState::Cancelled;
                    entry.errors.push(format!(
                        "Ray had not reported job {sid} ended {:.0} s after the stop request",
                        sent.elapsed().as_secs_f64()
                    ));
                }
            }
            break;
        }
        writes.write_if_due(index, root, &warn);
        remote_index::next_poll(run.poll, &run.cancel, &run.give_up, cancel_sent.is_some()).await;
    }
}
