//! Metric names checked against `ncu --query-metrics` before a run. ncu drops an unknown
//! `--metrics` name silently (exit 0, no column), so polyprof says which name is wrong instead.
//! The query's output is cached per ncu version and chip under `$XDG_CACHE_HOME/polyprof`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::options::NcuOptions;
use super::preflight;
use crate::model::error::{Error, Result};
use crate::model::probe::Probe;

/// Metric families ncu computes from launch data or device attributes rather than hardware
/// counters; `--query-metrics` does not list them, yet they are valid.
const SYNTHETIC_PREFIXES: &[&str] = &[
    "launch__",
    "device__",
    "profiler__",
    "nvlink__",
    "numa__",
    "c2clink__",
    "derived__",
    "pmsampling:",
];
const SYNTHETIC_NAMES: &[&str] = &[
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__maximum_warps_avg_per_active_cycle",
    "smsp__maximum_warps_avg_per_active_cycle",
];

/// The base metric names of one chip, from `ncu --query-metrics` output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricCatalog {
    /// `gh100` from the `Chip gh100` line, when printed.
    pub chip: Option<String>,
    pub bases: HashSet<String>,
    /// Unit prefixes seen (`dram`, `sm`, `smsp`, …): a name with one of these and an unknown base
    /// is certainly wrong.
    pub prefixes: HashSet<String>,
}

/// Parse `ncu --query-metrics` text. Table borders, headers and wrapped description lines are
/// skipped; a metric row starts with its name (`dram__bytes_read`, or
/// `CTC.TriageCompute.ctc__rx_bytes` for configuration-specific ones).
pub fn parse_catalog(text: &str) -> MetricCatalog {
    let mut catalog = MetricCatalog::default();
    for line in text.lines() {
        if let Some(chip) = line.trim().strip_prefix("Chip ") {
            catalog.chip = Some(chip.trim().to_string());
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let Some(first) = line.split_whitespace().next() else {
            continue;
        };
        let Some(base) = first.split('.').find(|part| part.contains("__")) else {
            continue;
        };
        if let Some((prefix, _)) = base.split_once("__") {
            catalog.prefixes.insert(prefix.to_string());
        }
        catalog.bases.insert(base.to_string());
    }
    catalog
}

/// `dram__bytes_read.sum.per_second` → `dram__bytes_read`.
pub fn base_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// A name polyprof cannot judge and leaves to ncu.
fn is_judgeable(name: &str) -> bool {
    name.contains("__")
        && !name.contains(':')
        && !SYNTHETIC_PREFIXES.iter().any(|p| name.starts_with(p))
        && !SYNTHETIC_NAMES.contains(&base_name(name))
}

/// One wrong name and the closest known ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMetric {
    pub name: String,
    pub suggestions: Vec<String>,
}

/// The requested names the catalog does not know.
pub fn unknown_metrics(catalog: &MetricCatalog, names: &[String]) -> Vec<UnknownMetric> {
    names
        .iter()
        .filter(|name| is_judgeable(name) && !catalog.bases.contains(base_name(name)))
        .map(|name| UnknownMetric {
            name: name.clone(),
            suggestions: suggest(catalog, base_name(name)),
        })
        .collect()
}

fn suggest(catalog: &MetricCatalog, base: &str) -> Vec<String> {
    let mut scored: Vec<(usize, &String)> = catalog
        .bases
        .iter()
        .map(|candidate| (edit_distance(base, candidate), candidate))
        .filter(|(distance, _)| *distance <= base.len() / 3 + 2)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, c)| c.clone()).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current[j + 1] = (previous[j] + cost)
                .min(previous[j + 1] + 1)
                .min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The error for unknown names, each with its suggestions.
pub fn unknown_error(chip: &str, unknown: &[UnknownMetric]) -> Error {
    let parts: Vec<String> = unknown
        .iter()
        .map(|u| {
            if u.suggestions.is_empty() {
                format!("`{}`", u.name)
            } else {
                format!("`{}` (did you mean {}?)", u.name, u.suggestions.join(", "))
            }
        })
        .collect();
    Error::invalid(
        "ncu metrics",
        format!(
            "not known to ncu for chip {chip}: {}; ncu would silently ignore them. List valid \
             names with `ncu --query-metrics --chip {chip}`",
            parts.join("; ")
        ),
    )
}

/// The ncu chip name (`--chip`) of an NVIDIA GPU model as the driver names it
/// (`NVIDIA H200`); `None` for a model not in the table.
pub fn chip_for_model(model: &str) -> Option<&'static str> {
    let model = model.to_ascii_uppercase();
    let has = |needle: &str| model.contains(needle);
    // Most specific names first: "RTX 6000 Ada" before "RTX 6000", "A100" before "A10".
    let chip = if has("GB200") || has("B200") || has("B100") {
        "gb100"
    } else if has("GH200") || has("H200") || has("H100") || has("H800") || has("H20") {
        "gh100"
    } else if has("RTX 50") || has("RTX PRO 6000") {
        "gb202"
    } else if has("L40") || has("RTX 6000 ADA") || has("RTX 4090") || has("RTX 4080") {
        "ad102"
    } else if has("L4") || has("RTX 4070") || has("RTX 4060") {
        "ad104"
    } else if has("A100") || has("A800") || has("A30") {
        "ga100"
    } else if has("A10") || has("A40") || has("A6000") || has("RTX 3090") || has("RTX 3080") {
        "ga102"
    } else if has("V100") || has("TITAN V") {
        "gv100"
    } else if has("T4") || has("RTX 20") || has("QUADRO RTX") {
        "tu104"
    } else {
        return None;
    };
    Some(chip)
}

/// `$XDG_CACHE_HOME/polyprof/ncu-metrics`, else `~/.cache/polyprof/ncu-metrics`.
pub fn cache_dir(probe: &dyn Probe) -> Option<PathBuf> {
    let base = probe
        .env_var("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            probe
                .env_var("HOME")
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("polyprof").join("ncu-metrics"))
}

/// Cache file name for one ncu version and chip (or GPU model): only safe characters.
pub fn cache_file_name(version: &str, chip: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{}-{}.txt", clean(version), clean(chip))
}

/// The catalog for (version, chip): from the cache, else by running `query` and caching it.
pub fn catalog_cached(
    probe: &dyn Probe,
    cache: Option<&Path>,
    version: &str,
    chip: &str,
    query: impl FnOnce() -> Option<String>,
) -> Option<MetricCatalog> {
    let file = cache.map(|dir| dir.join(cache_file_name(version, chip)));
    if let Some(text) = file.as_ref().and_then(|f| probe.read_text(f)) {
        let catalog = parse_catalog(&text);
        if catalog.bases.contains("gpu__time_duration") {
            return Some(catalog);
        }
    }
    let text = query()?;
    let catalog = parse_catalog(&text);
    // Every chip ncu profiles has the kernel duration; a list without it is not a catalog.
    if !catalog.bases.contains("gpu__time_duration") {
        tracing::warn!("`ncu --query-metrics` printed no usable metric list; not caching it");
        return None;
    }
    if let Some(file) = file {
        // A cache that cannot be written only costs a query next time.
        let _ = probe.write_text(&file, &text);
    }
    Some(catalog)
}

/// Check `names` with the ncu installed here. Skipped (Ok) when ncu, its version, or the chip
/// cannot be determined: the post-run missing-metric check still catches wrong names.
/// `known_version` is the version a preflight already read (ncu is asked when it is `None`).
pub fn check_metrics_here(
    probe: &dyn Probe,
    options: &NcuOptions,
    names: &[String],
    known_version: Option<String>,
) -> Result<()> {
    let Some(binary) = probe.find_binary(&options.binary) else {
        tracing::info!("ncu not found here; metric names are checked after the run");
        return Ok(());
    };
    let version = known_version.or_else(|| {
        preflight::run_short(probe, &binary, &["--version"], Duration::from_secs(20))
            .as_deref()
            .and_then(preflight::parse_version)
    });
    let Some(version) = version else {
        return Ok(());
    };
    // Always name the chip: without `--chip`, ncu lists a different, shorter catalog on a live
    // device (seen on an H200 with 2025.3.1), which would reject valid names.
    let chip_key = match &options.chip {
        Some(chip) => chip.clone(),
        None => {
            let models = preflight::proc_gpu_models(probe);
            match models.iter().find_map(|m| chip_for_model(m)) {
                Some(chip) => chip.to_string(),
                None => {
                    tracing::info!(
                        "no known chip for GPU {models:?}; metric names are checked after the run \
                         (pass --ncu-chip to check them before)"
                    );
                    return Ok(());
                }
            }
        }
    };
    let args = ["--query-metrics", "--chip", chip_key.as_str()];
    let catalog = catalog_cached(
        probe,
        cache_dir(probe).as_deref(),
        &version,
        &chip_key,
        || preflight::run_short(probe, &binary, &args, Duration::from_secs(60)),
    );
    let Some(catalog) = catalog else {
        tracing::warn!("`ncu --query-metrics` gave no metric list; metric names not checked");
        return Ok(());
    };
    let unknown = unknown_metrics(&catalog, names);
    if unknown.is_empty() {
        Ok(())
    } else {
        let chip = catalog.chip.as_deref().unwrap_or(&chip_key);
        Err(unknown_error(chip, &unknown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Chip gh100\n---- ----\nMetric Name  Metric Type  Metric Unit  Metric Description\n---- ----\nCTC.TriageCompute.ctc__rx_bytes   Counter  byte  # of bytes\ndram__bytes_read   Counter  byte  # of bytes read from DRAM\n                                   (wrapped description)\ngpu__time_duration Counter ns  duration\n==PROF== Note that these metrics must be appended with a valid suffix\n";

    #[test]
    fn catalog_and_checks() {
        let catalog = parse_catalog(SAMPLE);
        assert_eq!(catalog.chip.as_deref(), Some("gh100"));
        assert!(catalog.bases.contains("ctc__rx_bytes"));
        assert!(catalog.bases.contains("dram__bytes_read"));
        assert_eq!(catalog.bases.len(), 3);
        let names: Vec<String> = [
            "dram__bytes_read.sum",
            "dram__bytes_raed.sum",
            "launch__registers_per_thread",
            "sm__maximum_warps_per_active_cycle_pct",
            "flop_count_sp",
        ]
        .map(String::from)
        .to_vec();
        let unknown = unknown_metrics(&catalog, &names);
        assert_eq!(unknown.len(), 1);
        assert_eq!(unknown[0].name, "dram__bytes_raed.sum");
        assert_eq!(unknown[0].suggestions[0], "dram__bytes_read");
        let message = unknown_error("gh100", &unknown).to_string();
        assert!(
            message.contains("did you mean dram__bytes_read"),
            "{message}"
        );
    }

    #[test]
    fn gpu_models_map_to_ncu_chips() {
        assert_eq!(chip_for_model("NVIDIA H200"), Some("gh100"));
        assert_eq!(chip_for_model("NVIDIA H100 80GB HBM3"), Some("gh100"));
        assert_eq!(chip_for_model("NVIDIA A100-SXM4-80GB"), Some("ga100"));
        assert_eq!(chip_for_model("NVIDIA A10G"), Some("ga102"));
        assert_eq!(chip_for_model("NVIDIA L40S"), Some("ad102"));
        assert_eq!(chip_for_model("NVIDIA L4"), Some("ad104"));
        assert_eq!(
            chip_for_model("NVIDIA RTX 6000 Ada Generation"),
            Some("ad102")
        );
        assert_eq!(chip_for_model("Some Future GPU"), None);
    }
}
