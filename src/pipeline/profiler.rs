//! The face of a profiler that users know from the Python pipeline (`name`, `wrap_cmd`,
//! `env_vars`, `end_marker`, `prepare`, `read_output`, `unavailable_reason`), written once for
//! every [`Backend`]: the effects (probes, staging, collecting files) happen here, the decisions
//! in the backend's pure core.

use std::path::Path;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::model::error::{Error, Result};
use crate::model::parsed::ProfilerOutput;
use crate::pipeline::artifacts::collect_declared;
use crate::pipeline::probe::HostProbe;
use crate::pipeline::staging::{ensure_fresh, stage_files};
use crate::profilers::backend::Backend;
use crate::profilers::preflight::Preflight;
use crate::profilers::quote;

/// Every backend, with the effects that surround its pure core.
#[async_trait]
pub trait Profiler: Backend {
    /// The plan as one POSIX shell string, for callers that hold a string. `target` is split
    /// with POSIX shell rules; every argument reaches the program verbatim.
    fn wrap_cmd(&self, target: &str) -> Result<String> {
        let argv = quote::split(target)?;
        quote::plan_to_shell(&self.wrap(&crate::model::arg::args(argv))?)
    }

    /// The preflight on this machine: the backend's probes answered by [`HostProbe`].
    fn preflight(&self) -> Preflight {
        self.check_availability(&HostProbe::new())
    }

    /// Why this profiler cannot run here, with the fix; `None` when it can.
    fn unavailable_reason(&self) -> Option<String> {
        self.preflight().reason
    }

    /// Create `host_output_dir`, refuse a previous run's output there, write the staged files,
    /// then run the backend's pre-run check (its probes honour `cancel`).
    async fn prepare_with(&self, host_output_dir: &Path, cancel: CancellationToken) -> Result<()> {
        let outputs = self.outputs();
        ensure_fresh(self.name(), host_output_dir, |n| outputs.is_stale(n)).await?;
        stage_files(host_output_dir, &outputs.stage).await?;
        if let Some(check) = self.pre_run_check() {
            let probe = HostProbe::with_cancel(cancel);
            tokio::task::spawn_blocking(move || check(&probe))
                .await
                .map_err(|e| {
                    Error::invalid(format!("{} pre-run check", self.name()), e.to_string())
                })??;
        }
        Ok(())
    }

    /// [`Profiler::prepare_with`] without cancellation.
    async fn prepare(&self, host_output_dir: &Path) -> Result<()> {
        self.prepare_with(host_output_dir, CancellationToken::new())
            .await
    }

    /// Collect the declared output files and parse them. Raw bytes are kept even when parsing
    /// finds nothing; files that could not be read are named in `errors`.
    async fn read_output(&self) -> Result<ProfilerOutput> {
        let (raw, mut errors) = collect_declared(self.output_dir(), &self.outputs()).await?;
        let mut output = self.parse(raw)?;
        errors.append(&mut output.errors);
        output.errors = errors;
        Ok(output)
    }
}

impl<B: Backend + ?Sized> Profiler for B {}

#[cfg(test)]
mod tests {
    //! The face over each backend, on this machine's real files and commands.
    use std::path::PathBuf;

    use super::*;
    use crate::model::probe::Probe;
    use crate::profilers::ProfilerSettings;
    use crate::profilers::metal::{Metal, TABLES_FILE, TOC_FILE};
    use crate::profilers::unitrace::Unitrace;
    use crate::profilers::vtune::{REPORT_FILE, RESULT_DIR, Vtune};

    #[test]
    fn preflight_off_macos_says_what_is_needed() {
        if cfg!(target_os = "macos") {
            return;
        }
        let p = Metal::new(PathBuf::from("/o"), &ProfilerSettings::default()).preflight();
        assert!(!p.available);
        let reason = p.reason.unwrap();
        assert!(
            reason.contains("needs macOS with Xcode command line tools (xcrun)"),
            "{reason}"
        );
        // Off macOS nothing else is probed, so the reason is not cluttered.
        assert_eq!(p.checks.len(), 1);
    }

    #[tokio::test]
    async fn read_output_needs_the_tables_export() {
        let dir = tempfile::tempdir().unwrap();
        let m = Metal::new(dir.path().to_path_buf(), &ProfilerSettings::default());
        assert!(m.read_output().await.is_err());
        std::fs::write(dir.path().join(TOC_FILE), "<toc/>").unwrap();
        std::fs::write(dir.path().join(TABLES_FILE), "<trace-query-result/>").unwrap();
        let out = m.read_output().await.unwrap();
        assert_eq!(out.raw.artifacts.len(), 2);
        m.prepare(&dir.path().join("fresh")).await.unwrap();
        assert!(m.prepare(dir.path()).await.is_err());
    }

    #[tokio::test]
    async fn read_output_collects_raw_files_and_flags_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let u = Unitrace::new(dir.path().to_path_buf(), &ProfilerSettings::default());
        let err = u.read_output().await.unwrap_err().to_string();
        assert!(
            err.contains("no data") || err.contains("produced no data"),
            "{err}"
        );

        std::fs::write(dir.path().join("trace.12"), "summary").unwrap();
        std::fs::write(dir.path().join("run.json"), "{}").unwrap();
        let out = u.read_output().await.unwrap();
        let names: Vec<&str> = out.raw.artifacts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, vec!["trace.12"]);
        let kinds: Vec<&str> = out
            .parsed
            .diagnostics
            .iter()
            .map(|d| d.kind.as_str())
            .collect();
        // The parser also says the bogus summary is nothing of unitrace's and holds no kernel.
        assert_eq!(
            kinds,
            vec!["no_data", "no_kernels", "no_timeline", "no_metrics"]
        );

        std::fs::write(dir.path().join("trace.metrics.12"), "a\nb\n").unwrap();
        std::fs::write(dir.path().join("python.12.json"), "{\"traceEvents\":[]}").unwrap();
        let out = u.read_output().await.unwrap();
        assert_eq!(out.raw.artifacts.len(), 3);
        let gaps =
            |d: &&crate::model::Diagnostic| d.kind == "no_timeline" || d.kind == "no_metrics";
        assert!(!out.parsed.diagnostics.iter().any(|d| gaps(&d)));
        assert_eq!(
            out.raw.get("python.12.json").unwrap().content,
            b"{\"traceEvents\":[]}"
        );
    }

    #[tokio::test]
    async fn prepare_refuses_a_previous_runs_files() {
        let dir = tempfile::tempdir().unwrap();
        let u = Unitrace::new(dir.path().to_path_buf(), &ProfilerSettings::default());
        u.prepare(dir.path()).await.unwrap();
        std::fs::write(dir.path().join("python.5.json"), "{}").unwrap();
        assert!(u.prepare(dir.path()).await.is_err());
    }

    #[test]
    fn preflight_reports_missing_binary_with_fix() {
        // This machine has no unitrace; the reason must say how to get it.
        if HostProbe::new().find_binary("unitrace").is_some() {
            return;
        }
        let p = Unitrace::new(PathBuf::from("/o"), &ProfilerSettings::default()).preflight();
        assert!(!p.available);
        let reason = p.reason.unwrap();
        assert!(reason.contains("`unitrace` is not on PATH"), "{reason}");
        assert!(reason.contains("intel/pti-gpu"), "{reason}");
    }

    #[tokio::test]
    async fn prepare_refuses_leftover_result_and_read_output_needs_report() {
        let dir = tempfile::tempdir().unwrap();
        let v = Vtune::new(dir.path().to_path_buf(), &ProfilerSettings::default());
        v.prepare(dir.path()).await.unwrap();
        let err = v.read_output().await.unwrap_err().to_string();
        assert!(err.contains("vtune_hotspots.tsv"), "{err}");

        std::fs::write(dir.path().join(REPORT_FILE), "Computing Task\tTotal\n").unwrap();
        let out = v.read_output().await.unwrap();
        assert_eq!(out.raw.artifacts[0].name, REPORT_FILE);

        std::fs::create_dir(dir.path().join(RESULT_DIR)).unwrap();
        let err = v.prepare(dir.path()).await.unwrap_err().to_string();
        assert!(err.contains("vtune_result"), "{err}");
    }

    #[test]
    fn preflight_without_vtune_names_the_fix() {
        if HostProbe::new().find_binary("vtune").is_some() {
            return;
        }
        let p = Vtune::new(PathBuf::from("/o"), &ProfilerSettings::default()).preflight();
        assert!(!p.available);
        assert!(p.reason.unwrap().contains("setvars.sh"));
        assert!(
            p.checks
                .iter()
                .any(|c| c.name == "kptr_restrict" && c.advisory)
        );
    }

    #[test]
    fn missing_binary_names_the_fix() {
        let preflight =
            crate::profilers::ncu::preflight::run(&HostProbe::new(), "ncu-does-not-exist-here");
        assert!(!preflight.available);
        let reason = preflight.reason.unwrap();
        assert!(
            reason.contains("not on PATH") && reason.contains("CUDA"),
            "{reason}"
        );
    }
}
