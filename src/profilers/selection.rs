//! Profiler selection: which profiler passes to run for a language on an architecture.
//!
//! Driven by a TOML table (`configs/selection.toml`, embedded at build time) that a user file
//! can replace (`--config FILE` or `POLYPROF_CONFIG`). Reproduces KernelFoundry's
//! `get_profilers` table, with its quirks fixed: names match case-insensitively, architectures
//! and product names are grouped by vendor, and a profiler is never chosen for a GPU it cannot
//! profile (an explicit [`Error::NoProfiler`] instead).
//!
//! An arch may be a comma-separated list; every entry must belong to one vendor (the passes
//! depend only on the vendor, so the list selects the same passes as each entry alone).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::backend::Backend;
use super::registry;
pub use super::registry::Vendor;
use super::{PROFILER_NAMES, ProfilerSettings};
use crate::model::error::{Error, Result};

/// The embedded default table.
pub const EMBEDDED_CONFIG: &str = include_str!("../../configs/selection.toml");
/// Environment variable naming a user selection file that replaces the embedded table.
pub const CONFIG_ENV: &str = "POLYPROF_CONFIG";

/// The vendor whose GPUs a backend profiles (read from the registry).
pub fn profiler_vendor(profiler: &str) -> Option<Vendor> {
    registry::find(profiler).and_then(|entry| entry.vendor)
}

/// One profiler pass: which backend, and how to build it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfilerPass {
    /// Backend name (`ncu`, `unitrace`, `ocl-unitrace`, `vtune`, `metal`).
    pub profiler: String,
    pub settings: ProfilerSettings,
}

impl ProfilerPass {
    /// Build the backend for this pass, writing into `output_dir`.
    pub fn create(&self, output_dir: &Path) -> Result<Box<dyn Backend>> {
        super::create(&self.profiler, output_dir, &self.settings)
    }

    /// The pass's variant: Unitrace's metric group, rocprofv3's counter set (`metric_group` in
    /// `configs/selection.toml`); `None` for backends without one.
    pub fn variant(&self) -> Option<&str> {
        registry::find(&self.profiler).and_then(|entry| entry.settings.variant(&self.settings))
    }

    /// A short label: `unitrace:MemoryProfile`, `ncu`.
    pub fn label(&self) -> String {
        match self.variant() {
            Some(group) => format!("{}:{group}", self.profiler),
            None => self.profiler.clone(),
        }
    }
}

/// The answer of a selection, with what it was resolved from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selected {
    /// Canonical language key (`ocl` for `opencl`).
    pub language: String,
    /// The arch entries, lowercased, duplicates removed, in the order given.
    pub arches: Vec<String>,
    pub vendor: Vendor,
    /// The profiler type used (the language's default when none was asked for).
    pub profiler_type: String,
    /// Whether `profiler_type` came from the defaults.
    pub defaulted: bool,
    pub passes: Vec<ProfilerPass>,
}

// ---- the TOML shape --------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    arches: BTreeMap<Vendor, Vec<String>>,
    choices: BTreeMap<String, Vec<RawPass>>,
    languages: BTreeMap<String, RawLanguage>,
    #[serde(default)]
    vendor_notes: BTreeMap<Vendor, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPass {
    profiler: String,
    metric_group: Option<String>,
    #[serde(default)]
    extra_args: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLanguage {
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    types: BTreeMap<String, String>,
    default: Option<String>,
    #[serde(default)]
    default_by_vendor: BTreeMap<Vendor, String>,
    unsupported: Option<String>,
}

// ---- the checked table -----------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Language {
    aliases: Vec<String>,
    /// profiler type → choice name
    types: BTreeMap<String, String>,
    default: Option<String>,
    default_by_vendor: BTreeMap<Vendor, String>,
    unsupported: Option<String>,
}

#[derive(Debug, Clone)]
struct Choice {
    vendor: Vendor,
    passes: Vec<ProfilerPass>,
}

/// A checked selection table.
#[derive(Debug, Clone)]
pub struct Selection {
    origin: String,
    arch_vendor: BTreeMap<String, Vendor>,
    arch_lists: BTreeMap<Vendor, Vec<String>>,
    choices: BTreeMap<String, Choice>,
    languages: BTreeMap<String, Language>,
    /// alias → canonical language
    aliases: BTreeMap<String, String>,
    vendor_notes: BTreeMap<Vendor, String>,
}

fn norm(text: &str) -> String {
    text.trim().to_lowercase()
}

impl Selection {
    /// The embedded default table.
    pub fn embedded() -> Result<Self> {
        Self::from_toml(EMBEDDED_CONFIG, "embedded configs/selection.toml")
    }

    /// A user file, which replaces the embedded table.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io("read selection config", path, e))?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// `config` if given, else the file named by `POLYPROF_CONFIG` (when set and non-empty),
    /// else the embedded table.
    pub fn load(config: Option<&Path>) -> Result<Self> {
        if let Some(path) = config {
            return Self::from_file(path);
        }
        match std::env::var_os(CONFIG_ENV) {
            Some(path) if !path.is_empty() => Self::from_file(Path::new(&path)),
            _ => Self::embedded(),
        }
    }

    /// Parse and check a table. `origin` names it in error messages.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let err = |message: String| Error::Config {
            origin: origin.to_string(),
            message,
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| err(e.to_string()))?;

        let mut arch_vendor = BTreeMap::new();
        let mut arch_lists = BTreeMap::new();
        for (vendor, names) in raw.arches {
            let mut list = Vec::new();
            for name in names {
                let key = norm(&name);
                if key.is_empty() || key.contains(',') {
                    return Err(err(format!(
                        "arch `{name}` under {vendor} must be non-empty and contain no comma"
                    )));
                }
                if let Some(other) = arch_vendor.insert(key.clone(), vendor) {
                    return Err(err(format!(
                        "arch `{key}` is listed twice (under {other} and {vendor})"
                    )));
                }
                list.push(key);
            }
            arch_lists.insert(vendor, list);
        }

        let mut choices = BTreeMap::new();
        for (name, raw_passes) in raw.choices {
            let name = norm(&name);
            if raw_passes.is_empty() {
                return Err(err(format!("choice `{name}` has no passes")));
            }
            let mut vendors = BTreeSet::new();
            let mut passes = Vec::new();
            for pass in raw_passes {
                let profiler = norm(&pass.profiler);
                let entry = registry::find(&profiler)
                    .filter(|entry| entry.vendor.is_some())
                    .ok_or_else(|| {
                        err(format!(
                            "choice `{name}` names profiler `{}`; valid profilers: {}",
                            pass.profiler,
                            PROFILER_NAMES.join(", ")
                        ))
                    })?;
                vendors.extend(entry.vendor);
                if pass.metric_group.is_some() && !entry.settings.has_variant() {
                    return Err(err(format!(
                        "choice `{name}`: profiler `{profiler}` takes no metric_group"
                    )));
                }
                let mut settings = ProfilerSettings {
                    extra_args: pass.extra_args,
                    ..Default::default()
                };
                entry.settings.set_variant(&mut settings, pass.metric_group);
                passes.push(ProfilerPass { profiler, settings });
            }
            let vendor = match vendors.into_iter().collect::<Vec<_>>().as_slice() {
                [one] => *one,
                _ => {
                    return Err(err(format!(
                        "choice `{name}` mixes profilers of different vendors"
                    )));
                }
            };
            choices.insert(name, Choice { vendor, passes });
        }

        let mut languages = BTreeMap::new();
        let mut aliases = BTreeMap::new();
        for (name, lang) in raw.languages {
            let name = norm(&name);
            let mut types = BTreeMap::new();
            for (ty, choice) in lang.types {
                let (ty, choice) = (norm(&ty), norm(&choice));
                if !choices.contains_key(&choice) {
                    return Err(err(format!(
                        "language `{name}`: type `{ty}` refers to unknown choice `{choice}`"
                    )));
                }
                types.insert(ty, choice);
            }
            let check_type = |ty: &str, field: &str| -> Result<String> {
                let ty = norm(ty);
                if types.contains_key(&ty) {
                    Ok(ty)
                } else {
                    Err(err(format!(
                        "language `{name}`: {field} `{ty}` is not one of its types"
                    )))
                }
            };
            let default = lang
                .default
                .as_deref()
                .map(|t| check_type(t, "default"))
                .transpose()?;
            let mut default_by_vendor = BTreeMap::new();
            for (vendor, ty) in lang.default_by_vendor {
                default_by_vendor.insert(vendor, check_type(&ty, "default_by_vendor")?);
            }
            let lang_aliases: Vec<String> = lang.aliases.iter().map(|a| norm(a)).collect();
            for alias in &lang_aliases {
                if aliases.insert(alias.clone(), name.clone()).is_some() {
                    return Err(err(format!("alias `{alias}` is used twice")));
                }
            }
            languages.insert(
                name,
                Language {
                    aliases: lang_aliases,
                    types,
                    default,
                    default_by_vendor,
                    unsupported: lang.unsupported,
                },
            );
        }
        if let Some(alias) = aliases.keys().find(|a| languages.contains_key(*a)) {
            return Err(err(format!("alias `{alias}` is also a language name")));
        }
        if languages.is_empty() {
            return Err(err("no languages are defined".into()));
        }

        Ok(Selection {
            origin: origin.to_string(),
            arch_vendor,
            arch_lists,
            choices,
            languages,
            aliases,
            vendor_notes: raw.vendor_notes,
        })
    }

    /// Where this table came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Canonical language keys, sorted.
    pub fn languages(&self) -> Vec<String> {
        self.languages.keys().cloned().collect()
    }

    /// The arches of one vendor, in table order.
    pub fn arches(&self, vendor: Vendor) -> &[String] {
        self.arch_lists.get(&vendor).map_or(&[], Vec::as_slice)
    }

    /// The profiler types a language accepts, sorted.
    pub fn profiler_types(&self, language: &str) -> Vec<String> {
        self.resolve_language(language)
            .map(|(_, lang)| lang.types.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn valid_languages(&self) -> String {
        self.languages
            .iter()
            .map(|(name, lang)| {
                if lang.aliases.is_empty() {
                    name.clone()
                } else {
                    format!("{name} (alias {})", lang.aliases.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn valid_arches(&self) -> String {
        Vendor::ALL
            .iter()
            .filter_map(|v| {
                let list = self.arches(*v);
                (!list.is_empty()).then(|| format!("{}: {}", v.key(), list.join(", ")))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn resolve_language(&self, language: &str) -> Option<(String, &Language)> {
        let key = norm(language);
        let key = self.aliases.get(&key).cloned().unwrap_or(key);
        self.languages.get(&key).map(|lang| (key, lang))
    }

    /// Parse an arch or comma-separated arch list into lowercase entries and their one vendor.
    fn resolve_arches(&self, arch: &str) -> Result<(Vec<String>, Vendor)> {
        let mut entries: Vec<(String, Vendor)> = Vec::new();
        for item in arch.split(',') {
            let key = norm(item);
            if key.is_empty() {
                return Err(if arch.trim().is_empty() {
                    Error::UnknownValue {
                        what: "arch",
                        value: arch.to_string(),
                        valid: self.valid_arches(),
                    }
                } else {
                    Error::invalid(
                        "arch",
                        format!("`{arch}` has an empty entry; separate arches with single commas"),
                    )
                });
            }
            let vendor = *self
                .arch_vendor
                .get(&key)
                .ok_or_else(|| Error::UnknownValue {
                    what: "arch",
                    value: item.trim().to_string(),
                    valid: self.valid_arches(),
                })?;
            if !entries.iter().any(|(k, _)| *k == key) {
                entries.push((key, vendor));
            }
        }
        let vendor = entries[0].1;
        if let Some((other, other_vendor)) = entries.iter().find(|(_, v)| *v != vendor) {
            return Err(Error::invalid(
                "arch",
                format!(
                    "`{}` is {vendor} but `{other}` is {other_vendor}; an arch list must name one \
                     vendor's GPUs (select once per vendor)",
                    entries[0].0
                ),
            ));
        }
        Ok((entries.into_iter().map(|(k, _)| k).collect(), vendor))
    }

    /// What a language offers on a vendor's GPUs, for error messages.
    fn alternatives(&self, lang_name: &str, lang: &Language, vendor: Vendor) -> String {
        let fitting: Vec<&str> = lang
            .types
            .iter()
            .filter(|(_, choice)| {
                self.choices
                    .get(*choice)
                    .is_some_and(|c| c.vendor == vendor)
            })
            .map(|(ty, _)| ty.as_str())
            .collect();
        if !fitting.is_empty() {
            return format!(
                "for {vendor} GPUs use profiler type: {}",
                fitting.join(", ")
            );
        }
        let mut text = format!("{lang_name} has no profiler for {vendor} GPUs");
        if let Some(note) = self.vendor_notes.get(&vendor) {
            text.push_str(&format!(": {note}"));
        }
        let offered: Vec<String> = Vendor::ALL
            .iter()
            .filter_map(|v| {
                let types: Vec<&str> = lang
                    .types
                    .iter()
                    .filter(|(_, c)| self.choices.get(*c).is_some_and(|c| c.vendor == *v))
                    .map(|(t, _)| t.as_str())
                    .collect();
                (!types.is_empty()).then(|| format!("{} → {}", v.key(), types.join("/")))
            })
            .collect();
        if !offered.is_empty() {
            text.push_str(&format!("; it has: {}", offered.join(", ")));
        }
        text
    }

    /// Select the passes for `language` on `arch`, optionally forcing a profiler type.
    pub fn select(
        &self,
        language: &str,
        arch: &str,
        profiler_type: Option<&str>,
    ) -> Result<Selected> {
        let (lang_name, lang) =
            self.resolve_language(language)
                .ok_or_else(|| Error::UnknownValue {
                    what: "language",
                    value: language.to_string(),
                    valid: self.valid_languages(),
                })?;
        let (arches, vendor) = self.resolve_arches(arch)?;
        let no_profiler = |reason: String| Error::NoProfiler {
            language: lang_name.clone(),
            arch: arches.join(","),
            reason,
        };
        if lang.types.is_empty() {
            let reason = lang
                .unsupported
                .clone()
                .unwrap_or_else(|| "no profiler types are configured for it".into());
            let exist: Vec<String> = Vendor::ALL
                .iter()
                .filter_map(|v| {
                    let names: BTreeSet<&str> = self
                        .choices
                        .values()
                        .filter(|c| c.vendor == *v)
                        .flat_map(|c| c.passes.iter().map(|p| p.profiler.as_str()))
                        .collect();
                    (!names.is_empty()).then(|| {
                        format!("{} ({v})", names.into_iter().collect::<Vec<_>>().join(", "))
                    })
                })
                .collect();
            return Err(no_profiler(format!(
                "{lang_name}: {reason}; profilers that exist: {}",
                exist.join("; ")
            )));
        }
        let requested = profiler_type.map(norm).filter(|t| !t.is_empty());
        let (ty, defaulted) = match requested {
            Some(ty) => {
                if !lang.types.contains_key(&ty) {
                    return Err(Error::UnknownValue {
                        what: "profiler type",
                        value: profiler_type.unwrap_or_default().to_string(),
                        valid: format!(
                            "{} (for language {lang_name})",
                            lang.types.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    });
                }
                (ty, false)
            }
            None => {
                let ty = lang
                    .default_by_vendor
                    .get(&vendor)
                    .or(lang.default.as_ref())
                    .cloned()
                    .ok_or_else(|| no_profiler(self.alternatives(&lang_name, lang, vendor)))?;
                (ty, true)
            }
        };
        let choice_name = &lang.types[&ty];
        let choice = self.choices.get(choice_name).ok_or_else(|| Error::Config {
            origin: self.origin.clone(),
            message: format!("choice `{choice_name}` vanished"),
        })?;
        if choice.vendor != vendor {
            let backends: BTreeSet<&str> =
                choice.passes.iter().map(|p| p.profiler.as_str()).collect();
            return Err(no_profiler(format!(
                "`{}` profiles {} GPUs only, but `{}` is {vendor}; {}",
                backends.into_iter().collect::<Vec<_>>().join(", "),
                choice.vendor,
                arches.join(","),
                self.alternatives(&lang_name, lang, vendor)
            )));
        }
        Ok(Selected {
            language: lang_name,
            arches,
            vendor,
            profiler_type: ty,
            defaulted,
            passes: choice.passes.clone(),
        })
    }

    /// The ordered profiler passes for `language` on `arch`.
    pub fn get_profilers(
        &self,
        language: &str,
        arch: &str,
        profiler_type: Option<&str>,
    ) -> Result<Vec<ProfilerPass>> {
        self.select(language, arch, profiler_type).map(|s| s.passes)
    }
}

/// The ordered profiler passes for `language` on `arch` (optionally forcing `profiler_type`),
/// from the table `POLYPROF_CONFIG` names or the embedded one.
pub fn get_profilers(
    language: &str,
    arch: &str,
    profiler_type: Option<&str>,
) -> Result<Vec<ProfilerPass>> {
    Selection::load(None)?.get_profilers(language, arch, profiler_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_table_is_valid_and_covers_the_required_names() {
        let s = Selection::embedded().unwrap();
        assert_eq!(
            s.languages(),
            ["cuda", "hip", "metal", "ocl", "pytorch", "sycl", "triton"]
        );
        let required = [
            (
                Vendor::Nvidia,
                &[
                    "maxwell",
                    "pascal",
                    "volta",
                    "turing",
                    "ampere",
                    "ada",
                    "hopper",
                    "blackwell",
                    "a100",
                    "h100",
                    "h200",
                    "l40s",
                    "l4",
                    "a6000",
                    "native",
                ][..],
            ),
            (
                Vendor::Intel,
                &["lnl", "ptl", "bmg", "dg2", "pvc", "xpu"][..],
            ),
            (
                Vendor::Amd,
                &["gfx90a", "gfx942", "mi300", "mi300x", "mi250"][..],
            ),
            (Vendor::Apple, &["m1", "m2", "m3", "m4", "apple"][..]),
        ];
        for (vendor, names) in required {
            for name in names {
                assert!(
                    s.arches(vendor).iter().any(|a| a == name),
                    "{vendor} {name}"
                );
            }
        }
    }

    #[test]
    fn every_profiler_has_a_vendor() {
        for name in PROFILER_NAMES {
            assert!(profiler_vendor(name).is_some(), "{name}");
        }
        assert_eq!(profiler_vendor("none"), None);
    }

    #[test]
    fn pass_labels() {
        let s = Selection::embedded().unwrap();
        let labels: Vec<String> = s
            .get_profilers("sycl", "bmg", None)
            .unwrap()
            .iter()
            .map(ProfilerPass::label)
            .collect();
        assert_eq!(
            labels,
            [
                "unitrace:ComputeBasic",
                "unitrace:MemoryProfile",
                "unitrace:VectorEngineProfile"
            ]
        );
    }

    #[test]
    fn a_row_routes_its_metric_group_to_the_backends_own_settings() {
        let s = Selection::embedded().unwrap();
        let pass = &s
            .get_profilers("hip", "mi300x", Some("rocprofv3-roofline"))
            .unwrap()[0];
        assert_eq!(
            pass.settings.rocprofv3.counters.as_deref(),
            Some("roofline")
        );
        assert_eq!(pass.settings.unitrace.metric_group, None);
        assert_eq!(pass.label(), "rocprofv3:roofline");
        let table = EMBEDDED_CONFIG.replace(
            r#"ncu = [{ profiler = "ncu" }]"#,
            r#"ncu = [{ profiler = "ncu", metric_group = "ComputeBasic" }]"#,
        );
        let err = Selection::from_toml(&table, "test")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`ncu` takes no metric_group"), "{err}");
    }
}
