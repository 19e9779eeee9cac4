"""A CI gate in Python, type-checked with ``mypy --strict`` (python/pyproject.toml).

Usage: python3 examples/gate.py BASELINE_RUN CANDIDATE_RUN [THRESHOLD_PCT]

Compares two run directories (``polyprof run --output-dir …``) kernel by kernel, prints each
regressed kernel with its medians, and exits 1 when one regressed: what ``polyprof diff`` does,
written against the typed result objects.
"""

from __future__ import annotations

import sys
from typing import List

import polyprof
from polyprof import KernelChange, ProfileRun, RunDiff


def regressed_kernels(diff: RunDiff) -> List[KernelChange]:
    """The kernels whose median GPU time grew beyond the diff's limits."""
    return [k for k in diff.kernels if k.change == "regressed"]


def describe(kernel: KernelChange) -> str:
    """``name: 58.8 us -> 71.7 us (+22.0 %)``: medians in µs, the change in percent."""
    a_ns = kernel.a.gpu_time_ns or 0.0
    b_ns = kernel.b.gpu_time_ns or 0.0
    change = kernel.gpu_time_change_pct or 0.0
    return f"{kernel.short_name}: {a_ns / 1e3:.1f} us -> {b_ns / 1e3:.1f} us ({change:+.1f} %)"


def main(argv: List[str]) -> int:
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    baseline: ProfileRun = polyprof.load(argv[1])
    threshold = float(argv[3]) if len(argv) == 4 else 5.0
    diff = polyprof.diff(baseline, argv[2], threshold=threshold)
    for kernel in regressed_kernels(diff):
        print(describe(kernel))
    print(f"{len(diff.kernels)} kernels compared, {diff.regressions} regressed")
    return 1 if diff.regressed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
