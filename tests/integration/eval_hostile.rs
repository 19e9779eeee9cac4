//! Hostile candidates that reach for the verdict's inputs (tests/programs/eval/hostile.py,
//! copied as `hostile_<attack>.py`): each must end not passed, exit 1, with a failure naming
//! what it did, nothing of the eval left running, and — with the sandbox on — the harness, the
//! reference, a fake `~/.cache/polyprof` and the candidate's folder byte-for-byte unchanged.
//! The same candidates with `--sandbox off` still end judged, and the verdict says the
//! candidate was not confined.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use polyprof::eval::evidence::FailureKind;
use polyprof::eval::verdict::Status;

use crate::support::assert_exit;
use crate::support::eval::{documents, problem, python_with_numpy};

/// Every file beneath `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

/// Processes whose command line mentions `dir` (the eval's workers, their supervisors).
fn running_under(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle))
        .collect()
}

struct Hostile {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    eval: PathBuf,
    out: std::process::Output,
    /// The candidate's, the reference's and the fake home's files before the eval.
    before: BTreeMap<PathBuf, Vec<u8>>,
    listener: std::net::TcpListener,
}

fn run(python: &Path, attack: &str, sandbox: &str) -> Hostile {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    for folder in ["src", "home/.cache/polyprof", "pp"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    std::fs::write(
        root.join("home/.cache/polyprof/profile.json"),
        "{\"kept\": 1}",
    )
    .unwrap();
    std::fs::copy(problem("reference.py"), root.join("src/reference.py")).unwrap();
    let candidate = root.join("src").join(format!("hostile_{attack}.py"));
    std::fs::copy(problem("hostile.py"), &candidate).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(root.join("src/port"), port.to_string()).unwrap();
    let mut before = snapshot(&root.join("src"));
    before.extend(snapshot(&root.join("home")));
    let eval = root.join("eval");
    let out = crate::support::polyprof()
        .args(["eval", "--device", "cpu", "--trials", "2", "--blocks", "1"])
        .args(["--repeat", "2", "--warmup", "1"])
        // Short, so the stopped trusted worker's silence is seen soon; a 1 GiB answer takes
        // seconds to build on a loaded machine.
        .args(["--timeout", if attack == "flood" { "60" } else { "5" }])
        .args(["--sandbox", sandbox])
        .arg("--python")
        .arg(python)
        .arg("--reference")
        .arg(root.join("src/reference.py"))
        .arg("--candidate")
        .arg(&candidate)
        .arg("--output-dir")
        .arg(&eval)
        .env("HOME", root.join("home"))
        .env("XDG_CACHE_HOME", root.join("home/.cache"))
        .env("PYTHONPATH", root.join("pp"))
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    Hostile {
        _tmp: tmp,
        root,
        eval,
        out,
        before,
        listener,
    }
}

const ATTACKS: [&str; 10] = [
    "shadow", "rewrite", "cache", "plant", "chmod", "kill", "stop", "flood", "home", "network",
];

/// The harness scripts as polyprof ships them.
fn shipped_harness() -> BTreeMap<String, Vec<u8>> {
    ["polyprof_eval_worker.py", "polyprof_timing.py"]
        .iter()
        .map(|name| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("python/polyprof/harness")
                .join(name);
            (name.to_string(), std::fs::read(path).unwrap())
        })
        .collect()
}

fn harness_now(eval: &Path) -> BTreeMap<String, Vec<u8>> {
    snapshot(&eval.join("harness"))
        .into_iter()
        .map(|(p, b)| (p.file_name().unwrap().to_string_lossy().into_owned(), b))
        .collect()
}

fn judged(h: &Hostile, attack: &str) -> polyprof::eval::EvalVerdict {
    let stdout = String::from_utf8_lossy(&h.out.stdout);
    assert_exit(&h.out, 1);
    let (evidence, verdict) = documents(&h.eval);
    assert!(!verdict.passed, "{attack}: {stdout}");
    assert_ne!(verdict.status, Status::Correct, "{attack}: {stdout}");
    if let Some(failure) = &verdict.failure {
        assert!(
            !matches!(
                failure.kind,
                FailureKind::Harness | FailureKind::ReferenceError
            ),
            "{attack}: the candidate's doing was read as the eval's own failure: {failure:?}"
        );
    }
    assert_eq!(evidence.failure, verdict.failure);
    assert!(
        running_under(&h.root).is_empty(),
        "{attack}: left running: {:?}",
        running_under(&h.root)
    );
    verdict
}

#[test]
fn hostile_candidates_are_refused_by_the_sandbox_and_judged() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    if polyprof::pipeline::sandbox::landlock_abi().is_none_or(|abi| abi < 6) {
        crate::support::skip(
            "hostile_candidates_are_refused_by_the_sandbox_and_judged",
            "this kernel has no Landlock ABI 6 (scoped signals and sockets)",
        );
        return;
    }
    for attack in ATTACKS {
        let h = run(&python, attack, "on");
        let verdict = judged(&h, attack);
        let stdout = String::from_utf8_lossy(&h.out.stdout);
        assert!(!stdout.contains("NOT CONFINED"), "{attack}: {stdout}");
        assert!(verdict.checks.iter().any(|c| c.check == "sandbox" && c.ran));
        let failure = verdict.failure.as_ref().map(|f| f.message.clone());
        let failure = failure.unwrap_or_default();
        // The refusal is the candidate's failure, by name.
        match attack {
            "flood" => assert!(failure.contains("flooded"), "{attack}: {failure}"),
            // Not refused (Landlock has no right for it), but seen, judged and put back.
            "chmod" => assert!(failure.contains("the mode of"), "{attack}: {failure}"),
            "shadow" | "rewrite" | "cache" | "plant" | "home" | "network" => assert!(
                failure.contains("PermissionError") && failure.contains("Permission denied"),
                "{attack}: {failure}"
            ),
            "kill" | "stop" => assert!(
                failure.contains("PermissionError") && failure.contains("Operation not permitted"),
                "{attack}: {failure}"
            ),
            _ => unreachable!(),
        }
        let mut after = snapshot(&h.root.join("src"));
        after.extend(snapshot(&h.root.join("home")));
        assert_eq!(after, h.before, "{attack}: files changed");
        assert_eq!(harness_now(&h.eval), shipped_harness(), "{attack}");
        assert!(
            std::fs::read_dir(h.root.join("pp"))
                .unwrap()
                .next()
                .is_none()
        );
        assert!(
            h.listener.accept().is_err(),
            "{attack}: a connection arrived"
        );
    }
}

#[test]
fn hostile_candidates_unconfined_are_judged_and_the_verdict_says_not_confined() {
    let Some(python) = python_with_numpy() else {
        return;
    };
    for attack in ATTACKS {
        let h = run(&python, attack, "off");
        let verdict = judged(&h, attack);
        let stdout = String::from_utf8_lossy(&h.out.stdout);
        assert!(stdout.contains("NOT CONFINED"), "{attack}: {stdout}");
        let check = verdict
            .checks
            .iter()
            .find(|c| c.check == "sandbox")
            .unwrap();
        assert!(!check.ran, "{attack}");
        assert!(
            check
                .why_not
                .as_deref()
                .unwrap_or("")
                .contains("not confined"),
            "{check:?}"
        );
        let failure = verdict.failure.clone();
        match attack {
            "shadow" => {
                // The planted module is named, and the checker refused the torch-labelled output.
                let f = failure.expect("shadow: failed");
                assert_eq!(f.kind, FailureKind::Interfered, "{f:?}");
                assert!(
                    f.message
                        .contains("torch.py was placed in the harness folder")
                        && f.message.contains("framework 'torch'"),
                    "{}",
                    f.message
                );
            }
            "rewrite" | "plant" | "chmod" | "kill" | "stop" => {
                let f = failure.unwrap_or_else(|| panic!("{attack}: failed"));
                assert_eq!(f.kind, FailureKind::Interfered, "{attack}: {f:?}");
            }
            "flood" => assert!(
                failure
                    .as_ref()
                    .is_some_and(|f| f.message.contains("flooded")),
                "{failure:?} {stdout}"
            ),
            // Unconfined, these writes and connections go through; the wrong answer is judged.
            _ => {}
        }
        // Whatever was planted, the documents are polyprof's.
        assert!(h.eval.join("evidence.json").is_file());
    }
}
