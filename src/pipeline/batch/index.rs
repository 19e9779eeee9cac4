//! The batch index on disk: a fresh one for a new batch root, or, with `--resume`, the jobs
//! that already ran to their end kept and everything else queued again.

use std::path::Path;

use crate::model::batch::{BATCH_FILE, Backend, BatchEntry, BatchIndex, EntryState};
use crate::model::error::{Error, Result};
use crate::model::run::ProfileRun;

use super::spec::JobSpec;
use super::task::run_dir;

/// The index to start from and the positions (in job-file order) of the jobs to run.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub index: BatchIndex,
    pub to_run: Vec<usize>,
    /// Jobs kept from an earlier run of the batch.
    pub kept: usize,
}

/// Whether an earlier run of job `spec` counts as done: its entry.json reads back with a
/// state `--resume` keeps, and every pass's run.json reads back.
pub fn completed_entry(root: &Path, spec: &JobSpec) -> Option<BatchEntry> {
    let entry = BatchEntry::read(&run_dir(root, &spec.id)).ok()?;
    if entry.id != spec.id || !entry.state.kept_on_resume() {
        return None;
    }
    let passes: Vec<&str> = if entry.passes.is_empty() {
        vec![entry.run_dir.as_str()]
    } else {
        entry.passes.iter().map(String::as_str).collect()
    };
    passes
        .iter()
        .all(|p| ProfileRun::read(&root.join(p)).is_ok())
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
    std::fs::create_dir_all(root).map_err(|e| Error::io("create batch root", root, e))?;
    // An unreadable old index is no reason to stop: the per-job entries are the truth.
    let old = resume.then(|| BatchIndex::read(root).ok()).flatten();
    let mut entries = Vec::with_capacity(specs.len());
    let mut to_run = Vec::new();
    let mut kept = 0;
    for (i, spec) in specs.iter().enumerate() {
        match resume.then(|| completed_entry(root, spec)).flatten() {
            Some(entry) => {
                kept += 1;
                entries.push(entry);
            }
            None => {
                to_run.push(i);
                entries.push(BatchEntry::pending(&spec.id, spec.labels.clone()));
            }
        }
    }
    let mut index = BatchIndex::new(job_file, backend, entries);
    if let Some(old) = old {
        index.started_unix_s = old.started_unix_s;
        index.slurm_job_id = old.slurm_job_id;
    }
    Ok(Prepared {
        index,
        to_run,
        kept,
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
