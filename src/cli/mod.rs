//! Subcommands, one file each.

pub mod audit;
pub mod batch;
pub mod batch_dry_run;
pub mod batch_progress;
pub mod batch_ray;
pub mod batch_slurm;
pub mod batch_summary;
pub mod cache;
pub mod calibrate;
pub mod ci_output;
pub mod completions;
pub mod config;
pub mod container_args;
pub mod containers;
pub mod demo;
pub mod demo_replay;
pub mod demo_workload;
pub mod diff;
pub mod doctor;
pub mod duration;
pub mod eval;
pub mod eval_exit;
pub mod eval_many;
pub mod eval_serve;
pub mod eval_summary;
pub mod man;
pub mod metal;
pub mod ncu_args;
pub mod occupancy;
pub mod output;
pub mod parse;
pub mod parse_output;
pub mod parse_run;
pub mod parse_vtune;
pub mod profile_cache_args;
pub mod report;
pub mod report_batch;
pub mod run;
pub mod select;
pub mod values;
pub mod width;
pub mod wrap;

use clap::{Parser, Subcommand};

/// Exit code for a usage or input error (bad flag value, unreadable file, …).
pub const EXIT_USAGE: u8 = 2;
/// Exit code for an internal failure (the runtime could not start, …).
pub const EXIT_INTERNAL: u8 = 70;

/// Exit code when stdout was closed by its reader (128 + SIGPIPE, what a shell reports).
pub const EXIT_BROKEN_PIPE: u8 = 141;

/// Whether the error comes from writing to a closed pipe.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    error.chain().any(|cause| {
        // `serde_json::to_writer` wraps the writer's error in its own.
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .is_some_and(|e| e.io_error_kind() == Some(BrokenPipe))
    })
}

/// Print `error` and its causes on stderr, each once: a message that already ends with its
/// cause's text (`…: No such file or directory`) does not get the cause repeated. A closed
/// stderr is ignored.
pub fn report_error(error: &anyhow::Error) {
    use std::io::Write;
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
    }
    // An error quotes names, paths and tools' output: shown, never sent to the terminal.
    let text = polyprof::results::escape::terminal::text(&text);
    let _ = writeln!(std::io::stderr(), "polyprof: error: {text}");
}

/// Run any command under the right vendor GPU profiler and normalize what it wrote.
#[derive(Debug, Parser)]
#[command(name = "polyprof", version, about)]
pub struct Cli {
    /// Log on stderr what polyprof does (-v: the plan, probes, spawns, signals, files read and
    /// written; -vv: also each step's detail). RUST_LOG (`polyprof=debug`, …) overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The command line. `polyprof run …`, which a batch of short jobs starts once per job, is
    /// parsed against the `run` subcommand alone: building every subcommand's arguments was
    /// two thirds of `polyprof --version`'s instructions and touched pages no run needs (issue
    /// 37). Whatever does not parse that way (`--help`, a usage error) is parsed again against
    /// the whole CLI, which answers as it always did.
    pub fn parse_args() -> Cli {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        Self::parse_run_alone(&args).unwrap_or_else(|| Cli::parse_from(args))
    }

    /// `args` parsed against `run` alone, when they are a valid `polyprof run …`.
    fn parse_run_alone(args: &[std::ffi::OsString]) -> Option<Cli> {
        if args.get(1).is_none_or(|word| word != "run") {
            return None;
        }
        let verbose = clap::Arg::new("verbose")
            .short('v')
            .long("verbose")
            .action(clap::ArgAction::Count)
            .global(true);
        // `default().name(…)` is what clap's `new(…)` does; spelled so that check-layers'
        // search for process starts does not take clap's command for one.
        let command = clap::Command::default()
            .name("polyprof")
            .arg(verbose)
            .subcommand(<run::Args as clap::Args>::augment_args(
                clap::Command::default().name("run"),
            ));
        let matches = command.try_get_matches_from(args).ok()?;
        <Cli as clap::FromArgMatches>::from_arg_matches(&matches).ok()
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Every profiler backend, whether it can run here, its version, and how to fix it.
    Doctor(doctor::Args),
    /// The profiler passes selected for a language and architecture.
    Select(select::Args),
    /// Print a profiler's plan for a command without running anything.
    Wrap(wrap::Args),
    /// Run a command, optionally under a profiler, supervised.
    Run(run::Args),
    /// Judge a candidate kernel against a reference: correctness on secret inputs, interleaved
    /// timing, a witness profiler; exit 0 only when it passes.
    Eval(eval::Args),
    /// Parse saved profiler output into normalized records (no GPU needed).
    Parse(parse::Args),
    /// Theoretical CUDA occupancy for a launch configuration.
    Occupancy(occupancy::Args),
    /// Report or export a run directory.
    Report(report::Args),
    /// Compare two runs kernel by kernel; exit 1 on a regression beyond the threshold.
    Diff(diff::Args),
    /// Profile a small bundled workload with the best available profiler and report it.
    Demo(demo::Args),
    /// Apple Metal: static AGX analysis of a listing, device limits, kernel timing.
    Metal(metal::Args),
    /// The CPU workload `demo` profiles when no GPU profiler is usable.
    #[command(hide = true)]
    DemoWorkload(demo_workload::Args),
    /// Run a job file over this host's GPUs (or CPU slots), with a resumable batch.json index.
    Batch(batch::Args),
    /// Containers polyprof started: `prune` removes those a dead polyprof left.
    Containers(containers::Args),
    /// Judge a saved eval (DIR/evidence.json) again; exit 0 only when it passed.
    Audit(audit::Args),
    /// Run known-work micro-kernels under ncu, check each counter against the work, and cache
    /// the result for this GPU, driver and ncu version; exit 1 when a counter is untrusted.
    Calibrate(calibrate::Args),
    /// The profile cache: list its entries, clear, expire or invalidate them, print its path.
    Cache(cache::Args),
    /// The effective defaults (polyprof.toml, the user config, POLYPROF_* variables) and where
    /// each came from.
    Config(config::Args),
    /// Print the shell completion script: `polyprof completions bash > …` (docs/install.md).
    Completions(completions::Args),
    /// Print the manual page (or write one per command with --output-dir).
    Man(man::Args),
}

pub async fn dispatch(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Doctor(args) => doctor::execute(args).await,
        Command::Select(args) => select::execute(args).await,
        Command::Wrap(args) => wrap::execute(args).await,
        Command::Run(args) => run::execute(args).await,
        Command::Eval(args) => eval::execute(args).await,
        Command::Parse(args) => parse::execute(args).await,
        Command::Occupancy(args) => occupancy::execute(args).await,
        // A batch root reports as one page of its jobs.
        Command::Report(args) if report_batch::is_batch_root(&args.run_dir) => {
            report_batch::execute(&args)
        }
        Command::Report(args) => report::execute(args).await,
        Command::Diff(args) => diff::execute(args).await,
        Command::Demo(args) => demo::execute(args).await,
        Command::DemoWorkload(args) => demo_workload::execute(args).await,
        Command::Metal(args) => metal::execute(args).await,
        Command::Containers(args) => containers::execute(args).await,
        Command::Batch(args) => batch::execute(args).await,
        Command::Audit(args) => audit::execute(args).await,
        Command::Calibrate(args) => calibrate::execute(args).await,
        Command::Cache(args) => cache::execute(args).await,
        Command::Config(args) => config::execute(args).await,
        Command::Completions(args) => completions::execute(args).await,
        Command::Man(args) => man::execute(args).await,
    }
}

/// The log filter for `-v` given `count` times: polyprof's own events at debug (`-v`) or trace
/// (`-vv` and more), other crates' warnings only; nothing below a warning without `-v`.
/// `RUST_LOG`, when set and valid, replaces it whole.
pub fn log_filter(verbose: u8) -> &'static str {
    match verbose {
        0 => "warn",
        1 => "warn,polyprof=debug,polyprof_supervise=debug",
        _ => "warn,polyprof=trace,polyprof_supervise=trace",
    }
}

/// Logs go to stderr so stdout stays machine-readable.
pub fn init_logging(verbose: u8) {
    use std::io::IsTerminal;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|value| !value.trim().is_empty())
        .and_then(|value| tracing_subscriber::EnvFilter::try_new(value).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(log_filter(verbose)));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_parsed_alone_is_what_the_whole_cli_parses() {
        let lines = [
            "polyprof run -- true",
            "polyprof run -v -q --force --output-dir d -- sh -c x",
            "polyprof run -vv --json --tracking group --timeout 1m --env A=b --env-allow X* -- a -- b",
            "polyprof run --profiler ncu --end-marker pytest --label l --exit-code polyprof -- ./app",
        ];
        for line in lines {
            let args: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
            let alone = Cli::parse_run_alone(&args).expect(line);
            let whole = Cli::try_parse_from(&args).expect(line);
            assert_eq!(format!("{alone:?}"), format!("{whole:?}"), "{line}");
        }
        // Help, errors, other subcommands and flags before `run` go to the whole CLI.
        for line in [
            "polyprof -v run -- true",
            "polyprof run --help",
            "polyprof run",
            "polyprof run --bogus -- true",
            "polyprof report x",
        ] {
            let args: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
            assert!(Cli::parse_run_alone(&args).is_none(), "{line}");
        }
    }

    #[test]
    fn each_v_lowers_polyprofs_level_only() {
        assert_eq!(log_filter(0), "warn");
        assert!(log_filter(1).contains("polyprof=debug"));
        assert!(log_filter(2).contains("polyprof=trace"));
        assert_eq!(log_filter(5), log_filter(2));
        for verbose in 0..3 {
            assert!(log_filter(verbose).starts_with("warn"));
            assert!(tracing_subscriber::EnvFilter::try_new(log_filter(verbose)).is_ok());
        }
    }
}
