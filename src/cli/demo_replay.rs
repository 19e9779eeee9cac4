//! The GPU half of `polyprof demo` on a machine without one: a bundled real H200 capture (three
//! cuBLAS matmuls in bf16, fp16 and tf32, and PyTorch's RNG fills, tests/fixtures/ncu-h200-tensor)
//! replayed through the same parse → run document → report → export path a profiled run takes.
//! It is labelled a replay everywhere: nothing in it was measured on this machine.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use polyprof::profilers::ncu::parse::flag_empty;
use polyprof::profilers::ncu::{ParseOptions, device_from_session, parse};
use polyprof::results::devices::DeviceTable;
use polyprof::results::export::{self, Format, Report};

/// `ncu --csv --page raw` of the tensor capture, verbatim (its README says how it was taken).
const H200_CAPTURE: &[u8] = include_bytes!("../../tests/fixtures/ncu-h200-tensor/mm_tensor.csv");
const CAPTURE_NAME: &str = "tests/fixtures/ncu-h200-tensor/mm_tensor.csv (bundled)";
/// The replay's directory inside the demo directory.
pub const REPLAY_DIR: &str = "h200-replay";

/// Parse the capture, write `DIR/h200-replay/run.json` and its Hatchet and Chrome exports, print
/// its table.
pub fn show(demo_dir: &Path, out: &mut dyn Write) -> anyhow::Result<PathBuf> {
    let mut parsed = parse(H200_CAPTURE, &ParseOptions::default());
    parsed.device = device_from_session(&parsed.session);
    let count = parsed.kernels.len();
    flag_empty(&mut parsed, count);
    let files = [PathBuf::from(CAPTURE_NAME)];
    let mut run = super::parse_run::run_document("ncu", &files, parsed, Vec::new());
    run.label = "h200-replay".to_string();
    run.output_dir = demo_dir.join(REPLAY_DIR);
    run.warnings.insert(
        0,
        "REPLAY of a saved NVIDIA H200 capture, not a measurement on this machine".to_string(),
    );
    std::fs::create_dir_all(&run.output_dir)
        .with_context(|| format!("cannot create {}", run.output_dir.display()))?;
    let dir = run.output_dir.clone();
    run.write(&dir)?;
    let peaks = super::report::peaks_for(&DeviceTable::builtin()?, &run, None)?;
    let report = Report::from_run(run, peaks);
    let hatchet = dir.join("profile.hatchet.json");
    export::write_file(&report, Format::Hatchet, &hatchet)?;
    let chrome = dir.join("trace.chrome.json");
    export::write_file(&report, Format::Chrome, &chrome)?;
    writeln!(
        out,
        "\n=== What a GPU profile looks like: REPLAY of a real H200 capture (not measured here) ==="
    )?;
    let width = super::width::table_width_for(false);
    out.write_all(export::table::render_fitted(&report, width).as_bytes())?;
    writeln!(out, "\nreplay run:    {}", dir.join("run.json").display())?;
    writeln!(out, "replay hatchet: {}", hatchet.display())?;
    writeln!(out, "replay trace:  {}", chrome.display())?;
    Ok(dir)
}
