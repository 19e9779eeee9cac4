//! The call-path event: a [`Frame`] path (job, pass, process, kernel, scope, …) with its time,
//! FLOPs, bytes and metrics. Sessions, profiles, aggregation and the tree all read it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::record::FlopCounts;
use crate::results::roofline::RooflineInputs;

/// What a node of a call path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// The synthetic root of a tree.
    Root,
    /// The evaluation job (a candidate, a test, a command).
    Job,
    /// One profiler pass (`ncu.000`).
    Pass,
    /// One profiled process.
    Process,
    /// A user scope ([`crate::results::callpath::scope`]).
    Scope,
    /// A user function range ([`crate::results::callpath::record_function`]).
    Function,
    /// A GPU kernel.
    Kernel,
}

impl FrameKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            FrameKind::Root => "root",
            FrameKind::Job => "job",
            FrameKind::Pass => "pass",
            FrameKind::Process => "process",
            FrameKind::Scope => "scope",
            FrameKind::Function => "function",
            FrameKind::Kernel => "kernel",
        }
    }
}

/// One element of a call path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Frame {
    pub name: String,
    pub kind: FrameKind,
}

impl Frame {
    pub fn new(name: impl Into<String>, kind: FrameKind) -> Self {
        Frame {
            name: name.into(),
            kind,
        }
    }
}

/// A CPU thread, as the session saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// Small number assigned in order of first use (1, 2, …).
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One timed thing: a scope, a function range or a kernel. CPU times are on the session's
/// monotonic clock (ns since the session started); GPU times are on the profiler's clock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: u64,
    /// The enclosing scope event, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u64>,
    /// Outermost first; the last frame is the event itself.
    pub call_path: Vec<Frame>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_start_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_start_ns: Option<f64>,
    /// Total GPU time of the `calls` launches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_time_ns: Option<f64>,
    pub calls: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_id: Option<u64>,
    #[serde(default)]
    pub flops: FlopCounts,
    /// DRAM bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<f64>,
    /// Additive user metrics (summed in aggregates and trees).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
    /// Non-additive facts shown in traces (registers, occupancy, full kernel name, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, serde_json::Value>,
    /// What the launch's verdict is based on (speeds of light, pipe loads, clocks), for a
    /// kernel taken from a profiler's record; aggregated rows judge each launch with it, as
    /// the per-launch reports do. Not written: the record holds it.
    #[serde(skip)]
    pub verdict_inputs: Option<RooflineInputs>,
}

impl Event {
    /// The event's own name (the last frame).
    pub fn name(&self) -> &str {
        self.call_path.last().map(|f| f.name.as_str()).unwrap_or("")
    }

    pub fn kind(&self) -> FrameKind {
        self.call_path
            .last()
            .map(|f| f.kind)
            .unwrap_or(FrameKind::Scope)
    }

    pub fn path_names(&self) -> Vec<&str> {
        self.call_path.iter().map(|f| f.name.as_str()).collect()
    }

    /// Take Proton's metric keys (`flops16`, `flops32`, `flops64`, `flops` = FP32, `bytes`) into
    /// the typed fields; everything else stays a user metric.
    pub(crate) fn absorb_metric(&mut self, name: &str, value: f64) {
        let slot = match name {
            "flops16" => &mut self.flops.fp16,
            "flops32" | "flops" => &mut self.flops.fp32,
            "flops64" => &mut self.flops.fp64,
            "bytes" => &mut self.bytes,
            _ => {
                *self.metrics.entry(name.to_string()).or_insert(0.0) += value;
                return;
            }
        };
        *slot = Some(slot.unwrap_or(0.0) + value);
    }
}
