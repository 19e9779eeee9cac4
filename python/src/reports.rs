//! Reading and comparing runs: `load`, `diff` (the CLI's verdict), `report` (every export
//! format). Runs cross as JSON text; paths to run directories or `run.json` files work too.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use polyprof::results::ProfileRun;
use polyprof::results::devices::DeviceTable;
use polyprof::results::diff::{DiffOptions, diff_runs};
use polyprof::results::export::{self, Format, Report};

use crate::errors;

/// Read a run directory or `run.json`; returns the run document as JSON.
#[pyfunction]
fn load_json(path: PathBuf) -> PyResult<String> {
    let run = ProfileRun::read(&path).map_err(errors::to_py)?;
    serde_json::to_string(&run).map_err(errors::json)
}

fn parse_run(json: &str, what: &str) -> PyResult<ProfileRun> {
    serde_json::from_str(json)
        .map_err(|e| errors::usage(format!("{what}: not a run document: {e}")))
}

/// Compare two runs (JSON documents) as `polyprof diff` does (per-kernel medians, a relative
/// threshold, an absolute floor, an optional minimum duration); returns `(diff_json,
/// table_text, regressed)`.
#[pyfunction]
#[pyo3(signature = (a_json, b_json, threshold_pct, a_name = None, b_name = None, min_change_ns = None, min_duration_ns = None))]
#[allow(clippy::too_many_arguments)]
fn diff_json(
    a_json: &str,
    b_json: &str,
    threshold_pct: f64,
    a_name: Option<String>,
    b_name: Option<String>,
    min_change_ns: Option<f64>,
    min_duration_ns: Option<f64>,
) -> PyResult<(String, String, bool)> {
    let check = |what: &str, value: f64| {
        if value.is_finite() && value >= 0.0 {
            Ok(value)
        } else {
            Err(errors::usage(format!(
                "{what} must be a number >= 0; got {value}"
            )))
        }
    };
    let mut options = DiffOptions {
        threshold_pct: check("threshold", threshold_pct)?,
        ..DiffOptions::default()
    };
    if let Some(ns) = min_change_ns {
        options.floor_ns = check("min_change_ns", ns)?;
    }
    if let Some(ns) = min_duration_ns {
        options.min_duration_ns = check("min_duration_ns", ns)?;
    }
    let a = parse_run(a_json, "run a")?;
    let b = parse_run(b_json, "run b")?;
    let mut diff = diff_runs(&a, &b, &options).map_err(|e| errors::usage(e.to_string()))?;
    if let Some(name) = a_name {
        diff.a = format!("{name} ({})", diff.a);
    }
    if let Some(name) = b_name {
        diff.b = format!("{name} ({})", diff.b);
    }
    let json = serde_json::to_string(&diff).map_err(errors::json)?;
    Ok((json, diff.render(None), diff.regressed()))
}

/// Render a run (JSON document) in `format` (`table`, `json`, `csv`, `hatchet`, `chrome`,
/// `html`, `svg`),
/// with the device's peaks from the built-in table (or `device`).
#[pyfunction]
#[pyo3(signature = (run_json, format = "table", device = None))]
fn render<'py>(
    py: Python<'py>,
    run_json: &str,
    format: &str,
    device: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let format: Format = format.parse().map_err(errors::to_py)?;
    let run = parse_run(run_json, "run")?;
    let table = DeviceTable::builtin().map_err(errors::to_py)?;
    let peaks = match device {
        Some(name) => Some(table.require(name).map_err(errors::to_py)?.clone()),
        None => run
            .device
            .as_ref()
            .and_then(|d| table.lookup(&d.name))
            .cloned(),
    };
    let report = Report::from_run(run, peaks);
    let bytes = export::render(&report, format).map_err(errors::to_py)?;
    Ok(PyBytes::new(py, &bytes))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(load_json, m)?)?;
    m.add_function(wrap_pyfunction!(diff_json, m)?)?;
    m.add_function(wrap_pyfunction!(render, m)?)?;
    Ok(())
}
