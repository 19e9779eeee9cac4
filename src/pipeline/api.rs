//! The eval-pipeline API: profile a target with every pass that selection returns for a
//! language and architecture, each pass in its own directory `<profiler>.<NNN>`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::model::arg::Arg;
use crate::model::error::Result;
use crate::model::run::ProfileRun;
use crate::pipeline::job::{Job, pass_label, profile};
use crate::pipeline::runner::RunOptions;
use crate::profilers::ProfilerSettings;
use crate::profilers::selection::get_profilers;

/// How `profile_all` runs its passes.
#[derive(Debug, Clone, Default)]
pub struct ProfileAllOptions {
    /// Each pass writes into `<output_root>/<profiler>.<NNN>`.
    pub output_root: PathBuf,
    /// Timeouts, environment policy, cancellation, … shared by every pass.
    pub run: RunOptions,
    /// Settings laid over each selected pass's own (Nsight Compute options, extra arguments,
    /// end marker and grace overrides); the pass keeps its variant (metric group, counter set).
    pub overrides: Option<ProfilerSettings>,
    /// Call-path frames the kernels are placed under (see [`Job::call_path`]).
    pub call_path: Vec<String>,
}

/// Run every pass selected for `language` × `arch` (× `profiler_type`) over `target`, one after
/// the other (passes share the device), and return the runs keyed by their directory name.
/// Selection errors (unknown language, arch or profiler type) are returned as `Err`; a pass
/// whose profiler is unavailable yields a run whose `errors` say why.
pub async fn profile_all(
    language: &str,
    arch: &str,
    profiler_type: Option<&str>,
    target: &[impl Clone + Into<Arg>],
    options: &ProfileAllOptions,
) -> Result<BTreeMap<String, ProfileRun>> {
    let passes = get_profilers(language, arch, profiler_type)?;
    let mut counters: BTreeMap<String, u32> = BTreeMap::new();
    let mut runs = BTreeMap::new();
    for pass in passes {
        let index = counters.entry(pass.profiler.clone()).or_default();
        let key = pass_label(&pass.profiler, *index);
        *index += 1;
        let mut settings = options.overrides.clone().unwrap_or_default();
        if let Some(entry) = crate::profilers::registry::find(&pass.profiler) {
            let kind = entry.settings;
            let variant = kind
                .variant(&pass.settings)
                .or(kind.variant(&settings))
                .map(str::to_string);
            kind.set_variant(&mut settings, variant);
        }
        let job = Job {
            target: target.iter().cloned().map(Into::into).collect(),
            profiler: pass.profiler.clone(),
            settings,
            output_dir: options.output_root.join(&key),
            label: Some(key.clone()),
            run: options.run.clone(),
            call_path: options.call_path.clone(),
            profile_cache: None,
        };
        runs.insert(key, profile(&job).await);
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unknown_language_is_an_error_listing_valid_values() {
        let options = ProfileAllOptions::default();
        let err = profile_all("fortran", "h100", None, &["true"], &options)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("cuda"), "{err}");
    }

    #[tokio::test]
    async fn unavailable_profiler_yields_runs_that_say_why() {
        let root = tempfile::tempdir().unwrap();
        let mut options = ProfileAllOptions {
            output_root: root.path().to_path_buf(),
            ..Default::default()
        };
        // Point ncu at a binary that cannot exist so the test means the same on a GPU machine.
        let mut overrides = ProfilerSettings::default();
        overrides.ncu.binary = "polyprof-test-no-such-ncu".to_string();
        options.overrides = Some(overrides);
        let runs = profile_all("cuda", "H200", None, &["true"], &options)
            .await
            .unwrap();
        assert_eq!(runs.keys().collect::<Vec<_>>(), ["ncu.000"]);
        let run = &runs["ncu.000"];
        assert!(run.outcome.is_none());
        assert!(
            run.has_error(crate::model::ErrorKind::ProfilerUnavailable),
            "{:?}",
            run.errors
        );
        assert!(root.path().join("ncu.000/run.json").is_file());
    }

    #[tokio::test]
    async fn unitrace_selection_gives_three_numbered_passes() {
        let root = tempfile::tempdir().unwrap();
        let options = ProfileAllOptions {
            output_root: root.path().to_path_buf(),
            ..Default::default()
        };
        let runs = profile_all("sycl", "bmg", None, &["true"], &options)
            .await
            .unwrap();
        assert_eq!(
            runs.keys().collect::<Vec<_>>(),
            ["unitrace.000", "unitrace.001", "unitrace.002"]
        );
        for run in runs.values() {
            assert_eq!(run.profiler.name, "unitrace");
            assert!(
                !run.errors.is_empty(),
                "no unitrace here, so each pass says why"
            );
        }
    }
}
