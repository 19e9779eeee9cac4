//! Metal timings recorded into the call-path session land in key_averages and the tree like any
//! other lane's kernels. The GPU times are the per-call command-buffer pairs a Mac would give;
//! the Metal dispatch itself is macOS-only, the recording path is not.

use polyprof::metal::runtime::{benchmark_from_gpu_times, kernel_launches, record_launches};
use polyprof::results::{GroupBy, Session, scope};

#[test]
fn timed_calls_become_session_events() {
    let times = [(10.0, 10.002), (10.01, 10.011), (10.02, 10.023)];
    let session = Session::start("metal").unwrap();
    {
        let _step = scope("step", &[]);
        record_launches(kernel_launches(
            "saxpy",
            "Apple M1",
            [1024, 1, 1],
            [256, 1, 1],
            &times,
            Some(2048.0),
            Some(12288.0),
        ));
    }
    let profile = session.finish();
    let kernels: Vec<_> = profile
        .events
        .iter()
        .filter(|e| e.name() == "saxpy")
        .collect();
    assert_eq!(kernels.len(), 3);
    assert!((kernels[0].gpu_time_ns.unwrap() - 2e6).abs() < 1.0);
    assert!((kernels[1].gpu_start_ns.unwrap() - 1e7).abs() < 1.0);
    assert!(kernels[0].path_names().contains(&"step"));
    assert_eq!(kernels[0].bytes, Some(12288.0));

    let averages = profile.key_averages(GroupBy::Name);
    let text = format!("{averages:?}");
    assert!(text.contains("saxpy"), "{text}");

    // The benchmark from the same samples agrees on the median.
    let b = benchmark_from_gpu_times("saxpy", &times, Some(2048.0), Some(12288.0)).unwrap();
    assert!((b.stats.median - 2.0).abs() < 1e-6);
}

#[test]
fn without_a_session_nothing_is_recorded() {
    // No panic and no effect when no session is active.
    record_launches(kernel_launches(
        "k",
        "d",
        [1, 1, 1],
        [1, 1, 1],
        &[(1.0, 1.5)],
        None,
        None,
    ));
}
