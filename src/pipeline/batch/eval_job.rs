//! A batch job that is an eval (`eval` table instead of `target`): how it becomes an
//! [`EvalSpec`] (the pool's pinning for both workers, the job's timeout per call, the batch's
//! cancellation), and how its verdict fills the job's entry.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::eval::evidence::FailureKind;
use crate::model::batch::{BatchEntry, EntryState, EvalSummary, SpeedupSummary};
use crate::pipeline::eval::{EvalOutcome, EvalSpec, evaluate};
use crate::pipeline::runner::RunOptions;
use crate::profilers::devices::Device;

use super::eval_table::EvalJob;
use super::spec::JobSpec;
use super::warm_evals::WarmEvals;

/// Run the eval of `spec` into `dir` (its run directory, empty) and fill `entry` from the
/// verdict. `device`: the pool's slot, whose pinning both workers get. `warm`: the process's
/// warm evaluators (`None`: judged cold).
#[allow(clippy::too_many_arguments)]
pub async fn run_eval_job(
    entry: &mut BatchEntry,
    spec: &JobSpec,
    eval: &EvalJob,
    dir: &Path,
    device: Option<&Device>,
    run: &RunOptions,
    timeout: Option<Duration>,
    warm: Option<&WarmEvals>,
) {
    let eval_spec = match eval_spec(spec, eval, dir, device, run, timeout) {
        Ok(s) => s,
        Err(why) => {
            entry.state = EntryState::Failed;
            entry.errors = vec![format!("the eval could not run: {why}")];
            return;
        }
    };
    let outcome = match warm {
        Some(evaluators) => evaluators.evaluate(&eval_spec).await,
        None => evaluate(&eval_spec).await,
    };
    match outcome {
        Ok(outcome) => fill_entry(entry, &outcome),
        Err(e) => {
            entry.state = EntryState::Failed;
            entry.errors = vec![format!("the eval could not run: {e}")];
        }
    }
}

/// The [`EvalSpec`] of an eval job: its run directory as the eval directory, the job's (or
/// the batch's) timeout as each call's, the job's variables and the device's pinning for both
/// workers (the pinning last: the device is the job's alone), the batch's tokens.
pub fn eval_spec(
    spec: &JobSpec,
    eval: &EvalJob,
    dir: &Path,
    device: Option<&Device>,
    run: &RunOptions,
    timeout: Option<Duration>,
) -> Result<EvalSpec, String> {
    let call_timeout = spec
        .timeout_s
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .or(timeout);
    let mut s = EvalSpec::new(&eval.reference, &eval.candidate, dir);
    s.device = eval.eval_device()?;
    s.python = eval.python();
    s.options = eval.options(call_timeout);
    s.tracking = run.tracking.clone();
    s.extra_env
        .extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(d) = device {
        s.extra_env.extend(d.pin_env());
    }
    s.cancel = run.cancel.clone();
    s.kill_now = run.kill_now.clone();
    Ok(s)
}

/// What a warm evaluator of `spec`'s eval is kept for: its eval table but the candidate, and
/// the job's variables (`None`: not an eval job). Jobs of one key can share a trusted worker;
/// a driver sends them where one is already warm (the evaluator itself still checks the fit).
pub fn problem_key(spec: &JobSpec) -> Option<String> {
    let eval = spec.eval.as_ref()?;
    let table = EvalJob {
        candidate: std::path::PathBuf::new(),
        ..eval.clone()
    };
    let table = serde_json::to_string(&table).unwrap_or_else(|_| format!("{table:?}"));
    Some(format!("{table}|{:?}", spec.env))
}

/// The entry's state, summary and errors from a finished eval: a judged candidate (passed or
/// not) succeeded as a job; an eval that could not run, or a candidate that failed, did not.
pub fn fill_entry(entry: &mut BatchEntry, outcome: &EvalOutcome) {
    entry.eval = Some(summary(outcome));
    entry.errors.clear();
    match &outcome.verdict.failure {
        None => entry.state = EntryState::Succeeded,
        Some(f) => {
            entry.state = EntryState::Failed;
            let whose = if outcome.harness_failed() {
                "the eval could not run"
            } else {
                "the candidate failed"
            };
            let log = f
                .log
                .as_deref()
                .map(|l| format!(" (see {l})"))
                .unwrap_or_default();
            entry.errors.push(format!(
                "{whose}: {} during {}: {}{log}",
                snake(&f.kind),
                snake(&f.stage),
                f.message
            ));
        }
    }
}

/// The verdict in brief.
pub fn summary(outcome: &EvalOutcome) -> EvalSummary {
    let verdict = &outcome.verdict;
    let framework = &outcome.evidence.problem.framework;
    EvalSummary {
        passed: verdict.passed,
        status: snake(&verdict.status),
        speedup: verdict.timing.as_ref().map(|t| SpeedupSummary {
            value: t.speedup.value,
            ci_low: t.speedup.ci_low,
            ci_high: t.speedup.ci_high,
        }),
        score_ms: verdict.timing.as_ref().map(|t| t.score_ms),
        findings: verdict.findings.iter().map(|f| snake(&f.kind)).collect(),
        failure: verdict.failure.as_ref().map(|f| snake(&f.kind)),
        device: outcome.evidence.problem.device.clone(),
        framework: (!framework.is_empty()).then(|| framework.clone()),
    }
}

/// The JSON spelling of a failure kind, status, stage or finding kind (`device_fault`).
fn snake<T: Serialize + std::fmt::Debug>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{value:?}"))
}

/// The failure kind as the summary spells it, for callers matching on it.
pub fn kind_name(kind: FailureKind) -> String {
    snake(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::batch::EntryState;
    use crate::pipeline::eval::Device as EvalDevice;
    use crate::profilers::registry::Vendor;

    fn job(json: &str) -> Result<JobSpec, String> {
        serde_json::from_str::<JobSpec>(json)
            .map_err(|e| e.to_string())
            .and_then(|s| s.validate().map(|()| s))
    }

    #[test]
    fn an_eval_job_takes_a_table_instead_of_a_target() {
        let s = job(r#"{"id": "e", "eval": {"reference": "r.py", "candidate": "c.py", "device": "cpu", "trials": 2, "witness_profiler": "none"}}"#).unwrap();
        let eval = s.eval.as_ref().unwrap();
        assert_eq!(eval.eval_device().unwrap(), EvalDevice::Cpu);
        let table = crate::profilers::selection::Selection::embedded().unwrap();
        assert_eq!(s.vendor(&table).unwrap(), None);
        let o = eval.options(Some(Duration::from_secs(7)));
        assert_eq!((o.trials, o.repeat), (2, 50));
        assert_eq!(o.witness_profiler, None);
        assert_eq!(o.call_timeout, Duration::from_secs(7));
        let cuda =
            job(r#"{"id": "g", "eval": {"reference": "r.py", "candidate": "c.py"}}"#).unwrap();
        assert_eq!(cuda.vendor(&table).unwrap(), Some(Vendor::Nvidia));
        assert_eq!(
            cuda.eval.unwrap().options(None).witness_profiler.as_deref(),
            Some("ncu")
        );
    }

    #[test]
    fn target_and_eval_are_exclusive_and_the_table_is_checked() {
        let err = job(
            r#"{"id": "e", "target": ["x"], "eval": {"reference": "r.py", "candidate": "c.py"}}"#,
        )
        .unwrap_err();
        assert!(err.contains("either `target`"), "{err}");
        let err = job(
            r#"{"id": "e", "profiler": "ncu", "eval": {"reference": "r.py", "candidate": "c.py"}}"#,
        )
        .unwrap_err();
        assert!(err.contains("`profiler` applies to a `target`"), "{err}");
        let err = job(
            r#"{"id": "e", "eval": {"reference": "r.py", "candidate": "c.py", "device": "gpu"}}"#,
        )
        .unwrap_err();
        assert!(err.contains("eval device"), "{err}");
        let err = job(r#"{"id": "e", "eval": {"reference": "r.py", "candidate": "c.py", "witness_profiler": "nsys"}}"#).unwrap_err();
        assert!(err.contains("cannot witness"), "{err}");
        let err =
            job(r#"{"id": "e", "eval": {"reference": "r.py", "candidate": "c.py", "trials": 0}}"#)
                .unwrap_err();
        assert!(err.contains("trials"), "{err}");
        let err =
            job(r#"{"id": "e", "eval": {"reference": "r.py", "candiate": "c.py"}}"#).unwrap_err();
        assert!(err.contains("unknown field `candiate`"), "{err}");
        let err = job(r#"{"id": "e"}"#).unwrap_err();
        assert!(err.contains("or an `eval` table"), "{err}");
    }

    #[test]
    fn the_problem_key_ignores_the_candidate_only() {
        let key = |json: &str| problem_key(&job(json).unwrap());
        let a = key(r#"{"id": "a", "eval": {"reference": "r.py", "candidate": "a.py"}}"#);
        let b = key(r#"{"id": "b", "eval": {"reference": "r.py", "candidate": "b.py"}}"#);
        assert!(a.is_some());
        assert_eq!(a, b);
        let other = key(r#"{"id": "c", "eval": {"reference": "s.py", "candidate": "a.py"}}"#);
        assert_ne!(a, other);
        let trials =
            key(r#"{"id": "d", "eval": {"reference": "r.py", "candidate": "a.py", "trials": 2}}"#);
        assert_ne!(a, trials);
        let env = key(
            r#"{"id": "e", "env": {"A": "1"}, "eval": {"reference": "r.py", "candidate": "a.py"}}"#,
        );
        assert_ne!(a, env);
        assert_eq!(key(r#"{"id": "t", "target": ["true"]}"#), None);
    }

    #[test]
    fn the_digest_covers_the_eval_table() {
        let a = job(r#"{"id": "e", "eval": {"reference": "r.py", "candidate": "c.py"}}"#).unwrap();
        let b =
            job(r#"{"id": "e", "eval": {"reference": "r.py", "candidate": "c.py", "atol": 0.1}}"#)
                .unwrap();
        assert_ne!(a.definition_digest(), b.definition_digest());
    }

    #[test]
    fn both_workers_get_the_devices_pinning_over_the_jobs_variables() {
        let s = job(r#"{"id": "e", "timeout_s": 9, "env": {"CUDA_VISIBLE_DEVICES": "7", "A": "1"}, "eval": {"reference": "r.py", "candidate": "c.py"}}"#).unwrap();
        let device = Device::gpu(Vendor::Nvidia, "2", None);
        let opts = super::super::task::TaskOptions::default();
        let spec = eval_spec(
            &s,
            s.eval.as_ref().unwrap(),
            Path::new("runs/e"),
            Some(&device),
            &opts.run,
            None,
        )
        .unwrap();
        assert_eq!(spec.extra_env["CUDA_VISIBLE_DEVICES"], "2");
        assert_eq!(spec.extra_env["A"], "1");
        assert_eq!(spec.options.call_timeout, Duration::from_secs(9));
        assert_eq!(spec.output_dir, Path::new("runs/e"));
        opts.run.cancel.cancel();
        assert!(spec.cancel.is_cancelled());
        assert_eq!(kind_name(FailureKind::DeviceFault), "device_fault");
        assert_eq!(EntryState::default(), EntryState::Pending);
    }
}
