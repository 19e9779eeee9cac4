//! The scored pass's tracer, the effects: compiled at first use into the user's cache (once per
//! source and toolkit; atomic: built in a temporary folder, then renamed), the variables that
//! load it into the candidate's worker, and its record files read back. What the tracer is comes
//! from the backend (`profilers::tracers::gpu_tracer`); nothing here knows the vendor.
//! (The fingerprint pass builds its own library the same way; both belong in one builder.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::model::gpu_trace::GpuTrace;
use crate::model::probe::ProbeRequest;
use crate::model::profile_cache::hex;
use crate::pipeline::probe::run_probe_async;
use crate::profilers::tracer::GpuTracer;

const COMPILE_TIMEOUT: Duration = Duration::from_secs(300);

/// Why the tracer could not be had or read.
#[derive(Debug, thiserror::Error)]
pub enum TracerError {
    #[error("{0}")]
    NoCompiler(&'static str),
    #[error("no SDK for the {tracer} tracer beside {toolkit}: looked for {files} in {looked}")]
    NoSdk {
        tracer: &'static str,
        toolkit: PathBuf,
        files: String,
        looked: String,
    },
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("compiling the {tracer} tracer failed ({status}): {stderr}")]
    Compile {
        tracer: &'static str,
        status: String,
        stderr: String,
    },
    #[error("{file}: {message}")]
    Records { file: String, message: String },
}

/// The SDK's include and library folders below `toolkit`.
pub fn find_sdk(tracer: &GpuTracer, toolkit: &Path) -> Result<(PathBuf, PathBuf), TracerError> {
    let include = tracer
        .include_dirs
        .iter()
        .map(|d| toolkit.join(d))
        .find(|d| tracer.headers.iter().all(|h| d.join(h).is_file()));
    let lib = tracer
        .lib_dirs
        .iter()
        .map(|d| toolkit.join(d))
        .find(|d| tracer.libraries.iter().all(|l| d.join(l).exists()));
    match (include, lib) {
        (Some(include), Some(lib)) => Ok((include, lib)),
        _ => Err(TracerError::NoSdk {
            tracer: tracer.name,
            toolkit: toolkit.to_path_buf(),
            files: [tracer.headers, tracer.libraries].concat().join(" and "),
            looked: format!(
                "{} and {}",
                tracer.include_dirs.join(", "),
                tracer.lib_dirs.join(", ")
            ),
        }),
    }
}

/// The compiled tracer for the compiler on PATH, built into `cache_root/<name>/<digest>/`
/// unless there already.
pub async fn build(
    tracer: &GpuTracer,
    cache_root: &Path,
    cancel: &CancellationToken,
) -> Result<PathBuf, TracerError> {
    let missing = || TracerError::NoCompiler(tracer.compiler_missing);
    let compiler = which::which(tracer.compiler).map_err(|_| missing())?;
    let compiler = std::fs::canonicalize(&compiler).unwrap_or(compiler);
    let toolkit = compiler
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(missing)?;
    let (include, lib) = find_sdk(tracer, &toolkit)?;
    let mut hasher = Sha256::new();
    hasher.update(tracer.source.as_bytes());
    hasher.update(toolkit.display().to_string().as_bytes());
    let digest = hex(&hasher.finalize());
    let dir = cache_root.join(tracer.name).join(&digest[..16]);
    let path = dir.join(tracer.library_file);
    if path.is_file() {
        return Ok(path);
    }
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| TracerError::Io {
            action,
            path,
            source,
        }
    };
    std::fs::create_dir_all(&dir).map_err(io("create the tracer's folder", &dir))?;
    let work = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(&dir)
        .map_err(io("create a build folder in", &dir))?;
    let source = work.path().join(tracer.source_file);
    let output = work.path().join(tracer.library_file);
    std::fs::write(&source, tracer.source).map_err(io("write", &source))?;
    let mut request = ProbeRequest::new(&compiler, &[], COMPILE_TIMEOUT);
    request.args = (tracer.compile_args)(&include, &lib, &source, &output);
    let ran = run_probe_async(request, cancel)
        .await
        .map_err(|e| TracerError::Compile {
            tracer: tracer.name,
            status: "did not run".into(),
            stderr: e.to_string(),
        })?;
    if !ran.success() || !output.is_file() {
        return Err(TracerError::Compile {
            tracer: tracer.name,
            status: ran.status_text(),
            stderr: String::from_utf8_lossy(&ran.stderr).trim().to_string(),
        });
    }
    // Another process may have finished first: renaming over its identical library is harmless.
    std::fs::rename(&output, &path).map_err(io("install the tracer at", &path))?;
    Ok(path)
}

/// The variables that load the tracer into the candidate's worker, its records into `dir`
/// (created here).
pub fn load_env(
    tracer: &GpuTracer,
    library: &Path,
    dir: &Path,
) -> Result<BTreeMap<String, String>, TracerError> {
    std::fs::create_dir_all(dir).map_err(|source| TracerError::Io {
        action: "create the trace folder",
        path: dir.to_path_buf(),
        source,
    })?;
    Ok((tracer.load_env)(library, dir))
}

/// Every record file in `dir`, one trace per process (the worker and any process it started
/// that loaded the tracer), by pid.
pub fn read_traces(tracer: &GpuTracer, dir: &Path) -> Result<Vec<GpuTrace>, TracerError> {
    let io = |source| TracerError::Io {
        action: "read",
        path: dir.to_path_buf(),
        source,
    };
    let mut traces = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = (tracer.record_file_pid)(&name) else {
            continue;
        };
        let text = std::fs::read_to_string(entry.path()).map_err(io)?;
        let trace = (tracer.parse)(pid, &text).map_err(|message| TracerError::Records {
            file: name.clone(),
            message,
        })?;
        traces.push(trace);
    }
    traces.sort_by_key(|t| t.pid);
    Ok(traces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profilers::tracers::gpu_tracer;

    #[test]
    fn the_sdk_is_found_in_a_toolkit_laid_out_like_cuda_13() {
        let tracer = gpu_tracer("ncu").unwrap();
        let root = tempfile::tempdir().unwrap();
        let include = root.path().join("targets/x86_64-linux/include");
        let lib = root.path().join("targets/x86_64-linux/lib");
        std::fs::create_dir_all(&include).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        assert!(find_sdk(tracer, root.path()).is_err());
        for file in [
            include.join("cupti.h"),
            include.join("cuda.h"),
            lib.join("libcupti.so"),
        ] {
            std::fs::write(file, "").unwrap();
        }
        assert_eq!(find_sdk(tracer, root.path()).unwrap(), (include, lib));
    }

    #[test]
    fn record_files_are_read_by_pid_and_others_left_alone() {
        let tracer = gpu_tracer("ncu").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("trace-77.tsv"),
            "K\t1\t10\t20\t0\t7\t1\t1\t1\t32\t1\t1\t0\t0\t8\t0\tk\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("module-00.bin"), "\x7fELF").unwrap();
        let traces = read_traces(tracer, dir.path()).unwrap();
        assert_eq!(traces.len(), 1);
        assert_eq!((traces[0].pid, traces[0].activities.len()), (77, 1));
        std::fs::write(dir.path().join("trace-78.tsv"), "nonsense\n").unwrap();
        let error = read_traces(tracer, dir.path()).unwrap_err().to_string();
        assert!(error.starts_with("trace-78.tsv: line 1"), "{error}");
    }

    #[test]
    fn the_worker_is_loaded_with_the_tracer_and_its_folder() {
        let tracer = gpu_tracer("ncu").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let records = dir.path().join("trace");
        let env = load_env(tracer, Path::new("/lib/tracer.so"), &records).unwrap();
        assert!(records.is_dir());
        assert_eq!(env["CUDA_INJECTION64_PATH"], "/lib/tracer.so");
        assert_eq!(env["POLYPROF_TRACE_DIR"], records.display().to_string());
        assert!(gpu_tracer("rocprofv3").is_none());
    }
}
