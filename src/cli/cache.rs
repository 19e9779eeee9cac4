//! `polyprof cache`: the profile cache's entries (`list`), where it is (`path`), and its upkeep
//! (`clear`, `expire`, `invalidate`). docs/batch.md, "The profile cache".

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use comfy_table::{Cell, CellAlignment};
use serde::Serialize;

use polyprof::model::batch::now_unix_s;
use polyprof::pipeline::profile_cache::store::default_dir;
use polyprof::pipeline::profile_cache::{CacheStats, EntrySummary, ProfileCache};
use polyprof::results::escape::terminal;

/// The most characters a cell of `list` shows (`--json` has the whole text).
const CELL_CHARS: usize = 160;

/// Arguments of `polyprof cache`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The cache directory (default: `profiles/` under the configured cache_dir, else
    /// $XDG_CACHE_HOME/polyprof/profiles, else ~/.cache/polyprof/profiles).
    #[arg(long, value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// Every entry: digest, kernel, device, tool, age, size and the run that profiled it.
    List {
        /// Print the entries and the totals as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove every entry.
    Clear {
        /// Print what was removed as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove the entries profiled longer ago than AGE.
    Expire {
        /// How old an entry may be (`7d`, `12h`, `1d12h`, `30m`; a bare number is seconds).
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        older_than: Duration,
        /// Print what was removed as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove the entries of these digests (or unique prefixes of at least 4 hex digits, as
    /// `list` shows them).
    Invalidate {
        #[arg(required = true, value_name = "DIGEST")]
        digests: Vec<String>,
        /// Print what was removed as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the cache directory (whether or not it exists yet).
    Path,
}

/// `list --json`.
#[derive(Debug, Serialize)]
struct Listing {
    dir: String,
    entries: Vec<EntrySummary>,
    stats: CacheStats,
}

/// `clear`, `expire` and `invalidate` with `--json`.
#[derive(Debug, Serialize)]
struct Removal {
    dir: String,
    removed: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    digests: Vec<String>,
    stats: CacheStats,
}

pub async fn execute(args: Args) -> anyhow::Result<u8> {
    let dir = match args.dir {
        Some(dir) => dir,
        None => default_dir()?,
    };
    if matches!(args.command, Sub::Path) {
        super::output::println(&dir.display().to_string())?;
        return Ok(0);
    }
    // Reading or clearing a cache that was never made creates nothing.
    let cache = ProfileCache::open_existing(&dir)?;
    match args.command {
        Sub::Path => Ok(0),
        Sub::List { json } => list(&dir, cache.as_ref(), json),
        Sub::Clear { json } => {
            let removed = match &cache {
                Some(cache) => cache.clear()?,
                None => 0,
            };
            removal(&dir, cache.as_ref(), removed, Vec::new(), json)
        }
        Sub::Expire { older_than, json } => {
            let removed = match &cache {
                Some(cache) => cache.expire(older_than)?,
                None => 0,
            };
            removal(&dir, cache.as_ref(), removed, Vec::new(), json)
        }
        Sub::Invalidate { digests, json } => {
            let Some(cache) = &cache else {
                anyhow::bail!(
                    "there is no profile cache at `{}`, so no entry to invalidate; `polyprof cache \
                     path` says where it is, --dir names another",
                    dir.display()
                );
            };
            // Every digest is resolved before any entry goes, so a typo removes nothing.
            let resolved = digests
                .iter()
                .map(|d| cache.resolve(d))
                .collect::<Result<Vec<_>, _>>()?;
            let mut removed = 0;
            for digest in &resolved {
                removed += u64::from(cache.invalidate(digest)?);
            }
            removal(&dir, Some(cache), removed, resolved, json)
        }
    }
}

fn list(dir: &Path, cache: Option<&ProfileCache>, json: bool) -> anyhow::Result<u8> {
    let (entries, stats) = match cache {
        Some(cache) => (cache.list()?, cache.stats()?),
        None => (Vec::new(), CacheStats::default()),
    };
    let mut out = std::io::stdout().lock();
    if json {
        let listing = Listing {
            dir: dir.display().to_string(),
            entries,
            stats,
        };
        serde_json::to_writer_pretty(&mut out, &listing).context("cannot print the entries")?;
        writeln!(out)?;
        return Ok(0);
    }
    if entries.is_empty() {
        let dir = dir.display().to_string();
        writeln!(out, "no entries in {}", terminal::line(&dir))?;
        return Ok(0);
    }
    let now = now_unix_s();
    let mut table = super::width::table();
    table.set_header([
        "digest",
        "kernel",
        "device",
        "tool",
        "age",
        "size",
        "profiled by",
    ]);
    for entry in &entries {
        // Cells clipped before layout: a table lays out in time that grows faster than the
        // text (a 40 MB name took minutes); the JSON keeps every name whole.
        let cell = |text: &str| Cell::new(terminal::clipped(text, CELL_CHARS));
        table.add_row(vec![
            cell(entry.digest.get(..12).unwrap_or(&entry.digest)),
            cell(&entry.kernel),
            cell(&entry.device),
            cell(&entry.tool),
            Cell::new(age(now - entry.profiled_unix_s)).set_alignment(CellAlignment::Right),
            Cell::new(size(entry.bytes)).set_alignment(CellAlignment::Right),
            cell(&entry.origin_run),
        ]);
    }
    // Kernel names whole (the digest is a word too): blocks when they cannot fit.
    super::width::keep_whole(&mut table, 1);
    writeln!(out, "{}", super::width::render(&table))?;
    writeln!(
        out,
        "{} entries, {} in {}",
        stats.entries,
        size(stats.bytes),
        terminal::line(&dir.display().to_string())
    )?;
    Ok(0)
}

fn removal(
    dir: &Path,
    cache: Option<&ProfileCache>,
    removed: u64,
    digests: Vec<String>,
    json: bool,
) -> anyhow::Result<u8> {
    let stats = match cache {
        Some(cache) => cache.stats()?,
        None => CacheStats::default(),
    };
    let mut out = std::io::stdout().lock();
    if json {
        let removal = Removal {
            dir: dir.display().to_string(),
            removed,
            digests,
            stats,
        };
        serde_json::to_writer_pretty(&mut out, &removal).context("cannot print the removal")?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "removed {removed} entries; {} left ({}) in {}",
            stats.entries,
            size(stats.bytes),
            terminal::line(&dir.display().to_string())
        )?;
    }
    Ok(0)
}

/// `7d`, `12h`, `30m`, `45s`, a sum of them (`1d12h`), or a bare number of seconds.
pub fn parse_age(text: &str) -> Result<Duration, String> {
    super::duration::age(text)
}

/// Seconds as the largest two units (`3d 4h`, `5m 2s`).
fn age(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    let (d, h, m, s) = (s / 86_400, s % 86_400 / 3_600, s % 3_600 / 60, s % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// Bytes in B, KiB, MiB or GiB.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_in_seconds_minutes_hours_days_and_sums() {
        assert_eq!(parse_age("45s"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_age("30m"), Ok(Duration::from_secs(1_800)));
        assert_eq!(parse_age("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(parse_age("1d12h"), Ok(Duration::from_secs(129_600)));
        assert_eq!(parse_age("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_age("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_age("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_age("1.5d"), Ok(Duration::from_secs(129_600)));
        for bad in ["", "d", "-1d", "7d3x", "99999999999999999999d"] {
            let err = parse_age(bad).unwrap_err();
            assert!(err.contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn ages_and_sizes_read_at_a_glance() {
        assert_eq!(age(5.0), "5s");
        assert_eq!(age(62.0), "1m 2s");
        assert_eq!(age(3_700.0), "1h 1m");
        assert_eq!(age(3.0 * 86_400.0 + 4.0 * 3_600.0), "3d 4h");
        assert_eq!(age(-3.0), "0s");
        assert_eq!(size(512), "512 B");
        assert_eq!(size(2_048), "2.0 KiB");
        assert_eq!(size(5 * 1024 * 1024), "5.0 MiB");
    }
}
