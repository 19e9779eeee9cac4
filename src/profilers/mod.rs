//! Vendor profilers: the [`Profiler`] trait, the selection table, and one module per vendor.
//! A profiler turns a target argv into a [`Plan`]; it never runs processes itself. Its parser is
//! a pure function from bytes to [`KernelRecord`]s.

pub mod artifacts;
pub mod metal;
pub mod ncu;
pub mod none;
pub mod ocl_unitrace;
pub mod plan;
pub mod preflight;
pub mod quote;
pub mod rocprofv3;
pub mod selection;
pub mod staging;
pub mod unitrace;
pub mod vtune;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::results::record::KernelRecord;

pub use artifacts::{RawArtifact, RawOutput};
pub use plan::{CommandSpec, EndMarker, Graces, Plan, RetryPolicy, Step, Validator};
pub use preflight::Preflight;

/// Every profiler polyprof knows, by stable name, in display order.
pub const PROFILER_NAMES: &[&str] = &[
    "ncu",
    "unitrace",
    "ocl-unitrace",
    "vtune",
    "metal",
    "rocprofv3",
];

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// A classified message from a profiler's output (`ERR_NVGPUCTRPERM`, "no kernels profiled", …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable machine-readable kind, e.g. `counter_permission`, `no_kernels_profiled`.
    pub kind: String,
    /// The profiler's own text.
    pub message: String,
    /// What to do about it, when polyprof knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// What a backend's parser made of the raw artifacts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParsedOutput {
    pub kernels: Vec<KernelRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// Facts about the session (tool version, device name, …) when the output carries them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub session: BTreeMap<String, String>,
}

/// Raw files plus what the parser made of them. Raw files are kept even when parsing fails.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfilerOutput {
    pub raw: RawOutput,
    pub parsed: ParsedOutput,
    /// Parse failures, each naming the artifact; the raw bytes are still in `raw`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// Options that shape how a profiler is built (from selection, CLI flags or the API).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfilerSettings {
    /// Unitrace metric group for this pass (`ComputeBasic`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_group: Option<String>,
    /// Nsight Compute options.
    #[serde(default)]
    pub ncu: ncu::NcuOptions,
    /// Extra arguments passed to the profiler verbatim, before the target (escape hatch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
    /// Override of the profiler's end marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_marker: Option<EndMarker>,
    /// Override of the profiler's graces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graces: Option<Graces>,
}

/// A vendor profiler backend. Names follow the Python API our users know.
#[async_trait]
pub trait Profiler: Send + Sync + Debug {
    /// Stable identifier: `ncu`, `unitrace`, `ocl-unitrace`, `vtune`, `metal`, `none`.
    fn name(&self) -> &str;

    /// The directory the profiler writes into, as the profiled process sees it.
    fn output_dir(&self) -> &Path;

    /// What to run for one pass over `target` (argv vectors, never a shell string).
    fn wrap(&self, target: &[String]) -> Result<Plan>;

    /// The same plan as one POSIX shell string, for callers that hold a string. `target` is
    /// split with POSIX shell rules; every argument reaches the program verbatim.
    fn wrap_cmd(&self, target: &str) -> Result<String> {
        let argv = quote::split(target)?;
        quote::plan_to_shell(&self.wrap(&argv)?)
    }

    /// Variables the profiled process needs.
    fn env_vars(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// What tells that the work is done.
    fn end_marker(&self) -> EndMarker {
        EndMarker::Pytest
    }

    /// Marker and kill graces sized for this profiler.
    fn graces(&self) -> Graces {
        Graces::default()
    }

    /// Stage whatever must exist before the run in the host's view of the output directory.
    async fn prepare(&self, host_output_dir: &Path) -> Result<()> {
        tokio::fs::create_dir_all(host_output_dir)
            .await
            .map_err(|e| Error::io("create output directory", host_output_dir, e))
    }

    /// Collect the raw files the profiler wrote and parse them.
    async fn read_output(&self) -> Result<ProfilerOutput>;

    /// A real preflight: binary, version and the vendor's permission checks.
    fn preflight(&self) -> Preflight;

    /// Why this profiler cannot run here, with the fix; `None` when it can.
    fn unavailable_reason(&self) -> Option<String> {
        self.preflight().reason
    }
}

/// Build a profiler by name. `none` is the built-in pass-through profiler.
pub fn create(
    name: &str,
    output_dir: &Path,
    settings: &ProfilerSettings,
) -> Result<Box<dyn Profiler>> {
    let dir: PathBuf = output_dir.to_path_buf();
    let profiler: Box<dyn Profiler> = match name.trim().to_ascii_lowercase().as_str() {
        "none" => Box::new(none::NoProfiler::new(dir, settings)),
        "ncu" => Box::new(ncu::Ncu::new(dir, settings)?),
        "unitrace" => Box::new(unitrace::Unitrace::new(dir, settings)),
        "ocl-unitrace" => Box::new(ocl_unitrace::OclUnitrace::new(dir, settings)),
        "vtune" => Box::new(vtune::Vtune::new(dir, settings)),
        "metal" => Box::new(metal::Metal::new(dir, settings)),
        "rocprofv3" => Box::new(rocprofv3::Rocprofv3::new(dir, settings)?),
        _ => {
            return Err(Error::UnknownValue {
                what: "profiler",
                value: name.to_string(),
                valid: format!("none, {}", PROFILER_NAMES.join(", ")),
            });
        }
    };
    Ok(profiler)
}
