"""GPU and host timing of one callable: the one copy shared by ``polyprof.benchmark_kernel`` and
the eval worker (``polyprof_eval_worker.py``, which polyprof writes beside this file).

Standalone on purpose: it imports nothing of polyprof (the eval worker runs it from a bare
directory) and takes ``torch`` as an argument, so a CPU-only problem never imports PyTorch.

What the GPU path corrects (docs/python.md has the H200 measurements behind each choice):
- warm-up calls run first and are not timed (compilation, autotuning, first-touch);
- the L2 cache is flushed before every timed call by default, by *reading* a buffer twice the
  L2's size: a write flush (``zero_``, what ``do_bench`` does) leaves the L2 full of dirty lines
  whose write-back then runs inside the timed kernel (+15 % on an 8 M-element add);
- the GPU is held busy (a spin kernel) while Python queues every timed call, so no event pair
  waits for a launch that Python has not issued yet;
- kernels under ``GRAPH_BELOW_MS`` (by a first estimate) are timed in CUDA graphs, where no launch
  gap exists: ``batch`` pairs of (flush, call) against ``batch`` flushes alone, the difference
  divided by the batch. With ``flush_l2=False`` the separator is a one-element fill instead. A
  graph whose replay does not write the call's output did not capture the call (its kernel ran
  on a stream outside the capture): that call is timed with events.
"""

from __future__ import annotations

import time
from typing import Any, Callable, List, Optional, Tuple

__all__ = [
    "GRAPH_BELOW_MS",
    "GRAPH_MIN_REPLAYS",
    "GRAPH_REPLAY_MS",
    "HOLD_CYCLES_PER_CALL",
    "GraphMissedTheCall",
    "time_call",
    "time_call_host",
    "time_calls_host",
]

#: Kernels whose first estimate is below this are timed in CUDA graphs (ms): above it, the
#: ~2 µs an event pair adds is under 2 %.
GRAPH_BELOW_MS = 0.100
#: Target GPU time of one graph replay (ms): long enough that the events' cost and the
#: flushes' own variation average out. On the H200, 4 ms gave a CV of 2.0-4.1 % on 3-5 µs
#: kernels, 32 ms 0.7-1.8 % (both measured side by side, 2026-12-01).
GRAPH_REPLAY_MS = 32.0
#: Replays of each graph (paired and baseline) per block, at least: a replay already averages
#: ``batch`` calls, so ``repeat`` counts calls on the graph path (``ceil(repeat / batch)``
#: replays) and this floor keeps a block's median over enough replays. At one replay per
#: ``repeat`` a µs kernel cost 2 x 50 x 32 ms = 3.2 s of GPU a block; at this floor 0.64 s.
GRAPH_MIN_REPLAYS = 10
#: Spin cycles per timed call while Python queues the calls (about 0.2 ms at 2 GHz).
HOLD_CYCLES_PER_CALL = 400_000

#: (per-call times in ms, method, calls per graph replay or 1, output of the last timed call)
Timing = Tuple[List[float], str, int, Any]


def _l2_flusher(torch: Any) -> Callable[[], Any]:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
    # Twice the L2, so whatever the replacement policy, nothing of the kernel's data survives;
    # read, so that what survives is clean (evicting it costs the timed kernel nothing).
    # int32 (its sum takes ~180 µs on the H200): a float32 sum (38 µs) or a zero_ (31 µs) right
    # before the call made the graph difference read 7-23 % high on 1-32 M-element adds.
    buffer = torch.ones(2 * l2 // 4, dtype=torch.int32, device="cuda")
    flush: Callable[[], Any] = buffer.sum
    return flush


def _separator(torch: Any) -> Callable[[], Any]:
    """A minimal kernel between calls when the L2 is not flushed."""
    tiny = torch.zeros(1, device="cuda")
    separate: Callable[[], Any] = tiny.zero_
    return separate


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


def _marks_ms(torch: Any, marks_cost: Optional[Callable[[], None]]) -> float:
    """What the marks around one call add to an event-timed call: event pairs around the marks'
    imitation against event pairs around nothing (both include the events' own cost)."""
    if marks_cost is None:
        return 0.0
    with_marks = _median(_time_events(torch, marks_cost, 21, None))
    empty = _median(_time_events(torch, lambda: None, 21, None))
    return max(0.0, with_marks - empty)


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


class GraphMissedTheCall(RuntimeError):
    """The captured graph does not do the call's work (the caller times with events instead)."""


def _output_tensors(torch: Any, output: Any) -> List[Any]:
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (list, tuple)):
        return [t for t in output if isinstance(t, torch.Tensor)]
    return []


#: Bytes of an output read back per sampled region after the check replay (``_replay_writes``).
REPLAY_CHECK_REGION_BYTES = 64 * 1024


def _sampled_regions(raw: Any) -> List[Any]:
    """Up to three contiguous slices of a byte view (its start, middle and end), each at most
    ``REPLAY_CHECK_REGION_BYTES``: contiguous, so each reaches the host as a plain copy, with no
    gather kernel of the harness's own in the timing step."""
    n = int(raw.numel())
    size = min(n, REPLAY_CHECK_REGION_BYTES)
    starts = sorted({0, max(0, n // 2 - size // 2), n - size})
    return [raw[start : start + size] for start in starts]


def _replay_writes(torch: Any, graph: Any, output: Any) -> bool:
    """Whether one replay of ``graph`` writes the call's output (a tensor, or a list or tuple of
    them, in the graph's memory): each is filled with all-ones bytes (NaN for floats, -1 for
    integers: what the eval's poison writes), the graph replayed once, and at least one must
    have changed. A kernel the call launched on a stream outside the capture (KernelBench's
    inline CUDA on the legacy default stream) ran once while capturing and never in a replay,
    so its output keeps the fill. An output that is all ones bytes anyway reads as unwritten:
    that call is timed with events, which is never wrong, only less precise for tiny kernels.
    Nothing to check (no tensor output): ``True``.

    Only the start, middle and end of each output are read back (``_sampled_regions``): the
    whole of a 4 GB output took seconds to copy and compare on the host, every block, for a
    candidate whose own timer had sent it down this path (H100, 2026-12-07). The question is
    whether the replay ran the call's kernels at all, which a missed capture answers
    everywhere; an output the replay writes only elsewhere is timed with events, never wrong.
    Nothing here is a verdict: the scored pass's timeline still places every kernel."""
    # Only dense outputs are filled and read back byte for byte; an output of another layout
    # is not judged here (the eval's own poison and comparison still see it).
    raws = [
        t.view(-1).view(torch.uint8)
        for t in _output_tensors(torch, output)
        if t.numel() > 0 and t.is_contiguous()
    ]
    if not raws:
        return True
    for raw in raws:
        raw.fill_(255)
    graph.replay()
    torch.cuda.synchronize()
    # Compared on the host: a comparison kernel here would be GPU work of the harness's own in
    # the timing step, which the scored pass's timeline allows only for the flush and fill.
    return any(not bool((region.cpu() == 255).all()) for raw in raws for region in _sampled_regions(raw))


def _time_graph_pairs(
    torch: Any,
    call: Callable[[], Any],
    repeat: int,
    separator: Callable[[], Any],
    estimate_ms: float,
    output_of: Callable[[], Any],
    max_batch: int = 1000,
    marks_cost: Optional[Callable[[], None]] = None,
) -> "tuple[List[float], int]":
    """Per-call times from graphs of ``batch`` (separator, call) pairs minus graphs of ``batch``
    separators: no launch gap, no overlap of one call with the next, the separator's own time
    taken out. ``repeat`` calls in all, in ``GRAPH_MIN_REPLAYS`` replays at least, one time per
    replay. The paired graph is replayed last, so what its last call wrote is the output of
    the last timed call. ``output_of()``: the output of the last captured call, which one replay
    must write (``GraphMissedTheCall`` otherwise). ``max_batch``: a bound on the batch from outside
    the call's process (see ``time_call``)."""
    separator_ms = _median(_time_events(torch, separator, 5, None))
    batch = max(1, min(1000, max_batch, int(GRAPH_REPLAY_MS / max(estimate_ms + separator_ms, 1e-4))))

    def pair() -> None:
        separator()
        call()

    paired = _capture(torch, pair, batch)
    if not _replay_writes(torch, paired, output_of()):
        raise GraphMissedTheCall(
            "a replay of the captured graph left the call's output unwritten: the call's work ran "
            "outside the capture (a kernel on the legacy default stream, a host thread), so "
            "the graph cannot time it"
        )
    # The baseline graph holds the separators alone: with the marks' imitation (memsets) in it,
    # CUPTI recorded about a third of the paired graph's marks with the imitation's size and
    # value (H100, CUDA 13, 2026-12-06; whether the imitation wrote the marks' buffer or its
    # own), which broke the calls' windows of an honest Triton add. The marks' cost is taken off
    # as on the events path, measured outside any graph.
    alone = _capture(torch, separator, batch)
    replays = max(GRAPH_MIN_REPLAYS, -(-repeat // batch))
    base = _median(_time_events(torch, alone.replay, replays, None))
    paired_ms = _time_events(torch, paired.replay, replays, None)
    marks_ms = _marks_ms(torch, marks_cost)
    return [(t - base) / batch - marks_ms for t in paired_ms], batch


def _check_counts(repeat: Any, warmup: Any) -> None:
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"repeat must be an integer >= 1, got {repeat!r}")
    if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")


def time_call(
    torch: Any,
    call: Callable[[], Any],
    repeat: int,
    warmup: int,
    flush_l2: bool,
    graph: Optional[bool] = None,
    keep_output: bool = True,
    max_batch: int = 1000,
    marks_cost: Optional[Callable[[], None]] = None,
) -> Timing:
    """GPU time of ``call()`` (a CUDA callable): ``repeat`` timed calls after ``warmup`` untimed
    ones (on the graph path in replays of ``batch`` calls, one time per replay). ``graph``:
    ``True`` CUDA graphs of (flush, call) pairs against graphs of flushes alone,
    ``False`` one call per event pair, ``None`` graphs when a first estimate is below
    ``GRAPH_BELOW_MS`` (falling back to events when ``call`` cannot be captured).

    ``max_batch`` bounds the calls per graph replay whatever the first estimate says. The estimate
    comes from timers inside the process, which a hostile call can patch: one that reports a
    nanosecond would otherwise get 1000 calls per replay and hold the GPU a thousand times longer
    than its block needs. The eval passes a bound derived from the reference's own time.

    ``marks_cost`` queues GPU work as costly as the harness's marks around one call (the scored
    pass's timeline); its cost, measured with event pairs around it against event pairs around
    nothing, outside any graph, is taken off each call on either path.

    Returns ``(times_ms, method, batch, last_output)``. ``last_output`` is what the last timed
    call returned (``None`` with ``keep_output=False``); on the graph path, a copy of the output
    buffer the graph's last call wrote during the last replay, so it outlives the graph."""
    _check_counts(repeat, warmup)
    last: List[Any] = [None]
    timed = call
    if keep_output:

        def timed() -> Any:
            # Drop the previous output first so the allocator can hand the same block back, as
            # it does when the result is discarded.
            last[0] = None
            last[0] = call()
            return last[0]

    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    flush = _l2_flusher(torch) if flush_l2 else None

    estimate = _median(_time_events(torch, timed, 5, flush))
    auto = graph is None
    if auto:
        graph = estimate < GRAPH_BELOW_MS

    if graph:
        separator = flush if flush is not None else _separator(torch)
        try:
            times, batch = _time_graph_pairs(
                torch, timed, repeat, separator, estimate, lambda: last[0], max_batch, marks_cost
            )
        except Exception as error:  # not capturable (synchronizes, allocates host memory, ...)
            if not auto:
                raise
            torch.cuda.synchronize()
            marks_ms = _marks_ms(torch, marks_cost)
            times = [t - marks_ms for t in _time_events(torch, timed, repeat, flush)]
            return times, f"events (CUDA graph capture failed: {type(error).__name__})", 1, last[0]
        what = "flush" if flush is not None else "separator"
        output = _detach_from_graph(torch, last[0]) if keep_output else None
        return times, f"cuda_graph {batch}x({what}+call) - {batch}x{what}", batch, output

    marks_ms = _marks_ms(torch, marks_cost)
    times = [t - marks_ms for t in _time_events(torch, timed, repeat, flush)]
    return times, "events", 1, last[0]


def _detach_from_graph(torch: Any, output: Any) -> Any:
    """A copy of a graph's output (a tensor or a tuple/list of them) in ordinary memory."""
    if isinstance(output, torch.Tensor):
        copy = output.clone()
    elif isinstance(output, (tuple, list)):
        copy = type(output)(o.clone() if isinstance(o, torch.Tensor) else o for o in output)
    else:
        copy = output
    torch.cuda.synchronize()
    return copy


def time_call_host(call: Callable[[], Any], repeat: int, warmup: int) -> Timing:
    """Wall time of ``call()`` on the host (``time.perf_counter`` around each call): the CPU
    path, where the call's work is done when it returns. Method ``host``, batch 1."""
    _check_counts(repeat, warmup)
    for _ in range(warmup):
        call()
    times: List[float] = []
    output: Any = None
    for _ in range(repeat):
        output = None
        start = time.perf_counter()
        output = call()
        times.append((time.perf_counter() - start) * 1e3)
    return times, "host", 1, output


def time_calls_host(
    calls: List[Callable[[], Any]],
    warmup_call: Callable[[], Any],
    warmup: int,
    before_each: Optional[Callable[[int], None]] = None,
) -> "tuple[List[float], str, int, List[Any]]":
    """Wall time of each of ``calls`` in turn (``time.perf_counter`` around each), after
    ``warmup`` untimed calls of ``warmup_call``; ``before_each(i)`` runs untimed before call
    ``i`` (the eval poisons the memory the output will take). Every output is kept, in order:
    which ones are compared is decided outside this process, after the block. Method ``host``."""
    _check_counts(max(1, len(calls)), warmup)
    for _ in range(warmup):
        warmup_call()
    times: List[float] = []
    outputs: List[Any] = []
    for i, call in enumerate(calls):
        if before_each is not None:
            before_each(i)
        start = time.perf_counter()
        output = call()
        times.append((time.perf_counter() - start) * 1e3)
        outputs.append(output)
    return times, "host", 1, outputs
