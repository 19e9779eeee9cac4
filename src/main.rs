//! The `polyprof` command line. Machine-readable output goes to stdout; logs go to stderr.

mod cli;

fn main() -> std::process::ExitCode {
    // `polyprof run` re-executes this binary as the command's supervisor; that mode never
    // returns here.
    polyprof::pipeline::runner::supervisor::run_if_requested();
    // `polyprof eval` starts the candidate's workers through this binary's sandbox launcher.
    polyprof::pipeline::sandbox::run_if_requested();
    // `polyprof run --container` may start this binary as its container watchdog.
    polyprof::pipeline::container::watchdog::run_if_requested();
    let args = cli::Cli::parse_args();
    cli::init_logging(args.verbose);
    // Whatever a killed supervisor leaves behind is re-parented here, where the runner finds
    // and ends it (pipeline::runner::orphans).
    polyprof::pipeline::runner::orphans::become_subreaper();
    // Supervisors are forks of this process, not executions of polyprof-supervise (one program
    // start less per run; see docs/runner.md).
    polyprof::pipeline::runner::supervisor::fork_in_process();
    // One command runs one job at a time; a single-threaded runtime starts faster and keeps the
    // marker-to-return path free of cross-thread wake-ups (measured in scripts/bench-runner.sh).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            cli::report_error(&anyhow::anyhow!("cannot start the async runtime: {error}"));
            return std::process::ExitCode::from(cli::EXIT_INTERNAL);
        }
    };
    // Boxed: the dispatch future is tens of KiB, and on main's stack every page of it was
    // probed (a page fault each) whether the command in hand used it or not.
    match runtime.block_on(Box::pin(cli::dispatch(args.command))) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(error) => {
            if cli::is_broken_pipe(&error) {
                // `polyprof … | head`: the reader is gone; end quietly, as a shell pipeline would.
                return std::process::ExitCode::from(cli::EXIT_BROKEN_PIPE);
            }
            cli::report_error(&error);
            std::process::ExitCode::from(cli::EXIT_USAGE)
        }
    }
}
