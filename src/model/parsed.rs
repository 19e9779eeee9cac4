//! What a backend's parser makes of raw artifacts: kernel records, diagnostics, session facts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::artifacts::RawOutput;
use crate::model::device::DeviceInfo;
use crate::model::record::KernelRecord;

/// Kind of the diagnostic every parser gives when its input holds nothing of its profiler's
/// (no table, message or file it knows): `polyprof parse` exits 2 on it, as for an unreadable
/// file, whichever the profiler.
pub const NO_DATA: &str = "no_data";

/// How bad a diagnostic is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// A classified message from a profiler's output (`ERR_NVGPUCTRPERM`, "no kernels profiled", …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable machine-readable kind, e.g. `counter_permission`, `no_kernels_profiled`.
    pub kind: String,
    /// The profiler's own text.
    pub message: String,
    /// What to do about it, when polyprof knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The metric it is about (`metric_missing`, `metric_not_available`), as a field rather than
    /// text inside the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
}

/// What a backend's parser made of the raw artifacts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ParsedOutput {
    pub kernels: Vec<KernelRecord>,
    /// Memory copies, fills and barriers the profiler reported, each with its
    /// [`kind`](KernelRecord::kind); apart from `kernels` so they are never counted as kernels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_commands: Vec<KernelRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// Facts about the session (tool version, device name, …) when the output carries them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub session: BTreeMap<String, String>,
    /// The device the output says it ran on, typed (the session facts stay as the tool wrote
    /// them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceInfo>,
}

/// Raw files plus what the parser made of them. Raw files are kept even when parsing fails.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfilerOutput {
    pub raw: RawOutput,
    pub parsed: ParsedOutput,
    /// Parse failures, each naming the artifact; the raw bytes are still in `raw`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}
