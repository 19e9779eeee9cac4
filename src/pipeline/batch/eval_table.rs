//! A job's `eval` table (a batch job that judges a candidate instead of running a command):
//! what it says, its defaults, its checks.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::pipeline::eval::spec::default_python;
use crate::pipeline::eval::{Device as EvalDevice, EvalOptions};
use crate::profilers::registry::Vendor;

/// A job's `eval` table. Paths are used as given, like a `target`'s words: a relative one is
/// relative to where `polyprof batch` runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalJob {
    /// The reference problem (KernelBench format).
    pub reference: PathBuf,
    /// The candidate (`ModelNew`).
    pub candidate: PathBuf,
    /// `cuda` (default) or `cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// `ncu` (default on cuda) or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness_profiler: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_blocks: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atol: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtol: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_candidate_kernels: Option<bool>,
    /// The work pass (default on for cuda); `false`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_pass: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_calls: Option<u32>,
    /// The FLOPs one call must do (an analytic count), for the FLOP floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops_per_call: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_tf32: Option<bool>,
    /// The scored pass traced and judged on its GPU timeline (default true on cuda); `false`:
    /// the witness pass under `witness_profiler` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scored_trace: Option<bool>,
    /// The workers' interpreter (default: `$POLYPROF_PYTHON`, else `python3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PathBuf>,
}

impl EvalJob {
    /// Where the arrays live (`cuda` unless the table says otherwise).
    pub fn eval_device(&self) -> Result<EvalDevice, String> {
        self.device
            .as_deref()
            .unwrap_or("cuda")
            .parse()
            .map_err(|e: crate::model::error::Error| e.to_string())
    }

    /// The GPU vendor the eval needs: NVIDIA for `cuda`, none for `cpu`.
    pub fn vendor(&self) -> Option<Vendor> {
        (self.eval_device().ok()? == EvalDevice::Cuda).then_some(Vendor::Nvidia)
    }

    /// The workers' interpreter.
    pub fn python(&self) -> PathBuf {
        self.python.clone().unwrap_or_else(default_python)
    }

    /// The eval's options: the table's over the documented defaults.
    pub fn options(&self, call_timeout: Option<Duration>) -> EvalOptions {
        let defaults = EvalOptions::default();
        let witness = self
            .witness_profiler
            .as_deref()
            .map(|p| p.trim().to_ascii_lowercase());
        EvalOptions {
            trials: self.trials.unwrap_or(defaults.trials),
            timing_blocks: self.timing_blocks.unwrap_or(defaults.timing_blocks),
            repeat: self.repeat.unwrap_or(defaults.repeat),
            atol: self.atol.unwrap_or(defaults.atol),
            rtol: self.rtol.unwrap_or(defaults.rtol),
            require_candidate_kernels: self
                .require_candidate_kernels
                .unwrap_or(defaults.require_candidate_kernels),
            work_pass: self.work_pass.unwrap_or(defaults.work_pass),
            work_calls: self.work_calls.unwrap_or(defaults.work_calls),
            flops_per_call: self.flops_per_call.or(defaults.flops_per_call),
            allow_tf32: self.allow_tf32.unwrap_or(defaults.allow_tf32),
            scored_trace: self.scored_trace.unwrap_or(defaults.scored_trace),
            witness_profiler: match witness {
                None => defaults.witness_profiler.clone(),
                Some(p) if p == "none" => None,
                Some(p) => Some(p),
            },
            call_timeout: call_timeout.unwrap_or(defaults.call_timeout),
            ..defaults
        }
    }

    /// Checks that need no file: the device, the witness profiler, the numbers.
    pub fn validate(&self) -> Result<(), String> {
        if self.reference.as_os_str().is_empty() || self.candidate.as_os_str().is_empty() {
            return Err("give both `reference` and `candidate` (paths of Python files)".into());
        }
        self.eval_device()?;
        if let Some(Some(p)) = self.options(None).witness_profiler.as_deref().map(|p| {
            crate::profilers::witness::witness_settings(p)
                .is_none()
                .then_some(p)
        }) {
            return Err(format!(
                "`{p}` cannot witness an eval; valid `witness_profiler`: none, {}",
                crate::profilers::witness::WITNESS_PROFILERS.join(", ")
            ));
        }
        self.options(None).validate().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_pass_keys_reach_the_options() {
        let table: EvalJob = serde_json::from_value(serde_json::json!({
            "reference": "r.py", "candidate": "c.py",
            "work_pass": false, "work_calls": 2, "flops_per_call": 1.5e9, "allow_tf32": true
        }))
        .unwrap();
        let options = table.options(None);
        assert!(!options.work_pass && options.allow_tf32);
        assert_eq!(options.work_calls, 2);
        assert_eq!(options.flops_per_call, Some(1.5e9));
        let plain: EvalJob =
            serde_json::from_value(serde_json::json!({"reference": "r.py", "candidate": "c.py"}))
                .unwrap();
        let defaults = EvalOptions::default();
        let options = plain.options(None);
        assert_eq!(
            (
                options.work_pass,
                options.work_calls,
                options.flops_per_call
            ),
            (defaults.work_pass, defaults.work_calls, None)
        );
        let bad: EvalJob = serde_json::from_value(serde_json::json!({
            "reference": "r.py", "candidate": "c.py", "flops_per_call": -1.0
        }))
        .unwrap();
        assert!(bad.validate().unwrap_err().contains("flops"));
    }
}
