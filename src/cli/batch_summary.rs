//! The table `polyprof batch` ends with: one row per job (state, device, attempts, time,
//! kernels, what went wrong), the devices, and the totals.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use comfy_table::{Cell, CellAlignment};
use polyprof::model::batch::{
    BatchEntry, BatchIndex, BatchProfileCache, CascadeSummary, EntryState, EvalSummary,
};
use polyprof::results::escape::terminal;

/// What a row says about how a job ended: its top kernel when it succeeded, else the
/// outcome and the first error.
fn note(entry: &BatchEntry) -> String {
    if let Some(eval) = &entry.eval {
        return eval_note(eval, entry);
    }
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

/// An eval job's row: the verdict's status, the speedup with its interval, the findings, and
/// why it stopped when it did.
fn eval_note(eval: &EvalSummary, entry: &BatchEntry) -> String {
    let mut parts = vec![if eval.passed {
        "passed".to_string()
    } else {
        format!("not passed ({})", eval.status)
    }];
    if let Some(s) = &eval.speedup {
        parts.push(format!(
            "speedup {:.2}× [{:.2}–{:.2}]",
            s.value, s.ci_low, s.ci_high
        ));
    }
    if !eval.findings.is_empty() {
        parts.push(format!("findings: {}", eval.findings.join(", ")));
    }
    if eval.failure.is_some()
        && let Some(e) = entry.errors.last()
    {
        parts.push(e.chars().take(100).collect());
    }
    parts.join("; ")
}

/// Exit status when some job did not succeed (a cancelled batch exits 130 instead).
pub const EXIT_SOME_FAILED: u8 = 1;

/// ` (3 kept from the earlier run, 2 rerun as their definition changed)`, or nothing.
pub fn kept_note(kept: usize, changed: usize) -> String {
    let mut parts = Vec::new();
    if kept > 0 {
        parts.push(format!("{kept} kept from the earlier run"));
    }
    if changed > 0 {
        parts.push(format!("{changed} rerun as their definition changed since"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// How a batch ends, local or on Slurm: the index (`--json`) or the summary table on stdout,
/// then the exit status (0 when every job succeeded).
pub fn finish(
    index: &BatchIndex,
    root: &str,
    json: bool,
    cancelled: bool,
    ci: &super::ci_output::CiArgs,
) -> anyhow::Result<u8> {
    if ci.wanted() {
        let tails = stderr_tails(index, root);
        ci.write(&polyprof::results::ci_batch::suite_with_tails(
            index, &tails,
        ))?;
    }
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, index).context("cannot print the index")?;
        writeln!(out)?;
    } else {
        // Job notes, errors and findings carry what commands and candidates printed: their
        // control characters are shown, never sent.
        let mut text = Vec::new();
        super::width::fitted(&mut text, |buffer| print(buffer, index, root))?;
        out.write_all(terminal::text(&String::from_utf8_lossy(&text)).as_bytes())?;
    }
    if cancelled {
        return Ok(super::run::EXIT_CANCELLED);
    }
    // A job the cascade skipped is the cascade's answer, not a failure (the stage that
    // decided has its own entry).
    let all_ok = index
        .jobs
        .values()
        .all(|e| matches!(e.state, EntryState::Succeeded | EntryState::Skipped));
    Ok(if all_ok { 0 } else { EXIT_SOME_FAILED })
}

/// The last lines of stderr a CI output carries for a job that did not succeed.
const STDERR_TAIL_LINES: usize = 20;

/// The last lines of stderr of each job that did not succeed, from its run.json (the last
/// attempt of its last step); a job without one (lost, never started) has none. The batch
/// page (`report BATCH_ROOT`) carries them too.
pub fn stderr_tails(
    index: &BatchIndex,
    root: &str,
) -> std::collections::BTreeMap<String, Vec<String>> {
    index
        .jobs
        .values()
        .filter(|e| !matches!(e.state, EntryState::Succeeded | EntryState::Skipped))
        .filter_map(|entry| {
            // A crafted index cannot make a report quote a run.json outside the root.
            let dir =
                polyprof::model::under_root::resolve(Path::new(root), &entry.run_dir, "batch.json")
                    .ok()?;
            let path = dir.join("run.json");
            let run = polyprof::model::run::ProfileRun::read(&path).ok()?;
            let attempt = run.steps.last()?.attempts.last()?;
            // A short stream is all head; a long one keeps its last lines in the tail.
            let stderr = &attempt.stderr;
            let lines: Vec<&String> = stderr.head.iter().chain(&stderr.tail).collect();
            let start = lines.len().saturating_sub(STDERR_TAIL_LINES);
            Some((
                entry.id.clone(),
                lines[start..]
                    .iter()
                    .map(|l| l.to_string())
                    .collect::<Vec<String>>(),
            ))
        })
        .filter(|(_, tail)| !tail.is_empty())
        .collect()
}

/// Up to this many jobs every job gets a row; in a larger batch only the jobs that did not
/// succeed do (the index has them all).
pub const ALL_ROWS_UP_TO: usize = 50;

/// The cascade's lines: per stage, the jobs that ran, passed and were skipped, and the device
/// seconds the skips saved.
fn print_cascade(out: &mut impl Write, cascade: &CascadeSummary) -> std::io::Result<()> {
    writeln!(
        out,
        "  cascade: {:<8} {:>6} {:>7} {:>8} {:>10}",
        "stage", "ran", "passed", "skipped", "device s"
    )?;
    for s in &cascade.stages {
        writeln!(
            out,
            "           {:<8} {:>6} {:>7} {:>8} {:>10.1}",
            s.stage, s.ran, s.passed, s.skipped, s.device_s
        )?;
    }
    let mut line = format!(
        "  the cascade saved about {:.1} device seconds (a job skipped after a failed stage: what that failure took; after the profile rule: its stage's mean time)",
        cascade.saved_device_s
    );
    if !cascade.unestimated.is_empty() {
        line.push_str(&format!(
            "; not counted: {} (no job of the stage ran to measure)",
            cascade.unestimated.join(", ")
        ));
    }
    writeln!(out, "{line}")?;
    if let Some(cache) = cascade.saved_by_cache_s {
        writeln!(
            out,
            "  the profile cache saved about {cache:.1} device seconds"
        )?;
    }
    Ok(())
}

/// The profile cache's lines: hits of fingerprints, what was profiled and saved, and the
/// audit sample's disagreements (each names its job and key).
fn print_profile_cache(out: &mut impl Write, cache: &BatchProfileCache) -> std::io::Result<()> {
    writeln!(
        out,
        "  profile cache: {} hits of {} fingerprints ({:.1} %), {} profiled, saved about {:.1} s ({} runs, {} launches, {} repeats, fingerprinting {:.1} s)",
        cache.hits,
        cache.fingerprints,
        cache.hit_rate * 100.0,
        cache.profiled,
        cache.saved_s,
        cache.runs,
        cache.launches,
        cache.repeats,
        cache.fingerprint_s
    )?;
    if cache.audited > 0 || cache.disagreements > 0 {
        writeln!(
            out,
            "  audit sample: {} hits re-profiled, {} disagreed (invalidated)",
            cache.audited, cache.disagreements
        )?;
    }
    for d in cache.disagreed.iter().take(10) {
        writeln!(
            out,
            "    {}: {} cached {:.0} ns, measured {:.0} ns (tolerance {:.0} %), key {}",
            d.job,
            d.kernel,
            d.cached_ns,
            d.measured_ns,
            d.tolerance * 100.0,
            d.key
        )?;
    }
    if cache.disagreed.len() > 10 {
        writeln!(
            out,
            "    … {} more in batch.json",
            cache.disagreed.len() - 10
        )?;
    }
    if cache.bypassed > 0 {
        writeln!(
            out,
            "  {} runs bypassed the cache (their run.json says why)",
            cache.bypassed
        )?;
    }
    Ok(())
}

/// Print the summary of `index` to `out`; `root` is where the batch lives.
pub fn print(out: &mut impl Write, index: &BatchIndex, root: &str) -> std::io::Result<()> {
    let all = index.jobs.len() <= ALL_ROWS_UP_TO;
    let mut table = super::width::table();
    table.set_header([
        "job", "state", "device", "tries", "time s", "kernels", "note",
    ]);
    let mut hidden = 0;
    for id in &index.order {
        let Some(e) = index.jobs.get(id) else {
            continue;
        };
        if !all && matches!(e.state, EntryState::Succeeded | EntryState::Skipped) {
            hidden += 1;
            continue;
        }
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
    if table.row_count() > 0 {
        super::width::keep_whole(&mut table, 0);
        writeln!(out, "{}", super::width::render(&table))?;
    }
    if hidden > 0 {
        writeln!(
            out,
            "  ({hidden} succeeded or skipped jobs not listed; `--json` or {root}/batch.json has every job)"
        )?;
    }
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
    if let Some(cascade) = &index.cascade {
        print_cascade(out, cascade)?;
    }
    if let Some(cache) = &index.profile_cache {
        print_profile_cache(out, cache)?;
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

/// The stderr line for the `n`th of `total` jobs to finish on a cluster, with its node if known.
pub fn finished_line(n: usize, total: usize, entry: &BatchEntry, node: Option<&str>) -> String {
    // The node's name is the scheduler's text: shown, never sent.
    let node = node
        .map(|n| format!(" on {}", terminal::line(n)))
        .unwrap_or_default();
    format!(
        "polyprof batch: [{n}/{total}] {}: {}{node}",
        entry.id, entry.state
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyprof::model::batch::{Backend, BatchEntry};

    fn index_of(ok: usize, failed: &[&str]) -> BatchIndex {
        let mut entries: Vec<BatchEntry> = (0..ok)
            .map(|i| {
                let mut e = BatchEntry::pending(&format!("ok{i}"), Default::default());
                e.state = EntryState::Succeeded;
                e
            })
            .collect();
        for id in failed {
            let mut e = BatchEntry::pending(id, Default::default());
            e.state = EntryState::Failed;
            e.errors.push("it broke".into());
            entries.push(e);
        }
        BatchIndex::new("jobs", Backend::Local, entries)
    }

    fn printed(index: &BatchIndex) -> String {
        let mut out = Vec::new();
        print(&mut out, index, "root").unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_small_batch_lists_every_job_and_a_large_one_only_the_failures() {
        let small = printed(&index_of(3, &["bad"]));
        assert!(small.contains("ok2") && small.contains("bad") && small.contains("it broke"));
        assert!(small.contains("4 jobs: 3 succeeded, 1 failed"), "{small}");
        let large = printed(&index_of(60, &["bad"]));
        assert!(!large.contains("ok59") && large.contains("bad"), "{large}");
        assert!(
            large.contains("60 succeeded or skipped jobs not listed"),
            "{large}"
        );
    }

    #[test]
    fn an_eval_row_says_status_speedup_and_findings() {
        use polyprof::model::batch::SpeedupSummary;
        let mut e = BatchEntry::pending("k", Default::default());
        e.state = EntryState::Succeeded;
        e.eval = Some(EvalSummary {
            passed: false,
            status: "correct".into(),
            speedup: Some(SpeedupSummary {
                value: 41.5,
                ci_low: 39.0,
                ci_high: 44.25,
            }),
            findings: vec!["suspicious_speedup".into()],
            device: "cpu".into(),
            ..Default::default()
        });
        assert_eq!(
            note(&e),
            "not passed (correct); speedup 41.50× [39.00–44.25]; findings: suspicious_speedup"
        );
        let mut failed = BatchEntry::pending("r", Default::default());
        failed.state = EntryState::Failed;
        failed
            .errors
            .push("the candidate failed: raised during correctness: boom".into());
        failed.eval = Some(EvalSummary {
            status: "failed".into(),
            failure: Some("raised".into()),
            ..Default::default()
        });
        assert_eq!(
            note(&failed),
            "not passed (failed); the candidate failed: raised during correctness: boom"
        );
    }

    #[test]
    fn the_cascade_lines_count_each_stage_and_what_was_saved() {
        use polyprof::model::batch::{CascadeSummary, StageCounts};
        let mut index = index_of(2, &[]);
        let stage = |name: &str, ran, passed, skipped, device_s| StageCounts {
            stage: name.into(),
            ran,
            passed,
            skipped,
            device_s,
        };
        index.cascade = Some(CascadeSummary {
            stages: vec![
                stage("check", 4, 3, 0, 8.0),
                stage("profile", 1, 1, 2, 30.0),
            ],
            saved_device_s: 60.0,
            unestimated: vec!["time".into()],
            saved_by_cache_s: None,
        });
        let text = printed(&index);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("profile"))
            .collect();
        assert_eq!(
            lines,
            ["           profile       1       1        2       30.0"],
            "{text}"
        );
        assert!(
            text.contains("the cascade saved about 60.0 device seconds"),
            "{text}"
        );
        assert!(text.contains("not counted: time"), "{text}");
        assert!(!text.contains("profile cache"), "{text}");
        // A skipped job is the cascade's answer, not a failure: exit 0.
        let mut e = BatchEntry::pending("s", Default::default());
        e.state = EntryState::Skipped;
        index.jobs.insert("s".into(), e);
        assert_eq!(
            finish(&index, "root", true, false, &Default::default()).unwrap(),
            0
        );
    }

    #[test]
    fn the_profile_cache_line_gives_hits_profiled_and_saved() {
        use polyprof::model::batch::BatchCacheDisagreement;
        let mut index = index_of(1, &[]);
        index.profile_cache = Some(BatchProfileCache {
            runs: 3,
            launches: 40,
            fingerprints: 8,
            profiled: 3,
            hits: 5,
            hit_rate: 0.625,
            repeats: 32,
            audited: 1,
            disagreements: 1,
            disagreed: vec![BatchCacheDisagreement {
                job: "mm.k3.profile".into(),
                key: "ab12".into(),
                kernel: "saxpy".into(),
                cached_ns: 100.0,
                measured_ns: 180.0,
                tolerance: 0.1,
            }],
            saved_s: 2.94,
            ..Default::default()
        });
        let text = printed(&index);
        assert!(
            text.contains(
                "profile cache: 5 hits of 8 fingerprints (62.5 %), 3 profiled, saved about 2.9 s"
            ),
            "{text}"
        );
        assert!(text.contains("1 hits re-profiled, 1 disagreed"), "{text}");
        assert!(
            text.contains("mm.k3.profile: saxpy cached 100 ns, measured 180 ns"),
            "{text}"
        );
    }
}
