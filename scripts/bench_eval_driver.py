#!/usr/bin/env python3
"""One KernelBench-format problem timed outside polyprof, for scripts/bench-eval.sh (needs torch
and a CUDA device; triton for do_bench):

  bench_eval_driver.py time PROBLEM [KERNELBENCH_TIMING_PY]
      KernelBench's cuda_event timing (its own timing.py when given and present, else the same
      loop re-implemented below) and triton.testing.do_bench; prints `BENCH {json}` last.
  bench_eval_driver.py ncu PROBLEM CALLS
      warm-up calls, then CALLS calls between cudaProfilerStart and cudaProfilerStop: run it
      under `ncu --profile-from-start off` so that only those calls are profiled.

Inputs and weights are made under seed 42 (KernelBench's), on the GPU, under torch.no_grad()."""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any, Callable, List

import torch

SEED = 42
#: KernelBench's eval defaults: 3 warm-up calls, the first timed trial discarded.
KB_WARMUP = 3
KB_DISCARD_FIRST = 1
KB_TRIALS = int(os.environ.get("BENCH_KB_TRIALS", "20"))
NCU_WARMUP = 3


def load(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(problem: str) -> "tuple[Callable[..., Any], List[Any]]":
    module = load(problem, "bench_problem")
    torch.manual_seed(SEED)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    torch.manual_seed(SEED)
    model = module.Model(*module.get_init_inputs())
    if isinstance(model, torch.nn.Module):
        model = model.cuda()
    return model, inputs


def kb_clear_l2_cache() -> None:
    """KernelBench's flush: a 256 MB int64 fill."""
    dummy = torch.empty((32, 1024, 1024), dtype=torch.int64, device="cuda")
    dummy.fill_(42)
    del dummy


def kb_cuda_event_reimplemented(model: Callable[..., Any], inputs: List[Any]) -> List[float]:
    """KernelBench's time_execution_with_cuda_event: synchronize, flush, an event pair around one
    call on the current stream, synchronize; the first trial discarded."""
    for _ in range(KB_WARMUP):
        model(*inputs)
        torch.cuda.synchronize()
    torch.cuda.empty_cache()
    times = []
    for trial in range(KB_TRIALS + KB_DISCARD_FIRST):
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        kb_clear_l2_cache()
        start.record()
        model(*inputs)
        end.record()
        torch.cuda.synchronize()
        if trial >= KB_DISCARD_FIRST:
            times.append(start.elapsed_time(end))
    return times


def time_problem(problem: str, timing_py: str) -> dict:
    model, inputs = prepare(problem)
    with torch.no_grad():
        if timing_py and Path(timing_py).is_file():
            timing = load(timing_py, "kernelbench_timing")
            kb_times = timing.time_execution_with_cuda_event(
                model, inputs, num_warmup=KB_WARMUP, num_trials=KB_TRIALS,
                discard_first=KB_DISCARD_FIRST, verbose=False, device=torch.device("cuda:0"))
            kb_source = "kernelbench timing.py"
        else:
            kb_times = kb_cuda_event_reimplemented(model, inputs)
            kb_source = "re-implementation"
        import triton.testing

        do_bench_ms = triton.testing.do_bench(lambda: model(*inputs), warmup=25, rep=100,
                                              return_mode="median")
    return {
        # KernelBench reports the mean (get_timing_stats); the median is here for comparison.
        "kb_event_mean_ms": statistics.fmean(kb_times),
        "kb_event_median_ms": statistics.median(kb_times),
        "kb_source": kb_source,
        "do_bench_median_ms": float(do_bench_ms),
    }


def profile_calls(problem: str, calls: int) -> dict:
    model, inputs = prepare(problem)
    with torch.no_grad():
        for _ in range(NCU_WARMUP):
            model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for _ in range(calls):
            model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return {"calls": calls}


def main(argv: List[str]) -> int:
    if len(argv) >= 3 and argv[1] == "time":
        result = time_problem(argv[2], argv[3] if len(argv) > 3 else "")
    elif len(argv) == 4 and argv[1] == "ncu":
        result = profile_calls(argv[2], int(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print("BENCH " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
