//! Run documents of schema_version 1 (errors as plain strings) keep loading, reporting and
//! round-tripping now that errors are typed (version 2); the binary writes typed errors.

use polyprof::model::run::SCHEMA_VERSION;
use polyprof::{ErrorKind, ProfileRun, RunError};
use serde_json::Value;

use crate::support::{fixture, polyprof};

fn json_of(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn version_1_errors_load_as_kind_unknown_with_their_text() {
    let run = ProfileRun::read(&fixture("runs/v1-unavailable")).unwrap();
    let committed = json_of(&fixture("runs/v1-unavailable/run.json"));
    assert_eq!(committed["schema_version"], 1);
    assert_eq!(
        run.errors,
        [RunError::new(
            ErrorKind::Unknown,
            committed["errors"][0].as_str().unwrap()
        )]
    );
    assert!(
        run.errors[0]
            .to_string()
            .starts_with("profiler `ncu` is unavailable")
    );
    assert!(!run.succeeded());

    let parsed = ProfileRun::read(&fixture("runs/v1-parsed/run.json")).unwrap();
    assert_eq!(parsed.kernels.len(), 9);
    assert_eq!(parsed.warnings.len(), 1);
    assert_eq!(parsed.errors.len(), 1);
    assert_eq!(parsed.errors[0].kind, ErrorKind::Unknown);
    assert!(
        parsed.errors[0].message.contains("9_kernel_trace.csv"),
        "{:?}",
        parsed.errors
    );
}

#[test]
fn a_version_1_document_is_written_back_as_version_2() {
    let run = ProfileRun::read(&fixture("runs/v1-parsed")).unwrap();
    assert_eq!(run.schema_version, SCHEMA_VERSION);
    let dir = tempfile::tempdir().unwrap();
    let path = run.write(dir.path()).unwrap();
    let written = json_of(&path);
    assert_eq!(written["schema_version"], SCHEMA_VERSION);
    assert_eq!(written["errors"][0]["kind"], "unknown");
    assert_eq!(
        written["errors"][0]["message"],
        json_of(&fixture("runs/v1-parsed/run.json"))["errors"][0]
    );
    assert_eq!(ProfileRun::read(&path).unwrap(), run);
}

#[test]
fn report_reads_a_version_1_document() {
    let dir = fixture("runs/v1-parsed");
    let output = polyprof().arg("report").arg(&dir).output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("error    cannot parse rocprofv3 kernel trace"),
        "{text}"
    );
    // The JSON report keeps the messages as strings (its own schema is unchanged).
    let output = polyprof()
        .args(["report", "--format", "json"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        report["run"]["errors"][0]
            .as_str()
            .unwrap()
            .contains("9_kernel_trace.csv"),
        "{report}"
    );
}

#[test]
fn the_binary_writes_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let output = polyprof()
        .args(["run", "--profiler", "ncu", "--output-dir"])
        .arg(dir.path().join("ncu.000"))
        .args(["--", "true"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let run = json_of(&dir.path().join("ncu.000/run.json"));
    assert_eq!(run["schema_version"], SCHEMA_VERSION);
    assert_eq!(run["errors"][0]["kind"], "profiler_unavailable", "{run}");
    assert!(
        run["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("`ncu` is not on PATH"),
        "{run}"
    );

    // Saved output with a file the parser cannot read: the error is the profiler output's.
    let foreign = dir.path().join("9_kernel_trace.csv");
    std::fs::write(&foreign, "\"Name\",\"Value\"\nx,1\n").unwrap();
    let parsed = dir.path().join("parsed.json");
    let output = polyprof()
        .args(["parse", "--profiler", "rocprofv3"])
        .arg(fixture("rocprofv3/kernel_trace.csv"))
        .arg(&foreign)
        .arg("-o")
        .arg(&parsed)
        .output()
        .unwrap();
    // As `parse` without a document: a file that could not be parsed is exit 2; the document
    // keeps the records of the other file.
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let doc = json_of(&parsed);
    assert_eq!(doc["kernels"].as_array().map(Vec::len), Some(9), "{doc}");
    assert_eq!(doc["errors"][0]["kind"], "profiler_output", "{doc}");
}
