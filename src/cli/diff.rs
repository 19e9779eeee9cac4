//! `polyprof diff RUN_A RUN_B`: a noise-aware comparison for CI gates. Exit 0: nothing regressed
//! beyond the threshold, the floor and the launches' spread; 1: something did; 2: bad input.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use polyprof::results::ProfileRun;
use polyprof::results::diff::{DEFAULT_THRESHOLD_PCT, DiffOptions, diff_runs};
use polyprof::results::export::{Report, html_diff};

use super::width::table_width_for;

/// Exit code when a kernel regressed beyond the threshold.
pub const EXIT_REGRESSED: u8 = 1;

/// Arguments of `polyprof diff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Baseline run directory (or run.json).
    pub run_a: PathBuf,
    /// Candidate run directory (or run.json).
    pub run_b: PathBuf,
    /// Percent of A's median GPU time by which a kernel may grow before it counts.
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_THRESHOLD_PCT, value_parser = parse_threshold)]
    pub threshold: f64,
    /// Absolute floor: a median that moved by less than this never counts (`500ns`, `0.5us`,
    /// `1ms`; a bare number is µs); twice this for kernels with fewer than 3 launches a side.
    #[arg(long, value_name = "TIME", default_value = "0.5us", value_parser = parse_duration_ns)]
    pub min_change: f64,
    /// Leave out kernels whose median is below this on both sides (`2us`, `1ms`; a bare number
    /// is µs).
    #[arg(long, value_name = "TIME", default_value = "0", value_parser = parse_duration_ns)]
    pub min_duration: f64,
    /// Full kernel names in the table instead of names fitted to the terminal width.
    #[arg(long)]
    pub wide: bool,
    /// Print the comparison as JSON instead of a table (same as `--format json`).
    #[arg(long)]
    pub json: bool,
    /// Output format: the terminal table, JSON, or one self-contained HTML page (per-kernel
    /// change with its noise band, the verdict and why, both rooflines overlaid).
    #[arg(long, short = 'f', value_enum, default_value_t = DiffFormat::Table)]
    pub format: DiffFormat,
    /// Write to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Device for the rooflines of the HTML page (default: each run's device).
    #[arg(long, value_name = "NAME", value_parser = super::values::devices(), hide_possible_values = true)]
    pub device: Option<String>,
    /// A TOML device table that adds to or replaces built-in entries.
    #[arg(long, value_name = "FILE")]
    pub devices: Option<PathBuf>,
    #[command(flatten)]
    pub ci: super::ci_output::CiArgs,
}

/// Output formats of `polyprof diff`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    #[default]
    Table,
    Json,
    Html,
}

fn parse_threshold(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{text}` is not a number of percent"))?;
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(format!("`{text}`: the threshold must be a percentage ≥ 0"))
    }
}

/// `500ns`, `0.5us`, `2ms`, `1s` (the one duration syntax), or a bare number of µs → ns.
fn parse_duration_ns(text: &str) -> Result<f64, String> {
    super::duration::micros(text).map(|d| d.as_nanos() as f64)
}

fn read(path: &Path) -> anyhow::Result<ProfileRun> {
    Ok(ProfileRun::read(path)?)
}

fn has_kernel_times(run: &ProfileRun) -> bool {
    run.kernels.iter().any(|k| k.duration_ns.is_some())
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let a = read(&args.run_a)?;
    let b = read(&args.run_b)?;
    // Two runs without kernels compare wall time and steps; one without kernels against one
    // with them cannot pass a gate by having nothing to compare.
    for (run, path, other) in [(&a, &args.run_a, &b), (&b, &args.run_b, &a)] {
        anyhow::ensure!(
            has_kernel_times(run) || !has_kernel_times(other),
            "{} has no kernel records with a GPU time but the other run has; nothing to compare \
             (was it profiled? see its run.json errors)",
            path.display()
        );
    }
    let options = DiffOptions {
        threshold_pct: args.threshold,
        floor_ns: args.min_change,
        min_duration_ns: args.min_duration,
    };
    let mut diff = diff_runs(&a, &b, &options)?;
    // Both runs are usually `ncu.000`; the paths tell them apart.
    diff.a = format!("{} ({})", args.run_a.display(), diff.a);
    diff.b = format!("{} ({})", args.run_b.display(), diff.b);
    if args.ci.wanted() {
        args.ci.write(&polyprof::results::ci_diff::suite(&diff))?;
    }
    let format = if args.json {
        DiffFormat::Json
    } else {
        args.format
    };
    let text = match format {
        DiffFormat::Json => serde_json::to_string_pretty(&diff)? + "\n",
        DiffFormat::Table => diff.render(match args.output {
            Some(_) => None,
            None => table_width_for(args.wide),
        }),
        DiffFormat::Html => {
            let table = super::report::device_table(args.devices.as_deref())?;
            let peaks_a = super::report::peaks_for(&table, &a, args.device.as_deref())?;
            let peaks_b = super::report::peaks_for(&table, &b, args.device.as_deref())?;
            html_diff::render(
                &diff,
                &Report::from_run(a, peaks_a),
                &Report::from_run(b, peaks_b),
            )?
        }
    };
    match &args.output {
        Some(path) => {
            polyprof::model::atomic_file::write_atomic(path, text.as_bytes())
                .with_context(|| format!("write the comparison to {}", path.display()))?;
            super::output::eprintln_text(&format!(
                "polyprof: wrote {} ({format:?})",
                path.display()
            ));
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .context("write the comparison to standard output")?;
        }
    }
    Ok(if diff.regressed() { EXIT_REGRESSED } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyprof::results::diff::DEFAULT_FLOOR_NS;

    #[test]
    fn durations_take_units_and_bare_numbers_are_microseconds() {
        assert_eq!(parse_duration_ns("500ns"), Ok(500.0));
        assert_eq!(parse_duration_ns("0.5us"), Ok(500.0));
        assert_eq!(parse_duration_ns("0.5µs"), Ok(500.0));
        assert_eq!(parse_duration_ns("2"), Ok(2000.0));
        assert_eq!(parse_duration_ns("1ms"), Ok(1e6));
        assert!(parse_duration_ns("5 parsecs").is_err());
        assert!(parse_duration_ns("-1us").is_err());
        assert!(parse_duration_ns("").is_err());
    }

    #[test]
    fn default_floor_matches_the_library() {
        assert_eq!(parse_duration_ns("0.5us"), Ok(DEFAULT_FLOOR_NS));
    }
}
