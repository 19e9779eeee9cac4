//! Apple Metal through `xctrace` (recording needs macOS): record a Metal System Trace of the
//! launched target, then export the table of contents and the Metal tables to XML. The export
//! steps run even when recording failed, so a partial trace is still salvaged. Parsing is pure
//! and runs anywhere: [`xctrace`] reads the export, [`records`] makes one kernel record per
//! encoder run on the GPU (`polyprof parse --profiler metal trace.tables.xml [trace.toc.xml]`).

pub mod records;
pub mod xctrace;

use crate::model::arg::Arg;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::preflight::{self, Preflight};
use super::staging::{path_arg, require_target};
use super::{
    Backend, CommandSpec, EndMarker, Graces, Plan, ProfilerOutput, ProfilerSettings, RawOutput,
    Step,
};
use crate::model::artifacts::RawArtifact;
use crate::model::error::{Error, Result};
use crate::model::parsed::{Diagnostic, Severity};
use crate::model::plan::{DeclaredOutputs, FilePattern};
use crate::model::probe::Probe;

/// The recorded trace bundle (a directory) inside the output directory.
pub const TRACE_BUNDLE: &str = "trace.trace";
/// The exported table of contents (holds the launched pid).
pub const TOC_FILE: &str = "trace.toc.xml";
/// The exported Metal tables.
pub const TABLES_FILE: &str = "trace.tables.xml";
/// The xctrace template.
pub const TEMPLATE: &str = "Metal System Trace";
/// Tables exported from run 1, as schema names.
pub const TABLES: &[&str] = &[
    "metal-gpu-intervals",
    "metal-application-command-buffer-submissions",
    "metal-command-buffer-completed",
    "metal-gpu-state-intervals",
    "gpu-counter-info",
    "time-info",
];

/// The xpath selecting every table of [`TABLES`] in one export.
pub fn tables_xpath() -> String {
    let schemas: Vec<String> = TABLES.iter().map(|s| format!("@schema=\"{s}\"")).collect();
    format!(
        "/trace-toc/run[@number=\"1\"]/data/table[{}]",
        schemas.join(" or ")
    )
}

#[derive(Debug, Clone)]
pub struct Metal {
    output_dir: PathBuf,
    extra_args: Vec<String>,
    end_marker: Option<EndMarker>,
    graces: Option<Graces>,
}

impl Metal {
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings) -> Self {
        Metal {
            output_dir,
            extra_args: settings.extra_args.clone(),
            end_marker: settings.end_marker.clone(),
            graces: settings.graces,
        }
    }

    fn export_step(&self, name: &str, selector: &[&str], file: &str) -> Result<Step> {
        let mut argv: Vec<String> = ["xcrun", "xctrace", "export", "--input"]
            .map(String::from)
            .to_vec();
        argv.push(path_arg(&self.output_dir.join(TRACE_BUNDLE))?);
        argv.extend(selector.iter().map(|s| s.to_string()));
        argv.extend([
            "--output".to_string(),
            path_arg(&self.output_dir.join(file))?,
        ]);
        let mut step = Step::new(
            name,
            CommandSpec::new(crate::model::arg::args(argv)),
            EndMarker::None,
            Graces::default(),
        );
        step.run_after_failure = true;
        Ok(step)
    }
}

impl Backend for Metal {
    fn name(&self) -> &str {
        "metal"
    }

    fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    fn build_plan(&self, target: &[Arg]) -> Result<Plan> {
        require_target("metal", target)?;
        let mut argv: Vec<String> = ["xcrun", "xctrace", "record", "--template", TEMPLATE]
            .map(String::from)
            .to_vec();
        argv.extend([
            "--output".to_string(),
            path_arg(&self.output_dir.join(TRACE_BUNDLE))?,
        ]);
        // No interactive prompts; the target's stdout reaches ours so end markers are seen.
        argv.extend(["--no-prompt", "--target-stdout", "-"].map(String::from));
        let env = self.env_vars();
        // xctrace starts the target itself; pass the variables explicitly.
        for (key, value) in &env {
            argv.extend(["--env".to_string(), format!("{key}={value}")]);
        }
        argv.extend(self.extra_args.iter().cloned());
        argv.extend(["--launch".to_string(), "--".into()]);
        let mut argv = crate::model::arg::args(argv);
        argv.extend(target.iter().cloned());
        let mut record_cmd = CommandSpec::new(argv);
        record_cmd.env = env;
        let record = Step::new("record", record_cmd, self.end_marker(), self.graces());
        let xpath = tables_xpath();
        Ok(Plan {
            profiler: "metal".into(),
            target: target.to_vec(),
            outputs: Default::default(),
            capabilities: Vec::new(),
            steps: vec![
                record,
                self.export_step("export-toc", &["--toc"], TOC_FILE)?,
                self.export_step("export-tables", &["--xpath", &xpath], TABLES_FILE)?,
            ],
        })
    }

    fn env_vars(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("POLYPROF_PROFILER".to_string(), "metal".to_string())])
    }

    fn end_marker(&self) -> EndMarker {
        self.end_marker.clone().unwrap_or(EndMarker::Pytest)
    }

    fn graces(&self) -> Graces {
        self.graces.unwrap_or(Graces {
            // xctrace writes the trace bundle after the target exits.
            marker_grace: Duration::from_secs(60),
            kill_grace: Duration::from_secs(15),
        })
    }

    /// The two exports are collected. `xctrace record --output` adds a run to an existing
    /// bundle and the export would then read the old run 1, so leftovers are refused.
    fn outputs(&self) -> DeclaredOutputs {
        DeclaredOutputs {
            // By name, as before: tables, then the table of contents.
            collect: vec![
                FilePattern::Name(TABLES_FILE.into()),
                FilePattern::Name(TOC_FILE.into()),
            ],
            fresh: [TRACE_BUNDLE, TOC_FILE, TABLES_FILE]
                .map(|n| FilePattern::Name(n.into()))
                .to_vec(),
            ..Default::default()
        }
    }

    /// The tables export becomes records of the launched process (its pid from the table of
    /// contents; every process when there is none). Files are told apart by name as the plan
    /// writes them, else by their root element (`polyprof parse` passes any file names).
    fn parse(&self, raw: RawOutput) -> Result<ProfilerOutput> {
        let toc = raw
            .get(TOC_FILE)
            .or_else(|| raw.artifacts.iter().find(|a| is_toc(a)));
        let tables: Vec<&RawArtifact> = raw
            .artifacts
            .iter()
            .filter(|a| a.name == TABLES_FILE || (a.name != TOC_FILE && is_tables(a)))
            .collect();
        if tables.is_empty() {
            return Err(Error::NoData {
                profiler: "metal".into(),
                reason: format!(
                    "xctrace exported no `{TABLES_FILE}` into `{}` (no `<trace-query-result>` \
                     file among {}); see the record and export steps' output",
                    self.output_dir.display(),
                    shown_names(&raw)
                ),
            });
        }
        let mut output = ProfilerOutput::default();
        let pid = match toc.map(|t| (t, xctrace::launched_pid(&t.content))) {
            Some((_, Ok(pid))) => pid,
            Some((t, Err(e))) => {
                output.errors.push(format!("{}: {e}", t.name));
                None
            }
            None => None,
        };
        if pid.is_none() {
            output.parsed.diagnostics.push(diagnostic(
                Severity::Warning,
                "metal_no_target_pid",
                "no launched process in the table of contents: GPU intervals of every process \
                 are kept"
                    .into(),
                Some(format!(
                    "pass `{TOC_FILE}` (`xctrace export --input run.trace --toc`) too"
                )),
            ));
        }
        for table in tables {
            match xctrace::parse_export(&table.content, pid) {
                Ok(trace) => {
                    let mut parsed = records::parsed_output(&trace);
                    let offset = output.parsed.kernels.len() as u64;
                    for record in &mut parsed.kernels {
                        record.launch_id += offset;
                    }
                    for warning in &trace.warnings {
                        parsed.diagnostics.push(diagnostic(
                            Severity::Warning,
                            "metal_export_damaged",
                            format!("{}: {warning}", table.name),
                            None,
                        ));
                    }
                    let out = &mut output.parsed;
                    out.kernels.append(&mut parsed.kernels);
                    out.diagnostics.append(&mut parsed.diagnostics);
                    out.session.append(&mut parsed.session);
                    out.device = out.device.take().or(parsed.device);
                }
                // A capture without the target's GPU work failed; it is not 0 ms.
                Err(Error::NoData { reason, .. }) => output.parsed.diagnostics.push(diagnostic(
                    Severity::Error,
                    "metal_no_gpu_work",
                    format!("{}: {reason}", table.name),
                    None,
                )),
                Err(e) => output.errors.push(format!("{}: {e}", table.name)),
            }
        }
        output.raw = raw;
        Ok(output)
    }

    fn check_availability(&self, probe: &dyn Probe) -> Preflight {
        let mut p = Preflight::new("metal");
        if !p.record("macos", preflight::macos_verdict(probe.host_os())) {
            return p.finish();
        }
        let xcrun = probe.find_binary("xcrun");
        let found = p.record(
            "binary",
            preflight::binary_verdict(
                "xcrun",
                xcrun.as_deref(),
                "install the Xcode command line tools with `xcode-select --install`",
            ),
        );
        if let (true, Some(path)) = (found, &xcrun) {
            let version = preflight::read_version(
                probe,
                path,
                &["xctrace", "version"],
                preflight::VERSION_TIMEOUT,
            );
            p.version = version.as_ref().ok().cloned();
            let verdict = match &version {
                Ok(line) => preflight::Verdict::pass(line.clone()),
                Err(why) => preflight::Verdict::fail(format!(
                    "xctrace is not usable: {why}; install Xcode (xctrace ships with it) and \
                     select it with `sudo xcode-select -s /Applications/Xcode.app`"
                )),
            };
            p.record("xctrace", verdict);
        }
        p.binary = xcrun;
        p.finish()
    }
}

/// Whether an artifact's first bytes hold `root` (`<trace-toc`, `<trace-query-result`).
fn starts_with_root(artifact: &RawArtifact, root: &[u8]) -> bool {
    let head = &artifact.content[..artifact.content.len().min(4096)];
    head.windows(root.len()).any(|w| w == root)
}

fn is_toc(artifact: &RawArtifact) -> bool {
    starts_with_root(artifact, b"<trace-toc")
}

fn is_tables(artifact: &RawArtifact) -> bool {
    starts_with_root(artifact, b"<trace-query-result")
}

fn shown_names(raw: &RawOutput) -> String {
    if raw.artifacts.is_empty() {
        return "no files".into();
    }
    raw.artifacts
        .iter()
        .map(|a| format!("`{}`", a.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn diagnostic(severity: Severity, kind: &str, message: String, hint: Option<String>) -> Diagnostic {
    Diagnostic {
        severity,
        kind: kind.into(),
        message,
        hint,
        metric: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPORT: &[u8] =
        include_bytes!("../../../tests/fixtures/metal/xctrace_synthetic_gpu_intervals.xml");
    const TOC: &[u8] = include_bytes!("../../../tests/fixtures/metal/xctrace_synthetic_toc.xml");

    fn raw(files: &[(&str, &[u8])]) -> RawOutput {
        RawOutput {
            artifacts: files
                .iter()
                .map(|(name, content)| RawArtifact {
                    name: name.to_string(),
                    path: PathBuf::from(name),
                    size: content.len() as u64,
                    content: content.to_vec(),
                    truncated: false,
                })
                .collect(),
        }
    }

    #[test]
    fn parse_gives_the_launched_process_encoders_by_name_or_by_content() {
        let m = Metal::new(PathBuf::from("/out"), &ProfilerSettings::default());
        for files in [
            [(TABLES_FILE, EXPORT), (TOC_FILE, TOC)],
            [("a.xml", EXPORT), ("b.xml", TOC)],
        ] {
            let out = m.parse(raw(&files)).unwrap();
            assert!(out.errors.is_empty(), "{:?}", out.errors);
            let names: Vec<&str> = out.parsed.kernels.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(
                names,
                [
                    "Command Buffer 0:Compute Command 0",
                    "matmul & bias",
                    "matmul & bias"
                ]
            );
            assert_eq!(out.parsed.session["target_pid"], "42");
            assert_eq!(out.parsed.device.as_ref().unwrap().name, "Apple M1");
            assert_eq!(out.raw.artifacts.len(), 2, "the raw files stay");
        }
    }

    #[test]
    fn parse_without_tables_or_with_an_empty_capture() {
        let m = Metal::new(PathBuf::from("/out"), &ProfilerSettings::default());
        let err = m.parse(raw(&[(TOC_FILE, TOC)])).unwrap_err();
        assert!(matches!(err, Error::NoData { .. }), "{err}");
        assert!(err.to_string().contains("`trace.toc.xml`"), "{err}");
        // The target (pid 42) did no GPU work in this capture, another process did.
        let other = String::from_utf8_lossy(TOC).replace("pid=\"42\"", "pid=\"5\"");
        let out = m
            .parse(raw(&[(TABLES_FILE, EXPORT), (TOC_FILE, other.as_bytes())]))
            .unwrap();
        assert!(out.parsed.kernels.is_empty());
        let d = &out.parsed.diagnostics[0];
        assert_eq!(
            (d.kind.as_str(), d.severity),
            ("metal_no_gpu_work", Severity::Error)
        );
        assert!(d.message.contains("[42, 77]"), "{}", d.message);
        let bad = m
            .parse(raw(&[(TABLES_FILE, b"<trace-query-result><a></b>")]))
            .unwrap();
        assert_eq!(bad.errors.len(), 1, "{:?}", bad.parsed.diagnostics);
    }

    #[test]
    fn record_then_exports() {
        let m = Metal::new(PathBuf::from("/out"), &ProfilerSettings::default());
        let target: Vec<Arg> = vec!["./bench".into(), "--n".into(), "1 2".into()];
        let plan = m.wrap(&target).unwrap();
        let names: Vec<&str> = plan.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["record", "export-toc", "export-tables"]);
        let record = &plan.steps[0].command.argv;
        let expected: Vec<String> = [
            "xcrun",
            "xctrace",
            "record",
            "--template",
            "Metal System Trace",
            "--output",
            "/out/trace.trace",
            "--no-prompt",
            "--target-stdout",
            "-",
            "--env",
            "POLYPROF_PROFILER=metal",
            "--launch",
            "--",
            "./bench",
            "--n",
            "1 2",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(record, &expected);
        assert!(!plan.steps[0].run_after_failure);
        for step in &plan.steps[1..] {
            assert!(step.run_after_failure);
            assert_eq!(
                step.command.argv[..5],
                [
                    "xcrun".to_string(),
                    "xctrace".into(),
                    "export".into(),
                    "--input".into(),
                    "/out/trace.trace".into()
                ]
            );
        }
        let tables = &plan.steps[2].command.argv;
        assert!(
            tables[6]
                .to_string_lossy()
                .contains("@schema=\"metal-gpu-intervals\" or"),
            "{tables:?}"
        );
        assert_eq!(tables.last().unwrap(), "/out/trace.tables.xml");
    }
}
