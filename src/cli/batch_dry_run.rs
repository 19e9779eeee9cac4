//! `polyprof batch JOBS --dry-run`: the job file checked and each job it expands to shown with
//! its passes' profilers and profile cache (the batch's `--profile-cache` applied), running
//! nothing and creating nothing (a job file is checked without a GPU).

use std::io::Write;

use anyhow::Context;
use polyprof::pipeline::batch::{JobSpec, TaskOptions};
use polyprof::pipeline::profile_cache::ProfileCacheOptions;
use serde::Serialize;

/// One pass of a job as it would run.
#[derive(Serialize)]
struct PlannedPass {
    profiler: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile_cache: Option<ProfileCacheOptions>,
}

/// One job as it would run.
#[derive(Serialize)]
struct PlannedJob<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    stage: Option<&'static str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    target: &'a [String],
    eval: bool,
    passes: Vec<PlannedPass>,
}

fn plan<'a>(spec: &'a JobSpec, opts: &TaskOptions) -> anyhow::Result<PlannedJob<'a>> {
    let passes = if spec.eval.is_some() {
        Vec::new()
    } else {
        spec.passes(&opts.selection)
            .with_context(|| format!("job `{}`", spec.id))?
            .into_iter()
            .map(|p| PlannedPass {
                profile_cache: spec.profile_cache_for(&p.profiler, opts.profile_cache.as_ref()),
                profiler: p.profiler,
            })
            .collect()
    };
    Ok(PlannedJob {
        id: &spec.id,
        stage: spec.stage.as_ref().map(|s| s.stage.name()),
        target: &spec.target,
        eval: spec.eval.is_some(),
        passes,
    })
}

/// `cache DIR [scope S]` for a pass with the cache, else `-`.
fn cache_text(cache: Option<&ProfileCacheOptions>) -> String {
    let Some(c) = cache else {
        return "-".to_string();
    };
    let dir = c
        .dir
        .as_ref()
        .map_or("default".to_string(), |d| d.display().to_string());
    format!(
        "cache {dir} (audit {:.0} %, {} per fingerprint)",
        c.audit_share * 100.0,
        c.per_fingerprint
    )
}

/// Print every job of `specs` (JSON with `json`); exit status 0.
pub fn print(specs: &[JobSpec], opts: &TaskOptions, json: bool) -> anyhow::Result<u8> {
    let jobs = specs
        .iter()
        .map(|s| plan(s, opts))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &jobs).context("cannot print the jobs")?;
        writeln!(out)?;
        return Ok(0);
    }
    let mut cached = 0;
    for job in &jobs {
        let profilers: Vec<&str> = job.passes.iter().map(|p| p.profiler.as_str()).collect();
        let cache = job.passes.iter().find_map(|p| p.profile_cache.as_ref());
        cached += usize::from(cache.is_some());
        let what = if job.eval {
            "eval".to_string()
        } else {
            polyprof::profilers::quote::join(job.target).unwrap_or_else(|_| job.target.join(" "))
        };
        writeln!(
            out,
            "{}\t{}\t{}\t{what}",
            job.id,
            if profilers.is_empty() {
                "eval".to_string()
            } else {
                profilers.join(",")
            },
            cache_text(cache)
        )?;
    }
    let stages = jobs.iter().filter(|j| j.stage.is_some()).count();
    writeln!(
        out,
        "polyprof batch: {} jobs ({stages} stages of problems, {cached} with the profile cache) would run; nothing ran (--dry-run)",
        jobs.len()
    )?;
    Ok(0)
}
