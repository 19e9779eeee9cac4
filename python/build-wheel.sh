#!/usr/bin/env bash
# Build the polyprof wheel (abi3, CPython >= 3.9) with the Rust `polyprof` executable inside it.
# Usage: python/build-wheel.sh [--release] [OUT_DIR]   (default OUT_DIR: target/wheels)
# `pip install ./python` builds the library alone; the `polyprof` console script then reports
# that the executable is missing and how to get it (`cargo install --path .`).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=dev
flags=()
if [[ "${1:-}" == "--release" ]]; then
  profile=release
  flags=(--release)
  shift
fi
out="${1:-target/wheels}"
command -v maturin >/dev/null || python3 -m pip install -q "maturin>=1.9.4,<2"
cargo build --quiet --profile "$profile" --bin polyprof --bin polyprof-supervise
dir=$([[ $profile == dev ]] && echo debug || echo release)
mkdir -p python/polyprof/bin
cp "target/$dir/polyprof" "target/$dir/polyprof-supervise" python/polyprof/bin/
maturin build --quiet "${flags[@]}" -m python/Cargo.toml -o "$out"
ls "$out"/polyprof-*.whl
