//! `polyprof doctor`, `select` and `wrap` driven through the real binary.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command as StdCommand;

use assert_cmd::Command;
use polyprof::profilers::selection::{EMBEDDED_CONFIG, Selection};
use polyprof::profilers::{self, PROFILER_NAMES, Plan, ProfilerSettings};
use serde_json::Value;

fn polyprof() -> Command {
    let mut cmd = Command::cargo_bin("polyprof").unwrap();
    cmd.env_remove("POLYPROF_CONFIG");
    cmd
}

fn stdout_json(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn write_exe(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// ---- doctor ----------------------------------------------------------------------------------

/// With an empty PATH no profiler binary can be found on any machine, so every backend must be
/// reported unavailable with a reason, and doctor must still succeed.
#[test]
fn doctor_json_lists_every_backend_unavailable_with_a_reason() {
    let empty = tempfile::tempdir().unwrap();
    let output = polyprof()
        .args(["doctor", "--json"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let doc = stdout_json(&output);
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["host"]["os"], std::env::consts::OS);
    assert!(doc["host"]["root"].is_boolean());
    assert_eq!(doc["available"], serde_json::json!([]));
    let list = doc["profilers"].as_array().unwrap();
    let names: Vec<&str> = list
        .iter()
        .map(|p| p["profiler"].as_str().unwrap())
        .collect();
    assert_eq!(names, PROFILER_NAMES);
    for p in list {
        let name = &p["profiler"];
        assert_eq!(p["available"], false, "{name}");
        let reason = p["reason"].as_str().unwrap_or_default();
        assert!(reason.len() > 20, "{name}: reason {reason:?}");
        // Stable shape: every key present even when unknown.
        for key in ["binary", "version", "warnings", "checks"] {
            assert!(p.get(key).is_some(), "{name} lacks {key}");
        }
        let checks = p["checks"].as_array().unwrap();
        assert!(
            checks
                .iter()
                .any(|c| c["ok"] == false && c["advisory"] == false),
            "{name}"
        );
    }
    let by_name = |n: &str| list.iter().find(|p| p["profiler"] == n).unwrap();
    if cfg!(not(target_os = "macos")) {
        let reason = by_name("metal")["reason"].as_str().unwrap();
        assert!(reason.contains("needs macOS with Xcode command line tools (xcrun)"));
    }
    for intel in ["unitrace", "ocl-unitrace", "vtune"] {
        let reason = by_name(intel)["reason"].as_str().unwrap();
        assert!(reason.contains("is not on PATH"), "{intel}: {reason}");
    }
}

#[test]
fn doctor_text_exits_zero_and_names_every_backend() {
    let empty = tempfile::tempdir().unwrap();
    let output = polyprof()
        .arg("doctor")
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    for name in PROFILER_NAMES {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    let none = format!("0 of {} profilers can run here", PROFILER_NAMES.len());
    assert!(text.contains(&none), "{text}");
}

#[test]
fn doctor_reads_the_version_of_a_binary_it_finds() {
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("unitrace");
    write_exe(
        &fake,
        "#!/bin/sh\n[ \"$1\" = --version ] && echo '2.3.0 (fake build)'\n",
    );
    // Keep sh and friends reachable for the fake's shebang; unitrace comes first.
    let output = polyprof()
        .args(["doctor", "--json"])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.path().display()))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let doc = stdout_json(&output);
    let unitrace = doc["profilers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["profiler"] == "unitrace")
        .unwrap();
    assert_eq!(unitrace["version"], "2.3.0 (fake build)");
    assert_eq!(unitrace["binary"], fake.to_str().unwrap());
    let checks = unitrace["checks"].as_array().unwrap();
    let check = |n: &str| checks.iter().find(|c| c["name"] == n).unwrap().clone();
    assert_eq!(check("binary")["ok"], true);
    assert_eq!(check("version")["ok"], true);
    assert!(check("gpu").is_object() && check("counters").is_object());
}

// ---- select ----------------------------------------------------------------------------------

#[test]
fn select_json_describes_the_passes() {
    let output = polyprof()
        .args([
            "select",
            "--language",
            "OpenCL",
            "--arch",
            " BMG ",
            "--profiler",
            "unitrace",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let doc = stdout_json(&output);
    assert_eq!(
        doc,
        serde_json::json!({
            "schema_version": 1,
            "config": "embedded configs/selection.toml",
            "language": "ocl",
            "arches": ["bmg"],
            "vendor": "intel",
            "profiler_type": "unitrace",
            "defaulted": false,
            "passes": [
                {"profiler": "ocl-unitrace", "metric_group": "ComputeBasic", "extra_args": []},
                {"profiler": "ocl-unitrace", "metric_group": "MemoryProfile", "extra_args": []},
                {"profiler": "ocl-unitrace", "metric_group": "VectorEngineProfile", "extra_args": []}
            ]
        })
    );
}

#[test]
fn select_text_and_default_marker() {
    polyprof()
        .args(["select", "--language", "pytorch", "--arch", "h100,a100"])
        .assert()
        .success()
        .stdout("pytorch on h100,a100 (NVIDIA): profiler type ncu (default)\n  pass 1: ncu\n");
    let out = polyprof()
        .args(["select", "--language", "sycl", "--arch", "lnl"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("pass 3: unitrace, metric group VectorEngineProfile"),
        "{text}"
    );
}

#[test]
fn select_errors_exit_2_with_valid_values_on_stderr() {
    for (args, needle) in [
        (
            vec!["--language", "fortran", "--arch", "a100"],
            "unknown language `fortran`; valid values: cuda, hip",
        ),
        (
            vec!["--language", "cuda", "--arch", "rtx9999"],
            "unknown arch `rtx9999`",
        ),
        (
            vec!["--language", "sycl", "--arch", "bmg", "--profiler", "perf"],
            "unitrace, vtune (for language sycl)",
        ),
        (
            vec!["--language", "cuda", "--arch", "mi300x"],
            "cuda has no profiler for AMD GPUs",
        ),
        (
            vec!["--language", "pytorch", "--arch", "a100,bmg"],
            "must name one vendor",
        ),
    ] {
        let mut full = vec!["select", "--json"];
        full.extend(args);
        let output = polyprof().args(&full).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{full:?}");
        assert!(output.stdout.is_empty(), "{full:?}: stdout must stay clean");
        let err = String::from_utf8(output.stderr).unwrap();
        assert!(err.contains(needle), "{full:?}: {err}");
    }
    // clap: missing required flag.
    polyprof()
        .args(["select", "--language", "cuda"])
        .assert()
        .code(2);
}

#[test]
fn select_honours_config_flag_and_env() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    std::fs::write(
        &path,
        "[arches]\nnvidia = [\"gb300\"]\n[choices]\nncu = [{ profiler = \"ncu\", extra_args = [\"--set\", \"full\"] }]\n\
         [languages.cuda]\ntypes = { ncu = \"ncu\" }\ndefault = \"ncu\"\n",
    )
    .unwrap();
    let by_flag = polyprof()
        .args([
            "select",
            "--language",
            "cuda",
            "--arch",
            "gb300",
            "--json",
            "--config",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(by_flag.status.code(), Some(0), "{by_flag:?}");
    let doc = stdout_json(&by_flag);
    assert_eq!(doc["config"], path.to_str().unwrap());
    assert_eq!(
        doc["passes"][0]["extra_args"],
        serde_json::json!(["--set", "full"])
    );

    let by_env = polyprof()
        .args(["select", "--language", "cuda", "--arch", "gb300", "--json"])
        .env("POLYPROF_CONFIG", &path)
        .output()
        .unwrap();
    assert_eq!(stdout_json(&by_env), doc);
    // Without the user table gb300 is unknown.
    polyprof()
        .args(["select", "--language", "cuda", "--arch", "gb300"])
        .assert()
        .code(2);
    // A broken user table is reported with its path.
    std::fs::write(&path, "[arches\n").unwrap();
    let out = polyprof()
        .args(["select", "--language", "cuda", "--arch", "a100", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("mine.toml"));
}

#[test]
fn print_config_is_the_embedded_table() {
    let out = polyprof()
        .args(["select", "--print-config"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text, EMBEDDED_CONFIG);
    Selection::from_toml(&text, "printed").unwrap();
}

// ---- wrap ------------------------------------------------------------------------------------

#[test]
fn wrap_prints_the_backends_plan_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let target = ["pytest", "-k", "--template_params=(16, 32)"];
    let out = polyprof()
        .args(["wrap", "--profiler", "VTune", "--output-dir"])
        .arg(dir.path())
        .arg("--")
        .args(target)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let plan: Plan = serde_json::from_slice(&out.stdout).unwrap();
    let target: Vec<polyprof::model::Arg> = target.iter().map(|s| s.to_string().into()).collect();
    let expected = profilers::create("vtune", dir.path(), &ProfilerSettings::default())
        .unwrap()
        .wrap(&target)
        .unwrap();
    assert_eq!(plan, expected);
}

#[test]
fn wrap_makes_the_output_dir_absolute() {
    let cwd = tempfile::tempdir().unwrap();
    let out = polyprof()
        .current_dir(cwd.path())
        .args([
            "wrap",
            "--profiler",
            "metal",
            "--output-dir",
            "rel/out",
            "--",
            "./app",
        ])
        .output()
        .unwrap();
    let plan: Plan = serde_json::from_slice(&out.stdout).unwrap();
    let output_arg = &plan.steps[0].command.argv[6];
    assert!(Path::new(output_arg).is_absolute(), "{output_arg}");
    assert!(
        output_arg
            .to_string_lossy()
            .ends_with("rel/out/trace.trace"),
        "{output_arg}"
    );
}

#[test]
fn wrap_shell_string_runs_the_planned_command() {
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let log = root.path().join("argv");
    write_exe(
        &bin.join("unitrace"),
        &format!("#!/bin/sh\nprintf '%s\\0' \"$@\" > '{}'\n", log.display()),
    );
    let target = [
        "python",
        "t.py",
        "$(touch x)",
        "it's \"q\"",
        "--template_params=(16, 32)",
    ];
    let out = polyprof()
        .args([
            "wrap",
            "--profiler",
            "unitrace",
            "--group",
            "MemoryProfile",
            "--shell",
        ])
        .args(["--output-dir", "/tmp/pp out"])
        .arg("--")
        .args(target)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let script = String::from_utf8(out.stdout).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let ran = StdCommand::new("sh")
        .arg("-c")
        .arg(script.trim_end())
        .current_dir(root.path())
        .env("PATH", path)
        .status()
        .unwrap();
    assert!(ran.success());
    let argv: Vec<String> = String::from_utf8(std::fs::read(&log).unwrap())
        .unwrap()
        .trim_end_matches('\0')
        .split('\0')
        .map(str::to_string)
        .collect();
    assert_eq!(&argv[argv.len() - target.len()..], &target);
    let group = argv.iter().position(|a| a == "--group").unwrap();
    assert_eq!(argv[group + 1], "MemoryProfile");
    let prefix = argv.iter().position(|a| a == "-o").unwrap();
    assert_eq!(argv[prefix + 1], "/tmp/pp out/trace");
    assert!(!root.path().join("x").exists());
}

#[test]
fn wrap_usage_errors() {
    let out = polyprof()
        .args([
            "wrap",
            "--profiler",
            "perf",
            "--output-dir",
            "/o",
            "--",
            "app",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("unknown profiler `perf`") && err.contains("ocl-unitrace"),
        "{err}"
    );

    let out = polyprof()
        .args([
            "wrap",
            "--profiler",
            "vtune",
            "--group",
            "X",
            "--output-dir",
            "/o",
            "--",
            "app",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("--group applies to unitrace")
    );

    // No command after `--`.
    polyprof()
        .args(["wrap", "--profiler", "vtune", "--output-dir", "/o"])
        .assert()
        .code(2);
}

#[test]
fn a_reader_that_stops_early_is_not_a_crash() {
    // The read end is closed before polyprof writes, so its write meets EPIPE.
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("polyprof"))
        .args(["select", "--print-config"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    // Quietly, with what a shell reports for a program that SIGPIPE ended (README's 141).
    assert!(err.is_empty(), "{err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
}
