//! Which vendor's GPUs have a device tool polyprof knows (`profilers::device_tool::DeviceTool`).

use super::device_tool::DeviceTool;
use super::registry::Vendor;

/// The device tool of `vendor`'s GPUs; `None` where polyprof has none (the checks that need it
/// then say they did not run).
pub fn for_vendor(vendor: Vendor) -> Option<&'static dyn DeviceTool> {
    match vendor {
        Vendor::Nvidia => Some(&super::ncu::nvidia_smi::NvidiaSmi),
        Vendor::Intel | Vendor::Amd | Vendor::Apple => None,
    }
}

/// The device tool of the GPUs the backend named `profiler` profiles; `None` for an unknown
/// name, a backend of no vendor (`none`) or a vendor without a tool.
pub fn for_profiler(profiler: &str) -> Option<&'static dyn DeviceTool> {
    super::registry::lookup(profiler)
        .ok()?
        .vendor
        .and_then(for_vendor)
}
