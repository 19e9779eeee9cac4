//! `polyprof diff RUN_A RUN_B`: kernel-by-kernel comparison for CI gates. Exit 0: no kernel
//! regressed beyond the threshold; 1: at least one did; 2: bad input.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use polyprof::results::ProfileRun;
use polyprof::results::diff::{DEFAULT_THRESHOLD_PCT, diff_runs};

/// Exit code when a kernel regressed beyond the threshold.
pub const EXIT_REGRESSED: u8 = 1;

/// Arguments of `polyprof diff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Baseline run directory (or run.json).
    pub run_a: PathBuf,
    /// Candidate run directory (or run.json).
    pub run_b: PathBuf,
    /// Percent of A's GPU time by which a kernel may grow before it counts as a regression.
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_THRESHOLD_PCT, value_parser = parse_threshold)]
    pub threshold: f64,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
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

fn read(path: &Path) -> anyhow::Result<ProfileRun> {
    let run = ProfileRun::read(path)?;
    anyhow::ensure!(
        run.kernels.iter().any(|k| k.duration_ns.is_some()),
        "{} has no kernel records with a GPU time; nothing to compare (was it profiled? see its run.json errors)",
        path.display()
    );
    Ok(run)
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let a = read(&args.run_a)?;
    let b = read(&args.run_b)?;
    let mut diff = diff_runs(&a, &b, args.threshold);
    // Both runs are usually `ncu.000`; the paths tell them apart.
    diff.a = format!("{} ({})", args.run_a.display(), diff.a);
    diff.b = format!("{} ({})", args.run_b.display(), diff.b);
    let text = if args.json {
        serde_json::to_string_pretty(&diff)? + "\n"
    } else {
        diff.render()
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("write the comparison to standard output")?;
    Ok(if diff.regressed() { EXIT_REGRESSED } else { 0 })
}
