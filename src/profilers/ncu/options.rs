//! Typed ncu options and the metric presets.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::model::error::{Error, Result};
pub use crate::model::verdict_metrics::{
    ALU_PIPE, DRAM_CLOCK, DRAM_SOL, FMA_PIPE, ISSUE_ACTIVE, LSU_PIPE, MEMORY_SOL, PIPE_LOADS,
    SM_CLOCK, TENSOR_PIPE,
};

/// Kernel duration (GPU time).
pub const DURATION: &str = "gpu__time_duration.sum";
pub const DRAM_READ: &str = "dram__bytes_read.sum";
pub const DRAM_WRITE: &str = "dram__bytes_write.sum";
pub const DRAM_TOTAL: &str = "dram__bytes.sum";
pub const ACHIEVED_OCCUPANCY: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";
pub const THEORETICAL_OCCUPANCY: &str = "sm__maximum_warps_per_active_cycle_pct";
/// The SM speed of light: read where present (ncu's sets, older runs, a user's list), but not
/// collected by the minimal preset, where it alone cost 9 of 16 replay passes on the H200;
/// [`PIPE_LOADS`] stand in for it there.
pub const SM_SOL: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
pub const REGISTERS: &str = "launch__registers_per_thread";
pub const SHARED_STATIC: &str = "launch__shared_mem_per_block_static";
pub const SHARED_DYNAMIC: &str = "launch__shared_mem_per_block_dynamic";
pub const GRID_SIZE: &str = "launch__grid_size";
pub const BLOCK_SIZE: &str = "launch__block_size";

/// SASS thread-instruction counters per precision: (add, mul, fma). FLOPs = add + mul + 2·fma,
/// twice that for FP16, whose instructions are packed pairs (see `fields::field_for_metric`).
pub const FP16_OPS: [&str; 3] = [
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
];
pub const FP32_OPS: [&str; 3] = [
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
];
pub const FP64_OPS: [&str; 3] = [
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
];

/// Tensor-core FLOPs per source precision (Hopper and Ampere-class; names from
/// `ncu --query-metrics --chip gh100`). Each counts math ops, 2 per multiply-add: a 4096³ bf16
/// matmul reads 137,438,953,472 = 2·4096³ (tests/fixtures/ncu-h200-tensor). bf16 and tf32 carry
/// a `_dst_fp32` suffix, the others do not.
pub const TENSOR_FP16_OPS: &str = "sm__ops_path_tensor_src_fp16.sum";
pub const TENSOR_BF16_OPS: &str = "sm__ops_path_tensor_src_bf16_dst_fp32.sum";
pub const TENSOR_TF32_OPS: &str = "sm__ops_path_tensor_src_tf32_dst_fp32.sum";
pub const TENSOR_FP8_OPS: &str = "sm__ops_path_tensor_src_fp8.sum";
pub const TENSOR_INT8_OPS: &str = "sm__ops_path_tensor_src_int8.sum";
pub const TENSOR_FP64_OPS: &str = "sm__ops_path_tensor_src_fp64.sum";
/// The tensor op counters in `fields::Field::TensorFlops` index order: fp16, bf16, tf32, fp8,
/// int8, fp64.
pub const TENSOR_OPS: [&str; 6] = [
    TENSOR_FP16_OPS,
    TENSOR_BF16_OPS,
    TENSOR_TF32_OPS,
    TENSOR_FP8_OPS,
    TENSOR_INT8_OPS,
    TENSOR_FP64_OPS,
];
/// `HFMA2.MMA` warp instructions: constant moves the compiler routes through the tensor pipe,
/// which the SASS FP16 FMA counter counts as FP16 math (see `FlopCounts::fp16_hfma2_mma`).
pub const HFMA2_MMA_INST: &str = "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum";

/// Tensor counters of the minimal preset that only some architectures have.
pub fn is_optional_metric(name: &str) -> bool {
    TENSOR_OPS.contains(&name) || name == HFMA2_MMA_INST || name == TENSOR_PIPE
}

/// SASS-instrumented counters (`smsp__sass_*`): ncu patches the kernel's code to count them,
/// which it cannot do in range replay, so `--graph-profiling graph` refuses them ("Metric … is
/// not supported in range replay", seen on the H200 with ncu 2025.3.1 for exactly these).
pub fn is_instrumented_metric(name: &str) -> bool {
    name.starts_with("smsp__sass_")
}

/// The `minimal` preset: exactly the metrics behind the normalized record's fields, chosen so
/// ncu needs as few replay passes as possible: 10 per launch on the H200 (`--set detailed`: 20),
/// of which the tensor op counters take 7 and the pipe loads 3 (scripts/gpu-preset-cost.sh).
pub const MINIMAL_METRICS: &[&str] = &[
    DURATION,
    DRAM_READ,
    DRAM_WRITE,
    ACHIEVED_OCCUPANCY,
    TENSOR_PIPE,
    FMA_PIPE,
    ALU_PIPE,
    LSU_PIPE,
    ISSUE_ACTIVE,
    DRAM_SOL,
    REGISTERS,
    SHARED_STATIC,
    SHARED_DYNAMIC,
    GRID_SIZE,
    BLOCK_SIZE,
    FP32_OPS[0],
    FP32_OPS[1],
    FP32_OPS[2],
    FP16_OPS[0],
    FP16_OPS[1],
    FP16_OPS[2],
    FP64_OPS[0],
    FP64_OPS[1],
    FP64_OPS[2],
    TENSOR_FP16_OPS,
    TENSOR_BF16_OPS,
    TENSOR_TF32_OPS,
    TENSOR_FP8_OPS,
    TENSOR_INT8_OPS,
    TENSOR_FP64_OPS,
    HFMA2_MMA_INST,
    SM_CLOCK,
    DRAM_CLOCK,
];

/// What to collect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Preset {
    /// [`MINIMAL_METRICS`] on the raw page (the default).
    #[default]
    Minimal,
    /// ncu's `basic` set (`--set basic`), details page with rule results.
    Basic,
    /// ncu's `detailed` set.
    Detailed,
    /// ncu's `full` set (many replay passes).
    Full,
    /// A list of metric names, checked against `ncu --query-metrics`.
    Metrics(Vec<String>),
}

impl Preset {
    /// ncu's own set name for `basic`/`detailed`/`full`.
    pub fn ncu_set(&self) -> Option<&'static str> {
        match self {
            Preset::Basic => Some("basic"),
            Preset::Detailed => Some("detailed"),
            Preset::Full => Some("full"),
            Preset::Minimal | Preset::Metrics(_) => None,
        }
    }

    /// Metric names passed with `--metrics` (empty for ncu's sets).
    pub fn metric_names(&self) -> Vec<String> {
        match self {
            Preset::Minimal => MINIMAL_METRICS.iter().map(|m| m.to_string()).collect(),
            Preset::Metrics(list) => list.clone(),
            _ => Vec::new(),
        }
    }

    /// Metrics the user asked for by name: missing from the output is an error naming them.
    /// The minimal preset's architecture-dependent tensor counters are left out: ncu ignores a
    /// name the GPU lacks (FP8 before Hopper), and a missing one must not fail the run.
    pub fn requested_metrics(&self) -> Vec<String> {
        match self {
            Preset::Minimal => MINIMAL_METRICS
                .iter()
                .filter(|m| !is_optional_metric(m))
                .map(|m| m.to_string())
                .collect(),
            _ => self.metric_names(),
        }
    }
}

impl FromStr for Preset {
    type Err = Error;

    /// `minimal`, `basic`, `detailed`, `full`, or a comma-separated metric list.
    fn from_str(text: &str) -> Result<Self> {
        match text.trim() {
            "minimal" => Ok(Preset::Minimal),
            "basic" => Ok(Preset::Basic),
            "detailed" => Ok(Preset::Detailed),
            "full" => Ok(Preset::Full),
            other => {
                let list = parse_metric_list(other)?;
                if list.len() == 1 && !looks_like_metric(&list[0]) {
                    return Err(Error::UnknownValue {
                        what: "ncu preset",
                        value: other.to_string(),
                        valid: "minimal, basic, detailed, full, or a comma-separated metric list"
                            .to_string(),
                    });
                }
                Ok(Preset::Metrics(list))
            }
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Preset::Minimal => f.write_str("minimal"),
            Preset::Basic => f.write_str("basic"),
            Preset::Detailed => f.write_str("detailed"),
            Preset::Full => f.write_str("full"),
            Preset::Metrics(list) => f.write_str(&list.join(",")),
        }
    }
}

/// A metric name has the `unit__counter` shape (`dram__bytes_read.sum`).
fn looks_like_metric(name: &str) -> bool {
    name.contains("__")
}

/// Split `a,b , c` into names; rejects empty and malformed names.
pub fn parse_metric_list(text: &str) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for name in text.split(',').map(str::trim) {
        if name.is_empty() {
            continue;
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
        {
            return Err(Error::invalid(
                "ncu metric",
                format!("`{name}` is not a metric name (letters, digits, `_`, `.` only)"),
            ));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    if names.is_empty() {
        return Err(Error::invalid("ncu metrics", "the metric list is empty"));
    }
    Ok(names)
}

/// `--target-processes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetProcesses {
    /// The program and all its children (pytest workers, multiprocessing).
    #[default]
    All,
    ApplicationOnly,
}

impl TargetProcesses {
    pub fn as_str(self) -> &'static str {
        match self {
            TargetProcesses::All => "all",
            TargetProcesses::ApplicationOnly => "application-only",
        }
    }
}

/// `--clock-control`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockControl {
    /// Lock clocks to base (ncu's default; comparable numbers across runs).
    #[default]
    Base,
    /// Leave clocks alone (needed on MIG; what the H200 fixtures used).
    None,
}

impl ClockControl {
    pub fn as_str(self) -> &'static str {
        match self {
            ClockControl::Base => "base",
            ClockControl::None => "none",
        }
    }
}

/// `--graph-profiling`: what one result is when the program launches CUDA graphs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GraphProfiling {
    /// Every kernel node is profiled as its own launch (ncu's default).
    #[default]
    Node,
    /// A whole graph launch is one result, profiled in range replay: the minimal preset then
    /// leaves out the SASS instruction counters ncu refuses there (vector FLOPs are not counted;
    /// tensor FLOPs, time, bytes and speed of light are).
    Graph,
}

impl GraphProfiling {
    pub fn as_str(self) -> &'static str {
        match self {
            GraphProfiling::Node => "node",
            GraphProfiling::Graph => "graph",
        }
    }
}

/// `--kernel-name-base`: what `-k` matches against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelNameBase {
    Function,
    Demangled,
    Mangled,
}

impl KernelNameBase {
    pub fn as_str(self) -> &'static str {
        match self {
            KernelNameBase::Function => "function",
            KernelNameBase::Demangled => "demangled",
            KernelNameBase::Mangled => "mangled",
        }
    }
}

/// Typed Nsight Compute options (CLI flags of `polyprof run --profiler ncu`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcuOptions {
    #[serde(default)]
    pub preset: Preset,
    #[serde(default)]
    pub target_processes: TargetProcesses,
    #[serde(default)]
    pub clock_control: ClockControl,
    /// `-k`: an exact name or `regex:…`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_name_base: Option<KernelNameBase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_skip: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_count: Option<u64>,
    /// `--nvtx`: record the NVTX ranges open at each launch (`KernelRecord::ranges`,
    /// `process_ranges`, `thread_id`); implied by `nvtx_include`.
    #[serde(default)]
    pub nvtx: bool,
    /// `--nvtx --nvtx-include X` for each entry (`regex:DOMAIN@.+/`, `range/`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvtx_include: Vec<String>,
    /// `--graph-profiling`: CUDA graph nodes one by one (default) or whole graphs.
    #[serde(default)]
    pub graph_profiling: GraphProfiling,
    /// Write `<out>/report.ncu-rep` (always on for `basic`/`detailed`/`full`, whose details page
    /// is exported from it).
    #[serde(default)]
    pub keep_report: bool,
    /// `--chip` for `--query-metrics` when checking metric names without a local GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chip: Option<String>,
    /// Skip the `--query-metrics` check of metric names before the run.
    #[serde(default)]
    pub skip_metric_check: bool,
    /// The ncu executable (default `ncu` on PATH).
    #[serde(default = "default_binary")]
    pub binary: String,
    /// Extra ncu arguments, verbatim, before the target (escape hatch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
}

fn default_binary() -> String {
    "ncu".to_string()
}

impl Default for NcuOptions {
    fn default() -> Self {
        NcuOptions {
            preset: Preset::default(),
            target_processes: TargetProcesses::default(),
            clock_control: ClockControl::default(),
            kernel_name: None,
            kernel_name_base: None,
            launch_skip: None,
            launch_count: None,
            nvtx: false,
            nvtx_include: Vec::new(),
            graph_profiling: GraphProfiling::default(),
            keep_report: false,
            chip: None,
            skip_metric_check: false,
            binary: default_binary(),
            extra_args: Vec::new(),
        }
    }
}

impl NcuOptions {
    /// Whole graphs are profiled in range replay: `--graph-profiling graph`, as the typed
    /// option or passed through `--ncu-arg`.
    pub fn range_replay(&self) -> bool {
        if self.graph_profiling == GraphProfiling::Graph {
            return true;
        }
        let args = &self.extra_args;
        args.iter().enumerate().any(|(i, arg)| {
            arg == "--graph-profiling=graph"
                || (arg == "--graph-profiling" && args.get(i + 1).is_some_and(|v| v == "graph"))
        })
    }

    /// The metrics passed with `--metrics`: the preset's, without the counters range replay
    /// refuses when whole graphs are profiled (minimal preset only; a user's list is checked by
    /// [`NcuOptions::validate`]).
    pub fn metric_names(&self) -> Vec<String> {
        let names = self.preset.metric_names();
        if self.preset == Preset::Minimal && self.range_replay() {
            names
                .into_iter()
                .filter(|m| !is_instrumented_metric(m))
                .collect()
        } else {
            names
        }
    }

    /// The metrics that must be in the output (see [`Preset::requested_metrics`]), for this
    /// replay mode. A whole-graph result has no one launch configuration (on the H200 ncu gave
    /// it one node's grid and block but no shared memory), so `launch__*` is not required there.
    pub fn requested_metrics(&self) -> Vec<String> {
        let names = self.preset.requested_metrics();
        if self.preset == Preset::Minimal && self.range_replay() {
            names
                .into_iter()
                .filter(|m| !is_instrumented_metric(m) && !m.starts_with("launch__"))
                .collect()
        } else {
            names
        }
    }

    /// Reject option combinations ncu would fail on, before anything runs.
    pub fn validate(&self) -> Result<()> {
        if self.binary.trim().is_empty() {
            return Err(Error::invalid(
                "ncu binary",
                "the ncu executable name is empty",
            ));
        }
        if let Preset::Metrics(list) = &self.preset {
            if list.is_empty() {
                return Err(Error::invalid("ncu metrics", "the metric list is empty"));
            }
            parse_metric_list(&list.join(","))?;
            let refused: Vec<&str> = list
                .iter()
                .map(String::as_str)
                .filter(|m| is_instrumented_metric(m))
                .collect();
            if self.range_replay() && !refused.is_empty() {
                return Err(Error::invalid(
                    "ncu metrics",
                    format!(
                        "ncu cannot collect SASS-instrumented metrics ({}) when it profiles whole \
                         graphs (--graph-profiling graph, range replay); leave them out, or \
                         profile graph nodes one by one (--graph-profiling node)",
                        refused.join(", ")
                    ),
                ));
            }
        }
        if let Some(name) = &self.kernel_name {
            if name.trim().is_empty() {
                return Err(Error::invalid(
                    "ncu kernel filter",
                    "the kernel name is empty",
                ));
            }
            if let Some(pattern) = name.strip_prefix("regex:") {
                regex::Regex::new(pattern).map_err(|e| {
                    Error::invalid(
                        "ncu kernel filter",
                        format!("`{pattern}` is not a valid regex: {e}"),
                    )
                })?;
            }
        }
        if self.launch_count == Some(0) {
            return Err(Error::invalid(
                "ncu launch count",
                "--launch-count 0 would profile nothing; give at least 1",
            ));
        }
        if self.nvtx_include.iter().any(|n| n.trim().is_empty()) {
            return Err(Error::invalid(
                "ncu NVTX filter",
                "an NVTX include is empty",
            ));
        }
        Ok(())
    }

    /// ncu gets `--nvtx`: asked for, implied by an NVTX filter, or already among the extra
    /// arguments (where it is left, since ncu refuses an option given twice).
    pub fn records_nvtx(&self) -> bool {
        self.nvtx || !self.nvtx_include.is_empty() || self.extra_args.iter().any(|a| a == "--nvtx")
    }

    /// A report is written when asked, and always for ncu's sets (the details page comes from it).
    pub fn writes_report(&self) -> bool {
        self.keep_report || self.preset.ncu_set().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse_and_print() {
        for text in ["minimal", "basic", "detailed", "full"] {
            assert_eq!(text.parse::<Preset>().unwrap().to_string(), text);
        }
        let list: Preset = "gpu__time_duration.sum, dram__bytes.sum,gpu__time_duration.sum"
            .parse()
            .unwrap();
        assert_eq!(
            list,
            Preset::Metrics(vec![
                "gpu__time_duration.sum".into(),
                "dram__bytes.sum".into()
            ])
        );
        let err = "fast".parse::<Preset>().unwrap_err().to_string();
        assert!(err.contains("minimal, basic, detailed, full"), "{err}");
        assert!("a b".parse::<Preset>().is_err());
        assert!(",".parse::<Preset>().is_err());
    }

    #[test]
    fn minimal_preset_covers_every_record_field() {
        // Every name must have the `unit__counter` shape and appear once.
        let mut names: Vec<&str> = MINIMAL_METRICS.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), MINIMAL_METRICS.len());
        for ops in [FP16_OPS, FP32_OPS, FP64_OPS] {
            for op in ops {
                assert!(MINIMAL_METRICS.contains(&op), "{op}");
            }
        }
        for name in TENSOR_OPS.iter().chain(PIPE_LOADS.iter()).chain([
            &HFMA2_MMA_INST,
            &SM_CLOCK,
            &DRAM_CLOCK,
        ]) {
            assert!(MINIMAL_METRICS.contains(name), "{name}");
        }
        // The SM speed of light's 9 passes are left to the sets.
        assert!(!MINIMAL_METRICS.contains(&SM_SOL));
    }

    #[test]
    fn validation_rejects_what_ncu_would_fail_on() {
        let bad_regex = NcuOptions {
            kernel_name: Some("regex:(".into()),
            ..Default::default()
        };
        assert!(bad_regex.validate().is_err());
        let zero = NcuOptions {
            launch_count: Some(0),
            ..Default::default()
        };
        assert!(zero.validate().is_err());
        assert!(NcuOptions::default().validate().is_ok());
        assert!(!NcuOptions::default().writes_report());
        let detailed = NcuOptions {
            preset: Preset::Detailed,
            ..Default::default()
        };
        assert!(detailed.writes_report());
    }
}
