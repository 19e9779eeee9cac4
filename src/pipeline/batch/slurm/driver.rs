//! The Slurm driver: the jobs still to run become one job array (`sbatch --parsable
//! --array=…`), each task runs `polyprof batch … --task-index N` on its node and writes
//! `runs/<id>/entry.json` into the shared batch root; the driver polls Slurm and those files,
//! keeps `batch.json` up to date, and on cancellation `scancel`s the array.
//!
//! Per task, the truth is its entry.json once it says a final state. Without one, Slurm's
//! word decides: pending/running as such; a final Slurm state (after `grace`, for slow shared
//! filesystems) maps to cancelled / timed_out / lost (NODE_FAIL, …) / crashed (the task ended
//! but polyprof wrote nothing); a task Slurm no longer knows at all is lost. So every task ends
//! in a state: none is silently missing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::model::batch::{Backend, BatchEntry, BatchIndex, EntryState, SlurmTaskInfo};
use crate::model::error::Error;
use crate::model::outcome::Outcome;
use crate::model::probe::{ProbeOutput, ProbeRequest};
use crate::pipeline::batch::index::Prepared;
use crate::pipeline::batch::remote_index;
use crate::pipeline::batch::spec::JobSpec;
use crate::pipeline::batch::task::{lock_job, run_dir};
use crate::pipeline::batch::waves::{Waves, in_waves};
use crate::pipeline::probe::run_probe;

use super::error::SlurmError;
use super::report::{SlurmState, TaskReport};
use super::squeue::{parse_sacct, parse_squeue};
use super::submit::{SubmitOptions, parse_parsable, sbatch_argv, task_script};
use super::text::{ClusterConfig, parse_config, parse_jobcomp, parse_scontrol};

/// The folder of the task script and the tasks' Slurm output files, in the batch root.
pub const SLURM_DIR: &str = "slurm";

/// How the driver runs.
#[derive(Debug, Clone)]
pub struct SlurmRun {
    /// The batch root, absolute (the nodes see it at the same path).
    pub root: PathBuf,
    pub submit: SubmitOptions,
    /// `[polyprof, batch, JOBS, --output-dir, ROOT, …]` as the nodes run it; the script adds
    /// `--task-index $SLURM_ARRAY_TASK_ID`.
    pub task_argv: Vec<String>,
    /// Time between polls.
    pub poll: Duration,
    /// How long a task may be over in Slurm's eyes before its missing entry.json is judged.
    pub grace: Duration,
    /// After `scancel`, how long to wait for Slurm to report the tasks ended.
    pub cancel_wait: Duration,
    /// Fired by Ctrl-C/SIGTERM: scancel the array, mark what did not finish cancelled.
    pub cancel: CancellationToken,
    /// Fired by a second Ctrl-C: stop waiting for Slurm to confirm the cancellation.
    pub give_up: CancellationToken,
    /// The batch's profile cache (`--profile-cache`), to know which jobs' run documents to
    /// read for the index's cache figures at the end (the tasks get it on their command line).
    pub profile_cache: Option<crate::pipeline::profile_cache::ProfileCacheOptions>,
    /// `Some(N)`: N array tasks (one per GPU), each running a run of consecutive jobs left to
    /// run, each problem's evals together (`Layout::shares`), one after the other
    /// (`--slurm-mode shares`); `None`: one array task per job.
    pub shares: Option<u32>,
}

/// Which array task runs which job.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Layout {
    /// Array task i runs job i.
    PerJob,
    /// Array task k runs `jobs[k]`, in order.
    Shares { jobs: Vec<Vec<u32>> },
}

impl Layout {
    /// `n` shares of `to_run`: the jobs in job-file order but each problem's evals together
    /// (`problem_of`: an eval job's problem key, `None` for other jobs), cut into `n` runs of
    /// consecutive jobs whose sizes differ by one at most. A share warms one evaluator per
    /// problem it holds: this way about one per problem plus one per cut, where dealing the
    /// jobs out in turn (k mod n) made every share warm up every problem.
    pub(super) fn shares(
        to_run: &BTreeSet<u32>,
        n: u32,
        problem_of: impl Fn(u32) -> Option<String>,
    ) -> Layout {
        let n = (n.max(1) as usize).min(to_run.len().max(1));
        let mut first_of: std::collections::HashMap<String, u32> = Default::default();
        let mut ordered: Vec<(u32, u32)> = to_run
            .iter()
            .map(|&i| {
                let group = problem_of(i).map_or(i, |key| *first_of.entry(key).or_insert(i));
                (group, i)
            })
            .collect();
        ordered.sort_unstable();
        let (size, extra) = (ordered.len() / n, ordered.len() % n);
        let mut rest = ordered.into_iter().map(|(_, i)| i);
        let jobs = (0..n)
            .map(|k| rest.by_ref().take(size + usize::from(k < extra)).collect())
            .collect();
        Layout::Shares { jobs }
    }

    /// The array's task ids.
    pub(super) fn tasks(&self, to_run: &BTreeSet<u32>) -> BTreeSet<u32> {
        match self {
            Layout::PerJob => to_run.clone(),
            Layout::Shares { jobs } => (0..jobs.len() as u32).collect(),
        }
    }

    /// The task that runs job `i`.
    pub(super) fn task_of(&self, i: u32) -> u32 {
        match self {
            Layout::PerJob => i,
            Layout::Shares { jobs } => jobs
                .iter()
                .position(|share| share.contains(&i))
                .unwrap_or_default() as u32,
        }
    }

    /// The jobs task `task` runs.
    pub(super) fn jobs_of(&self, task: u32) -> Vec<u32> {
        match self {
            Layout::PerJob => vec![task],
            Layout::Shares { jobs } => jobs.get(task as usize).cloned().unwrap_or_default(),
        }
    }
}

impl SlurmRun {
    pub fn new(root: PathBuf, task_argv: Vec<String>) -> Self {
        SlurmRun {
            root,
            submit: SubmitOptions::default(),
            task_argv,
            poll: Duration::from_millis(500),
            grace: Duration::from_secs(3),
            cancel_wait: Duration::from_secs(30),
            cancel: CancellationToken::new(),
            give_up: CancellationToken::new(),
            profile_cache: None,
            shares: None,
        }
    }
}

/// What the driver reports while it runs.
#[derive(Debug)]
pub enum SlurmEvent<'a> {
    Submitted {
        job_id: &'a str,
        tasks: usize,
    },
    /// An entry changed state.
    Changed {
        entry: &'a BatchEntry,
    },
    Cancelling {
        job_id: &'a str,
    },
    /// Something that does not stop the batch (a failed poll, an index write).
    Warning(&'a str),
}

pub type SlurmObserver = Arc<dyn Fn(&SlurmEvent) + Send + Sync>;

/// Slurm commands wait at most this long (a busy controller answers in seconds).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// Run the jobs `prepared.to_run` of `specs` as one job array, or one array per wave of the
/// cascade with `waves`; returns the final index.
pub async fn run_slurm(
    specs: &[JobSpec],
    prepared: Prepared,
    run: &SlurmRun,
    observer: Option<SlurmObserver>,
    waves: Option<Waves>,
) -> Result<BatchIndex, SlurmError> {
    let skipped = |entry: &_| {
        if let Some(o) = &observer {
            o(&SlurmEvent::Changed { entry })
        }
    };
    in_waves(
        specs,
        prepared,
        waves,
        &run.root,
        &run.cancel,
        &skipped,
        |prepared, wave| run_array(specs, prepared, run, observer.clone(), wave > 0),
    )
    .await
}

/// One array of the jobs `prepared.to_run`. `after_a_wave`: the index's array is this
/// driver's own of the wave before, whose jobs have all ended (some of its tasks may still be
/// leaving squeue), not a killed driver's that may still write the jobs about to run.
async fn run_array(
    specs: &[JobSpec],
    prepared: Prepared,
    run: &SlurmRun,
    observer: Option<SlurmObserver>,
    after_a_wave: bool,
) -> Result<BatchIndex, SlurmError> {
    let say = |event: &SlurmEvent| {
        if let Some(o) = &observer {
            o(event)
        }
    };
    let root = &run.root;
    let slurm_dir = root.join(SLURM_DIR);
    std::fs::create_dir_all(&slurm_dir).map_err(|e| Error::io("create", &slurm_dir, e))?;
    let mut index = prepared.index;
    index.backend = Backend::Slurm;
    let to_run: BTreeSet<u32> = prepared.to_run.iter().map(|&i| i as u32).collect();
    // Kept jobs come back from their entry.json, which has no Slurm view; the old index has.
    if let Ok(old) = BatchIndex::read(root) {
        for (i, spec) in specs.iter().enumerate() {
            if to_run.contains(&(i as u32)) {
                continue;
            }
            if let (Some(entry), Some(was)) = (index.jobs.get_mut(&spec.id), old.jobs.get(&spec.id))
                && entry.slurm.is_none()
            {
                entry.slurm = was.slurm.clone();
            }
        }
    }
    // A driver killed earlier may have left its array running; rerunning its jobs now would
    // clear run directories that its tasks are still writing.
    if let Some(old_job) = index.slurm_job_id.clone()
        && !after_a_wave
        && !to_run.is_empty()
        && let Ok(out) = slurm_command("squeue", &["--json"], &run.cancel, COMMAND_TIMEOUT).await
        && out.code == Some(0)
        && let Ok(reports) = parse_squeue(&String::from_utf8_lossy(&out.stdout), &old_job)
    {
        let live = reports.iter().filter(|r| !r.state.is_final()).count();
        if live > 0 {
            return Err(SlurmError::StillRunning {
                job_id: old_job,
                tasks: live,
            });
        }
    }
    // An old run's entry.json would be read as this run's result.
    for &i in &to_run {
        let id = &specs[i as usize].id;
        // A task (of an earlier array) still running the job holds its lock, as the local
        // pool's slots do: its run directory is not ours to clear.
        drop(lock_job(root, id)?);
        let dir = run_dir(root, id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Error::io("clear the old run directory", dir, e).into());
            }
        }
    }
    if to_run.is_empty() {
        index.write_atomic(root)?;
        return Ok(index);
    }
    let config = match slurm_command(
        "scontrol",
        &["show", "config"],
        &run.cancel,
        COMMAND_TIMEOUT,
    )
    .await
    {
        Ok(out) if out.code == Some(0) => parse_config(&String::from_utf8_lossy(&out.stdout)),
        _ => ClusterConfig::default(),
    };
    let layout = match run.shares {
        Some(n) => Layout::shares(&to_run, n, |i| {
            specs
                .get(i as usize)
                .and_then(crate::pipeline::batch::eval_job::problem_key)
        }),
        None => Layout::PerJob,
    };
    let tasks = layout.tasks(&to_run);
    if let (Some(max), Some(&last)) = (config.max_array_size, tasks.last())
        && last >= max
    {
        return Err(SlurmError::TooManyJobs {
            jobs: specs.len(),
            max,
        });
    }
    let script = slurm_dir.join("task.sh");
    let mut task_argv = run.task_argv.clone();
    if let Layout::Shares { jobs } = &layout {
        // Each submission its own list: a task of an earlier array never reads this one's.
        let list = slurm_dir.join(format!(
            "shares-{}.txt",
            (crate::model::batch::now_unix_s() * 1000.0) as u64
        ));
        let text: String = jobs
            .iter()
            .map(|share| {
                let words: Vec<String> = share.iter().map(u32::to_string).collect();
                format!("{}\n", words.join(" "))
            })
            .collect();
        crate::model::atomic_file::write_atomic(&list, text.as_bytes())
            .map_err(|e| Error::io("write the array's shares", &list, e))?;
        task_argv.push(format!("--task-shares={}", list.display()));
    }
    write_script(&script, &task_script(&task_argv)?)?;
    let argv = sbatch_argv(&run.submit, &tasks, &script, &slurm_dir)?;
    let argv_ref: Vec<&str> = argv.iter().map(String::as_str).collect();
    // An interrupted sbatch may have submitted all the same: only a second Ctrl-C stops it.
    let out = slurm_command("sbatch", &argv_ref, &run.give_up, COMMAND_TIMEOUT).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let job_id = match (out.code, parse_parsable(&stdout)) {
        (Some(0), Ok(id)) => id,
        (Some(0), Err(_)) => {
            let shown = |text: &str| text.trim().chars().take(2000).collect::<String>();
            return Err(SlurmError::NoJobId {
                stdout: shown(&stdout),
                stderr: shown(&String::from_utf8_lossy(&out.stderr)),
            });
        }
        (code, _) => {
            return Err(SlurmError::Refused {
                status: match code {
                    Some(c) => format!("exit {c}"),
                    None => "killed by a signal".into(),
                },
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
    };
    index.slurm_job_id = Some(job_id.clone());
    for &i in &to_run {
        if let Some(entry) = index.jobs.get_mut(&specs[i as usize].id) {
            entry.slurm = Some(SlurmTaskInfo {
                array_job_id: job_id.clone(),
                task_id: layout.task_of(i),
                state: Some("PENDING".into()),
                node: None,
            });
        }
    }
    write_index(&mut index, root, &say);
    say(&SlurmEvent::Submitted {
        job_id: &job_id,
        tasks: tasks.len(),
    });

    let mut poller = Poller::new(job_id.clone(), config);
    poller.layout = layout;
    let mut cancel_sent: Option<Instant> = None;
    let mut writes = remote_index::IndexWrites::new(specs.len());
    loop {
        if run.cancel.is_cancelled() && cancel_sent.is_none() {
            say(&SlurmEvent::Cancelling { job_id: &job_id });
            let limit = COMMAND_TIMEOUT.min(run.cancel_wait);
            if let Err(e) = slurm_command("scancel", &[&job_id], &run.give_up, limit).await {
                say(&SlurmEvent::Warning(&format!("scancel {job_id}: {e}")));
            }
            cancel_sent = Some(Instant::now());
        }
        let open: Vec<u32> = to_run
            .iter()
            .copied()
            .filter(|&i| {
                index
                    .jobs
                    .get(&specs[i as usize].id)
                    .is_some_and(|e| !e.state.is_final())
            })
            .collect();
        if open.is_empty() {
            break;
        }
        // A poll stops when the user does: on Ctrl-C before the scancel (which then goes out at
        // once), on the second Ctrl-C or the end of `cancel_wait` after it.
        let calls = match cancel_sent {
            None => Calls {
                stop: run.cancel.clone(),
                timeout: COMMAND_TIMEOUT,
            },
            Some(sent) => Calls {
                stop: run.give_up.clone(),
                timeout: run
                    .cancel_wait
                    .saturating_sub(sent.elapsed())
                    .clamp(Duration::from_millis(100), COMMAND_TIMEOUT),
            },
        };
        let open_tasks: Vec<u32> = open
            .iter()
            .map(|&i| poller.layout.task_of(i))
            .collect::<BTreeSet<u32>>()
            .into_iter()
            .collect();
        let (reports, answered) = poller.reports(&open_tasks, root, specs, &calls, &say).await;
        let round = Round {
            root,
            answered,
            cancelled: cancel_sent.is_some(),
            grace: run.grace,
        };
        let mut changed = false;
        for &i in &open {
            let spec = &specs[i as usize];
            let Some(old) = index.jobs.get(&spec.id) else {
                continue;
            };
            let task = poller.layout.task_of(i);
            let new = poller.judge(i, spec, old, reports.get(&task), &round);
            if let Some(new) = new {
                say(&SlurmEvent::Changed { entry: &new });
                index.jobs.insert(spec.id.clone(), new);
                changed = true;
            }
        }
        if let Some(sent) = cancel_sent
            && (sent.elapsed() >= run.cancel_wait || run.give_up.is_cancelled())
        {
            for &i in &open {
                if let Some(entry) = index.jobs.get_mut(&specs[i as usize].id)
                    && !entry.state.is_final()
                {
                    entry.state = EntryState::Cancelled;
                    entry.errors.push(format!(
                        "Slurm had not reported the task ended {:.0} s after scancel",
                        sent.elapsed().as_secs_f64()
                    ));
                }
            }
            break;
        }
        // Each write is the whole index: at most one per `index_interval` (the entries
        // themselves are on disk at once), and always at the end.
        if changed {
            writes.changed();
        }
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

struct Poller {
    job_id: String,
    config: ClusterConfig,
    layout: Layout,
    /// When each task was first seen over in Slurm without a final entry.json.
    over_since: HashMap<u32, Instant>,
    /// When each task was first missing from every Slurm source.
    unknown_since: HashMap<u32, Instant>,
}

impl Poller {
    fn new(job_id: String, config: ClusterConfig) -> Self {
        Poller {
            job_id,
            config,
            layout: Layout::PerJob,
            over_since: HashMap::new(),
            unknown_since: HashMap::new(),
        }
    }

    /// What Slurm says about the open tasks: squeue first; for tasks it no longer lists,
    /// sacct (with accounting), else the jobcomp file, else `scontrol show job`. The flag says
    /// whether Slurm answered: when a command failed (slurmctld restarting, slurmdbd down), a
    /// task absent from the answers is not forgotten, only unseen.
    async fn reports(
        &self,
        open: &[u32],
        root: &Path,
        specs: &[JobSpec],
        calls: &Calls,
        say: &impl Fn(&SlurmEvent),
    ) -> (HashMap<u32, TaskReport>, bool) {
        let slurm_command = |program: &'static str, args: Vec<String>| calls.run(program, args);
        let mut found: HashMap<u32, TaskReport> = HashMap::new();
        let mut answered = false;
        match slurm_command("squeue", vec!["--json".into()]).await {
            Ok(out) if out.code == Some(0) => {
                match parse_squeue(&String::from_utf8_lossy(&out.stdout), &self.job_id) {
                    Ok(list) => {
                        answered = true;
                        found.extend(list.into_iter().map(|r| (r.task_id, r)));
                    }
                    Err(e) => say(&SlurmEvent::Warning(&e.to_string())),
                }
            }
            Ok(out) => say(&SlurmEvent::Warning(&format!(
                "squeue --json failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))),
            Err(e) => say(&SlurmEvent::Warning(&e.to_string())),
        }
        // Tasks whose jobs all have a final entry.json need no Slurm answer.
        let missing: Vec<u32> = open
            .iter()
            .copied()
            .filter(|i| !found.contains_key(i))
            .filter(|&t| {
                self.layout
                    .jobs_of(t)
                    .iter()
                    .any(|&i| final_entry(root, &specs[i as usize].id, &self.job_id).is_none())
            })
            .collect();
        if missing.is_empty() {
            return (found, answered);
        }
        let fallback = if self.config.accounting {
            let args = vec!["--json".into(), "-j".into(), self.job_id.clone()];
            let list = match slurm_command("sacct", args).await {
                Ok(o) if o.code == Some(0) => {
                    parse_sacct(&String::from_utf8_lossy(&o.stdout), &self.job_id)
                        .map_err(|e| e.to_string())
                }
                Ok(o) => Err(format!(
                    "sacct --json -j {} failed: {}",
                    self.job_id,
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => Err(e.to_string()),
            };
            list.unwrap_or_else(|e| {
                say(&SlurmEvent::Warning(&e));
                answered = false;
                Vec::new()
            })
        } else if let Some(text) = self
            .config
            .jobcomp_file
            .as_deref()
            .and_then(|f| std::fs::read_to_string(f).ok())
        {
            parse_jobcomp(&text, &self.job_id)
        } else {
            let args = vec!["show".into(), "job".into(), self.job_id.clone()];
            match slurm_command("scontrol", args).await {
                Ok(o) if o.code == Some(0) => {
                    parse_scontrol(&String::from_utf8_lossy(&o.stdout), &self.job_id)
                }
                // The controller no longer holds the job: it has forgotten, a real answer.
                Ok(o) if String::from_utf8_lossy(&o.stderr).contains("Invalid job id") => {
                    Vec::new()
                }
                Ok(o) => {
                    say(&SlurmEvent::Warning(&format!(
                        "scontrol show job {} failed: {}",
                        self.job_id,
                        String::from_utf8_lossy(&o.stderr).trim()
                    )));
                    answered = false;
                    Vec::new()
                }
                Err(e) => {
                    say(&SlurmEvent::Warning(&e.to_string()));
                    answered = false;
                    Vec::new()
                }
            }
        };
        for report in fallback {
            if missing.contains(&report.task_id) {
                found.insert(report.task_id, report);
            }
        }
        (found, answered)
    }

    /// The entry's new value, when it changed. `job`: the job's index (array task `job` runs it,
    /// or the share task that holds it).
    fn judge(
        &mut self,
        job: u32,
        spec: &JobSpec,
        old: &BatchEntry,
        report: Option<&TaskReport>,
        round: &Round,
    ) -> Option<BatchEntry> {
        let Round {
            root,
            answered,
            cancelled,
            grace,
        } = *round;
        let task = self.layout.task_of(job);
        let info = |r: Option<&TaskReport>| SlurmTaskInfo {
            array_job_id: self.job_id.clone(),
            task_id: task,
            state: r.map(|r| r.state.name().to_string()),
            node: r.and_then(|r| r.node.clone()),
        };
        if let Some(mut entry) = final_entry(root, &spec.id, &self.job_id) {
            // Cut off by our scancel: the command died of Slurm's SIGTERM, not by itself.
            if cancelled
                && entry.state != EntryState::Succeeded
                && matches!(
                    entry.outcome,
                    None | Some(
                        Outcome::Signalled { .. }
                            | Outcome::SupervisorKilled { .. }
                            | Outcome::Cancelled
                    )
                )
            {
                entry.state = EntryState::Cancelled;
            }
            entry.slurm = Some(info(report));
            if entry.node.is_none() {
                entry.node = report.and_then(|r| r.node.clone());
            }
            return Some(entry);
        }
        let mut entry = old.clone();
        match report {
            Some(r) if r.state.is_final() => {
                let since = *self.over_since.entry(job).or_insert_with(Instant::now);
                if since.elapsed() < grace {
                    return None;
                }
                entry.state = state_without_entry(&r.state);
                entry
                    .errors
                    .push(missing_entry_message(root, &self.job_id, spec, r));
            }
            Some(r) => {
                self.unknown_since.remove(&job);
                // A share task runs its jobs one after the other: a job it has not reached is
                // pending (its entry.json says running once it starts).
                let started = self.layout == Layout::PerJob
                    || BatchEntry::read(&run_dir(root, &spec.id)).is_ok();
                entry.state = if r.state.is_active() && started {
                    EntryState::Running
                } else {
                    EntryState::Pending
                };
                if r.restarts > 0 {
                    entry.attempts = entry.attempts.max(r.restarts);
                }
            }
            // Slurm could not be asked: the task may well be running still.
            None if !answered => return None,
            None => {
                let since = *self.unknown_since.entry(job).or_insert_with(Instant::now);
                if since.elapsed() < grace {
                    return None;
                }
                entry.state = if cancelled {
                    EntryState::Cancelled
                } else {
                    EntryState::Lost
                };
                entry.errors.push(format!(
                    "Slurm no longer reports task {task} of array {} and it wrote no {}/entry.json",
                    self.job_id, entry.run_dir
                ));
            }
        }
        if entry.node.is_none() {
            entry.node = report.and_then(|r| r.node.clone());
        }
        entry.slurm = Some(info(report));
        (entry != *old).then_some(entry)
    }
}

/// What holds for every task of one poll.
#[derive(Debug, Clone, Copy)]
struct Round<'a> {
    root: &'a Path,
    /// Whether Slurm answered this poll at all (a failed squeue is no news).
    answered: bool,
    /// Whether our scancel was sent.
    cancelled: bool,
    /// How long a task may look over (or forgotten) before it is judged without an entry.
    grace: Duration,
}

/// The entry state of a task that Slurm says is over but that wrote no final entry.json.
pub fn state_without_entry(state: &SlurmState) -> EntryState {
    match state {
        SlurmState::Cancelled => EntryState::Cancelled,
        SlurmState::Timeout | SlurmState::Deadline => EntryState::TimedOut,
        // polyprof on the node died or never started (not installed there, killed for memory).
        SlurmState::Completed | SlurmState::Failed | SlurmState::OutOfMemory => EntryState::Crashed,
        // The node (or the scheduler) took it away.
        _ => EntryState::Lost,
    }
}

fn missing_entry_message(root: &Path, job_id: &str, spec: &JobSpec, r: &TaskReport) -> String {
    let log = root
        .join(SLURM_DIR)
        .join(format!("{job_id}_{}.out", r.task_id));
    let mut text = format!(
        "Slurm reports task {} of array {job_id} {}{}{} but it wrote no runs/{}/entry.json",
        r.task_id,
        r.state.name(),
        r.node
            .as_deref()
            .map(|n| format!(" on {n}"))
            .unwrap_or_default(),
        r.exit_code
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default(),
        spec.id,
    );
    // The task's own output usually says why (polyprof not found on the node, …).
    if let Ok(out) = std::fs::read_to_string(&log) {
        let tail: Vec<&str> = out.lines().rev().take(3).collect();
        if !tail.is_empty() {
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            text.push_str(&format!("; {} ends: {}", log.display(), tail.join(" | ")));
        }
    } else {
        text.push_str(&format!("; no output file {}", log.display()));
    }
    text
}

/// The job's entry.json, when it says a final state.
/// The job's final entry written by a task of array `job_id` (an entry that names another
/// array was written late by a task cancelled before a resume, and is not this array's answer).
fn final_entry(root: &Path, id: &str, job_id: &str) -> Option<BatchEntry> {
    BatchEntry::read(&run_dir(root, id)).ok().filter(|e| {
        e.id == id
            && e.state.is_final()
            && e.slurm.as_ref().is_none_or(|s| s.array_job_id == job_id)
    })
}

fn write_script(path: &Path, text: &str) -> Result<(), SlurmError> {
    let io = |e| Error::io("write the task script", path, e);
    crate::model::atomic_file::write_atomic(path, text.as_bytes()).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(io)?;
    }
    Ok(())
}

fn write_index(index: &mut BatchIndex, root: &Path, say: &impl Fn(&SlurmEvent)) {
    remote_index::write_index(index, root, &warn_through(say));
}

/// A warning said as the driver's event.
fn warn_through(say: &impl Fn(&SlurmEvent)) -> impl Fn(&str) + '_ {
    move |text: &str| say(&SlurmEvent::Warning(text))
}

/// How the poll's Slurm commands stop: `stop` fired, or `timeout` passed.
struct Calls {
    stop: CancellationToken,
    timeout: Duration,
}

impl Calls {
    async fn run(
        &self,
        program: &'static str,
        args: Vec<String>,
    ) -> Result<ProbeOutput, SlurmError> {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        slurm_command(program, &args, &self.stop, self.timeout).await
    }
}

/// One Slurm CLI command through the probe runner (own process group, `timeout`), off the
/// async threads. When `stop` fires the command's whole process group is killed and reaped
/// before this returns, so no hung Slurm command outlives the driver.
async fn slurm_command(
    program: &str,
    args: &[&str],
    stop: &CancellationToken,
    timeout: Duration,
) -> Result<ProbeOutput, SlurmError> {
    let request = ProbeRequest {
        program: program.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        timeout,
        env: BTreeMap::new(),
    };
    let stop = stop.clone();
    tokio::task::spawn_blocking(move || run_probe(&request, &stop))
        .await
        .map_err(|e| {
            SlurmError::Other(crate::model::error::Error::invalid(
                "Slurm command",
                format!("the thread running `{program}` failed: {e}"),
            ))
        })?
        .map_err(SlurmError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share_lists(layout: Layout) -> Vec<Vec<u32>> {
        match layout {
            Layout::Shares { jobs } => jobs,
            Layout::PerJob => panic!("not shares"),
        }
    }

    #[test]
    fn shares_are_consecutive_runs_with_each_problems_evals_together() {
        let all = |n: u32| (0..n).collect::<BTreeSet<u32>>();
        // Plain jobs: runs in job-file order, sizes apart by one at most.
        assert_eq!(
            share_lists(Layout::shares(&all(8), 2, |_| None)),
            [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
        );
        assert_eq!(
            share_lists(Layout::shares(&all(7), 3, |_| None)),
            [vec![0, 1, 2], vec![3, 4], vec![5, 6]]
        );
        // Two problems' evals interleaved in the file: each share holds one problem.
        let problem = |i: u32| Some(if i.is_multiple_of(2) { "a" } else { "b" }.to_string());
        assert_eq!(
            share_lists(Layout::shares(&all(6), 2, problem)),
            [vec![0, 2, 4], vec![1, 3, 5]]
        );
        // A plain job keeps its place among the groups; more tasks than jobs: one job each.
        let mixed = |i: u32| (i != 1).then(|| "a".to_string());
        assert_eq!(
            share_lists(Layout::shares(&all(4), 2, mixed)),
            [vec![0, 2], vec![3, 1]]
        );
        let resumed: BTreeSet<u32> = [1, 6].into();
        assert_eq!(
            share_lists(Layout::shares(&resumed, 5, |_| None)),
            [vec![1], vec![6]]
        );
    }

    #[test]
    fn an_entry_written_late_by_an_earlier_array_is_not_this_arrays_answer() {
        let root = tempfile::tempdir().unwrap();
        let mut entry = BatchEntry::pending("k0", Default::default());
        entry.state = EntryState::Cancelled;
        entry.slurm = Some(SlurmTaskInfo {
            array_job_id: "41".into(),
            task_id: 0,
            state: None,
            node: None,
        });
        let dir = run_dir(root.path(), "k0");
        std::fs::create_dir_all(&dir).unwrap();
        entry.write_atomic(&dir).unwrap();
        assert!(final_entry(root.path(), "k0", "42").is_none());
        assert!(final_entry(root.path(), "k0", "41").is_some());
        // An entry that names no array (an older task binary) is taken as it is.
        entry.slurm = None;
        entry.write_atomic(&dir).unwrap();
        assert!(final_entry(root.path(), "k0", "42").is_some());
    }

    #[test]
    fn slurm_states_without_an_entry() {
        assert_eq!(state_without_entry(&SlurmState::NodeFail), EntryState::Lost);
        assert_eq!(
            state_without_entry(&SlurmState::Cancelled),
            EntryState::Cancelled
        );
        assert_eq!(
            state_without_entry(&SlurmState::Timeout),
            EntryState::TimedOut
        );
        assert_eq!(
            state_without_entry(&SlurmState::Completed),
            EntryState::Crashed
        );
        assert_eq!(
            state_without_entry(&SlurmState::Preempted),
            EntryState::Lost
        );
    }

    fn round(root: &Path, answered: bool, cancelled: bool, grace: Duration) -> Round<'_> {
        Round {
            root,
            answered,
            cancelled,
            grace,
        }
    }

    fn report(state: SlurmState) -> TaskReport {
        TaskReport {
            array_job_id: "5".into(),
            task_id: 0,
            state,
            reason: None,
            node: Some("n2".into()),
            exit_code: None,
            restarts: 0,
        }
    }

    #[test]
    fn a_node_failure_becomes_lost_after_the_grace_and_an_entry_wins() {
        let root = tempfile::tempdir().unwrap();
        let spec = JobSpec::new("j", vec!["true".into()]);
        let old = BatchEntry::pending("j", BTreeMap::new());
        let mut poller = Poller::new("5".into(), ClusterConfig::default());
        let running = poller
            .judge(
                0,
                &spec,
                &old,
                Some(&report(SlurmState::Running)),
                &round(root.path(), true, false, Duration::ZERO),
            )
            .unwrap();
        assert_eq!(running.state, EntryState::Running);
        assert_eq!(running.node.as_deref(), Some("n2"));
        let failed = report(SlurmState::NodeFail);
        let long = Duration::from_secs(3600);
        assert!(
            poller
                .judge(
                    0,
                    &spec,
                    &running,
                    Some(&failed),
                    &round(root.path(), true, false, long)
                )
                .is_none()
        );
        let lost = poller
            .judge(
                0,
                &spec,
                &running,
                Some(&failed),
                &round(root.path(), true, false, Duration::ZERO),
            )
            .unwrap();
        assert_eq!(lost.state, EntryState::Lost);
        assert!(
            lost.errors[0].contains("NODE_FAIL on n2"),
            "{:?}",
            lost.errors
        );
        // The entry the task wrote is the truth, whatever Slurm said.
        let mut done = BatchEntry::pending("j", BTreeMap::new());
        done.state = EntryState::Succeeded;
        let dir = run_dir(root.path(), "j");
        std::fs::create_dir_all(&dir).unwrap();
        done.write_atomic(&dir).unwrap();
        let taken = poller
            .judge(
                0,
                &spec,
                &running,
                Some(&failed),
                &round(root.path(), true, false, Duration::ZERO),
            )
            .unwrap();
        assert_eq!(taken.state, EntryState::Succeeded);
        assert_eq!(taken.slurm.unwrap().state.as_deref(), Some("NODE_FAIL"));
    }

    #[test]
    fn a_task_slurm_forgot_is_lost_or_cancelled() {
        let root = tempfile::tempdir().unwrap();
        let spec = JobSpec::new("j", vec!["true".into()]);
        let old = BatchEntry::pending("j", BTreeMap::new());
        let mut poller = Poller::new("5".into(), ClusterConfig::default());
        let lost = poller
            .judge(
                0,
                &spec,
                &old,
                None,
                &round(root.path(), true, false, Duration::ZERO),
            )
            .unwrap();
        assert_eq!(lost.state, EntryState::Lost);
        let cancelled = poller
            .judge(
                0,
                &spec,
                &old,
                None,
                &round(root.path(), true, true, Duration::ZERO),
            )
            .unwrap();
        assert_eq!(cancelled.state, EntryState::Cancelled);
    }

    #[test]
    fn a_task_is_not_lost_while_slurm_cannot_be_asked() {
        let root = tempfile::tempdir().unwrap();
        let spec = JobSpec::new("j", vec!["true".into()]);
        let mut running = BatchEntry::pending("j", BTreeMap::new());
        running.state = EntryState::Running;
        let mut poller = Poller::new("5".into(), ClusterConfig::default());
        // squeue failed (slurmctld restarting): no answer is no news, however long it lasts.
        for _ in 0..3 {
            assert!(
                poller
                    .judge(
                        0,
                        &spec,
                        &running,
                        None,
                        &round(root.path(), false, false, Duration::ZERO)
                    )
                    .is_none()
            );
        }
        // Once Slurm answers without the task, it is forgotten: lost.
        let lost = poller
            .judge(
                0,
                &spec,
                &running,
                None,
                &round(root.path(), true, false, Duration::ZERO),
            )
            .unwrap();
        assert_eq!(lost.state, EntryState::Lost);
    }
}
