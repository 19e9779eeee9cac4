#!/usr/bin/env bash
# Live check of `polyprof eval` on an NVIDIA GPU (written for the H200 lane: torch, triton, ncu,
# python3 with numpy; no network).
#
#   scripts/gpu-eval.sh POLYPROF OUTDIR [KERNELBENCH_DIR]
#
# 1. The corpus, tests/eval/gpu: every candidate file (honest_*.py, hack_*.py) judged by
#    `POLYPROF eval --reference <its problem> --candidate C --output-dir OUTDIR/<name> --json`
#    ($CORPUS_ARGS, default `--blocks 3 --repeat 20`, plus the candidate's own `args` from
#    expected.json), compared with tests/eval/gpu/expected.json: one row per candidate
#    (candidate, expected, got, OK/MISMATCH, and why, then the work pass per call: DRAM bytes
#    read against the inputs' bytes, bytes written against the outputs', launches inside and
#    outside the calls, the FLOPs' precision split, and the reference's split when its work
#    pass was taken; from evidence.json). The inline-CUDA candidates' extensions are
#    built first, in parallel and without a GPU (CUDA_VISIBLE_DEVICES=""), while the others run.
# 2. With KERNELBENCH_DIR (holding KernelBench/level1 and level2, or those two folders): KB_N
#    (default 50) problems, evenly spaced over level 1 then level 2, each judged as its own
#    candidate (a copy of the problem with `ModelNew = Model` appended, written under
#    OUTDIR/kb/candidates) with $KB_ARGS (default `--trials 2 --blocks 3 --repeat 20`: fewer
#    trials and shorter blocks than the defaults, so that the sweep fits the budget). Problems
#    whose inputs and weights exceed KB_MAX_GB (default 8) are skipped (sizes from one probe
#    process that builds everything on torch's meta device); the rest run smallest first. Each
#    row: status, findings, reference and score medians, witness median, score/witness,
#    speedup, wall time, the work pass's DRAM bytes read over the inputs' bytes (rd/in: about 1
#    for a problem that reads each input once) and its FLOPs' precision split (the reference's
#    in brackets when its work pass was taken). Issue 24's check on the H200: the honest rows read
#    about their inputs in the task's precision; the corpus's half-input, constant, memset and
#    underflow hacks read far less, the fp16-in-fp32 matmul shows tensor_fp16.
# 3. A summary: corpus OK/MISMATCH counts; honest candidates (the corpus's and every
#    KernelBench problem) with no finding and those flagged; hostile ones flagged and missed;
#    the hostile ones expected to come back clean (not fooled, or out of issue 23's scope).
#
# Everything printed also goes to OUTDIR/summary.txt (line by line: a run cut short keeps what
# it had); each eval's log is OUTDIR/logs/<name>.log, its directory OUTDIR/<name> or
# OUTDIR/kb/<name>. Exit status: 0 when every corpus candidate came back as expected, 1 when
# one did not, 2 on bad arguments.
#
# Time: the whole script stays within GPU_EVAL_BUDGET_S (default 540 s, for a 10-minute
# command): an eval never runs past it (CORPUS_EVAL_TIMEOUT_S, default 180, and
# KB_EVAL_TIMEOUT_S, default 150, cap each one), and KernelBench problems that would not fit
# are listed as not run.
# Parts (GPU_EVAL_PARTS, default "corpus kb"): "kb" sweeps KernelBench alone; "selfcheck" runs
# each corpus candidate plainly in one process, without polyprof (eval_corpus_selfcheck.py: does
# each hack do what its header says?), for telling a corpus file at fault from polyprof at
# fault. Some corpus candidates only: GPU_EVAL_CANDIDATES="hack_hang honest_relu_cuda".
# A sweep longer than one call: KB_SKIP=N leaves out the first N runnable problems (smallest
# first), so the next call continues where the last stopped (about 20 s per problem on the H200).
# Named problems instead of the evenly spaced selection: KB_PROBLEMS="level2/2 level2/3"; the N
# smallest of both levels (by the size probe): KB_SMALLEST=N (with KB_SKIP to continue).
# First `polyprof calibrate` (the default cache, which every eval's audit cites; GPU_EVAL_CALIBRATE=0
# leaves it out). Python: $POLYPROF_PYTHON, else python3 (the same one polyprof's workers use by default).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 POLYPROF OUTDIR [KERNELBENCH_DIR]" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
exec "${POLYPROF_PYTHON:-python3}" "$root/scripts/gpu_eval.py" "$@"
