//! `polyprof containers prune`: remove containers that a polyprof which died left behind.

use std::io::Write;

use anyhow::Context;
use polyprof::pipeline::container::{Engine, prune};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// Remove containers labelled `polyprof.job` whose polyprof is no longer running.
    Prune(PruneArgs),
}

#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    /// Also remove those labelled on other hosts (a shared engine), whose owners cannot be
    /// checked from here.
    #[arg(long)]
    pub all_hosts: bool,
    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let Sub::Prune(args) = args.command;
    let engine = Engine::connect().await?;
    let report = prune(&engine, args.all_hosts, args.dry_run).await?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report).context("cannot print the report")?;
        writeln!(out)?;
    } else {
        let verb = if args.dry_run {
            "would remove"
        } else {
            "removed"
        };
        writeln!(out, "{verb} {} container(s)", report.removed.len())?;
        // Container names and the engine's messages: shown, never sent.
        for name in &report.removed {
            writeln!(out, "  {}", polyprof::results::escape::terminal::line(name))?;
        }
        if report.owner_alive > 0 {
            writeln!(
                out,
                "kept {} whose polyprof is still running",
                report.owner_alive
            )?;
        }
        if report.other_host > 0 {
            writeln!(
                out,
                "kept {} labelled on other hosts (--all-hosts removes them)",
                report.other_host
            )?;
        }
        for failure in &report.failed {
            let failure = failure.to_string();
            writeln!(
                out,
                "failed: {}",
                polyprof::results::escape::terminal::text(&failure)
            )?;
        }
    }
    Ok(u8::from(!report.failed.is_empty()))
}
