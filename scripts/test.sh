#!/usr/bin/env bash
# The README's test command: every unit and integration test.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --all-targets
