#!/usr/bin/env bash
# Results-half benchmark: inactive-scope overhead and export speed, as ratios measured side by
# side in one run (examples/bench_report.rs). Release build; prints, asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --quiet --example bench_report
