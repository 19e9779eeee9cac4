//! A backend's injection library (`profilers::capability::InjectionLibrary`: its source, the
//! compiler and SDK it needs) compiled once per source and toolkit into the user's cache
//! (atomic: compiled in a temporary folder, then renamed into place). Every capability that
//! loads polyprof's own library into the target builds it here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::model::probe::ProbeRequest;
use crate::model::profile_cache::hex;
use crate::pipeline::probe::run_probe_async;
use crate::profilers::capability::injection::SdkPaths;
use crate::profilers::capability::{InjectionLibrary, SdkLayout};

const COMPILE_TIMEOUT: Duration = Duration::from_secs(300);

/// Why an injection library could not be had.
#[derive(Debug, thiserror::Error)]
pub enum InjectionError {
    /// The compiler is not on PATH: the library's own message says what to install.
    #[error("{0}")]
    NoCompiler(&'static str),
    #[error("no {sdk} found beside {toolkit}: looked for {files} in {looked}")]
    NoSdk {
        sdk: &'static str,
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
    #[error("compiling the {name} library failed ({status}): {stderr}")]
    Compile {
        name: &'static str,
        status: String,
        stderr: String,
    },
}

/// Where the SDK's header and library are, below a toolkit root.
pub fn find_sdk(toolkit: &Path, layout: &SdkLayout) -> Result<SdkPaths, InjectionError> {
    let include = layout
        .include_dirs
        .iter()
        .map(|d| toolkit.join(d))
        .find(|d| layout.headers.iter().all(|h| d.join(h).is_file()));
    let lib = layout
        .lib_dirs
        .iter()
        .map(|d| toolkit.join(d))
        .find(|d| layout.libraries.iter().all(|l| d.join(l).exists()));
    match (include, lib) {
        (Some(include), Some(lib)) => Ok(SdkPaths { include, lib }),
        _ => Err(InjectionError::NoSdk {
            sdk: layout.name,
            toolkit: toolkit.to_path_buf(),
            files: [layout.headers, layout.libraries].concat().join(" and "),
            looked: format!(
                "{} and {}",
                layout.include_dirs.join(", "),
                layout.lib_dirs.join(", ")
            ),
        }),
    }
}

/// Where injection libraries are built and kept: beside polyprof's cache folder (the user's
/// cache), else `fallback`.
pub fn default_root(fallback: &Path) -> PathBuf {
    crate::pipeline::config::default_cache_dir()
        .and_then(|d| d.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| fallback.to_path_buf())
}

/// The compiled `library` for the compiler on PATH, built into
/// `cache_root/<name>/<digest>/` unless there already.
pub async fn build(
    library: &InjectionLibrary,
    cache_root: &Path,
    cancel: &CancellationToken,
) -> Result<PathBuf, InjectionError> {
    let missing = || InjectionError::NoCompiler(library.compiler.missing);
    let compiler = which::which(library.compiler.program).map_err(|_| missing())?;
    let compiler = std::fs::canonicalize(&compiler).unwrap_or(compiler);
    let toolkit = compiler
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(missing)?;
    let sdk = find_sdk(&toolkit, &library.sdk)?;
    let mut hasher = Sha256::new();
    hasher.update(library.source.as_bytes());
    hasher.update(toolkit.display().to_string().as_bytes());
    let digest = hex(&hasher.finalize());
    let dir = cache_root.join(library.name).join(&digest[..16]);
    let path = dir.join(library.library_file);
    if path.is_file() {
        return Ok(path);
    }
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| InjectionError::Io {
            action,
            path,
            source,
        }
    };
    std::fs::create_dir_all(&dir).map_err(io("create the injection library's folder", &dir))?;
    let work = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(&dir)
        .map_err(io("create a build folder in", &dir))?;
    let source = work.path().join(library.source_file);
    let output = work.path().join(library.library_file);
    std::fs::write(&source, library.source).map_err(io("write", &source))?;
    let mut request = ProbeRequest::new(&compiler, &[], COMPILE_TIMEOUT);
    request.args = (library.compile_args)(&sdk, &source, &output);
    let failed = |status: String, stderr: String| InjectionError::Compile {
        name: library.name,
        status,
        stderr,
    };
    let ran = run_probe_async(request, cancel)
        .await
        .map_err(|e| failed("did not run".into(), e.to_string()))?;
    if !ran.success() || !output.is_file() {
        return Err(failed(
            ran.status_text(),
            String::from_utf8_lossy(&ran.stderr).trim().to_string(),
        ));
    }
    // Another process may have finished first: renaming over its identical library is harmless.
    std::fs::rename(&output, &path).map_err(io("install the injection library at", &path))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: SdkLayout = SdkLayout {
        name: "CUPTI",
        include_dirs: &["include", "targets/x86_64-linux/include"],
        headers: &["cupti.h", "cuda.h"],
        lib_dirs: &["lib64", "targets/x86_64-linux/lib"],
        libraries: &["libcupti.so"],
    };

    #[test]
    fn the_sdk_is_found_in_a_toolkit_laid_out_like_cuda_13() {
        let root = tempfile::tempdir().unwrap();
        let include = root.path().join("targets/x86_64-linux/include");
        let lib = root.path().join("targets/x86_64-linux/lib");
        std::fs::create_dir_all(&include).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        let err = find_sdk(root.path(), &LAYOUT).unwrap_err().to_string();
        assert!(
            err.contains("no CUPTI found") && err.contains("libcupti.so"),
            "{err}"
        );
        for file in [
            include.join("cupti.h"),
            include.join("cuda.h"),
            lib.join("libcupti.so"),
        ] {
            std::fs::write(file, "").unwrap();
        }
        assert_eq!(
            find_sdk(root.path(), &LAYOUT).unwrap(),
            SdkPaths { include, lib }
        );
    }
}
