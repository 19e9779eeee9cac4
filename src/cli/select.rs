//! `polyprof select`: the profiler passes chosen for a language and architecture.

use std::path::PathBuf;

use serde::Serialize;

use polyprof::profilers::selection::{EMBEDDED_CONFIG, Selected, Selection};

/// Version of the `select --json` document; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Arguments of `polyprof select`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Source language: sycl, ocl (opencl), cuda, pytorch, triton, hip, metal.
    #[arg(long, required_unless_present = "print_config", value_parser = super::values::languages())]
    pub language: Option<String>,
    /// GPU arch or product (bmg, a100, h100, mi300x, m3, …); a comma-separated list must name
    /// one vendor's GPUs.
    #[arg(long, required_unless_present = "print_config", value_parser = super::values::arches(), hide_possible_values = true)]
    pub arch: Option<String>,
    /// Force a profiler type (unitrace, vtune, ncu, metal, …) instead of the language default.
    #[arg(long, value_parser = super::values::profilers())]
    pub profiler: Option<String>,
    /// Print one JSON document on stdout (schema in docs/selection.md).
    #[arg(long)]
    pub json: bool,
    /// Selection table replacing the embedded one (default: $POLYPROF_CONFIG if set).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the embedded selection table (a starting point for --config) and exit.
    #[arg(long, conflicts_with_all = ["language", "arch", "profiler", "json", "config"])]
    pub print_config: bool,
}

#[derive(Debug, Serialize)]
struct PassJson<'a> {
    profiler: &'a str,
    metric_group: Option<&'a str>,
    extra_args: &'a [String],
}

#[derive(Debug, Serialize)]
struct SelectJson<'a> {
    schema_version: u32,
    config: &'a str,
    language: &'a str,
    arches: &'a [String],
    vendor: &'static str,
    profiler_type: &'a str,
    defaulted: bool,
    passes: Vec<PassJson<'a>>,
}

fn to_json<'a>(selected: &'a Selected, config: &'a str) -> SelectJson<'a> {
    SelectJson {
        schema_version: SCHEMA_VERSION,
        config,
        language: &selected.language,
        arches: &selected.arches,
        vendor: selected.vendor.key(),
        profiler_type: &selected.profiler_type,
        defaulted: selected.defaulted,
        passes: selected
            .passes
            .iter()
            .map(|p| PassJson {
                profiler: &p.profiler,
                metric_group: p.variant(),
                extra_args: &p.settings.extra_args,
            })
            .collect(),
    }
}

fn render_text(selected: &Selected) -> String {
    let mut out = format!(
        "{} on {} ({}): profiler type {}{}\n",
        selected.language,
        selected.arches.join(","),
        selected.vendor,
        selected.profiler_type,
        if selected.defaulted { " (default)" } else { "" }
    );
    for (i, pass) in selected.passes.iter().enumerate() {
        out.push_str(&format!("  pass {}: {}", i + 1, pass.profiler));
        if let Some(group) = pass.variant() {
            out.push_str(&format!(", metric group {group}"));
        }
        if !pass.settings.extra_args.is_empty() {
            out.push_str(&format!(", extra args {:?}", pass.settings.extra_args));
        }
        out.push('\n');
    }
    out
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    if args.print_config {
        super::output::print(EMBEDDED_CONFIG)?;
        return Ok(0);
    }
    let (Some(language), Some(arch)) = (&args.language, &args.arch) else {
        anyhow::bail!("--language and --arch are required");
    };
    let table = Selection::load(args.config.as_deref())?;
    let config = polyprof::pipeline::config::Config::load()?;
    let profiler = args
        .profiler
        .as_deref()
        .or_else(|| config.profiler_for(language));
    let selected = table.select(language, arch, profiler)?;
    if args.json {
        super::output::println(&serde_json::to_string_pretty(&to_json(
            &selected,
            table.origin(),
        ))?)?;
    } else {
        super::output::print_text(&render_text(&selected))?;
    }
    Ok(0)
}
