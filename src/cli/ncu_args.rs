//! Nsight Compute flags of `polyprof run --profiler ncu`, flattened into `run`'s arguments.

use polyprof::profilers::ncu::{
    ClockControl, GraphProfiling, KernelNameBase, NcuOptions, Preset, TargetProcesses,
};

fn parse_preset(text: &str) -> Result<Preset, String> {
    text.parse::<Preset>().map_err(|e| e.to_string())
}

/// A comma-separated metric list as one flag value (clap would read a bare `Vec` as repeats).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricList(pub Vec<String>);

fn parse_metrics(text: &str) -> Result<MetricList, String> {
    polyprof::profilers::ncu::options::parse_metric_list(text)
        .map(MetricList)
        .map_err(|e| e.to_string())
}

/// ncu options; the defaults give the `minimal` preset with ncu's own defaults otherwise.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Nsight Compute (--profiler ncu)")]
pub struct NcuArgs {
    /// Metric preset: minimal (default; duration, DRAM bytes, occupancy, SOL %, launch config,
    /// FP16/32/64 instruction counts), or ncu's sets basic, detailed, full.
    #[arg(long, value_name = "PRESET", value_parser = parse_preset, conflicts_with = "metrics")]
    pub preset: Option<Preset>,
    /// Collect exactly these metrics (comma-separated ncu names), checked against
    /// `ncu --query-metrics` before the run.
    #[arg(long, value_name = "A,B,...", value_parser = parse_metrics)]
    pub metrics: Option<MetricList>,
    /// Profile the program only, or it and all its child processes.
    #[arg(long, value_name = "WHICH", value_parser = ["all", "application-only"], default_value = "all")]
    pub target_processes: String,
    /// Lock GPU clocks to base (comparable numbers) or leave them alone (needed on MIG)
    /// [default: `clock_control` of the configuration (`polyprof config`), else base].
    #[arg(long, value_name = "MODE", value_parser = ["base", "none"])]
    pub clock_control: Option<String>,
    /// Only kernels with this name; `regex:PATTERN` matches a substring (ncu's `-k`).
    #[arg(long = "kernel", value_name = "NAME|regex:RE")]
    pub kernel: Option<String>,
    /// What `--kernel` matches: function (no templates), demangled or mangled names.
    #[arg(long, value_name = "BASE", value_parser = ["function", "demangled", "mangled"])]
    pub kernel_name_base: Option<String>,
    /// Skip this many matching launches before profiling.
    #[arg(long, value_name = "N")]
    pub launch_skip: Option<u64>,
    /// Profile at most this many matching launches.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub launch_count: Option<u64>,
    /// Record the NVTX ranges open at each launch (ncu's `--nvtx`): the record's `ranges`
    /// (the launching thread's push/pop ranges), `process_ranges` and `thread_id`.
    #[arg(long)]
    pub nvtx: bool,
    /// Only kernels inside matching NVTX ranges (`regex:DOMAIN@.+/`); repeatable; implies --nvtx.
    #[arg(long, value_name = "FILTER")]
    pub nvtx_include: Vec<String>,
    /// CUDA graphs: profile each kernel node (node) or each whole graph launch as one result
    /// (graph; range replay, where the minimal preset leaves out the SASS FLOP counters).
    #[arg(long, value_name = "MODE", value_parser = ["node", "graph"], default_value = "node")]
    pub graph_profiling: String,
    /// Also write `report.ncu-rep` into the output directory (always on for basic/detailed/full).
    #[arg(long)]
    pub keep_report: bool,
    /// Chip for the metric-name check when no GPU is visible here (e.g. gh100).
    #[arg(long = "ncu-chip", value_name = "CHIP")]
    pub chip: Option<String>,
    /// Do not check metric names with `ncu --query-metrics` before the run.
    #[arg(long)]
    pub skip_metric_check: bool,
    /// The ncu executable.
    #[arg(long = "ncu-binary", value_name = "PATH", default_value = "ncu")]
    pub binary: String,
    /// Extra ncu argument, passed verbatim before the target; repeatable (escape hatch).
    #[arg(long = "ncu-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub extra: Vec<String>,
}

impl NcuArgs {
    pub fn to_options(&self) -> NcuOptions {
        let preset = match (&self.metrics, &self.preset) {
            (Some(list), _) => Preset::Metrics(list.0.clone()),
            (None, Some(preset)) => preset.clone(),
            (None, None) => Preset::Minimal,
        };
        NcuOptions {
            preset,
            target_processes: match self.target_processes.as_str() {
                "application-only" => TargetProcesses::ApplicationOnly,
                _ => TargetProcesses::All,
            },
            clock_control: match self.clock_control.as_deref() {
                Some("none") => ClockControl::None,
                _ => ClockControl::Base,
            },
            kernel_name: self.kernel.clone(),
            kernel_name_base: self.kernel_name_base.as_deref().map(|b| match b {
                "demangled" => KernelNameBase::Demangled,
                "mangled" => KernelNameBase::Mangled,
                _ => KernelNameBase::Function,
            }),
            launch_skip: self.launch_skip,
            launch_count: self.launch_count,
            nvtx: self.nvtx,
            nvtx_include: self.nvtx_include.clone(),
            graph_profiling: match self.graph_profiling.as_str() {
                "graph" => GraphProfiling::Graph,
                _ => GraphProfiling::Node,
            },
            keep_report: self.keep_report,
            chip: self.chip.clone(),
            skip_metric_check: self.skip_metric_check,
            binary: self.binary.clone(),
            extra_args: self.extra.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Probe {
        #[command(flatten)]
        ncu: NcuArgs,
    }

    #[test]
    fn flags_map_to_options() {
        let probe = Probe::try_parse_from([
            "x",
            "--metrics",
            "gpu__time_duration.sum,dram__bytes.sum",
            "--clock-control",
            "none",
            "--kernel",
            "regex:matmul",
            "--launch-count",
            "2",
            "--nvtx-include",
            "regex:a@.+/",
            "--ncu-arg",
            "--cache-control",
            "--ncu-arg",
            "none",
        ])
        .unwrap();
        let options = probe.ncu.to_options();
        assert_eq!(
            options.preset,
            Preset::Metrics(vec![
                "gpu__time_duration.sum".into(),
                "dram__bytes.sum".into()
            ])
        );
        assert_eq!(options.clock_control, ClockControl::None);
        assert_eq!(options.kernel_name.as_deref(), Some("regex:matmul"));
        assert_eq!(options.launch_count, Some(2));
        assert_eq!(options.extra_args, ["--cache-control", "none"]);
        assert!(!options.nvtx && options.records_nvtx());
        let nvtx = Probe::try_parse_from(["x", "--nvtx"])
            .unwrap()
            .ncu
            .to_options();
        assert!(nvtx.nvtx && nvtx.nvtx_include.is_empty());
        assert!(options.validate().is_ok());
        let defaults = Probe::try_parse_from(["x"]).unwrap().ncu.to_options();
        assert_eq!(defaults, NcuOptions::default());
        assert!(Probe::try_parse_from(["x", "--preset", "fast"]).is_err());
        assert!(Probe::try_parse_from(["x", "--launch-count", "0"]).is_err());
        assert!(Probe::try_parse_from(["x", "--preset", "full", "--metrics", "a__b"]).is_err());
    }
}
