//! The ncu plan (`wrap`) and `read_output` on a real output directory.

use std::path::Path;
use std::time::Duration;

use crate::support::fixture;
use crate::support::ncu::*;
use polyprof::Error;
use polyprof::pipeline::Profiler;
use polyprof::profilers::ncu::{ClockControl, GraphProfiling, NcuOptions, Preset};
use polyprof::profilers::{EndMarker, ProfilerSettings, create};

fn settings(options: NcuOptions) -> ProfilerSettings {
    ProfilerSettings {
        ncu: options,
        ..Default::default()
    }
}

fn target() -> Vec<polyprof::model::Arg> {
    polyprof::model::arg::args(["python3", "-m", "pytest", "-q", "test ops.py"])
}

#[test]
fn minimal_plan_is_one_step_with_base_units_and_c_locale() {
    let out = Path::new("/tmp/out");
    let profiler = create("ncu", out, &settings(NcuOptions::default())).unwrap();
    let plan = profiler.wrap(&target()).unwrap();
    assert_eq!(plan.profiler, "ncu");
    assert_eq!(plan.steps.len(), 1);
    let step = &plan.steps[0];
    let argv = &step.command.argv;
    assert_eq!(
        argv[..8],
        [
            "ncu",
            "--log-file",
            "/tmp/out/ncu.log",
            "--csv",
            "--page",
            "raw",
            "--print-units",
            "base"
        ]
    );
    let metrics = &argv[argv.iter().position(|a| a == "--metrics").unwrap() + 1].to_string();
    assert!(metrics.contains("gpu__time_duration.sum") && metrics.contains("dram__bytes_read.sum"));
    assert!(metrics.contains("smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"));
    // The target follows `--` verbatim, spaces and all; no sudo anywhere.
    let dash = argv.iter().position(|a| a == "--").unwrap();
    assert_eq!(argv[dash + 1..], target()[..]);
    assert!(!argv.iter().any(|a| a == "sudo"));
    assert_eq!(
        step.command.env.get("LC_ALL").map(String::as_str),
        Some("C")
    );
    assert_eq!(step.end_marker, EndMarker::Pytest);
    assert!(step.graces.marker_grace >= Duration::from_secs(20));
    assert!(step.graces.kill_grace >= Duration::from_secs(5));
    assert!(!argv.iter().any(|a| a == "-o"));
}

#[test]
fn every_option_reaches_the_command_line() {
    let options = NcuOptions {
        preset: Preset::Metrics(vec!["gpu__time_duration.sum".into()]),
        clock_control: ClockControl::None,
        kernel_name: Some("regex:matmul".into()),
        launch_skip: Some(1),
        launch_count: Some(2),
        nvtx_include: vec!["regex:nsight-python@.+/".into()],
        extra_args: vec!["--cache-control".into(), "none".into()],
        ..Default::default()
    };
    let mut settings = settings(options);
    settings.extra_args = vec!["--null-stdin".into()];
    let profiler = create("ncu", Path::new("/o"), &settings).unwrap();
    let argv = profiler.wrap(&["./app".into()]).unwrap().steps[0]
        .command
        .argv
        .clone();
    let joined = polyprof::model::arg::lossy(&argv).join(" ");
    for part in [
        "--metrics gpu__time_duration.sum",
        "--target-processes all",
        "--clock-control none",
        "-k regex:matmul",
        "--launch-skip 1",
        "--launch-count 2",
        "--nvtx --nvtx-include regex:nsight-python@.+/",
        "--cache-control none --null-stdin -- ./app",
    ] {
        assert!(joined.contains(part), "`{part}` missing from {joined}");
    }
}

#[test]
fn kernel_short_names_choose_the_base() {
    let argv_of = |options: NcuOptions| plan_argvs(options)[0].join(" ");
    let templated = argv_of(NcuOptions {
        kernel_name: Some("matmul_tiled<32>".into()),
        ..Default::default()
    });
    assert!(templated.contains("--kernel-name-base demangled -k regex:(^| )matmul_tiled<"));
    let namespaced = argv_of(NcuOptions {
        kernel_name: Some("at::vectorized_elementwise_kernel<4, at::FillFunctor<float>>".into()),
        ..Default::default()
    });
    assert!(namespaced.contains("--kernel-name-base function -k vectorized_elementwise_kernel"));
    let plain = argv_of(NcuOptions {
        kernel_name: Some("vector_add".into()),
        ..Default::default()
    });
    assert!(plain.contains("-k vector_add") && !plain.contains("--kernel-name-base"));
}

#[test]
fn graph_profiling_leaves_out_the_counters_range_replay_refuses() {
    let argv_of = |options: NcuOptions| plan_argvs(options).swap_remove(0);
    let metrics_of =
        |argv: &[String]| argv[argv.iter().position(|a| a == "--metrics").unwrap() + 1].clone();
    let typed = argv_of(NcuOptions {
        graph_profiling: GraphProfiling::Graph,
        ..Default::default()
    });
    assert!(typed.join(" ").contains("--graph-profiling graph"));
    let passed_through = argv_of(NcuOptions {
        extra_args: vec!["--graph-profiling".into(), "graph".into()],
        ..Default::default()
    });
    for argv in [&typed, &passed_through] {
        let metrics = metrics_of(argv);
        // ncu 2025.3.1 on the H200: "Metric smsp__sass_… is not supported in range replay".
        assert!(!metrics.contains("smsp__sass_"), "{metrics}");
        assert!(metrics.contains("gpu__time_duration.sum"));
        assert!(metrics.contains("sm__ops_path_tensor_src_bf16_dst_fp32.sum"));
    }
    // Node profiling (the default) keeps them.
    assert!(metrics_of(&argv_of(NcuOptions::default())).contains("smsp__sass_"));
    // A user's list with such a counter is refused before anything runs, saying why.
    let options = NcuOptions {
        preset: Preset::Metrics(vec![
            "gpu__time_duration.sum".into(),
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum".into(),
        ]),
        graph_profiling: GraphProfiling::Graph,
        ..Default::default()
    };
    let error = options.validate().unwrap_err().to_string();
    assert!(
        error.contains("range replay") && error.contains("ffma"),
        "{error}"
    );
    // The launch configuration is not required from a whole-graph result.
    let graph = NcuOptions {
        graph_profiling: GraphProfiling::Graph,
        ..Default::default()
    };
    assert!(
        !graph
            .requested_metrics()
            .iter()
            .any(|m| m.starts_with("launch__"))
    );
    assert!(
        NcuOptions::default()
            .requested_metrics()
            .iter()
            .any(|m| m.starts_with("launch__"))
    );
}

#[test]
fn sets_write_a_report_and_export_details_raw_and_session() {
    let options = NcuOptions {
        preset: Preset::Detailed,
        ..Default::default()
    };
    let profiler = create("ncu", Path::new("/o"), &settings(options)).unwrap();
    let plan = profiler.wrap(&["./app".into()]).unwrap();
    let names: Vec<&str> = plan.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["profile", "export-raw", "export-details", "export-session"]
    );
    let profile = polyprof::model::arg::lossy(&plan.steps[0].command.argv).join(" ");
    assert!(profile.contains("--set detailed") && profile.contains("-o /o/report -f -- ./app"));
    let details = &plan.steps[2];
    assert_eq!(
        details.command.argv,
        [
            "ncu",
            "--import",
            "/o/report.ncu-rep",
            "--csv",
            "--page",
            "details",
            "--print-units",
            "base",
            "--print-kernel-base",
            "mangled"
        ]
    );
    assert_eq!(
        details.stdout_file.as_deref(),
        Some(Path::new("/o/details.csv"))
    );
    assert!(details.run_after_failure);
    assert_eq!(details.end_marker, EndMarker::None);
}

#[test]
fn bad_options_fail_before_anything_runs() {
    let bad = NcuOptions {
        kernel_name: Some("regex:(".into()),
        ..Default::default()
    };
    assert!(matches!(
        create("ncu", Path::new("/o"), &settings(bad)),
        Err(Error::InvalidArgument { .. })
    ));
    let profiler = create("ncu", Path::new("/o"), &settings(NcuOptions::default())).unwrap();
    assert!(profiler.wrap(&[]).is_err());
    // The string form quotes the target so it survives a shell.
    let shell = profiler.wrap_cmd("python3 -m pytest 'a b.py'").unwrap();
    assert!(shell.contains("'a b.py'"), "{shell}");
}

#[tokio::test]
async fn read_output_parses_the_log_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("ncu-h200/pytest_log_file.csv"),
        dir.path().join("ncu.log"),
    )
    .unwrap();
    std::fs::copy(
        fixture("ncu-h200/import_session_page.stdout"),
        dir.path().join("session.csv"),
    )
    .unwrap();
    let options = NcuOptions {
        preset: Preset::Metrics(vec!["gpu__time_duration.sum".into()]),
        ..Default::default()
    };
    let profiler = create("ncu", dir.path(), &settings(options)).unwrap();
    let output = profiler.read_output().await.unwrap();
    assert_eq!(output.raw.artifacts.len(), 2);
    assert!(output.raw.get("ncu.log").unwrap().size > 50_000);
    assert_eq!(output.parsed.kernels.len(), 21);
    assert_eq!(output.parsed.session["ncu_version"], "2025.3.1.0");
    assert_eq!(kinds(&output.parsed), ["unlocked_clocks"]);
    assert!(output.errors.is_empty());
}

#[tokio::test]
async fn report_exports_merge_with_the_log_on_pid_and_id() {
    // A `--set detailed` run: the log has only ncu's lines, raw.csv and details.csv hold the data.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ncu.log"), "==PROF== Connected to process 1346 (/tmp/cap/app)\n==PROF== Disconnected from process 1346\n").unwrap();
    std::fs::copy(
        fixture("ncu-h200/raw_page.stdout"),
        dir.path().join("raw.csv"),
    )
    .unwrap();
    // Same process and launch ids as raw_page.stdout, so the pages join launch by launch.
    let details = String::from_utf8(read("ncu-h200/details_page.stdout"))
        .unwrap()
        .replace("\"1422\"", "\"1346\"");
    std::fs::write(dir.path().join("details.csv"), details).unwrap();
    let options = NcuOptions {
        preset: Preset::Detailed,
        ..Default::default()
    };
    let profiler = create("ncu", dir.path(), &settings(options)).unwrap();
    let output = profiler.read_output().await.unwrap();
    assert_eq!(output.parsed.kernels.len(), 4);
    let va = kernel(&output.parsed, "vector_add");
    // Raw page wins for fields; details add rules and labelled metrics.
    assert_eq!(va.duration_ns, Some(59_744.0));
    assert_eq!(va.rules.len(), 2);
    assert!(va.metrics.contains_key("launch__occupancy_limit_registers"));
    assert!(va.metrics.contains_key("Occupancy: Achieved Occupancy"));
}

#[tokio::test]
async fn missing_log_is_a_no_data_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let profiler = create("ncu", dir.path(), &settings(NcuOptions::default())).unwrap();
    let err = profiler.read_output().await.unwrap_err();
    assert!(matches!(err, Error::NoData { .. }));
    let text = err.to_string();
    assert!(text.contains("ncu.log") && text.contains("PATH"), "{text}");
}

#[test]
fn nvtx_is_asked_once_whichever_way_it_is_given() {
    let nvtx_count = |options: NcuOptions| {
        plan_argvs(options)[0]
            .iter()
            .filter(|a| *a == "--nvtx")
            .count()
    };
    assert_eq!(nvtx_count(NcuOptions::default()), 0);
    assert_eq!(
        nvtx_count(NcuOptions {
            nvtx: true,
            ..Default::default()
        }),
        1
    );
    assert_eq!(
        nvtx_count(NcuOptions {
            nvtx: true,
            nvtx_include: vec!["regex:a@.+/".into()],
            ..Default::default()
        }),
        1
    );
    assert_eq!(
        nvtx_count(NcuOptions {
            nvtx: true,
            extra_args: vec!["--nvtx".into()],
            ..Default::default()
        }),
        1
    );
    assert_eq!(
        nvtx_count(NcuOptions {
            nvtx_include: vec!["r/".into()],
            extra_args: vec!["--nvtx".into()],
            ..Default::default()
        }),
        1
    );
    // The typed option travels in run.json's settings and defaults to off.
    let options: NcuOptions = serde_json::from_str("{}").unwrap();
    assert!(!options.nvtx);
}

#[test]
fn the_witness_profiles_durations_with_nvtx_at_free_clocks() {
    let settings = polyprof::profilers::witness::witness_settings("ncu").unwrap();
    let argv = plan_argvs(settings.ncu)[0].join(" ");
    for part in [
        "--metrics gpu__time_duration.sum --target-processes all --clock-control none",
        " --nvtx ",
    ] {
        assert!(argv.contains(part), "`{part}` missing from {argv}");
    }
    assert_eq!(argv.matches("--nvtx").count(), 1, "{argv}");
}
