//! AMD rocprofv3 (ROCprofiler-SDK): HIP, and PyTorch/Triton on ROCm.
//!
//! The plan (`plan.rs`) traces kernels, copies and stats in one step and collects counters in
//! one step per group; the preflight decision (`preflight.rs`) judges probe results
//! (`probe.rs`); the parsers are pure, one file per output kind, joined in `parse.rs`.
//! The backend below is pure too: the pipeline collects the files it declares and answers the
//! probes it asks.

pub mod agent_info;
pub mod counters;
pub mod kernel_trace;
pub mod memory_copy;
pub mod parse;
pub mod plan;
pub mod preflight;
pub mod stats;
pub mod table;

use crate::model::arg::Arg;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{
    Backend, EndMarker, Graces, Plan, Preflight, ProfilerOutput, ProfilerSettings, RawOutput,
};
use crate::model::error::{Error, Result};
use crate::model::plan::{DeclaredOutputs, FilePattern};
use crate::model::probe::Probe;

pub use parse::{FileKind, ParsedPart, parse_files, parse_raw};
pub use plan::{ROOFLINE_GROUPS, Rocprofv3Options};

/// The backend's stable name, also the binary's.
pub const NAME: &str = "rocprofv3";

/// The CSVs the parser reads, by name (`trace_1234_kernel_trace.csv`, `pass_1/…`).
const CSV_OUTPUTS: &str =
    r"_(kernel_trace|memory_copy_trace|counter_collection|agent_info|[a-z_]*_stats)\.csv$";

/// rocprofv3's own settings; selection's `metric_group` fills them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rocprofv3Settings {
    /// The counter set: `trace` (default: kernel trace, copies, stats), `roofline`, or
    /// `pmc:A,B;C` (see [`Rocprofv3Options::from_metric_group`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<String>,
}

/// The rocprofv3 backend.
#[derive(Debug, Clone)]
pub struct Rocprofv3 {
    output_dir: PathBuf,
    options: Rocprofv3Options,
    extra_args: Vec<String>,
    end_marker: Option<EndMarker>,
    graces: Option<Graces>,
}

impl Rocprofv3 {
    /// `settings.rocprofv3.counters` picks the counters: `trace` (default), `roofline`, `pmc:A,B;C`.
    pub fn new(output_dir: PathBuf, settings: &ProfilerSettings) -> Result<Self> {
        Ok(Rocprofv3 {
            output_dir,
            options: Rocprofv3Options::from_metric_group(settings.rocprofv3.counters.as_deref())?,
            extra_args: settings.extra_args.clone(),
            end_marker: settings.end_marker.clone(),
            graces: settings.graces,
        })
    }

    pub fn options(&self) -> &Rocprofv3Options {
        &self.options
    }
}

impl Backend for Rocprofv3 {
    fn name(&self) -> &str {
        NAME
    }

    fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    fn build_plan(&self, target: &[Arg]) -> Result<Plan> {
        plan::build(
            &plan::PlanInput {
                options: &self.options,
                output_dir: &self.output_dir,
                extra_args: &self.extra_args,
                end_marker: self.end_marker(),
                graces: self.graces(),
                env: self.env_vars(),
            },
            target,
        )
    }

    /// The CSVs of every step (counter steps write into `pass_1/`), and the JSON when asked
    /// for. A previous run's step files or pass folders would be parsed as this run's.
    fn outputs(&self) -> DeclaredOutputs {
        let mut collect = vec![FilePattern::Regex(CSV_OUTPUTS.to_string())];
        if self.options.json {
            collect.push(FilePattern::Regex(r"_results\.json$".to_string()));
        }
        DeclaredOutputs {
            collect,
            fresh: ["trace_", "pmc", "pass_"]
                .map(|p| FilePattern::Prefix(p.to_string()))
                .to_vec(),
            collect_in: vec![FilePattern::Prefix("pass_".to_string())],
            ..Default::default()
        }
    }

    fn parse(&self, raw: RawOutput) -> Result<ProfilerOutput> {
        let parsed_any = raw.artifacts.iter().any(|a| {
            FileKind::of(&a.name) != FileKind::Other
                || FileKind::sniff(&a.content) != FileKind::Other
        });
        if !parsed_any {
            return Err(Error::NoData {
                profiler: NAME.into(),
                reason: format!(
                    "no rocprofv3 CSV in `{}` (by name or header: `*_kernel_trace.csv`, `*_memory_copy_trace.csv`, \
                     `*_counter_collection.csv`, `*_stats.csv`, `*_agent_info.csv`, or a `-S` \
                     summary saved as `*summary*.txt`); after a run, rocprofv3's stderr says \
                     what happened (a counter group that does not fit one pass, a missing \
                     GPU, …)",
                    self.output_dir.display()
                ),
            });
        }
        let pass = parse_raw(&raw);
        Ok(ProfilerOutput {
            raw,
            parsed: pass.parsed,
            errors: pass.errors,
        })
    }

    fn check_availability(&self, probe: &dyn Probe) -> Preflight {
        preflight::decide(&preflight::ask(probe))
    }

    fn env_vars(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("POLYPROF_PROFILER".to_string(), NAME.to_string())])
    }

    fn end_marker(&self) -> EndMarker {
        self.end_marker.clone().unwrap_or(EndMarker::Pytest)
    }

    fn graces(&self) -> Graces {
        self.graces.unwrap_or_else(plan::default_graces)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::probe::{NodeAccess, ProbeError, ProbeOutput, ProbeRequest};

    #[test]
    fn settings_choose_the_counters() {
        let mut settings = ProfilerSettings::default();
        let r = Rocprofv3::new(PathBuf::from("/o"), &settings).unwrap();
        assert!(r.options().counter_groups.is_empty());
        settings.rocprofv3.counters = Some("roofline".into());
        let r = Rocprofv3::new(PathBuf::from("/o"), &settings).unwrap();
        assert_eq!(r.wrap(&["./app".into()]).unwrap().steps.len(), 6);
        settings.rocprofv3.counters = Some("bogus".into());
        assert!(Rocprofv3::new(PathBuf::from("/o"), &settings).is_err());
    }

    fn artifact(name: &str, content: &[u8]) -> crate::model::artifacts::RawArtifact {
        crate::model::artifacts::RawArtifact {
            name: name.into(),
            path: PathBuf::from("/o").join(name),
            size: content.len() as u64,
            content: content.to_vec(),
            truncated: false,
        }
    }

    #[test]
    fn declared_outputs_cover_every_step_and_stale_runs() {
        let r = Rocprofv3::new(PathBuf::from("/o"), &ProfilerSettings::default()).unwrap();
        let outputs = r.wrap(&["./app".into()]).unwrap().outputs;
        for name in [
            "trace_42_kernel_trace.csv",
            "trace_42_memory_copy_trace.csv",
            "trace_42_kernel_stats.csv",
            "trace_42_hip_api_stats.csv",
            "trace_42_agent_info.csv",
            "pass_1/pmc1_43_counter_collection.csv",
        ] {
            assert!(outputs.collect_rank(name).is_some(), "{name}");
        }
        for name in [
            "notes.md",
            "trace_42_results.json",
            "42_kernel_trace.csv.bak",
        ] {
            assert!(outputs.collect_rank(name).is_none(), "{name}");
        }
        assert!(outputs.collect_in.iter().any(|p| p.matches("pass_1")));
        for stale in [
            "trace_42_kernel_trace.csv",
            "pass_1",
            "pmc1_43_agent_info.csv",
        ] {
            assert!(outputs.is_stale(stale), "{stale}");
        }
        assert!(!outputs.is_stale("run.json"));
    }

    #[test]
    fn parse_joins_the_collected_files_or_says_what_is_missing() {
        let r = Rocprofv3::new(PathBuf::from("/o"), &ProfilerSettings::default()).unwrap();
        let err = r.parse(RawOutput::default()).unwrap_err().to_string();
        assert!(err.contains("no rocprofv3 CSV in `/o`"), "{err}");
        assert!(err.contains("_kernel_trace.csv"), "{err}");
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rocprofv3");
        let read = |name: &str| std::fs::read(fixtures.join(name)).unwrap();
        let raw = RawOutput {
            artifacts: vec![
                artifact("trace_42_kernel_trace.csv", &read("kernel_trace.csv")),
                artifact(
                    "pass_1/pmc1_43_counter_collection.csv",
                    &read("counter_collection.csv"),
                ),
            ],
        };
        let out = r.parse(raw).unwrap();
        assert_eq!(out.raw.artifacts.len(), 2);
        assert_eq!(out.parsed.kernels.len(), 9);
        assert_eq!(out.parsed.kernels[0].process_id, Some(42));
        // The counter pass (another pid, same dispatches) joined the trace.
        assert_eq!(out.parsed.kernels[3].metric("SQ_WAVES"), Some(16384.0));
        assert!(out.errors.is_empty());
    }

    /// A machine with an MI300X, as the pipeline's probe would describe it.
    struct Mi300xHost {
        kfd: NodeAccess,
    }

    impl Probe for Mi300xHost {
        fn find_binary(&self, name: &str) -> Option<PathBuf> {
            ["rocprofv3", "rocminfo"]
                .contains(&name)
                .then(|| PathBuf::from("/opt/rocm/bin").join(name))
        }
        fn run(&self, command: &ProbeRequest) -> Result<ProbeOutput, ProbeError> {
            let stdout: &[u8] = match command.program.file_name().and_then(|n| n.to_str()) {
                Some("rocprofv3") => b"rocprofv3 1.0.0\n",
                Some("rocminfo") => b"Agent 2\n  Name:                    gfx942\n",
                _ => {
                    return Err(ProbeError::Spawn {
                        command: command.shown(),
                        message: "not here".into(),
                    });
                }
            };
            Ok(ProbeOutput {
                code: Some(0),
                stdout: stdout.to_vec(),
                stderr: Vec::new(),
            })
        }
        fn read_text(&self, _: &Path) -> Option<String> {
            None
        }
        fn write_text(&self, _: &Path, _: &str) -> bool {
            false
        }
        fn list_dir(&self, path: &Path) -> Vec<String> {
            match path.to_str() {
                Some("/dev") => vec!["dri".into(), "kfd".into()],
                Some("/dev/dri") => vec!["card0".into(), "renderD128".into()],
                _ => Vec::new(),
            }
        }
        fn env_var(&self, _: &str) -> Option<String> {
            None
        }
        fn is_root(&self) -> bool {
            false
        }
        fn host_os(&self) -> &str {
            "linux"
        }
        fn node_access(&self, path: &Path) -> NodeAccess {
            if path == Path::new("/dev/kfd") {
                self.kfd
            } else {
                NodeAccess::ReadWrite
            }
        }
    }

    #[test]
    fn availability_from_the_probes_answers() {
        let r = Rocprofv3::new(PathBuf::from("/o"), &ProfilerSettings::default()).unwrap();
        let p = r.check_availability(&Mi300xHost {
            kfd: NodeAccess::ReadWrite,
        });
        assert!(p.available, "{:?}", p.reason);
        assert_eq!(p.version.as_deref(), Some("rocprofv3 1.0.0"));
        let details: Vec<&str> = p.checks.iter().map(|c| c.detail.as_str()).collect();
        assert!(details.contains(&"AMD GPU: gfx942"), "{details:?}");
        assert!(
            details.contains(&"render node(s) renderD128"),
            "{details:?}"
        );

        let p = r.check_availability(&Mi300xHost {
            kfd: NodeAccess::Denied,
        });
        assert!(!p.available);
        assert!(p.reason.unwrap().contains("usermod -aG render,video"));
        // A probe that cannot tell access trusts an existing node.
        let p = r.check_availability(&Mi300xHost {
            kfd: NodeAccess::Unknown,
        });
        assert!(p.available, "{:?}", p.reason);
    }
}
