//! `polyprof demo`: profile a small bundled workload with the best profiler this machine has
//! (Nsight Compute with a bundled CUDA program when ncu and nvcc are usable; the built-in
//! `none` profiler with a CPU workload anywhere else), print the report, and leave the run
//! directory with a Hatchet and a Chrome trace file next to `run.json`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use polyprof::model::ProbeRequest;
use polyprof::pipeline::job::pass_label;
use polyprof::pipeline::{Job, Profiler, profile, run_probe};
use polyprof::profilers::ncu::{ClockControl, NcuOptions};
use polyprof::profilers::{self, EndMarker, ProfilerSettings};
use polyprof::results::devices::DeviceTable;
use polyprof::results::export::{self, Format, Report};
use polyprof::results::profile::SCOPES_FILE;

/// The CUDA program profiled on NVIDIA machines (the same four kernels as the H200 fixtures).
const KERNELS_CU: &str = include_str!("../../tests/fixtures/ncu-h200/kernels.cu");
/// Where the CPU workload writes its call-path scopes (in the demo directory).
const CPU_SCOPES: &str = "cpu-scopes.json";

/// Arguments of `polyprof demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where the run directory goes.
    #[arg(long, default_value = "polyprof-runs/demo")]
    pub output_dir: PathBuf,
    /// Which profiler: auto (ncu when usable, else none), ncu or none.
    #[arg(long, default_value = "auto", value_parser = ["auto", "ncu", "none"])]
    pub profiler: String,
    /// ncu clock control (base locks clocks; none is needed on MIG and some VMs)
    /// [default: `clock_control` of the configuration (`polyprof config`), else base].
    #[arg(long, value_parser = ["base", "none"])]
    pub clock_control: Option<String>,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let config = polyprof::pipeline::config::Config::load()?;
    let clock_control = args
        .clock_control
        .clone()
        .unwrap_or_else(|| config.clock_control.value.clone());
    let ncu_usable = match args.profiler.as_str() {
        "none" => false,
        choice => {
            let why = ncu_unusable_reason(&args.output_dir).await;
            if let Some(why) = &why {
                if choice == "ncu" {
                    anyhow::bail!("cannot run the demo under ncu: {why}");
                }
                eprintln!("polyprof demo: using the built-in `none` profiler ({why})");
            }
            why.is_none()
        }
    };
    fresh_dir(&args.output_dir)?;
    let mut job = if ncu_usable {
        let app = build_cuda_workload(&args.output_dir).await?;
        let mut job = Job::new(
            vec![app.as_os_str().into(), "1".into()],
            args.output_dir.join(pass_label("ncu", 0)),
        );
        job.profiler = "ncu".into();
        job.settings = ProfilerSettings {
            ncu: NcuOptions {
                clock_control: if clock_control == "none" {
                    ClockControl::None
                } else {
                    ClockControl::Base
                },
                ..NcuOptions::default()
            },
            ..ProfilerSettings::default()
        };
        job
    } else {
        let exe = std::env::current_exe()
            .context("cannot find the polyprof executable for the CPU workload")?;
        let scopes = std::path::absolute(args.output_dir.join(CPU_SCOPES))
            .context("cannot resolve the demo directory")?;
        let mut job = Job::new(
            vec![
                exe.as_os_str().into(),
                "demo-workload".into(),
                "--scopes".into(),
                scopes.as_os_str().into(),
            ],
            args.output_dir.join(pass_label("none", 0)),
        );
        job.settings.end_marker = Some(EndMarker::Pytest);
        job
    };
    job.call_path = vec!["demo".into()];
    let run = profile(&job).await;
    let peaks = super::report::peaks_for(&DeviceTable::builtin()?, &run, None)?;
    let mut report = Report::from_run(run.clone(), peaks);
    if !ncu_usable {
        add_cpu_scopes(
            &mut report,
            &args.output_dir.join(CPU_SCOPES),
            &job.output_dir,
        )?;
    }
    let hatchet = job.output_dir.join("profile.hatchet.json");
    let chrome = job.output_dir.join("trace.chrome.json");
    export::write_file(&report, Format::Hatchet, &hatchet)?;
    export::write_file(&report, Format::Chrome, &chrome)?;
    // The picture: the same self-contained page `polyprof report --format html` writes.
    let page = job.output_dir.join("report.html");
    export::write_file(&report, Format::Html, &page)?;
    let mut out = std::io::stdout().lock();
    // The table speaks for `polyprof report`; demo takes no --device, so point there.
    let table = String::from_utf8_lossy(&export::render(&report, Format::Table)?).replace(
        "(pass --device NAME for the roofline)",
        "(`polyprof report RUN_DIR --device NAME` adds the roofline)",
    );
    out.write_all(table.as_bytes())?;
    writeln!(out, "\nrun directory: {}", job.output_dir.display())?;
    writeln!(
        out,
        "html page:     {}  (open in a browser)",
        page.display()
    )?;
    writeln!(out, "hatchet:       {}", hatchet.display())?;
    writeln!(
        out,
        "chrome trace:  {}  (open in https://ui.perfetto.dev)",
        chrome.display()
    )?;
    writeln!(
        out,
        "next:          polyprof report {} --format csv",
        job.output_dir.display()
    )?;
    if run.kernels.is_empty()
        && let Some(attempt) = run.steps.last().and_then(|s| s.attempts.last())
    {
        writeln!(out, "\nworkload output (last lines):")?;
        for line in attempt
            .stdout
            .head
            .iter()
            .chain(&attempt.stdout.tail)
            .rev()
            .take(6)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            writeln!(out, "  {}", polyprof::results::escape::terminal::line(line))?;
        }
    }
    for error in &run.errors {
        let error = error.to_string();
        writeln!(
            out,
            "error: {}",
            polyprof::results::escape::terminal::text(&error)
        )?;
    }
    if !ncu_usable {
        super::demo_replay::show(&args.output_dir, &mut out)?;
    }
    Ok(super::run::exit_code(&run))
}

/// The CPU workload's kernels as scopes under the run's own step (`demo / none.000 / …`), with
/// the FLOPs and bytes the workload gave them, so the table shows GFLOP/s and GB/s; saved in the
/// run directory too, so `polyprof report RUN_DIR` and its exports show them again.
fn add_cpu_scopes(report: &mut Report, path: &Path, run_dir: &Path) -> anyhow::Result<()> {
    let Ok(text) = std::fs::read(path) else {
        eprintln!(
            "polyprof demo: the CPU workload wrote no scopes ({}); the table shows the run only",
            path.display()
        );
        return Ok(());
    };
    let scopes: polyprof::results::Profile = serde_json::from_slice(&text)
        .with_context(|| format!("cannot read the CPU workload's scopes {}", path.display()))?;
    let saved = run_dir.join(SCOPES_FILE);
    std::fs::write(&saved, &text).with_context(|| format!("cannot write {}", saved.display()))?;
    report.add_scopes(scopes);
    Ok(())
}

/// Why ncu cannot run the demo here (preflight, or no nvcc to build the workload).
async fn ncu_unusable_reason(dir: &Path) -> Option<String> {
    let dir = dir.to_path_buf();
    let preflight = tokio::task::spawn_blocking(move || {
        profilers::create("ncu", &dir, &ProfilerSettings::default()).map(|p| p.preflight())
    })
    .await;
    match preflight {
        Ok(Ok(p)) if p.available => which::which("nvcc")
            .is_err()
            .then(|| "nvcc is not on PATH to build the CUDA workload".to_string()),
        Ok(Ok(p)) => Some(p.reason.unwrap_or_else(|| "ncu is unavailable".into())),
        Ok(Err(e)) => Some(e.to_string()),
        Err(e) => Some(format!("preflight failed: {e}")),
    }
}

/// The demo owns its directory: clear what an earlier demo left so profilers see a clean one.
fn fresh_dir(dir: &Path) -> anyhow::Result<()> {
    for entry in [
        pass_label("ncu", 0),
        pass_label("none", 0),
        "build".to_string(),
    ] {
        let path = dir.join(entry);
        if path.exists() {
            std::fs::remove_dir_all(&path)
                .with_context(|| format!("cannot clear {}", path.display()))?;
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}

/// nvcc builds the four-kernel program in seconds; a build still running after this is stuck.
const NVCC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Compile the bundled CUDA program for the GPU in this machine.
async fn build_cuda_workload(dir: &Path) -> anyhow::Result<PathBuf> {
    let build = dir.join("build");
    std::fs::create_dir_all(&build)
        .with_context(|| format!("cannot create {}", build.display()))?;
    let source = build.join("kernels.cu");
    std::fs::write(&source, KERNELS_CU)
        .with_context(|| format!("cannot write {}", source.display()))?;
    let app = build.join("kernels");
    let argv = [
        "-O3".to_string(),
        "-arch=native".into(),
        "-lineinfo".into(),
        "-o".into(),
        app.display().to_string(),
        source.display().to_string(),
    ];
    let mut command = ProbeRequest::new("nvcc", &[], NVCC_TIMEOUT);
    command.args = argv.to_vec();
    // Ctrl-C stops nvcc's whole process group instead of waiting for the build.
    let cancel = tokio_util::sync::CancellationToken::new();
    let on_signal = cancel.clone();
    let watcher = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
        }
    });
    let output = tokio::task::spawn_blocking(move || run_probe(&command, &cancel)).await;
    watcher.abort();
    let output = output.context("the nvcc build task failed")??;
    if !output.success() {
        anyhow::bail!(
            "nvcc failed to build the demo workload ({}): {}",
            output.status_text(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(std::fs::canonicalize(&app).unwrap_or(app))
}
