//! The Metal runtime lane: device limits, compile, bind, dispatch and time kernels with
//! command-buffer GPU timestamps.
//!
//! The Metal calls live in `macos.rs` and build only on macOS. Everything a user can get wrong
//! (buffer specs, repeat/warm-up counts, capture paths, threadgroup sweeps) is checked here, in
//! platform-independent code, so it is tested on every system.

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::{
    PreparedKernel, benchmark_kernel, caps, prepare, profile_kernel, run, with_capture,
};

use std::str::FromStr;

use serde::Serialize;

use crate::model::error::{Error, Result};
use crate::results::benchmark::KernelBenchmark;
use crate::results::callpath::{KernelLaunch, record_kernel};

/// Why the runtime lane cannot run on this system, for systems other than macOS.
pub const NOT_MACOS: &str = "Metal needs macOS with Xcode's command-line tools \
    (install them with `xcode-select --install`); this system is not macOS. \
    `polyprof metal analyze` works here";

/// Threadgroup sizes `--sweep-tg` tries.
pub const SWEEP_SIZES: [u64; 5] = [64, 128, 256, 512, 1024];
/// Default timed calls and warm-ups of `benchmark_kernel` (macOS).
pub const DEFAULT_REPEAT: i64 = 100;
pub const DEFAULT_WARMUP: i64 = 10;
/// Environment variable Metal requires before it captures outside Xcode.
pub const CAPTURE_ENV: &str = "MTL_CAPTURE_ENABLED";

/// `Some(reason)` when the runtime lane cannot run here.
pub fn unavailable_reason() -> Option<String> {
    #[cfg(target_os = "macos")]
    {
        macos::unavailable_reason()
    }
    #[cfg(not(target_os = "macos"))]
    {
        Some(NOT_MACOS.to_string())
    }
}

fn invalid(what: &str, message: impl Into<String>) -> Error {
    Error::InvalidArgument {
        what: what.to_string(),
        message: message.into(),
    }
}

/// Element type of a bound buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Element {
    F32,
    F16,
    I32,
    U32,
    U64,
}

impl Element {
    pub fn size(self) -> usize {
        match self {
            Element::F16 => 2,
            Element::F32 | Element::I32 | Element::U32 => 4,
            Element::U64 => 8,
        }
    }
}

/// One buffer to bind: `f32:1024` is 1024 floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BufferSpec {
    pub element: Element,
    pub count: usize,
}

impl BufferSpec {
    pub fn bytes(&self) -> usize {
        self.element.size() * self.count
    }
}

impl FromStr for BufferSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<BufferSpec> {
        let what = "buffer spec";
        let (ty, count) = s
            .split_once(':')
            .ok_or_else(|| invalid(what, format!("`{s}` is not TYPE:COUNT, e.g. f32:1024")))?;
        let element = match ty.trim() {
            "f32" | "float" => Element::F32,
            "f16" | "half" => Element::F16,
            "i32" | "int" => Element::I32,
            "u32" | "uint" => Element::U32,
            "u64" | "ulong" => Element::U64,
            other => {
                return Err(invalid(
                    what,
                    format!(
                        "unknown element type `{other}` in `{s}`; use f32, f16, i32, u32 or u64"
                    ),
                ));
            }
        };
        let count: usize = count.trim().parse().map_err(|_| {
            invalid(
                what,
                format!("`{count}` in `{s}` is not a positive element count"),
            )
        })?;
        if count == 0 {
            return Err(invalid(
                what,
                format!("`{s}` has no elements; give a count ≥ 1"),
            ));
        }
        Ok(BufferSpec { element, count })
    }
}

/// Parses `f32:N,u32:M,…`.
pub fn parse_buffers(list: &str) -> Result<Vec<BufferSpec>> {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(BufferSpec::from_str)
        .collect()
}

/// Deterministic contents of buffer `index`: buffer 0 (the conventional output) is zero, the
/// others come from a fixed LCG, so two runs see the same data.
pub fn fill_bytes(spec: &BufferSpec, index: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(spec.bytes());
    if index == 0 {
        out.resize(spec.bytes(), 0);
        return out;
    }
    let mut state: u32 = 0x9e37_79b9u32.wrapping_mul(index as u32 + 1);
    for _ in 0..spec.count {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let unit = (state >> 8) as f32 / (1u32 << 24) as f32;
        match spec.element {
            Element::F32 => out.extend_from_slice(&unit.to_le_bytes()),
            Element::F16 => out.extend_from_slice(&f32_to_f16_bits(unit).to_le_bytes()),
            Element::I32 => out.extend_from_slice(&((state >> 16) as i32).to_le_bytes()),
            Element::U32 => out.extend_from_slice(&(state >> 16).to_le_bytes()),
            Element::U64 => out.extend_from_slice(&((state >> 16) as u64).to_le_bytes()),
        }
    }
    out
}

/// IEEE half bits of a value in [0, 1) (all the fill produces); no rounding subtleties needed.
fn f32_to_f16_bits(v: f32) -> u16 {
    if v <= 0.0 {
        return 0;
    }
    let bits = v.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    if exp <= 0 {
        return 0;
    }
    ((exp as u16) << 10) | ((bits >> 13) & 0x3ff) as u16
}

/// Timed calls and warm-ups, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub repeat: usize,
    pub warmup: usize,
}

/// `repeat` < 1 and `warmup` < 0 are errors (not clamped), so a typo never yields a
/// benchmark of zero calls.
pub fn validate_counts(repeat: i64, warmup: i64) -> Result<Counts> {
    if repeat < 1 {
        return Err(invalid(
            "repeat",
            format!("{repeat} timed calls; give at least 1 (the default is {DEFAULT_REPEAT})"),
        ));
    }
    if warmup < 0 {
        return Err(invalid(
            "warmup",
            format!("{warmup} warm-up calls; give 0 or more (the default is {DEFAULT_WARMUP})"),
        ));
    }
    Ok(Counts {
        repeat: repeat as usize,
        warmup: warmup as usize,
    })
}

/// A grid or threadgroup size, 1–3 dimensions (`1024`, `64x64`, `8,8,4`).
pub fn parse_size(what: &str, text: &str) -> Result<[u64; 3]> {
    let parts: Vec<&str> = text.split(['x', 'X', ',']).map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(invalid(what, format!("`{text}` is not N, NxM or NxMxK")));
    }
    let mut size = [1u64; 3];
    for (slot, part) in size.iter_mut().zip(&parts) {
        *slot = part
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| invalid(what, format!("`{part}` in `{text}` is not a count ≥ 1")))?;
    }
    Ok(size)
}

/// The sweep sizes a pipeline accepts (capped by its `maxTotalThreadsPerThreadgroup`).
pub fn sweep_sizes(pipeline_max: u64) -> Vec<u64> {
    SWEEP_SIZES
        .iter()
        .copied()
        .filter(|tg| *tg <= pipeline_max)
        .collect()
}

/// A capture needs a `.gputrace` path that does not exist yet and `MTL_CAPTURE_ENABLED=1`.
pub fn validate_capture(path: &str, path_exists: bool, env_value: Option<&str>) -> Result<()> {
    if !path.ends_with(".gputrace") {
        return Err(invalid(
            "capture path",
            format!("`{path}` must end in .gputrace (Xcode opens only that bundle type)"),
        ));
    }
    if path_exists {
        return Err(invalid(
            "capture path",
            format!(
                "`{path}` already exists; Metal will not overwrite it, remove it or pick another"
            ),
        ));
    }
    if env_value != Some("1") {
        return Err(invalid(
            "capture",
            format!(
                "Metal captures outside Xcode only with {CAPTURE_ENV}=1 in the environment; \
                     rerun as `{CAPTURE_ENV}=1 polyprof metal run … --capture {path}`"
            ),
        ));
    }
    Ok(())
}

/// Builds a [`KernelBenchmark`] from per-call command-buffer `(GPUStartTime, GPUEndTime)`
/// pairs in seconds. A zero or reversed pair (the command buffer never ran) is an error.
pub fn benchmark_from_gpu_times(
    name: &str,
    gpu_times_s: &[(f64, f64)],
    flops: Option<f64>,
    bytes_moved: Option<f64>,
) -> Result<KernelBenchmark> {
    let mut samples_ms = Vec::with_capacity(gpu_times_s.len());
    for (call, &(start, end)) in gpu_times_s.iter().enumerate() {
        if !(start > 0.0 && end >= start) {
            return Err(Error::ProfilerFailed {
                profiler: "metal".to_string(),
                message: format!(
                    "call {call} of `{name}` has GPU start {start} s and end {end} s; the command \
                     buffer did not complete (check its error status)"
                ),
            });
        }
        samples_ms.push((end - start) * 1e3);
    }
    KernelBenchmark::new(name, samples_ms, flops, bytes_moved).map_err(|e| Error::InvalidArgument {
        what: "benchmark".to_string(),
        message: e.to_string(),
    })
}

/// The call-path events of timed calls: one [`KernelLaunch`] per call, GPU time from the
/// command buffer, start relative to the first timed call (command-buffer times are on the
/// host's mach clock, not the session's). `flops` (precision unknown) goes to the `flops`
/// metric rather than a precision bucket.
pub fn kernel_launches(
    name: &str,
    device: &str,
    grid: [u64; 3],
    threads: [u64; 3],
    gpu_times_s: &[(f64, f64)],
    flops: Option<f64>,
    bytes_moved: Option<f64>,
) -> Vec<KernelLaunch> {
    let origin = gpu_times_s.first().map_or(0.0, |t| t.0);
    gpu_times_s
        .iter()
        .map(|&(start, end)| {
            let mut launch = KernelLaunch {
                name: name.to_string(),
                gpu_time_ns: Some((end - start) * 1e9),
                gpu_start_ns: Some((start - origin) * 1e9),
                device: Some(device.to_string()),
                stream: Some("metal command queue".to_string()),
                grid: Some(grid),
                block: Some(threads),
                bytes: bytes_moved,
                ..KernelLaunch::default()
            };
            if let Some(f) = flops {
                launch.metrics.insert("flops".to_string(), f);
            }
            launch
        })
        .collect()
}

/// Records launches into the active call-path session (nothing when none is active), under
/// whatever scope is open, so `key_averages`, `tree` and the exports see them.
pub fn record_launches(launches: Vec<KernelLaunch>) {
    for launch in launches {
        record_kernel(|| launch);
    }
}

/// Device limits (`polyprof metal caps`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Caps {
    pub device: String,
    pub unified_memory: bool,
    pub max_threadgroup_memory_bytes: u64,
    pub max_threads_per_threadgroup: [u64; 3],
    pub recommended_working_set_bytes: u64,
    pub counter_sampling_stage_boundary: bool,
    pub counter_sampling_dispatch_boundary: bool,
}

/// Pipeline reflection of a compiled kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineInfo {
    pub max_total_threads_per_threadgroup: u64,
    pub thread_execution_width: u64,
    pub static_threadgroup_memory_bytes: u64,
}

/// What `polyprof metal run` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// MSL source text.
    pub source: String,
    pub entry: String,
    pub grid: [u64; 3],
    pub threadgroup: [u64; 3],
    pub buffers: Vec<BufferSpec>,
    pub repeat: i64,
    pub warmup: i64,
    pub flops: Option<f64>,
    pub bytes_moved: Option<f64>,
    /// Also time every size of [`SWEEP_SIZES`] the pipeline accepts.
    pub sweep: bool,
}

/// One threadgroup size's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    pub threadgroup: u64,
    pub benchmark: KernelBenchmark,
}

/// Result of `polyprof metal run`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    pub device: String,
    pub entry: String,
    pub grid: [u64; 3],
    /// The threadgroup actually dispatched (capped by the pipeline).
    pub threadgroup: [u64; 3],
    pub clock: &'static str,
    pub pipeline: PipelineInfo,
    pub benchmark: KernelBenchmark,
    pub sweep: Vec<SweepPoint>,
    /// Index into `sweep` of the lowest median.
    pub best_sweep: Option<usize>,
    pub warnings: Vec<String>,
}

/// The clock every runtime-lane time comes from.
pub const CLOCK: &str =
    "MTLCommandBuffer GPUEndTime - GPUStartTime (one dispatch per command buffer)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_below_one_and_negative_warmup_are_errors() {
        assert_eq!(
            validate_counts(100, 10).unwrap(),
            Counts {
                repeat: 100,
                warmup: 10
            }
        );
        assert_eq!(
            validate_counts(1, 0).unwrap(),
            Counts {
                repeat: 1,
                warmup: 0
            }
        );
        let e = validate_counts(0, 10).unwrap_err().to_string();
        assert!(e.contains("repeat") && e.contains("at least 1"), "{e}");
        assert!(validate_counts(-5, 10).is_err());
        let e = validate_counts(10, -1).unwrap_err().to_string();
        assert!(e.contains("warmup") && e.contains("0 or more"), "{e}");
    }

    #[test]
    fn buffer_specs() {
        let b = parse_buffers("f32:1024, u32:16,u64:2").unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!(
            (b[0].element, b[0].count, b[0].bytes()),
            (Element::F32, 1024, 4096)
        );
        assert_eq!(b[2].bytes(), 16);
        for bad in ["f32", "f64:3", "f32:0", "f32:-1", "f32:x"] {
            assert!(parse_buffers(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fill_is_deterministic_and_output_is_zero() {
        let spec = BufferSpec {
            element: Element::F32,
            count: 64,
        };
        assert!(fill_bytes(&spec, 0).iter().all(|b| *b == 0));
        let a = fill_bytes(&spec, 1);
        assert_eq!(a, fill_bytes(&spec, 1));
        assert_ne!(a, fill_bytes(&spec, 2));
        assert_eq!(a.len(), 256);
        let floats: Vec<f32> = a
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert!(floats.iter().all(|f| (0.0..1.0).contains(f)));
        let half = BufferSpec {
            element: Element::F16,
            count: 8,
        };
        assert_eq!(fill_bytes(&half, 3).len(), 16);
        assert_eq!(f32_to_f16_bits(0.5), 0x3800);
    }

    #[test]
    fn sizes_and_sweep() {
        assert_eq!(parse_size("grid", "1024").unwrap(), [1024, 1, 1]);
        assert_eq!(parse_size("grid", "64x32").unwrap(), [64, 32, 1]);
        assert_eq!(parse_size("tg", "8,8,4").unwrap(), [8, 8, 4]);
        assert!(parse_size("tg", "0").is_err());
        assert!(parse_size("tg", "1x2x3x4").is_err());
        assert_eq!(sweep_sizes(1024), SWEEP_SIZES);
        assert_eq!(sweep_sizes(384), [64, 128, 256]);
    }

    #[test]
    fn capture_rules() {
        assert!(validate_capture("run.gputrace", false, Some("1")).is_ok());
        let e = validate_capture("run.trace", false, Some("1"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(".gputrace"), "{e}");
        let e = validate_capture("run.gputrace", false, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("MTL_CAPTURE_ENABLED=1"), "{e}");
        assert!(validate_capture("run.gputrace", false, Some("0")).is_err());
        assert!(validate_capture("run.gputrace", true, Some("1")).is_err());
    }

    #[test]
    fn gpu_times_become_a_benchmark() {
        let b = benchmark_from_gpu_times(
            "k",
            &[(1.0, 1.002), (2.0, 2.001), (3.0, 3.003)],
            Some(2e6),
            None,
        )
        .unwrap();
        assert_eq!(b.calls, 3);
        assert!((b.stats.median - 2.0).abs() < 1e-6);
        assert!((b.gflops_per_s.unwrap() - 1.0).abs() < 1e-6);
        assert!(benchmark_from_gpu_times("k", &[(0.0, 0.0)], None, None).is_err());
        assert!(benchmark_from_gpu_times("k", &[(2.0, 1.0)], None, None).is_err());
        assert!(benchmark_from_gpu_times("k", &[], None, None).is_err());
    }

    #[cfg(not(target_os = "macos"))]
    #[test]
    fn elsewhere_the_lane_says_it_needs_macos() {
        let reason = unavailable_reason().unwrap();
        assert!(
            reason.contains("macOS")
                && reason.contains("Xcode")
                && reason.contains("metal analyze")
        );
    }
}
