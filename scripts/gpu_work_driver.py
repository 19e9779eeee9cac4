#!/usr/bin/env python3
"""The child process of scripts/gpu_work_checks.py: one side of one case, on the GPU.

    gpu_work_driver.py profile SOURCE CLASS SPECS.json   # two calls, each in polyprof/call/K
    gpu_work_driver.py time SOURCE CLASS TIMES.json      # timed as polyprof eval times

SOURCE defines CLASS (`Model` or `ModelNew`), `get_inputs()` and optionally
`get_init_inputs()`, as KernelBench problems do. Both modes build the model as the eval worker
does (seeded with 0 before `get_init_inputs()` and again before the constructor), draw call K's
inputs under seed K, and write what they saw as JSON: `profile` the arrays of each call (dtype,
shape, stride, nbytes: the evidence's TensorSpec), `time` the per-call times of
`polyprof_timing.time_call` (the eval's own timing, L2 flushed before each call)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python" / "polyprof" / "harness"))
import polyprof_timing  # noqa: E402

CALLS = 2


def load(source: str, cls: str):
    spec = importlib.util.spec_from_file_location("case_source", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    init = module.get_init_inputs() if hasattr(module, "get_init_inputs") else []
    torch.manual_seed(0)
    init = [x.cuda() if isinstance(x, torch.Tensor) else x for x in init]
    model = getattr(module, cls)(*init)
    if isinstance(model, torch.nn.Module):
        model = model.cuda()
    return module, model


def inputs(module, seed: int):
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    return [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]


def spec(x) -> dict:
    if not isinstance(x, torch.Tensor):
        return {"dtype": type(x).__name__, "shape": [], "nbytes": 0, "value": x}
    return {
        "dtype": str(x.dtype).removeprefix("torch."),
        "shape": list(x.shape),
        "stride": list(x.stride()),
        "nbytes": x.numel() * x.element_size(),
    }


def outputs(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def main(mode: str, source: str, cls: str, out: str) -> None:
    module, model = load(source, cls)
    with torch.no_grad():
        if mode == "profile":
            model(*inputs(module, 100))  # warmup: compilation and autotuning stay out of the calls
            torch.cuda.synchronize()
            calls = []
            for k in range(CALLS):
                args = inputs(module, k)
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_push(f"polyprof/call/{k}")
                result = model(*args)
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_pop()
                calls.append({"inputs": [spec(a) for a in args], "outputs": [spec(o) for o in outputs(result)]})
            Path(out).write_text(json.dumps({"calls": calls, "device_name": torch.cuda.get_device_name()}))
        else:
            args = inputs(module, 0)
            times, method, batch, _ = polyprof_timing.time_call(
                torch, lambda: model(*args), repeat=20, warmup=5, flush_l2=True, keep_output=False
            )
            Path(out).write_text(json.dumps({"times_ms": times, "method": method, "batch": batch}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
