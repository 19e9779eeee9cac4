//! The device-identity capability: which GPU a job runs on, as the vendor's own tool names it
//! (name, UUID, driver, compute capability): the calibration cache's key, the profile cache's
//! context and the architecture calibration kernels are built for. Pure: the tool, its
//! arguments, the parser and the environment that pins a process to the GPU; the pipeline runs
//! the tool.

use std::collections::BTreeMap;

/// A program a capability needs on PATH, and what to tell a user who lacks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// The executable's name, looked up on PATH.
    pub program: &'static str,
    /// What it stands for in a "missing" list (`an NVIDIA GPU`, `nvcc`).
    pub what: &'static str,
    /// Why it matters and how to get it.
    pub missing: &'static str,
}

/// One GPU as the vendor's tool names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuIdentity {
    /// The tool's index (`0`).
    pub index: String,
    pub name: String,
    pub uuid: Option<String>,
    pub driver: Option<String>,
    pub compute_capability: Option<(u32, u32)>,
}

pub trait DeviceIdentityCapability: Send + Sync {
    /// The tool that lists the GPUs.
    fn tool(&self) -> Tool;

    /// Its arguments for the GPU `device` (an index or a UUID; the first GPU when `None`).
    fn query_args(&self, device: Option<&str>) -> Vec<String>;

    /// The GPUs in its output; malformed lines are skipped.
    fn parse(&self, stdout: &str) -> Vec<GpuIdentity>;

    /// Why a GPU listed without a compute capability has none, and the fix.
    fn no_compute_capability(&self) -> &'static str;

    /// The environment that makes a process of this vendor's runtime use `gpu` (and only it),
    /// whatever order the runtime lists GPUs in.
    fn pin_env(&self, gpu: &GpuIdentity) -> BTreeMap<String, String>;
}
