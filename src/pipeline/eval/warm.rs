//! The warm evaluator (docs/eval-harness.md, "The warm evaluator"): one trusted worker per
//! problem and device, set up once and kept from candidate to candidate, and the reference's
//! timing blocks measured once per conditions, then reused after a drift probe. Each candidate
//! still gets fresh, sandboxed workers of its own; `session` runs each eval, this file keeps
//! what lasts between them and decides when it must be thrown away.

use std::path::{Path, PathBuf};

use crate::eval::evidence::FailureKind;
use crate::model::error::Result;
use crate::pipeline::eval::harness_files::write_harness;
use crate::pipeline::eval::integrity::Baseline;
use crate::pipeline::eval::session::{self, Prepared};
use crate::pipeline::eval::spec::{EvalOutcome, EvalSpec, SandboxSetting};
use crate::pipeline::eval::warm_state::WarmState;

/// Judges candidate after candidate of one problem on one device through one trusted worker.
/// Anything that could have touched what it keeps (the harness scripts or the reference
/// changed, the trusted worker failed, a candidate interfered, other options) makes it start
/// afresh before the next candidate.
/// The trusted worker answers to the `cancel`/`kill_now` tokens of the spec it was started
/// for: give every spec of one evaluator the same tokens.
pub struct WarmEvaluator {
    root: PathBuf,
    generation: u32,
    state: Option<WarmState>,
    /// The sandbox here does not confine signals: every candidate is judged cold.
    cold_only: bool,
}

impl WarmEvaluator {
    /// An evaluator whose trusted workers' runs go under `root` (`warm-reference.NNN`).
    pub fn new(root: &Path) -> WarmEvaluator {
        WarmEvaluator {
            root: root.to_path_buf(),
            generation: 0,
            state: None,
            cold_only: false,
        }
    }

    /// Judge one candidate, as `session::evaluate` does, through the warm trusted worker
    /// (started on the first call, or again after anything made the last one unusable).
    pub async fn evaluate(&mut self, spec: &EvalSpec) -> Result<EvalOutcome> {
        self.judge(spec, None).await
    }

    /// [`WarmEvaluator::evaluate`] of a candidate whose build stage already ran
    /// (`session::prepare`, ahead of its turn: `ahead::BuildQueue`).
    pub async fn evaluate_prepared(
        &mut self,
        spec: &EvalSpec,
        prepared: Prepared,
    ) -> Result<EvalOutcome> {
        self.judge(spec, Some(prepared)).await
    }

    /// Start the trusted worker for `spec`'s problem now, before any candidate is ready (its
    /// interpreter and imports load beside the candidates' builds); the first judged turn sets
    /// it up. Nothing when a trusted worker is already up or starting, or the candidates will be
    /// judged cold.
    pub async fn start_trusted_ahead(&mut self, spec: &EvalSpec) -> Result<()> {
        if self.cold_only || spec.sandbox == SandboxSetting::Off {
            return Ok(());
        }
        let state = self.state_for(spec).await?;
        if state.trusted.is_none() && state.trusted_starting.is_none() {
            let launch = session::trusted_launch(spec, state).await;
            state.trusted_starting = Some(launch.start_ahead());
        }
        Ok(())
    }

    /// The state for `spec`'s problem: the one kept, or a fresh one (a kept one that no longer
    /// fits, or whose files changed, is retired first).
    async fn state_for(&mut self, spec: &EvalSpec) -> Result<&mut WarmState> {
        let fit = fit_of(spec);
        let unusable = self
            .state
            .as_ref()
            .is_some_and(|s| s.fit != fit || !s.baseline.changes().is_empty());
        if unusable {
            self.retire().await;
        }
        let state = match self.state.take() {
            Some(state) => state,
            None => {
                let dir = self
                    .root
                    .join(format!("warm-reference.{:03}", self.generation));
                self.generation += 1;
                let script = write_harness(&dir)?;
                let harness_dir = script.parent().unwrap_or(&dir).to_path_buf();
                let reference =
                    std::path::absolute(&spec.reference).unwrap_or_else(|_| spec.reference.clone());
                let baseline = Baseline::take(&harness_dir, &[&reference], &[]);
                WarmState {
                    dir,
                    script,
                    baseline,
                    fit,
                    trusted: None,
                    trusted_starting: None,
                    setup: None,
                    next_trial: 0,
                    stored: None,
                    stored_work: None,
                }
            }
        };
        Ok(self.state.insert(state))
    }

    async fn judge(&mut self, spec: &EvalSpec, prepared: Option<Prepared>) -> Result<EvalOutcome> {
        if self.cold_only || spec.sandbox == SandboxSetting::Off {
            return match prepared {
                Some(prepared) => session::evaluate_prepared(spec, prepared).await,
                None => session::evaluate(spec).await,
            };
        }
        let state = self.state_for(spec).await?;
        let outcome = session::evaluate_warm(spec, state, prepared).await;
        let interfered = outcome.as_ref().is_ok_and(|o| {
            o.evidence
                .failure
                .as_ref()
                .is_some_and(|f| f.kind == FailureKind::Interfered)
        });
        // The candidate was judged cold (its sandbox cannot keep it from a trusted worker that
        // outlives it): so will every other be, on this machine.
        let unconfined = outcome.as_ref().is_ok_and(|o| {
            !o.evidence
                .sandbox
                .as_ref()
                .is_some_and(|s| s.confines.iter().any(|c| c == "signals"))
        });
        let cold_only = unconfined && state.setup.is_none();
        if cold_only {
            let _ = std::fs::remove_dir_all(&state.dir);
        }
        // A trusted worker lost (its failure, a cancel) or a candidate that interfered: the
        // next candidate gets a fresh one and fresh measurements. A candidate whose build
        // failed never reached a trusted worker: none was lost.
        let lost = state.trusted.is_none() && (state.setup.is_some() || !built_failed(&outcome));
        self.cold_only |= cold_only;
        if interfered || lost {
            self.retire().await;
        }
        outcome
    }

    /// End the trusted worker (`bye`).
    pub async fn close(mut self) {
        self.retire().await;
    }

    async fn retire(&mut self) {
        let Some(mut state) = self.state.take() else {
            return;
        };
        if let Some(starting) = state.trusted_starting.take()
            && let Ok(Ok(trusted)) = starting.await
        {
            trusted.end(false).await;
        }
        if let Some(trusted) = state.trusted.take() {
            trusted.finish().await;
        }
    }
}

/// The eval ended in its build stage (its judged turn never began).
fn built_failed(outcome: &Result<EvalOutcome>) -> bool {
    outcome.as_ref().is_ok_and(|o| o.evidence.judged.is_none())
}

/// Everything of `spec` the trusted worker and the stored measurements depend on: all but the
/// candidate and where its eval goes.
pub fn fit_of(spec: &EvalSpec) -> String {
    let reference = std::path::absolute(&spec.reference).unwrap_or_else(|_| spec.reference.clone());
    format!(
        "{}|{:?}|{}|{:?}|{:?}|{:?}|{:?}",
        reference.display(),
        spec.device,
        spec.python.display(),
        spec.options,
        spec.tracking,
        spec.extra_env,
        spec.sandbox,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_ignores_the_candidate_and_its_directory_only() {
        let a = EvalSpec::new(Path::new("r.py"), Path::new("a.py"), PathBuf::from("out/a"));
        let b = EvalSpec::new(Path::new("r.py"), Path::new("b.py"), PathBuf::from("out/b"));
        assert_eq!(fit_of(&a), fit_of(&b));
        let mut c = b.clone();
        c.options.repeat += 1;
        assert_ne!(fit_of(&a), fit_of(&c));
        let d = EvalSpec::new(
            Path::new("r2.py"),
            Path::new("a.py"),
            PathBuf::from("out/a"),
        );
        assert_ne!(fit_of(&a), fit_of(&d));
    }
}
