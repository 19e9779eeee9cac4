//! `polyprof config`: the effective defaults (`polyprof.toml`, the user file, `POLYPROF_*`
//! variables) and where each came from; a flag given to a command overrides them all.

use std::io::Write;

use anyhow::Context;
use polyprof::pipeline::config::{Config, PROJECT_FILE, USER_FILE};
use polyprof::results::escape::terminal;

/// Arguments of `polyprof config`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the configuration as JSON (each key's value and source).
    #[arg(long)]
    pub json: bool,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let config = Config::load()?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &config)
            .context("cannot print the configuration")?;
        writeln!(out)?;
        return Ok(0);
    }
    let mut table = super::width::table();
    table.set_header(["key", "value", "from"]);
    for (key, value, source) in config.rows() {
        table.add_row(vec![
            key,
            terminal::line(&value).into_owned(),
            terminal::line(&source.to_string()).into_owned(),
        ]);
    }
    writeln!(out, "{}", super::width::render(&table))?;
    for skipped in &config.skipped {
        writeln!(
            out,
            "skipped {}: {}",
            terminal::line(&skipped.path.display().to_string()),
            skipped.why
        )?;
    }
    if config.files.is_empty() {
        let none = format!(
            "no configuration file: {PROJECT_FILE} (this folder or one above) or $XDG_CONFIG_HOME/polyprof/{USER_FILE} (else ~/.config/polyprof/{USER_FILE})"
        );
        writeln!(out, "{}", super::width::prose(&none))?;
    }
    let variables = "every key is also a POLYPROF_<KEY> variable (POLYPROF_CLOCK_CONTROL, POLYPROF_PROFILER_<LANGUAGE>, …); a command's flag overrides it";
    writeln!(out, "{}", super::width::prose(variables))?;
    Ok(0)
}
