//! The local scheduler: one job per device at a time (each pinned to its device), the index
//! kept current (throttled, see [`index_interval`]), devices that keep failing at the device
//! level quarantined and their work moved to the others, and a cancellation that leaves the
//! index consistent.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::task::JoinSet;

use crate::model::batch::{BatchEntry, BatchIndex, DeviceStatus, EntryState, now_unix_s};
use crate::model::probe::Probe;
use crate::pipeline::probe::HostProbe;
use crate::profilers::devices::Device;
use crate::profilers::registry::Vendor;

use super::cascade::{Cascade, Decision, Rankings, skipped_entry, summarize};
use super::health::{check_device, needs_check};
use super::index::{Prepared, cancel_running};
use super::spec::JobSpec;
use super::task::{TaskOptions, run_task};
use super::warm_evals::WarmEvals;

/// How the pool runs.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Shared by every job; `task.run.cancel` stops the batch (running jobs are cancelled,
    /// queued ones stay pending), `task.run.kill_now` kills them at once.
    pub task: TaskOptions,
    /// Device-level failures in a row that take a device out of the pool.
    pub quarantine_after: u32,
    /// At most this many jobs at once; `None`: one per device.
    pub max_parallel: Option<usize>,
    /// Run every stage of every problem's candidates, skipping none (`--all-stages`: the
    /// cascade's baseline).
    pub all_stages: bool,
    /// Judge each eval job cold, with a trusted worker of its own (`--cold-evals`), instead
    /// of through the pool's warm evaluators.
    pub cold_evals: bool,
}

/// Device-level failures in a row before a device leaves the pool, by default.
pub const DEFAULT_QUARANTINE_AFTER: u32 = 3;

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            task: TaskOptions::default(),
            quarantine_after: DEFAULT_QUARANTINE_AFTER,
            max_parallel: None,
            all_stages: false,
            cold_evals: false,
        }
    }
}

/// What the pool reports while it runs (for progress displays).
#[derive(Debug)]
pub enum PoolEvent<'a> {
    Started {
        id: &'a str,
        device: &'a Device,
    },
    /// A job ended for good (its entry is final).
    Finished {
        entry: &'a BatchEntry,
    },
    /// A job failed at the device level and goes to another device.
    Moved {
        id: &'a str,
        from: &'a Device,
        reason: &'a str,
    },
    /// A device an eval job left suspect (a device fault, a hang) answered its health check
    /// and stays in the pool.
    Healthy {
        device: &'a Device,
        after: &'a str,
        answer: &'a str,
    },
    /// A device was taken out of the pool.
    Quarantined {
        device: &'a Device,
        reason: &'a str,
    },
    /// Something the user should know that does not stop the batch (an index write failed).
    Warning(&'a str),
}

/// What a health check found: what made the device suspect, and its answer or the reason
/// it failed.
type Checked = (String, Result<String, String>);

/// Receives the pool's events; called on the scheduler's task, so it must be quick.
pub type Observer = Arc<dyn Fn(&PoolEvent) + Send + Sync>;

struct Slot {
    device: Device,
    busy: bool,
    streak: u32,
    quarantined: Option<String>,
    done: u32,
    failed: u32,
}

struct Pool<'a> {
    specs: &'a [JobSpec],
    root: PathBuf,
    index: BatchIndex,
    slots: Vec<Slot>,
    vendors: Vec<Option<Vendor>>,
    /// Slots each job failed on at the device level.
    tried: HashMap<usize, BTreeSet<usize>>,
    /// What each moved job's earlier devices did to it, and how many attempts they took.
    moves: HashMap<usize, (u32, Vec<String>)>,
    observer: Option<Observer>,
    /// The cascade over the problems' stages (`None`: no job is a stage).
    cascade: Option<Cascade>,
    /// Queued jobs the cascade lets start.
    ready_now: HashSet<usize>,
    /// Queued jobs whose cascade decision may have changed.
    to_decide: Vec<usize>,
    /// Writes of skipped entries under way.
    writes: Vec<tokio::task::JoinHandle<()>>,
    warned: bool,
    /// Changes not yet in batch.json, and when it was last written.
    dirty: bool,
    written: tokio::time::Instant,
}

/// The least time between two writes of batch.json: 200 ms, and 1 ms more per job. Each
/// write is the whole index, so writing after every change would cost O(jobs²) bytes over a
/// batch (tens of GB for ten thousand jobs); each job's entry.json is written at once anyway,
/// and resume reads those.
pub fn index_interval(jobs: usize) -> std::time::Duration {
    std::time::Duration::from_millis(200 + jobs as u64)
}

impl Pool<'_> {
    fn emit(&self, event: PoolEvent) {
        if let Some(o) = &self.observer {
            o(&event);
        }
    }

    fn usable(&self, job: usize, slot: usize) -> bool {
        let s = &self.slots[slot];
        s.quarantined.is_none()
            && s.device.fits(self.vendors[job])
            && !self.tried.get(&job).is_some_and(|t| t.contains(&slot))
    }

    fn any_usable(&self, job: usize) -> bool {
        (0..self.slots.len()).any(|s| self.usable(job, s))
    }

    /// Note a change; batch.json is written now if the last write is old enough, else when
    /// the scheduler's timer says so (or at the end).
    fn changed(&mut self) {
        self.dirty = true;
        if self.written.elapsed() >= index_interval(self.index.jobs.len()) {
            self.write_index();
        }
    }

    fn write_index(&mut self) {
        self.dirty = false;
        self.written = tokio::time::Instant::now();
        self.index.devices = self
            .slots
            .iter()
            .map(|s| DeviceStatus {
                name: s.device.name(),
                kind: s.device.kind.key().to_string(),
                model: s.device.model.clone(),
                jobs_done: s.done,
                jobs_failed: s.failed,
                quarantined: s.quarantined.clone(),
            })
            .collect();
        if let Err(e) = self.index.write_atomic(&self.root)
            && !self.warned
        {
            self.warned = true;
            let text = format!(
                "cannot write the batch index (jobs go on; each run directory keeps its entry.json): {e}"
            );
            self.emit(PoolEvent::Warning(&text));
        }
    }

    /// Whether the cascade lets queued job `job` start now.
    fn ready(&self, job: usize) -> bool {
        self.cascade.is_none() || self.ready_now.contains(&job)
    }

    /// Job `job` has ended (or cannot run anywhere): the cascade decides the jobs that
    /// waited on it at the next round.
    fn ended(&mut self, job: usize) {
        if let Some(c) = &self.cascade {
            let next = c.dependents(self.specs, job, &self.index);
            self.to_decide.extend(next);
        }
    }

    /// Decide the jobs waiting for a decision (all at first; later those whose earlier stage
    /// just ended): note the ones that may start, take the skipped ones out of `queue` and
    /// record them `skipped` (deciding their own dependents in turn). Whether any was skipped.
    fn settle_cascade(&mut self, queue: &mut VecDeque<usize>) -> bool {
        let Some(cascade) = self.cascade.take() else {
            return false;
        };
        let mut skipped: BTreeSet<usize> = BTreeSet::new();
        let mut writes: Vec<(PathBuf, BatchEntry)> = Vec::new();
        let mut rankings = Rankings::new();
        while let Some(job) = self.to_decide.pop() {
            let spec = &self.specs[job];
            // Only a job still queued (kept and finished ones are decided for good).
            if self
                .index
                .jobs
                .get(&spec.id)
                .is_none_or(|e| e.state != EntryState::Pending)
            {
                continue;
            }
            match cascade.decide_with(self.specs, job, &self.index, &mut rankings) {
                Decision::Run => {
                    self.ready_now.insert(job);
                }
                Decision::Wait => {}
                Decision::Skip(skip) => {
                    let mut entry = skipped_entry(spec, skip);
                    entry.finished_unix_s = Some(now_unix_s());
                    self.emit(PoolEvent::Finished { entry: &entry });
                    writes.push((super::task::run_dir(&self.root, &spec.id), entry.clone()));
                    self.index.jobs.insert(spec.id.clone(), entry);
                    skipped.insert(job);
                    // A time stage that ends can complete its problem's ranking.
                    rankings.clear();
                    let next = cascade.dependents(self.specs, job, &self.index);
                    self.to_decide.extend(next);
                }
            }
        }
        self.cascade = Some(cascade);
        if skipped.is_empty() {
            return false;
        }
        queue.retain(|j| !skipped.contains(j));
        // Each skip has its entry.json, as every job: written off the scheduler's thread
        // (each write is fsynced; a thousand skips at once would stall the pool for seconds).
        self.writes.push(tokio::task::spawn_blocking(move || {
            for (dir, entry) in writes {
                let _ = std::fs::create_dir_all(&dir).map(|()| entry.write_atomic(&dir));
            }
        }));
        true
    }

    /// Record a job that cannot run anywhere (no device of its vendor is left).
    fn unrunnable(&mut self, job: usize) {
        let spec = &self.specs[job];
        let needs = self.vendors[job].map_or("a device".to_string(), |v| format!("an {v} GPU"));
        let pool: Vec<String> = self
            .slots
            .iter()
            .map(|s| match &s.quarantined {
                Some(_) => format!("{} (quarantined)", s.device.name()),
                None => s.device.name(),
            })
            .collect();
        let mut entry = self
            .index
            .jobs
            .get(&spec.id)
            .cloned()
            .unwrap_or_else(|| spec.pending_entry());
        entry.state = EntryState::Crashed;
        entry.errors.push(format!(
            "no device left in the pool can run it: it needs {needs}, the pool has {}; give --devices or fix the devices, then --resume",
            pool.join(", ")
        ));
        entry.finished_unix_s = Some(now_unix_s());
        let _ = entry.write_atomic(&super::task::run_dir(&self.root, &spec.id));
        self.emit(PoolEvent::Finished { entry: &entry });
        self.index.jobs.insert(spec.id.clone(), entry);
    }
}

/// Run the jobs `prepared.to_run` of `specs` over `devices` into `root`, keeping
/// `root/batch.json` current. Returns the final index (also on cancellation: running jobs
/// come back cancelled, queued ones stay pending).
pub async fn run_pool(
    specs: &[JobSpec],
    root: &Path,
    prepared: Prepared,
    devices: Vec<Device>,
    opts: &PoolOptions,
    observer: Option<Observer>,
) -> BatchIndex {
    let cancel = opts.task.run.cancel.clone();
    let mut task_opts = opts.task.clone();
    // A device failure goes back to the pool, which moves the job to another device.
    task_opts.stop_on_device_error = true;
    // One warm evaluator per problem and slot, kept while the pool runs (two per slot idle at
    // most: a slot's current problem and the one before).
    let own_warm =
        (!opts.cold_evals && task_opts.warm.is_none() && specs.iter().any(|s| s.eval.is_some()))
            .then(|| Arc::new(WarmEvals::for_process(root, 2 * devices.len())));
    if own_warm.is_some() {
        task_opts.warm = own_warm.clone();
    }
    let task_opts = Arc::new(task_opts);
    let vendors = specs
        .iter()
        .map(|s| s.vendor(&task_opts.selection).ok().flatten())
        .collect();
    let mut pool = Pool {
        specs,
        root: root.to_path_buf(),
        index: prepared.index,
        slots: devices
            .into_iter()
            .map(|device| Slot {
                device,
                busy: false,
                streak: 0,
                quarantined: None,
                done: 0,
                failed: 0,
            })
            .collect(),
        vendors,
        tried: HashMap::new(),
        moves: HashMap::new(),
        observer,
        cascade: Cascade::new(specs, opts.all_stages),
        ready_now: HashSet::new(),
        to_decide: prepared.to_run.iter().rev().copied().collect(),
        writes: Vec::new(),
        warned: false,
        dirty: false,
        written: tokio::time::Instant::now(),
    };
    let max_parallel = opts.max_parallel.unwrap_or(usize::MAX).max(1);
    let mut queue: VecDeque<usize> = prepared.to_run.into_iter().collect();
    let mut running: JoinSet<(BatchEntry, Option<Checked>)> = JoinSet::new();
    let probe: Arc<dyn Probe> = Arc::new(HostProbe::with_cancel(cancel.clone()));
    let mut owner: HashMap<tokio::task::Id, (usize, usize)> = HashMap::new();
    let mut cancelled = cancel.is_cancelled();
    // Which jobs some device can take changes only at the start and after a device-level
    // failure; the (queue × devices) check runs then, not after every job.
    let mut recheck = true;
    pool.write_index();
    loop {
        if !cancelled {
            let mut changed = pool.settle_cascade(&mut queue);
            for slot in 0..pool.slots.len() {
                if running.len() >= max_parallel {
                    break;
                }
                if pool.slots[slot].busy || pool.slots[slot].quarantined.is_some() {
                    continue;
                }
                let Some(pos) = queue
                    .iter()
                    .position(|&j| pool.usable(j, slot) && pool.ready(j))
                else {
                    continue;
                };
                let Some(job) = queue.remove(pos) else {
                    continue;
                };
                let spec = specs[job].clone();
                let device = pool.slots[slot].device.clone();
                pool.slots[slot].busy = true;
                let entry = pool
                    .index
                    .jobs
                    .entry(spec.id.clone())
                    .or_insert_with(|| spec.pending_entry());
                entry.state = EntryState::Running;
                entry.device = Some(device.name());
                entry.started_unix_s = Some(now_unix_s());
                pool.emit(PoolEvent::Started {
                    id: &spec.id,
                    device: &device,
                });
                let (root, o, probe) = (pool.root.clone(), task_opts.clone(), probe.clone());
                // The slot stays busy through the health check: no job reaches a suspect device.
                let handle = running.spawn(async move {
                    let entry = run_task(&spec, &root, Some(&device), &o).await;
                    let checked = match needs_check(&entry, &spec, &device) {
                        Some(check) if !o.run.cancel.is_cancelled() => {
                            let answer = check_device(probe, &device, &check).await;
                            Some((check.after, answer))
                        }
                        _ => None,
                    };
                    (entry, checked)
                });
                owner.insert(handle.id(), (job, slot));
                changed = true;
            }
            // Jobs no remaining device can take end here rather than wait forever.
            let stuck: Vec<usize> = if std::mem::take(&mut recheck) {
                queue
                    .iter()
                    .copied()
                    .filter(|&j| !pool.any_usable(j))
                    .collect()
            } else {
                Vec::new()
            };
            if !stuck.is_empty() {
                let stuck_set: BTreeSet<usize> = stuck.iter().copied().collect();
                queue.retain(|j| !stuck_set.contains(j));
                for job in stuck {
                    pool.unrunnable(job);
                    pool.ended(job);
                }
                changed = true;
            }
            if changed {
                pool.changed();
                // A job ended here (skipped, or no device can take it) may decide the
                // cascade's next stage of others still queued: look again before stopping.
                if running.is_empty() && !queue.is_empty() && pool.cascade.is_some() {
                    continue;
                }
            }
        }
        if running.is_empty() {
            break;
        }
        let flush_at = pool.written + index_interval(pool.index.jobs.len());
        let joined = tokio::select! {
            joined = running.join_next_with_id() => joined,
            () = cancel.cancelled(), if !cancelled => {
                cancelled = true;
                continue;
            }
            () = tokio::time::sleep_until(flush_at), if pool.dirty => {
                pool.write_index();
                continue;
            }
        };
        let Some(joined) = joined else { break };
        let (id, entry, checked) = match joined {
            Ok((id, (entry, checked))) => (id, Some(entry), checked),
            Err(e) => (e.id(), None, None),
        };
        let Some((job, slot)) = owner.remove(&id) else {
            continue;
        };
        let spec = &specs[job];
        pool.slots[slot].busy = false;
        let entry = entry.unwrap_or_else(|| {
            let mut e = spec.pending_entry();
            e.state = EntryState::Crashed;
            e.device = Some(pool.slots[slot].device.name());
            e.errors
                .push("internal error: the job's task ended without a result".to_string());
            e
        });
        if let Some((after, answer)) = checked {
            let device = pool.slots[slot].device.clone();
            match answer {
                Ok(answer) => pool.emit(PoolEvent::Healthy {
                    device: &device,
                    after: &after,
                    answer: &answer,
                }),
                Err(why) => {
                    let text = format!("failed its health check after {after}: {why}");
                    if pool.slots[slot].quarantined.is_none() {
                        pool.slots[slot].quarantined = Some(text.clone());
                        recheck = true;
                        pool.emit(PoolEvent::Quarantined {
                            device: &device,
                            reason: &text,
                        });
                    }
                }
            }
        }
        if let Some(reason) = entry.device_error.clone() {
            let s = &mut pool.slots[slot];
            s.streak += 1;
            s.failed += 1;
            pool.tried.entry(job).or_default().insert(slot);
            recheck = true;
            if s.streak >= opts.quarantine_after.max(1) && s.quarantined.is_none() {
                let text = format!(
                    "{} device-level failures in a row, the last: {reason}",
                    s.streak
                );
                s.quarantined = Some(text.clone());
                let device = s.device.clone();
                pool.emit(PoolEvent::Quarantined {
                    device: &device,
                    reason: &text,
                });
            }
            if !cancelled && pool.any_usable(job) {
                let device = pool.slots[slot].device.clone();
                let moved = pool.moves.entry(job).or_default();
                moved.0 += entry.attempts;
                moved.1.push(format!(
                    "on {}: device-level failure ({reason}); moved to another device",
                    device.name()
                ));
                pool.emit(PoolEvent::Moved {
                    id: &spec.id,
                    from: &device,
                    reason: &reason,
                });
                if let Some(e) = pool.index.jobs.get_mut(&spec.id) {
                    e.state = EntryState::Pending;
                }
                queue.push_front(job);
                pool.changed();
                continue;
            }
        } else {
            let s = &mut pool.slots[slot];
            s.streak = 0;
            if entry.state == EntryState::Succeeded {
                s.done += 1;
            } else {
                s.failed += 1;
            }
        }
        let mut entry = entry;
        if let Some((attempts, mut notes)) = pool.moves.remove(&job) {
            // The entry tells the whole story: attempts on earlier devices count, and say why
            // the job left them.
            entry.attempts += attempts;
            notes.append(&mut entry.errors);
            entry.errors = notes;
            let _ = entry.write_atomic(&super::task::run_dir(&pool.root, &spec.id));
        }
        pool.emit(PoolEvent::Finished { entry: &entry });
        pool.index.jobs.insert(spec.id.clone(), entry);
        pool.ended(job);
        pool.changed();
    }
    for write in std::mem::take(&mut pool.writes) {
        let _ = write.await;
    }
    if let Some(warm) = own_warm {
        warm.close().await;
    }
    // Nothing runs any more; an entry still marked running was cut off.
    cancel_running(&mut pool.index);
    pool.index.profile_cache = super::cache_summary::summary(
        &pool.root,
        specs,
        &pool.index,
        opts.task.profile_cache.as_ref(),
    );
    summarize(specs, &mut pool.index);
    pool.write_index();
    pool.index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::batch::Backend;
    use crate::pipeline::batch::index::prepare;
    use std::sync::Mutex;

    #[tokio::test]
    async fn a_bad_device_is_quarantined_and_every_job_ends_on_the_good_one() {
        let root = tempfile::tempdir().unwrap();
        let script =
            "[ \"$CUDA_VISIBLE_DEVICES\" = 1 ] && { echo 'GPU is lost' >&2; exit 1; }; exit 0";
        let specs: Vec<JobSpec> = (0..6)
            .map(|i| {
                JobSpec::new(
                    format!("j{i}"),
                    vec!["sh".into(), "-c".into(), script.into()],
                )
            })
            .collect();
        let prepared = prepare(root.path(), "jobs", &specs, Backend::Local, false).unwrap();
        let devices = vec![
            Device::gpu(Vendor::Nvidia, "0", None),
            Device::gpu(Vendor::Nvidia, "1", None),
        ];
        let opts = PoolOptions {
            quarantine_after: 1,
            ..PoolOptions::default()
        };
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let observer: Observer = Arc::new(move |e: &PoolEvent| {
            let text = match e {
                PoolEvent::Started { .. } => "started",
                PoolEvent::Finished { .. } => "finished",
                PoolEvent::Moved { .. } => "moved",
                PoolEvent::Quarantined { .. } => "quarantined",
                PoolEvent::Healthy { .. } => "healthy",
                PoolEvent::Warning(_) => "warning",
            };
            log.lock().unwrap().push(text);
        });
        let index = run_pool(
            &specs,
            root.path(),
            prepared,
            devices,
            &opts,
            Some(observer),
        )
        .await;
        assert!(
            index
                .jobs
                .values()
                .all(|e| e.state == EntryState::Succeeded)
        );
        assert!(
            index
                .jobs
                .values()
                .all(|e| e.device.as_deref() == Some("nvidia:0"))
        );
        assert!(
            index.devices[1]
                .quarantined
                .as_deref()
                .unwrap()
                .contains("GPU is lost")
        );
        let seen = seen.lock().unwrap();
        let count = |what: &str| seen.iter().filter(|s| **s == what).count();
        assert_eq!(count("finished"), 6);
        assert_eq!(count("quarantined"), 1);
        assert_eq!(count("moved"), 1);
        assert_eq!(count("started"), 7);
        assert_eq!(BatchIndex::read(root.path()).unwrap(), index);
        // The moved job says where it went first and counts that attempt.
        let moved = &index.jobs["j1"];
        assert_eq!(moved.attempts, 2);
        assert!(
            moved.errors[0].starts_with("on nvidia:1: device-level failure (GPU is lost)"),
            "{:?}",
            moved.errors
        );
        assert_eq!(
            &BatchEntry::read(&root.path().join("runs/j1")).unwrap(),
            moved
        );
    }
}
