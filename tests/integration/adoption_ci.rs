//! Failures say why in CI: a failed batch job's stderr tail and kind in the JUnit file
//! (`<failure>` and `<system-err>`) and the Markdown summary (a collapsed `<details>`), and
//! every JUnit file polyprof writes (batch, eval, diff) valid under Jenkins' strict
//! junit-10.xsd (schemas/junit/), checked with `xmllint --schema` (libxml2-utils).

use std::path::Path;

use crate::support::batch::{sh_job, write_jobs};
use crate::support::{fixture, polyprof};

/// `xmllint --schema junit-10.xsd FILE` passes; SKIPPED (a failure under CI) without xmllint.
fn validates(test: &str, junit: &Path) -> bool {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/junit/junit-10.xsd");
    let out = match std::process::Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&schema)
        .arg(junit)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            crate::support::skip(
                test,
                &format!("xmllint cannot run ({e}); apt-get install libxml2-utils"),
            );
            return false;
        }
    };
    assert!(
        out.status.success(),
        "{} does not validate against junit-10.xsd:\n{}\n{}",
        junit.display(),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(junit).unwrap_or_default()
    );
    true
}

#[test]
fn a_failed_jobs_stderr_tail_reaches_junit_and_markdown_and_junit_validates() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = write_jobs(
        dir.path(),
        &[
            sh_job(
                "broken",
                "echo preparing >&2; echo 'the solver diverged at step 7' >&2; exit 3",
            ),
            sh_job("fine", "true"),
        ],
    );
    let (junit, markdown) = (dir.path().join("j.xml"), dir.path().join("m.md"));
    let out = polyprof()
        .arg("batch")
        .arg(&jobs)
        .arg("--output-dir")
        .arg(dir.path().join("root"))
        .arg("--junit")
        .arg(&junit)
        .arg("--markdown")
        .arg(&markdown)
        .arg("--quiet")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let err_at = xml
        .find("<system-err>")
        .expect("a <system-err> for the failed job");
    assert!(
        xml[err_at..].contains("the solver diverged at step 7"),
        "{xml}"
    );
    assert!(
        xml.contains(r#"message="failed: exited with code 3""#),
        "{xml}"
    );
    assert!(
        !xml.contains("<testsuites name=\"polyprof\" tests=\"2\" skipped"),
        "{xml}"
    );
    let md = std::fs::read_to_string(&markdown).unwrap();
    let details = md
        .find("<details>")
        .expect("a collapsed tail in the Markdown");
    assert!(
        md[details..].contains("the solver diverged at step 7"),
        "{md}"
    );
    assert!(md.contains("exited with code 3"), "{md}");
    validates(
        "adoption_ci::a_failed_jobs_stderr_tail_reaches_junit_and_markdown_and_junit_validates",
        &junit,
    );
}

#[test]
fn eval_and_diff_junit_files_validate() {
    let test = "adoption_ci::eval_and_diff_junit_files_validate";
    let dir = tempfile::tempdir().unwrap();
    let eval_junit = dir.path().join("eval.xml");
    polyprof()
        .args([
            "eval",
            "--device",
            "cpu",
            "--reference",
            "/nonexistent/ref.py",
        ])
        .args(["--candidate", "/nonexistent/cand.py", "--junit"])
        .arg(&eval_junit)
        .output()
        .unwrap();
    let diff_junit = dir.path().join("diff.xml");
    polyprof()
        .arg("diff")
        .arg(fixture("runs/h200-baseline"))
        .arg(fixture("runs/h200-regressed"))
        .arg("--junit")
        .arg(&diff_junit)
        .output()
        .unwrap();
    for junit in [&eval_junit, &diff_junit] {
        assert!(junit.is_file(), "{} was not written", junit.display());
        if !validates(test, junit) {
            return;
        }
    }
}

#[test]
fn a_failed_jobs_stderr_tail_and_kind_reach_the_batch_page() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = write_jobs(
        dir.path(),
        &[
            sh_job(
                "broken",
                "echo preparing >&2; echo 'the solver <diverged> at step 7' >&2; exit 3",
            ),
            sh_job("fine", "echo fine >&2"),
        ],
    );
    let root = dir.path().join("root");
    let out = polyprof()
        .arg("batch")
        .arg(&jobs)
        .arg("--output-dir")
        .arg(&root)
        .arg("--quiet")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let page = dir.path().join("batch.html");
    let out = polyprof()
        .arg("report")
        .arg(&root)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let row = |id: &str| {
        let at = html
            .find(&format!("data-job=\"{id}\""))
            .unwrap_or_else(|| panic!("no row of {id}"));
        let end = html[at..].find("</tr>").unwrap();
        html[at..at + end].to_string()
    };
    let broken = row("broken");
    // The kind (state and outcome), then the tail collapsed, its markup escaped.
    assert!(broken.contains(">failed<"), "{broken}");
    assert!(broken.contains("exited with code 3"), "{broken}");
    let details = broken
        .find("<details class=\"stderr-tail\">")
        .expect("a collapsed tail in the failed job's row");
    assert!(
        broken[details..].contains("preparing\nthe solver &lt;diverged&gt; at step 7"),
        "{broken}"
    );
    // A job that succeeded has no tail.
    assert!(!row("fine").contains("<details"), "{}", row("fine"));
}
