//! The warm evaluators of a process that runs a batch's eval jobs one after another (the
//! local pool, a Slurm share task, a Ray actor's `--task-serve` child): one
//! [`WarmEvaluator`] per (reference, device, eval options), so a problem's candidates after
//! the first reuse its trusted worker and reference blocks as `eval --candidate DIR` does
//! (docs/batch.md, "Warm evals"). An evaluator judges one candidate at a time: a job checks
//! one out for its problem, and a job that finds none idle starts another.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::model::error::Result;
use crate::pipeline::eval::warm::fit_of;
use crate::pipeline::eval::{EvalOutcome, EvalSpec, WarmEvaluator, evaluate};

/// Where a batch's warm evaluators put their trusted workers' runs (`ROOT/warm/`).
pub const WARM_DIR: &str = "warm";

/// The warm evaluators of one process, shared by its jobs.
pub struct WarmEvals {
    root: PathBuf,
    keep: usize,
    idle: Mutex<Idle>,
}

#[derive(Default)]
struct Idle {
    /// Evaluators started so far (each its own directory under `root`).
    started: u32,
    /// Idle evaluators by what they fit, least recently used first.
    evaluators: Vec<(String, WarmEvaluator)>,
}

impl std::fmt::Debug for WarmEvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmEvals")
            .field("root", &self.root)
            .field("keep", &self.keep)
            .finish_non_exhaustive()
    }
}

impl WarmEvals {
    /// Evaluators of this process in batch root `batch_root`
    /// (`warm/<host>-<pid>/NNN/`: processes on several nodes share one root), keeping at
    /// most `keep` idle ones (each holds a trusted worker process); the least recently used
    /// goes first.
    pub fn for_process(batch_root: &Path, keep: usize) -> WarmEvals {
        let host = crate::pipeline::host::hostname().unwrap_or_else(|| "host".into());
        WarmEvals::new(
            &batch_root
                .join(WARM_DIR)
                .join(format!("{host}-{}", std::process::id())),
            keep,
        )
    }

    /// Evaluators under `root`.
    pub fn new(root: &Path, keep: usize) -> WarmEvals {
        WarmEvals {
            root: root.to_path_buf(),
            keep: keep.max(1),
            idle: Mutex::new(Idle::default()),
        }
    }

    /// Judge `spec`'s candidate through an idle evaluator of its problem (or a new one).
    /// Every spec must carry the same `cancel`/`kill_now` tokens (a trusted worker answers
    /// to those it was started with).
    pub async fn evaluate(&self, spec: &EvalSpec) -> Result<EvalOutcome> {
        // A reference or candidate that is not a regular file (a FIFO would block the warm
        // path's snapshot of the reference): the cold eval refuses it at once, by name.
        if ![&spec.reference, &spec.candidate]
            .iter()
            .all(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
        {
            return evaluate(spec).await;
        }
        let fit = fit_of(spec);
        let mut evaluator = {
            let mut idle = self.lock();
            match idle.evaluators.iter().position(|(f, _)| *f == fit) {
                Some(i) => idle.evaluators.remove(i).1,
                None => {
                    let dir = self.root.join(format!("{:03}", idle.started));
                    idle.started += 1;
                    WarmEvaluator::new(&dir)
                }
            }
        };
        let outcome = evaluator.evaluate(spec).await;
        let evicted = {
            let mut idle = self.lock();
            idle.evaluators.push((fit, evaluator));
            (idle.evaluators.len() > self.keep).then(|| idle.evaluators.remove(0).1)
        };
        if let Some(old) = evicted {
            old.close().await;
        }
        outcome
    }

    /// End every idle evaluator's trusted worker.
    pub async fn close(&self) {
        let all = std::mem::take(&mut self.lock().evaluators);
        for (_, evaluator) in all {
            evaluator.close().await;
        }
    }

    /// How many evaluators were started so far.
    pub fn started(&self) -> u32 {
        self.lock().started
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Idle> {
        // Nothing here can leave the list half-changed: a poisoned lock's data is whole.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_fifo_is_refused_by_the_cold_eval_without_starting_an_evaluator() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.py");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let candidate = dir.path().join("c.py");
        std::fs::write(&candidate, "").unwrap();
        let evals = WarmEvals::new(&dir.path().join("warm"), 2);
        let mut spec = EvalSpec::new(&fifo, &candidate, dir.path().join("e"));
        spec.device = crate::pipeline::eval::Device::Cpu;
        let refused =
            tokio::time::timeout(std::time::Duration::from_secs(20), evals.evaluate(&spec))
                .await
                .expect("refused at once, not blocked on the FIFO");
        let text = match refused {
            Ok(outcome) => format!("{:?}", outcome.verdict.failure),
            Err(e) => e.to_string(),
        };
        assert!(text.contains("FIFO"), "{text}");
        assert_eq!(evals.started(), 0);
        evals.close().await;
    }
}
