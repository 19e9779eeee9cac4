#!/usr/bin/env bash
# Live check of the batch cascade on an NVIDIA GPU (written for the H200 lane: torch, ncu,
# python3; no network).
#
#   scripts/gpu-cascade.sh POLYPROF OUTDIR
#
# scripts/bench-cascade.sh with DEVICE=cuda: one problem (tests/eval/gpu/matmul.py, fp32
# 4096² matmul), N (default 6) generated candidates (a third honest, a third incorrect, a third
# eight matmuls per call), stages check -> time -> profile (the ncu witness and the work pass)
# with MARGIN (default 0.5); first as a cascade, then with --all-stages. Prints both wall
# times, the jobs run and skipped per stage, the device seconds of each, and the cascade's
# estimate of its saving beside the measured one. Expected: the incorrect candidates are
# neither timed nor profiled, the slow ones are timed and not profiled (skipped by the margin,
# their time against 1.5 × the best), the honest ones go through every stage; the cascade's
# device seconds well under the baseline's (the profile stage is the dear one).
# Everything printed also goes to OUTDIR/summary.txt; both batch roots are kept in OUTDIR.
# Time: about 5 minutes for N=6 (each profile eval replays ncu over the matmul).
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 POLYPROF OUTDIR" >&2
  exit 2
fi
BIN=$(realpath "$1")
OUT=$(realpath -m "$2")
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN=$BIN DEVICE=cuda N=${N:-6} MARGIN=${MARGIN:-0.5} KEEP=$OUT \
  bash scripts/bench-cascade.sh 2>&1 | tee "$OUT/summary.txt"
