#!/usr/bin/env bash
# What the eval's workers under ncu rely on, checked on an NVIDIA GPU (written for the H100/H200
# lane: torch, ncu, python3; no network):
#
#   scripts/gpu-check-ncu.sh POLYPROF
#
# - exit: a worker under ncu that ends with os._exit after synchronizing (`bye` with `exit: now`)
#   leaves ncu's log the same kernels in the same NVTX ranges as the normal exit, as
#   `POLYPROF parse` reads them;
# - concurrent: an idle second ncu instance (torch imported, no CUDA context: a worker started
#   ahead) does not hold up a profiled run.
# scripts/gpu_check_ncu.py has the details. Settings: POLYPROF_PYTHON (default python3), NCU
# (default ncu), ROUNDS (default 2), WINDOWS (5), KERNELS (6), RUN_TIMEOUT_S (120).
# Exit status 0 when both checks pass, 2 on bad arguments. About a minute on an H100.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${POLYPROF_PYTHON:-python3}" scripts/gpu_check_ncu.py "$@"
