//! A real witness capture: ncu 2025.3.1 on an H200 with `--nvtx`, around a stand-in for the
//! candidate worker whose background thread launches a kernel while the main thread is inside
//! `polyprof/call/1` (tests/fixtures/ncu-h200-nvtx: nvtx.log, made by nvtx_probe.py).
//! The launches and their ranges are read from the CSV here (until the ncu parser fills
//! `KernelRecord.ranges`), and the audit must place the thread's kernel outside every call.

use polyprof::eval::evidence::{
    EvalEvidence, TrialEvidence, TrialPhase, WitnessEvidence, WitnessLaunch,
};
use polyprof::eval::verdict::FindingKind;
use polyprof::model::record::short_kernel_name;
use polyprof::profilers::ncu::names::demangle;

use crate::support::fixture;

const RANGE_COLUMN: &str =
    "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg";

/// `575  "<default domain>:polyprof/call/0:none:none:none:none:none:none" ` → the thread id and
/// the open ranges as `domain@name` (each quoted entry is `domain:name` and six payload and
/// colour fields).
fn thread_and_ranges(cell: &str) -> (Option<u64>, Vec<String>) {
    let thread = cell.split_whitespace().next().and_then(|t| t.parse().ok());
    let ranges = cell
        .split('"')
        .skip(1)
        .step_by(2)
        .filter_map(|entry| {
            let head = entry.rsplitn(7, ':').last()?;
            let (domain, name) = head.split_once(':')?;
            Some(format!("{domain}@{name}"))
        })
        .collect();
    (thread, ranges)
}

fn launches() -> Vec<WitnessLaunch> {
    let text = std::fs::read_to_string(fixture("ncu-h200-nvtx/nvtx.log")).unwrap();
    let csv_text: String = text
        .lines()
        .filter(|line| !line.starts_with("=="))
        .map(|line| format!("{line}\n"))
        .collect();
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (id, pid, range, kernel, stream, duration) = (
        column("ID"),
        column("Process ID"),
        column(RANGE_COLUMN),
        column("Kernel Name"),
        column("Stream"),
        column("gpu__time_duration.sum"),
    );
    reader
        .records()
        .map(Result::unwrap)
        .filter(|row| !row[id].is_empty()) // the units row
        .map(|row| {
            let mangled = &row[kernel];
            let name = demangle(mangled).unwrap_or_else(|| mangled.to_string());
            let (thread_id, ranges) = thread_and_ranges(&row[range]);
            WitnessLaunch {
                launch_id: row[id].parse().unwrap(),
                short_name: short_kernel_name(&name),
                name,
                duration_ns: Some(row[duration].replace(',', "").parse().unwrap()),
                ranges,
                thread_id,
                stream: Some(row[stream].to_string()),
                process_id: Some(row[pid].parse().unwrap()),
                counters: None,
            }
        })
        .collect()
}

#[test]
fn the_csv_gives_each_launch_its_threads_ranges() {
    let launches = launches();
    let by_id: Vec<(u64, Option<u64>, Vec<String>)> = launches
        .iter()
        .map(|l| (l.launch_id, l.thread_id, l.ranges.clone()))
        .collect();
    let range = |name: &str| vec![format!("<default domain>@{name}")];
    // The main thread's id is the process id (575); the background thread's launch has neither
    // a range nor a thread.
    assert_eq!(
        by_id,
        [
            (0, None, vec![]),
            (1, Some(575), range("polyprof/setup")),
            (2, Some(575), range("polyprof/call/0")),
            (3, None, vec![]),
            (4, Some(575), range("polyprof/call/1")),
            (5, None, vec![]),
        ]
    );
    assert!(launches.iter().all(|l| l.process_id == Some(575)));
    assert!(
        launches[3].short_name.contains("CUDAFunctorOnSelf_add"),
        "{}",
        launches[3].short_name
    );
    assert_eq!(launches[2].duration_ns, Some(4064.0));
}

#[test]
fn the_background_threads_kernel_is_outside_the_calls() {
    let honest = std::fs::read_to_string(fixture("eval/honest/evidence.json")).unwrap();
    let mut evidence: EvalEvidence = serde_json::from_str(&honest).unwrap();
    let witness_trial = |index: u32| TrialEvidence {
        phase: TrialPhase::Witness,
        index,
        ..evidence.trials[0].clone()
    };
    let witness_trials = [witness_trial(0), witness_trial(1)];
    evidence.trials.retain(|t| t.phase != TrialPhase::Witness);
    evidence.trials.extend(witness_trials);
    evidence.candidate_kernels.clear();
    evidence.witness = Some(WitnessEvidence {
        profiler: "ncu".into(),
        run_dir: "witness.000".into(),
        clock_control: Some("none".into()),
        cache_control: None,
        launches: launches(),
        error: None,
    });
    let verdict = polyprof::eval::judge(&evidence);

    let witness = verdict.witness.as_ref().unwrap();
    // Each call launched one clamp kernel (torch.relu): 4,064 and 4,192 ns.
    assert_eq!(witness.per_call_ms, [0.004064, 0.004192]);
    assert_eq!(witness.launches_outside_calls, 3);
    let outside: Vec<_> = verdict
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::KernelsOutsideCalls)
        .collect();
    assert_eq!(outside.len(), 1, "{:#?}", verdict.findings);
    let ids = &outside[0].evidence["launch_ids"];
    // The import-time randn, the background thread's add, and the sum after the calls.
    assert_eq!(ids, &serde_json::json!([0, 3, 5]));
    let names = outside[0].evidence["names"].as_array().unwrap();
    assert!(
        names
            .iter()
            .any(|n| n.as_str().unwrap().contains("CUDAFunctorOnSelf_add")),
        "{names:?}"
    );
    // Both calls ran the same kernel, and nothing ran in an export.
    assert!(
        verdict
            .findings
            .iter()
            .all(|f| matches!(f.kind, FindingKind::KernelsOutsideCalls)),
        "{:#?}",
        verdict.findings
    );
    assert!(!verdict.passed);
}
