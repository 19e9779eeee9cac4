#!/usr/bin/env bash
# The README's test command: every unit and integration test.
# The tests' Python packages go into a virtual environment of their own (never into whatever
# interpreter is active), which leads PATH while the tests run, so their `python3` is its:
# llnl-hatchet (the Hatchet export), pytest (the runner tests drive a real one), numpy (the eval
# tests' problems; in CI a missing numpy fails them), junitparser and markdown (the CI outputs
# read by real consumers). Each is installed once; the tests say SKIPPED when one is missing
# outside CI.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
venv="$target/tmp/test-venv"
if command -v python3 >/dev/null; then
  if ! "$venv/bin/python" -c 'import hatchet, pytest, numpy, junitparser, markdown' 2>/dev/null; then
    { python3 -m venv "$venv" &&
      "$venv/bin/python" -m pip install -q llnl-hatchet pytest numpy junitparser markdown; } ||
      echo "note: could not install the tests' Python packages; their tests will be skipped" >&2
  fi
  if [[ -x "$venv/bin/python" ]]; then
    PATH="$(cd "$venv/bin" && pwd):$PATH"
    export PATH
  fi
fi
# proton-viewer (the `triton` wheel) reads the Proton export in report_proton_viewer; the test
# installs it into this venv itself when missing, and says SKIPPED only if that fails.
proton_venv="$target/tmp/proton-venv"
if command -v python3 >/dev/null && ! "$proton_venv/bin/python" -c 'import triton.profiler.viewer' 2>/dev/null; then
  { python3 -m venv "$proton_venv" &&
    "$proton_venv/bin/python" -m pip install -q triton llnl-hatchet; } ||
    echo "note: could not install proton-viewer; its test will be skipped" >&2
fi
# A test that cannot run here is not a pass: each one that says SKIPPED (tests/integration/
# support/mod.rs, `skip`) appends its name here, and the closing lines list them with a count,
# whatever the outcome (CI=true makes them fail instead).
skips=$(mktemp)
export POLYPROF_TEST_SKIPS="$skips"
report_skips() {
  if [[ -s "$skips" ]]; then
    echo "== $(wc -l <"$skips") tests skipped (they did not run; CI=true fails them):"
    sort "$skips"
  else
    echo "== no test skipped"
  fi
  rm -f "$skips"
}
trap report_skips EXIT
# The examples as programs (tests/integration/examples_run.rs runs them; `cargo test` builds
# them only as test targets, under hashed names).
cargo build --examples
cargo test --all-targets
# The Python binding: the abi3 wheel built once, its pytest suite on each CPython found.
scripts/test-python.sh
