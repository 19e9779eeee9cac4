//! The witness's launches, taken from the normalized records of the witness run.

use crate::model::record::{KernelRecord, RecordKind};
use crate::model::verdict_metrics::{DRAM_CLOCK, SM_CLOCK};

use super::evidence::{LaunchCounters, WitnessLaunch};

/// Every kernel launch of `records` as witness evidence, in launch order (memory commands are
/// left out: the witness judges kernels).
pub fn launches_from_records(records: &[KernelRecord]) -> Vec<WitnessLaunch> {
    let mut launches: Vec<WitnessLaunch> = records
        .iter()
        .filter(|r| r.kind == RecordKind::Kernel)
        .map(|r| WitnessLaunch {
            launch_id: r.launch_id,
            name: r.name.clone(),
            short_name: r.short_name.clone(),
            duration_ns: r.duration_ns,
            ranges: r.ranges.clone(),
            thread_id: r.thread_id,
            stream: r.stream.clone(),
            process_id: r.process_id,
            counters: counters(r),
        })
        .collect();
    launches.sort_by_key(|l| (l.process_id, l.launch_id));
    launches
}

/// The work counters a record carries (a work pass's), or `None` when it carries none (a
/// witness pass's, duration only).
fn counters(record: &KernelRecord) -> Option<LaunchCounters> {
    let counters = LaunchCounters {
        dram_bytes_read: record.dram_bytes_read,
        dram_bytes_write: record.dram_bytes_write,
        flops: record.flops,
        sm_clock_hz: record.metric(SM_CLOCK),
        dram_clock_hz: record.metric(DRAM_CLOCK),
    };
    (counters != LaunchCounters::default()).then_some(counters)
}
