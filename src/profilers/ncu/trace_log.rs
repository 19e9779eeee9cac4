//! polyprof's CUPTI activity tracer (`trace.c`, compiled and injected by
//! `pipeline::eval::tracer`): its source, its compiler arguments, and the reader of the records it
//! writes (`trace-<pid>.tsv`, one record a line; trace.c's header is the format).

use crate::profilers::capability::tool::Tool;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::model::gpu_trace::{ActivityKind, GpuActivity, GpuTrace, TracedModule};
use crate::profilers::capability::injection::InjectionLibrary;
use crate::profilers::ncu::capabilities::{CUPTI, cupti_nvcc_args};
use crate::profilers::tracer::GpuTracer;

/// The tracer as the pipeline builds, loads and reads it.
pub const TRACER: GpuTracer = GpuTracer {
    library: InjectionLibrary {
        name: "gpu-trace",
        source_file: "trace.c",
        source: TRACE_C,
        library_file: TRACE_LIBRARY,
        compiler: Tool {
            program: "nvcc",
            what: "nvcc",
            missing: "nvcc is not on PATH: the GPU timeline needs the CUDA toolkit (nvcc and CUPTI) to build polyprof's tracer",
        },
        sdk: CUPTI,
        compile_args: cupti_nvcc_args,
        load_env,
    },
    record_file_pid: trace_file_pid,
    parse: |pid, text| parse_trace(pid, text).map_err(|e| e.to_string()),
};

/// The variables that load the tracer into a CUDA process, its records into `dir`.
pub fn load_env(library: &Path, dir: &Path) -> BTreeMap<String, String> {
    BTreeMap::from([
        (INJECTION_ENV.to_string(), library.display().to_string()),
        (TRACE_DIR_ENV.to_string(), dir.display().to_string()),
        // Module images by hash only: the eval reads no image (tens of MB a torch process).
        (MODULES_ENV.to_string(), "0".to_string()),
    ])
}

/// The tracer's C source, embedded in polyprof.
pub const TRACE_C: &str = include_str!("trace.c");
/// The compiled library's file name.
pub const TRACE_LIBRARY: &str = "libpolyprof_trace.so";
/// The environment variable naming the folder the tracer writes into.
pub const TRACE_DIR_ENV: &str = "POLYPROF_TRACE_DIR";
/// `0`: the tracer names each module image by its hash and does not save it.
pub const MODULES_ENV: &str = "POLYPROF_TRACE_MODULES";
/// The environment variable CUDA loads an injection library from.
pub const INJECTION_ENV: &str = "CUDA_INJECTION64_PATH";

/// A line the reader could not take, with its number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: not a trace record: {text:?}")]
pub struct TraceLineError {
    pub line: usize,
    pub text: String,
}

/// Read one process's records. The tracer writes each line whole, so a malformed line is an
/// error, except a last line without its newline (the process died while it was written),
/// which is left out.
pub fn parse_trace(pid: u32, text: &str) -> Result<GpuTrace, TraceLineError> {
    let mut trace = GpuTrace {
        pid,
        ..GpuTrace::default()
    };
    let mut threads: HashMap<u64, i64> = HashMap::new();
    // A trace repeats few symbols many times: each is demangled once.
    let mut demangled: HashMap<String, Option<String>> = HashMap::new();
    let complete = if text.ends_with('\n') {
        text
    } else {
        text.rfind('\n').map_or("", |end| &text[..=end])
    };
    for (n, line) in complete.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let bad = || TraceLineError {
            line: n + 1,
            text: line.chars().take(200).collect(),
        };
        let f: Vec<&str> = line.split('\t').collect();
        let num = |i: usize| -> Result<u64, TraceLineError> {
            f.get(i).and_then(|v| v.parse::<u64>().ok()).ok_or_else(bad)
        };
        let small = |i: usize| -> Result<u32, TraceLineError> {
            num(i).and_then(|v| u32::try_from(v).map_err(|_| bad()))
        };
        match f[0] {
            "K" if f.len() >= 17 => trace.activities.push(GpuActivity {
                kind: ActivityKind::Kernel,
                correlation: num(1)?,
                start_ns: num(2)?,
                end_ns: num(3)?,
                device: small(4)?,
                stream: small(5)?,
                grid: Some([small(6)?, small(7)?, small(8)?]),
                block: Some([small(9)?, small(10)?, small(11)?]),
                dynamic_shared_bytes: Some(num(12)?),
                bytes: None,
                value: None,
                graph: num(15)?,
                // A symbol never holds a tab; should one, it stays whole.
                name: f[16..].join("\t"),
                demangled: demangled
                    .entry(f[16..].join("\t"))
                    .or_insert_with_key(|name| super::names::demangle(name))
                    .clone(),
                thread: None,
            }),
            "C" if f.len() == 9 => trace.activities.push(GpuActivity {
                kind: ActivityKind::Memcpy,
                correlation: num(1)?,
                start_ns: num(2)?,
                end_ns: num(3)?,
                device: small(4)?,
                stream: small(5)?,
                bytes: Some(num(7)?),
                graph: num(8)?,
                ..blank()
            }),
            "S" if f.len() == 9 => trace.activities.push(GpuActivity {
                kind: ActivityKind::Memset,
                correlation: num(1)?,
                start_ns: num(2)?,
                end_ns: num(3)?,
                device: small(4)?,
                stream: small(5)?,
                bytes: Some(num(6)?),
                value: Some(small(7)?),
                graph: num(8)?,
                ..blank()
            }),
            "A" if f.len() == 4 => {
                let tid = f[2].parse::<i64>().map_err(|_| bad())?;
                threads.insert(num(1)?, tid);
            }
            "M" if f.len() == 4 => trace.modules.push(TracedModule {
                image_hash: f[1].to_string(),
                bytes: num(2)?,
            }),
            "D" if f.len() == 2 => trace.dropped += num(1)?,
            "E" if f.len() >= 2 => trace.errors.push(f[1..].join("\t")),
            _ => return Err(bad()),
        }
    }
    for activity in &mut trace.activities {
        activity.thread = threads.get(&activity.correlation).copied();
    }
    Ok(trace)
}

fn blank() -> GpuActivity {
    GpuActivity {
        kind: ActivityKind::Kernel,
        correlation: 0,
        start_ns: 0,
        end_ns: 0,
        device: 0,
        stream: 0,
        name: String::new(),
        demangled: None,
        grid: None,
        block: None,
        dynamic_shared_bytes: None,
        bytes: None,
        value: None,
        graph: 0,
        thread: None,
    }
}

/// The pid in a trace file's name (`trace-<pid>.tsv`).
pub fn trace_file_pid(name: &str) -> Option<u32> {
    name.strip_prefix("trace-")?
        .strip_suffix(".tsv")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "A\t7\t4242\tcuLaunchKernel\n\
K\t7\t1000\t3000\t0\t7\t4\t1\t1\t256\t1\t1\t0\t0\t16\t0\t_Z4reluPKfPfl\n\
A\t8\t4242\tcuMemsetD8Async\n\
S\t8\t3500\t3600\t0\t7\t65536\t0\t0\n\
C\t9\t4000\t5000\t0\t7\t8\t4096\t0\n\
M\t00ff00ff00ff00ff\t1234\tmodule-00ff00ff00ff00ff.bin\n\
D\t3\n";

    #[test]
    fn records_are_read_and_joined_to_their_threads() {
        let trace = parse_trace(4242, SAMPLE).unwrap();
        assert_eq!(trace.activities.len(), 3);
        let kernel = &trace.activities[0];
        assert_eq!(kernel.name, "_Z4reluPKfPfl");
        assert_eq!(kernel.readable_name(), "relu(float const*, float*, long)");
        assert_eq!(kernel.grid, Some([4, 1, 1]));
        assert_eq!(kernel.block, Some([256, 1, 1]));
        assert_eq!(kernel.thread, Some(4242));
        assert_eq!(kernel.duration_ns(), 2000);
        let memset = &trace.activities[1];
        assert_eq!((memset.bytes, memset.value), (Some(65536), Some(0)));
        assert_eq!(
            trace.activities[2].thread, None,
            "no API record for correlation 9"
        );
        assert_eq!(trace.dropped, 3);
        assert_eq!(trace.modules.len(), 1);
    }

    #[test]
    fn a_torn_last_line_is_left_out_and_a_bad_line_is_an_error() {
        let torn = format!("{SAMPLE}K\t10\t5000");
        assert_eq!(parse_trace(1, &torn).unwrap().activities.len(), 3);
        let bad = format!("{SAMPLE}X\tnope\n");
        let error = parse_trace(1, &bad).unwrap_err();
        assert_eq!(error.line, 8);
    }

    #[test]
    fn trace_files_are_named_by_pid() {
        assert_eq!(trace_file_pid("trace-123.tsv"), Some(123));
        assert_eq!(trace_file_pid("trace-x.tsv"), None);
        assert_eq!(trace_file_pid("launches-1.tsv"), None);
    }
}
