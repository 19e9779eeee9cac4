//! The rocprofv3 plan: one `trace` step (kernel trace, memory copies, stats) and one step per
//! counter group, because rocprofv3 refuses a `--pmc` list that does not fit in one hardware
//! pass. Each step reruns the target; file names carry the step and the pid
//! (`-o trace_%pid%` → `trace_1234_kernel_trace.csv`) so steps and processes never collide.
//! A `--pmc` step's files land in `<dir>/pass_1/`: rocprofv3's launcher gives any run with
//! `--pmc` a pass index and appends `pass_<index>` to the output directory.

use crate::model::arg::Arg;
use std::path::Path;
use std::time::Duration;

use crate::model::error::{Error, Result};
use crate::profilers::staging::{path_arg, require_target};
use crate::profilers::{CommandSpec, EndMarker, Graces, Plan, Step};

use super::NAME;

/// Counters for FLOPs by precision and DRAM bytes, in groups that fit one pass on CDNA
/// (gfx90a, gfx94x): at most four SQ counters per group, the two TCC-derived sizes alone.
/// The names and what they count are in rocprofiler-sdk's `counters/yaml/counter_defs.yaml`;
/// the FLOP formula that uses them is in [`super::counters::derive`].
pub const ROOFLINE_GROUPS: &[&[&str]] = &[
    &[
        "SQ_INSTS_VALU_ADD_F32",
        "SQ_INSTS_VALU_MUL_F32",
        "SQ_INSTS_VALU_FMA_F32",
        "SQ_INSTS_VALU_TRANS_F32",
    ],
    &[
        "SQ_INSTS_VALU_ADD_F64",
        "SQ_INSTS_VALU_MUL_F64",
        "SQ_INSTS_VALU_FMA_F64",
        "SQ_INSTS_VALU_TRANS_F64",
    ],
    &[
        "SQ_INSTS_VALU_ADD_F16",
        "SQ_INSTS_VALU_MUL_F16",
        "SQ_INSTS_VALU_FMA_F16",
        "SQ_INSTS_VALU_TRANS_F16",
    ],
    &[
        "SQ_INSTS_VALU_MFMA_MOPS_F16",
        "SQ_INSTS_VALU_MFMA_MOPS_BF16",
        "SQ_INSTS_VALU_MFMA_MOPS_F32",
        "SQ_INSTS_VALU_MFMA_MOPS_F64",
    ],
    &["FETCH_SIZE", "WRITE_SIZE"],
];

/// What a rocprofv3 pass collects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rocprofv3Options {
    /// `--memory-copy-trace` in the trace step.
    pub memory_copy_trace: bool,
    /// `--stats` in the trace step (`kernel_stats.csv`, …).
    pub stats: bool,
    /// Also write JSON (`--output-format csv json`); polyprof parses the CSVs.
    pub json: bool,
    /// Counter groups, one step each.
    pub counter_groups: Vec<Vec<String>>,
}

impl Default for Rocprofv3Options {
    fn default() -> Self {
        Rocprofv3Options {
            memory_copy_trace: true,
            stats: true,
            json: false,
            counter_groups: Vec::new(),
        }
    }
}

impl Rocprofv3Options {
    /// From a selection pass's `metric_group`: absent or `trace` (no counters), `roofline`
    /// ([`ROOFLINE_GROUPS`]), or `pmc:A,B;C` (groups split by `;`, counters by `,` or spaces).
    pub fn from_metric_group(group: Option<&str>) -> Result<Self> {
        let mut options = Rocprofv3Options::default();
        let Some(group) = group.map(str::trim).filter(|g| !g.is_empty()) else {
            return Ok(options);
        };
        if group.eq_ignore_ascii_case("trace") {
            return Ok(options);
        }
        if group.eq_ignore_ascii_case("roofline") {
            options.counter_groups = ROOFLINE_GROUPS
                .iter()
                .map(|g| g.iter().map(|c| c.to_string()).collect())
                .collect();
            return Ok(options);
        }
        let Some(list) = group.strip_prefix("pmc:") else {
            return Err(Error::UnknownValue {
                what: "rocprofv3 counter set",
                value: group.to_string(),
                valid: "trace, roofline, pmc:COUNTER,COUNTER;COUNTER (groups split by `;`)"
                    .to_string(),
            });
        };
        for part in list.split(';') {
            let counters: Vec<String> = part
                .split([',', ' '])
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
            if let Some(bad) = counters.iter().find(|c| {
                !c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_[]:".contains(&b))
            }) {
                return Err(Error::invalid(
                    "rocprofv3 counter",
                    format!(
                        "`{bad}` is not a counter name; list them with `rocprofv3 --list-avail`"
                    ),
                ));
            }
            if !counters.is_empty() {
                options.counter_groups.push(counters);
            }
        }
        if options.counter_groups.is_empty() {
            return Err(Error::invalid(
                "rocprofv3 counter set",
                "`pmc:` names no counter; e.g. `pmc:SQ_WAVES,GRBM_GUI_ACTIVE;FETCH_SIZE`",
            ));
        }
        Ok(options)
    }
}

/// Marker and kill graces when none is configured: rocprofv3 writes its CSVs as the target
/// exits, after the target's last line (the pytest summary).
pub fn default_graces() -> Graces {
    Graces {
        marker_grace: Duration::from_secs(60),
        kill_grace: Duration::from_secs(15),
    }
}

/// Everything a plan is built from.
pub struct PlanInput<'a> {
    pub options: &'a Rocprofv3Options,
    pub output_dir: &'a Path,
    pub extra_args: &'a [String],
    pub end_marker: EndMarker,
    pub graces: Graces,
    pub env: std::collections::BTreeMap<String, String>,
}

/// The plan for one pass over `target`.
pub fn build(input: &PlanInput<'_>, target: &[Arg]) -> Result<Plan> {
    require_target(NAME, target)?;
    let out = path_arg(input.output_dir)?;
    let formats: &[&str] = if input.options.json {
        &["csv", "json"]
    } else {
        &["csv"]
    };
    let step = |name: &str, collect: Vec<String>| {
        let mut argv: Vec<String> = vec![NAME.to_string()];
        argv.extend(collect);
        argv.push("--output-format".into());
        argv.extend(formats.iter().map(|f| f.to_string()));
        argv.extend(["-d".to_string(), out.clone()]);
        argv.extend(["-o".to_string(), format!("{name}_%pid%")]);
        argv.extend(input.extra_args.iter().cloned());
        argv.push("--".into());
        let mut argv = crate::model::arg::args(argv);
        argv.extend(target.iter().cloned());
        let mut command = CommandSpec::new(argv);
        command.env = input.env.clone();
        Step::new(name, command, input.end_marker.clone(), input.graces)
    };
    let mut trace = vec!["--kernel-trace".to_string()];
    if input.options.memory_copy_trace {
        trace.push("--memory-copy-trace".into());
    }
    if input.options.stats {
        trace.push("--stats".into());
    }
    let mut steps = vec![step("trace", trace)];
    for (index, group) in input.options.counter_groups.iter().enumerate() {
        let mut collect = vec!["--pmc".to_string()];
        collect.extend(group.iter().cloned());
        steps.push(step(&format!("pmc{}", index + 1), collect));
    }
    Ok(Plan {
        profiler: NAME.to_string(),
        target: target.to_vec(),
        outputs: Default::default(),
        capabilities: Vec::new(),
        steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(options: &Rocprofv3Options) -> PlanInput<'_> {
        PlanInput {
            options,
            output_dir: Path::new("/out"),
            extra_args: &[],
            end_marker: EndMarker::Pytest,
            graces: default_graces(),
            env: Default::default(),
        }
    }

    fn words(list: &[&str]) -> Vec<Arg> {
        crate::model::arg::args(list.iter().copied())
    }

    #[test]
    fn trace_step_argv_is_verbatim() {
        let options = Rocprofv3Options::default();
        let target = words(&["python3", "-m", "pytest", "-k", "a b", "--x=(16, 32)"]);
        let plan = build(&input(&options), &target).unwrap();
        assert_eq!(plan.profiler, "rocprofv3");
        assert_eq!(plan.steps.len(), 1);
        let step = &plan.steps[0];
        assert_eq!(step.name, "trace");
        assert_eq!(
            step.command.argv,
            words(&[
                "rocprofv3",
                "--kernel-trace",
                "--memory-copy-trace",
                "--stats",
                "--output-format",
                "csv",
                "-d",
                "/out",
                "-o",
                "trace_%pid%",
                "--",
                "python3",
                "-m",
                "pytest",
                "-k",
                "a b",
                "--x=(16, 32)",
            ])
        );
        assert_eq!(step.end_marker, EndMarker::Pytest);
        assert_eq!(step.graces.marker_grace, Duration::from_secs(60));
    }

    #[test]
    fn one_step_per_counter_group_and_json_on_request() {
        let mut options = Rocprofv3Options::from_metric_group(Some("roofline")).unwrap();
        options.json = true;
        options.stats = false;
        let plan = build(&input(&options), &words(&["./app"])).unwrap();
        let names: Vec<&str> = plan.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["trace", "pmc1", "pmc2", "pmc3", "pmc4", "pmc5"]);
        assert!(!plan.steps[0].command.argv.iter().any(|a| a == "--stats"));
        let last = &plan.steps[5].command.argv;
        assert_eq!(
            last,
            &words(&[
                "rocprofv3",
                "--pmc",
                "FETCH_SIZE",
                "WRITE_SIZE",
                "--output-format",
                "csv",
                "json",
                "-d",
                "/out",
                "-o",
                "pmc5_%pid%",
                "--",
                "./app"
            ])
        );
    }

    #[test]
    fn counter_sets_from_the_metric_group() {
        assert!(
            Rocprofv3Options::from_metric_group(None)
                .unwrap()
                .counter_groups
                .is_empty()
        );
        assert!(
            Rocprofv3Options::from_metric_group(Some("trace"))
                .unwrap()
                .counter_groups
                .is_empty()
        );
        let custom =
            Rocprofv3Options::from_metric_group(Some("pmc:SQ_WAVES, GRBM_COUNT;FETCH_SIZE"))
                .unwrap();
        assert_eq!(
            custom.counter_groups,
            vec![words(&["SQ_WAVES", "GRBM_COUNT"]), words(&["FETCH_SIZE"])]
        );
        let err = Rocprofv3Options::from_metric_group(Some("ComputeBasic"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("roofline"), "{err}");
        let err = Rocprofv3Options::from_metric_group(Some("pmc:SQ;$(rm -rf)"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--list-avail"), "{err}");
        assert!(Rocprofv3Options::from_metric_group(Some("pmc:;")).is_err());
    }

    #[test]
    fn empty_target_is_refused() {
        let options = Rocprofv3Options::default();
        assert!(build(&input(&options), &[]).is_err());
    }
}
