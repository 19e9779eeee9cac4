//! Run the target once under the backend's injection library and read back what it logged.

use std::collections::BTreeMap;
use std::path::Path;

use super::error::FingerprintError;
use crate::model::arg::Arg;
use crate::model::plan::{CommandSpec, EndMarker, Graces, Plan, Step};
use crate::model::profile_cache::ProcessLaunches;
use crate::model::run::StepRun;
use crate::pipeline::executor::execute_plan;
use crate::pipeline::runner::RunOptions;
use crate::profilers::capability::FingerprintCapability;

/// The pass's folder inside the run directory: the logs and the saved module images.
pub const FINGERPRINT_DIR: &str = "fingerprint";
/// The step's name in `run.json`.
pub const STEP_NAME: &str = "fingerprint";

/// What the pass saw.
#[derive(Debug, Clone)]
pub struct FingerprintPass {
    pub step: StepRun,
    /// Seconds the target ran under the library.
    pub wall_s: f64,
    /// One entry per process that loaded the library, by its log's name.
    pub processes: BTreeMap<String, ProcessLaunches>,
}

/// Run `target` under the capability's library (compiled at `library`), its logs and images
/// into `<run_dir>/fingerprint/`.
pub async fn run_fingerprint_pass(
    capability: &dyn FingerprintCapability,
    library: &Path,
    target: &[Arg],
    run_dir: &Path,
    options: &RunOptions,
    end_marker: EndMarker,
) -> Result<FingerprintPass, FingerprintError> {
    let dir = run_dir.join(FINGERPRINT_DIR);
    std::fs::create_dir_all(&dir).map_err(|source| FingerprintError::Io {
        action: "create",
        path: dir.clone(),
        source,
    })?;
    let mut command = CommandSpec::new(target.to_vec());
    command.env = (capability.library().load_env)(library, &dir);
    let plan = Plan {
        profiler: STEP_NAME.to_string(),
        target: target.to_vec(),
        steps: vec![Step::new(STEP_NAME, command, end_marker, Graces::default())],
        outputs: Default::default(),
        capabilities: Vec::new(),
    };
    let mut steps = execute_plan(&plan, options, run_dir).await;
    let step = steps
        .pop()
        .ok_or_else(|| FingerprintError::Pass("ran no step".to_string()))?;
    let wall_s = step.attempts.last().map_or(0.0, |a| a.timings.end_s);
    if !step.accepted {
        return Err(FingerprintError::Pass(format!(
            "did not end well: {} (the target runs without a profiler in it)",
            step.rejection
                .as_deref()
                .unwrap_or("its step was not accepted")
        )));
    }
    let processes = read_logs(capability, &dir)?;
    Ok(FingerprintPass {
        step,
        wall_s,
        processes,
    })
}

/// Every launch log in `dir` (one per process), read and resolved against the images beside it.
pub fn read_logs(
    capability: &dyn FingerprintCapability,
    dir: &Path,
) -> Result<BTreeMap<String, ProcessLaunches>, FingerprintError> {
    let io = |source| FingerprintError::Io {
        action: "read",
        path: dir.to_path_buf(),
        source,
    };
    let mut processes = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !capability.is_launch_log(&name) {
            continue;
        }
        // The profiled program can write this folder: a FIFO there must not hang the read.
        let bytes = crate::model::input::read_regular(&entry.path()).map_err(io)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        let mut image = |file: &str| {
            // Only plain names the library wrote: never a path out of the folder.
            (!file.contains('/') && !file.starts_with('.'))
                .then(|| crate::model::input::read_regular(&dir.join(file)).ok())
                .flatten()
        };
        let launches = capability
            .read_launch_log(&text, &mut image)
            .map_err(|e| FingerprintError::Pass(format!("{name}: {e}")))?;
        processes.insert(name, launches);
    }
    Ok(processes)
}
