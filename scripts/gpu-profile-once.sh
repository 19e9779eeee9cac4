#!/usr/bin/env bash
# The profile-once batch of issue 25 on an NVIDIA GPU (written for the H200 lane: nvcc, ncu,
# nvidia-smi, python3; no network).
#
#   scripts/gpu-profile-once.sh POLYPROF OUTDIR
#
# 1. scripts/profile_once_problems.py writes PROBLEMS (10) problems x CANDIDATES (20) small
#    CUDA C++ programs into OUTDIR/gen (a reference module shared by a problem's candidates,
#    four kernel variants, 35 % incorrect or far slower) and two job files: jobs.toml (stages
#    compile, check, time, profile under ncu with `profile_cache` into OUTDIR/gen/cache and
#    its 5 % audit sample, margin MARGIN) and jobs-baseline.toml (no cache).
# 2. Builds every candidate with nvcc -O2 -arch=sm_90a on all CPUs at once: the local pool runs
#    one job at a time per GPU, the compile stage included (it has no CPU slots beside a GPU
#    pool, and `batch` has no --max-parallel), so the batch's compile stage then only finds
#    each binary up to date (build.sh rebuilds a stale one).
# 3. Checks the job files without the GPU (`polyprof batch --dry-run`).
# 4. Runs, each into a fresh root: (a) the cascade with the cache into a fresh cache, (b) the
#    same batch again on that cache (its profiling should cost next to nothing), (c) the
#    baseline `--all-stages` without the cache ("ncu on every candidate"; no check stage: its
#    figure is the time and profile stages).
# 5. scripts/profile_once_report.py OUTDIR: the device seconds of the time and profile stages
#    of (a), (b), (c) side by side, (a)/(c) (issue 25: at most 0.20), (b)'s profile stage
#    against (a)'s and (c)'s, the hit rates, saved seconds, the audit sample (audited,
#    disagreements) and whether (a) and (b) found the generated candidates incorrect.
#
# One GPU runs one job at a time, so no two ncu runs overlap (nor an ncu run and a timing).
# Budget on an H200 with 16 cores, 10 x 20: about 45 s to build, 270 s for (a), 200 s for (b),
# 850 s for (c) (its 200 ncu runs are most of it). PROBLEMS, CANDIDATES, ELEMENTS (floats per
# array, 8388608), MARGIN (0.5), AUDIT_SHARE (0.05), PRESET (an ncu preset name; default
# polyprof's minimal) and ARCH (sm_90a) scale it. For machines that bound a call's length,
# STEPS (default "gen a b c report") runs some steps at a time on the same OUTDIR, and
# BASELINE_PARTS=N splits the baseline into N batches c1..cN (steps c1 … cN; the report sums
# them):
#
#   BASELINE_PARTS=2 STEPS="gen a b" scripts/gpu-profile-once.sh POLYPROF OUT
#   STEPS=c1 scripts/gpu-profile-once.sh POLYPROF OUT
#   STEPS="c2 report" scripts/gpu-profile-once.sh POLYPROF OUT
#
# Everything printed also goes to OUTDIR/summary.txt; the batch roots stay in OUTDIR/{a,b,c…}.
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 POLYPROF OUTDIR" >&2
  exit 2
fi
BIN=$(realpath "$1")
OUT=$(realpath -m "$2")
cd "$(dirname "$0")/.."
for tool in nvcc ncu nvidia-smi python3; do
  command -v "$tool" > /dev/null || { echo "$0: $tool is not on PATH; this script needs an NVIDIA GPU machine with the CUDA toolkit and Nsight Compute" >&2; exit 2; }
done
export ARCH=${ARCH:-sm_90a}
STEPS=${STEPS:-gen a b c report}
PARTS=${BASELINE_PARTS:-1}
mkdir -p "$OUT"
# A fresh generation starts a fresh summary; later steps on the same OUTDIR add to it.
[[ " $STEPS " == *" gen "* ]] && : > "$OUT/summary.txt"
exec > >(tee -a "$OUT/summary.txt") 2>&1

now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
start=$(now)

generate() {
  rm -rf "$OUT/gen" "$OUT"/a "$OUT"/b "$OUT"/c "$OUT"/c[0-9]* "$OUT/wall.tsv"
  echo "== $(nvidia-smi -L | head -1); $(nvcc --version | tail -1); $(ncu --version | tail -1)"
  python3 scripts/profile_once_problems.py "$OUT/gen" --problems "${PROBLEMS:-10}" \
    --candidates "${CANDIDATES:-20}" --elements "${ELEMENTS:-8388608}" --margin "${MARGIN:-0.5}" \
    --baseline-parts "$PARTS" --audit-share "${AUDIT_SHARE:-0.05}" ${PRESET:+--preset "$PRESET"}
  local t0
  t0=$(now)
  # Each problem's ref.o first (build.sh of its first candidate), then every candidate.
  ls "$OUT"/gen/p*/c00.cu | xargs -P "$(nproc)" -n 1 sh "$OUT/gen/build.sh"
  ls "$OUT"/gen/p*/c*.cu | xargs -P "$(nproc)" -n 1 sh "$OUT/gen/build.sh"
  echo "== built $(ls "$OUT"/gen/p*/c*.cu.bin | wc -l) candidates on $(nproc) CPUs in $(since "$t0") s"
  for file in "$OUT"/gen/jobs*.toml; do
    "$BIN" batch "$file" --output-dir "$OUT/dry" --dry-run | tail -1
  done
}

# run KEY JOBFILE [OPTIONS…]: one batch into OUTDIR/KEY; its wall time into wall.tsv.
run() {
  local key=$1 file=$2
  shift 2
  local t0 rc=0
  rm -rf "${OUT:?}/$key"
  t0=$(now)
  "$BIN" batch "$OUT/gen/$file" --output-dir "$OUT/$key" -q "$@" > "$OUT/$key.txt" || rc=$?
  local wall
  wall=$(since "$t0")
  echo "$key $wall" >> "$OUT/wall.tsv"
  # Exit 1 is expected (the incorrect candidates fail their check stage); 2 or more is not.
  echo "== ($key) $file $* : exit $rc in $wall s; $(tail -1 "$OUT/$key.txt")"
  if [[ $rc -gt 1 ]]; then
    cat "$OUT/$key.txt"
    exit "$rc"
  fi
  grep -h "profile cache:\|audit sample:\|cascade saved\|profile cache saved" "$OUT/$key.txt" || true
}

for step in $STEPS; do
  case $step in
    gen) generate ;;
    a) rm -rf "$OUT/gen/cache" && run a jobs.toml ;;
    b) run b jobs.toml ;;
    c) run c jobs-baseline.toml --all-stages ;;
    c[0-9]*)
      [[ -f "$OUT/gen/jobs-baseline-${step#c}.toml" ]] || { echo "$0: no part ${step#c} of the baseline (BASELINE_PARTS=$PARTS at gen)" >&2; exit 2; }
      run "$step" "jobs-baseline-${step#c}.toml" --all-stages ;;
    report) python3 scripts/profile_once_report.py "$OUT" ;;
    *) echo "$0: unknown step $step (gen, a, b, c, c1…cN, report)" >&2; exit 2 ;;
  esac
done
echo "== steps '$STEPS' in $(since "$start") s; batch roots in $OUT"
