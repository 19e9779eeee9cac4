//! A GPU vendor's own device tool (`nvidia-smi` for NVIDIA): which GPU a process runs on (name,
//! UUID, driver, compute capability: the calibration cache's key, the profile cache's context,
//! the architecture calibration kernels are built for), its conditions now (clocks,
//! temperature, power, slowdown reasons, other processes: read around an eval's timing blocks)
//! and whether it still answers after a fault (the batch's health check). Pure: arguments and
//! parsers; the pipeline runs the tool, found by `profilers::device_tools::for_vendor`, and
//! names no vendor.

use std::collections::BTreeMap;

pub use crate::profilers::capability::tool::Tool;

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

/// One reading of a GPU's conditions (`None`: the tool did not say).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuReading {
    pub sm_clock_mhz: Option<f64>,
    pub mem_clock_mhz: Option<f64>,
    pub max_sm_clock_mhz: Option<f64>,
    pub temperature_c: Option<f64>,
    pub power_w: Option<f64>,
    /// Active reasons that slow the GPU, by name (`sw_thermal_slowdown`, `hw_slowdown`, …);
    /// idle and clock settings are not among them.
    pub throttle_reasons: Vec<String>,
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub driver: Option<String>,
}

pub trait DeviceTool: Send + Sync {
    /// The tool.
    fn tool(&self) -> Tool;

    /// Its arguments that name the GPU `device` (an index or a UUID; the first GPU when `None`).
    fn identity_args(&self, device: Option<&str>) -> Vec<String>;

    /// The GPUs in the identity answer; malformed lines are skipped.
    fn parse_identity(&self, stdout: &str) -> Vec<GpuIdentity>;

    /// Why a GPU listed without a compute capability has none, and the fix.
    fn no_compute_capability(&self) -> &'static str;

    /// The environment that makes a process of this vendor's runtime use `gpu` (and only it),
    /// whatever order the runtime lists GPUs in.
    fn pin_env(&self, gpu: &GpuIdentity) -> BTreeMap<String, String>;

    /// Its arguments that read the conditions of GPU `device` (an index or a UUID).
    fn reading_args(&self, device: &str) -> Vec<String>;

    /// The reading in its answer (`None`: no line it can read).
    fn parse_reading(&self, stdout: &str) -> Option<GpuReading>;

    /// Its arguments that list the pids of the compute processes on GPU `device`.
    fn processes_args(&self, device: &str) -> Vec<String>;

    /// The pids in that answer (notes such as "no running processes" are skipped).
    fn parse_processes(&self, stdout: &str) -> Vec<u32>;

    /// Its arguments for a short health query of GPU `device` (the batch's index).
    fn health_args(&self, device: &str) -> Vec<String>;

    /// Why a health answer that exited 0 still says the GPU is broken, if it does.
    fn broken(&self, stdout: &str) -> Option<String>;
}
