//! The table `polyprof batch` ends with: one row per job (state, device, attempts, time,
//! kernels, what went wrong), the devices, and the totals.

use std::io::Write;

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets::UTF8_BORDERS_ONLY};
use polyprof::model::batch::{BatchEntry, BatchIndex, EntryState};

/// What a row says about how a job ended: its top kernel when it succeeded, else the
/// outcome and the first error.
fn note(entry: &BatchEntry) -> String {
    if entry.state == EntryState::Succeeded {
        return entry.top_kernel.clone().unwrap_or_default();
    }
    let mut parts = Vec::new();
    if let Some(o) = &entry.outcome {
        parts.push(o.to_string());
    }
    if let Some(e) = entry.device_error.as_ref().or(entry.errors.last()) {
        parts.push(e.chars().take(100).collect());
    }
    parts.join("; ")
}

/// Print the summary of `index` to `out`; `root` is where the batch lives.
pub fn print(out: &mut impl Write, index: &BatchIndex, root: &str) -> std::io::Result<()> {
    let mut table = Table::new();
    table
        .load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header([
            "job", "state", "device", "tries", "time s", "kernels", "note",
        ]);
    for id in &index.order {
        let Some(e) = index.jobs.get(id) else {
            continue;
        };
        table.add_row(vec![
            Cell::new(&e.id),
            Cell::new(e.state),
            Cell::new(e.device.as_deref().unwrap_or("-")),
            Cell::new(e.attempts).set_alignment(CellAlignment::Right),
            Cell::new(e.duration_s.map_or("-".to_string(), |d| format!("{d:.2}")))
                .set_alignment(CellAlignment::Right),
            Cell::new(e.kernels).set_alignment(CellAlignment::Right),
            Cell::new(note(e)),
        ]);
    }
    writeln!(out, "{table}")?;
    for d in &index.devices {
        if d.jobs_done + d.jobs_failed == 0 && d.quarantined.is_none() {
            continue;
        }
        let mut line = format!(
            "  {}: {} done, {} failed",
            d.name, d.jobs_done, d.jobs_failed
        );
        if let Some(why) = &d.quarantined {
            line.push_str(&format!(" — quarantined ({why})"));
        }
        writeln!(out, "{line}")?;
    }
    let counts: Vec<String> = index
        .counts()
        .iter()
        .map(|(state, n)| format!("{n} {state}"))
        .collect();
    writeln!(
        out,
        "polyprof batch: {} jobs: {} in {:.1} s; index: {root}/batch.json",
        index.jobs.len(),
        counts.join(", "),
        (index.updated_unix_s - index.started_unix_s).max(0.0)
    )
}
