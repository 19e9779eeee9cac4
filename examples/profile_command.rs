//! Profile one command from Rust: `cargo run --example profile_command -- [PROFILER] -- CMD…`
//! (PROFILER defaults to `none`, which runs the command supervised and records it; `ncu` on a
//! machine with Nsight Compute). Prints the outcome and the kernels; the run document is
//! `polyprof-runs/example/<profiler>.000/run.json`.

use polyprof::{Job, profile};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (profiler, command) = match args.iter().position(|a| a == "--") {
        Some(i) => (
            args.first().filter(|_| i > 0).cloned(),
            args[i + 1..].to_vec(),
        ),
        None => (None, args),
    };
    if command.is_empty() {
        eprintln!("usage: profile_command [PROFILER] -- CMD [ARG…]");
        return std::process::ExitCode::from(2);
    }
    let profiler = profiler.unwrap_or_else(|| "none".to_string());
    let dir = format!("polyprof-runs/example/{profiler}.000");
    let mut job = Job::new(command.into_iter().map(Into::into).collect(), &dir);
    job.profiler = profiler;
    // Never panics: whatever went wrong is in `run.errors`, typed.
    let run = profile(&job).await;
    match &run.outcome {
        Some(outcome) => println!("{dir}: {outcome}"),
        None => println!("{dir}: did not run"),
    }
    for kernel in &run.kernels {
        println!("  {} {:?} ns", kernel.short_name, kernel.duration_ns);
    }
    for error in &run.errors {
        println!("  error: {error}");
    }
    std::process::ExitCode::from(if run.errors.is_empty() { 0 } else { 1 })
}
