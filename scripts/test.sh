#!/usr/bin/env bash
# The README's test command: every unit and integration test.
# The Hatchet export test loads files with llnl-hatchet and the runner tests drive a real pytest;
# both are installed from PyPI when missing (the tests say SKIPPED when they cannot be), and so is
# proton-viewer, into its own virtual environment.
set -euo pipefail
cd "$(dirname "$0")/.."
# The eval tests (tests/integration/eval_cpu.rs) run numpy problems with python3 (or
# $POLYPROF_TEST_PYTHON); in CI a missing numpy fails them.
if command -v python3 >/dev/null; then
  python3 -c 'import hatchet, pytest, numpy' 2>/dev/null ||
    python3 -m pip install -q llnl-hatchet pytest numpy ||
    echo "note: could not install llnl-hatchet/pytest/numpy; their tests will be skipped" >&2
fi
# proton-viewer (the `triton` wheel) reads the Proton export in report_proton_viewer; the test
# installs it into this venv itself when missing, and says SKIPPED only if that fails.
proton_venv="${CARGO_TARGET_DIR:-target}/tmp/proton-venv"
if command -v python3 >/dev/null && ! "$proton_venv/bin/python" -c 'import triton.profiler.viewer' 2>/dev/null; then
  { python3 -m venv "$proton_venv" &&
    "$proton_venv/bin/python" -m pip install -q triton llnl-hatchet; } ||
    echo "note: could not install proton-viewer; its test will be skipped" >&2
fi
cargo test --all-targets
# The Python binding: the abi3 wheel built once, its pytest suite on each CPython found.
scripts/test-python.sh
