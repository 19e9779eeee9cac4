//! A job file's `problem` stages on a scheduler that takes a list of jobs at a time (a Slurm
//! array, Ray): the cascade in waves. Each wave is the jobs the cascade lets run now; once all
//! of them have ended, the cascade decides again (skips recorded, later stages released) and
//! the next wave goes out, until no job is left to run. A Slurm array (a Ray job per job) is
//! one submission per wave ([`in_waves`]); the Ray actors' job takes every wave in turn
//! ([`Waves`] fed to it). A wave is a barrier the local pool does not have (there a stage
//! starts as soon as the one before it passed), so a problem's stages cost one wave each: at
//! most four (compile, check, time, profile), whatever the number of candidates.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::cascade::{Cascade, Decision, Rankings, skipped_entry, summarize};
use super::index::Prepared;
use super::spec::JobSpec;
use crate::model::batch::{BatchEntry, BatchIndex};

/// The cascade's waves over the jobs left to run.
#[derive(Debug)]
pub struct Waves {
    cascade: Cascade,
    /// Jobs neither sent in a wave nor ended nor skipped.
    left: BTreeSet<usize>,
}

impl Waves {
    /// The waves over `to_run`; `None` when no job of `specs` is a problem's stage (then every
    /// job goes at once).
    pub fn new(specs: &[JobSpec], all_stages: bool, to_run: &[usize]) -> Option<Self> {
        Some(Waves {
            cascade: Cascade::new(specs, all_stages)?,
            left: to_run.iter().copied().collect(),
        })
    }

    /// The next wave: the jobs left that the cascade lets run now, in file order (empty: none
    /// is left). The ones it skips get their entries in `index` and `on_skipped` hears each;
    /// jobs that have ended meanwhile leave. A skip can decide a later stage of the same
    /// candidate, so the decisions are made again until none changes.
    pub fn next(
        &mut self,
        specs: &[JobSpec],
        index: &mut BatchIndex,
        on_skipped: &(dyn Fn(&BatchEntry) + Sync),
    ) -> Vec<usize> {
        loop {
            let mut run = Vec::new();
            let mut skipped = false;
            let mut rankings = Rankings::new();
            for job in self.left.clone() {
                let id = &specs[job].id;
                if index.jobs.get(id).is_some_and(|e| e.state.is_final()) {
                    self.left.remove(&job);
                    continue;
                }
                match self.cascade.decide_with(specs, job, index, &mut rankings) {
                    Decision::Run => run.push(job),
                    Decision::Wait => {}
                    Decision::Skip(skip) => {
                        let entry = skipped_entry(&specs[job], skip);
                        on_skipped(&entry);
                        index.jobs.insert(id.clone(), entry);
                        self.left.remove(&job);
                        skipped = true;
                        // The index changed: the problems' rankings are made again.
                        rankings.clear();
                    }
                }
            }
            if !skipped {
                for job in &run {
                    self.left.remove(job);
                }
                return run;
            }
        }
    }
}

/// Run `prepared.to_run` through `run_wave` (one scheduler submission, returning the index once
/// every job it was given has ended), a wave at a time; without `waves`, all at once.
/// `on_skipped` hears each job the cascade skips. Stops after the wave during which `cancel`
/// fired (the jobs left keep their pending entries); the last index is written to `root` with
/// the cascade's summary.
pub async fn in_waves<E, F, Fut>(
    specs: &[JobSpec],
    prepared: Prepared,
    waves: Option<Waves>,
    root: &Path,
    cancel: &CancellationToken,
    on_skipped: &(dyn Fn(&BatchEntry) + Sync),
    mut run_wave: F,
) -> Result<BatchIndex, E>
where
    F: FnMut(Prepared, usize) -> Fut,
    Fut: Future<Output = Result<BatchIndex, E>>,
    E: From<crate::model::error::Error>,
{
    let Some(mut waves) = waves else {
        return run_wave(prepared, 0).await;
    };
    let Prepared {
        mut index,
        kept,
        changed,
        lock,
        ..
    } = prepared;
    let mut wave_number = 0;
    loop {
        if wave_number > 0 && cancel.is_cancelled() {
            break;
        }
        let wave = waves.next(specs, &mut index, on_skipped);
        if wave.is_empty() {
            break;
        }
        let prepared = Prepared {
            index,
            to_run: wave,
            kept,
            changed,
            lock: lock.clone(),
        };
        index = run_wave(prepared, wave_number).await?;
        wave_number += 1;
    }
    summarize(specs, &mut index);
    index.write_atomic(root)?;
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::batch::{Backend, EntryState, EvalSummary};
    use crate::pipeline::batch::index::prepare;
    use crate::pipeline::batch::problem::ProblemSpec;

    /// A problem of three candidates going through every stage, profiled within 50 % of the
    /// best time.
    fn problem_specs() -> Vec<JobSpec> {
        serde_json::from_value::<ProblemSpec>(serde_json::json!({
            "id": "p", "reference": "ref.py",
            "candidates": ["a.py", "b.py", "c.py"],
            "stages": ["compile", "check", "time", "profile"],
            "compile": ["true"],
            "profile": {"margin": 0.5}, "eval": {"device": "cpu"}
        }))
        .unwrap()
        .expand()
        .unwrap()
    }

    /// The problem's jobs, a batch root under `dir`, and the index prepared there.
    fn prepared_in(dir: &Path) -> (Vec<JobSpec>, std::path::PathBuf, Prepared) {
        let specs = problem_specs();
        let root = dir.join("root");
        std::fs::create_dir_all(&root).unwrap();
        let prepared = prepare(&root, "jobs.toml", &specs, Backend::Local, false).unwrap();
        (specs, root, prepared)
    }

    fn finish(index: &mut BatchIndex, spec: &JobSpec, passed: bool, score_ms: Option<f64>) {
        let mut entry = spec.pending_entry();
        entry.state = EntryState::Succeeded;
        entry.duration_s = Some(1.0);
        if spec.eval.is_some() {
            entry.eval = Some(EvalSummary {
                passed,
                status: if passed { "correct" } else { "incorrect" }.into(),
                score_ms,
                ..Default::default()
            });
        }
        index.jobs.insert(spec.id.clone(), entry);
    }

    #[tokio::test]
    async fn each_wave_is_what_the_cascade_lets_run_and_skips_are_recorded_between_them() {
        let dir = tempfile::tempdir().unwrap();
        let (specs, root, prepared) = prepared_in(dir.path());
        let stage_of = |i: usize| specs[i].stage.as_ref().unwrap().clone();
        let skipped = std::sync::Mutex::new(Vec::new());
        let mut waves: Vec<Vec<String>> = Vec::new();
        let cascade = Waves::new(&specs, false, &prepared.to_run);
        let index = in_waves::<crate::model::error::Error, _, _>(
            &specs,
            prepared,
            cascade,
            &root,
            &CancellationToken::new(),
            &|e| skipped.lock().unwrap().push(e.id.clone()),
            |p, n| {
                assert_eq!(n, waves.len());
                let mut index = p.index;
                let mut names = Vec::new();
                for &i in &p.to_run {
                    let stage = stage_of(i);
                    names.push(format!("{}.{}", stage.candidate, stage.stage));
                    // b fails its check; c is ten times slower than a.
                    let passed = !(stage.candidate == "b" && stage.stage.to_string() == "check");
                    let time = if stage.candidate == "c" { 10.0 } else { 1.0 };
                    finish(&mut index, &specs[i], passed, Some(time));
                }
                waves.push(names);
                async move { Ok(index) }
            },
        )
        .await
        .unwrap();
        let names = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            waves,
            vec![
                names(&["a.compile", "b.compile", "c.compile"]),
                names(&["a.check", "b.check", "c.check"]),
                names(&["a.time", "c.time"]),
                names(&["a.profile"]),
            ]
        );
        let mut skipped = skipped.into_inner().unwrap();
        skipped.sort();
        assert_eq!(skipped.len(), 3, "{skipped:?}");
        for id in &skipped {
            assert_eq!(index.jobs[id].state, EntryState::Skipped);
        }
        let summary = index.cascade.as_ref().expect("the cascade's summary");
        assert_eq!(summary.stages.iter().map(|s| s.skipped).sum::<usize>(), 3);
        let written = BatchIndex::read(&root).unwrap();
        assert_eq!(written.cascade, index.cascade);
    }

    #[tokio::test]
    async fn a_cancel_stops_after_the_wave_it_came_in() {
        let dir = tempfile::tempdir().unwrap();
        let (specs, root, prepared) = prepared_in(dir.path());
        let cancel = CancellationToken::new();
        let mut waves = 0;
        let cascade = Waves::new(&specs, false, &prepared.to_run);
        let index = in_waves::<crate::model::error::Error, _, _>(
            &specs,
            prepared,
            cascade,
            &root,
            &cancel,
            &|_| {},
            |p, _| {
                waves += 1;
                cancel.cancel();
                let mut index = p.index;
                for &i in &p.to_run {
                    finish(&mut index, &specs[i], true, Some(1.0));
                }
                async move { Ok(index) }
            },
        )
        .await
        .unwrap();
        assert_eq!(waves, 1);
        let pending = index
            .jobs
            .values()
            .filter(|e| e.state == EntryState::Pending)
            .count();
        assert_eq!(pending, 9, "the later stages are left pending for a resume");
    }
}
