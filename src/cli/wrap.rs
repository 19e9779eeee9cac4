//! `polyprof wrap`: print a profiler's plan for a command (JSON, or one POSIX shell string with
//! `--shell`) without running anything.

use std::path::PathBuf;

use anyhow::Context;

use polyprof::profilers::registry;
use polyprof::profilers::{self, ProfilerSettings, quote};

/// Arguments of `polyprof wrap`.
#[derive(Debug, clap::Args)]
// clap wraps the help but never the usage line, 83 columns here: two lines, as clap's own
// continuation would indent them.
#[command(
    override_usage = "polyprof wrap [OPTIONS] --profiler <PROFILER> --output-dir <DIR>\n       \
                            -- <CMD>..."
)]
pub struct Args {
    /// Backend: ncu, unitrace, ocl-unitrace, vtune, metal, rocprofv3, or none.
    #[arg(long, value_parser = super::values::profilers())]
    pub profiler: String,
    /// Where the profiler writes, as the profiled process sees it (made absolute).
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,
    /// Print one POSIX shell string instead of the plan's JSON.
    #[arg(long)]
    pub shell: bool,
    /// Metric group (unitrace and ocl-unitrace: default ComputeBasic; rocprofv3: its counter
    /// set, `trace`, `roofline` or `pmc:A,B;C`).
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,
    /// The command to profile, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let name = args.profiler.trim().to_ascii_lowercase();
    let entry = registry::lookup(&name)?;
    if args.group.is_some() && !entry.settings.has_variant() {
        let takes: Vec<&str> = registry::BACKENDS
            .iter()
            .filter(|b| b.settings.has_variant())
            .map(|b| b.name)
            .collect();
        anyhow::bail!(
            "--group applies to {} only, not `{}`",
            takes.join(" and "),
            args.profiler
        );
    }
    let output_dir = std::path::absolute(&args.output_dir).with_context(|| {
        format!(
            "cannot make `{}` an absolute path",
            args.output_dir.display()
        )
    })?;
    let mut settings = ProfilerSettings::default();
    entry.settings.set_variant(&mut settings, args.group);
    let profiler = profilers::create(&name, &output_dir, &settings)?;
    let plan = profiler.wrap(&polyprof::model::arg::args(&args.command))?;
    if args.shell {
        super::output::println(&quote::plan_to_shell(&plan)?)?;
    } else {
        super::output::println(&serde_json::to_string_pretty(&plan)?)?;
    }
    Ok(0)
}
