//! The scored pass's tracer, the effects: compiled at first use into the user's cache (once per
//! source and toolkit; atomic: built in a temporary folder, then renamed), the variables that
//! load it into the candidate's worker, and its record files read back. What the tracer is comes
//! from the backend (`profilers::tracers::gpu_tracer`); nothing here knows the vendor. It is
//! built like every injection library (`pipeline::injection`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::model::gpu_trace::GpuTrace;
use crate::pipeline::injection::{self, InjectionError};
use crate::profilers::tracer::GpuTracer;

/// Why the tracer could not be had or read.
#[derive(Debug, thiserror::Error)]
pub enum TracerError {
    #[error(transparent)]
    Build(#[from] InjectionError),
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Records { file: String, message: String },
}

/// The compiled tracer for the compiler on PATH, built into `cache_root/<name>/<digest>/`
/// unless there already.
pub async fn build(
    tracer: &GpuTracer,
    cache_root: &Path,
    cancel: &CancellationToken,
) -> Result<PathBuf, TracerError> {
    Ok(injection::build(&tracer.library, cache_root, cancel).await?)
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
    Ok((tracer.library.load_env)(library, dir))
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
        // The candidate can write this folder: a FIFO planted there must not hang the read.
        let bytes = crate::model::input::read_regular(&entry.path()).map_err(io)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
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
        assert!(injection::find_sdk(root.path(), &tracer.library.sdk).is_err());
        for file in [
            include.join("cupti.h"),
            include.join("cuda.h"),
            lib.join("libcupti.so"),
        ] {
            std::fs::write(file, "").unwrap();
        }
        let found = injection::find_sdk(root.path(), &tracer.library.sdk).unwrap();
        assert_eq!((found.include, found.lib), (include, lib));
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
        // A FIFO the candidate planted under a record file's name: an error at once.
        std::fs::remove_file(dir.path().join("trace-78.tsv")).unwrap();
        nix::unistd::mkfifo(
            &dir.path().join("trace-79.tsv"),
            nix::sys::stat::Mode::S_IRWXU,
        )
        .unwrap();
        let error = read_traces(tracer, dir.path()).unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
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
