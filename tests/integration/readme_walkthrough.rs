//! The README's "First steps" block, run as a new user would: each line in an empty folder with
//! the built `polyprof` on PATH (in place of `cargo install`), each exit status as the line's
//! comment says (`# exit N`, else 0), then the files the CI gate promises.

use std::path::Path;

/// The lines between `<!-- walkthrough -->` and `<!-- /walkthrough -->` that are commands.
fn walkthrough() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("<!-- walkthrough -->")
        .expect("README has a walkthrough block");
    let end = readme
        .find("<!-- /walkthrough -->")
        .expect("the block ends");
    readme[start..end]
        .lines()
        .filter(|l| l.starts_with("cargo ") || l.starts_with("polyprof "))
        .map(str::to_string)
        .collect()
}

/// `# exit N` in the line's comment, else 0.
fn expected_exit(line: &str) -> i32 {
    line.split_once("# exit ")
        .and_then(|(_, rest)| rest.split(':').next()?.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_first_steps_run_as_written() {
    let lines = walkthrough();
    assert!(lines.len() >= 5, "{lines:?}");
    assert!(
        lines[0].starts_with("cargo install --locked"),
        "{}",
        lines[0]
    );
    let dir = tempfile::tempdir().unwrap();
    // The fixtures the block names, as in a clone.
    std::os::unix::fs::symlink(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"),
        dir.path().join("tests"),
    )
    .unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_polyprof")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for line in &lines[1..] {
        let mut command = std::process::Command::new("sh");
        command
            .args(["-c", line])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("HOME", dir.path())
            .env_remove("XDG_CONFIG_HOME");
        for (name, _) in std::env::vars() {
            if name.starts_with("POLYPROF_") {
                command.env_remove(name);
            }
        }
        let out = command.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(expected_exit(line)),
            "{line}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(dir.path().join("runs/first/run.json").is_file());
    let junit = std::fs::read_to_string(dir.path().join("perf.xml")).unwrap();
    assert!(junit.contains(r#"failures="1""#), "{junit}");
    let summary = std::fs::read_to_string(dir.path().join("perf.md")).unwrap();
    assert!(
        summary.starts_with("## ❌ polyprof diff: 1 failed, 3 passed"),
        "{summary}"
    );
}
