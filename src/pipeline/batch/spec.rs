//! One job of a batch as the job file describes it, and what it resolves to: the profiler
//! passes (an explicit `profiler`, or `language` + `arch` through selection) and the vendor
//! whose device it needs.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use crate::model::error::{Error, Result};
use crate::model::plan::EndMarker;
use crate::profilers::registry::Vendor;
use crate::profilers::selection::{ProfilerPass, Selection, profiler_vendor};
use crate::profilers::settings::BackendOverrides;
use crate::profilers::{PROFILER_NAMES, ProfilerSettings};

use super::cache_setting::ProfileCacheSetting;
use super::eval_table::EvalJob;
use super::stage::StageRef;
use crate::model::batch::BatchEntry;
use crate::pipeline::profile_cache::ProfileCacheOptions;

/// Longest job id (it names a directory).
pub const MAX_ID_LEN: usize = 128;

/// One job: what to run, under which profiler, with which limits. Unknown keys are refused
/// (a typo must not silently drop an option).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Unique in the batch; names the run directory `runs/<id>` (letters, digits, `.`, `_`,
    /// `-`; not starting with `.`).
    pub id: String,
    /// The command's argv, exactly as given (or give `eval` instead).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target: Vec<String>,
    /// Profiler name (`none`, `ncu`, …); or give `language` and `arch` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiler: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// Forces a profiler type of the language (selection's `--profiler`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiler_type: Option<String>,
    /// Overall wall-clock limit of each pass, seconds (default: the batch's `--timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactivity_timeout_s: Option<f64>,
    /// Variables set for the command.
    #[serde(
        default,
        deserialize_with = "unique_keys",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub env: BTreeMap<String, String>,
    /// `pytest`, `none`, `literal:TEXT` or `regex:RE` (as `polyprof run --end-marker`).
    #[serde(
        default,
        deserialize_with = "end_marker_from_text",
        serialize_with = "end_marker_to_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub end_marker: Option<EndMarker>,
    /// Backend settings laid over each pass's own, one key per backend (`ncu`: `preset`,
    /// `kernel_name`, `launch_count`, …); the batch passes them on without reading them.
    #[serde(flatten)]
    pub backend: BackendOverrides,
    /// Run the passes in a container of this image (already on the engine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    #[serde(
        default,
        deserialize_with = "unique_keys",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    /// Extra attempts after a crash or timeout (default: the batch's `--retries`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// An eval of a candidate against a reference instead of a `target` command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval: Option<EvalJob>,
    /// Profile each kernel fingerprint once and serve repeats from the profile cache: `true`,
    /// `false` (not even under the batch's `--profile-cache`), a directory, or a table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_cache: Option<ProfileCacheSetting>,
    /// The cascade stage this job is, for a job a `problem` of the job file expanded to;
    /// never given as a key (what the stage runs is in the job's other keys, and so in its
    /// digest).
    #[serde(skip)]
    pub stage: Option<StageRef>,
}

/// A string map that refuses a key given twice (JSON keeps the last one silently; TOML
/// already refuses), as the job's own keys are refused.
pub(crate) fn unique_keys<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<BTreeMap<String, String>, D::Error> {
    struct Unique;
    impl<'de> serde::de::Visitor<'de> for Unique {
        type Value = BTreeMap<String, String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a table of strings")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((key, value)) = map.next_entry::<String, String>()? {
                if out.contains_key(&key) {
                    return Err(serde::de::Error::custom(format!(
                        "duplicate key `{key}`; give each key once"
                    )));
                }
                out.insert(key, value);
            }
            Ok(out)
        }
    }
    deserializer.deserialize_map(Unique)
}

/// A job's own keys (its backend keys are [`BackendOverrides::KEYS`]).
const JOB_KEYS: [&str; 15] = [
    "id",
    "target",
    "profiler",
    "language",
    "arch",
    "profiler_type",
    "timeout_s",
    "inactivity_timeout_s",
    "env",
    "end_marker",
    "container",
    "labels",
    "retries",
    "eval",
    "profile_cache",
];

/// `message` from reading a job, with every valid key listed when it refuses an unknown one
/// (serde cannot list the backend keys a job passes on).
pub fn with_valid_keys(message: String) -> String {
    if !message.contains("unknown field") {
        return message;
    }
    let keys: Vec<&str> = JOB_KEYS
        .iter()
        .chain(BackendOverrides::KEYS.iter())
        .copied()
        .collect();
    format!("{message}; valid keys: {}", keys.join(", "))
}

fn end_marker_from_text<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<EndMarker>, D::Error> {
    let text: Option<String> = Option::deserialize(deserializer)?;
    text.map(|t| t.parse().map_err(serde::de::Error::custom))
        .transpose()
}

fn end_marker_to_text<S: serde::Serializer>(
    marker: &Option<EndMarker>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    match marker {
        Some(m) => serializer.serialize_str(&m.to_string()),
        None => serializer.serialize_none(),
    }
}

/// Whether `id` can name a run directory on every filesystem polyprof runs on.
pub fn check_id(id: &str) -> std::result::Result<(), String> {
    if id.is_empty() {
        return Err("the job id is empty".into());
    }
    if id.len() > MAX_ID_LEN {
        return Err(format!(
            "the job id `{id}` is longer than {MAX_ID_LEN} characters"
        ));
    }
    if id.starts_with('.') {
        return Err(format!(
            "the job id `{id}` starts with `.`; start it with a letter or digit"
        ));
    }
    if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "the job id `{id}` contains `{bad}`; use letters, digits, `.`, `_` and `-` (it names a directory)"
        ));
    }
    Ok(())
}

impl JobSpec {
    /// SHA-256 (hex) of what the job runs: its definition without the id, labels and retries
    /// (those change no result). Stored in each entry; `--resume` compares it.
    pub fn definition_digest(&self) -> String {
        use sha2::Digest;
        let definition = JobSpec {
            id: String::new(),
            labels: BTreeMap::new(),
            retries: None,
            ..self.clone()
        };
        // Maps are ordered (BTreeMap), so equal definitions serialize to equal bytes.
        let mut bytes = serde_json::to_vec(&definition).unwrap_or_default();
        // An eval is of the files' bytes, not their paths: a candidate replaced under the same
        // path is another job (`--resume` and the cascade rerun it).
        if let Some(eval) = &self.eval {
            for path in [&eval.reference, &eval.candidate] {
                let sha = crate::pipeline::regular_file::sha256_hex(path);
                bytes.extend_from_slice(sha.as_deref().unwrap_or("unreadable").as_bytes());
            }
        }
        let digest = sha2::Sha256::digest(&bytes);
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The job's entry before it runs (with its cascade stage, if it is one).
    pub fn pending_entry(&self) -> BatchEntry {
        let mut entry = BatchEntry::pending(&self.id, self.labels.clone());
        entry.cascade = self.stage.as_ref().map(StageRef::entry_stage);
        entry
    }

    /// A `none` job running `target`.
    pub fn new(id: impl Into<String>, target: Vec<String>) -> Self {
        JobSpec {
            id: id.into(),
            target,
            ..Default::default()
        }
    }

    /// Checks that need no selection table: the id, a non-empty target, profiler XOR
    /// language + arch, sane timeouts. The message says what to change.
    pub fn validate(&self) -> std::result::Result<(), String> {
        check_id(&self.id)?;
        if let Some(eval) = &self.eval {
            return self.validate_eval(eval);
        }
        if self.target.is_empty() || self.target[0].is_empty() {
            return Err(format!(
                "job `{}`: `target` is empty; give the command as an array of strings (or an `eval` table)",
                self.id
            ));
        }
        // A NUL cannot cross exec: the command would run as something else, or not at all.
        if let Some((i, _)) = self
            .target
            .iter()
            .enumerate()
            .find(|(_, a)| a.contains('\0'))
        {
            return Err(format!(
                "job `{}`: word {i} of `target` contains a NUL character, which no command line can carry",
                self.id
            ));
        }
        self.validate_env()?;
        match (&self.profiler, &self.language, &self.arch) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(format!(
                    "job `{}`: give either `profiler` or `language` + `arch`, not both",
                    self.id
                ));
            }
            (None, Some(_), None) | (None, None, Some(_)) => {
                return Err(format!(
                    "job `{}`: `language` and `arch` go together; give both (or `profiler`)",
                    self.id
                ));
            }
            (Some(p), None, None) => {
                let p = p.trim().to_ascii_lowercase();
                if p != "none" && !PROFILER_NAMES.contains(&p.as_str()) {
                    return Err(format!(
                        "job `{}`: unknown profiler `{p}`; valid: none, {}",
                        self.id,
                        PROFILER_NAMES.join(", ")
                    ));
                }
            }
            _ => {}
        }
        if let Some(setting) = &self.profile_cache {
            setting
                .validate()
                .map_err(|why| format!("job `{}`: {why}", self.id))?;
            let none = self.language.is_none()
                && self
                    .profiler
                    .as_deref()
                    .is_none_or(|p| p.trim().eq_ignore_ascii_case("none"));
            if none && *setting != ProfileCacheSetting::On(false) {
                return Err(format!(
                    "job `{}`: `profile_cache` caches what a profiler measured, and this job runs no profiler; give `profiler` (ncu) or remove it",
                    self.id
                ));
            }
        }
        if self.profiler_type.is_some() && self.language.is_none() {
            return Err(format!(
                "job `{}`: `profiler_type` needs `language` and `arch`",
                self.id
            ));
        }
        for (name, value) in [
            ("timeout_s", self.timeout_s),
            ("inactivity_timeout_s", self.inactivity_timeout_s),
        ] {
            if let Some(v) = value
                && !(v.is_finite() && v > 0.0 && v <= 7.0 * 24.0 * 3600.0)
            {
                return Err(format!(
                    "job `{}`: `{name}` = {v} is out of range; give seconds above 0, at most a week",
                    self.id
                ));
            }
        }
        Ok(())
    }

    fn validate_env(&self) -> std::result::Result<(), String> {
        for (name, value) in &self.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(format!(
                    "job `{}`: `env` name {name:?} is not a variable name (it must be non-empty, without `=` or NUL)",
                    self.id
                ));
            }
            if value.contains('\0') {
                return Err(format!(
                    "job `{}`: `env` value of `{name}` contains a NUL character, which no environment can carry",
                    self.id
                ));
            }
        }
        Ok(())
    }

    /// An eval job: no command and nothing that only a command takes; the table itself sane.
    fn validate_eval(&self, eval: &EvalJob) -> std::result::Result<(), String> {
        if !self.target.is_empty() {
            return Err(format!(
                "job `{}`: give either `target` (a command) or `eval` (a candidate to judge), not both",
                self.id
            ));
        }
        let command_only = [
            ("profiler", self.profiler.is_some()),
            ("language", self.language.is_some()),
            ("arch", self.arch.is_some()),
            ("profiler_type", self.profiler_type.is_some()),
            ("inactivity_timeout_s", self.inactivity_timeout_s.is_some()),
            ("end_marker", self.end_marker.is_some()),
            ("container", self.container.is_some()),
            ("profile_cache", self.profile_cache.is_some()),
            (
                "backend settings",
                self.backend != BackendOverrides::default(),
            ),
        ];
        if let Some((key, _)) = command_only.iter().find(|(_, given)| *given) {
            return Err(format!(
                "job `{}`: `{key}` applies to a `target` command, not to an `eval` job; remove it (the eval's witness profiler is `eval.witness_profiler`)",
                self.id
            ));
        }
        self.validate_env()?;
        if let Some(v) = self.timeout_s
            && !(v.is_finite() && v > 0.0 && v <= 7.0 * 24.0 * 3600.0)
        {
            return Err(format!(
                "job `{}`: `timeout_s` = {v} is out of range; give seconds above 0, at most a week",
                self.id
            ));
        }
        eval.validate()
            .map_err(|why| format!("job `{}`: `eval`: {why}", self.id))
    }

    /// The profiler passes this job runs, each with its settings (the job's backend settings
    /// and end marker laid over the pass's own).
    pub fn passes(&self, selection: &Selection) -> Result<Vec<ProfilerPass>> {
        let mut passes = match (&self.language, &self.arch) {
            (Some(language), Some(arch)) => {
                selection.get_profilers(language, arch, self.profiler_type.as_deref())?
            }
            _ => vec![ProfilerPass {
                profiler: self
                    .profiler
                    .as_deref()
                    .unwrap_or("none")
                    .trim()
                    .to_ascii_lowercase(),
                settings: ProfilerSettings::default(),
            }],
        };
        for pass in &mut passes {
            self.backend.lay_over(&mut pass.settings);
            if let Some(marker) = &self.end_marker {
                pass.settings.end_marker = Some(marker.clone());
            }
        }
        if passes.is_empty() {
            return Err(Error::invalid(
                "job",
                format!("job `{}`: selection returned no profiler pass", self.id),
            ));
        }
        Ok(passes)
    }

    /// The profile cache options of a pass of this job under `profiler`: the job's own
    /// `profile_cache` over the batch's `default` (`--profile-cache`), none for the `none`
    /// profiler; keys scoped by the job's problem when the setting names no scope.
    pub fn profile_cache_for(
        &self,
        profiler: &str,
        default: Option<&ProfileCacheOptions>,
    ) -> Option<ProfileCacheOptions> {
        if self.eval.is_some() || profiler.trim().eq_ignore_ascii_case("none") {
            return None;
        }
        let scope = self.stage.as_ref().and_then(|s| s.cache_scope.as_deref());
        ProfileCacheSetting::resolve(self.profile_cache.as_ref(), default, scope)
    }

    /// The vendor whose GPU the job needs; `None`: CPU work (the `none` profiler, or a CPU
    /// profiler such as `vtune` with no arch).
    pub fn vendor(&self, selection: &Selection) -> Result<Option<Vendor>> {
        if let Some(eval) = &self.eval {
            return Ok(eval.vendor());
        }
        if let (Some(language), Some(arch)) = (&self.language, &self.arch) {
            return Ok(Some(
                selection
                    .select(language, arch, self.profiler_type.as_deref())?
                    .vendor,
            ));
        }
        Ok(self.profiler.as_deref().and_then(|p| {
            let p = p.trim().to_ascii_lowercase();
            profiler_vendor(&p)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> std::result::Result<JobSpec, String> {
        serde_json::from_str::<JobSpec>(json)
            .map_err(|e| e.to_string())
            .and_then(|s| s.validate().map(|()| s))
    }

    #[test]
    fn a_minimal_job_is_a_none_job() {
        let s = spec(r#"{"id": "a", "target": ["true"]}"#).unwrap();
        let table = Selection::embedded().unwrap();
        let passes = s.passes(&table).unwrap();
        assert_eq!(passes.len(), 1);
        assert_eq!(passes[0].profiler, "none");
        assert_eq!(s.vendor(&table).unwrap(), None);
    }

    #[test]
    fn unknown_keys_and_bad_markers_are_refused() {
        let err = spec(r#"{"id": "a", "target": ["true"], "timeout": 3}"#).unwrap_err();
        assert!(err.contains("unknown field `timeout`"), "{err}");
        let err =
            spec(r#"{"id": "a", "target": ["true"], "end_marker": "sometimes"}"#).unwrap_err();
        assert!(err.contains("end marker"), "{err}");
        let s = spec(r#"{"id": "a", "target": ["true"], "end_marker": "literal:DONE"}"#).unwrap();
        assert_eq!(s.end_marker, Some(EndMarker::Literal("DONE".into())));
    }

    #[test]
    fn the_listed_keys_are_the_ones_a_job_takes() {
        let every: JobSpec = serde_json::from_str(
            r#"{"id": "a", "target": ["x"], "profiler": "ncu", "language": "cuda", "arch": "h200",
                "profiler_type": "ncu", "timeout_s": 1, "inactivity_timeout_s": 1,
                "env": {"A": "1"}, "end_marker": "pytest", "ncu": {}, "container": "img",
                "labels": {"k": "v"}, "retries": 1, "eval": {"reference": "r.py", "candidate": "c.py"},
                "profile_cache": true}"#,
        )
        .unwrap();
        let json = serde_json::to_value(&every).unwrap();
        let mut keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut listed: Vec<&str> = JOB_KEYS
            .iter()
            .chain(BackendOverrides::KEYS.iter())
            .copied()
            .collect();
        keys.sort_unstable();
        listed.sort_unstable();
        assert_eq!(keys, listed);
        let message = with_valid_keys("unknown field `timeout`".into());
        assert!(
            message.contains("timeout_s") && message.contains("ncu"),
            "{message}"
        );
    }

    #[test]
    fn ids_must_name_a_directory() {
        assert!(check_id("kernel_7.v2-a").is_ok());
        for bad in ["", ".hidden", "a/b", "..", "a b", &"x".repeat(200)] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn profiler_and_language_are_exclusive() {
        let err = spec(r#"{"id": "a", "target": ["x"], "profiler": "ncu", "language": "cuda"}"#)
            .unwrap_err();
        assert!(err.contains("either"), "{err}");
        let err = spec(r#"{"id": "a", "target": ["x"], "language": "cuda"}"#).unwrap_err();
        assert!(err.contains("together"), "{err}");
        let err = spec(r#"{"id": "a", "target": ["x"], "profiler": "nvprof"}"#).unwrap_err();
        assert!(err.contains("unknown profiler"), "{err}");
        let err = spec(r#"{"id": "a", "target": []}"#).unwrap_err();
        assert!(err.contains("empty"), "{err}");
        let err = spec(r#"{"id": "a", "target": ["x"], "timeout_s": -1}"#).unwrap_err();
        assert!(err.contains("out of range"), "{err}");
    }

    #[test]
    fn language_and_arch_go_through_selection() {
        let table = Selection::embedded().unwrap();
        let s = spec(
            r#"{"id": "k", "target": ["./app"], "language": "cuda", "arch": "h200",
                "ncu": {"preset": {"kind": "minimal"}, "launch_count": 3}}"#,
        )
        .unwrap();
        let passes = s.passes(&table).unwrap();
        assert_eq!(passes[0].profiler, "ncu");
        assert_eq!(passes[0].settings.ncu.launch_count, Some(3));
        assert_eq!(s.vendor(&table).unwrap(), Some(Vendor::Nvidia));
        let sycl =
            spec(r#"{"id": "s", "target": ["./app"], "language": "sycl", "arch": "bmg"}"#).unwrap();
        assert_eq!(sycl.passes(&table).unwrap().len(), 3);
        assert_eq!(sycl.vendor(&table).unwrap(), Some(Vendor::Intel));
        let ncu = spec(r#"{"id": "n", "target": ["./app"], "profiler": "NCU"}"#).unwrap();
        assert_eq!(ncu.vendor(&table).unwrap(), Some(Vendor::Nvidia));
    }
}
