//! The injection library: inject.c (embedded in polyprof) compiled with nvcc against the CUDA
//! toolkit's CUPTI, once per source and toolkit, into the user's cache (atomic: compiled under a
//! temporary name, then renamed).

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::error::FingerprintError;
use crate::model::probe::ProbeRequest;
use crate::model::profile_cache::hex;
use crate::pipeline::probe::run_probe_async;

pub const INJECT_C: &str = include_str!("inject.c");
const LIBRARY_FILE: &str = "libpolyprof_fingerprint.so";
const NVCC_TIMEOUT: Duration = Duration::from_secs(300);

/// The compiled library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    pub path: PathBuf,
}

/// Where CUPTI's header and library are, below a CUDA toolkit root.
fn find_cupti(cuda: &Path) -> Result<(PathBuf, PathBuf), FingerprintError> {
    let includes = [
        "include",
        "targets/x86_64-linux/include",
        "targets/sbsa-linux/include",
        "extras/CUPTI/include",
    ];
    let libs = [
        "lib64",
        "targets/x86_64-linux/lib",
        "targets/sbsa-linux/lib",
        "extras/CUPTI/lib64",
    ];
    let include = includes
        .iter()
        .map(|d| cuda.join(d))
        .find(|d| d.join("cupti.h").is_file() && d.join("cuda.h").is_file());
    let lib = libs
        .iter()
        .map(|d| cuda.join(d))
        .find(|d| d.join("libcupti.so").exists());
    match (include, lib) {
        (Some(include), Some(lib)) => Ok((include, lib)),
        _ => Err(FingerprintError::NoCupti {
            cuda: cuda.to_path_buf(),
            looked: format!("{} and {}", includes.join(", "), libs.join(", ")),
        }),
    }
}

/// nvcc's arguments: a shared library linked to CUPTI, which it finds again through its rpath
/// (the target's own LD_LIBRARY_PATH is left alone).
pub fn nvcc_args(include: &Path, lib: &Path, source: &Path, output: &Path) -> Vec<String> {
    vec![
        "-shared".into(),
        "-Xcompiler".into(),
        "-fPIC".into(),
        "-O2".into(),
        format!("-I{}", include.display()),
        format!("-L{}", lib.display()),
        "-Xlinker".into(),
        format!("-rpath={}", lib.display()),
        "-lcupti".into(),
        "-o".into(),
        output.display().to_string(),
        source.display().to_string(),
    ]
}

/// The library for the nvcc on PATH, compiled into `cache_root/fingerprint/<digest>/` unless
/// there already.
pub async fn library(
    cache_root: &Path,
    cancel: &CancellationToken,
) -> Result<Library, FingerprintError> {
    let nvcc = which::which("nvcc").map_err(|_| FingerprintError::NoNvcc)?;
    let nvcc = std::fs::canonicalize(&nvcc).unwrap_or(nvcc);
    let cuda = nvcc
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or(FingerprintError::NoNvcc)?;
    let (include, lib) = find_cupti(&cuda)?;
    let mut hasher = Sha256::new();
    hasher.update(INJECT_C.as_bytes());
    hasher.update(cuda.display().to_string().as_bytes());
    let digest = hex(&hasher.finalize());
    let dir = cache_root.join("fingerprint").join(&digest[..16]);
    let path = dir.join(LIBRARY_FILE);
    if path.is_file() {
        return Ok(Library { path });
    }
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| FingerprintError::Io {
            action,
            path,
            source,
        }
    };
    std::fs::create_dir_all(&dir).map_err(io("create the fingerprint library's folder", &dir))?;
    let work = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(&dir)
        .map_err(io("create a build folder in", &dir))?;
    let source = work.path().join("inject.c");
    let output = work.path().join(LIBRARY_FILE);
    std::fs::write(&source, INJECT_C).map_err(io("write", &source))?;
    let mut request = ProbeRequest::new(&nvcc, &[], NVCC_TIMEOUT);
    request.args = nvcc_args(&include, &lib, &source, &output);
    let ran = run_probe_async(request, cancel)
        .await
        .map_err(|e| FingerprintError::Compile {
            status: "did not run".into(),
            stderr: e.to_string(),
        })?;
    if !ran.success() || !output.is_file() {
        return Err(FingerprintError::Compile {
            status: ran.status_text(),
            stderr: String::from_utf8_lossy(&ran.stderr).trim().to_string(),
        });
    }
    // Another process may have finished first: renaming over its identical library is harmless.
    std::fs::rename(&output, &path).map_err(io("install the fingerprint library at", &path))?;
    Ok(Library { path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cupti_is_found_in_a_toolkit_laid_out_like_cuda_13() {
        let root = tempfile::tempdir().unwrap();
        let include = root.path().join("targets/x86_64-linux/include");
        let lib = root.path().join("targets/x86_64-linux/lib");
        std::fs::create_dir_all(&include).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        assert!(find_cupti(root.path()).is_err());
        for file in [
            include.join("cupti.h"),
            include.join("cuda.h"),
            lib.join("libcupti.so"),
        ] {
            std::fs::write(file, "").unwrap();
        }
        assert_eq!(find_cupti(root.path()).unwrap(), (include, lib));
    }

    #[test]
    fn the_library_finds_cupti_through_its_rpath() {
        let args = nvcc_args(
            Path::new("/cuda/include"),
            Path::new("/cuda/lib64"),
            Path::new("inject.c"),
            Path::new("lib.so"),
        );
        assert!(args.contains(&"-rpath=/cuda/lib64".to_string()));
        assert!(args.contains(&"-shared".to_string()));
    }
}
