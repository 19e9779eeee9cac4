//! `polyprof report RUN_DIR`: the run as a table, JSON, CSV, Hatchet literal, Chrome trace,
//! HTML page or SVG roofline; a batch root as an HTML page of its jobs.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use polyprof::results::aggregate::{GroupBy, SortBy};
use polyprof::results::devices::{DevicePeaks, DeviceTable};
use polyprof::results::export::{self, Format, Report};
use polyprof::results::{Profile, ProfileRun};

/// Arguments of `polyprof report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A run directory (with run.json) or a run.json file; or a batch root (with batch.json),
    /// reported as `--format html`.
    pub run_dir: PathBuf,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Table rows: one per kernel name, or one per call path (job / pass / process / kernel).
    #[arg(long, value_enum, default_value_t = GroupBy::Name)]
    pub group_by: GroupBy,
    /// Table row order.
    #[arg(long, value_enum, default_value_t = SortBy::GpuTime)]
    pub sort_by: SortBy,
    /// Device for the roofline peaks (e.g. H200, "NVIDIA A100-SXM4-80GB"); default: the run's
    /// device.
    #[arg(long, value_name = "NAME", value_parser = super::values::devices(), hide_possible_values = true)]
    pub device: Option<String>,
    /// A TOML device table that adds to or replaces built-in entries (configs/devices.toml layout).
    #[arg(long, value_name = "FILE")]
    pub devices: Option<PathBuf>,
    /// Full kernel names in the table instead of names fitted to the terminal width.
    #[arg(long)]
    pub wide: bool,
}

/// The built-in device table with `user`'s entries over it (`--devices FILE`, else the
/// configured `devices`).
pub fn device_table(user: Option<&Path>) -> anyhow::Result<DeviceTable> {
    let table = DeviceTable::builtin()?;
    let configured = match user {
        Some(_) => None,
        None => polyprof::pipeline::config::Config::load()?.devices.value,
    };
    Ok(match user.or(configured.as_deref()) {
        Some(path) => table.with_overrides(DeviceTable::load(path)?),
        None => table,
    })
}

/// Peaks for `requested` (an error when unknown) or else for the run's device (none when
/// unknown: the report says how to choose one).
pub fn peaks_for(
    table: &DeviceTable,
    run: &ProfileRun,
    requested: Option<&str>,
) -> anyhow::Result<Option<DevicePeaks>> {
    if let Some(name) = requested {
        return Ok(Some(table.require(name)?.clone()));
    }
    Ok(run
        .device
        .as_ref()
        .and_then(|d| table.lookup(&d.name))
        .cloned())
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let run = ProfileRun::read(&args.run_dir)?;
    tracing::debug!(run_dir = %args.run_dir.display(), kernels = run.kernels.len(), "read the run document");
    let table = device_table(args.devices.as_deref())?;
    let peaks = peaks_for(&table, &run, args.device.as_deref())?;
    let mut report = Report::from_run(run, peaks);
    // Scopes a workload recorded during the run (`polyprof demo`) sit beside run.json.
    let run_dir = match args.run_dir.is_dir() {
        true => args.run_dir.as_path(),
        false => args.run_dir.parent().unwrap_or(Path::new(".")),
    };
    if let Some(scopes) = Profile::read_scopes(run_dir)? {
        report.add_scopes(scopes);
    }
    report.group_by = args.group_by;
    report.sort_by = args.sort_by;
    match &args.output {
        Some(path) => {
            export::write_file(&report, args.format, path)?;
            tracing::debug!(path = %path.display(), "wrote the report");
            super::output::eprintln_text(&format!(
                "polyprof: wrote {} ({:?})",
                path.display(),
                args.format
            ));
        }
        None => {
            let bytes = match args.format {
                Format::Table => {
                    export::table::render_fitted(&report, super::width::table_width_for(args.wide))
                        .into_bytes()
                }
                format => export::render(&report, format)?,
            };
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(&bytes)
                .and_then(|()| stdout.flush())
                .context("write the report to standard output")?;
        }
    }
    Ok(0)
}

/// Write a rendered report to `path` (atomically) or standard output.
pub fn write_output(path: Option<&Path>, bytes: &[u8], format: Format) -> anyhow::Result<()> {
    match path {
        Some(path) => {
            polyprof::model::atomic_file::write_atomic(path, bytes)
                .with_context(|| format!("write the report to {}", path.display()))?;
            super::output::eprintln_text(&format!(
                "polyprof: wrote {} ({format:?})",
                path.display()
            ));
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(bytes)
                .and_then(|()| stdout.flush())
                .context("write the report to standard output")?;
        }
    }
    Ok(())
}
