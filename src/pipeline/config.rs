//! Defaults people set once: a project's `polyprof.toml` (found upward from the working
//! directory) and the user's `$XDG_CONFIG_HOME/polyprof/config.toml` (else
//! `~/.config/polyprof/config.toml`), each key also as a `POLYPROF_<KEY>` variable. A flag
//! overrides them all: built-in default < user file < project file < environment < flag.
//! `polyprof config` shows each effective value and where it came from (docs/config.md).
//!
//! Paths in a file are relative to that file's folder (a project's `devices = "gpus.toml"`
//! holds from any subfolder); paths in a variable are relative to the working directory.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::error::{Error, Result};
use crate::pipeline::config_file::{self, Found, Skipped};

/// The project file, looked for in the working directory and each folder above it.
pub const PROJECT_FILE: &str = "polyprof.toml";
/// The user file, under `$XDG_CONFIG_HOME/polyprof/` (else `~/.config/polyprof/`).
pub const USER_FILE: &str = "config.toml";
/// Prefix of the variables: `POLYPROF_CLOCK_CONTROL`, `POLYPROF_PROFILER_PYTORCH`, …
pub const ENV_PREFIX: &str = "POLYPROF_";
/// The calibration cache's folder under polyprof's cache root (`$XDG_CACHE_HOME/polyprof/`).
pub const CALIBRATION_DIR: &str = "calibration";

/// The default output root of `run` and `eval`.
pub const DEFAULT_OUTPUT_ROOT: &str = "polyprof-runs";

/// The keys, in the order `polyprof config` lists them (then `profiler.<language>`).
pub const KEYS: [&str; 5] = [
    "clock_control",
    "output_root",
    "devices",
    "env_policy",
    "cache_dir",
];

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "from")]
pub enum Source {
    /// polyprof's own default.
    Default,
    /// The user file at this path.
    User(PathBuf),
    /// The project file at this path.
    Project(PathBuf),
    /// This environment variable.
    Env(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::User(path) => write!(f, "user file {}", path.display()),
            Source::Project(path) => write!(f, "project file {}", path.display()),
            Source::Env(name) => write!(f, "environment {name}"),
        }
    }
}

/// One key's value and its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Setting<T> {
    fn default(value: T) -> Self {
        Setting {
            value,
            source: Source::Default,
        }
    }
}

/// The effective configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// ncu's clock control for `run` and `demo`: `base` (locked, comparable) or `none` (VMs, MIG).
    pub clock_control: Setting<String>,
    /// Where `run` and `eval` put their run directories when no `--output-dir` is given.
    pub output_root: Setting<PathBuf>,
    /// A device table (TOML) that adds to or replaces built-in entries, for `report`, `diff`.
    pub devices: Setting<Option<PathBuf>>,
    /// What `run` and `batch` commands see of polyprof's environment: inherit, clean, untrusted.
    pub env_policy: Setting<String>,
    /// The calibration cache folder (`calibrate`).
    pub cache_dir: Setting<Option<PathBuf>>,
    /// The profiler `select` and `batch` jobs use for a language, instead of the table's default.
    pub profilers: BTreeMap<String, Setting<String>>,
    /// The files read, user first.
    pub files: Vec<PathBuf>,
    /// The files found but not honoured (another user's, not a regular file), and why.
    pub skipped: Vec<Skipped>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            clock_control: Setting::default("base".to_string()),
            output_root: Setting::default(PathBuf::from(DEFAULT_OUTPUT_ROOT)),
            devices: Setting::default(None),
            env_policy: Setting::default("inherit".to_string()),
            cache_dir: Setting::default(None),
            profilers: BTreeMap::new(),
            files: Vec::new(),
            skipped: Vec::new(),
        }
    }
}

/// A file's keys (every one optional; an unknown key is an error, so a typo is not ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    clock_control: Option<String>,
    output_root: Option<PathBuf>,
    devices: Option<PathBuf>,
    env_policy: Option<String>,
    cache_dir: Option<PathBuf>,
    #[serde(default)]
    profiler: BTreeMap<String, String>,
}

fn check_clock_control(value: &str, origin: &str) -> Result<String> {
    match value.trim() {
        v @ ("base" | "none") => Ok(v.to_string()),
        other => Err(Error::Config {
            origin: origin.to_string(),
            message: format!("clock_control is `{other}`; valid: base, none"),
        }),
    }
}

fn check_env_policy(value: &str, origin: &str) -> Result<String> {
    match value.trim() {
        v @ ("inherit" | "clean" | "untrusted") => Ok(v.to_string()),
        other => Err(Error::Config {
            origin: origin.to_string(),
            message: format!("env_policy is `{other}`; valid: inherit, clean, untrusted"),
        }),
    }
}

/// An empty path would name the file's folder (or nothing): runs, a cache or a device table
/// there is never what was meant, so it is refused here rather than failing later with an
/// unclear message. `what` says what the key names, for the message.
fn check_path(key: &str, what: &str, value: &Path, origin: &str) -> Result<()> {
    if value.as_os_str().is_empty() || value.to_str().is_some_and(|v| v.trim().is_empty()) {
        let default = if key == "output_root" {
            format!(" (the default is `{DEFAULT_OUTPUT_ROOT}`)")
        } else {
            String::new()
        };
        return Err(Error::Config {
            origin: origin.to_string(),
            message: format!("{key} is empty; give {what}{default} or remove the key"),
        });
    }
    Ok(())
}

fn check_profiler(language: &str, value: &str, origin: &str) -> Result<String> {
    let name = value.trim().to_ascii_lowercase();
    if crate::profilers::registry::find(&name).is_some() {
        return Ok(name);
    }
    Err(Error::Config {
        origin: origin.to_string(),
        message: format!(
            "profiler.{language} is `{value}`, not a profiler polyprof knows; valid: {}",
            crate::profilers::PROFILER_NAMES.join(", ")
        ),
    })
}

impl Config {
    /// Layer one file's keys over `self`; `source` is the file's, `dir` its folder.
    fn apply_file(&mut self, text: &str, path: &Path, source: Source) -> Result<()> {
        let origin = path.display().to_string();
        let raw: RawFile = toml::from_str(text).map_err(|e| Error::Config {
            origin: origin.clone(),
            message: format!("{e}; keys: {}, [profiler]", KEYS.join(", ")),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let set = |value| Setting {
            value,
            source: source.clone(),
        };
        if let Some(v) = raw.clock_control {
            self.clock_control = set(check_clock_control(&v, &origin)?);
        }
        if let Some(v) = raw.output_root {
            check_path("output_root", "a folder", &v, &origin)?;
            self.output_root = Setting {
                value: dir.join(v),
                source: source.clone(),
            };
        }
        if let Some(v) = raw.devices {
            check_path("devices", "a device table file", &v, &origin)?;
            self.devices = Setting {
                value: Some(dir.join(v)),
                source: source.clone(),
            };
        }
        if let Some(v) = raw.env_policy {
            self.env_policy = set(check_env_policy(&v, &origin)?);
        }
        if let Some(v) = raw.cache_dir {
            check_path("cache_dir", "a folder", &v, &origin)?;
            self.cache_dir = Setting {
                value: Some(dir.join(v)),
                source: source.clone(),
            };
        }
        for (language, profiler) in raw.profiler {
            let language = language.trim().to_ascii_lowercase();
            let value = check_profiler(&language, &profiler, &origin)?;
            self.profilers.insert(language, set(value));
        }
        self.files.push(path.to_path_buf());
        Ok(())
    }

    /// Layer the `POLYPROF_<KEY>` variables of `vars` over `self`.
    fn apply_env(&mut self, vars: &[(String, OsString)]) -> Result<()> {
        for (name, value) in vars {
            let Some(key) = name.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            let source = Source::Env(name.clone());
            let text = || {
                value
                    .to_str()
                    .map(str::to_string)
                    .ok_or_else(|| Error::Config {
                        origin: name.clone(),
                        message: "the value is not UTF-8".to_string(),
                    })
            };
            match key {
                "CLOCK_CONTROL" => {
                    self.clock_control = Setting {
                        value: check_clock_control(&text()?, name)?,
                        source,
                    }
                }
                "OUTPUT_ROOT" => {
                    check_path("output_root", "a folder", Path::new(value), name)?;
                    self.output_root = Setting {
                        value: PathBuf::from(value),
                        source,
                    }
                }
                "DEVICES" => {
                    check_path("devices", "a device table file", Path::new(value), name)?;
                    self.devices = Setting {
                        value: Some(PathBuf::from(value)),
                        source,
                    }
                }
                "ENV_POLICY" => {
                    self.env_policy = Setting {
                        value: check_env_policy(&text()?, name)?,
                        source,
                    }
                }
                "CACHE_DIR" => {
                    check_path("cache_dir", "a folder", Path::new(value), name)?;
                    self.cache_dir = Setting {
                        value: Some(PathBuf::from(value)),
                        source,
                    }
                }
                _ => {
                    if let Some(language) = key.strip_prefix("PROFILER_") {
                        let language = language.to_ascii_lowercase();
                        let value = check_profiler(&language, &text()?, name)?;
                        self.profilers.insert(language, Setting { value, source });
                    }
                }
            }
        }
        Ok(())
    }

    /// The configuration for working directory `cwd`, the user file found through
    /// `XDG_CONFIG_HOME` / `HOME` in `vars`, and the `POLYPROF_*` variables of `vars`.
    pub fn load_from(cwd: &Path, vars: &[(String, OsString)]) -> Result<Config> {
        let var = |name: &str| {
            vars.iter()
                .find(|(n, v)| n == name && !v.is_empty())
                .map(|(_, v)| PathBuf::from(v))
        };
        let mut config = Config::default();
        let user_dir = var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|h| h.join(".config")));
        if let Some(dir) = user_dir {
            let path = dir.join("polyprof").join(USER_FILE);
            if let Some(text) = read_if_present(&path, &mut config.skipped)? {
                config.apply_file(&text, &path, Source::User(path.clone()))?;
            }
        }
        if let Some((path, text)) = find_project_file(cwd, &mut config.skipped)? {
            config.apply_file(&text, &path, Source::Project(path.clone()))?;
        }
        for skipped in &config.skipped {
            tracing::warn!(
                "configuration file {} passed over: {}",
                skipped.path.display(),
                skipped.why
            );
        }
        config.apply_env(vars)?;
        Ok(config)
    }

    /// The configuration of this process: its working directory and environment.
    pub fn load() -> Result<Config> {
        let cwd =
            std::env::current_dir().map_err(|e| Error::io("read the working directory", ".", e))?;
        let vars: Vec<(String, OsString)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
            .filter(|(k, _)| k.starts_with(ENV_PREFIX) || k == "XDG_CONFIG_HOME" || k == "HOME")
            .collect();
        Config::load_from(&cwd, &vars)
    }

    /// The profiler configured for `language` (`pytorch`, …), if any.
    pub fn profiler_for(&self, language: &str) -> Option<&str> {
        self.profilers
            .get(&language.trim().to_ascii_lowercase())
            .map(|s| s.value.as_str())
    }

    /// Every key with its value as text and its source, in [`KEYS`] order, then the profilers.
    pub fn rows(&self) -> Vec<(String, String, &Source)> {
        let path = |p: &Option<PathBuf>, none: &str| {
            p.as_ref()
                .map_or_else(|| none.to_string(), |p| p.display().to_string())
        };
        let mut rows = vec![
            (
                "clock_control".to_string(),
                self.clock_control.value.clone(),
                &self.clock_control.source,
            ),
            (
                "output_root".to_string(),
                self.output_root.value.display().to_string(),
                &self.output_root.source,
            ),
            (
                "devices".to_string(),
                path(&self.devices.value, "(built-in table)"),
                &self.devices.source,
            ),
            (
                "env_policy".to_string(),
                self.env_policy.value.clone(),
                &self.env_policy.source,
            ),
            (
                "cache_dir".to_string(),
                match &self.cache_dir.value {
                    Some(dir) => dir.display().to_string(),
                    None => default_cache_dir().map_or_else(
                        || "(none: set XDG_CACHE_HOME or HOME)".to_string(),
                        |d| d.display().to_string(),
                    ),
                },
                &self.cache_dir.source,
            ),
        ];
        for (language, setting) in &self.profilers {
            rows.push((
                format!("profiler.{language}"),
                setting.value.clone(),
                &setting.source,
            ));
        }
        rows
    }
}

/// `$XDG_CACHE_HOME/polyprof/calibration`, else `$HOME/.cache/polyprof/calibration`: the
/// calibration cache when no `cache_dir` is configured.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })?;
    Some(base.join("polyprof").join(CALIBRATION_DIR))
}

/// A file this user may not read, may not trust (another user's) or that is not a regular
/// file is passed over into `skipped`, as git does: polyprof run as another user (`sudo -u`,
/// a setuid test) keeps the caller's HOME, whose files it cannot open (config_file.rs).
fn read_if_present(path: &Path, skipped: &mut Vec<Skipped>) -> Result<Option<String>> {
    match config_file::read(path) {
        Ok(Found::Text(text)) => Ok(Some(text)),
        Ok(Found::Absent) => Ok(None),
        Ok(Found::Skipped(skip)) => {
            skipped.push(skip);
            Ok(None)
        }
        Err(e) => Err(Error::io("read the configuration file", path, e)),
    }
}

/// The nearest trusted `polyprof.toml` in `cwd` or a folder above it, with its text; the
/// untrusted ones nearer are recorded in `skipped`.
fn find_project_file(cwd: &Path, skipped: &mut Vec<Skipped>) -> Result<Option<(PathBuf, String)>> {
    for dir in cwd.ancestors() {
        let path = dir.join(PROJECT_FILE);
        if let Some(text) = read_if_present(&path, skipped)? {
            return Ok(Some((path, text)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect()
    }

    #[test]
    fn user_then_project_then_environment() {
        let home = tempfile::tempdir().unwrap();
        let user = home.path().join(".config/polyprof");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(
            user.join(USER_FILE),
            "clock_control = \"none\"\nenv_policy = \"clean\"\ncache_dir = \"cache\"\n",
        )
        .unwrap();
        let project = tempfile::tempdir().unwrap();
        let sub = project.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(
            project.path().join(PROJECT_FILE),
            "env_policy = \"untrusted\"\ndevices = \"gpus.toml\"\n[profiler]\nPyTorch = \"NCU\"\n",
        )
        .unwrap();
        let home_text = home.path().to_str().unwrap();
        let config = Config::load_from(
            &sub,
            &vars(&[("HOME", home_text), ("POLYPROF_CLOCK_CONTROL", "base")]),
        )
        .unwrap();
        assert_eq!(config.clock_control.value, "base");
        assert_eq!(
            config.clock_control.source,
            Source::Env("POLYPROF_CLOCK_CONTROL".into())
        );
        assert_eq!(config.env_policy.value, "untrusted");
        assert_eq!(
            config.env_policy.source,
            Source::Project(project.path().join(PROJECT_FILE))
        );
        assert_eq!(config.devices.value, Some(project.path().join("gpus.toml")));
        assert_eq!(config.cache_dir.value, Some(user.join("cache")));
        assert_eq!(config.profiler_for("pytorch"), Some("ncu"));
        assert_eq!(config.output_root.source, Source::Default);
        assert_eq!(config.files.len(), 2);
    }

    #[test]
    fn bad_values_and_unknown_keys_say_where_and_what_is_valid() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(PROJECT_FILE), "clock_contol = \"none\"\n").unwrap();
        let error = Config::load_from(dir.path(), &[]).unwrap_err().to_string();
        assert!(
            error.contains("polyprof.toml") && error.contains("clock_contol"),
            "{error}"
        );
        let empty = tempfile::tempdir().unwrap();
        let error = Config::load_from(empty.path(), &vars(&[("POLYPROF_ENV_POLICY", "leaky")]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("POLYPROF_ENV_POLICY") && error.contains("inherit, clean, untrusted"),
            "{error}"
        );
        let error = Config::load_from(empty.path(), &vars(&[("POLYPROF_PROFILER_CUDA", "nsys")]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("profiler.cuda is `nsys`"), "{error}");
        // An empty path names no folder or file, in a file or a variable.
        for key in ["output_root", "cache_dir", "devices"] {
            std::fs::write(dir.path().join(PROJECT_FILE), format!("{key} = \" \"\n")).unwrap();
            let error = Config::load_from(dir.path(), &[]).unwrap_err().to_string();
            assert!(error.contains(&format!("{key} is empty")), "{error}");
            let variable = format!("POLYPROF_{}", key.to_ascii_uppercase());
            let error = Config::load_from(empty.path(), &vars(&[(&variable, "")]))
                .unwrap_err()
                .to_string();
            assert!(error.contains(&variable), "{error}");
        }
    }
}
