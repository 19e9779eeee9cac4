//! From the files of one rocprofv3 pass to one [`ParsedOutput`], without I/O: each file is
//! recognised by its name, parsed on its own (a bad file costs only itself), and the parts are
//! joined: counters onto the traced dispatches, agents onto device names, copies and summaries
//! into session facts. With no trace the counter dispatches, and with neither the kernel
//! summaries, stand in as the kernel list.

use std::collections::BTreeMap;

use super::agent_info::{self, Agent};
use super::counters::{self, Layout};
use super::memory_copy::MemoryCopy;
use super::stats::{self, StatsRow};
use super::{NAME, kernel_trace, memory_copy};
use crate::model::error::Result;
use crate::model::parsed::NO_DATA;
use crate::model::record::KernelRecord;
use crate::model::run::DeviceInfo;
use crate::profilers::{Diagnostic, ParsedOutput, RawOutput, Severity};

/// What one file gave.
#[derive(Debug, Default)]
pub struct ParsedPart {
    pub kernels: Vec<KernelRecord>,
    /// Dispatches of a counter collection, counters in `metrics`.
    pub counter_records: Vec<KernelRecord>,
    pub copies: Vec<MemoryCopy>,
    pub stats: Vec<StatsRow>,
    pub agents: Vec<Agent>,
    pub diagnostics: Vec<Diagnostic>,
}

/// What a file is, by its name (`<prefix>_kernel_trace.csv`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    KernelTrace,
    MemoryCopyTrace,
    CounterCollection,
    AgentInfo,
    /// A `--stats` CSV, with its table name (`kernel_stats`, `hip_api_stats`, …).
    Stats(String),
    /// The `-S` text summary.
    Summary,
    /// Anything else rocprofv3 writes (JSON, pftrace, other traces): kept raw, not parsed.
    Other,
}

impl FileKind {
    pub fn of(name: &str) -> FileKind {
        let base = base_name(name).to_ascii_lowercase();
        let csv = base.ends_with(".csv");
        if csv && base.contains("kernel_trace") {
            FileKind::KernelTrace
        } else if csv && base.contains("memory_copy_trace") {
            FileKind::MemoryCopyTrace
        } else if csv && base.contains("counter_collection") {
            FileKind::CounterCollection
        } else if csv && base.contains("agent_info") {
            FileKind::AgentInfo
        } else if csv && base.contains("_stats") {
            FileKind::Stats(stats_table(&base))
        } else if base.ends_with(".txt") && base.contains("summary") {
            FileKind::Summary
        } else {
            FileKind::Other
        }
    }
}

impl FileKind {
    /// What a file is by its first line, for a file whose name says nothing (one named on the
    /// command line): the columns each rocprofv3 CSV has, or the `-S` summary's banner.
    pub fn sniff(bytes: &[u8]) -> FileKind {
        let head = &bytes[..bytes.len().min(64 * 1024)];
        let first = head.split(|b| *b == b'\n').next().unwrap_or_default();
        let first = String::from_utf8_lossy(first);
        let columns: Vec<&str> = first
            .split(',')
            .map(|c| c.trim().trim_matches('"'))
            .collect();
        let has = |name: &str| columns.contains(&name);
        if has("Counter_Name") && has("Dispatch_Id") {
            FileKind::CounterCollection
        } else if has("Kernel_Name") && has("Dispatch_Id") {
            FileKind::KernelTrace
        } else if has("Direction") && has("Start_Timestamp") {
            FileKind::MemoryCopyTrace
        } else if has("Agent_Type") && has("Node_Id") {
            FileKind::AgentInfo
        } else if has("Calls") && has("TotalDurationNs") {
            FileKind::Stats("stats".into())
        } else if String::from_utf8_lossy(head).contains("ROCPROFV3 ") {
            FileKind::Summary
        } else {
            FileKind::Other
        }
    }
}

fn base_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

/// `1234_hip_api_stats.csv` → `hip_api_stats`; `trace_1234_kernel_stats.csv` → `kernel_stats`.
fn stats_table(base: &str) -> String {
    let stem = base.trim_end_matches(".csv");
    for known in [
        "kernel_stats",
        "hip_api_stats",
        "hsa_api_stats",
        "memory_copy_stats",
        "memory_allocation_stats",
        "marker_api_stats",
        "domain_stats",
    ] {
        if stem.ends_with(known) {
            return known.to_string();
        }
    }
    stem.to_string()
}

/// The process id in a file name: the last all-digit `_` segment before the kind
/// (`1234_kernel_trace.csv`, `trace_1234_kernel_trace.csv`).
pub fn process_id_of(name: &str) -> Option<u32> {
    base_name(name)
        .split('_')
        .rfind(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse().ok())
}

/// Parse one file by its kind.
pub fn parse_file(name: &str, kind: &FileKind, bytes: &[u8]) -> Result<ParsedPart> {
    match kind {
        FileKind::KernelTrace => kernel_trace::parse(name, bytes, process_id_of(name)),
        FileKind::MemoryCopyTrace => memory_copy::parse(name, bytes, process_id_of(name)),
        FileKind::CounterCollection => counters::parse(name, bytes).map(|(layout, mut part)| {
            let label = match layout {
                Layout::Sdk2024 => "2024",
                Layout::Current => "current",
            };
            part.diagnostics.push(Diagnostic {
                severity: Severity::Info,
                kind: "counter_layout".into(),
                message: format!("`{name}` has the {label} counter-collection layout"),
                hint: None,
                metric: None,
            });
            part
        }),
        FileKind::AgentInfo => Ok(agent_info::parse(name, bytes)),
        FileKind::Stats(table) => stats::parse_csv(name, table, bytes),
        FileKind::Summary => Ok(stats::parse_summary(name, bytes)),
        FileKind::Other => Ok(ParsedPart::default()),
    }
}

/// The parse of a whole pass, plus the files that could not be parsed (each named; their raw
/// bytes stay on disk and in `raw`).
#[derive(Debug, Default)]
pub struct PassParse {
    pub parsed: ParsedOutput,
    pub errors: Vec<String>,
    pub copies: Vec<MemoryCopy>,
    pub stats: Vec<StatsRow>,
}

/// Parse every artifact of a pass and join the parts.
pub fn parse_raw(raw: &RawOutput) -> PassParse {
    let files: Vec<(&str, &[u8], bool)> = raw
        .artifacts
        .iter()
        .map(|a| (a.name.as_str(), a.content.as_slice(), a.truncated))
        .collect();
    parse_files(&files)
}

/// Parse `(name, bytes, cut_at_read_cap)` files and join the parts.
pub fn parse_files(files: &[(&str, &[u8], bool)]) -> PassParse {
    let mut out = PassParse::default();
    let mut traces = Vec::new();
    let mut counter_files: Vec<Vec<KernelRecord>> = Vec::new();
    let mut agents = Vec::new();
    let mut diagnostics = Vec::new();
    let mut known = 0usize;
    for (name, bytes, cut) in files {
        // A file named on the command line may be called anything: its header tells.
        let mut kind = FileKind::of(name);
        if kind == FileKind::Other {
            kind = FileKind::sniff(bytes);
        }
        if kind != FileKind::Other {
            known += 1;
        }
        if kind == FileKind::Other {
            diagnostics.push(Diagnostic {
                severity: Severity::Info,
                kind: "unparsed_file".into(),
                message: format!("`{name}` is not a rocprofv3 CSV polyprof parses; kept raw"),
                hint: None,
                metric: None,
            });
            continue;
        }
        if *cut {
            diagnostics.push(Diagnostic {
                severity: Severity::Warning,
                kind: "read_cap".into(),
                message: format!("`{name}` is larger than the read cap; only its start was parsed"),
                hint: Some("the whole file is still in the run directory".into()),
                metric: None,
            });
        }
        match parse_file(name, &kind, bytes) {
            Ok(part) => {
                diagnostics.extend(part.diagnostics);
                traces.extend(part.kernels);
                if !part.counter_records.is_empty() {
                    counter_files.push(part.counter_records);
                }
                out.copies.extend(part.copies);
                out.stats.extend(part.stats);
                agents.extend(part.agents);
            }
            Err(e) => out.errors.push(e.to_string()),
        }
    }
    if known == 0 && !files.is_empty() {
        diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            kind: NO_DATA.into(),
            message: "none of the files is a rocprofv3 CSV or summary (kernel or memory-copy \
                      trace, counter collection, agent info, stats)"
                .into(),
            hint: Some(
                "give the files rocprofv3 wrote (`--kernel-trace`, `--pmc`, `--stats`, `-S`)"
                    .into(),
            ),
            metric: None,
        });
    }
    let mut kernels = if traces.is_empty() {
        fold_counter_passes(counter_files)
    } else {
        attach_counters(&mut traces, counter_files, &mut diagnostics);
        traces
    };
    if kernels.is_empty() {
        kernels = kernel_totals(&out.stats);
    }
    let session = &mut out.parsed.session;
    if let Some(gpu) = agents.iter().find(|a| a.is_gpu()) {
        session.insert("device_name".into(), gpu.device_name());
        session.insert("gfx_target".into(), gpu.name.clone());
        out.parsed.device = Some(DeviceInfo {
            name: gpu.device_name(),
            arch: Some(gpu.name.clone()),
            ..Default::default()
        });
    }
    for kernel in &mut kernels {
        let resolved = kernel
            .device
            .as_deref()
            .and_then(|label| agent_info::resolve(&agents, label));
        if let Some(agent) = resolved {
            kernel.device = Some(agent.device_name());
        }
    }
    summarize_copies(&out.copies, session);
    let mut memory_commands: Vec<KernelRecord> = out
        .copies
        .iter()
        .enumerate()
        .map(|(index, copy)| copy.to_record(index as u64 + 1))
        .collect();
    for command in &mut memory_commands {
        let resolved = command
            .device
            .as_deref()
            .and_then(|label| agent_info::resolve(&agents, label));
        if let Some(agent) = resolved {
            command.device = Some(agent.device_name());
        }
    }
    memory_commands.sort_by(|a, b| {
        (a.process_id, a.start_ns)
            .partial_cmp(&(b.process_id, b.start_ns))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out.parsed.memory_commands = memory_commands;
    if kernels.is_empty() && out.errors.is_empty() {
        diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            kind: "no_kernels".into(),
            message: "no kernel dispatch in the rocprofv3 output".into(),
            hint: Some(
                "check that the program launched GPU kernels, that rocprofv3 ran with \
                 --kernel-trace, and that the kernel filters (if any) matched"
                    .into(),
            ),
            metric: None,
        });
    }
    out.parsed.kernels = kernels;
    out.parsed.diagnostics = diagnostics;
    out
}

/// Counter passes without a trace: one record per dispatch, counters of all passes joined.
fn fold_counter_passes(files: Vec<Vec<KernelRecord>>) -> Vec<KernelRecord> {
    let mut files = files.into_iter();
    let Some(mut base) = files.next() else {
        return Vec::new();
    };
    for file in files {
        let mut others = file;
        merge_pass(&mut base, &mut others);
        base.extend(others);
    }
    for record in &mut base {
        counters::derive(record);
    }
    base.sort_by_key(|r| (r.process_id, r.launch_id));
    base
}

/// Counters of each pass onto the traced dispatches. Every pass reruns the program, so pids
/// differ: the n-th process of a pass (by pid) is paired with the n-th traced process, and a
/// dispatch is matched by its id and kernel name.
fn attach_counters(
    traces: &mut [KernelRecord],
    files: Vec<Vec<KernelRecord>>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut unmatched = Vec::new();
    for mut file in files {
        merge_pass(traces, &mut file);
        unmatched.extend(file);
    }
    for record in traces.iter_mut() {
        counters::derive(record);
    }
    if !unmatched.is_empty() {
        let example = &unmatched[0];
        diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            kind: "counters_unmatched".into(),
            message: format!(
                "{} counter dispatch(es) match no traced dispatch (first: dispatch {} `{}`)",
                unmatched.len(),
                example.launch_id,
                example.short_name
            ),
            hint: Some(
                "the program launched different kernels in the counter passes than in the \
                 trace pass; make it deterministic (fixed inputs, seeds, no autotuning) so \
                 every pass sees the same dispatches"
                    .into(),
            ),
            metric: None,
        });
    }
}

/// Move the counters of `pass` onto the matching records of `base`; `pass` keeps the records
/// that matched nothing.
fn merge_pass(base: &mut [KernelRecord], pass: &mut Vec<KernelRecord>) {
    let pids = |records: &[KernelRecord]| {
        let mut pids: Vec<Option<u32>> = records.iter().map(|r| r.process_id).collect();
        pids.sort();
        pids.dedup();
        pids
    };
    let base_pids = pids(base);
    let pass_pids = pids(pass);
    let pairing: BTreeMap<Option<u32>, Option<u32>> = pass_pids
        .iter()
        .zip(&base_pids)
        .map(|(p, b)| (*p, *b))
        .collect();
    let mut index: BTreeMap<(Option<u32>, u64), usize> = BTreeMap::new();
    for (i, record) in base.iter().enumerate() {
        index.insert((record.process_id, record.launch_id), i);
    }
    pass.retain(|counter| {
        let Some(pid) = pairing.get(&counter.process_id) else {
            return true;
        };
        let Some(&i) = index.get(&(*pid, counter.launch_id)) else {
            return true;
        };
        let target = &mut base[i];
        if target.name != counter.name {
            return true;
        }
        for (name, metric) in &counter.metrics {
            target
                .metrics
                .entry(name.clone())
                .or_insert_with(|| metric.clone());
        }
        if target.duration_ns.is_none() {
            target.duration_ns = counter.duration_ns;
        }
        false
    });
}

/// Kernel totals from the summaries: `kernel_stats.csv` first, else the text summary's
/// per-domain kernel table.
fn kernel_totals(stats: &[StatsRow]) -> Vec<KernelRecord> {
    let from = |table: &str| -> Vec<KernelRecord> {
        stats
            .iter()
            .filter(|r| r.table == table && r.is_kernel())
            .map(|r| r.to_record(NAME))
            .collect()
    };
    let mut records = from("kernel_stats");
    if records.is_empty() {
        records = from("KERNEL_DISPATCH");
    }
    // Launch ids stay unique within the run: one per summary row, in the summary's order.
    for (index, record) in records.iter_mut().enumerate() {
        record.launch_id = index as u64 + 1;
    }
    records
}

/// Copies per direction: `memory_copy.<direction>.count` and `.total_ns`.
fn summarize_copies(copies: &[MemoryCopy], session: &mut BTreeMap<String, String>) {
    let mut totals: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for copy in copies {
        let entry = totals.entry(copy.direction.as_str()).or_default();
        entry.0 += 1;
        entry.1 += copy.duration_ns;
    }
    for (direction, (count, total)) in totals {
        let key = direction
            .trim_start_matches("MEMORY_COPY_")
            .to_ascii_lowercase();
        session.insert(format!("memory_copy.{key}.count"), count.to_string());
        session.insert(format!("memory_copy.{key}.total_ns"), total.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/tests/fixtures/rocprofv3/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn file_kinds_by_name() {
        assert_eq!(FileKind::of("1234_kernel_trace.csv"), FileKind::KernelTrace);
        assert_eq!(
            FileKind::of("pmc1_1234/pass_1/1234_counter_collection.csv"),
            FileKind::CounterCollection
        );
        assert_eq!(
            FileKind::of("trace_99_kernel_stats.csv"),
            FileKind::Stats("kernel_stats".into())
        );
        assert_eq!(
            FileKind::of("hip_api_stats.csv"),
            FileKind::Stats("hip_api_stats".into())
        );
        assert_eq!(FileKind::of("summary.txt"), FileKind::Summary);
        assert_eq!(FileKind::of("1234_results.json"), FileKind::Other);
        assert_eq!(process_id_of("trace_1234_kernel_trace.csv"), Some(1234));
        assert_eq!(process_id_of("a/7_agent_info.csv"), Some(7));
        assert_eq!(process_id_of("kernel_trace.csv"), None);
    }

    #[test]
    fn trace_with_agents_and_copies() {
        let trace = fixture("kernel_trace.csv");
        let copies = fixture("memory_copy_trace.csv");
        let out = parse_files(&[
            ("1234_kernel_trace.csv", &trace, false),
            ("1234_memory_copy_trace.csv", &copies, false),
        ]);
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_eq!(out.parsed.kernels.len(), 9);
        assert_eq!(out.parsed.kernels[0].process_id, Some(1234));
        let s = &out.parsed.session;
        assert_eq!(s["memory_copy.host_to_device.count"], "2");
        assert_eq!(s["memory_copy.device_to_host.count"], "2");
        assert_eq!(
            s["memory_copy.device_to_host.total_ns"],
            (75440 + 101321).to_string()
        );
    }

    #[test]
    fn counters_join_the_trace_across_passes() {
        let trace = fixture("kernel_trace.csv");
        // A counter pass of the same program: other pid, same dispatch ids and names.
        let counters = "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n\
            1,1,\"Agent 4\",1,999,999,1048576,10,\"void addition_kernel<float>(float*, float const*, float const*, int, int)\",64,0,0,8,0,16,\"SQ_INSTS_VALU_ADD_F32\",16384,10,20\n\
            1,1,\"Agent 4\",1,999,999,1048576,10,\"void addition_kernel<float>(float*, float const*, float const*, int, int)\",64,0,0,8,0,16,\"FETCH_SIZE\",8192,10,20\n\
            2,2,\"Agent 4\",1,999,999,1048576,13,\"not_the_same_kernel\",64,0,0,8,0,16,\"FETCH_SIZE\",1,10,20\n";
        let out = parse_files(&[
            ("trace_500_kernel_trace.csv", &trace, false),
            (
                "pmc1_999_counter_collection.csv",
                counters.as_bytes(),
                false,
            ),
        ]);
        let add = &out.parsed.kernels[0];
        assert_eq!(add.process_id, Some(500));
        assert_eq!(add.flops.fp32, Some(64.0 * 16384.0));
        assert_eq!(add.dram_bytes_read, Some(8192.0 * 1024.0));
        // The duration stays the trace's, not the serialized counter pass's.
        assert_eq!(add.duration_ns, Some(12800.0));
        let unmatched: Vec<&Diagnostic> = out
            .parsed
            .diagnostics
            .iter()
            .filter(|d| d.kind == "counters_unmatched")
            .collect();
        assert_eq!(unmatched.len(), 1);
        assert!(unmatched[0].message.contains("not_the_same_kernel"));
    }

    #[test]
    fn counters_alone_and_summaries_alone_stand_in() {
        let counters = fixture("counter_collection_roofline_synthetic.csv");
        let agents = fixture("agent_info.csv");
        let out = parse_files(&[
            ("1_counter_collection.csv", &counters, false),
            ("1_agent_info.csv", &agents, false),
        ]);
        assert_eq!(out.parsed.kernels.len(), 2);
        assert!(out.parsed.kernels[0].total_flops().is_some());
        assert_eq!(
            out.parsed.kernels[0].device.as_deref(),
            Some("Radeon RX Vega (gfx900)")
        );
        assert_eq!(out.parsed.session["gfx_target"], "gfx900");

        let summary = fixture("summary.txt");
        let out = parse_files(&[("summary.txt", &summary, false)]);
        assert_eq!(out.parsed.kernels.len(), 4);
        assert_eq!(out.parsed.kernels[0].calls, 8);
        let ids: Vec<u64> = out.parsed.kernels.iter().map(|k| k.launch_id).collect();
        assert_eq!(ids, [1, 2, 3, 4]);
    }

    #[test]
    fn a_bad_file_costs_only_itself() {
        let trace = fixture("kernel_trace.csv");
        let out = parse_files(&[
            ("1_kernel_trace.csv", &trace, false),
            ("2_kernel_trace.csv", b"\"A\"\n1\n", false),
        ]);
        assert_eq!(out.parsed.kernels.len(), 9);
        assert_eq!(out.errors.len(), 1);
        assert!(
            out.errors[0].contains("2_kernel_trace.csv"),
            "{:?}",
            out.errors
        );
    }

    #[test]
    fn cut_trace_and_read_cap_are_warnings() {
        let cut = fixture("kernel_trace_cut.csv");
        let out = parse_files(&[("1_kernel_trace.csv", &cut, true)]);
        assert!(!out.parsed.kernels.is_empty());
        let kinds: Vec<&str> = out
            .parsed
            .diagnostics
            .iter()
            .map(|d| d.kind.as_str())
            .collect();
        assert!(kinds.contains(&"read_cap"), "{kinds:?}");
        assert!(kinds.contains(&"truncated_output"), "{kinds:?}");
        let empty = parse_files(&[]);
        assert_eq!(empty.parsed.diagnostics[0].kind, "no_kernels");
    }
}
