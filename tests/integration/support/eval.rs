//! Helpers of the eval tests: a Python that has numpy (the workers' problems are numpy ones
//! here), the problems under tests/programs/eval/, and `polyprof eval --device cpu`.

use std::path::{Path, PathBuf};
use std::process::Output;

use polyprof::eval::evidence::EvalEvidence;
use polyprof::eval::verdict::EvalVerdict;

/// `tests/programs/eval/<name>`.
pub fn problem(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs/eval")
        .join(name)
}

/// The Python the eval tests give the workers: `$POLYPROF_TEST_PYTHON`, else `python3` (as found
/// on PATH), when it imports numpy. Elsewhere `None` (the test says it is skipped); in CI (`CI` set) a
/// missing numpy fails the test instead: scripts/test.sh installs it.
pub fn python_with_numpy() -> Option<PathBuf> {
    let python = std::env::var_os("POLYPROF_TEST_PYTHON")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from);
    let has_numpy = std::process::Command::new(&python)
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_numpy {
        // As a path: a job sent elsewhere (a Ray actor, whose PATH leads with Ray's own
        // environment) would find another `python3` by the bare name.
        return Some(which::which(&python).unwrap_or(python));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} cannot import numpy, which the eval tests need (scripts/test.sh installs it; or set POLYPROF_TEST_PYTHON)",
        python.display()
    );
    super::record_skip(
        &super::this_test(),
        &format!(
            "{} cannot import numpy (pip install numpy, or set POLYPROF_TEST_PYTHON)",
            python.display()
        ),
    );
    None
}

/// `polyprof eval --device cpu` of `candidate` (a path) against `reference`, small and quick,
/// into `dir`, with `extra` arguments.
pub fn eval_cpu(
    python: &Path,
    reference: &Path,
    candidate: &Path,
    dir: &Path,
    extra: &[&str],
) -> Output {
    super::polyprof()
        .args(["eval", "--device", "cpu", "--trials", "3", "--blocks", "2"])
        .args(["--repeat", "3", "--warmup", "1"])
        .arg("--python")
        .arg(python)
        .arg("--reference")
        .arg(reference)
        .arg("--candidate")
        .arg(candidate)
        .arg("--output-dir")
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

/// An eval of one of the test problems against `reference.py`, in a directory of its own.
pub struct CpuEval {
    /// The directory the eval is in; removed when dropped (bind it, as `keep: _keep`).
    pub keep: tempfile::TempDir,
    pub dir: PathBuf,
    pub out: Output,
}

/// `polyprof eval --device cpu` of test problem `candidate` against `reference.py` (as
/// [`eval_cpu`]); `None` where no Python with numpy is found (never in CI).
pub fn eval_problem(candidate: &str, extra: &[&str]) -> Option<CpuEval> {
    let python = python_with_numpy()?;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("eval");
    let out = eval_cpu(
        &python,
        &problem("reference.py"),
        &problem(candidate),
        &dir,
        extra,
    );
    Some(CpuEval {
        keep: tmp,
        dir,
        out,
    })
}

/// Both documents of an eval directory, read and typed.
pub fn documents(dir: &Path) -> (EvalEvidence, EvalVerdict) {
    let read = |name: &str| {
        std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name} in {}: {e}", dir.display()))
    };
    (
        serde_json::from_slice(&read("evidence.json")).unwrap(),
        serde_json::from_slice(&read("verdict.json")).unwrap(),
    )
}

/// Whether the verdict comes from the real audit (the placeholder judges nothing: no checks).
pub fn audited(verdict: &EvalVerdict) -> bool {
    !verdict.checks.is_empty()
}
