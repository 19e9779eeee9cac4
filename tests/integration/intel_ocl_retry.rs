//! The OpenCL unitrace plan run for real against fake `unitrace` executables on PATH: the
//! retry policy (up to 20 attempts, accepted when the newest `trace.metrics.*` has ≥ 10 lines,
//! each attempt's files cleaned before the next) and then the parser on what the accepted
//! attempt left.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use polyprof::pipeline::artifacts::collect_files;
use polyprof::pipeline::{RunOptions, execute_plan};
use polyprof::profilers::unitrace::is_unitrace_output;
use polyprof::profilers::{ProfilerSettings, create};

/// A fake unitrace: attempt 1 fails, attempt 2 succeeds with a 2-line metrics file, attempt 3
/// and later succeed with a summary and a 12-line metrics file. Every attempt prints what it
/// saw and runs the target, as unitrace does.
const FAKE: &str = r#"#!/bin/sh
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --output-dir-path) out="$2"; shift 2 ;;
    --group|--session|--teardown-on-signal|-o) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
n=$(( $(cat "$out/attempts" 2>/dev/null || echo 0) + 1 ))
echo $n > "$out/attempts"
echo "attempt $n PTI_ENABLE_COLLECTION=$PTI_ENABLE_COLLECTION left=$(ls "$out" | grep -c '^trace\.')"
case $n in
  1) echo "[ERROR] Failed to initialize Level Zero runtime" >&2; exit 1 ;;
  2) printf 'Kernel, GlobalInstanceId, GpuTime[ns]\nGEMM, 1, 5\n' > "$out/trace.metrics.200"; "$@"; exit 0 ;;
esac
{
  printf '\n=== Device Timing Summary ===\n\n== CL GPU Backend ==\n\n'
  printf '  Kernel, Calls, Time (ns), Time (%%), Average (ns), Min (ns), Max (ns)\n'
  printf '  GEMM, 10, 1000, 100.00, 100, 90, 110\n'
} > "$out/trace.300"
{
  printf 'Kernel, GlobalInstanceId, GpuTime[ns], XVE_ACTIVE[%%], XVE_STALL[%%]\n'
  for i in 1 2 3 4 5 6 7 8 9 10 11; do printf 'GEMM, %s, 100, 80, 15\n' $i; done
} > "$out/trace.metrics.300"
"$@"
"#;

fn install_fake(dir: &Path) {
    let path = dir.join("unitrace");
    std::fs::write(&path, FAKE).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn opencl_metrics_are_retried_until_a_long_enough_file_then_parsed() {
    let bin = tempfile::tempdir().unwrap();
    install_fake(bin.path());
    let out = tempfile::tempdir().unwrap();
    let settings = ProfilerSettings {
        unitrace: polyprof::profilers::unitrace::UnitraceSettings {
            metric_group: Some("ComputeBasic".into()),
        },
        ..Default::default()
    };
    let backend = create("ocl-unitrace", out.path(), &settings).unwrap();
    let target = polyprof::model::arg::args(["printf", "%s\\n", "--template_params=(16, 32)"]);
    let mut plan = backend.wrap(&target).unwrap();
    let step = &mut plan.steps[0];
    assert_eq!(step.retry.as_ref().unwrap().max_attempts, 20);
    // The fake comes first on PATH; sh and its tools stay reachable.
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    step.command.env.insert("PATH".into(), path);

    let runs = execute_plan(&plan, &RunOptions::default(), out.path()).await;
    let run = &runs[0];
    assert!(run.accepted, "{:?}", run.rejection);
    assert_eq!(run.attempts.len(), 3);
    let lines: Vec<&String> = run.attempts.iter().map(|a| &a.stdout.head[0]).collect();
    // Collection starts off; the short metrics file of attempt 2 was cleaned before attempt 3.
    assert_eq!(lines[0], "attempt 1 PTI_ENABLE_COLLECTION=0 left=0");
    assert_eq!(lines[1], "attempt 2 PTI_ENABLE_COLLECTION=0 left=0");
    assert_eq!(lines[2], "attempt 3 PTI_ENABLE_COLLECTION=0 left=0");
    // The target's argument arrived verbatim.
    assert_eq!(run.attempts[2].stdout.head[1], "--template_params=(16, 32)");
    assert!(!out.path().join("trace.metrics.200").exists());

    let raw = collect_files(out.path(), is_unitrace_output, 1 << 20)
        .await
        .unwrap();
    let parsed = backend.parse(raw).unwrap().parsed;
    assert_eq!(parsed.session["record_source"], "metrics");
    assert_eq!(parsed.kernels.len(), 11);
    assert_eq!(parsed.kernels[0].profiler, "ocl-unitrace");
    assert_eq!(parsed.kernels[0].metric("xve_idle_pct"), Some(5.0));
}

#[tokio::test]
async fn all_attempts_failing_is_a_clear_failure() {
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("unitrace");
    std::fs::write(&fake, "#!/bin/sh\necho no metrics\nexit 0\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = tempfile::tempdir().unwrap();
    let backend = create("ocl-unitrace", out.path(), &ProfilerSettings::default()).unwrap();
    let mut plan = backend.wrap(&["true".into()]).unwrap();
    let step = &mut plan.steps[0];
    step.retry.as_mut().unwrap().max_attempts = 3;
    step.command.env.insert(
        "PATH".into(),
        format!("{}:/usr/bin:/bin", bin.path().display()),
    );
    let runs = execute_plan(&plan, &RunOptions::default(), out.path()).await;
    assert!(!runs[0].accepted);
    assert_eq!(runs[0].attempts.len(), 3);
    let why = runs[0].rejection.clone().unwrap();
    assert!(why.contains("trace.metrics."), "{why}");
}
