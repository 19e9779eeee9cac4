//! The three programs of `examples/` run and do what they say: `compare_runs` gates the bundled
//! regressed capture and writes its JUnit file, `batch_from_rust` runs its three jobs, and
//! `profile_command` records a command. `cargo build --examples` (scripts/test.sh) builds them
//! next to this test binary (`cargo test` builds examples only as test targets, under hashed
//! names); run alone (`--test integration`), a missing one is SKIPPED, in CI a failure.

use std::path::PathBuf;

use crate::support::{assert_exit, fixture};

/// `target/<profile>/examples/<name>`, beside this test binary's `deps/`.
fn example(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join(name);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing: build the examples (cargo build --examples)",
        path.display()
    );
    crate::support::record_skip(
        &crate::support::this_test(),
        &format!(
            "{} is not built (cargo build --examples builds it)",
            path.display()
        ),
    );
    None
}

#[test]
fn compare_runs_gates_and_writes_junit() {
    let Some(bin) = example("compare_runs") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("diff.xml");
    let out = std::process::Command::new(bin)
        .arg(fixture("runs/h200-baseline"))
        .arg(fixture("runs/h200-regressed"))
        .arg(&junit)
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert!(String::from_utf8_lossy(&out.stdout).contains("matmul_tiled<32>"));
    assert!(
        std::fs::read_to_string(junit)
            .unwrap()
            .contains(r#"failures="1""#)
    );
}

#[test]
fn batch_from_rust_runs_its_jobs() {
    let Some(bin) = example("batch_from_rust") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let out = std::process::Command::new(bin).arg(&root).output().unwrap();
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("hello: succeeded") && text.contains("broken: failed"),
        "{text}"
    );
    assert!(root.join("batch.json").is_file());
}

#[test]
fn profile_command_records_a_run() {
    let Some(bin) = example("profile_command") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(bin)
        .current_dir(dir.path())
        .args(["--", "sh", "-c", "echo hi"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("exited with code 0"));
    assert!(
        dir.path()
            .join("polyprof-runs/example/none.000/run.json")
            .is_file()
    );
}
