"""GPU time of the same kernels by three methods, measured side by side in one run on a CUDA GPU:
polyprof.benchmark_kernel, triton.testing.do_bench, and Nsight Compute's gpu__time_duration
(this script re-runs itself under ncu with --mode ncu). Prints a table of medians, the ratio to
ncu and the coefficient of variation.

    python3 python/bench/gpu_timing.py [--out FILE]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


def kernels():
    import torch

    small_a = torch.randn(1 << 18, device="cuda")
    small_b = torch.randn(1 << 18, device="cuda")
    mid_a = torch.randn(1 << 23, device="cuda")
    mid_b = torch.randn(1 << 23, device="cuda")
    m = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    return [
        ("add_256k_fp32", torch.add, (small_a, small_b), None, 3 * 4 * (1 << 18)),
        ("add_8m_fp32", torch.add, (mid_a, mid_b), None, 3 * 4 * (1 << 23)),
        ("matmul_4096_bf16", torch.matmul, (m, m), 2 * 4096**3, None),
    ]


def mode_ncu():
    import torch

    for name, fn, args, _, _ in kernels():
        for _ in range(20):
            fn(*args)
        torch.cuda.synchronize()


def ncu_times(ncu):
    """Kernel GPU times from Nsight Compute, through polyprof's own ncu backend (the bundled
    executable), one list of gpu__time_duration values (ns) per kernel name."""
    import tempfile

    from polyprof._cli import executable

    out_dir = tempfile.mkdtemp(prefix="gpu-timing-ncu-") + "/ncu.000"
    proc = subprocess.run(
        [executable(), "run", "--profiler", "ncu", "--clock-control", "none", "--json", "-q",
         "--output-dir", out_dir, "--", sys.executable, __file__, "--mode", "ncu"],
        capture_output=True, text=True,
    )
    times = {}
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return times, proc.returncode, proc.stderr[-2000:]
    for k in doc.get("kernels", []):
        if k.get("duration_ns") is not None:
            key = f"{k.get('short_name') or k['name']} grid={k.get('grid')}"
            times.setdefault(key, []).append(k["duration_ns"])
    # run.json errors are {kind, message} (schema_version 2) or strings (version 1).
    errors = [e.get("message", "") if isinstance(e, dict) else str(e) for e in doc.get("errors", [])]
    return times, proc.returncode, proc.stderr[-2000:] + " ".join(errors)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="bench")
    p.add_argument("--out")
    a = p.parse_args()
    if a.mode == "ncu":
        return mode_ncu()
    import torch
    import triton.testing

    import polyprof

    lines = []
    results = {}
    for name, fn, args, flops, nbytes in kernels():
        b = polyprof.benchmark_kernel(fn, *args, repeat=100, warmup=10, flops=flops, bytes_moved=nbytes, name=name)
        b_noflush = polyprof.benchmark_kernel(fn, *args, repeat=100, warmup=10, flush_l2=False, name=name)
        tri = triton.testing.do_bench(lambda: fn(*args), warmup=25, rep=100, return_mode="median")
        results[name] = {
            "polyprof_ms": b.median_ms, "polyprof_cv": b.cv, "polyprof_method": b.method,
            "polyprof_noflush_ms": b_noflush.median_ms, "noflush_method": b_noflush.method,
            "do_bench_ms": tri,
        }
        lines.append(b.summary())
    ncu = os.environ.get("NCU", "ncu")
    times, rc, err = ncu_times(ncu)
    # ncu names: match by order of appearance per kernel family (each of ours launches one kernel)
    ncu_medians = [(k, statistics.median(v) / 1e6) for k, v in times.items()]  # ns -> ms
    table = ["kernel | polyprof median µs (method, CV) | no flush µs | do_bench µs | ncu kernels (median µs)"]
    for name, r in results.items():
        table.append(
            f"{name} | {r['polyprof_ms']*1e3:.2f} ({r['polyprof_method']}, {r['polyprof_cv']*100:.2f} %) | "
            f"{r['polyprof_noflush_ms']*1e3:.2f} ({r['noflush_method']}) | {r['do_bench_ms']*1e3:.2f}"
        )
    table.append(f"ncu rc={rc}; kernels seen:")
    for k, ms in ncu_medians:
        table.append(f"  {ms*1e3:9.2f} µs  {k[:110]}")
    if rc != 0:
        table.append(err)
    text = "\n".join(lines + [""] + table)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n" + json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
