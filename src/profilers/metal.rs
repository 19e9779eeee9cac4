//! Apple Metal through `xctrace` (macOS only): record a Metal System Trace of the launched
//! target, then export the table of contents and the Metal tables to XML. The export steps run
//! even when recording failed, so a partial trace is still salvaged.

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
use crate::error::{Error, Result};
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

    fn parse(&self, raw: RawOutput) -> Result<ProfilerOutput> {
        if raw.get(TABLES_FILE).is_none() {
            return Err(Error::NoData {
                profiler: "metal".into(),
                reason: format!(
                    "xctrace exported no `{TABLES_FILE}` into `{}`; see the record and export \
                     steps' output",
                    self.output_dir.display()
                ),
            });
        }
        Ok(ProfilerOutput {
            raw,
            ..Default::default()
        })
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

#[cfg(test)]
mod tests {
    use super::*;

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
