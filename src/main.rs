//! The `polyprof` command line. Machine-readable output goes to stdout; logs go to stderr.

mod cli;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    cli::init_logging(args.verbose);
    // One command runs one job at a time; a single-threaded runtime starts faster and keeps the
    // marker-to-return path free of cross-thread wake-ups (measured in scripts/bench-runner.sh).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("polyprof: cannot start the async runtime: {error}");
            return std::process::ExitCode::from(cli::EXIT_INTERNAL);
        }
    };
    match runtime.block_on(cli::dispatch(args.command)) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(error) => {
            eprintln!("polyprof: error: {error:#}");
            std::process::ExitCode::from(cli::EXIT_USAGE)
        }
    }
}
