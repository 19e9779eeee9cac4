#!/usr/bin/env python3
"""The body of scripts/gpu-check-ncu.sh (usage there): what the eval's workers under ncu rely on,
checked on a GPU.

exit         A worker under ncu that ends with ``os._exit`` after synchronizing (``bye`` with
             ``exit: now``, docs/eval-harness.md "Ending a worker") must leave ncu's output the
             same kernels, in the same NVTX ranges, as one that ends through the interpreter's
             teardown. The target runs WINDOWS collection windows (cudaProfilerStart ... Stop, as
             the work pass opens them), each an NVTX range with KERNELS elementwise kernels and a
             cuDNN convolution; ncu runs with the work pass's controls (``--profile-from-start
             off``, ``--cache-control all``, ``--clock-control none``, ``--nvtx``) and metrics of
             several replay passes, writing its CSV to a log as the work pass does. Each end is
             run ROUNDS times, alternating; the kernel lists (name and NVTX ranges) that
             ``POLYPROF parse`` reads from each log, as the eval reads the work pass's, must be
             equal, and every run's wall time is printed.
concurrent   A second ncu instance whose target is idle (torch imported, no CUDA context), as a
             worker started ahead of its turn would be, must not hold up a profiled run: the
             profiled target's wall with the idle instance beside it, against alone.

One line per run, then ``exit: PASS|FAIL`` and ``concurrent: PASS|FAIL``; exit status 0 when
both pass. POLYPROF (the executable) is the first argument. Standard library only; torch runs
in the children (``--target``)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

PYTHON = os.environ.get("POLYPROF_PYTHON", sys.executable)
NCU = os.environ.get("NCU", "ncu")
ROUNDS = int(os.environ.get("ROUNDS", "2"))
WINDOWS = int(os.environ.get("WINDOWS", "5"))
KERNELS = int(os.environ.get("KERNELS", "6"))
RUN_TIMEOUT_S = float(os.environ.get("RUN_TIMEOUT_S", "120"))
# Duration, DRAM traffic, one FLOP counter, a tensor-pipe counter and the SM clock: enough
# counters to need several replay passes, as the work pass's do.
METRICS = ",".join([
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__cycles_elapsed.avg.per_second",
])
# The work pass's controls (src/profilers/witness.rs, work_settings).
CONTROLS = ["--clock-control", "none", "--cache-control", "all", "--profile-from-start", "off", "--nvtx"]


def target(mode: str, windows: int, kernels: int) -> int:
    """The profiled program (or, ``idle``, one that only waits with torch imported)."""
    # Typed as Any: torch's profiler and NVTX functions carry no annotations.
    torch: Any = importlib.import_module("torch")
    if mode == "idle":
        # As a worker started ahead: torch imported, no device touched, until told to end.
        sys.stdin.read()
        return 0
    x = torch.zeros(1 << 20, device="cuda")
    conv = torch.nn.Conv2d(16, 16, 3).cuda()
    image = torch.randn(8, 16, 64, 64, device="cuda")
    for _ in range(2):  # lazy initialization outside the windows, as the worker's warmup does
        conv(image)
        x.add_(1)
    torch.cuda.synchronize()
    for window in range(windows):
        torch.cuda.profiler.start()
        torch.cuda.nvtx.range_push(f"polyprof/call/{window}")
        for _ in range(kernels):
            x.add_(1)
        conv(image)
        torch.cuda.nvtx.range_pop()
        torch.cuda.profiler.stop()
    torch.cuda.synchronize()
    print(f"x[0] = {float(x[0])}", flush=True)
    if mode == "now":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def ncu_argv(log: Path, mode: str) -> List[str]:
    return [NCU, "--log-file", str(log), "--csv", "--page", "raw", "--print-units", "base",
            "--metrics", METRICS, *CONTROLS, "--print-kernel-base", "mangled", "--",
            PYTHON, str(Path(__file__).resolve()), "--target", mode, str(WINDOWS), str(KERNELS)]


def kernels_of(polyprof: str, log: Path) -> List[Tuple[str, List[str]]]:
    """(kernel name, NVTX ranges) of each profiled kernel, in launch order, as polyprof reads them."""
    parsed = json.loads(subprocess.run([polyprof, "parse", "--profiler", "ncu", "--json", str(log)],
                                       capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=True).stdout)
    return [(k["name"], list(k.get("ranges", []))) for k in parsed["kernels"] if k.get("kind", "kernel") == "kernel"]


Kernels = Optional[List[Tuple[str, List[str]]]]


def profiled_run(polyprof: str, work: Path, label: str, mode: str) -> Tuple[float, Kernels, str]:
    log = work / f"{label}.ncu.log"
    started = time.monotonic()
    try:
        done = subprocess.run(ncu_argv(log, mode), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return time.monotonic() - started, None, f"timed out after {RUN_TIMEOUT_S:.0f} s"
    wall = time.monotonic() - started
    if done.returncode != 0:
        return wall, None, f"ncu exit {done.returncode}: {done.stderr.strip()[-300:]}"
    try:
        return wall, kernels_of(polyprof, log), ""
    except (subprocess.SubprocessError, ValueError, KeyError) as e:
        return wall, None, f"polyprof could not read the log: {e}"


def check_exit(polyprof: str, work: Path) -> bool:
    lists: Dict[str, List[List[Tuple[str, List[str]]]]] = {}
    ok = True
    for round_ in range(ROUNDS):
        order = ("normal", "now") if round_ % 2 == 0 else ("now", "normal")
        for mode in order:
            wall, kernels, error = profiled_run(polyprof, work, f"exit-{mode}-{round_}", mode)
            count = "-" if kernels is None else str(len(kernels))
            ranges = "-" if kernels is None else str(sum(1 for _, r in kernels if any(x.startswith("polyprof/call/") for x in r)))
            print(f"exit  round {round_} {mode:6} wall {wall:6.2f} s  kernels {count:>4}  in call ranges {ranges:>4}  {error}")
            if kernels is None:
                ok = False
            else:
                lists.setdefault(mode, []).append(kernels)
    if ok:
        first = lists["normal"][0]
        ok = bool(first) and all(k == first for runs in lists.values() for k in runs)
    print(f"exit: {'PASS' if ok else 'FAIL'} (the same kernels in the same ranges with os._exit as with the normal exit)")
    return ok


def check_concurrent(polyprof: str, work: Path) -> bool:
    alone, alone_kernels, alone_error = profiled_run(polyprof, work, "alone", "normal")
    print(f"concurrent  alone        wall {alone:6.2f} s  {alone_error}")
    idle = subprocess.Popen([NCU, "--metrics", "gpu__time_duration.sum", *CONTROLS, "--",
                             PYTHON, str(Path(__file__).resolve()), "--target", "idle", "0", "0"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(8)  # its target is up, torch imported
        beside, kernels, error = profiled_run(polyprof, work, "beside", "normal")
        print(f"concurrent  beside idle  wall {beside:6.2f} s  kernels {'-' if kernels is None else len(kernels)}  {error}")
    finally:
        if idle.stdin is not None:
            idle.stdin.close()
        try:
            idle.wait(timeout=30)
        except subprocess.TimeoutExpired:
            idle.kill()
            idle.wait()
    ok = alone_kernels is not None and kernels is not None and beside < alone * 1.5 + 2
    print(f"concurrent: {'PASS' if ok else 'FAIL'} (a profiled run beside an idle ncu instance is not held up)")
    return ok


def main(argv: List[str]) -> int:
    if argv[:1] == ["--target"] and len(argv) == 4:
        return target(argv[1], int(argv[2]), int(argv[3]))
    if len(argv) != 1:
        print("usage: gpu_check_ncu.py POLYPROF", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="polyprof-ncu-check.") as tmp:
        work = Path(tmp)
        exit_ok = check_exit(argv[0], work)
        concurrent_ok = check_concurrent(argv[0], work)
    return 0 if exit_ok and concurrent_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
