//! `polyprof metal`: static AGX analysis (any OS), device limits and kernel timing (macOS).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use polyprof::metal::analysis::{AnalyzeOptions, DEFAULT_LOAD_LATENCY};
use polyprof::metal::cost::CostModel;
use polyprof::metal::runtime::{
    self, CAPTURE_ENV, DEFAULT_REPEAT, DEFAULT_WARMUP, RunRequest, parse_buffers, parse_size,
    validate_capture, validate_counts,
};
use polyprof::metal::{analyze_text, annotate};

/// Exit code when the Metal runtime is not available on this system (sysexits EX_UNAVAILABLE).
pub const EXIT_UNAVAILABLE: u8 = 69;

/// Arguments of `polyprof metal`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: MetalCommand,
}

#[derive(Debug, Subcommand)]
pub enum MetalCommand {
    /// Static analysis of an applegpu disassembly listing (works on any OS).
    Analyze(AnalyzeArgs),
    /// Device limits of the default Metal GPU (macOS).
    Caps(CapsArgs),
    /// Compile an MSL kernel, dispatch it and time it with command-buffer GPU timestamps (macOS).
    Run(RunArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModelArg {
    /// Mesa's G13G crude cycle model (IC counted at 2·tp).
    Mesa,
    /// metal-profiler 0.1.1's table, for comparison with that tool.
    MetalProfiler,
}

#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// applegpu disassembly text (`offset: hex  mnemonic operands`).
    pub file: PathBuf,
    /// Print JSON instead of the annotated report.
    #[arg(long)]
    pub json: bool,
    /// Device-memory load latency in cycles for the stall estimate.
    #[arg(long, value_name = "CYCLES", default_value_t = DEFAULT_LOAD_LATENCY)]
    pub load_latency: f64,
    /// Cost model.
    #[arg(long, value_enum, default_value = "mesa")]
    pub model: ModelArg,
}

#[derive(Debug, clap::Args)]
pub struct CapsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Metal Shading Language source file.
    pub file: PathBuf,
    /// Kernel function name.
    #[arg(long)]
    pub entry: String,
    /// Threads in the grid: N, NxM or NxMxK.
    #[arg(long)]
    pub grid: String,
    /// Threads per threadgroup: N, NxM or NxMxK (capped by the pipeline).
    #[arg(long, default_value = "256")]
    pub tg: String,
    /// Buffers bound at indices 0, 1, …: TYPE:COUNT,… with TYPE f32, f16, i32, u32, u64.
    /// Buffer 0 is zeroed, the others get a deterministic fill.
    #[arg(long, default_value = "")]
    pub buffers: String,
    /// Timed calls (≥ 1).
    #[arg(long, default_value_t = DEFAULT_REPEAT, allow_negative_numbers = true)]
    pub repeat: i64,
    /// Untimed warm-up calls (≥ 0).
    #[arg(long, default_value_t = DEFAULT_WARMUP, allow_negative_numbers = true)]
    pub warmup: i64,
    /// Floating-point operations per call, for GFLOP/s.
    #[arg(long)]
    pub flops: Option<f64>,
    /// Bytes moved per call, for GB/s.
    #[arg(long)]
    pub bytes: Option<f64>,
    /// Also time threadgroup sizes 64…1024 (capped by the pipeline).
    #[arg(long)]
    pub sweep_tg: bool,
    /// Capture the run into this .gputrace (needs MTL_CAPTURE_ENABLED=1).
    #[arg(long, value_name = "PATH")]
    pub capture: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    match args.command {
        MetalCommand::Analyze(a) => analyze(a),
        MetalCommand::Caps(a) => caps(a),
        MetalCommand::Run(a) => run(a),
    }
}

fn analyze(args: AnalyzeArgs) -> anyhow::Result<u8> {
    if !(args.load_latency.is_finite() && args.load_latency >= 0.0) {
        anyhow::bail!(
            "--load-latency must be a number of cycles ≥ 0, not {}",
            args.load_latency
        );
    }
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read listing `{}`", args.file.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let options = AnalyzeOptions {
        model: match args.model {
            ModelArg::Mesa => CostModel::Mesa,
            ModelArg::MetalProfiler => CostModel::MetalProfilerCompat,
        },
        load_latency: args.load_latency,
    };
    let analysis = analyze_text(&text, options);
    if analysis.instruction_count == 0 {
        super::output::eprintln_text(&format!(
            "polyprof: warning: no instructions found in `{}`; is it applegpu disassembly?",
            args.file.display()
        ));
    }
    if args.json {
        // Large listings give megabytes of JSON: stream it instead of building one string.
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let written = serde_json::to_writer_pretty(&mut out, &analysis)
            .map_err(std::io::Error::from)
            .and_then(|()| std::io::Write::write_all(&mut out, b"\n"))
            .and_then(|()| std::io::Write::flush(&mut out));
        match written {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
            _ => {}
        }
    } else {
        // The listing quotes the file's text: shown, never sent to the terminal.
        super::output::print_text(&annotate::render(
            &analysis,
            &args.file.display().to_string(),
        ))?;
    }
    Ok(0)
}

fn unavailable() -> Option<u8> {
    let reason = runtime::unavailable_reason()?;
    eprintln!("polyprof: metal: {reason}");
    Some(EXIT_UNAVAILABLE)
}

fn caps(args: CapsArgs) -> anyhow::Result<u8> {
    if let Some(code) = unavailable() {
        return Ok(code);
    }
    #[cfg(target_os = "macos")]
    {
        let caps = runtime::caps()?;
        if args.json {
            super::output::println(&serde_json::to_string_pretty(&caps)?)?;
        } else {
            super::output::println_text(&format!(
                "{}: unified memory {}, max threadgroup memory {} B, max threads per threadgroup \
                 {:?}, recommended working set {} B, counter sampling at stage boundary {}, at \
                 dispatch boundary {}",
                caps.device,
                caps.unified_memory,
                caps.max_threadgroup_memory_bytes,
                caps.max_threads_per_threadgroup,
                caps.recommended_working_set_bytes,
                caps.counter_sampling_stage_boundary,
                caps.counter_sampling_dispatch_boundary
            ))?;
        }
    }
    let _ = args.json;
    Ok(0)
}

fn run(args: RunArgs) -> anyhow::Result<u8> {
    // Argument errors are reported the same on every system, before the platform check.
    validate_counts(args.repeat, args.warmup)?;
    let grid = parse_size("grid", &args.grid)?;
    let threadgroup = parse_size("threadgroup", &args.tg)?;
    let buffers = parse_buffers(&args.buffers)?;
    if let Some(path) = &args.capture {
        let exists = std::path::Path::new(path).exists();
        validate_capture(path, exists, std::env::var(CAPTURE_ENV).ok().as_deref())?;
    }
    let source = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read Metal source `{}`", args.file.display()))?;
    let request = RunRequest {
        source,
        entry: args.entry.clone(),
        grid,
        threadgroup,
        buffers,
        repeat: args.repeat,
        warmup: args.warmup,
        flops: args.flops,
        bytes_moved: args.bytes,
        sweep: args.sweep_tg,
    };
    if let Some(code) = unavailable() {
        return Ok(code);
    }
    #[cfg(target_os = "macos")]
    {
        let report = match &args.capture {
            Some(path) => runtime::with_capture(path, || runtime::run(&request))?,
            None => runtime::run(&request)?,
        };
        for w in &report.warnings {
            super::output::eprintln_text(&format!("polyprof: warning: {w}"));
        }
        if args.json {
            super::output::println(&serde_json::to_string_pretty(&report)?)?;
        } else {
            super::output::println_text(&report.benchmark.summary())?;
            super::output::println_text(&format!(
                "{} | grid {:?} threadgroup {:?} | pipeline: max threads {}, execution width {}, \
                 static threadgroup memory {} B | clock: {}",
                report.device,
                report.grid,
                report.threadgroup,
                report.pipeline.max_total_threads_per_threadgroup,
                report.pipeline.thread_execution_width,
                report.pipeline.static_threadgroup_memory_bytes,
                report.clock
            ))?;
            for (i, p) in report.sweep.iter().enumerate() {
                let best = if report.best_sweep == Some(i) {
                    "  <- best"
                } else {
                    ""
                };
                super::output::println(&format!(
                    "  tg {:>4}: {}{best}",
                    p.threadgroup,
                    p.benchmark.summary()
                ))?;
            }
        }
    }
    let _ = request;
    Ok(0)
}
