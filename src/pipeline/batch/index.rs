//! The batch index on disk: a fresh one for a new batch root, or, with `--resume`, the jobs
//! that already ran to their end kept and everything else queued again.

use std::path::Path;
use std::sync::Arc;

use crate::model::batch::{BATCH_FILE, Backend, BatchEntry, BatchIndex, EntryState};
use crate::model::error::{Error, Result};
use crate::model::run::ProfileRun;
use crate::model::under_root;

use crate::pipeline::lock::{BATCH_LOCK, HeldLock, try_lock};

use super::spec::JobSpec;
use super::task::run_dir;

/// The index to start from and the positions (in job-file order) of the jobs to run.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub index: BatchIndex,
    pub to_run: Vec<usize>,
    /// Jobs kept from an earlier run of the batch.
    pub kept: usize,
    /// Jobs that had finished in an earlier run but whose definition changed since (rerun).
    pub changed: usize,
    /// The batch root's lock, held by the driver for its life (see [`lock_root`]).
    pub lock: Arc<HeldLock>,
}

/// Take the batch root's lock: one driver per root. A second driver (started together, or a
/// `--resume` while the first still runs) fails at once with [`Error::Busy`] naming the live
/// one; a dead driver's lock is free (the kernel released it).
pub fn lock_root(root: &Path) -> Result<HeldLock> {
    try_lock(&root.join(BATCH_LOCK), "batch root", root)
}

/// What an earlier run of a job left, as `--resume` sees it.
enum Earlier {
    /// Ran to its end with this very definition: kept.
    Done(Box<BatchEntry>),
    /// Ran to its end, but the job file now says something else: rerun.
    Changed,
    /// Did not finish (or left nothing readable): rerun.
    Unfinished,
}

/// Whether an earlier run of job `spec` counts as done: its entry.json reads back with a
/// state `--resume` keeps, and every pass's run.json reads back.
pub fn completed_entry(root: &Path, spec: &JobSpec) -> Option<BatchEntry> {
    match earlier_run(root, spec) {
        Earlier::Done(entry) => Some(*entry),
        Earlier::Changed | Earlier::Unfinished => None,
    }
}

fn earlier_run(root: &Path, spec: &JobSpec) -> Earlier {
    match finished_entry(root, spec) {
        // An entry without a digest (an older polyprof) cannot prove it ran this definition.
        Some(entry) if entry.definition_digest.as_deref() == Some(&spec.definition_digest()) => {
            Earlier::Done(Box::new(entry))
        }
        Some(_) => Earlier::Changed,
        None => Earlier::Unfinished,
    }
}

fn finished_entry(root: &Path, spec: &JobSpec) -> Option<BatchEntry> {
    let entry = BatchEntry::read(&run_dir(root, &spec.id)).ok()?;
    if entry.id != spec.id || !entry.state.kept_on_resume() {
        return None;
    }
    // An eval job's result is its verdict.
    if spec.eval.is_some() {
        // A crafted entry cannot point the resume at another folder's verdict.
        let Ok(run_dir) = under_root::resolve(root, &entry.run_dir, BATCH_FILE) else {
            return None;
        };
        let verdict = run_dir.join(crate::pipeline::eval::VERDICT_FILE);
        let reads = crate::model::input::read_regular(&verdict)
            .ok()
            .is_some_and(|bytes| {
                serde_json::from_slice::<crate::eval::EvalVerdict>(&bytes).is_ok()
            });
        return (reads || entry.state == EntryState::Failed).then_some(entry);
    }
    let passes: Vec<&str> = if entry.passes.is_empty() {
        vec![entry.run_dir.as_str()]
    } else {
        entry.passes.iter().map(String::as_str).collect()
    };
    passes
        .iter()
        .all(|p| {
            under_root::resolve(root, p, BATCH_FILE).is_ok_and(|dir| ProfileRun::read(&dir).is_ok())
        })
        .then_some(entry)
}

/// The starting index of a batch over `specs` in `root`. A root that already holds a batch
/// is refused unless `resume`.
pub fn prepare(
    root: &Path,
    job_file: &str,
    specs: &[JobSpec],
    backend: Backend,
    resume: bool,
) -> Result<Prepared> {
    crate::pipeline::rundir::check_usable(root)?;
    std::fs::create_dir_all(root).map_err(|e| Error::io("create batch root", root, e))?;
    // Before anything is read: what a live driver is writing is not this driver's to judge.
    let lock = Arc::new(lock_root(root)?);
    let existing = root.join(BATCH_FILE);
    if existing.exists() && !resume {
        return Err(Error::invalid(
            "--output-dir",
            format!(
                "{} already holds a batch ({BATCH_FILE}); pass --resume to continue it, or choose another --output-dir",
                root.display()
            ),
        ));
    }
    // An unreadable old index is no reason to stop: the per-job entries are the truth.
    let old = resume.then(|| BatchIndex::read(root).ok()).flatten();
    let mut entries = Vec::with_capacity(specs.len());
    let mut to_run = Vec::new();
    let (mut kept, mut changed) = (0, 0);
    for (i, spec) in specs.iter().enumerate() {
        let earlier = if resume {
            earlier_run(root, spec)
        } else {
            Earlier::Unfinished
        };
        match earlier {
            Earlier::Done(entry) => {
                kept += 1;
                entries.push(*entry);
            }
            Earlier::Changed | Earlier::Unfinished => {
                changed += usize::from(matches!(earlier, Earlier::Changed));
                to_run.push(i);
                entries.push(spec.pending_entry());
            }
        }
    }
    let mut index = BatchIndex::new(job_file, backend, entries);
    if let Some(old) = old {
        index.started_unix_s = old.started_unix_s;
        index.slurm_job_id = old.slurm_job_id;
        index.ray = old.ray;
    }
    Ok(Prepared {
        index,
        to_run,
        kept,
        changed,
        lock,
    })
}

/// Read each job's `entry.json` into `index` (a driver whose jobs ran elsewhere, such as a
/// Slurm array, collects them so). Jobs without a readable entry keep what the index says.
/// Returns how many entries were read.
pub fn collect_entries(index: &mut BatchIndex, root: &Path) -> usize {
    let mut read = 0;
    for id in &index.order {
        if let Ok(entry) = BatchEntry::read(&run_dir(root, id))
            && entry.id == *id
        {
            index.jobs.insert(id.clone(), entry);
            read += 1;
        }
    }
    read
}

/// Mark every running entry of `index` cancelled (the driver is stopping with them cut off).
pub fn cancel_running(index: &mut BatchIndex) {
    for entry in index.jobs.values_mut() {
        if entry.state == EntryState::Running {
            entry.state = EntryState::Cancelled;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::batch::task::{TaskOptions, run_task};

    #[tokio::test]
    async fn resume_keeps_finished_jobs_and_reruns_the_rest() {
        let root = tempfile::tempdir().unwrap();
        let specs = vec![
            JobSpec::new("ok", vec!["true".into()]),
            JobSpec::new("bad", vec!["false".into()]),
            JobSpec::new("gone", vec!["true".into()]),
            JobSpec::new("never", vec!["true".into()]),
        ];
        let opts = TaskOptions::default();
        for spec in &specs[..3] {
            run_task(spec, root.path(), None, &opts).await;
        }
        // `gone` lost its run.json (a disk problem, a half-copied root).
        std::fs::remove_file(root.path().join("runs/gone/run.json")).unwrap();
        let mut first = prepare(root.path(), "jobs", &specs, Backend::Local, false).unwrap();
        first.index.write_atomic(root.path()).unwrap();
        // The first driver ends (its lock goes with it).
        drop(first);
        let err = prepare(root.path(), "jobs", &specs, Backend::Local, false).unwrap_err();
        assert!(err.to_string().contains("--resume"), "{err}");
        let again = prepare(root.path(), "jobs", &specs, Backend::Local, true).unwrap();
        assert_eq!(again.kept, 2);
        assert_eq!(again.to_run, [2, 3]);
        assert_eq!(again.index.jobs["bad"].state, EntryState::Failed);
        assert_eq!(again.index.jobs["never"].state, EntryState::Pending);
        assert_eq!(again.index.order, ["ok", "bad", "gone", "never"]);
        let mut fresh = BatchIndex::new(
            "jobs",
            Backend::Slurm,
            specs
                .iter()
                .map(|s| BatchEntry::pending(&s.id, Default::default())),
        );
        assert_eq!(collect_entries(&mut fresh, root.path()), 3);
        assert_eq!(fresh.jobs["ok"].state, EntryState::Succeeded);
        assert_eq!(fresh.jobs["never"].state, EntryState::Pending);
    }
}
