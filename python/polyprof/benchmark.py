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
# The timing itself lives in harness/polyprof_timing.py, one copy shared with the eval worker.
from .harness.polyprof_timing import time_call

__all__ = ["KernelBenchmark", "benchmark_kernel"]

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


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("benchmark_kernel needs PyTorch with CUDA (pip install torch)") from e
    if not torch.cuda.is_available():
        raise RuntimeError("benchmark_kernel needs a CUDA device; torch.cuda.is_available() is False")
    return torch


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

    times, method, _, _ = time_call(torch, call, repeat, warmup, flush_l2, graph, keep_output=False)
    return KernelBenchmark.from_times(label, times, flops, bytes_moved, method=method)
