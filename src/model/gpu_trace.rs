//! A process's GPU activity as a tracer recorded it (for NVIDIA, polyprof's CUPTI tracer,
//! `profilers::ncu::trace_log`): every kernel, copy and memset that ran, with the GPU's own start
//! and end times and the OS thread whose API call queued it. The eval's scored pass is judged
//! from these records (`eval::timeline`).

use serde::{Deserialize, Serialize};

/// What ran.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    Kernel,
    Memcpy,
    Memset,
}

/// One piece of work that ran on the GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuActivity {
    pub kind: ActivityKind,
    /// The tracer's correlation id: the same as the API call that queued it.
    pub correlation: u64,
    /// GPU timestamps (ns, one clock for the whole process).
    pub start_ns: u64,
    pub end_ns: u64,
    pub device: u32,
    pub stream: u32,
    /// The kernel's symbol (mangled, as the driver names it); empty for copies and memsets.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The symbol demangled (as c++filt writes it), when it is a mangled C++ name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demangled: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<[u32; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<[u32; 3]>,
    /// Dynamic shared memory of a kernel launch (bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_shared_bytes: Option<u64>,
    /// Bytes a copy or memset moved or wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The byte a memset wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u32>,
    /// The CUDA graph it ran in (0: launched directly).
    #[serde(default)]
    pub graph: u64,
    /// The OS thread whose API call queued it, when the tracer saw that call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<i64>,
}

impl GpuActivity {
    /// Nanoseconds it ran.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// The name to show and compare: demangled when it could be, else as the driver gave it.
    pub fn readable_name(&self) -> &str {
        self.demangled.as_deref().unwrap_or(&self.name)
    }
}

/// A module image the process loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TracedModule {
    /// The tracer's own short hash of the image (names the saved file).
    pub image_hash: String,
    pub bytes: u64,
}

/// One process's trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuTrace {
    pub pid: u32,
    /// In the order the tracer handed them over (not sorted by time).
    pub activities: Vec<GpuActivity>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<TracedModule>,
    /// Records the tracer says were lost (its buffers overflowed).
    #[serde(default)]
    pub dropped: u64,
    /// What the tracer could not do (a subscription refused, an activity kind not enabled).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}
