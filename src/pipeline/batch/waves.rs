//! A job file's `problem` stages on a scheduler that takes a fixed list of jobs at once (a
//! Slurm array, a Ray actors' job): the cascade in waves. Each wave is the jobs the cascade
//! lets run now, submitted together; once all of them have ended, the cascade decides again
//! (skips recorded, later stages released) and the next wave goes out, until no job is left
//! to run. A wave is a barrier the local pool does not have (there a stage starts as soon as
//! the one before it passed), so a problem's stages cost one submission each: at most four
//! (compile, check, time, profile), whatever the number of candidates.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::cascade::{Cascade, Decision, Rankings, skipped_entry, summarize};
use super::index::Prepared;
use super::spec::JobSpec;
use crate::model::batch::{BatchEntry, BatchIndex};

/// Run `prepared.to_run` through `run_wave` (one scheduler submission, returning the index once
/// every job it was given has ended), in as many waves as the cascade needs; without stages,
/// one wave of every job. `on_skipped` hears each job the cascade skips. Stops after the wave
/// during which `cancel` fired (the jobs left keep their pending entries); the last index is
/// written to `root` with the cascade's summary.
pub async fn in_waves<E, F, Fut>(
    specs: &[JobSpec],
    prepared: Prepared,
    all_stages: bool,
    root: &Path,
    cancel: &CancellationToken,
    on_skipped: impl Fn(&BatchEntry),
    mut run_wave: F,
) -> Result<BatchIndex, E>
where
    F: FnMut(Prepared, usize) -> Fut,
    Fut: Future<Output = Result<BatchIndex, E>>,
    E: From<crate::model::error::Error>,
{
    let Some(cascade) = Cascade::new(specs, all_stages) else {
        return run_wave(prepared, 0).await;
    };
    let Prepared {
        mut index,
        to_run,
        kept,
        changed,
        lock,
    } = prepared;
    let mut left: BTreeSet<usize> = to_run.into_iter().collect();
    let mut wave_number = 0;
    loop {
        let wave = decide(&cascade, specs, &mut index, &mut left, &on_skipped);
        if wave.is_empty() || (wave_number > 0 && cancel.is_cancelled()) {
            break;
        }
        for job in &wave {
            left.remove(job);
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

/// The jobs of `left` the cascade lets run now, in file order; the skipped ones get their
/// entries in `index` and leave `left`, as do jobs that have already ended. A skip can decide
/// a later stage of the same candidate, so the decisions are made again until none changes.
fn decide(
    cascade: &Cascade,
    specs: &[JobSpec],
    index: &mut BatchIndex,
    left: &mut BTreeSet<usize>,
    on_skipped: &impl Fn(&BatchEntry),
) -> Vec<usize> {
    loop {
        let mut run = Vec::new();
        let mut skipped = false;
        let mut rankings = Rankings::new();
        for job in left.clone() {
            let id = &specs[job].id;
            if index.jobs.get(id).is_some_and(|e| e.state.is_final()) {
                left.remove(&job);
                continue;
            }
            match cascade.decide_with(specs, job, index, &mut rankings) {
                Decision::Run => run.push(job),
                Decision::Wait => {}
                Decision::Skip(skip) => {
                    let entry = skipped_entry(&specs[job], skip);
                    on_skipped(&entry);
                    index.jobs.insert(id.clone(), entry);
                    left.remove(&job);
                    skipped = true;
                    // The index changed: the problems' rankings are made again.
                    rankings.clear();
                }
            }
        }
        if !skipped {
            return run;
        }
    }
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
        let index = in_waves::<crate::model::error::Error, _, _>(
            &specs,
            prepared,
            false,
            &root,
            &CancellationToken::new(),
            |e| skipped.lock().unwrap().push(e.id.clone()),
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
        let index = in_waves::<crate::model::error::Error, _, _>(
            &specs,
            prepared,
            false,
            &root,
            &cancel,
            |_| {},
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
