//! `evaluate`: one eval of a candidate against a reference (`polyprof eval`), blocking with the
//! GIL released; Ctrl-C stops the workers. The verdict and the evidence's path come back as
//! JSON; `polyprof/eval.py` makes the typed `EvalResult`.

use std::path::PathBuf;

use pyo3::prelude::*;
use serde::Deserialize;

use polyprof::pipeline::eval::{Device, EvalOptions, EvalSpec, IfExists, evaluate};
use polyprof::pipeline::runner::Tracking;

use crate::errors;
use crate::runner::seconds;
use crate::runtime;

/// Eval options as `polyprof/eval.py` sends them (absent: the documented defaults).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct EvalArgs {
    trials: Option<u32>,
    timing_blocks: Option<u32>,
    repeat: Option<u32>,
    warmup: Option<u32>,
    atol: Option<f64>,
    rtol: Option<f64>,
    flush_l2: Option<bool>,
    witness_calls: Option<u32>,
    /// `none` for no witness pass.
    witness_profiler: Option<String>,
    witness_tolerance: Option<f64>,
    /// Trace the scored pass and judge its calls on the GPU timeline (CUDA; default true).
    scored_trace: Option<bool>,
    suspicious_speedup: Option<f64>,
    min_plausible_ms: Option<f64>,
    require_candidate_kernels: Option<bool>,
    work_pass: Option<bool>,
    work_calls: Option<u32>,
    flops_per_call: Option<f64>,
    allow_tf32: Option<bool>,
    init_seed: Option<u64>,
    timeout_s: Option<f64>,
    setup_timeout_s: Option<f64>,
    python: Option<PathBuf>,
    /// The `polyprof-supervise` executable: every descendant of a worker is tracked and ended.
    supervisor: Option<PathBuf>,
}

impl EvalArgs {
    fn options(&self) -> PyResult<EvalOptions> {
        let d = EvalOptions::default();
        let witness_profiler = match self.witness_profiler.as_deref().map(str::trim) {
            None => d.witness_profiler,
            Some("none") | Some("") => None,
            Some(name) => {
                if polyprof::profilers::witness::witness_settings(name).is_none() {
                    return Err(errors::usage(format!(
                        "`{name}` cannot witness an eval; valid: none, {}",
                        polyprof::profilers::witness::WITNESS_PROFILERS.join(", ")
                    )));
                }
                Some(name.to_string())
            }
        };
        Ok(EvalOptions {
            trials: self.trials.unwrap_or(d.trials),
            timing_blocks: self.timing_blocks.unwrap_or(d.timing_blocks),
            repeat: self.repeat.unwrap_or(d.repeat),
            warmup: self.warmup.unwrap_or(d.warmup),
            atol: self.atol.unwrap_or(d.atol),
            rtol: self.rtol.unwrap_or(d.rtol),
            flush_l2: self.flush_l2.unwrap_or(d.flush_l2),
            witness_calls: self.witness_calls.unwrap_or(d.witness_calls),
            witness_profiler,
            witness_tolerance: self.witness_tolerance.unwrap_or(d.witness_tolerance),
            scored_trace: self.scored_trace.unwrap_or(d.scored_trace),
            suspicious_speedup: self.suspicious_speedup.unwrap_or(d.suspicious_speedup),
            min_plausible_ms: self.min_plausible_ms.unwrap_or(d.min_plausible_ms),
            require_candidate_kernels: self
                .require_candidate_kernels
                .unwrap_or(d.require_candidate_kernels),
            work_pass: self.work_pass.unwrap_or(d.work_pass),
            work_calls: self.work_calls.unwrap_or(d.work_calls),
            flops_per_call: self.flops_per_call.or(d.flops_per_call),
            allow_tf32: self.allow_tf32.unwrap_or(d.allow_tf32),
            init_seed: self.init_seed,
            call_timeout: match self.timeout_s {
                Some(s) => seconds("timeout", s)?,
                None => d.call_timeout,
            },
            setup_timeout: match self.setup_timeout_s {
                Some(s) => seconds("setup_timeout", s)?,
                None => d.setup_timeout,
            },
        })
    }
}

/// Evaluate `candidate` against `reference`; returns `{"dir", "evidence_path", "verdict_path",
/// "harness_failed", "verdict"}` as JSON. `output_dir` `None`: the next free
/// `polyprof-runs/eval.NNN`; a given one must be empty.
#[pyfunction]
#[pyo3(signature = (reference, candidate, device = "cuda", output_dir = None, options_json = "{}"))]
fn evaluate_json(
    py: Python<'_>,
    reference: PathBuf,
    candidate: PathBuf,
    device: &str,
    output_dir: Option<PathBuf>,
    options_json: &str,
) -> PyResult<String> {
    let args: EvalArgs = serde_json::from_str(options_json)
        .map_err(|e| errors::usage(format!("eval options: {e}")))?;
    let (dir, if_exists) = match output_dir {
        Some(dir) => (dir, IfExists::Refuse),
        None => (
            PathBuf::from("polyprof-runs").join("eval.000"),
            IfExists::Number,
        ),
    };
    let mut spec = EvalSpec::new(reference, candidate, dir);
    spec.if_exists = if_exists;
    spec.device = device.parse::<Device>().map_err(errors::to_py)?;
    spec.options = args.options()?;
    spec.options.validate().map_err(errors::to_py)?;
    if let Some(python) = args.python {
        spec.python = python;
    }
    if let Some(exe) = args.supervisor {
        // polyprof-supervise is also the sandbox launcher of the candidate's workers.
        if spec.sandbox != polyprof::pipeline::eval::SandboxSetting::Off {
            spec.sandbox = polyprof::pipeline::eval::SandboxSetting::On {
                launcher: exe.clone(),
            };
        }
        spec.tracking = Tracking::Supervisor { exe };
    }
    let cancel = spec.cancel.clone();
    let outcome = runtime::block_on_cancellable(py, cancel, async move { evaluate(&spec).await })?
        .map_err(errors::to_py)?;
    let document = serde_json::json!({
        "dir": outcome.dir,
        "evidence_path": outcome.dir.join(polyprof::pipeline::eval::EVIDENCE_FILE),
        "verdict_path": outcome.dir.join(polyprof::pipeline::eval::VERDICT_FILE),
        "harness_failed": outcome.harness_failed(),
        "verdict": outcome.verdict,
    });
    serde_json::to_string(&document).map_err(errors::json)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(evaluate_json, m)?)?;
    Ok(())
}
