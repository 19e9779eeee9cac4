#!/usr/bin/env bash
# Build the polyprof wheel (abi3, CPython >= 3.9) with the Rust `polyprof` executable inside it.
# Usage: python/build-wheel.sh [--release] [OUT_DIR]   (default OUT_DIR: target/wheels)
# `pip install ./python` builds the library alone; the `polyprof` console script then reports
# that the executable is missing and how to get it (`cargo install --locked --path .`).
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
target="${CARGO_TARGET_DIR:-target}"
# maturin from PATH, else from a virtual environment of its own (never into the active Python).
if ! command -v maturin >/dev/null; then
  tools="$target/tmp/maturin-venv"
  [[ -x "$tools/bin/maturin" ]] || { python3 -m venv "$tools" && "$tools/bin/python" -m pip install -q "maturin>=1.9.4,<2"; }
  PATH="$(cd "$tools/bin" && pwd):$PATH"
fi
cargo build --quiet --profile "$profile" --bin polyprof --bin polyprof-supervise
dir=$([[ $profile == dev ]] && echo debug || echo release)
# The executables are staged in the source tree only while maturin runs: left there, a later
# `pip install ./python` would pack whatever build was staged last.
staged=python/polyprof/bin
trap 'rm -rf "$staged"' EXIT
mkdir -p "$staged"
cp "$target/$dir/polyprof" "$target/$dir/polyprof-supervise" "$staged/"
# Symbols are no use to a wheel's user (about 16 → 13 MB for a release wheel).
strip "$staged/polyprof" "$staged/polyprof-supervise" 2>/dev/null ||
  echo "note: strip failed or is missing; the wheel keeps the executables' symbols" >&2
maturin build --quiet "${flags[@]}" -m python/Cargo.toml -o "$out"
ls "$out"/polyprof-*.whl
