//! Property tests for the rocprofv3 parsers: arbitrary bytes never panic, and a real file cut
//! anywhere keeps exactly its whole rows (never more, never a made-up one).

use polyprof::profilers::rocprofv3::parse_files;
use proptest::prelude::*;

const TRACE: &[u8] = include_bytes!("../fixtures/rocprofv3/kernel_trace.csv");
const COUNTERS: &[u8] = include_bytes!("../fixtures/rocprofv3/counter_collection.csv");
const SUMMARY: &[u8] = include_bytes!("../fixtures/rocprofv3/summary.txt");

const NAMES: &[&str] = &[
    "1_kernel_trace.csv",
    "1_memory_copy_trace.csv",
    "1_counter_collection.csv",
    "1_agent_info.csv",
    "1_kernel_stats.csv",
    "summary.txt",
];

/// Rows whose line ends before `cut` (the header is line 1).
fn whole_rows(bytes: &[u8], cut: usize) -> usize {
    bytes[..cut]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        .saturating_sub(1)
}

/// Commas outside quoted fields.
fn separators(line: &[u8]) -> usize {
    let mut quoted = false;
    let mut count = 0;
    for byte in line {
        match byte {
            b'"' => quoted = !quoted,
            b',' if !quoted => count += 1,
            _ => {}
        }
    }
    count
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600), which in 0..NAMES.len()) {
        let out = parse_files(&[(NAMES[which], &bytes, false)]);
        prop_assert!(out.parsed.kernels.len() <= bytes.len());
    }

    #[test]
    fn mangled_real_files_never_panic(cut in 0..TRACE.len(), flip in 0..TRACE.len(), byte in any::<u8>()) {
        let mut bytes = TRACE[..cut].to_vec();
        if flip < bytes.len() {
            bytes[flip] = byte;
        }
        let _ = parse_files(&[("1_kernel_trace.csv", &bytes, false)]);
        let _ = parse_files(&[("summary.txt", &SUMMARY[..cut.min(SUMMARY.len())], false)]);
    }

    #[test]
    fn a_cut_trace_keeps_exactly_its_whole_rows(cut in 0..=TRACE.len()) {
        let out = parse_files(&[("1_kernel_trace.csv", &TRACE[..cut], false)]);
        let kept = out.parsed.kernels.len();
        let whole = whole_rows(TRACE, cut);
        // A last row cut inside its final number still parses (the cut cannot be seen); every
        // other cut row is dropped.
        prop_assert!(kept == whole || kept == whole + 1, "cut {cut}: kept {kept}, whole {whole}");
        if kept == whole + 1 {
            let tail = &TRACE[..cut];
            let last_line = tail.rsplit(|b| *b == b'\n').next().unwrap_or_default();
            prop_assert_eq!(separators(last_line), 21, "a short row was kept at cut {}", cut);
        }
    }

    #[test]
    fn a_cut_counter_file_keeps_only_whole_dispatches(cut in 0..=COUNTERS.len()) {
        let out = parse_files(&[("1_counter_collection.csv", &COUNTERS[..cut], false)]);
        prop_assert!(out.parsed.kernels.len() <= whole_rows(COUNTERS, cut) + 1);
        for kernel in &out.parsed.kernels {
            prop_assert!(!kernel.name.is_empty());
        }
    }
}
