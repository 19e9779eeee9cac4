#!/usr/bin/env bash
# The eval worker's per-candidate costs, a base revision's worker against the working tree's,
# side by side in one run (scripts/bench_eval_checks.py): an output check (compare, stats,
# digest) on a large float32 output, on the host and on the GPU when there is one, and a
# worker's end after `bye` with and without `exit: now` (the interpreter's teardown skipped).
#   BASE (default HEAD): the revision whose worker is the base; OLD_WORKER=path instead, where
#     there is no git (a device machine: copy the base's polyprof_eval_worker.py and
#     polyprof_timing.py into one folder).
#   PY: the interpreter (default the test venv, else python3); it needs numpy, and torch for
#     the torch rows. ROUNDS (default 3), HOST_ELEMENTS (2^24), CUDA_ELEMENTS (2^30).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-}
if [[ -z "$PY" ]]; then
  PY=python3
  [[ -x target/tmp/test-venv/bin/python ]] && PY=target/tmp/test-venv/bin/python
fi
if [[ -z "${OLD_WORKER:-}" ]]; then
  base_dir=$(mktemp -d "${TMPDIR:-/tmp}/polyprof-bench-checks.XXXXXX")
  trap 'rm -rf "$base_dir"' EXIT
  for f in polyprof_eval_worker.py polyprof_timing.py; do
    git show "${BASE:-HEAD}:python/polyprof/harness/$f" > "$base_dir/$f"
  done
  OLD_WORKER=$base_dir/polyprof_eval_worker.py
fi
echo "base: ${BASE:-HEAD} ($OLD_WORKER); new: the working tree; $("$PY" --version)"
"$PY" scripts/bench_eval_checks.py "$OLD_WORKER"
