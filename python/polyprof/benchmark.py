"""``benchmark_kernel``: GPU time of a CUDA callable (a PyTorch op, a Triton launch), measured so
that the answer does not depend on how fast Python launches.

What it corrects (see docs/python.md for the measurements behind each choice):
- warm-up calls run first and are not timed (compilation, autotuning, first-touch);
- the L2 cache is flushed before every timed call by default (a kernel timed in a loop would
  otherwise read its inputs from a warm L2), and the flush itself is outside the timed region;
- each timed call is bracketed by CUDA events recorded on the stream, so the time is the GPU's,
  and all calls are queued before the first result is read, so the GPU is never idle waiting
  for Python between the two events;
- for µs-scale kernels, where the launch gap still shows, ``graph=True`` (chosen automatically
  when the first estimate is under 20 µs) captures ``batch`` back-to-back launches into a CUDA
  graph and times whole replays, divided by the batch.
Statistics (min, median, mean, p90, max, stddev, IQR) and GFLOP/s, GB/s come from polyprof's one
statistics module, the same ``KernelBenchmark`` the Metal lane returns.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Dict, List, Optional

from . import _native

__all__ = ["KernelBenchmark", "benchmark_kernel"]

#: Kernels whose first estimate is below this are timed in CUDA-graph batches (ms).
GRAPH_BELOW_MS = 0.020
#: Target GPU time of one graph replay (ms): long enough that the events' cost is noise.
GRAPH_REPLAY_MS = 1.0


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


def _l2_flusher(torch: Any) -> Callable[[], None]:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
    # Twice the L2, so whatever the replacement policy, nothing of the kernel's data survives.
    buffer = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
    return buffer.zero_


def _time_events(torch: Any, call: Callable[[], Any], repeat: int, flush: Optional[Callable[[], None]]) -> List[float]:
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
    stream = torch.cuda.current_stream()
    torch.cuda.synchronize()
    for i in range(repeat):
        if flush is not None:
            flush()
        starts[i].record(stream)
        call()
        ends[i].record(stream)
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


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

    ``graph``: ``True`` times CUDA-graph replays of a batch of launches (for µs kernels; needs a
    graph-capturable ``fn``), ``False`` one launch per event pair, ``None`` chooses by the first
    estimate. ``flops`` and ``bytes_moved`` are per call. ``repeat < 1`` or ``warmup < 0`` is a
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

    if graph is None:
        estimate = sorted(_time_events(torch, call, 5, flush))[2]
        graph = estimate < GRAPH_BELOW_MS
    else:
        estimate = None

    if not graph:
        times = _time_events(torch, call, repeat, flush)
        return KernelBenchmark.from_times(label, times, flops, bytes_moved, method="events")

    if estimate is None:
        estimate = sorted(_time_events(torch, call, 5, flush))[2]
    batch = max(1, min(1000, int(GRAPH_REPLAY_MS / max(estimate, 1e-4))))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()  # capture needs the callable to have run once on the capturing stream
    torch.cuda.current_stream().wait_stream(side)
    cuda_graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cuda_graph):
        for _ in range(batch):
            call()
    cuda_graph.replay()
    torch.cuda.synchronize()
    replays = _time_events(torch, cuda_graph.replay, repeat, flush)
    times = [t / batch for t in replays]
    return KernelBenchmark.from_times(label, times, flops, bytes_moved, method=f"cuda_graph x{batch}")
