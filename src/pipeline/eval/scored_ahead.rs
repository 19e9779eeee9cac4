//! The candidate's scored worker started ahead of its judged turn (docs/eval-harness.md, "The
//! warm evaluator"): through a warm evaluator, the next candidate's worker starts while the
//! current one's work pass runs, so its interpreter and torch import are off the GPU's turn.
//! Only the interpreter, torch and the scored pass's tracer load before its `setup`; no
//! candidate code runs until its own turn, and it holds no CUDA context before then.

use std::path::Path;

use crate::eval::evidence::ScoredTrace;
use crate::pipeline::eval::scored_trace::{self, ScoredTracing, TraceLoad};
use crate::pipeline::eval::spec::{Device, EvalSpec};
use crate::pipeline::eval::worker::{Launch, StartingWorker};
use crate::profilers::ProfilerSettings;

/// How the scored pass is witnessed: through its own trace, or (no tracer) a witness pass.
pub(crate) struct ScoredPlan {
    /// The separate witness pass, when the scored pass is not traced.
    pub witness: Option<(String, ProfilerSettings)>,
    pub tracing: Option<ScoredTracing>,
    /// The evidence's record of the traced pass (or of why it is not traced).
    pub timeline: Option<ScoredTrace>,
}

/// Plan the scored pass of the eval in `dir`.
pub(crate) async fn plan(spec: &EvalSpec, dir: &Path) -> ScoredPlan {
    match scored_trace::plan(spec).await {
        Some(Ok((tracer, library))) => {
            let tracing = ScoredTracing::new(tracer, library, dir);
            let record = tracing.evidence();
            ScoredPlan {
                witness: None,
                tracing: Some(tracing),
                timeline: Some(record),
            }
        }
        Some(Err(why)) => ScoredPlan {
            witness: witness_pass(spec),
            tracing: None,
            timeline: Some(ScoredTrace {
                error: Some(format!("{why} (the witness pass was taken instead)")),
                ..ScoredTrace::default()
            }),
        },
        None => ScoredPlan {
            witness: witness_pass(spec),
            tracing: None,
            timeline: None,
        },
    }
}

/// The witness profiler and its settings, when the eval takes a witness pass.
pub(crate) fn witness_pass(spec: &EvalSpec) -> Option<(String, ProfilerSettings)> {
    if spec.device != Device::Cuda || spec.options.witness_calls == 0 {
        return None;
    }
    let name = spec.options.witness_profiler.clone()?;
    let settings = crate::profilers::witness::witness_settings(&name)?;
    Some((name, settings))
}

/// What loads the tracer into the candidate's scored worker; a tracer that cannot be loaded
/// leaves the scored pass untraced, and `record` says why.
pub(crate) fn trace_load(
    tracing: Option<&ScoredTracing>,
    record: Option<&mut ScoredTrace>,
) -> Option<TraceLoad> {
    match tracing?.load() {
        Ok(load) => Some(load),
        Err(e) => {
            if let Some(record) = record {
                record.error = Some(format!("cannot load the tracer: {e}"));
            }
            None
        }
    }
}

/// The scored worker of a candidate, started before its turn, with the plan it was started
/// under (a plan is made once per eval: its marks must never repeat).
pub(crate) struct StartedAhead {
    pub plan: ScoredPlan,
    pub worker: StartingWorker,
}

impl StartedAhead {
    /// Start `launch` (the candidate's scored worker, its tracer loaded from `plan`) now.
    pub fn start(mut plan: ScoredPlan, mut launch: Launch) -> StartedAhead {
        launch.trace = trace_load(plan.tracing.as_ref(), plan.timeline.as_mut());
        StartedAhead {
            plan,
            worker: launch.start_ahead(),
        }
    }
}
