"""GPU time of the same kernels by three methods, measured side by side in one run on a CUDA GPU:
polyprof.benchmark_kernel, triton.testing.do_bench, and Nsight Compute's gpu__time_duration
(this script re-runs itself under `polyprof run --profiler ncu` with --mode ncu, once with ncu's
default cache flush and once with `--cache-control none`, the counterpart of flush_l2=False).
Prints a table of medians, the deviation from ncu and the coefficient of variation.

    python3 python/bench/gpu_timing.py [--out FILE]
"""

import argparse
import json
import statistics
import subprocess
import sys

NCU_LAUNCHES = 20


def kernels():
    import torch

    def add(n):
        a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        return torch.add, (a, b), None, 3 * 4 * n

    m = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    return [
        ("add_256k_fp32", *add(1 << 18)),
        ("add_1m_fp32", *add(1 << 20)),
        ("add_8m_fp32", *add(1 << 23)),
        ("add_32m_fp32", *add(1 << 25)),
        ("matmul_4096_bf16", torch.matmul, (m, m), 2 * 4096**3, None),
    ]


def mode_ncu():
    import torch

    for _name, fn, args, _, _ in kernels():
        for _ in range(NCU_LAUNCHES):
            fn(*args)
        torch.cuda.synchronize()


def ncu_times(extra):
    """Median gpu__time_duration (ms) of each kernel of kernels(), in order: the launch groups
    of exactly NCU_LAUNCHES launches, by first appearance (the inputs' RNG fills are fewer)."""
    import tempfile

    from polyprof._cli import executable

    out_dir = tempfile.mkdtemp(prefix="gpu-timing-ncu-") + "/ncu.000"
    argv = [executable(), "run", "--profiler", "ncu", "--clock-control", "none", "--json", "-q",
            "--output-dir", out_dir]
    for arg in extra:
        argv += ["--ncu-arg", arg]
    proc = subprocess.run(argv + ["--", sys.executable, __file__, "--mode", "ncu"],
                          capture_output=True, text=True)
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return [], f"rc {proc.returncode}: {proc.stderr[-2000:]}"
    groups = {}
    for k in doc.get("kernels", []):
        if k.get("duration_ns") is not None:
            key = (k.get("short_name") or k["name"], str(k.get("grid")))
            groups.setdefault(key, []).append(k["duration_ns"] / 1e6)
    medians = [statistics.median(v) for v in groups.values() if len(v) == NCU_LAUNCHES]
    return medians, f"rc {proc.returncode}; groups {[(k[0][:40], len(v)) for k, v in groups.items()]}"


def dev(ours, ref):
    return f"{100 * (ours - ref) / ref:+.1f} %" if ref else "n/a"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="bench")
    p.add_argument("--out")
    a = p.parse_args()
    if a.mode == "ncu":
        return mode_ncu()
    import triton.testing

    import polyprof

    results = []
    for name, fn, args, flops, nbytes in kernels():
        b = polyprof.benchmark_kernel(fn, *args, repeat=100, warmup=10, flops=flops, bytes_moved=nbytes, name=name)
        warm = polyprof.benchmark_kernel(fn, *args, repeat=100, warmup=10, flush_l2=False, name=name)
        tri = triton.testing.do_bench(lambda: fn(*args), warmup=25, rep=100, return_mode="median")
        results.append((name, b, warm, tri))
        print(b.summary(), flush=True)
    cold, cold_note = ncu_times([])
    hot, hot_note = ncu_times(["--cache-control", "none"])
    table = [
        "| kernel | ncu | polyprof (method, CV) | vs ncu | do_bench | vs ncu | ncu, no flush | polyprof flush_l2=False (CV) | vs ncu |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, (name, b, warm, tri) in enumerate(results):
        ref = cold[i] if i < len(cold) else None
        ref_hot = hot[i] if i < len(hot) else None
        us = lambda ms: f"{ms * 1e3:.2f} µs" if ms is not None else "n/a"
        table.append(
            f"| {name} | {us(ref)} | {us(b.median_ms)} ({b.method}, {b.cv * 100:.1f} %) | {dev(b.median_ms, ref)} "
            f"| {us(tri)} | {dev(tri, ref)} | {us(ref_hot)} | {us(warm.median_ms)} ({warm.cv * 100:.1f} %) "
            f"| {dev(warm.median_ms, ref_hot)} |"
        )
    table += [f"ncu (flush): {cold_note}", f"ncu (--cache-control none): {hot_note}"]
    text = "\n".join(table)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
