//! Batch jobs with a `container` image run their passes in containers of it (the Docker
//! Engine API), with the job's variables, side by side on the pool's slots.

use crate::support;

use polyprof::model::batch::EntryState;
use polyprof::results::ProfileRun;
use serde_json::json;
use support::batch::{batch, index, write_jobs};

#[test]
fn container_jobs_run_in_their_image_with_their_variables() {
    let image = support::container::image();
    let dir = tempfile::tempdir().unwrap();
    let file = write_jobs(
        dir.path(),
        &[
            json!({"id": "c1", "container": image, "env": {"KERNEL": "k1"},
                   "target": ["sh", "-c", "echo \"in=$KERNEL\"; test -f /.dockerenv"]}),
            json!({"id": "c2", "container": image, "target": ["sh", "-c", "exit 7"]}),
            json!({"id": "host", "target": ["true"]}),
        ],
    );
    let root = dir.path().join("out");
    batch(&file, &root)
        .args(["--devices", "cpu", "--jobs", "2", "-q"])
        .assert()
        .code(1);
    let index = index(&root);
    assert_eq!(
        index.jobs["c1"].state,
        EntryState::Succeeded,
        "{:?}",
        index.jobs["c1"].errors
    );
    assert_eq!(index.jobs["c2"].state, EntryState::Failed);
    assert_eq!(index.jobs["c2"].exit_code, Some(7));
    assert_eq!(index.jobs["host"].state, EntryState::Succeeded);
    let run = ProfileRun::read(&root.join("runs/c1")).unwrap();
    assert_eq!(
        run.container.as_ref().map(|c| c.image.as_str()),
        Some(image)
    );
    assert_eq!(run.steps[0].attempts[0].stdout.head, ["in=k1"]);
    let host = ProfileRun::read(&root.join("runs/host")).unwrap();
    assert!(
        host.container.is_none(),
        "a job without `container` runs on the host"
    );
}
