#!/usr/bin/env bash
# How polyprof eval's times compare with the usual ways of timing a kernel, on an NVIDIA GPU
# (written for the H200 lane: torch, triton, ncu; no network).
#
#   scripts/bench-eval.sh POLYPROF OUTDIR [KERNELBENCH_DIR]
#
# For the corpus's four problems (tests/eval/gpu: relu, matmul, add, softmax) and, with
# KERNELBENCH_DIR, six KernelBench level-1 problems ($BENCH_KB, file stems), one row each:
#  - kb_event: KernelBench's cuda_event timing, its own src/kernelbench/timing.py
#    (time_execution_with_cuda_event: per trial, synchronize, a 256 MB int64 fill as L2 flush,
#    an event pair around one call, synchronize; 3 warm-ups, first trial dropped) loaded from
#    KERNELBENCH_DIR when present, else the same loop re-implemented in bench_eval_driver.py;
#    the mean of BENCH_KB_TRIALS (default 20) trials, as KernelBench reports it;
#  - do_bench: triton.testing.do_bench (warmup 25 ms, rep 100 ms), median;
#  - score / witness: polyprof eval of the problem against itself (`ModelNew = Model`),
#    verdict.json timing.score_ms and witness.median_ms ($BENCH_EVAL_ARGS, default
#    `--blocks 3`);
#  - ncu: plain `ncu --csv --page raw --print-units base --metrics gpu__time_duration.sum
#    --clock-control none --profile-from-start off` around BENCH_NCU_CALLS (default 5) calls
#    after 3 warm-ups (cudaProfilerStart/Stop), the launches' durations summed per call;
#  each time in ms and as a ratio to ncu's figure; then the wall time of the eval with the
#  witness (w) and with `--profiler none` (-), and w/-; the goal bounds what the witness adds:
#  w/- − 1 <= 1.5.
# Inputs and weights under seed 42, on the GPU. Everything printed also goes to
# OUTDIR/summary.txt; logs (and the ncu CSVs) under OUTDIR/logs, evals under OUTDIR/evals.
# The script stays within BENCH_BUDGET_S (default 540 s): a problem that would not fit is
# listed as not run.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 POLYPROF OUTDIR [KERNELBENCH_DIR]" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
exec "${POLYPROF_PYTHON:-python3}" "$root/scripts/bench_eval.py" "$@"
