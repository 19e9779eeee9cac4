//! The Metal calls of the runtime lane (objc2-metal). macOS only.

use std::ptr::NonNull;

use objc2::rc::Retained;
use objc2::runtime::ProtocolObject;
use objc2_foundation::{NSString, NSURL};
use objc2_metal::{
    MTLBuffer, MTLCaptureDescriptor, MTLCaptureDestination, MTLCaptureManager, MTLCommandBuffer,
    MTLCommandBufferStatus, MTLCommandEncoder, MTLCommandQueue, MTLComputeCommandEncoder,
    MTLComputePipelineState, MTLCounterSamplingPoint, MTLCreateSystemDefaultDevice, MTLDevice,
    MTLLibrary, MTLResourceOptions, MTLSize,
};

use super::{
    BufferSpec, CLOCK, Caps, PipelineInfo, RunReport, RunRequest, SweepPoint,
    benchmark_from_gpu_times, fill_bytes, kernel_launches, record_launches, sweep_sizes,
    validate_counts,
};
use crate::model::error::{Error, Result};
use crate::results::benchmark::KernelBenchmark;

type Device = Retained<ProtocolObject<dyn MTLDevice>>;

fn failed(message: impl Into<String>) -> Error {
    Error::ProfilerFailed {
        profiler: "metal".to_string(),
        message: message.into(),
    }
}

fn device() -> Result<Device> {
    MTLCreateSystemDefaultDevice().ok_or_else(|| Error::ProfilerUnavailable {
        profiler: "metal".to_string(),
        reason: "MTLCreateSystemDefaultDevice returned no device; run on a Mac with a \
                 Metal-capable GPU (not inside a VM without GPU access)"
            .to_string(),
    })
}

pub(super) fn unavailable_reason() -> Option<String> {
    device().err().map(|e| e.to_string())
}

fn size(s: [u64; 3]) -> MTLSize {
    MTLSize {
        width: s[0] as usize,
        height: s[1] as usize,
        depth: s[2] as usize,
    }
}

/// Device limits.
pub fn caps() -> Result<Caps> {
    let device = device()?;
    let max = device.maxThreadsPerThreadgroup();
    Ok(Caps {
        device: device.name().to_string(),
        unified_memory: device.hasUnifiedMemory(),
        max_threadgroup_memory_bytes: device.maxThreadgroupMemoryLength() as u64,
        max_threads_per_threadgroup: [max.width as u64, max.height as u64, max.depth as u64],
        recommended_working_set_bytes: device.recommendedMaxWorkingSetSize(),
        counter_sampling_stage_boundary: device
            .supportsCounterSampling(MTLCounterSamplingPoint::AtStageBoundary),
        counter_sampling_dispatch_boundary: device
            .supportsCounterSampling(MTLCounterSamplingPoint::AtDispatchBoundary),
    })
}

/// A compiled kernel with its bound buffers, ready to dispatch.
pub struct PreparedKernel {
    pub name: String,
    pub device_name: String,
    pub info: PipelineInfo,
    queue: Retained<ProtocolObject<dyn MTLCommandQueue>>,
    pipeline: Retained<ProtocolObject<dyn MTLComputePipelineState>>,
    buffers: Vec<Retained<ProtocolObject<dyn MTLBuffer>>>,
}

/// Compiles `source`, builds the pipeline for `entry`, and allocates shared buffers with the
/// deterministic fill of [`fill_bytes`].
pub fn prepare(source: &str, entry: &str, specs: &[BufferSpec]) -> Result<PreparedKernel> {
    let device = device()?;
    let library = device
        .newLibraryWithSource_options_error(&NSString::from_str(source), None)
        .map_err(|e| {
            failed(format!(
                "the Metal compiler rejected the source: {}",
                e.localizedDescription()
            ))
        })?;
    let function = library
        .newFunctionWithName(&NSString::from_str(entry))
        .ok_or_else(|| failed(format!("no kernel `{entry}` in the source; check --entry")))?;
    let pipeline = device
        .newComputePipelineStateWithFunction_error(&function)
        .map_err(|e| {
            failed(format!(
                "cannot build the pipeline for `{entry}`: {}",
                e.localizedDescription()
            ))
        })?;
    let queue = device
        .newCommandQueue()
        .ok_or_else(|| failed("the device gave no command queue"))?;
    let mut buffers = Vec::with_capacity(specs.len());
    for (index, spec) in specs.iter().enumerate() {
        let mut bytes = fill_bytes(spec, index);
        let pointer = NonNull::new(bytes.as_mut_ptr().cast())
            .ok_or_else(|| failed(format!("buffer {index} has no storage")))?;
        // SAFETY: `pointer` is valid for `bytes.len()` bytes; Metal copies them before returning.
        let buffer = unsafe {
            device.newBufferWithBytes_length_options(
                pointer,
                bytes.len(),
                MTLResourceOptions::StorageModeShared,
            )
        }
        .ok_or_else(|| {
            failed(format!(
                "cannot allocate buffer {index} ({} bytes)",
                bytes.len()
            ))
        })?;
        buffers.push(buffer);
    }
    let info = PipelineInfo {
        max_total_threads_per_threadgroup: pipeline.maxTotalThreadsPerThreadgroup() as u64,
        thread_execution_width: pipeline.threadExecutionWidth() as u64,
        static_threadgroup_memory_bytes: pipeline.staticThreadgroupMemoryLength() as u64,
    };
    Ok(PreparedKernel {
        name: entry.to_string(),
        device_name: device.name().to_string(),
        info,
        queue,
        pipeline,
        buffers,
    })
}

/// One dispatch in its own command buffer; returns (GPUStartTime, GPUEndTime) in seconds.
fn dispatch_once(k: &PreparedKernel, grid: [u64; 3], threads: [u64; 3]) -> Result<(f64, f64)> {
    let label = NSString::from_str(&k.name);
    let cb = k
        .queue
        .commandBuffer()
        .ok_or_else(|| failed("the queue gave no command buffer"))?;
    cb.setLabel(Some(&label));
    let encoder = cb
        .computeCommandEncoder()
        .ok_or_else(|| failed("the command buffer gave no compute encoder"))?;
    encoder.setLabel(Some(&label));
    encoder.setComputePipelineState(&k.pipeline);
    for (index, buffer) in k.buffers.iter().enumerate() {
        // SAFETY: the buffers live as long as `k`; offset 0 is in bounds; indices are dense.
        unsafe { encoder.setBuffer_offset_atIndex(Some(buffer), 0, index) };
    }
    encoder.dispatchThreads_threadsPerThreadgroup(size(grid), size(threads));
    encoder.endEncoding();
    cb.commit();
    cb.waitUntilCompleted();
    if cb.status() != MTLCommandBufferStatus::Completed {
        let why = cb.error().map_or("no error given".to_string(), |e| {
            e.localizedDescription().to_string()
        });
        return Err(failed(format!(
            "the command buffer for `{}` failed: {why}",
            k.name
        )));
    }
    Ok((cb.GPUStartTime(), cb.GPUEndTime()))
}

fn time_calls(
    prepared: &PreparedKernel,
    grid: [u64; 3],
    threads: [u64; 3],
    repeat: i64,
    warmup: i64,
) -> Result<Vec<(f64, f64)>> {
    let counts = validate_counts(repeat, warmup)?;
    for _ in 0..counts.warmup {
        dispatch_once(prepared, grid, threads)?;
    }
    let mut times = Vec::with_capacity(counts.repeat);
    for _ in 0..counts.repeat {
        times.push(dispatch_once(prepared, grid, threads)?);
    }
    Ok(times)
}

/// Times `prepared` with command-buffer GPU timestamps: `warmup` untimed calls, then `repeat`
/// timed ones, one dispatch per command buffer. `repeat` < 1 or `warmup` < 0 is an error.
pub fn benchmark_kernel(
    prepared: &PreparedKernel,
    grid: [u64; 3],
    threads: [u64; 3],
    repeat: i64,
    warmup: i64,
    flops: Option<f64>,
    bytes_moved: Option<f64>,
) -> Result<KernelBenchmark> {
    let times = time_calls(prepared, grid, threads, repeat, warmup)?;
    benchmark_from_gpu_times(&prepared.name, &times, flops, bytes_moved)
}

/// [`benchmark_kernel`], and every timed call recorded into the active call-path session
/// (`results::callpath`), so `key_averages`, `tree` and the exports work on Metal runs.
pub fn profile_kernel(
    prepared: &PreparedKernel,
    grid: [u64; 3],
    threads: [u64; 3],
    repeat: i64,
    warmup: i64,
    flops: Option<f64>,
    bytes_moved: Option<f64>,
) -> Result<KernelBenchmark> {
    let times = time_calls(prepared, grid, threads, repeat, warmup)?;
    let benchmark = benchmark_from_gpu_times(&prepared.name, &times, flops, bytes_moved)?;
    record_launches(kernel_launches(
        &prepared.name,
        &prepared.device_name,
        grid,
        threads,
        &times,
        flops,
        bytes_moved,
    ));
    Ok(benchmark)
}

/// Captures everything `work` does on the default device into `path` (a `.gputrace`,
/// validated by the caller with [`super::validate_capture`]).
pub fn with_capture<T>(path: &str, work: impl FnOnce() -> Result<T>) -> Result<T> {
    let device = device()?;
    // SAFETY: the shared capture manager is a process-wide singleton.
    let manager = unsafe { MTLCaptureManager::sharedCaptureManager() };
    if !manager.supportsDestination(MTLCaptureDestination::GPUTraceDocument) {
        return Err(failed("this system cannot write .gputrace documents"));
    }
    let descriptor = MTLCaptureDescriptor::new();
    // SAFETY: the capture object is a live MTLDevice.
    unsafe { descriptor.setCaptureObject(Some(device.as_ref())) };
    descriptor.setDestination(MTLCaptureDestination::GPUTraceDocument);
    descriptor.setOutputURL(Some(&NSURL::fileURLWithPath(&NSString::from_str(path))));
    manager
        .startCaptureWithDescriptor_error(&descriptor)
        .map_err(|e| {
            failed(format!(
                "cannot start the capture: {}",
                e.localizedDescription()
            ))
        })?;
    let result = work();
    manager.stopCapture();
    result
}

/// `polyprof metal run`: prepare, time, optionally sweep threadgroup sizes.
pub fn run(req: &RunRequest) -> Result<RunReport> {
    validate_counts(req.repeat, req.warmup)?;
    let prepared = prepare(&req.source, &req.entry, &req.buffers)?;
    let max = prepared.info.max_total_threads_per_threadgroup.max(1);
    let mut warnings = Vec::new();
    let mut threadgroup = req.threadgroup;
    let total: u64 = threadgroup.iter().product();
    if total > max {
        warnings.push(format!(
            "threadgroup {total} exceeds the pipeline's maxTotalThreadsPerThreadgroup {max}; using {max}"
        ));
        threadgroup = [max, 1, 1];
    }
    let benchmark = benchmark_kernel(
        &prepared,
        req.grid,
        threadgroup,
        req.repeat,
        req.warmup,
        req.flops,
        req.bytes_moved,
    )?;
    let mut sweep = Vec::new();
    if req.sweep {
        if max < 1024 {
            warnings.push(format!(
                "the pipeline caps threadgroups at {max}; the sweep stops there"
            ));
        }
        for tg in sweep_sizes(max) {
            let b = benchmark_kernel(
                &prepared,
                req.grid,
                [tg, 1, 1],
                req.repeat,
                req.warmup,
                req.flops,
                req.bytes_moved,
            )?;
            sweep.push(SweepPoint {
                threadgroup: tg,
                benchmark: b,
            });
        }
    }
    let best_sweep = sweep
        .iter()
        .enumerate()
        .min_by(|a, b| {
            a.1.benchmark
                .stats
                .median
                .total_cmp(&b.1.benchmark.stats.median)
        })
        .map(|(i, _)| i);
    Ok(RunReport {
        device: prepared.device_name.clone(),
        entry: req.entry.clone(),
        grid: req.grid,
        threadgroup,
        clock: CLOCK,
        pipeline: prepared.info.clone(),
        benchmark,
        sweep,
        best_sweep,
        warnings,
    })
}
