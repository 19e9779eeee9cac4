//! Benchmark for the results half (run by scripts/bench-report.sh, in release mode). Prints
//! ratios measured side by side in this one run; asserts nothing.
//!
//! 1. The cost of `scope()` / `record_kernel()` with NO session active, against an empty loop
//!    iteration (the "near-zero when inactive" promise), and with a session active.
//! 2. Export time per format for a large run, against writing the same run as run.json.

use std::hint::black_box;
use std::time::Instant;

use polyprof::results::callpath::{KernelLaunch, Session, record_kernel, scope};
use polyprof::results::export::{self, Format, Report};
use polyprof::results::{FlopCounts, GroupBy, KernelRecord, ProfileRun};

/// Best of `rounds` timings of `f`, ns per iteration.
fn best_ns_per_iter(rounds: usize, iters: u64, mut f: impl FnMut(u64)) -> f64 {
    (0..rounds)
        .map(|_| {
            let start = Instant::now();
            f(iters);
            start.elapsed().as_nanos() as f64 / iters as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn scope_overhead() {
    let iters = 20_000_000;
    // Interleaved rounds, best of each: the machine is shared and noisy.
    let (mut empty, mut inactive_scope, mut inactive_kernel) =
        (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    for _ in 0..7 {
        empty = empty.min(best_ns_per_iter(1, iters, |n| {
            for i in 0..n {
                black_box(i);
            }
        }));
        inactive_scope = inactive_scope.min(best_ns_per_iter(1, iters, |n| {
            for i in 0..n {
                let guard = scope("step", &[("flops32", 1.0)]);
                black_box(i);
                drop(black_box(guard));
            }
        }));
        inactive_kernel = inactive_kernel.min(best_ns_per_iter(1, iters, |n| {
            for i in 0..n {
                record_kernel(|| KernelLaunch {
                    name: "k".into(),
                    ..Default::default()
                });
                black_box(i);
            }
        }));
    }
    println!("inactive (no session):");
    println!("  empty loop iteration      {empty:8.3} ns");
    println!(
        "  scope() + drop            {inactive_scope:8.3} ns  ratio {:.2}x the empty iteration, +{:.3} ns",
        inactive_scope / empty,
        inactive_scope - empty
    );
    println!(
        "  record_kernel()           {inactive_kernel:8.3} ns  ratio {:.2}x the empty iteration, +{:.3} ns",
        inactive_kernel / empty,
        inactive_kernel - empty
    );

    // A fresh session per round so that page faults of a growing event list do not dominate.
    let active_iters = 200_000;
    let mut events = 0;
    let active_scope = (0..3)
        .map(|_| {
            let session = Session::start("bench").unwrap();
            let start = Instant::now();
            for i in 0..active_iters {
                let guard = scope("step", &[("flops32", 1.0)]);
                black_box(i);
                drop(guard);
            }
            let ns = start.elapsed().as_nanos() as f64 / active_iters as f64;
            events = session.finish().events.len();
            ns
        })
        .fold(f64::INFINITY, f64::min);
    println!(
        "active session: scope() + drop {active_scope:.1} ns ({events} events per round, {} bytes per event + heap); inactive is {:.4} of active",
        std::mem::size_of::<polyprof::results::callpath::Event>(),
        inactive_scope / active_scope
    );
}

fn big_run(records: usize) -> ProfileRun {
    let mut run = ProfileRun::new("ncu.000", "ncu", &["./app".into()], "out".as_ref());
    run.device = Some(polyprof::model::run::DeviceInfo {
        name: "NVIDIA H200".into(),
        ..Default::default()
    });
    for id in 0..records {
        let name = format!("kernel_{}", id % 20);
        run.kernels.push(KernelRecord {
            profiler: "ncu".into(),
            process_id: Some(1000 + (id % 2) as u32),
            process_name: Some("app".into()),
            launch_id: id as u64,
            short_name: name.clone(),
            name: format!("void {name}(float *, int)"),
            stream: Some(format!("{}", 7 + id % 2)),
            duration_ns: Some(10_000.0 + (id % 97) as f64 * 100.0),
            calls: 1,
            dram_bytes: Some(1e7),
            flops: FlopCounts {
                fp32: Some(1e8),
                ..Default::default()
            },
            ..Default::default()
        });
    }
    run
}

fn best_ms(rounds: usize, mut f: impl FnMut()) -> f64 {
    (0..rounds)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn export_speed() {
    let records = 100_000;
    let run = big_run(records);
    let peaks = polyprof::results::devices::DeviceTable::builtin()
        .unwrap()
        .lookup("NVIDIA H200")
        .cloned();
    let dir = tempfile::tempdir().unwrap();
    let baseline = best_ms(3, || {
        run.write(dir.path()).unwrap();
    });
    println!(
        "exports of a {records}-record run (best of 3), against writing run.json ({baseline:.1} ms):"
    );
    let report = Report::from_run(run.clone(), peaks);
    let aggregate = best_ms(3, || {
        black_box(report.profile.key_averages(GroupBy::CallPath));
    });
    println!(
        "  key_averages(call_path) {aggregate:8.1} ms  ratio {:.2}",
        aggregate / baseline
    );
    for format in [
        Format::Table,
        Format::Json,
        Format::Csv,
        Format::Hatchet,
        Format::Chrome,
    ] {
        let mut size = 0;
        let ms = best_ms(3, || {
            size = export::render(&report, format).unwrap().len();
        });
        println!(
            "  {:<8} {ms:8.1} ms  ratio {:.2}  {:.1} MB",
            format!("{format:?}").to_lowercase(),
            ms / baseline,
            size as f64 / 1e6
        );
    }
}

fn main() {
    // `bench_report scope` or `bench_report export` runs one part (for profiling).
    let only = std::env::args().nth(1);
    if only.as_deref() != Some("export") {
        scope_overhead();
    }
    if only.as_deref() != Some("scope") {
        export_speed();
    }
}
