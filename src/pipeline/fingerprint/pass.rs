//! Run the target once under the injection library and read back what it logged.

use std::collections::BTreeMap;
use std::path::Path;

use super::build::Library;
use super::error::FingerprintError;
use crate::model::arg::Arg;
use crate::model::plan::{CommandSpec, EndMarker, Graces, Plan, Step};
use crate::model::run::StepRun;
use crate::pipeline::executor::execute_plan;
use crate::pipeline::runner::RunOptions;
use crate::profilers::ncu::launch_log::{ProcessLaunches, parse_log, resolve};

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

/// Run `target` under `library`, its logs and images into `<run_dir>/fingerprint/`.
pub async fn run_fingerprint_pass(
    target: &[Arg],
    library: &Library,
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
    command.env = BTreeMap::from([
        (
            "CUDA_INJECTION64_PATH".to_string(),
            library.path.display().to_string(),
        ),
        (
            "POLYPROF_FINGERPRINT_DIR".to_string(),
            dir.display().to_string(),
        ),
    ]);
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
    let processes = read_logs(&dir)?;
    Ok(FingerprintPass {
        step,
        wall_s,
        processes,
    })
}

/// Every `launches-<pid>.tsv` in `dir`, parsed and resolved against the images beside it.
pub fn read_logs(dir: &Path) -> Result<BTreeMap<String, ProcessLaunches>, FingerprintError> {
    let io = |source| FingerprintError::Io {
        action: "read",
        path: dir.to_path_buf(),
        source,
    };
    let mut processes = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("launches-") && name.ends_with(".tsv")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).map_err(io)?;
        let events =
            parse_log(&text).map_err(|e| FingerprintError::Pass(format!("{name}: {e}")))?;
        let mut image = |file: &str| {
            // Only plain names the library wrote: never a path out of the folder.
            (!file.contains('/') && !file.starts_with('.'))
                .then(|| std::fs::read(dir.join(file)).ok())
                .flatten()
        };
        processes.insert(name, resolve(&events, &mut image));
    }
    Ok(processes)
}
