//! A library polyprof compiles from its own source and loads into the target process (on
//! NVIDIA a CUPTI client, loaded through `CUDA_INJECTION64_PATH`). A capability that needs one
//! describes it here; the pipeline finds the compiler and the SDK, compiles it once per source
//! and toolkit into the user's cache, and sets the variables that load it.

use crate::profilers::capability::tool::Tool;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where an SDK's header and library lie below a toolkit root (the compiler's `../..`).
#[derive(Debug, Clone, Copy)]
pub struct SdkLayout {
    /// What the SDK is called in messages (`CUPTI`).
    pub name: &'static str,
    /// Folders, relative to the toolkit root, that may hold the headers.
    pub include_dirs: &'static [&'static str],
    /// Headers the include folder must hold.
    pub headers: &'static [&'static str],
    /// Folders that may hold the library.
    pub lib_dirs: &'static [&'static str],
    /// Files the library folder must hold.
    pub libraries: &'static [&'static str],
}

/// The SDK's folders as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdkPaths {
    pub include: PathBuf,
    pub lib: PathBuf,
}

/// The library: its source, how to compile it and how to load it.
#[derive(Debug, Clone, Copy)]
pub struct InjectionLibrary {
    /// Short name: the cache folder and the pass's step (`fingerprint`).
    pub name: &'static str,
    /// The source's file name (`inject.c`) and text.
    pub source_file: &'static str,
    pub source: &'static str,
    /// The compiled library's file name.
    pub library_file: &'static str,
    /// The compiler, looked up on PATH (`nvcc`), and what to say when it is missing.
    pub compiler: Tool,
    pub sdk: SdkLayout,
    /// The compiler's arguments: build `output` from `source` against the SDK.
    pub compile_args: fn(sdk: &SdkPaths, source: &Path, output: &Path) -> Vec<String>,
    /// The variables that load `library` into the target, writing what it records into `dir`.
    pub load_env: fn(library: &Path, dir: &Path) -> BTreeMap<String, String>,
}
