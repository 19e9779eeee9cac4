//! A batch from Rust: three jobs on two CPU slots into a batch root, then its index, as
//! `polyprof batch` runs a job file: `cargo run --example batch_from_rust -- ROOT` (ROOT must
//! not hold a batch yet). One job fails on purpose; the batch goes on.

use polyprof::pipeline::batch::devices::DeviceChoice;
use polyprof::pipeline::batch::pool::PoolOptions;
use polyprof::pipeline::batch::{BatchOptions, JobSpec, run_batch};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "polyprof-runs/example-batch".to_string());
    let specs = vec![
        JobSpec::new("hello", vec!["echo".into(), "hello".into()]),
        JobSpec::new("sleepy", vec!["sleep".into(), "0.2".into()]),
        JobSpec::new("broken", vec!["sh".into(), "-c".into(), "exit 3".into()]),
    ];
    let options = BatchOptions {
        devices: DeviceChoice::Cpu,
        jobs: Some(2),
        job_file: "examples/batch_from_rust.rs".into(),
        ..Default::default()
    };
    let pool = PoolOptions::default();
    let index = run_batch(&specs, root.as_ref(), &options, &pool).await?;
    for entry in index.order.iter().filter_map(|id| index.jobs.get(id)) {
        println!("{}: {} in {}", entry.id, entry.state, entry.run_dir);
    }
    println!("index: {root}/batch.json");
    Ok(())
}
