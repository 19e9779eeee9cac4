//! `polyprof doctor`: every profiler backend, whether it can run here, its version, and how to
//! fix what is missing. Always exits 0: a machine without profilers is a valid answer.

use std::path::Path;

use serde::Serialize;

use polyprof::model::Probe;
use polyprof::pipeline::{HostProbe, Profiler};
use polyprof::profilers::{self, PROFILER_NAMES, Preflight};
use polyprof::results::escape::terminal;

/// Version of the `doctor --json` document; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Arguments of `polyprof doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON document on stdout (schema in docs/selection.md).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct Host {
    os: &'static str,
    arch: &'static str,
    root: bool,
}

#[derive(Debug, Serialize)]
struct Report {
    schema_version: u32,
    host: Host,
    /// Names of the profilers that can run here, in display order.
    available: Vec<String>,
    profilers: Vec<Preflight>,
    /// Backends built into polyprof (`none`), always available.
    builtin: Vec<Preflight>,
    /// How `polyprof run` ends the command's descendants here.
    tracking: Tracking,
}

#[derive(Debug, Serialize)]
struct Tracking {
    /// A supervising child subreaper (Linux), else the process group only.
    subreaper: bool,
    cgroup_v2: polyprof::pipeline::runner::cgroup::CgroupSupport,
}

fn tracking() -> Tracking {
    Tracking {
        subreaper: cfg!(target_os = "linux"),
        cgroup_v2: polyprof::pipeline::runner::cgroup::probe(),
    }
}

/// The built-in `none` backend: always available, runs the command as is.
fn none_preflight() -> Preflight {
    let mut p = Preflight::new("none");
    p.check(
        "builtin",
        true,
        "built in: runs the command as is (outcome, timings, output)".to_string(),
    );
    p.finish()
}

/// Run one backend's preflight. A backend that checks nothing cannot claim to be available.
fn preflight_of(name: &str) -> Preflight {
    let profiler = match profilers::create(name, Path::new("."), &Default::default()) {
        Ok(profiler) => profiler,
        Err(error) => {
            let mut p = Preflight::new(name);
            p.check(
                "create",
                false,
                format!("cannot build the backend: {error}"),
            );
            return p.finish();
        }
    };
    let mut p = profiler.preflight();
    if p.checks.is_empty() {
        p.check(
            "preflight",
            false,
            format!("the {name} backend has no preflight yet, so polyprof cannot tell whether it runs here"),
        );
        p = p.finish();
    }
    p
}

/// All backends' preflights, probed concurrently (each may wait on a version command).
pub async fn preflights() -> Vec<Preflight> {
    let tasks: Vec<_> = PROFILER_NAMES
        .iter()
        .map(|name| {
            let name = name.to_string();
            tokio::task::spawn_blocking(move || preflight_of(&name))
        })
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for (task, name) in tasks.into_iter().zip(PROFILER_NAMES) {
        out.push(task.await.unwrap_or_else(|error| {
            let mut p = Preflight::new(name);
            p.check(
                "preflight",
                false,
                format!("the preflight crashed: {error}"),
            );
            p.finish()
        }));
    }
    out
}

fn render_table(list: &[Preflight]) -> String {
    let mut table = super::width::table();
    table.set_header(["profiler", "available", "version", "details"]);
    for p in list {
        let mut details = match &p.reason {
            Some(reason) => reason.clone(),
            None => "ready".to_string(),
        };
        for warning in &p.warnings {
            details.push_str(&format!("\nwarning: {warning}"));
        }
        // A tool's version line and messages are its own text: shown, never sent, and
        // escaped before layout so the columns fit what is shown.
        let version = p.version.as_deref().unwrap_or("-");
        table.add_row([
            p.profiler.clone(),
            if p.available { "yes" } else { "no" }.to_string(),
            terminal::line(version).into_owned(),
            terminal::text(&details).into_owned(),
        ]);
    }
    super::width::keep_whole(&mut table, 0);
    super::width::render(&table)
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let list = preflights().await;
    let builtin = vec![none_preflight()];
    let tracking = tracking();
    let available: Vec<String> = list
        .iter()
        .filter(|p| p.available)
        .map(|p| p.profiler.clone())
        .collect();
    if args.json {
        let report = Report {
            schema_version: SCHEMA_VERSION,
            host: Host {
                os: std::env::consts::OS,
                arch: std::env::consts::ARCH,
                root: HostProbe::new().is_root(),
            },
            available,
            profilers: list,
            builtin,
            tracking,
        };
        super::output::println(&serde_json::to_string_pretty(&report)?)?;
    } else {
        let shown: Vec<Preflight> = list.iter().chain(&builtin).cloned().collect();
        super::output::println_text(&render_table(&shown))?;
        super::output::println_text(&super::width::prose(&format!(
            "{} of {} profilers can run here{}; the built-in `none` always can",
            available.len(),
            list.len(),
            if available.is_empty() {
                String::new()
            } else {
                format!(": {}", available.join(", "))
            }
        )))?;
        let cgroup = &tracking.cgroup_v2;
        super::output::println(&super::width::prose(&format!(
            "descendant tracking: {}; cgroup v2 per run: {} ({})",
            if tracking.subreaper {
                "supervising subreaper (every descendant is killed, also if polyprof dies)"
            } else {
                "process group only"
            },
            if cgroup.available {
                "available"
            } else {
                "not available"
            },
            cgroup.detail
        )))?;
    }
    Ok(0)
}
