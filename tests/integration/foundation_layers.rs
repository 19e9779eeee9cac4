//! `scripts/check-layers.sh` on a copy of the tree: clean as it is, and failing, each saying
//! where, on a planted import circle through a mod.rs that defines items (the shape of the
//! job → profile_once → calibrate → measure → job circle it once missed) and on a planted
//! `pipeline → profilers::ncu` import, and on a vendor tool (`nvidia-smi`, `nvcc`) named in a
//! pipeline string.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A copy of src/ (the script reads nothing else) in a fresh folder.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("src"), &dir.path().join("src"));
    dir
}

fn check(root: &Path) -> Output {
    Command::new(repo().join("scripts/check-layers.sh"))
        .arg(root)
        .output()
        .unwrap()
}

fn append(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    let mut source = std::fs::read_to_string(&path).unwrap();
    source.push_str(text);
    std::fs::write(path, source).unwrap();
}

#[test]
fn the_real_tree_passes() {
    let out = check(&repo());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("layering and file graph clean"),
        "{stderr}"
    );
}

#[test]
fn a_circle_through_a_mod_rs_that_defines_items_fails() {
    let root = tree();
    // calibrate/mod.rs defines items and uses measure.rs, which uses job.rs, which uses
    // profile_once.rs: naming calibrate's own item from profile_once.rs closes the circle.
    append(
        root.path(),
        "src/pipeline/profile_once.rs",
        "\npub const PLANTED: &str = crate::pipeline::calibrate::PLAN_FILE;\n",
    );
    let out = check(root.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let circle = stderr
        .lines()
        .find(|l| l.contains("file circle"))
        .unwrap_or_else(|| panic!("no circle reported: {stderr}"));
    for file in [
        "src/pipeline/profile_once.rs",
        "src/pipeline/calibrate/mod.rs",
        "src/pipeline/calibrate/measure.rs",
        "src/pipeline/job.rs",
    ] {
        assert!(circle.contains(file), "{file} not in {circle}");
    }
}

#[test]
fn the_pipeline_naming_a_vendor_backend_fails_unless_only_its_tests_do() {
    let root = tree();
    let test_only = "\n#[cfg(test)]\nmod planted_tests {\n    #[test]\n    fn planted() {\n        \
                     assert!(!crate::profilers::ncu::options::DURATION.is_empty());\n    }\n}\n";
    append(root.path(), "src/pipeline/job.rs", test_only);
    let out = check(root.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for planted in [
        "\npub const PLANTED: &str = crate::profilers::ncu::options::DURATION;\n",
        "\npub use crate::profilers::ncu::options::DURATION as PLANTED_AGAIN;\n",
    ] {
        let root = tree();
        append(root.path(), "src/pipeline/job.rs", planted);
        let out = check(root.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{planted}: {stderr}");
        assert!(
            stderr.contains(
                "src/pipeline/job.rs: the pipeline names the vendor backend \
                 `crate::profilers::ncu::options::DURATION`"
            ),
            "{stderr}"
        );
    }
}

#[test]
fn the_pipeline_running_a_vendor_tool_by_name_fails_unless_only_its_tests_do() {
    let root = tree();
    let test_only = "\n#[cfg(test)]\nmod planted_tests {\n    #[test]\n    fn planted() {\n        \
                     assert!(which::which(\"nvidia-smi\").is_ok() || true);\n    }\n}\n";
    append(root.path(), "src/pipeline/job.rs", test_only);
    let out = check(root.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (planted, tool) in [
        (
            "\npub fn planted() -> Option<std::path::PathBuf> { which::which(\"nvidia-smi\").ok() }\n",
            "nvidia-smi",
        ),
        (
            "\npub const PLANTED: &str = \"/usr/local/cuda/bin/nvcc\";\n",
            "nvcc",
        ),
    ] {
        let root = tree();
        append(root.path(), "src/pipeline/job.rs", planted);
        let out = check(root.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{planted}: {stderr}");
        assert!(
            stderr.contains(&format!("the pipeline names the vendor tool `{tool}`")),
            "{stderr}"
        );
    }
}
