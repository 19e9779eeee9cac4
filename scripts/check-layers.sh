#!/usr/bin/env bash
# Fails when an import breaks the layering, or when files import each other in a circle.
#
#   model/                 imports no other polyprof module
#   profilers/  results/   model only (side by side: never each other, never pipeline or cli)
#   pipeline/              model, profilers, results (never cli); pipeline/runner/ model only;
#                          no vendor backend's own module (`profilers::ncu`, …) anywhere under
#                          src/pipeline/ outside `#[cfg(test)]` blocks: the pipeline asks the
#                          registry for a backend's capabilities (profilers/capability/);
#                          nor, in a string outside tests, a vendor tool (`nvidia-smi`, `nvcc`,
#                          `rocm-smi`, …): the vendor's device tool (profilers/device_tool.rs)
#                          or a capability names it
#   metal/                 model and results (the lanes return KernelBenchmark, record into the session)
#   eval/                  model and results: the audit is pure and knows no vendor (its harness
#                          is pipeline/eval/)
#   cli/, lib.rs, main.rs  anything
#
# Processes are started only under src/pipeline/ (`Command::new`, `process::Command`, `duct::`).
#
# `crate::error` is the model's error re-exported at the root, so it counts as model.
# Imports are read from `crate::…`, `super::…` and `self::…` paths, a module's own child modules
# (`measure::run_pass` in calibrate/mod.rs) and the names `use` binds (comments skipped; a
# `mod tests` block's `super::` is its file). A circle is found by a depth-first walk over the
# file graph those paths give, test code left out. A mod.rs (or lib.rs) that defines items is a
# node like any file; one that only declares modules and re-exports is not. A file using the
# items of a module it lies in (its parent's facade) is no edge: Rust's parent and children are
# one unit.
#
# Usage: scripts/check-layers.sh [ROOT]   (ROOT: a tree with src/; default this repository)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/check_layers.py" "$(cd "${1:-$here/..}" && pwd)"
