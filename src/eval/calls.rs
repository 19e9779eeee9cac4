//! Where each witnessed launch happened, read from the launching thread's open ranges: in call
//! K (`polyprof/call/K`), in the export of call K's outputs (`polyprof/export/K`), in the
//! worker's own work (`polyprof/setup`, `warmup`, `timing`, `poison…`), or outside all of them.
//!
//! The candidate runs in the worker's process and can push ranges too, so the reading does not
//! trust the range names alone:
//! - a launch from another thread than the worker's is outside whatever ranges it had open. The
//!   worker serves on its process's main thread, whose OS thread id is the process id; the
//!   candidate can name its ranges as it likes but cannot choose its thread ids (ncu gives the
//!   thread only inside a range, so this needs both ids);
//! - a launch under `polyprof/call/K` at any depth belongs to call K (a `polyprof/setup` pushed
//!   inside a call cannot hide the call's work);
//! - a setup or warmup launch after the process's first call is outside (the witness pass sets
//!   up and warms up once, before its calls, so a thread cannot dress its work as setup even
//!   where the profiler does not name threads).

use std::collections::BTreeMap;

use super::evidence::WitnessLaunch;

const PREFIX: &str = "polyprof/";
const CALL: &str = "polyprof/call/";
const EXPORT: &str = "polyprof/export/";

/// Where one launch ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    Call(u32),
    Export(u32),
    /// The worker's own work (the range's name).
    Worker(String),
    Outside(OutsideReason),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutsideReason {
    /// No polyprof range was open on the launching thread.
    NoRange,
    /// A `polyprof/…` range the worker never opens.
    UnknownRange(String),
    /// A setup or warmup range after the calls began.
    WorkerRangeAfterCalls(String),
    /// Launched from a thread that is not the worker's (`thread`, in process `process`).
    OtherThread { thread: u64, process: u32 },
}

impl OutsideReason {
    pub fn describe(&self) -> String {
        match self {
            OutsideReason::NoRange => "no polyprof range".to_string(),
            OutsideReason::UnknownRange(name) => format!("unknown range `{name}`"),
            OutsideReason::WorkerRangeAfterCalls(name) => {
                format!("`{name}` after the calls began")
            }
            OutsideReason::OtherThread { thread, process } => {
                format!("thread {thread}, not the worker's (process {process})")
            }
        }
    }
}

/// A range's name without its domain (`domain@polyprof/call/3` → `polyprof/call/3`).
pub fn range_name(range: &str) -> &str {
    range
        .rsplit_once('@')
        .map_or(range, |(_, name)| name)
        .trim()
}

/// Where `launch` ran by its thread and ranges (before the order of launches is considered).
pub fn launch_placement(launch: &WitnessLaunch) -> Placement {
    if let (Some(thread), Some(process)) = (launch.thread_id, launch.process_id)
        && thread != u64::from(process)
    {
        return Placement::Outside(OutsideReason::OtherThread { thread, process });
    }
    let names: Vec<&str> = launch.ranges.iter().map(|r| range_name(r)).collect();
    let numbered = |prefix: &str| {
        names
            .iter()
            .rev()
            .find_map(|name| name.strip_prefix(prefix)?.parse::<u32>().ok())
    };
    if let Some(call) = numbered(CALL) {
        return Placement::Call(call);
    }
    if let Some(call) = numbered(EXPORT) {
        return Placement::Export(call);
    }
    match names.iter().rev().find(|name| name.starts_with(PREFIX)) {
        None => Placement::Outside(OutsideReason::NoRange),
        Some(name) if is_worker_range(name) => Placement::Worker(name.to_string()),
        Some(name) => Placement::Outside(OutsideReason::UnknownRange(name.to_string())),
    }
}

fn is_worker_range(name: &str) -> bool {
    matches!(
        name,
        "polyprof/setup" | "polyprof/warmup" | "polyprof/timing"
    ) || name.starts_with("polyprof/poison")
}

/// Ranges the witness pass opens only before its first call.
fn is_before_calls_range(name: &str) -> bool {
    matches!(name, "polyprof/setup" | "polyprof/warmup")
}

/// The witness's launches sorted by where they ran.
#[derive(Debug, Default)]
pub struct PlacedLaunches<'a> {
    /// Every witnessed call (those of the witness trials, with or without launches, and any
    /// other call a range names), its launches in launch order.
    pub calls: BTreeMap<u32, Vec<&'a WitnessLaunch>>,
    pub exports: BTreeMap<u32, Vec<&'a WitnessLaunch>>,
    pub outside: Vec<(&'a WitnessLaunch, OutsideReason)>,
}

impl PlacedLaunches<'_> {
    /// Every launch in a call.
    pub fn call_launches(&self) -> impl Iterator<Item = &WitnessLaunch> {
        self.calls.values().flatten().copied()
    }
}

/// Place every launch; `witness_trials` are the calls the witness made (a call that launched
/// nothing is still a call).
pub fn place_launches<'a>(
    launches: &'a [WitnessLaunch],
    witness_trials: &[u32],
) -> PlacedLaunches<'a> {
    let mut placed = PlacedLaunches::default();
    for &trial in witness_trials {
        placed.calls.entry(trial).or_default();
    }
    let mut sorted: Vec<&WitnessLaunch> = launches.iter().collect();
    sorted.sort_by_key(|l| (l.process_id, l.launch_id));
    // The first call launch of each process: worker setup after it is no setup.
    let mut first_call: BTreeMap<Option<u32>, u64> = BTreeMap::new();
    for launch in &sorted {
        if let Placement::Call(_) = launch_placement(launch) {
            first_call
                .entry(launch.process_id)
                .or_insert(launch.launch_id);
        }
    }
    for launch in sorted {
        match launch_placement(launch) {
            Placement::Call(call) => placed.calls.entry(call).or_default().push(launch),
            Placement::Export(call) => placed.exports.entry(call).or_default().push(launch),
            Placement::Worker(name) => {
                let after_calls = first_call
                    .get(&launch.process_id)
                    .is_some_and(|&first| launch.launch_id > first);
                if after_calls && is_before_calls_range(&name) {
                    placed
                        .outside
                        .push((launch, OutsideReason::WorkerRangeAfterCalls(name)));
                }
            }
            Placement::Outside(reason) => placed.outside.push((launch, reason)),
        }
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::test_support::launch;

    #[test]
    fn ranges_place_launches() {
        let place = |ranges: &[&str]| launch_placement(&launch(0, "k", ranges, 1.0));
        assert_eq!(place(&["polyprof/call/3"]), Placement::Call(3));
        assert_eq!(
            place(&["<default domain>@polyprof/call/7"]),
            Placement::Call(7)
        );
        assert_eq!(place(&["polyprof/export/3"]), Placement::Export(3));
        assert_eq!(
            place(&["polyprof/poison/out0"]),
            Placement::Worker("polyprof/poison/out0".into())
        );
        assert_eq!(place(&[]), Placement::Outside(OutsideReason::NoRange));
        assert_eq!(
            place(&["my_range"]),
            Placement::Outside(OutsideReason::NoRange)
        );
        assert_eq!(
            place(&["polyprof/other"]),
            Placement::Outside(OutsideReason::UnknownRange("polyprof/other".into()))
        );
        // The candidate's own ranges inside a call do not move the call's work.
        assert_eq!(
            place(&["polyprof/call/2", "mine", "polyprof/setup"]),
            Placement::Call(2)
        );
        // A harness range pushed on another thread is the candidate's.
        let mut foreign = launch(0, "k", &["polyprof/call/1"], 1.0);
        foreign.thread_id = Some(576);
        assert_eq!(
            launch_placement(&foreign),
            Placement::Outside(OutsideReason::OtherThread {
                thread: 576,
                process: 575
            })
        );
        assert_eq!(
            place(&["polyprof/call/x"]),
            Placement::Outside(OutsideReason::UnknownRange("polyprof/call/x".into()))
        );
    }

    #[test]
    fn setup_after_the_first_call_is_outside_and_empty_calls_are_kept() {
        let launches = vec![
            launch(0, "init", &["polyprof/setup"], 1.0),
            launch(1, "k", &["polyprof/call/0"], 1.0),
            launch(2, "fill", &["polyprof/poison"], 1.0),
            launch(3, "hidden", &["polyprof/setup"], 1.0),
            launch(4, "copy", &["polyprof/export/0"], 1.0),
            launch(5, "bg", &[], 1.0),
        ];
        let placed = place_launches(&launches, &[0, 1]);
        assert_eq!(placed.calls[&0].len(), 1);
        assert!(placed.calls[&1].is_empty());
        assert_eq!(placed.exports[&0][0].launch_id, 4);
        let outside: Vec<(u64, String)> = placed
            .outside
            .iter()
            .map(|(l, r)| (l.launch_id, r.describe()))
            .collect();
        assert_eq!(
            outside,
            [
                (3, "`polyprof/setup` after the calls began".to_string()),
                (5, "no polyprof range".to_string()),
            ]
        );
    }
}
