//! `polyprof calibrate`: run known-work micro-kernels on a GPU under ncu, hold what the counters
//! read against the work (`results::calibration`) and cache the result per device, driver and
//! ncu version, where the eval's audit finds it ([`lookup`]). docs/calibrate.md says what each
//! kernel does and how a counter is judged.
//!
//! The steps: the capability's compiler, the profiler and the vendor's device tool are found
//! (all that are missing are named at once); the GPU is identified with that tool; a
//! calibration cached for it is served unless `force`; otherwise, under the key's lock and in a
//! fresh work directory beside the cache, the capability's known-work program is compiled for
//! the GPU's architecture, its `info` sizes the plan, two profiler passes run it (the launch
//! floor, then the counters), the records are judged and the calibration is written atomically.
//! Nothing here names a vendor: the profiler's registry entry supplies each vendor's part.

pub mod build;
pub mod cache;
pub mod device;
pub mod error;
pub mod measure;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

pub use cache::{lookup, lookup_in};
pub use device::visible_device;
pub use error::{CalibrateError, MissingTool};

use crate::model::calibration::Calibration;
use crate::pipeline::Profiler;
use crate::profilers::ProfilerSettings;
use crate::profilers::capability::{CalibrationCapability, Capability, CapabilityError};
use crate::profilers::device_tool::{self, DeviceTool};
use crate::profilers::device_tools;
use crate::profilers::registry;
use crate::results::calibration::{Judged, judge};
use crate::results::calibration_kernels::CalibrationPlan;
use crate::results::devices::DeviceTable;

/// The plan saved in the work directory, for judging the capture again offline.
pub const PLAN_FILE: &str = "plan.json";

/// Told each step as it starts (`compiling kernels.cu for sm_90a`), for a person waiting.
pub type Progress = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// What `polyprof calibrate` was asked.
#[derive(Clone, Default)]
pub struct CalibrateOptions {
    /// The profiler that measures (its calibration capability); `None`: the first that has one.
    pub profiler: Option<String>,
    /// The GPU as nvidia-smi's `-i` takes it (index or UUID); `None`: the first of
    /// `CUDA_VISIBLE_DEVICES`, else GPU 0.
    pub device: Option<String>,
    /// Measure again even when a calibration is cached.
    pub force: bool,
    /// The cache folder; `None`: [`cache::default_dir`].
    pub cache_dir: Option<PathBuf>,
    pub cancel: CancellationToken,
    pub progress: Option<Progress>,
}

impl std::fmt::Debug for CalibrateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CalibrateOptions")
            .field("profiler", &self.profiler)
            .field("device", &self.device)
            .field("force", &self.force)
            .field("cache_dir", &self.cache_dir)
            .finish_non_exhaustive()
    }
}

/// A calibration, cached or measured now.
#[derive(Debug, Clone)]
pub struct Calibrated {
    /// With `path` set to its cached document.
    pub calibration: Calibration,
    /// Served from the cache, nothing measured.
    pub from_cache: bool,
    /// Measured now: the work directory (program, plan, the ncu runs).
    pub work_dir: Option<PathBuf>,
    /// Measured now: planned kernels the profiler did not record, and those recorded twice.
    pub missing: Vec<String>,
    pub repeated: Vec<String>,
    /// Measured now: what went wrong without stopping the calibration (a counters pass that
    /// failed part way: the kernels it did not record are untrusted).
    pub warnings: Vec<String>,
}

/// The tools a calibration needs, found.
struct Tools {
    /// The calibration program's compiler.
    compiler: PathBuf,
    /// The vendor's device tool.
    identity_tool: PathBuf,
    /// `ncu 2025.3.1.0`: the calibration's `tool` (the profiler and its version).
    profiler: String,
}

/// The profiler `options` names (else the first with a calibration capability) and that
/// capability; a profiler without one is refused saying which have it.
fn calibrator(
    options: &CalibrateOptions,
) -> Result<(&'static str, &'static dyn CalibrationCapability), CalibrateError> {
    let pick = |c: &crate::profilers::capability::Capabilities| c.calibration;
    let name = match &options.profiler {
        Some(name) => name.clone(),
        None => registry::offering(pick)
            .first()
            .ok_or(CapabilityError::Nobody {
                capability: Capability::Calibration,
            })?
            .to_string(),
    };
    let entry = registry::lookup(&name).map_err(|e| CalibrateError::Profiler(e.to_string()))?;
    let capability = registry::capability(entry.name, Capability::Calibration, pick)
        .map_err(|e| CalibrateError::Profiler(e.to_string()))??;
    Ok((entry.name, capability))
}

/// Calibrate the GPU `options` name, or serve its cached calibration.
pub async fn calibrate(options: &CalibrateOptions) -> Result<Calibrated, CalibrateError> {
    let cancel = &options.cancel;
    let say = |step: &str| {
        tracing::debug!(step, "calibration");
        if let Some(progress) = &options.progress {
            progress(step);
        }
    };
    let dir = match &options.cache_dir {
        Some(dir) => dir.clone(),
        None => cache::default_dir().ok_or(CalibrateError::NoCacheDir)?,
    };
    let (profiler, calibration) = calibrator(options)?;
    let identity = vendor_tool(profiler)?;
    let tools = find_tools(profiler, calibration, identity, &dir).await?;
    let device = options.device.clone().or_else(visible_device);
    let gpu = device::identify(identity, &tools.identity_tool, device.as_deref(), cancel).await?;
    let (Some(driver), Some(compute_capability)) = (gpu.driver.clone(), gpu.compute_capability)
    else {
        return Err(CalibrateError::Device {
            command: identity.tool().program.to_string(),
            why: format!("it gives no driver version for {}", gpu.name),
        });
    };
    let device_key = gpu.uuid.clone().unwrap_or_else(|| gpu.name.clone());
    if !options.force
        && let Some(calibration) = cache::lookup_in(&dir, &device_key, &driver, &tools.profiler)
    {
        return Ok(Calibrated {
            calibration,
            from_cache: true,
            work_dir: None,
            missing: Vec::new(),
            repeated: Vec::new(),
            warnings: Vec::new(),
        });
    }
    let key = cache::key(&device_key, &driver, &tools.profiler);
    let _lock = cache::lock(&dir, &key)?;
    let work = fresh_work_dir(&dir, &key)?;
    let source = calibration.program();
    let arch = (source.arch)(compute_capability);
    say(&format!(
        "compiling the calibration kernels for {arch} ({})",
        gpu.name
    ));
    let program = build::compile(source, &tools.compiler, &arch, &work, cancel).await?;
    let env: BTreeMap<String, String> = identity.pin_env(&gpu);
    let info = device::program_info(&program, &env, cancel).await?;
    if let (Some(seen), Some(asked)) = (&info.uuid, &gpu.uuid)
        && !seen.eq_ignore_ascii_case(asked)
    {
        return Err(CalibrateError::Device {
            command: format!("{} info", program.display()),
            why: format!(
                "the program ran on {seen}, not on {asked} that {} named",
                identity.tool().program
            ),
        });
    }
    let plan = CalibrationPlan::for_device(&gpu.name, info.facts);
    write_plan(&work, &plan)?;
    let floor_job = measure::pass_job(
        profiler,
        calibration.pass_settings(vec![calibration.duration_metric().to_string()]),
        &program,
        &plan.floor(),
        work.join(measure::FLOOR_RUN),
        &env,
        cancel,
    );
    say("ncu pass 1 of 2: the launch floor (the empty kernel's launches)");
    let floor = measure::run_pass("launch floor", &floor_job).await?;
    let work_kernels = plan.work();
    let metrics =
        calibration.counter_metrics(compute_capability, &measure::precisions(&work_kernels));
    let counters_job = measure::pass_job(
        profiler,
        calibration.pass_settings(metrics),
        &program,
        &work_kernels,
        work.join(measure::COUNTERS_RUN),
        &env,
        cancel,
    );
    say(&format!(
        "ncu pass 2 of 2: the counters of {} known-work kernels",
        work_kernels.len()
    ));
    // A kernel that fails (a GPU fault ends the program) costs only the checks after it.
    let (counters, failed) = measure::run_partial_pass("counters", &counters_job).await?;
    let warnings: Vec<String> = failed.iter().map(ToString::to_string).collect();
    let records: Vec<_> = floor.kernels.into_iter().chain(counters.kernels).collect();
    let peaks = DeviceTable::builtin()
        .ok()
        .and_then(|table| table.lookup(&gpu.name).cloned());
    let Judged {
        checks,
        launch_floor_ns,
        missing,
        repeated,
    } = judge(&plan.kernels, &records, peaks.as_ref());
    let mut calibration = Calibration {
        device_name: gpu.name,
        device_uuid: gpu.uuid,
        driver: Some(driver),
        tool: tools.profiler,
        created_unix_s: crate::model::batch::now_unix_s() as u64,
        path: None,
        launch_floor_ns,
        checks,
    };
    let path = cache::store(&dir, &calibration)?;
    calibration.path = Some(path.display().to_string());
    Ok(Calibrated {
        calibration,
        from_cache: false,
        work_dir: Some(work),
        missing,
        repeated,
        warnings,
    })
}

/// The device tool of the GPUs `profiler` profiles (the GPU is named with it).
fn vendor_tool(profiler: &str) -> Result<&'static dyn DeviceTool, CalibrateError> {
    device_tools::for_profiler(profiler).ok_or_else(|| {
        CalibrateError::Profiler(format!(
            "`{profiler}` profiles no GPU whose device tool polyprof knows, so the GPU to \
             calibrate cannot be named"
        ))
    })
}

/// The program's compiler, the profiler (its preflight: binary, version, GPU, counter access)
/// and the device-identity tool; every one that is missing is named, with its fix.
async fn find_tools(
    profiler: &'static str,
    calibration: &dyn CalibrationCapability,
    identity: &dyn DeviceTool,
    dir: &Path,
) -> Result<Tools, CalibrateError> {
    let mut missing = Vec::new();
    let mut find = |tool: device_tool::Tool| {
        let found = which::which(tool.program).ok();
        if found.is_none() {
            missing.push(MissingTool {
                tool: tool.what,
                fix: tool.missing.to_string(),
            });
        }
        found
    };
    let identity_tool = find(identity.tool());
    let compiler = find(calibration.program().compiler);
    let dir = dir.to_path_buf();
    let preflight = tokio::task::spawn_blocking(move || {
        crate::profilers::create(profiler, &dir, &ProfilerSettings::default())
            .map(|p| p.preflight())
    })
    .await;
    let version = match preflight {
        Ok(Ok(preflight)) if preflight.available => Some(format!(
            "{profiler} {}",
            preflight.version.as_deref().unwrap_or("unknown")
        )),
        Ok(Ok(preflight)) => {
            missing.push(MissingTool {
                tool: profiler,
                fix: preflight
                    .reason
                    .unwrap_or_else(|| format!("{profiler} is unavailable")),
            });
            None
        }
        Ok(Err(error)) => {
            missing.push(MissingTool {
                tool: profiler,
                fix: error.to_string(),
            });
            None
        }
        Err(error) => {
            missing.push(MissingTool {
                tool: profiler,
                fix: format!("its preflight failed: {error}"),
            });
            None
        }
    };
    match (compiler, identity_tool, version) {
        (Some(compiler), Some(identity_tool), Some(profiler)) if missing.is_empty() => Ok(Tools {
            compiler,
            identity_tool,
            profiler,
        }),
        _ => Err(CalibrateError::Missing { missing }),
    }
}

/// `<dir>/measurements/<key>`, emptied of an earlier calibration's files.
fn fresh_work_dir(dir: &Path, key: &str) -> Result<PathBuf, CalibrateError> {
    let work = dir.join(cache::WORK_DIR).join(key);
    let io = |action, source| CalibrateError::Cache {
        action,
        path: work.clone(),
        source,
    };
    if work.exists() {
        std::fs::remove_dir_all(&work)
            .map_err(|e| io("clear the calibration work directory", e))?;
    }
    std::fs::create_dir_all(&work).map_err(|e| io("create the calibration work directory", e))?;
    Ok(work)
}

fn write_plan(work: &Path, plan: &CalibrationPlan) -> Result<(), CalibrateError> {
    let path = work.join(PLAN_FILE);
    let io = |source| CalibrateError::Cache {
        action: "write the calibration plan",
        path: path.clone(),
        source,
    };
    let mut text = serde_json::to_vec_pretty(plan).map_err(|e| io(std::io::Error::other(e)))?;
    text.push(b'\n');
    crate::model::atomic_file::write_atomic(&path, &text).map_err(io)
}
