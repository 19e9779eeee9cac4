"""A profiled `none` call and a `diff`, through the binding and through subprocess + JSON (what
pipelines do today), measured side by side in one run; prints medians and ratios.

    python3 python/bench/binding_overhead.py POLYPROF_EXECUTABLE RUN_A RUN_B [N]
"""

import json
import statistics
import subprocess
import sys
import tempfile
import time

import polyprof


def timed(fn, n):
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e3


def main():
    exe, run_a, run_b = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    work = tempfile.mkdtemp(prefix="polyprof-bench-")
    counter = iter(range(10**9))

    def binding_profile():
        run = polyprof.profile(["true"], output_dir=f"{work}/b{next(counter)}")
        assert run.succeeded

    def subprocess_profile():
        out = subprocess.run([exe, "run", "--json", "-q", "--output-dir", f"{work}/s{next(counter)}", "--", "true"],
                             capture_output=True, check=True)
        assert json.loads(out.stdout)["outcome"]["code"] == 0

    def binding_diff():
        polyprof.diff(run_a, run_b)

    def subprocess_diff():
        out = subprocess.run([exe, "diff", "--json", run_a, run_b], capture_output=True)
        json.loads(out.stdout)

    rows = []
    for label, binding, sub in (("profiled `none` call of `true`", binding_profile, subprocess_profile),
                                ("diff of two saved runs", binding_diff, subprocess_diff)):
        # interleave: one warm-up each, then the two sides alternately
        binding(); sub()
        b = timed(binding, n)
        s = timed(sub, n)
        rows.append(f"{label}: binding {b:.2f} ms, subprocess + JSON {s:.2f} ms, ratio {b / s:.3f}")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
