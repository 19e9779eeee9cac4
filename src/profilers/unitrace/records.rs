//! Unitrace's parsed tables, timelines and metrics as normalized [`KernelRecord`]s: one place
//! that says which unitrace number becomes which field. Per-launch records come from a timeline
//! (`calls` 1, start and duration); aggregated ones from the device timing summary (`calls` =
//! the printed count, `duration_ns` = the printed total); `record_source` says which. Memory
//! copies, fills and barriers are not kernels: the same sources give them as memory-command
//! records of their own kind (`*_memory_records`), never in the kernel list.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use super::chrome::{ChromeTrace, Segment};
use super::metrics::{MetricBlock, MetricMode, MetricRow, Metrics};
use super::names::{is_memory_command, parse_command_name};
use super::tables::{KernelProperties, Tables};
use super::timeline::Timeline;
use crate::model::number;
use crate::model::record::{
    KernelRecord, MEMORY_BYTES_METRIC, Metric, MetricName, MetricValue, RecordKind,
    short_kernel_name,
};

/// Metric naming where a record came from: `summary` (aggregated), `timeline`,
/// `chrome_timeline` or `metrics` (per launch).
pub const RECORD_SOURCE: &str = "record_source";
/// Normalized Intel fields kept in `metrics` (the shared record has no typed field for them).
pub const SIMD_WIDTH: &str = "simd_width";
pub const XVE_ACTIVE: &str = "xve_active_pct";
pub const XVE_STALLED: &str = "xve_stalled_pct";
pub const XVE_IDLE: &str = "xve_idle_pct";
pub const GPU_TIME_AVG: &str = "gpu_time_avg";
pub const GPU_TIME_MIN: &str = "gpu_time_min";
pub const GPU_TIME_MAX: &str = "gpu_time_max";
/// The ITT benchmark segment (`model run loop::<label>`) a launch ran in; reports make it a
/// scope frame of the launch's call path.
pub const BENCHMARK: &str = crate::model::record::SEGMENT_METRIC;

/// How many time-based metric samples a record's metric figures were folded from.
pub const METRIC_SAMPLES: &str = "metric_samples";

/// Metric names made once; every record holds a clone of the same `Arc`, not its own copy.
struct Names {
    source: MetricName,
    simd: MetricName,
    avg: MetricName,
    min: MetricName,
    max: MetricName,
    pct: MetricName,
    backend: MetricName,
    host_thread: MetricName,
    benchmark: MetricName,
    benchmark_index: MetricName,
    samples: MetricName,
    bytes: MetricName,
}

static NAMES: LazyLock<Names> = LazyLock::new(|| Names {
    source: RECORD_SOURCE.into(),
    simd: SIMD_WIDTH.into(),
    avg: GPU_TIME_AVG.into(),
    min: GPU_TIME_MIN.into(),
    max: GPU_TIME_MAX.into(),
    pct: "time_pct".into(),
    backend: "backend".into(),
    host_thread: "host_thread".into(),
    benchmark: BENCHMARK.into(),
    benchmark_index: "benchmark_index".into(),
    samples: METRIC_SAMPLES.into(),
    bytes: MEMORY_BYTES_METRIC.into(),
});

fn number(value: f64, unit: &'static str) -> Metric {
    Metric {
        value: MetricValue::Number(value),
        unit: Cow::Borrowed(unit),
    }
}

fn text(value: &str) -> Metric {
    Metric {
        value: MetricValue::Text(value.to_string()),
        unit: Cow::Borrowed(""),
    }
}

/// A record with the name, short name, kind and launch shape a unitrace command name carries;
/// a memory command keeps its direction (`zeCommandListAppendMemoryCopy(M2D)`) as short name
/// and its size as the `bytes` metric.
fn named_record(profiler: &str, name: String, source: &str) -> KernelRecord {
    let shape = parse_command_name(&name);
    let kind = kind_of(shape.base);
    let short_name = if kind.is_kernel() {
        short_kernel_name(shape.base)
    } else {
        shape.base.to_string()
    };
    let (grid, block, simd, bytes) = (shape.group_count, shape.group_size, shape.simd, shape.bytes);
    let mut record = KernelRecord {
        profiler: profiler.to_string(),
        kind,
        name,
        short_name,
        grid,
        block,
        calls: 1,
        ..Default::default()
    };
    if let Some(simd) = simd {
        record
            .metrics
            .insert(NAMES.simd.clone(), number(simd.into(), ""));
    }
    if let Some(bytes) = bytes {
        record
            .metrics
            .insert(NAMES.bytes.clone(), number(bytes as f64, "byte"));
    }
    record.metrics.insert(NAMES.source.clone(), text(source));
    record
}

/// A command's kind by its API name: Level Zero `zeCommandListAppend*`, OpenCL `clEnqueue*`.
pub fn kind_of(base: &str) -> RecordKind {
    if !is_memory_command(base) {
        return RecordKind::Kernel;
    }
    let call = base.split('(').next().unwrap_or(base);
    if call.contains("Fill") {
        RecordKind::MemoryFill
    } else if ["Copy", "Read", "Write", "Memcpy", "Map"]
        .iter()
        .any(|word| call.contains(word))
    {
        RecordKind::MemoryCopy
    } else {
        // Barriers, event signals and waits: commands that order the queue.
        RecordKind::Barrier
    }
}

/// Which commands a record builder keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commands {
    Kernels,
    Memory,
}

impl Commands {
    fn keeps(&self, name: &str) -> bool {
        is_memory_command(parse_command_name(name).base) == (*self == Commands::Memory)
    }
}

fn is_kernel(name: &str) -> bool {
    Commands::Kernels.keeps(name)
}

/// Aggregated records from the device timing summary, one per printed kernel row, joined with
/// the Kernel Properties row of the same name (the k-th of a name with the k-th).
pub fn summary_records(tables: &Tables, profiler: &str) -> Vec<KernelRecord> {
    summary_commands(tables, profiler, Commands::Kernels)
}

/// Aggregated memory-command records from the device timing summary, one per printed row.
pub fn summary_memory_records(tables: &Tables, profiler: &str) -> Vec<KernelRecord> {
    summary_commands(tables, profiler, Commands::Memory)
}

fn summary_commands(tables: &Tables, profiler: &str, commands: Commands) -> Vec<KernelRecord> {
    let n = &*NAMES;
    let mut properties: HashMap<&str, Vec<&KernelProperties>> = HashMap::new();
    for p in tables.properties.iter().rev() {
        properties.entry(p.name.as_str()).or_default().push(p);
    }
    let mut records = Vec::new();
    for table in tables.device_timing() {
        for row in table.rows.iter().filter(|r| commands.keeps(&r.name)) {
            let mut record = named_record(profiler, row.name.clone(), "summary");
            record.launch_id = records.len() as u64;
            record.calls = row.calls;
            // A command's size is per call; the record's `bytes` are all its calls'.
            if let Some(bytes) = record.metric(MEMORY_BYTES_METRIC) {
                record.metrics.insert(
                    NAMES.bytes.clone(),
                    number(bytes * row.calls as f64, "byte"),
                );
            }
            record.duration_ns = Some(row.total_ns as f64);
            let m = &mut record.metrics;
            m.insert(n.avg.clone(), number(row.average_ns as f64, "ns"));
            m.insert(n.min.clone(), number(row.min_ns as f64, "ns"));
            m.insert(n.max.clone(), number(row.max_ns as f64, "ns"));
            if let Some(pct) = row.percent {
                m.insert(n.pct.clone(), number(pct, "%"));
            }
            m.insert(n.backend.clone(), text(&table.backend));
            if let Some(p) = properties.get_mut(row.name.as_str()).and_then(Vec::pop) {
                apply_properties(&mut record, p);
            }
            records.push(record);
        }
    }
    records
}

fn apply_properties(record: &mut KernelRecord, properties: &KernelProperties) {
    if let Some(simd) = properties.simd_width() {
        record
            .metrics
            .insert(NAMES.simd.clone(), number(simd.into(), ""));
    }
    if let Some(slm) = properties
        .get("SLM Per Work Group")
        .and_then(|v| v.parse().ok())
    {
        record.shared_mem_per_block = Some(slm);
    }
    for (column, value) in &properties.fields {
        if column == "SIMD" {
            continue;
        }
        let metric = match value.parse::<f64>() {
            Ok(n) => number(
                n,
                if column.contains("Memory") || column.starts_with("SLM") {
                    "byte"
                } else {
                    ""
                },
            ),
            Err(_) => text(value),
        };
        record.metrics.insert(column.as_str().into(), metric);
    }
}

/// Per-launch records from the text device timeline (`-t`); names move into the records.
pub fn timeline_records(timeline: Timeline, profiler: &str) -> Vec<KernelRecord> {
    timeline_commands(timeline, profiler, Commands::Kernels)
}

/// Per-launch records of the `commands` kept, from the text device timeline.
pub fn timeline_commands(
    timeline: Timeline,
    profiler: &str,
    commands: Commands,
) -> Vec<KernelRecord> {
    timeline
        .entries
        .into_iter()
        .enumerate()
        .filter(|(_, e)| commands.keeps(&e.name))
        .map(|(index, entry)| {
            let (start, duration) = (entry.start_ns, entry.duration_ns());
            let mut record = named_record(profiler, entry.name, "timeline");
            record.launch_id = index as u64;
            record.device = Some(entry.device);
            record.start_ns = Some(start as f64);
            record.duration_ns = Some(duration as f64);
            record
                .metrics
                .insert(NAMES.host_thread.clone(), number(entry.thread as f64, ""));
            record
        })
        .collect()
}

/// Per-launch records from the Chrome timeline: device and engine (the stream) from the
/// trace's metadata, the benchmark segment each launch started in, and the metric rows of the
/// same kernel instance.
pub fn chrome_records(
    trace: &ChromeTrace,
    segments: &[Segment],
    metrics: Option<&Metrics>,
    profiler: &str,
) -> Vec<KernelRecord> {
    chrome_commands(trace, segments, metrics, profiler, Commands::Kernels)
}

/// Per-launch records of the `commands` kept, from the Chrome timeline.
pub fn chrome_commands(
    trace: &ChromeTrace,
    segments: &[Segment],
    metrics: Option<&Metrics>,
    profiler: &str,
    commands: Commands,
) -> Vec<KernelRecord> {
    let mut segment_of: HashMap<usize, (usize, &Segment)> = HashMap::new();
    for (n, segment) in segments.iter().enumerate() {
        for &command in &segment.commands {
            segment_of.insert(command, (n, segment));
        }
    }
    let by_instance = metrics.map(instance_rows).unwrap_or_default();
    trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_device_command() && commands.keeps(&e.name))
        .map(|(index, event)| {
            let mut record = named_record(profiler, event.name.clone(), "chrome_timeline");
            record.launch_id = event.instance_id.unwrap_or(index as u64);
            record.device = trace
                .process_names
                .get(&event.pid)
                .map(|p| super::chrome::device_name(p).to_string());
            record.stream = trace.thread_names.get(&(event.pid, event.tid)).cloned();
            // µs with ns fractions: back to whole ns.
            // Values that cannot be stay unmeasured (the trace's diagnostics name them).
            record.start_ns = number::check((event.ts_us * 1000.0).round()).ok();
            record.duration_ns = number::check((event.dur_us * 1000.0).round()).ok();
            if let Some((n, segment)) = segment_of.get(&index) {
                let label = segment
                    .label
                    .as_deref()
                    .unwrap_or(super::chrome::BENCHMARK_TASK);
                record.metrics.insert(NAMES.benchmark.clone(), text(label));
                record
                    .metrics
                    .insert(NAMES.benchmark_index.clone(), number(*n as f64, ""));
            }
            if let Some(rows) = event.instance_id.and_then(|id| by_instance.get(&id)) {
                for (block, row) in rows {
                    apply_metric_row(&mut record, block, &row.values);
                    note_samples(&mut record, block, row);
                }
            }
            record
        })
        .collect()
}

type InstanceRows<'a> = HashMap<u64, Vec<(&'a MetricBlock, &'a MetricRow)>>;

fn instance_rows(metrics: &Metrics) -> InstanceRows<'_> {
    let mut map: InstanceRows<'_> = HashMap::new();
    for block in &metrics.blocks {
        for row in &block.rows {
            if let Some(id) = row.instance_id {
                map.entry(id).or_default().push((block, row));
            }
        }
    }
    map
}

/// Per-launch records from metric rows alone (no timeline): one per row, named as printed.
pub fn metric_records(metrics: &Metrics, profiler: &str) -> Vec<KernelRecord> {
    let mut records = Vec::new();
    for block in &metrics.blocks {
        let names = interned(block);
        for row in block.rows.iter().filter(|r| is_kernel(&r.kernel)) {
            let mut record = named_record(profiler, row.kernel.clone(), "metrics");
            record.launch_id = row.instance_id.unwrap_or(records.len() as u64);
            record.device = row.device.or(block.device).map(|d| d.to_string());
            apply_values(&mut record, block, &names, &row.values);
            note_samples(&mut record, block, row);
            records.push(record);
        }
    }
    records
}

/// Sampling-mode figures are folded from several samples ([`super::samples`]); say how many.
fn note_samples(record: &mut KernelRecord, block: &MetricBlock, row: &MetricRow) {
    if block.mode == MetricMode::Sampling {
        record
            .metrics
            .insert(NAMES.samples.clone(), number(row.samples as f64, ""));
    }
}

fn interned(block: &MetricBlock) -> Vec<MetricName> {
    block
        .columns
        .iter()
        .map(|c| MetricName::new(&c.name))
        .collect()
}

fn apply_metric_row(record: &mut KernelRecord, block: &MetricBlock, values: &[Option<f64>]) {
    apply_values(record, block, &interned(block), values);
}

/// Unitrace's units as the record's base units.
fn base_unit(unit: &str) -> Cow<'static, str> {
    match unit {
        "ns" => Cow::Borrowed("ns"),
        "%" => Cow::Borrowed("%"),
        "bytes" => Cow::Borrowed("byte"),
        "cycles" => Cow::Borrowed("cycle"),
        "MHz" => Cow::Borrowed("MHz"),
        "events" | "messages" | "threads" | "" => Cow::Borrowed(""),
        other => Cow::Owned(other.to_string()),
    }
}

/// Every metric under its own name, plus the normalized fields: GPU time, XVE active / stalled
/// / idle, occupancy, GPU memory bytes (MemoryProfile, ComputeBasic) and FLOPs where the group
/// counts instructions by precision.
fn apply_values(
    record: &mut KernelRecord,
    block: &MetricBlock,
    names: &[MetricName],
    values: &[Option<f64>],
) {
    let get = |name: &str| {
        block
            .column(name)
            .and_then(|i| values.get(i).copied().flatten())
    };
    for ((column, name), value) in block.columns.iter().zip(names).zip(values) {
        if let Some(value) = value {
            record.metrics.insert(
                name.clone(),
                Metric {
                    value: MetricValue::Number(*value),
                    unit: base_unit(&column.unit),
                },
            );
        }
    }
    if record.duration_ns.is_none() {
        record.duration_ns = get("GpuTime");
    }
    let active = get("XVE_ACTIVE");
    let stalled = get("XVE_STALL");
    if let Some(a) = active {
        record.metrics.insert(XVE_ACTIVE.into(), number(a, "%"));
    }
    if let Some(s) = stalled {
        record.metrics.insert(XVE_STALLED.into(), number(s, "%"));
    }
    // An XVE is active, stalled or idle; the group prints the first two.
    if let (Some(a), Some(s)) = (active, stalled) {
        record
            .metrics
            .insert(XVE_IDLE.into(), number((100.0 - a - s).max(0.0), "%"));
    }
    if let Some(occupancy) = get("XVE_THREADS_OCCUPANCY_ALL") {
        record.achieved_occupancy_pct = Some(occupancy);
    }
    let read = get("GPU_MEMORY_BYTE_READ");
    let write = get("GPU_MEMORY_BYTE_WRITE");
    record.dram_bytes_read = read.or(record.dram_bytes_read);
    record.dram_bytes_write = write.or(record.dram_bytes_write);
    if let (Some(r), Some(w)) = (read, write) {
        record.dram_bytes = Some(r + w);
    }
    // Instruction counts to FLOPs with the factors of Intel's roofline script
    // (`tools/unitrace/scripts/roofline/roofline_libs.py`): lanes × 2 per instruction.
    let scaled = |name: &str, factor: f64| get(name).map(|n| n * factor);
    let fp16 = [
        scaled("XVE_INST_EXECUTED_FP16", 64.0),
        scaled("XVE_INST_EXECUTED_XMX_FP16", 512.0),
    ];
    if fp16.iter().any(Option::is_some) {
        record.flops.fp16 = Some(fp16.iter().flatten().sum());
    }
    if let Some(fp32) = scaled("XVE_INST_EXECUTED_FP32", 32.0) {
        record.flops.fp32 = Some(fp32);
    }
    if let Some(fp64) = scaled("XVE_INST_EXECUTED_FP64", 32.0) {
        record.flops.fp64 = Some(fp64);
    }
    if let Some(bf16) = scaled("XVE_INST_EXECUTED_XMX_BF16", 512.0) {
        record
            .metrics
            .insert("bf16_xmx_flops".into(), number(bf16, ""));
    }
}

#[cfg(test)]
mod tests {
    use super::super::chrome::{benchmark_segments, parse_chrome};
    use super::super::metrics::parse_metrics;
    use super::super::tables::parse_tables;
    use super::super::timeline::parse_timeline;
    use super::*;

    const DPC_D: &str = include_str!("../../../tests/fixtures/unitrace/dpc_gemm_device_timing.txt");
    const CL_D: &str = include_str!("../../../tests/fixtures/unitrace/cl_gemm_device_timing.txt");
    const DPC_T: &str =
        include_str!("../../../tests/fixtures/unitrace/dpc_gemm_device_timeline.txt");
    const FP16: &str = include_str!("../../../tests/fixtures/unitrace/gemm_fp16_bytes.1799860");
    const FLOPS: &str = include_str!("../../../tests/fixtures/unitrace/gemm_fp16_flops.1799853");
    const TRACE: &[u8] =
        include_bytes!("../../../tests/fixtures/unitrace/synthetic_python.4242.json");

    fn metric(r: &KernelRecord, name: &str) -> Option<f64> {
        r.metric(name)
    }

    #[test]
    fn summary_records_keep_printed_calls_and_times() {
        let records = summary_records(&parse_tables(DPC_D), "unitrace");
        assert_eq!(records.len(), 1, "memory copies are not kernels");
        let r = &records[0];
        assert!(r.name.ends_with("const::__GEMM"));
        assert_eq!(r.short_name, "RunAndCheck");
        assert_eq!((r.calls, r.duration_ns), (4, Some(89769760.0)));
        assert_eq!(metric(r, GPU_TIME_AVG), Some(22442440.0));
        assert_eq!(metric(r, GPU_TIME_MIN), Some(22436320.0));
        assert_eq!(metric(r, GPU_TIME_MAX), Some(22454240.0));
        assert_eq!(metric(r, SIMD_WIDTH), Some(32.0));
        assert_eq!(r.shared_mem_per_block, Some(0));
        assert_eq!(
            r.metrics[RECORD_SOURCE].value,
            MetricValue::Text("summary".into())
        );
        let cl = summary_records(&parse_tables(CL_D), "ocl-unitrace");
        assert_eq!(cl.len(), 1);
        assert_eq!(
            (cl[0].name.as_str(), cl[0].calls, cl[0].duration_ns),
            ("GEMM", 4, Some(44280640.0))
        );
        assert_eq!(metric(&cl[0], GPU_TIME_AVG), Some(11070160.0));
    }

    #[test]
    fn summary_shapes_give_simd_grid_and_local_size() {
        let records = summary_records(&parse_tables(FP16), "unitrace");
        let names: Vec<&str> = records.iter().map(|r| r.short_name.as_str()).collect();
        assert_eq!(
            names,
            [
                "hgemm_nocopy_nn_64x40_4x8",
                "hgemm_nocopy_nn_64x40_4x8",
                "binary_test"
            ]
        );
        let h = &records[0];
        assert_eq!((h.grid, h.block), (Some([56, 1, 1]), Some([64, 8, 1])));
        assert_eq!(metric(h, SIMD_WIDTH), Some(16.0));
        assert_eq!(h.duration_ns, Some(4731360.0));
        assert_eq!(records[1].duration_ns, Some(4503360.0));
        assert_eq!(h.shared_mem_per_block, Some(8));
        assert_eq!(metric(h, "Number of Arguments"), Some(27.0));
    }

    #[test]
    fn timeline_records_are_per_launch() {
        let records = timeline_records(parse_timeline(DPC_T), "unitrace");
        assert_eq!(records.len(), 4);
        assert!(records.iter().all(|r| r.calls == 1));
        assert_eq!(
            records[0].duration_ns,
            Some((542502850711898u64 - 542502847858138) as f64)
        );
        assert_eq!(records[0].start_ns, Some(542502847858138.0));
        assert_eq!(records[0].device.as_deref(), Some("35747536"));
        assert_eq!(
            (records[0].grid, records[0].block),
            (Some([1, 1024, 1]), Some([1024, 1, 1]))
        );
        assert_eq!(records[0].launch_id, 3);
    }

    #[test]
    fn metric_records_map_memory_xve_occupancy_and_flops() {
        let bytes = metric_records(&parse_metrics(FP16), "unitrace");
        assert_eq!(bytes.len(), 3);
        let h = &bytes[1];
        assert_eq!(h.duration_ns, Some(4733040.0));
        assert_eq!(
            (h.dram_bytes_read, h.dram_bytes_write),
            (Some(848934528.0), Some(125991296.0))
        );
        assert_eq!(h.dram_bytes, Some(848934528.0 + 125991296.0));
        assert_eq!(metric(h, XVE_ACTIVE), Some(90.354));
        assert_eq!(metric(h, XVE_STALLED), Some(3.26538));
        assert!((metric(h, XVE_IDLE).unwrap() - (100.0 - 90.354 - 3.26538)).abs() < 1e-9);
        assert_eq!(h.achieved_occupancy_pct, Some(46.8018));
        assert_eq!(h.metrics["L3_BYTE_READ"].unit, "byte");
        assert_eq!(h.metrics["GpuTime"].unit, "ns");
        let flops = metric_records(&parse_metrics(FLOPS), "unitrace");
        let h = &flops[1];
        // 4,000,000 FP16 + 2,048,000,000 XMX FP16 instructions; 8,102,400 FP32; no FP64.
        assert_eq!(h.flops.fp16, Some(4000000.0 * 64.0 + 2048000000.0 * 512.0));
        assert_eq!(h.flops.fp32, Some(8102400.0 * 32.0));
        assert_eq!(h.flops.fp64, Some(0.0));
    }

    #[test]
    fn chrome_records_carry_engine_device_segments_and_metrics() {
        let trace = parse_chrome(TRACE, "t").unwrap();
        let segments = benchmark_segments(&trace);
        let metrics = parse_metrics(
            "Kernel,GlobalInstanceId,SubDeviceId,GpuTime[ns],XVE_ACTIVE[%],XVE_STALL[%]\n\
             \"matmul_kernel(float const*, float const*, float*, int)[SIMD32 {16; 16; 1} {16; 16; 1}]\",4,0,9400750,70,20\n",
        );
        let records = chrome_records(&trace, &segments, Some(&metrics), "unitrace");
        assert_eq!(records.len(), 4);
        let r = &records[0];
        assert_eq!(r.short_name, "matmul_kernel");
        assert_eq!(r.launch_id, 2);
        assert_eq!(r.duration_ns, Some(1200500.0));
        assert_eq!(r.stream.as_deref(), Some("Thread 4242 CCS<0,0>"));
        assert!(
            r.device
                .as_deref()
                .unwrap()
                .contains("Data Center GPU Max 1100")
        );
        assert_eq!(
            r.metrics[BENCHMARK].value,
            MetricValue::Text("task.py::Test::test_benchmark[512]".into())
        );
        let joined = &records[2];
        assert_eq!(joined.launch_id, 4);
        assert_eq!(metric(joined, XVE_IDLE), Some(10.0));
        assert_eq!(metric(joined, "benchmark_index"), Some(1.0));
        assert_eq!(metric(&records[3], XVE_ACTIVE), None);
    }
}
