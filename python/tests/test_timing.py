"""The shared timing module (harness/polyprof_timing.py): what it reads back after a graph's
check replay, and which calls it refuses to time in a graph."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

# Loaded as a file, as the eval worker loads it: it imports nothing of polyprof.
_spec = importlib.util.spec_from_file_location(
    "polyprof_timing_under_test", Path(__file__).resolve().parents[1] / "polyprof" / "harness" / "polyprof_timing.py"
)
timing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(timing)


class Bytes:
    """A stand-in for a 1-D byte view: its length, and the slice bounds it was cut at."""

    def __init__(self, n: int, start: int = 0) -> None:
        self.n, self.start = n, start

    def numel(self) -> int:
        return self.n

    def __getitem__(self, cut: slice) -> "Bytes":
        start, stop = cut.start, min(cut.stop, self.n)
        return Bytes(stop - start, self.start + start)


def bounds(regions):
    return [(r.start, r.start + r.n) for r in regions]


def test_a_large_output_is_read_back_at_its_start_middle_and_end_only():
    size = timing.REPLAY_CHECK_REGION_BYTES
    n = 4 * 2**30  # a 4 GiB output: read whole, it cost seconds a timing block
    regions = bounds(timing._sampled_regions(Bytes(n)))
    assert regions == [(0, size), (n // 2 - size // 2, n // 2 + size // 2), (n - size, n)]
    assert sum(stop - start for start, stop in regions) == 3 * size


def test_a_small_output_is_read_back_whole_once():
    assert bounds(timing._sampled_regions(Bytes(1000))) == [(0, 1000)]
    # Just over one region: the three overlap but cover every byte.
    n = timing.REPLAY_CHECK_REGION_BYTES + 10
    regions = bounds(timing._sampled_regions(Bytes(n)))
    assert regions[0][0] == 0 and regions[-1][1] == n
    assert all(stop - start == timing.REPLAY_CHECK_REGION_BYTES for start, stop in regions)


def cuda_or_skip():
    torch = pytest.importorskip("torch", reason="torch is not installed here")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


def test_a_call_whose_work_runs_outside_the_capture_is_timed_with_events():
    """A µs kernel launched on a private stream ran once while the graph was captured and never
    in a replay: its output keeps the check's fill, so the call is timed with events."""
    torch = cuda_or_skip()
    x = torch.randn(1 << 20, device="cuda")  # 4 MB out: the check reads back sampled regions
    private = torch.cuda.Stream()

    def outside() -> object:
        # No wait either way: an event joining the streams would pull `private` into the capture.
        with torch.cuda.stream(private):
            return x + 1

    times, method, _, _ = timing.time_call(torch, outside, repeat=10, warmup=2, flush_l2=True, graph=None)
    assert method.startswith("events"), method
    assert len(times) == 10
    # The same work on the capturing stream is timed in graph pairs.
    _, method, _, _ = timing.time_call(torch, lambda: x + 1, repeat=10, warmup=2, flush_l2=True, graph=None)
    assert method.startswith("cuda_graph"), method
