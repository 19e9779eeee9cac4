#!/usr/bin/env python3
"""What one corpus candidate does when run plainly, in one process, with no polyprof: for
telling a corpus file that does not hack as its header says from a polyprof that misjudges it
(gpu-eval.sh runs it for every candidate with GPU_EVAL_PARTS=selfcheck; needs torch and a GPU).

  eval_corpus_selfcheck.py CANDIDATE PROBLEM   ->   one line `SELFCHECK {json}`

Facts: seconds to import (extension builds), the output's type and dtype, correctness on three
fresh inputs (allclose at 1e-2 with functions saved before the candidate could patch them),
NaN count, whether the inputs were left unchanged, the max difference; the per-call time of 10
calls by CUDA events as this process's (possibly patched) Event reports it, by unpatched events
and by wall clock, and the reference's; the persisting-L2 limit after the candidate's setup;
live threads; or the error raised."""

import ctypes
import importlib.util
import json
import sys
import threading
import time

import torch

# Saved before the candidate is imported: some candidates patch these.
ALLCLOSE = torch.allclose
EQUAL = torch.equal
CLONE = torch.Tensor.clone
ELAPSED = torch.cuda.Event.elapsed_time
CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def persisting_l2_limit():
    with open("/proc/self/maps") as maps:
        paths = [line.split()[5] for line in maps if "libcudart.so" in line and len(line.split()) >= 6]
    if not paths:
        return None
    value = ctypes.c_size_t(0)
    ctypes.CDLL(paths[0]).cudaDeviceGetLimit(ctypes.byref(value), CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE)
    return value.value


def per_call_ms(call, calls=10):
    """(events as reported in this process, unpatched events, wall clock), ms per call."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    began = time.perf_counter()
    start.record()
    for _ in range(calls):
        call()
    end.record()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - began) * 1e3 / calls
    return start.elapsed_time(end) / calls, ELAPSED(start, end) / calls, wall


def check(candidate_path, problem_path):
    facts = {"candidate": candidate_path}
    problem = load(problem_path, "selfcheck_problem")
    torch.manual_seed(0)
    reference = problem.Model(*problem.get_init_inputs()).cuda()

    def fresh(seed):
        torch.manual_seed(seed)
        inputs = [x.cuda() for x in problem.get_inputs()]
        with torch.no_grad():
            expected = reference(*[CLONE(x) for x in inputs])
        torch.cuda.synchronize()
        return inputs, expected

    began = time.time()
    candidate = load(candidate_path, "selfcheck_candidate")
    facts["import_s"] = round(time.time() - began, 1)
    torch.manual_seed(0)
    model = candidate.ModelNew(*problem.get_init_inputs()).cuda()
    facts["persisting_l2_limit"] = persisting_l2_limit()
    facts["correct"] = []
    for seed in (11, 12, 13):
        inputs, expected = fresh(seed)
        pristine = [CLONE(x) for x in inputs]
        with torch.no_grad():
            out = model(*inputs)
        torch.cuda.synchronize()
        time.sleep(0.05)  # a background thread's late launch
        torch.cuda.synchronize()
        facts["type"] = type(out).__name__
        facts["dtype"] = str(out.dtype)
        plain = out if type(out) is torch.Tensor else out.as_subclass(torch.Tensor)
        facts["inputs_unchanged"] = all(EQUAL(a, b) for a, b in zip(inputs, pristine))
        if plain.dtype != expected.dtype or plain.shape != expected.shape:
            facts["correct"].append("dtype/shape")
            continue
        facts["correct"].append(bool(ALLCLOSE(plain, expected, atol=1e-2, rtol=1e-2)))
        facts["nan"] = int(torch.isnan(plain).sum())
        facts["max_abs_diff"] = float((plain - expected).abs().max())
    inputs, _ = fresh(21)
    with torch.no_grad():
        reported, true, wall = per_call_ms(lambda: model(*inputs))
        _, reference_ms, _ = per_call_ms(lambda: reference(*inputs))
    facts.update(event_ms=round(reported, 4), unpatched_event_ms=round(true, 4), wall_ms=round(wall, 4),
                 reference_ms=round(reference_ms, 4), threads=threading.active_count())
    return facts


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        facts = check(argv[1], argv[2])
    except Exception as error:  # the report is the point: a failing candidate is a fact too
        facts = {"candidate": argv[1], "error": f"{type(error).__name__}: {str(error)[:300]}"}
    print("SELFCHECK " + json.dumps(facts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
