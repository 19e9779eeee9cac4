//! Intel VTune GPU hotspots, in two steps: `collect` (started paused; the harness resumes it
//! around the timed loop), then `report`, which runs even when collect failed so whatever was
//! collected is salvaged. KernelFoundry chained `collect && report && echo VTUNE_DONE`, which
//! turned a failing test into a timeout; here each step has its own exit status.

pub mod report;

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
use crate::model::error::{Error, Result};
use crate::model::plan::{DeclaredOutputs, FilePattern};
use crate::model::probe::Probe;

/// The result directory inside the output directory.
pub const RESULT_DIR: &str = "vtune_result";
/// The report step's stdout, verbatim.
pub const REPORT_FILE: &str = "vtune_hotspots.tsv";

/// Report columns (VTune matches each by substring). Names with commas would break `-column`,
/// so memory bandwidth is selected by the comma-free `GPU Memory Bandwidth`.
pub const REPORT_COLUMNS: &[&str] = &[
    "Computing Task:Total Time",
    "Computing Task:Average Time",
    "Computing Task:Instance Count",
    "Computing Task:SIMD Width",
    "XVE Array:Active",
    "XVE Array:Stalled",
    "XVE Array:Idle",
    "XVE Threads Occupancy",
    "XVE Stall Reasons:Send",
    "XVE Stall Reasons:Barrier",
    "XVE Stall Reasons:SBID",
    "XVE Stall Reasons:Instruction Fetch",
    "XVE Stall Reasons:Dist or Acc",
    "XVE Pipelines:ALU0 active",
    "XVE Pipelines:ALU1 active",
    "XVE Pipelines:XMX active",
    "XVE Instructions:ALU0 Instructions",
    "XVE Instructions:ALU1 Instructions",
    "XVE Instructions:XMX instructions",
    "GPU Memory Bandwidth",
    "GPU L3:Busy",
    "GPU L3:Stalled",
    "GPU L3:Miss Ratio",
    "GPU L3:Average Bandwidth",
    "TLB Misses",
];

#[derive(Debug, Clone)]
pub struct Vtune {
    output_dir: PathBuf,
    extra_args: Vec<String>,
    end_marker: Option<EndMarker>,
    graces: Option<Graces>,
}

impl Vtune {
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings) -> Self {
        Vtune {
            output_dir,
            extra_args: settings.extra_args.clone(),
            end_marker: settings.end_marker.clone(),
            graces: settings.graces,
        }
    }

    fn result_dir(&self) -> PathBuf {
        self.output_dir.join(RESULT_DIR)
    }

    fn collect_argv(&self, target: &[Arg]) -> Result<Vec<Arg>> {
        let mut argv: Vec<String> = ["vtune", "-collect", "gpu-hotspots", "-start-paused"]
            .map(String::from)
            .to_vec();
        argv.extend(["-result-dir".to_string(), path_arg(&self.result_dir())?]);
        argv.extend(self.extra_args.iter().cloned());
        argv.push("--".into());
        let mut argv = crate::model::arg::args(argv);
        argv.extend(target.iter().cloned());
        Ok(argv)
    }

    fn report_argv(&self) -> Result<Vec<String>> {
        let mut argv: Vec<String> = vec!["vtune".into(), "-report".into(), "hotspots".into()];
        argv.extend(["-result-dir".to_string(), path_arg(&self.result_dir())?]);
        argv.extend(
            ["-group-by", "computing-task", "-column"]
                .map(String::from)
                .to_vec(),
        );
        argv.push(REPORT_COLUMNS.join(","));
        // The documented default delimiter differs from what VTune prints; always name it.
        argv.extend(
            ["-format", "csv", "-csv-delimiter", "tab"]
                .map(String::from)
                .to_vec(),
        );
        Ok(argv)
    }
}

impl Backend for Vtune {
    fn name(&self) -> &str {
        "vtune"
    }

    fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    fn build_plan(&self, target: &[Arg]) -> Result<Plan> {
        require_target("vtune", target)?;
        let mut collect_cmd = CommandSpec::new(self.collect_argv(target)?);
        collect_cmd.env = self.env_vars();
        let collect = Step::new("collect", collect_cmd, self.end_marker(), self.graces());
        let mut report = Step::new(
            "report",
            CommandSpec::new(crate::model::arg::args(self.report_argv()?)),
            EndMarker::None,
            Graces::default(),
        );
        report.stdout_file = Some(self.output_dir.join(REPORT_FILE));
        report.run_after_failure = true;
        Ok(Plan {
            profiler: "vtune".into(),
            target: target.to_vec(),
            outputs: Default::default(),
            capabilities: Vec::new(),
            steps: vec![collect, report],
        })
    }

    fn env_vars(&self) -> BTreeMap<String, String> {
        let result_dir = self.result_dir().to_string_lossy().into_owned();
        let mut env = BTreeMap::new();
        env.insert("POLYPROF_PROFILER".into(), "vtune".into());
        env.insert("POLYPROF_VTUNE_RESULT_DIR".into(), result_dir.clone());
        // The harness runs `$KERNELFOUNDRY_vtune_cmd -command resume -result-dir=<dir>`.
        env.insert("KERNELFOUNDRY_PROFILER".into(), "vtune".into());
        env.insert("KERNELFOUNDRY_vtune_cmd".into(), "vtune".into());
        env.insert("KERNELFOUNDRY_vtune_result_dir".into(), result_dir);
        env
    }

    fn end_marker(&self) -> EndMarker {
        self.end_marker.clone().unwrap_or(EndMarker::Pytest)
    }

    fn graces(&self) -> Graces {
        self.graces.unwrap_or(Graces {
            // VTune finalizes the result after the application exits; that can take minutes.
            marker_grace: Duration::from_secs(120),
            kill_grace: Duration::from_secs(30),
        })
    }

    /// The report is collected; a leftover result directory would be reported on when this
    /// run's collect fails, so it must not exist before.
    fn outputs(&self) -> DeclaredOutputs {
        DeclaredOutputs {
            collect: vec![FilePattern::Name(REPORT_FILE.into())],
            fresh: vec![
                FilePattern::Name(RESULT_DIR.into()),
                FilePattern::Name(REPORT_FILE.into()),
            ],
            ..Default::default()
        }
    }

    /// The report step's file; files handed over by name (`polyprof parse --profiler vtune
    /// FILE…`) are read too, their delimiter told by their header.
    fn parse(&self, raw: RawOutput) -> Result<ProfilerOutput> {
        let ours = raw.get(REPORT_FILE).is_some();
        let reports: Vec<_> = raw
            .artifacts
            .iter()
            .filter(|a| !ours || a.name == REPORT_FILE)
            .collect();
        if reports.is_empty() {
            return Err(Error::NoData {
                profiler: "vtune".into(),
                reason: format!(
                    "the report step wrote no `{}`; see the collect and report steps' output",
                    self.output_dir.join(REPORT_FILE).display()
                ),
            });
        }
        let mut output = ProfilerOutput::default();
        for artifact in reports {
            let asked = (artifact.name == REPORT_FILE).then_some(report::Delimiter::Tab);
            match report::parse_output(&artifact.content, asked, &artifact.name) {
                Ok(parsed) => {
                    let first = output.parsed.kernels.len() as u64;
                    output
                        .parsed
                        .kernels
                        .extend(parsed.kernels.into_iter().map(|mut k| {
                            k.launch_id += first;
                            k
                        }));
                    output.parsed.diagnostics.extend(parsed.diagnostics);
                    output.parsed.session.extend(parsed.session);
                }
                Err(e) => output.errors.push(e.to_string()),
            }
        }
        output.raw = raw;
        Ok(output)
    }

    fn check_availability(&self, probe: &dyn Probe) -> Preflight {
        let mut p = preflight::intel_preflight(
            probe,
            "vtune",
            "vtune",
            "install Intel VTune Profiler (oneAPI) and `source /opt/intel/oneapi/setvars.sh`",
        );
        // GPU hotspots still runs without kernel symbols, so this only warns.
        let kptr = preflight::kptr_restrict_verdict(
            preflight::read_sysctl(probe, Path::new(preflight::KPTR_RESTRICT)).as_deref(),
            probe.is_root(),
        );
        p.advise("kptr_restrict", kptr.ok, kptr.detail);
        p.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_steps_collect_then_report_after_failure() {
        let v = Vtune::new(PathBuf::from("/out"), &ProfilerSettings::default());
        let target: Vec<Arg> = vec!["pytest".into(), "-k".into(), "x y".into()];
        let plan = v.wrap(&target).unwrap();
        assert_eq!(plan.steps.len(), 2);
        let (collect, report) = (&plan.steps[0], &plan.steps[1]);
        assert_eq!(collect.name, "collect");
        let expected: Vec<String> = [
            "vtune",
            "-collect",
            "gpu-hotspots",
            "-start-paused",
            "-result-dir",
            "/out/vtune_result",
            "--",
            "pytest",
            "-k",
            "x y",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(collect.command.argv, expected);
        assert_eq!(collect.end_marker, EndMarker::Pytest);
        assert!(!collect.run_after_failure);
        assert_eq!(
            collect.command.env["KERNELFOUNDRY_vtune_result_dir"],
            "/out/vtune_result"
        );

        assert_eq!(report.name, "report");
        assert_eq!(
            &report.command.argv[..5],
            &[
                "vtune".to_string(),
                "-report".into(),
                "hotspots".into(),
                "-result-dir".into(),
                "/out/vtune_result".into()
            ]
        );
        let cols = &report.command.argv[8];
        assert_eq!(cols.to_string_lossy().split(',').count(), 25);
        assert!(crate::model::arg::lossy(&report.command.argv).ends_with(&[
            "-format".to_string(),
            "csv".into(),
            "-csv-delimiter".into(),
            "tab".into()
        ]));
        assert_eq!(
            report.stdout_file.as_deref(),
            Some(Path::new("/out/vtune_hotspots.tsv"))
        );
        assert!(report.run_after_failure);
        assert_eq!(report.end_marker, EndMarker::None);
    }
}
