//! Nsight Compute's capabilities beyond profiling a command (see `profilers::capability`): the
//! fingerprint pass (polyprof's CUPTI injection library, `inject.c`, and its launch log),
//! profile once (ncu narrowed to the launches the cache lacks) and calibration (the metrics of
//! the known-work kernels' passes). Another CUPTI library is another [`InjectionLibrary`] here,
//! built with [`cupti_nvcc_args`] against the same [`CUPTI`] layout.

use crate::profilers::capability::tool::Tool;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::calibration_program::PROGRAM;
use super::launch_log::{parse_log, resolve};
use super::options::{
    ClockControl, DRAM_CLOCK, DRAM_READ, DRAM_WRITE, DURATION, FP16_OPS, FP32_OPS, FP64_OPS,
    HFMA2_MMA_INST, NcuOptions, Preset, SM_CLOCK, TENSOR_BF16_OPS, TENSOR_FP8_OPS, TENSOR_FP16_OPS,
    TENSOR_TF32_OPS,
};
use super::profile_once::{assemble, expected_profiled, narrowed_options};
use crate::model::profile_cache::{LaunchFingerprint, LoggedLaunch, ProcessLaunches, hex};
use crate::model::record::KernelRecord;
use crate::profilers::ProfilerSettings;
use crate::profilers::capability::injection::SdkPaths;
use crate::profilers::capability::{
    Assembly, CalibrationCapability, CalibrationProgram, Capabilities, FingerprintCapability, Hit,
    InjectionLibrary, ProfileOnceCapability, SdkLayout, TensorPrecision,
};

/// Every capability ncu has.
pub const CAPABILITIES: Capabilities = Capabilities {
    fingerprint: Some(&NcuFingerprint),
    profile_once: Some(&NcuProfileOnce),
    calibration: Some(&NcuCalibration),
};

/// CUPTI's header and library below a CUDA toolkit (CUDA 12 and 13, x86-64 and Arm servers).
pub const CUPTI: SdkLayout = SdkLayout {
    name: "CUPTI",
    include_dirs: &[
        "include",
        "targets/x86_64-linux/include",
        "targets/sbsa-linux/include",
        "extras/CUPTI/include",
    ],
    headers: &["cupti.h", "cuda.h"],
    lib_dirs: &[
        "lib64",
        "targets/x86_64-linux/lib",
        "targets/sbsa-linux/lib",
        "extras/CUPTI/lib64",
    ],
    libraries: &["libcupti.so"],
};

/// nvcc's arguments for a CUPTI client: a shared library linked to CUPTI, which it finds again
/// through its rpath (the target's own LD_LIBRARY_PATH is left alone).
pub fn cupti_nvcc_args(sdk: &SdkPaths, source: &Path, output: &Path) -> Vec<String> {
    vec![
        "-shared".into(),
        "-Xcompiler".into(),
        "-fPIC".into(),
        "-O2".into(),
        format!("-I{}", sdk.include.display()),
        format!("-L{}", sdk.lib.display()),
        "-Xlinker".into(),
        format!("-rpath={}", sdk.lib.display()),
        "-lcupti".into(),
        "-o".into(),
        output.display().to_string(),
        source.display().to_string(),
    ]
}

/// The fingerprint pass's library: logs every launch and saves the module images.
pub const FINGERPRINT_LIBRARY: InjectionLibrary = InjectionLibrary {
    name: "fingerprint",
    source_file: "inject.c",
    source: include_str!("inject.c"),
    library_file: "libpolyprof_fingerprint.so",
    compiler: Tool {
        program: "nvcc",
        what: "nvcc",
        missing: "nvcc is not on PATH: the fingerprint library is compiled with it (install the CUDA toolkit, or run without --profile-cache)",
    },
    sdk: CUPTI,
    compile_args: cupti_nvcc_args,
    load_env: |library, dir| {
        BTreeMap::from([
            (
                "CUDA_INJECTION64_PATH".to_string(),
                library.display().to_string(),
            ),
            (
                "POLYPROF_FINGERPRINT_DIR".to_string(),
                dir.display().to_string(),
            ),
        ])
    },
};

#[derive(Debug)]
pub struct NcuFingerprint;

impl FingerprintCapability for NcuFingerprint {
    fn library(&self) -> &'static InjectionLibrary {
        &FINGERPRINT_LIBRARY
    }

    fn is_launch_log(&self, file_name: &str) -> bool {
        file_name.starts_with("launches-") && file_name.ends_with(".tsv")
    }

    fn read_launch_log(
        &self,
        text: &str,
        image: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
    ) -> Result<ProcessLaunches, String> {
        Ok(resolve(&parse_log(text)?, image))
    }
}

#[derive(Debug)]
pub struct NcuProfileOnce;

impl ProfileOnceCapability for NcuProfileOnce {
    fn narrowed(
        &self,
        settings: &ProfilerSettings,
        symbols: &BTreeSet<String>,
        per_config: u64,
    ) -> Result<ProfilerSettings, String> {
        Ok(ProfilerSettings {
            ncu: narrowed_options(&settings.ncu, symbols, per_config)?,
            ..settings.clone()
        })
    }

    fn expected_profiled(
        &self,
        launches: &[LoggedLaunch],
        symbols: &BTreeSet<String>,
        per_config: u64,
    ) -> Vec<usize> {
        expected_profiled(launches, symbols, per_config)
    }

    fn assemble(
        &self,
        launches: &[LoggedLaunch],
        profiled: &[KernelRecord],
        expected: &[usize],
        hits: &BTreeMap<LaunchFingerprint, Hit>,
        keys: &BTreeMap<LaunchFingerprint, String>,
    ) -> Result<Assembly, String> {
        assemble(launches, profiled, expected, hits, keys)
    }

    fn clock_control(&self, settings: &ProfilerSettings) -> String {
        settings.ncu.clock_control.as_str().to_string()
    }

    fn metric_set(&self, settings: &ProfilerSettings) -> String {
        let ncu = &settings.ncu;
        match ncu.preset.ncu_set() {
            Some(set) => format!("set {set}"),
            None => {
                let mut names = ncu.metric_names();
                names.sort();
                let mut hasher = Sha256::new();
                hasher.update(names.join(",").as_bytes());
                format!("metrics {}", hex(&hasher.finalize()))
            }
        }
    }
}

#[derive(Debug)]
pub struct NcuCalibration;

impl CalibrationCapability for NcuCalibration {
    fn program(&self) -> &'static CalibrationProgram {
        &PROGRAM
    }

    fn duration_metric(&self) -> &'static str {
        DURATION
    }

    /// `HFMA2.MMA` instructions (which polyprof excludes from FP16 FLOPs) are counted where the
    /// metric is known to exist (Hopper); before Ada no FP8 counter (ncu would refuse the name).
    fn counter_metrics(
        &self,
        compute_capability: (u32, u32),
        precisions: &[TensorPrecision],
    ) -> Vec<String> {
        let mut metrics: Vec<&str> = vec![DURATION, DRAM_READ, DRAM_WRITE, SM_CLOCK, DRAM_CLOCK];
        metrics.extend(FP32_OPS.iter().chain(&FP16_OPS).chain(&FP64_OPS));
        for precision in precisions {
            let tensor = match precision {
                TensorPrecision::Fp16 => TENSOR_FP16_OPS,
                TensorPrecision::Bf16 => TENSOR_BF16_OPS,
                TensorPrecision::Tf32 => TENSOR_TF32_OPS,
                TensorPrecision::Fp8 => TENSOR_FP8_OPS,
            };
            if !metrics.contains(&tensor) {
                metrics.push(tensor);
            }
        }
        if compute_capability == (9, 0) {
            metrics.push(HFMA2_MMA_INST);
        }
        metrics.into_iter().map(str::to_string).collect()
    }

    /// `--clock-control none`, as the eval's passes run; `--cache-control all`, so the copy's
    /// reads come from DRAM.
    fn pass_settings(&self, metrics: Vec<String>) -> ProfilerSettings {
        ProfilerSettings {
            ncu: NcuOptions {
                preset: Preset::Metrics(metrics),
                clock_control: ClockControl::None,
                extra_args: vec!["--cache-control".into(), "all".into()],
                ..NcuOptions::default()
            },
            ..ProfilerSettings::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_library_finds_cupti_through_its_rpath_and_loads_through_cuda() {
        let sdk = SdkPaths {
            include: "/cuda/include".into(),
            lib: "/cuda/lib64".into(),
        };
        let args =
            (FINGERPRINT_LIBRARY.compile_args)(&sdk, Path::new("inject.c"), Path::new("lib.so"));
        assert!(args.contains(&"-rpath=/cuda/lib64".to_string()));
        assert!(args.contains(&"-shared".to_string()));
        let env = (FINGERPRINT_LIBRARY.load_env)(Path::new("/c/lib.so"), Path::new("/run/fp"));
        assert_eq!(env["CUDA_INJECTION64_PATH"], "/c/lib.so");
        assert_eq!(env["POLYPROF_FINGERPRINT_DIR"], "/run/fp");
        assert!(NcuFingerprint.is_launch_log("launches-123.tsv"));
        assert!(!NcuFingerprint.is_launch_log("cubin-00ab-10.bin"));
    }

    #[test]
    fn the_counters_pass_collects_what_the_checks_read_and_no_more() {
        use TensorPrecision::*;
        let hopper = NcuCalibration.counter_metrics((9, 0), &[Fp16, Bf16, Tf32, Fp8, Fp8]);
        for name in [
            DURATION,
            DRAM_READ,
            DRAM_WRITE,
            SM_CLOCK,
            DRAM_CLOCK,
            TENSOR_FP16_OPS,
            TENSOR_BF16_OPS,
            TENSOR_TF32_OPS,
            TENSOR_FP8_OPS,
            HFMA2_MMA_INST,
        ] {
            assert!(hopper.iter().any(|m| m == name), "{name}");
        }
        assert_eq!(hopper.len(), 5 + 9 + 4 + 1);
        let volta = NcuCalibration.counter_metrics((7, 0), &[]);
        assert_eq!(volta.len(), 5 + 9);
    }

    #[test]
    fn a_calibration_pass_runs_with_clocks_free_and_caches_flushed() {
        let settings = NcuCalibration.pass_settings(vec![DURATION.to_string()]);
        assert_eq!(settings.ncu.clock_control, ClockControl::None);
        assert_eq!(settings.ncu.extra_args, ["--cache-control", "all"]);
        assert_eq!(settings.ncu.validate().map_err(|e| e.to_string()), Ok(()));
    }
}
