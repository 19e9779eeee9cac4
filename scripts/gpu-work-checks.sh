#!/usr/bin/env bash
# Live check of the audit's work checks (`work_floor`, `roofline`, `precision`; docs/eval.md) on
# an NVIDIA GPU, without the eval harness's own work pass (written for the H200 lane: torch,
# ncu, python3; no network).
#
#   scripts/gpu-work-checks.sh POLYPROF OUTDIR [KERNELBENCH_DIR]
#
# Each case is a reference and a candidate source (KernelBench layout). Both sides run under ncu
# with polyprof's minimal preset (the metrics `POLYPROF wrap --profiler ncu` gives), `--nvtx
# --cache-control all --clock-control none`, two calls each in a `polyprof/call/K` range
# (scripts/gpu_work_driver.py profile), and are timed as `polyprof eval` times them
# (polyprof_timing.time_call, L2 flushed); `POLYPROF parse --json` turns ncu's log into the work
# pass's launches, an evidence.json is written (OUTDIR/runs/<case>/) and `POLYPROF audit` judges
# it. Cases:
# - built in: an fp32 add of 2^25 elements and an fp32 4096² matmul, each honest (the reference
#   as its own candidate) and hostile: half the input processed (expects `too_little_work`), the
#   output computed once and handed back (`above_roofline` or `implausible_time`), the matmul in
#   fp16 (`precision_mismatch`);
# - with KERNELBENCH_DIR: KB_N (default 12) problems evenly spaced over level 1 and level 2 (KB_SKIP
#   leaves out the first N), each as its own candidate: none of the work checks may find anything.
# One row per case: expected and found work findings, call 0's DRAM reads over its inputs' bytes
# (honest kernels read 1.0 or more), and every part a work check could not judge. Everything
# printed also goes to OUTDIR/summary.txt; each case's log is OUTDIR/runs/<case>/log.txt.
# Exit status: 0 when every case came out as expected, 1 otherwise, 2 on bad arguments.
# Time: within WORK_BUDGET_S (default 540 s), WORK_CASE_TIMEOUT_S (default 150) per case.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 POLYPROF OUTDIR [KERNELBENCH_DIR]" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
exec "${POLYPROF_PYTHON:-python3}" "$root/scripts/gpu_work_checks.py" "$@"
