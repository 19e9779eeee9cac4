//! The ncu plan: one profiling step, then (when a report is written) export steps that read the
//! report back without a GPU.

use crate::model::arg::Arg;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::options::NcuOptions;
use crate::model::error::{Error, Result};
use crate::model::plan::{CommandSpec, EndMarker, Graces, Plan, Step};

/// ncu's own messages and, without a report, its CSV.
pub const LOG_FILE: &str = "ncu.log";
/// `-o` target without the extension ncu adds.
pub const REPORT_STEM: &str = "report";
pub const REPORT_FILE: &str = "report.ncu-rep";
/// Exports of the report (stdout of the import steps).
pub const RAW_FILE: &str = "raw.csv";
pub const DETAILS_FILE: &str = "details.csv";
pub const SESSION_FILE: &str = "session.csv";

/// Graces of the profiling step. ncu writes its CSV after the program's last line (the pytest
/// summary comes before the whole CSV), so the marker grace is long; on SIGTERM ncu still writes
/// what it profiled (fixture `hang_after_summary_sigterm_log.csv`), so the kill grace gives it
/// several seconds.
pub const PROFILE_GRACES: Graces = Graces {
    marker_grace: Duration::from_secs(30),
    kill_grace: Duration::from_secs(10),
};

/// Graces of the export steps (`ncu --import`, about a second each, no program involved).
pub const EXPORT_GRACES: Graces = Graces {
    marker_grace: Duration::from_secs(5),
    kill_grace: Duration::from_secs(5),
};

/// `LC_ALL=C` so ncu never localizes numbers (a European locale swaps `.` and `,`).
pub fn ncu_env() -> BTreeMap<String, String> {
    BTreeMap::from([("LC_ALL".to_string(), "C".to_string())])
}

fn path_arg(dir: &Path, name: &str) -> Result<String> {
    let path = dir.join(name);
    path.to_str().map(str::to_string).ok_or_else(|| {
        Error::invalid(
            "output directory",
            format!(
                "`{}` is not valid UTF-8; ncu needs a UTF-8 path",
                path.display()
            ),
        )
    })
}

/// The profiling argv: `ncu --log-file … --csv --page raw --print-units base … -- target…`.
pub fn profile_argv(options: &NcuOptions, output_dir: &Path, target: &[Arg]) -> Result<Vec<Arg>> {
    let mut argv = vec![
        options.binary.clone(),
        "--log-file".to_string(),
        path_arg(output_dir, LOG_FILE)?,
        "--csv".to_string(),
        "--page".to_string(),
        "raw".to_string(),
        "--print-units".to_string(),
        "base".to_string(),
    ];
    if let Some(set) = options.preset.ncu_set() {
        argv.extend(["--set".to_string(), set.to_string()]);
    } else {
        argv.extend(["--metrics".to_string(), options.metric_names().join(",")]);
    }
    if options.graph_profiling == super::options::GraphProfiling::Graph {
        argv.extend(["--graph-profiling".to_string(), "graph".to_string()]);
    }
    argv.extend([
        "--target-processes".to_string(),
        options.target_processes.as_str().to_string(),
        "--clock-control".to_string(),
        options.clock_control.as_str().to_string(),
    ]);
    // polyprof's short names (`matmul_tiled<32>`) become a demangled-name match.
    let filter = options
        .kernel_name
        .as_deref()
        .map(|name| super::kernel_filter::ncu_kernel_filter(name, options.kernel_name_base));
    let base = filter
        .as_ref()
        .map_or(options.kernel_name_base, |(base, _)| *base);
    if let Some(base) = base {
        argv.extend(["--kernel-name-base".to_string(), base.as_str().to_string()]);
    }
    if let Some((_, name)) = filter {
        argv.extend(["-k".to_string(), name]);
    }
    if let Some(skip) = options.launch_skip {
        argv.extend(["--launch-skip".to_string(), skip.to_string()]);
    }
    if let Some(count) = options.launch_count {
        argv.extend(["--launch-count".to_string(), count.to_string()]);
    }
    // Once only: ncu refuses an option given twice, and `--ncu-arg --nvtx` already gives it.
    if options.records_nvtx() && !options.extra_args.iter().any(|a| a == "--nvtx") {
        argv.push("--nvtx".to_string());
    }
    if !options.nvtx_include.is_empty() {
        for include in &options.nvtx_include {
            argv.extend(["--nvtx-include".to_string(), include.clone()]);
        }
    }
    argv.extend(print_kernel_base(options));
    argv.extend(options.extra_args.iter().cloned());
    if options.writes_report() {
        argv.extend([
            "-o".to_string(),
            path_arg(output_dir, REPORT_STEM)?,
            "-f".to_string(),
        ]);
    }
    argv.push("--".to_string());
    let mut argv = crate::model::arg::args(argv);
    argv.extend(target.iter().cloned());
    Ok(argv)
}

/// `--print-kernel-base mangled`: the same name bytes in every run, filtered or not, which
/// polyprof demangles itself (see `names.rs`); left out when the user chose a base through
/// `--ncu-arg` (ncu refuses an option given twice).
fn print_kernel_base(options: &NcuOptions) -> Vec<String> {
    let chosen = options
        .extra_args
        .iter()
        .any(|arg| arg == "--print-kernel-base" || arg.starts_with("--print-kernel-base="));
    if chosen {
        Vec::new()
    } else {
        vec!["--print-kernel-base".to_string(), "mangled".to_string()]
    }
}

/// `ncu --import <out>/report.ncu-rep --csv --page PAGE [--print-units base]`.
fn export_step(options: &NcuOptions, output_dir: &Path, page: &str, file: &str) -> Result<Step> {
    let mut argv = vec![
        options.binary.clone(),
        "--import".to_string(),
        path_arg(output_dir, REPORT_FILE)?,
        "--csv".to_string(),
        "--page".to_string(),
        page.to_string(),
    ];
    if page != "session" {
        argv.extend(["--print-units".to_string(), "base".to_string()]);
        argv.extend(print_kernel_base(options));
    }
    let mut command = CommandSpec::new(crate::model::arg::args(argv));
    command.env = ncu_env();
    let mut step = Step::new(
        &format!("export-{page}"),
        command,
        EndMarker::None,
        EXPORT_GRACES,
    );
    step.stdout_file = Some(output_dir.join(file));
    // A failed program may still leave a report of what was profiled.
    step.run_after_failure = true;
    Ok(step)
}

/// The whole plan for one pass over `target`.
pub fn build(
    options: &NcuOptions,
    output_dir: &Path,
    target: &[Arg],
    end_marker: EndMarker,
    graces: Graces,
) -> Result<Plan> {
    if target.is_empty() {
        return Err(Error::invalid("target", "the command to profile is empty"));
    }
    options.validate()?;
    let mut command = CommandSpec::new(profile_argv(options, output_dir, target)?);
    command.env = ncu_env();
    let mut steps = vec![Step::new("profile", command, end_marker, graces)];
    if options.writes_report() {
        steps.push(export_step(options, output_dir, "raw", RAW_FILE)?);
        if options.preset.ncu_set().is_some() {
            steps.push(export_step(options, output_dir, "details", DETAILS_FILE)?);
        }
        steps.push(export_step(options, output_dir, "session", SESSION_FILE)?);
    }
    Ok(Plan {
        profiler: "ncu".to_string(),
        target: target.to_vec(),
        outputs: Default::default(),
        capabilities: Vec::new(),
        steps,
    })
}
