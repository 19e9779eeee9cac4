#!/usr/bin/env bash
# The profile cache's two figures (issue 25), side by side, each measured in one run:
#   1. GPU seconds for timing + counters of the cascade with the profile cache, against
#      "ncu on every candidate" (`--all-stages`, no cache), and their ratio;
#   2. the same batch run again on the filled cache: its profile stage against the first's.
# Beside them: the cache's hit rate, saved seconds, the audit sample's re-profiled hits and
# disagreements, and whether every run found the same candidates incorrect.
#
#   scripts/bench-profile-once.sh [OUTDIR]
#
# OUTDIR filled by scripts/gpu-profile-once.sh (a/, b/, and c/ or c1/ c2/ … with batch.json): prints its
# figures. Otherwise, where nvcc, ncu and an NVIDIA GPU are: runs scripts/gpu-profile-once.sh
# into OUTDIR (default a temporary folder, removed unless KEEP=1) with BIN (default
# target/release/polyprof, built if missing), then prints them. Elsewhere: generates the
# problems, checks their sources with the host C++ compiler and the job files with `polyprof
# batch --dry-run`, says that nothing was measured, and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-}
if [[ -n "$OUT" && -f "$OUT/a/batch.json" && -f "$OUT/b/batch.json" ]] &&
  [[ -f "$OUT/c/batch.json" || -f "$OUT/c1/batch.json" ]]; then
  exec python3 scripts/profile_once_report.py "$OUT"
fi
if [[ -z "${BIN:-}" ]]; then
  echo "building release binary..."
  cargo build --release --quiet
  BIN=$PWD/target/release/polyprof
fi
if [[ -z "$OUT" ]]; then
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/polyprof-bench-profile-once.XXXXXX")
  [[ "${KEEP:-0}" == 1 ]] || trap 'rm -rf "$OUT"' EXIT
fi
if command -v nvcc > /dev/null && command -v ncu > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  bash scripts/gpu-profile-once.sh "$BIN" "$OUT" > /dev/null
  python3 scripts/profile_once_report.py "$OUT"
  exit 0
fi
python3 scripts/profile_once_problems.py "$OUT/gen" --check-syntax
for file in jobs.toml jobs-baseline.toml; do
  "$BIN" batch "$OUT/gen/$file" --output-dir "$OUT/dry" --dry-run | tail -1
done
echo "no NVIDIA GPU with nvcc and ncu here: the problems and job files are checked, nothing was measured (run scripts/gpu-profile-once.sh on the H200, then this script on its OUTDIR)"
