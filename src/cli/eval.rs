//! `polyprof eval`: judge a candidate kernel against a reference (docs/eval-harness.md).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use polyprof::eval::ci_case;
use polyprof::eval::evidence::{EvalEvidence, FailureKind};
use polyprof::pipeline::eval::{
    Device, EVIDENCE_FILE, EvalOptions, EvalOutcome, EvalSpec, IfExists, VERDICT_FILE, evaluate,
};

use super::run::{TrackingMode, cancel_on_signals};

/// `--device`: cuda or cpu, both offered for completion.
fn device_parser() -> impl clap::builder::TypedValueParser<Value = Device> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["cuda", "cpu"]).try_map(|d| d.parse::<Device>())
}

pub use super::eval_exit::{EXIT_EVAL_FAILED, EXIT_NOT_PASSED, EXIT_PASSED};

/// Arguments of `polyprof eval`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The reference problem (KernelBench format: Model, get_inputs, get_init_inputs).
    #[arg(long, value_name = "REF.py")]
    pub reference: PathBuf,
    /// The candidate (ModelNew; get_init_inputs is taken from the reference when missing), or
    /// a directory: every `*.py` in it, one after another, into OUTPUT_DIR/<stem>/; or `-`:
    /// candidate paths read from stdin, one a line, one JSON line printed per verdict.
    #[arg(long, value_name = "CAND.py|DIR|-")]
    pub candidate: PathBuf,
    /// Where the eval's files go [default: OUTPUT_ROOT/eval.<NNN>, OUTPUT_ROOT the configured
    /// `output_root`, else ./polyprof-runs]; must be empty.
    #[arg(long, help_heading = "Output")]
    pub output_dir: Option<PathBuf>,
    /// Print verdict.json on stdout instead of the summary.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// With a directory of candidates (or `-`): start every candidate's eval cold (its own trusted
    /// worker, the reference re-timed in full) instead of through one warm evaluator.
    #[arg(long)]
    pub cold: bool,
    /// With a directory of candidates (or `-`): builds (each candidate's import with no device
    /// visible, an inline extension compiled) run this many at a time on the CPU, ahead of the
    /// judged turns; 0: each candidate builds right before its own turn [default: the CPU
    /// count].
    #[arg(long, value_name = "N")]
    pub build_jobs: Option<usize>,
    /// Where the arrays live: cuda or cpu.
    #[arg(long, default_value = "cuda", value_parser = device_parser())]
    pub device: Device,
    /// The Python interpreter of the workers [default: $POLYPROF_PYTHON, else python3].
    #[arg(long, value_name = "PY")]
    pub python: Option<PathBuf>,
    /// The witness profiler (cuda only): ncu, or none for no witness pass.
    #[arg(long, default_value = "ncu", value_parser = super::values::witnesses())]
    pub profiler: String,
    /// Limit of each call, check and timing block (`30s`, `2m`; a bare number is seconds).
    #[arg(long, value_parser = super::duration::seconds, value_name = "DURATION", default_value = "120")]
    pub timeout: Duration,
    /// Limit of starting a worker and its setup (imports, compilation) (`10m`; a bare number is
    /// seconds).
    #[arg(long, value_parser = super::duration::seconds, value_name = "DURATION", default_value = "600")]
    pub setup_timeout: Duration,
    /// Correctness trials, each on fresh inputs from a secret seed.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        help_heading = "Trials and timing"
    )]
    pub trials: u32,
    /// Interleaved timing blocks per side.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 5,
        help_heading = "Trials and timing"
    )]
    pub blocks: u32,
    /// Timed calls per block.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 50,
        help_heading = "Trials and timing"
    )]
    pub repeat: u32,
    /// Untimed calls before each block.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 5,
        help_heading = "Trials and timing"
    )]
    pub warmup: u32,
    /// Calls profiled by the witness, each on fresh inputs.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        help_heading = "Trials and timing"
    )]
    pub witness_calls: u32,
    /// Do not flush the L2 cache between timed calls.
    #[arg(long, help_heading = "Trials and timing")]
    pub no_flush_l2: bool,
    /// No work pass (the counters of what a correct candidate's calls moved and computed).
    #[arg(long, help_heading = "Work pass")]
    pub no_work_pass: bool,
    /// Calls profiled by the work pass, each on fresh inputs (0: no work pass).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        help_heading = "Work pass"
    )]
    pub work_calls: u32,
    /// The FLOPs one call must do (an analytic count), for the FLOP floor.
    #[arg(long = "flops", value_name = "N", help_heading = "Work pass")]
    pub flops_per_call: Option<f64>,
    /// TF32 tensor math counts as FP32 work (the task allows it).
    #[arg(long, help_heading = "Work pass")]
    pub allow_tf32: bool,
    /// Absolute tolerance of the comparison.
    #[arg(
        long,
        value_name = "X",
        default_value_t = 1e-2,
        help_heading = "Checks"
    )]
    pub atol: f64,
    /// Relative tolerance of the comparison.
    #[arg(
        long,
        value_name = "X",
        default_value_t = 1e-2,
        help_heading = "Checks"
    )]
    pub rtol: f64,
    /// The init seed both sides build their model under [default: a fresh random one].
    #[arg(long, value_name = "N", help_heading = "Checks")]
    pub seed_init: Option<u64>,
    /// A candidate that launches none of its own kernels is a finding.
    #[arg(long, help_heading = "Checks")]
    pub require_candidate_kernels: bool,
    /// Speedups above this are a finding.
    #[arg(
        long,
        value_name = "X",
        default_value_t = 10.0,
        help_heading = "Checks"
    )]
    pub suspicious_speedup: f64,
    /// Score times below this many ms are a finding.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 0.001,
        help_heading = "Checks"
    )]
    pub min_plausible_ms: f64,
    /// The candidate's score time below this share of its witnessed time is a finding.
    #[arg(long, value_name = "X", default_value_t = polyprof::pipeline::eval::spec::DEFAULT_WITNESS_TOLERANCE, help_heading = "Checks")]
    pub witness_tolerance: f64,
    /// Trace the candidate's scored pass on the GPU (polyprof's CUPTI tracer) and judge every
    /// call on that timeline; the separate witness pass is then skipped. `off`: the witness pass
    /// under the profiler, as before. CUDA only.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"], help_heading = "Checks")]
    pub scored_trace: String,
    /// Confine the candidate's workers (Landlock): on, or off (the verdict then says the
    /// candidate was not confined). Also `POLYPROF_SANDBOX=off`.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub sandbox: String,
    /// How each worker's processes are found and ended: supervisor, group, or cgroup.
    #[arg(long, value_enum, default_value_t, value_name = "MODE")]
    pub tracking: TrackingMode,
    #[command(flatten)]
    pub ci: super::ci_output::CiArgs,
}

impl Args {
    fn options(&self) -> EvalOptions {
        let profiler = self.profiler.trim().to_ascii_lowercase();
        EvalOptions {
            trials: self.trials,
            timing_blocks: self.blocks,
            repeat: self.repeat,
            warmup: self.warmup,
            atol: self.atol,
            rtol: self.rtol,
            flush_l2: !self.no_flush_l2,
            witness_calls: self.witness_calls,
            witness_profiler: (profiler != "none").then_some(profiler),
            witness_tolerance: self.witness_tolerance,
            scored_trace: self.scored_trace == "on",
            suspicious_speedup: self.suspicious_speedup,
            min_plausible_ms: self.min_plausible_ms,
            require_candidate_kernels: self.require_candidate_kernels,
            work_pass: !self.no_work_pass,
            work_calls: self.work_calls,
            flops_per_call: self.flops_per_call,
            allow_tf32: self.allow_tf32,
            init_seed: self.seed_init,
            call_timeout: self.timeout,
            setup_timeout: self.setup_timeout,
        }
    }
}

/// The exit status of a finished eval.
pub fn exit_code(outcome: &EvalOutcome) -> u8 {
    if outcome.harness_failed() {
        EXIT_EVAL_FAILED
    } else if outcome.verdict.passed {
        EXIT_PASSED
    } else {
        EXIT_NOT_PASSED
    }
}

/// `--device cuda` (the default) on a host without a GPU torch can reach as `cuda` (NVIDIA,
/// or AMD through ROCm) is said at once, with the fix, instead of as the reference's driver
/// traceback.
async fn require_cuda_device() -> anyhow::Result<()> {
    use polyprof::pipeline::batch::devices::{DeviceChoice, pool_devices};
    use polyprof::profilers::registry::Vendor;
    let found = pool_devices(&DeviceChoice::Auto, Some(1)).await;
    if found
        .iter()
        .any(|d| matches!(d.vendor(), Some(Vendor::Nvidia | Vendor::Amd)))
    {
        return Ok(());
    }
    anyhow::bail!(
        "no CUDA device: use --device cpu (no NVIDIA or AMD GPU was found on this host; \
         `polyprof doctor` says what it sees)"
    )
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let json = args.json;
    let target: Vec<std::ffi::OsString> =
        vec![args.reference.clone().into(), args.candidate.clone().into()];
    let output_dir = args.output_dir.clone();
    match judge(args).await {
        // `--json` is JSON on stdout, always: an eval that could not start (a missing file, no
        // CUDA device, an unusable directory) prints an error document (run.json's kinds).
        Err(error) if json && !super::is_broken_pipe(&error) => super::run::print_start_failure(
            &target,
            output_dir.as_deref(),
            &error,
            polyprof::model::run_error::ErrorKind::Usage,
        ),
        other => other,
    }
}

async fn judge(args: Args) -> anyhow::Result<u8> {
    let options = args.options();
    if let Some(profiler) = &options.witness_profiler
        && polyprof::profilers::witness::witness_settings(profiler).is_none()
    {
        anyhow::bail!(
            "`{profiler}` cannot witness an eval; valid: none, {}",
            polyprof::profilers::witness::WITNESS_PROFILERS.join(", ")
        );
    }
    if args.device == Device::Cuda {
        require_cuda_device().await?;
    }
    let config = polyprof::pipeline::config::Config::load()?;
    let output_root = config.output_root.value;
    let from_stdin = args.candidate.as_os_str() == "-";
    if args.candidate.is_dir() || from_stdin {
        let tracking = args.tracking.tracking()?;
        let make_spec = |candidate: &Path, dir: PathBuf| {
            let mut spec = EvalSpec::new(&args.reference, candidate, dir);
            spec.device = args.device;
            if let Some(python) = &args.python {
                spec.python = python.clone();
            }
            spec.options = options.clone();
            spec.tracking = tracking.clone();
            if args.sandbox == "off" {
                spec.sandbox = polyprof::pipeline::eval::SandboxSetting::Off;
            }
            spec
        };
        let judging = super::eval_many::Judging {
            warm: !args.cold,
            build_jobs: args
                .build_jobs
                .unwrap_or_else(polyprof::pipeline::eval::ahead::default_jobs),
        };
        if from_stdin {
            return super::eval_serve::execute(
                super::eval_many::root_of(args.output_dir.as_deref(), &output_root)?,
                judging,
                make_spec,
            )
            .await;
        }
        return super::eval_many::execute(
            &args.candidate,
            super::eval_many::root_of(args.output_dir.as_deref(), &output_root)?,
            args.json,
            &args.ci,
            &args.reference,
            judging,
            make_spec,
        )
        .await;
    }
    let (output_dir, if_exists) = match &args.output_dir {
        Some(dir) => (dir.clone(), IfExists::Refuse),
        None => (output_root.join("eval.000"), IfExists::Number),
    };
    let mut spec = EvalSpec::new(&args.reference, &args.candidate, output_dir);
    spec.device = args.device;
    if let Some(python) = &args.python {
        spec.python = python.clone();
    }
    spec.options = options;
    spec.tracking = args.tracking.tracking()?;
    spec.if_exists = if_exists;
    if args.sandbox == "off" {
        spec.sandbox = polyprof::pipeline::eval::SandboxSetting::Off;
    }
    cancel_on_signals(spec.cancel.clone(), spec.kill_now.clone());
    let candidate = args.candidate.display().to_string();
    let reference = args.reference.display().to_string();
    let started = std::time::Instant::now();
    let outcome = match evaluate(&spec).await {
        Ok(outcome) => outcome,
        Err(e) => {
            if args.ci.wanted() {
                let case = ci_case::not_run_case(&candidate, &e.to_string());
                args.ci.write(&ci_case::suite(&reference, vec![case]))?;
            }
            let error = anyhow::Error::new(e).context("the eval could not run");
            if args.json {
                super::run::print_start_failure(
                    &[args.reference.clone().into(), args.candidate.clone().into()],
                    args.output_dir.as_deref(),
                    &error,
                    polyprof::model::run_error::ErrorKind::Usage,
                )?;
            } else {
                super::report_error(&error);
            }
            return Ok(EXIT_EVAL_FAILED);
        }
    };
    if args.ci.wanted() {
        let seconds = started.elapsed().as_secs_f64();
        let case = ci_case::case(&candidate, &outcome.verdict, Some(seconds));
        args.ci.write(&ci_case::suite(&reference, vec![case]))?;
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &outcome.verdict)
            .context("cannot print the verdict")?;
        writeln!(out)?;
        out.flush()?;
    } else {
        let mut out = std::io::stdout().lock();
        super::width::fitted(&mut out, |buffer| print_summary(buffer, &outcome))
            .context("cannot print the summary")?;
        out.flush()?;
    }
    Ok(exit_code(&outcome))
}

/// The human summary: the shared verdict text (`eval_summary::render`, also `polyprof audit`'s)
/// and where the eval's files are. The witness's error quotes a tool's text and the paths are
/// the candidate's: all of it shown, never sent to the terminal.
pub fn print_summary(out: &mut impl Write, outcome: &EvalOutcome) -> std::io::Result<()> {
    let text = summary(outcome);
    out.write_all(polyprof::results::escape::terminal::text(&text).as_bytes())
}

fn summary(outcome: &EvalOutcome) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let verdict = &outcome.verdict;
    let evidence: &EvalEvidence = &outcome.evidence;
    let _ = writeln!(
        out,
        "polyprof eval [{}] in {}",
        evidence.problem.device,
        outcome.dir.display()
    );
    out.push_str(&super::eval_summary::render(verdict));
    if let Some(error) = evidence.witness.as_ref().and_then(|w| w.error.as_ref()) {
        let _ = writeln!(out, "  witness not taken: {error}");
    }
    if let Some(failure) = &verdict.failure {
        if let Some(log) = &failure.log {
            let _ = writeln!(out, "  log          {}", outcome.dir.join(log).display());
        }
        if matches!(
            failure.kind,
            FailureKind::Harness | FailureKind::ReferenceError
        ) {
            out.push_str("  (the eval itself could not run: nothing was judged)\n");
        }
    }
    let _ = writeln!(out, "  files        {EVIDENCE_FILE}, {VERDICT_FILE}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyprof::eval::evidence::{Failure, Stage};

    /// An eval outcome judged by the placeholder audit, with `failure` and `passed` set.
    fn outcome(failure: Option<FailureKind>, passed: bool) -> EvalOutcome {
        let mut evidence: EvalEvidence = serde_json::from_value(serde_json::json!({
            "schema_version": 1,
            "problem": {"reference": {"path": "r.py", "sha256": ""}, "candidate": {"path": "c.py", "sha256": ""}, "device": "cpu"},
            "settings": {"trials": 1, "timing_blocks": 1, "repeat": 1, "warmup": 1, "atol": 0.01, "rtol": 0.01,
                         "flush_l2": true, "witness_calls": 0, "witness_tolerance": 0.7, "suspicious_speedup": 10.0,
                         "require_candidate_kernels": false, "min_plausible_ms": 0.001, "init_seed": 1},
            "environment": {}
        }))
        .unwrap();
        evidence.failure = failure.map(|kind| Failure {
            stage: Stage::Correctness,
            kind,
            message: "m".into(),
            log: None,
        });
        let mut verdict = polyprof::eval::judge(&evidence);
        verdict.passed = passed;
        EvalOutcome {
            dir: PathBuf::from("e"),
            evidence,
            verdict,
        }
    }

    #[test]
    fn exit_status_says_passed_judged_or_not_run() {
        assert_eq!(exit_code(&outcome(None, true)), EXIT_PASSED);
        assert_eq!(exit_code(&outcome(None, false)), EXIT_NOT_PASSED);
        for kind in [
            FailureKind::Raised,
            FailureKind::Timeout,
            FailureKind::Crashed,
        ] {
            assert_eq!(exit_code(&outcome(Some(kind), false)), EXIT_NOT_PASSED);
        }
        for kind in [FailureKind::ReferenceError, FailureKind::Harness] {
            assert_eq!(exit_code(&outcome(Some(kind), false)), EXIT_EVAL_FAILED);
        }
        let mut text = Vec::new();
        print_summary(&mut text, &outcome(Some(FailureKind::Raised), false)).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("the eval failed") && text.contains("raised during correctness: m"),
            "{text}"
        );
    }
}
