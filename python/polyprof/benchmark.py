"""``benchmark_kernel``: GPU time of a CUDA callable (a PyTorch op, a Triton launch), measured so
that the answer does not depend on how fast Python launches.

What it corrects (see docs/python.md for the H200 measurements behind each choice):
- warm-up calls run first and are not timed (compilation, autotuning, first-touch);
- the L2 cache is flushed before every timed call by default, by *reading* a buffer twice the
  L2's size: a write flush (``zero_``, what ``do_bench`` does) leaves the L2 full of dirty lines
  whose write-back then runs inside the timed kernel (+15 % on an 8 M-element add);
- the GPU is held busy (a spin kernel) while Python queues every timed call, so no event pair
  waits for a launch that Python has not issued yet;
- kernels under 100 µs (by a first estimate) are timed in CUDA graphs, where no launch gap
  exists: ``batch`` pairs of (flush, call) against ``batch`` flushes alone, the difference
  divided by the batch. Each call then starts on a cold L2 after the flush has ended, as under
  Nsight Compute. (An event pair around one launch adds about 2 µs, and a graph of back-to-back
  calls overlaps one call's tail with the next one's start on a warm L2: both were 2x off.)
  With ``flush_l2=False`` the separator is a one-element fill instead of the flush.
Statistics (min, median, mean, p90, max, stddev, IQR) and GFLOP/s, GB/s come from polyprof's one
statistics module, the same ``KernelBenchmark`` the Metal lane returns.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Dict, List, Optional

from . import _native

__all__ = ["KernelBenchmark", "benchmark_kernel"]

#: Kernels whose first estimate is below this are timed in CUDA graphs (ms): above it, the
#: ~2 µs an event pair adds is under 2 %.
GRAPH_BELOW_MS = 0.100
#: Target GPU time of one graph replay (ms): long enough that the events' cost and the
#: flushes' own variation average out. On the H200, 4 ms gave a CV of 2.0-4.1 % on 3-5 µs
#: kernels, 32 ms 0.7-1.8 % (both measured side by side, 2026-12-01); a µs kernel then costs
#: about 2 x repeat x 32 ms to time.
GRAPH_REPLAY_MS = 32.0
#: Spin cycles per timed call while Python queues the calls (about 0.2 ms at 2 GHz).
HOLD_CYCLES_PER_CALL = 400_000


class KernelBenchmark:
    """The GPU time of ``calls`` timed calls; times in milliseconds."""

    __slots__ = ("_doc", "method")

    def __init__(self, doc: Dict[str, Any], method: str):
        self._doc = doc
        self.method = method

    name = property(lambda self: self._doc["name"])
    calls = property(lambda self: self._doc["calls"])
    times_ms = property(lambda self: list(self._doc["gpu_times_ms"]))
    min_ms = property(lambda self: self._doc["stats"]["min"])
    median_ms = property(lambda self: self._doc["stats"]["median"])
    mean_ms = property(lambda self: self._doc["stats"]["mean"])
    p90_ms = property(lambda self: self._doc["stats"]["p90"])
    max_ms = property(lambda self: self._doc["stats"]["max"])
    stddev_ms = property(lambda self: self._doc["stats"]["stddev"])
    iqr_ms = property(lambda self: self._doc["stats"]["iqr"])
    gflops_per_s = property(lambda self: self._doc.get("gflops_per_s"))
    gb_per_s = property(lambda self: self._doc.get("gb_per_s"))

    @property
    def cv(self) -> float:
        """Coefficient of variation (stddev / mean)."""
        mean = self.mean_ms
        return self.stddev_ms / mean if mean else math.inf

    def summary(self) -> str:
        return _native.kernel_benchmark_summary(json.dumps(self._doc)) + f" [{self.method}]"

    def to_dict(self) -> Dict[str, Any]:
        out = dict(self._doc)
        out["method"] = self.method
        return out

    def __repr__(self) -> str:
        return f"KernelBenchmark({self.summary()!r})"

    @staticmethod
    def from_times(
        name: str,
        times_ms: List[float],
        flops: Optional[float] = None,
        bytes_moved: Optional[float] = None,
        method: str = "given",
    ) -> "KernelBenchmark":
        """Summarize per-call GPU times measured elsewhere."""
        doc = _native.kernel_benchmark_json(name, [float(t) for t in times_ms], flops, bytes_moved)
        return KernelBenchmark(json.loads(doc), method)


def _torch():
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("benchmark_kernel needs PyTorch with CUDA (pip install torch)") from e
    if not torch.cuda.is_available():
        raise RuntimeError("benchmark_kernel needs a CUDA device; torch.cuda.is_available() is False")
    return torch


def _l2_flusher(torch: Any) -> Callable[[], Any]:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
    # Twice the L2, so whatever the replacement policy, nothing of the kernel's data survives;
    # read, so that what survives is clean (evicting it costs the timed kernel nothing).
    # int32 (its sum takes ~180 µs on the H200): a float32 sum (38 µs) or a zero_ (31 µs) right
    # before the call made the graph difference read 7-23 % high on 1-32 M-element adds.
    buffer = torch.ones(2 * l2 // 4, dtype=torch.int32, device="cuda")
    return buffer.sum


def _separator(torch: Any) -> Callable[[], Any]:
    """A minimal kernel between calls when the L2 is not flushed."""
    tiny = torch.zeros(1, device="cuda")
    return tiny.zero_


def _hold_gpu(torch: Any, calls: int) -> None:
    """Keep the GPU busy while Python queues ``calls`` timed calls, so every event pair times GPU
    work only (without it, the start event of a µs kernel waits for Python's next launch)."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        sleep(min(2**40, HOLD_CYCLES_PER_CALL * max(1, calls)))


def _time_events(torch: Any, call: Callable[[], Any], repeat: int, flush: Optional[Callable[[], Any]]) -> List[float]:
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
    stream = torch.cuda.current_stream()
    torch.cuda.synchronize()
    _hold_gpu(torch, repeat)
    for i in range(repeat):
        if flush is not None:
            flush()
        starts[i].record(stream)
        call()
        ends[i].record(stream)
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def _median(values: List[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _capture(torch: Any, body: Callable[[], Any], batch: int) -> Any:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        body()  # capture needs the callable to have run once on the capturing stream
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(batch):
            body()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def _time_graph_pairs(
    torch: Any, call: Callable[[], Any], repeat: int, separator: Callable[[], Any], estimate_ms: float
) -> "tuple[List[float], int]":
    """Per-call times from graphs of ``batch`` (separator, call) pairs minus graphs of ``batch``
    separators: no launch gap, no overlap of one call with the next, the separator's own time
    taken out."""
    separator_ms = _median(_time_events(torch, separator, 5, None))
    batch = max(1, min(1000, int(GRAPH_REPLAY_MS / max(estimate_ms + separator_ms, 1e-4))))

    def pair() -> None:
        separator()
        call()

    paired = _capture(torch, pair, batch)
    alone = _capture(torch, separator, batch)
    base = _median(_time_events(torch, alone.replay, repeat, None))
    replays = _time_events(torch, paired.replay, repeat, None)
    return [(t - base) / batch for t in replays], batch


def benchmark_kernel(
    fn: Callable[..., Any],
    *args: Any,
    repeat: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
    graph: Optional[bool] = None,
    flops: Optional[float] = None,
    bytes_moved: Optional[float] = None,
    name: Optional[str] = None,
    **kwargs: Any,
) -> KernelBenchmark:
    """Time ``fn(*args, **kwargs)`` on the GPU ``repeat`` times after ``warmup`` untimed calls.

    ``graph``: ``True`` times CUDA graphs of (flush, call) pairs against graphs of flushes alone
    (for kernels under 100 µs; needs a graph-capturable ``fn``), ``False`` one call per event
    pair, ``None`` chooses by a first estimate (and falls back to events when ``fn`` cannot be
    captured). ``flops`` and ``bytes_moved`` are per call. ``repeat < 1`` or ``warmup < 0`` is a
    ``ValueError``."""
    if not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an integer >= 1, got {repeat!r}")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    for label, value in (("flops", flops), ("bytes_moved", bytes_moved)):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{label} must be a finite number >= 0, got {value!r}")
    torch = _torch()
    label = name or getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)

    def call() -> Any:
        return fn(*args, **kwargs)

    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    flush = _l2_flusher(torch) if flush_l2 else None

    estimate = _median(_time_events(torch, call, 5, flush))
    auto = graph is None
    if auto:
        graph = estimate < GRAPH_BELOW_MS

    if graph:
        separator = flush if flush is not None else _separator(torch)
        try:
            times, batch = _time_graph_pairs(torch, call, repeat, separator, estimate)
        except Exception as error:  # not capturable (synchronizes, allocates host memory, ...)
            if not auto:
                raise
            torch.cuda.synchronize()
            times = _time_events(torch, call, repeat, flush)
            method = f"events (CUDA graph capture failed: {type(error).__name__})"
            return KernelBenchmark.from_times(label, times, flops, bytes_moved, method=method)
        what = "flush" if flush is not None else "separator"
        method = f"cuda_graph {batch}x({what}+call) - {batch}x{what}"
        return KernelBenchmark.from_times(label, times, flops, bytes_moved, method=method)

    times = _time_events(torch, call, repeat, flush)
    return KernelBenchmark.from_times(label, times, flops, bytes_moved, method="events")
