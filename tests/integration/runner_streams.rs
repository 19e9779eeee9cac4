//! Where output goes, as with `time(1)` and `ncu`: the command's stdout on stdout, its stderr on
//! stderr, polyprof's own lines on stderr; with `--json` the document alone on stdout. And a
//! reader that closes stdout early ends every subcommand quietly with 141.

use std::process::{Output, Stdio};
use std::time::Duration;

use polyprof::model::outcome::Outcome;
use polyprof::results::ProfileRun;

use crate::support::{fixture, polyprof};

const SCRIPT: &str = "echo to-stdout; echo to-stderr >&2";

fn run(flags: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let output = polyprof()
        .arg("run")
        .args(flags)
        .arg("--output-dir")
        .arg(dir.path().join("out"))
        .args(["--", "sh", "-c", SCRIPT])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    (output, dir)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_commands_stdout_is_on_stdout_and_polyprofs_lines_on_stderr() {
    let (output, _dir) = run(&[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // `polyprof run -- ./app | grep x` greps the app, and only the app.
    assert_eq!(text(&output.stdout), "to-stdout\n");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("to-stderr\n"), "{stderr}");
    assert!(!stderr.contains("to-stdout"), "{stderr}");
    assert!(
        stderr.contains("polyprof run [none]: exited with code 0"),
        "{stderr}"
    );
    assert!(stderr.contains("run directory:"), "{stderr}");
}

#[test]
fn the_commands_stdout_passes_byte_for_byte_without_a_newline_added() {
    let dir = tempfile::tempdir().unwrap();
    let output = polyprof()
        .args(["run", "--output-dir"])
        .arg(dir.path().join("out"))
        .args(["--", "sh", "-c", "printf 'a\\nb'; printf 'c' >&2"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // What `sh -c … > file` would write: no newline after the last, unfinished line.
    assert_eq!(output.stdout, b"a\nb", "{output:?}");
    // On stderr, shared with polyprof's own lines, that line is ended before the summary.
    let stderr = text(&output.stderr);
    assert!(stderr.starts_with("c\n"), "{stderr}");
}

#[test]
fn with_json_the_document_is_alone_on_stdout_and_the_echo_on_stderr() {
    let (output, dir) = run(&["--json"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let run: ProfileRun = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not the document alone ({e}): {output:?}"));
    assert_eq!(run.outcome, Some(Outcome::Exited { code: 0 }));
    assert_eq!(ProfileRun::read(&dir.path().join("out")).unwrap(), run);
    let stderr = text(&output.stderr);
    assert!(stderr.contains("to-stdout\n"), "{stderr}");
    assert!(stderr.contains("to-stderr\n"), "{stderr}");
}

#[test]
fn quiet_leaves_stdout_empty_and_the_summary_on_stderr() {
    let (output, _dir) = run(&["-q"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("to-std"), "{stderr}");
    assert!(stderr.contains("polyprof run [none]"), "{stderr}");
}

/// `polyprof ARGS` with stdout a pipe whose reader is already gone (`… | head -0`).
fn into_a_closed_pipe(args: &[&std::ffi::OsStr]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    std::process::Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn assert_quiet_141(output: &Output, what: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "{what}: {stderr}");
    assert!(!stderr.contains("error"), "{what}: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
}

#[test]
fn run_json_into_a_closed_pipe_ends_quietly_with_141_after_writing_run_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = into_a_closed_pipe(&[
        "run".as_ref(),
        "--json".as_ref(),
        "-q".as_ref(),
        "--output-dir".as_ref(),
        out.as_os_str(),
        "--".as_ref(),
        "true".as_ref(),
    ]);
    assert_quiet_141(&output, "run --json");
    let run = ProfileRun::read(&out).unwrap();
    assert_eq!(run.outcome, Some(Outcome::Exited { code: 0 }));
}

#[test]
fn parse_json_and_report_into_a_closed_pipe_end_quietly_with_141() {
    // Large enough that records are written as they are parsed (the streaming path).
    let log = fixture("ncu-h200/set_detailed_log.csv");
    let output = into_a_closed_pipe(&[
        "parse".as_ref(),
        "--profiler".as_ref(),
        "ncu".as_ref(),
        "--json".as_ref(),
        log.as_os_str(),
    ]);
    assert_quiet_141(&output, "parse --json");

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    polyprof()
        .args(["run", "-q", "--output-dir"])
        .arg(&out)
        .args(["--", "true"])
        .assert()
        .code(0);
    let output = into_a_closed_pipe(&["report".as_ref(), out.as_os_str()]);
    assert_quiet_141(&output, "report");
}

#[test]
fn a_reader_that_goes_away_stops_the_command_as_a_pipe_would() {
    use std::io::Read;
    // `polyprof run -- yes | head -c 100`: `yes` alone would end of SIGPIPE.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_polyprof"))
        .args(["run", "--timeout", "20", "--output-dir"])
        .arg(&out)
        .args(["--", "yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = [0u8; 100];
    let mut stdout = child.stdout.take().unwrap();
    stdout.read_exact(&mut first).unwrap();
    assert!(
        first.starts_with(b"y\ny\n"),
        "{}",
        String::from_utf8_lossy(&first)
    );
    drop(stdout);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("polyprof went on after its reader was gone");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(141));
    let run = ProfileRun::read(&out).unwrap();
    assert_eq!(run.outcome, Some(Outcome::Cancelled));
}
