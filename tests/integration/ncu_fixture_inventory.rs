//! Every fixture file is exercised: by an ncu test here, or (workload sources) by the live GPU
//! lane. A new fixture without a user fails this test.

use std::path::Path;

fn files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.file_name().unwrap() != "README.md" {
            out.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
}

#[test]
fn every_ncu_fixture_is_used() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut users = String::new();
    for entry in std::fs::read_dir(root.join("tests/integration")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("ncu_") && name.ends_with(".rs") && name != "ncu_fixture_inventory.rs" {
            users.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    users.push_str(&std::fs::read_to_string(root.join("scripts/gpu-lane.sh")).unwrap());
    let mut names = Vec::new();
    files(&root.join("tests/fixtures/ncu-h200"), &mut names);
    files(&root.join("tests/fixtures/ncu-cc120"), &mut names);
    files(&root.join("tests/fixtures/ncu-h200-names"), &mut names);
    files(&root.join("tests/fixtures/ncu-h200-nvtx"), &mut names);
    assert!(names.len() >= 35, "{}", names.len());
    let unused: Vec<&String> = names
        .iter()
        .filter(|n| !users.contains(n.as_str()))
        .collect();
    assert!(unused.is_empty(), "fixtures no test uses: {unused:?}");
}
