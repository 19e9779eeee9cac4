//! Bytes stay bytes: an argument that is not UTF-8 reaches the command unchanged, and run.json
//! records it losslessly (`{"bytes_hex": …}`) and reads it back identically. Through the real
//! binary.

use crate::support;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use predicates::prelude::*;

use polyprof::model::Arg;
use polyprof::results::ProfileRun;

#[test]
fn an_argument_that_is_not_utf8_reaches_the_command_and_round_trips_in_run_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let odd = OsStr::from_bytes(b"\xff\xfe-x");
    let output = support::polyprof()
        .args(["run", "--json", "-q", "--output-dir"])
        .arg(&out)
        .args(["--", "sh", "-c", r#"printf %s "$1" | od -An -tx1"#, "sh"])
        .arg(odd)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let run: ProfileRun = serde_json::from_slice(&output.stdout).unwrap();
    let attempt = &run.steps[0].attempts[0];
    // The child saw exactly the bytes given.
    assert_eq!(
        attempt.stdout.head.first().map(|l| l.trim()),
        Some("ff fe 2d 78"),
        "{:?}",
        attempt.stdout.head
    );
    let expected = Arg::from(odd);
    assert_eq!(run.target.last(), Some(&expected));
    assert_eq!(attempt.argv.last(), Some(&expected));
    // On disk: the odd argument as hex, the others as plain strings; read back identically.
    let text = std::fs::read_to_string(out.join("run.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["target"][0], "sh");
    assert_eq!(json["target"][4]["bytes_hex"], "fffe2d78");
    assert_eq!(ProfileRun::read(&out).unwrap(), run);
}

#[test]
fn the_shell_string_form_refuses_an_argument_that_is_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    support::polyprof()
        .args(["wrap", "--profiler", "vtune", "--shell", "--output-dir"])
        .arg(dir.path())
        .args(["--", "./app"])
        .arg(OsStr::from_bytes(b"a\xffb"))
        .assert()
        .failure()
        .stderr(predicates::str::contains("not UTF-8"));
    // The JSON plan keeps the bytes.
    let output = support::polyprof()
        .args(["wrap", "--profiler", "vtune", "--output-dir"])
        .arg(dir.path())
        .args(["--", "./app"])
        .arg(OsStr::from_bytes(b"a\xffb"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let plan: polyprof::model::Plan = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        plan.target,
        [Arg::from("./app"), Arg::from(OsStr::from_bytes(b"a\xffb"))]
    );
}

#[test]
fn an_env_value_that_is_not_utf8_reaches_the_command_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let mut setting = b"POLYPROF_TEST_BYTES=".to_vec();
    setting.extend_from_slice(b"\xff\xfe-x");
    let output = support::polyprof()
        .args(["run", "--json", "-q", "--output-dir"])
        .arg(dir.path().join("out"))
        .arg("--env")
        .arg(OsStr::from_bytes(&setting))
        .args(["--env", "POLYPROF_TEST_TEXT=plain"])
        .args([
            "--",
            "sh",
            "-c",
            r#"printf %s "$POLYPROF_TEST_BYTES" | od -An -tx1; echo "$POLYPROF_TEST_TEXT""#,
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let run: ProfileRun = serde_json::from_slice(&output.stdout).unwrap();
    let head = &run.steps[0].attempts[0].stdout.head;
    assert_eq!(
        head.first().map(|l| l.trim()),
        Some("ff fe 2d 78"),
        "{head:?}"
    );
    assert_eq!(head.get(1).map(String::as_str), Some("plain"), "{head:?}");
}

#[test]
fn an_env_setting_without_a_text_name_is_a_usage_error() {
    for bad in [&b"=value"[..], b"NO_EQUALS", b"\xffNAME=v"] {
        support::polyprof()
            .args(["run", "--env"])
            .arg(OsStr::from_bytes(bad))
            .args(["--", "true"])
            .assert()
            .code(2)
            .stderr(
                predicates::str::contains("NAME=VALUE")
                    .or(predicates::str::contains("name must be")),
            );
    }
}
