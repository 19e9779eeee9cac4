#!/usr/bin/env bash
# Build the polyprof wheel (abi3, CPython >= 3.9) with the Rust `polyprof` executable inside it.
# Usage: python/build-wheel.sh [--release] [OUT_DIR]   (default OUT_DIR: target/wheels)
# `pip install ./python` builds the library alone; the `polyprof` console script then reports
# that the executable is missing and how to get it (`cargo install --locked --path .`).
#
# On Linux a --release wheel is built against an old glibc (POLYPROF_WHEEL_GLIBC, default 2.17:
# manylinux2014) with zig as the linker (maturin --zig for the extension, cargo-zigbuild for the
# executables), so it installs on cluster login nodes (RHEL/Rocky 8 has 2.28, Ubuntu 20.04 2.31),
# not only where it was built. POLYPROF_WHEEL_GLIBC=host (and every dev build) links against this
# machine's glibc instead. scripts/check-wheel.py checks the tag against the symbols the ELF
# files need.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=dev
flags=()
if [[ "${1:-}" == "--release" ]]; then
  profile=wheel # Cargo.toml's [profile.wheel]: release with whole-program optimization
  flags=(--profile wheel)
  shift
fi
out="${1:-target/wheels}"
target="${CARGO_TARGET_DIR:-target}"
glibc="${POLYPROF_WHEEL_GLIBC:-2.17}"
zig=false
[[ $profile == wheel && $(uname -s) == Linux && $glibc != host ]] && zig=true
# The tools from PATH, else from a virtual environment of their own (never into the active
# Python). zig comes as PyPI's `ziglang`, which maturin and cargo-zigbuild both find there.
need=(maturin)
$zig && need+=(cargo-zigbuild)
missing=false
for tool in "${need[@]}"; do command -v "$tool" >/dev/null || missing=true; done
if $zig && ! command -v zig >/dev/null && ! python3 -c 'import ziglang' 2>/dev/null; then missing=true; fi
if $missing; then
  tools="$target/tmp/wheel-tools-venv"
  [[ -x "$tools/bin/cargo-zigbuild" ]] || {
    python3 -m venv "$tools" &&
      "$tools/bin/python" -m pip install -q "maturin>=1.9.4,<2" "ziglang>=0.13" "cargo-zigbuild>=0.19"
  }
  PATH="$(cd "$tools/bin" && pwd):$PATH"
fi
if $zig; then
  triple="$(uname -m)-unknown-linux-gnu"
  # The suffix is cargo-zigbuild's: link against that glibc's symbol versions.
  cargo zigbuild --quiet --profile "$profile" --target "$triple.$glibc" \
    --bin polyprof --bin polyprof-supervise
  bins="$target/$triple/$profile"
  flags+=(--zig --target "$triple" --compatibility "manylinux_${glibc/./_}")
else
  cargo build --quiet --profile "$profile" --bin polyprof --bin polyprof-supervise
  bins="$target/$([[ $profile == dev ]] && echo debug || echo "$profile")"
fi
# The executables are staged in the source tree only while maturin runs: left there, a later
# `pip install ./python` would pack whatever build was staged last.
staged=python/polyprof/bin
trap 'rm -rf "$staged"' EXIT
mkdir -p "$staged"
cp "$bins/polyprof" "$bins/polyprof-supervise" "$staged/"
# Symbols are no use to a wheel's user (about 16 → 13 MB for a release wheel).
strip "$staged/polyprof" "$staged/polyprof-supervise" 2>/dev/null ||
  echo "note: strip failed or is missing; the wheel keeps the executables' symbols" >&2
maturin build --quiet "${flags[@]}" -m python/Cargo.toml -o "$out"
ls "$out"/polyprof-*.whl
