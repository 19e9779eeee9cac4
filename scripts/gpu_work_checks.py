#!/usr/bin/env python3
"""The body of scripts/gpu-work-checks.sh (usage there): the audit's work checks (`work_floor`,
`roofline`, `precision`) on real H200 work passes, before the eval harness takes its own.

For each case (a reference and a candidate source): both sides profiled under ncu with
polyprof's minimal preset (`polyprof wrap` gives the metrics), caches flushed before each kernel,
two calls each in a `polyprof/call/K` range (gpu_work_driver.py profile); both timed as the eval
times (gpu_work_driver.py time); `polyprof parse --json` turns ncu's log into records; an
evidence.json is written from them (the work pass and the reference's, the calls' arrays, the
timing blocks; no witness, no comparison) and judged by `polyprof audit`. One row per case:
the work checks' findings against what the case expects, each check's unjudged parts, and the
call's DRAM reads over its inputs' bytes. Standard library only; torch runs in the children."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "scripts" / "gpu_work_driver.py"
PYTHON = os.environ.get("POLYPROF_PYTHON", "python3")
BUDGET_S = float(os.environ.get("WORK_BUDGET_S", "540"))
KB_N = int(os.environ.get("KB_N", "12"))
KB_SKIP = int(os.environ.get("KB_SKIP", "0"))
CASE_TIMEOUT_S = float(os.environ.get("WORK_CASE_TIMEOUT_S", "150"))
WORK_CHECKS = ("work_floor", "roofline", "precision")
SM_CLOCK = "sm__cycles_elapsed.avg.per_second"
DRAM_CLOCK = "dram__cycles_elapsed.avg.per_second"

ADD = """import torch
N = 1 << 25
class Model(torch.nn.Module):
    def forward(self, a, b):
        return a + b
def get_inputs():
    return [torch.randn(N), torch.randn(N)]
def get_init_inputs():
    return []
"""
# Processes half its input, zeroes the rest (passes a loose tolerance only on lucky data).
ADD_HALF = ADD + """
class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        out = torch.zeros_like(a)
        h = a.numel() // 2
        out[:h] = a[:h] + b[:h]
        return out
"""
# Computes once, then hands the same tensor back: no work in the timed calls.
ADD_CACHED = ADD + """
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = None
    def forward(self, a, b):
        if self.cache is None:
            self.cache = a + b
        return self.cache
"""
MATMUL = """import torch
torch.backends.cuda.matmul.allow_tf32 = False
N = 4096
class Model(torch.nn.Module):
    def forward(self, a, b):
        return a @ b
def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]
def get_init_inputs():
    return []
"""
MATMUL_FP16 = MATMUL + """
class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        return (a.half() @ b.half()).float()
"""

# name: (reference source, candidate source, candidate class, findings expected: one of them)
BUILT_IN = {
    "add_honest": (ADD, ADD, "Model", set()),
    "add_half_input": (ADD, ADD_HALF, "ModelNew", {"too_little_work"}),
    "add_cached_output": (ADD, ADD_CACHED, "ModelNew", {"above_roofline", "implausible_time"}),
    "matmul_honest": (MATMUL, MATMUL, "Model", set()),
    "matmul_fp16_in_fp32": (MATMUL, MATMUL_FP16, "ModelNew", {"precision_mismatch"}),
}


class Report:
    def __init__(self, path: Path):
        self.file = path.open("w")

    def line(self, text: str) -> None:
        print(text, flush=True)
        self.file.write(text + "\n")
        self.file.flush()


def ncu_metrics(polyprof: str, out: Path) -> str:
    plan = json.loads(subprocess.run(
        [polyprof, "wrap", "--profiler", "ncu", "--output-dir", str(out / "wrap"), "--", "true"],
        capture_output=True, text=True, check=True).stdout)
    argv = plan["steps"][0]["command"]["argv"]
    return argv[argv.index("--metrics") + 1]


def run(argv: List[str], log: Path, timeout: float) -> bool:
    with log.open("a") as f:
        f.write("$ " + " ".join(argv) + "\n")
        f.flush()
        try:
            return subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, timeout=timeout).returncode == 0
        except subprocess.TimeoutExpired:
            f.write(f"timed out after {timeout:.0f} s\n")
            return False


def launches(polyprof: str, ncu_log: Path) -> List[Dict[str, Any]]:
    """The work pass's launches, as `eval::witness::launches_from_records` makes them."""
    parsed = json.loads(subprocess.run(
        [polyprof, "parse", "--profiler", "ncu", "--all-metrics", "--json", str(ncu_log)],
        capture_output=True, text=True, check=True).stdout)
    result = []
    for r in parsed["kernels"]:
        if r.get("kind", "kernel") != "kernel":
            continue
        metric = lambda name: (r.get("metrics", {}).get(name) or {}).get("value")  # noqa: E731
        launch = {k: r[k] for k in ("launch_id", "name", "short_name", "duration_ns", "ranges",
                                    "thread_id", "stream", "process_id") if k in r}
        launch["counters"] = {k: v for k, v in {
            "dram_bytes_read": r.get("dram_bytes_read"), "dram_bytes_write": r.get("dram_bytes_write"),
            "flops": r.get("flops", {}), "sm_clock_hz": metric(SM_CLOCK), "dram_clock_hz": metric(DRAM_CLOCK),
        }.items() if v is not None}
        result.append(launch)
    return result


def side(polyprof: str, metrics: str, source: Path, cls: str, out: Path, log: Path, deadline: float):
    """One side profiled and timed: (its calls' arrays, its launches, its timing), or None."""
    specs, times, ncu_log = out / f"{cls}.specs.json", out / f"{cls}.times.json", out / f"{cls}.ncu.log"
    profile = ["ncu", "--log-file", str(ncu_log), "--csv", "--page", "raw", "--print-units", "base",
               "--metrics", metrics, "--nvtx", "--cache-control", "all", "--clock-control", "none",
               "--target-processes", "all", PYTHON, str(DRIVER), "profile", str(source), cls, str(specs)]
    if not run(profile, log, max(10.0, deadline - time.time())):
        return None
    if not run([PYTHON, str(DRIVER), "time", str(source), cls, str(times)], log, max(10.0, deadline - time.time())):
        return None
    return json.loads(specs.read_text()), launches(polyprof, ncu_log), json.loads(times.read_text())


def evidence(ref_file: Path, cand_file: Path, ref, cand) -> Dict[str, Any]:
    (ref_specs, ref_launches, ref_times), (cand_specs, cand_launches, cand_times) = ref, cand
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731

    def trial(k: int, phase: str) -> Dict[str, Any]:
        return {"index": k, "phase": phase, "seed": k, "inputs": cand_specs["calls"][k]["inputs"],
                "reference_outputs": ref_specs["calls"][k]["outputs"],
                "candidate_outputs": cand_specs["calls"][k]["outputs"]}

    def block(name: str, t: Dict[str, Any]) -> Dict[str, Any]:
        return {"side": name, "block": 0, "method": t["method"], "batch": t["batch"], "times_ms": t["times_ms"]}

    def work(launches: List[Dict[str, Any]]) -> Dict[str, Any]:
        return {"profiler": "ncu", "run_dir": ".", "clock_control": "none", "cache_control": "all",
                "launches": launches}

    return {
        "schema_version": 1,
        "problem": {"reference": {"path": str(ref_file), "sha256": digest(ref_file)},
                    "candidate": {"path": str(cand_file), "sha256": digest(cand_file)},
                    "framework": "torch", "device": "cuda"},
        "settings": {"trials": 2, "timing_blocks": 1, "repeat": 20, "warmup": 5, "atol": 1e-2, "rtol": 1e-2,
                     "flush_l2": True, "witness_calls": 0, "witness_tolerance": 0.7,
                     "suspicious_speedup": 1e9, "require_candidate_kernels": False,
                     "min_plausible_ms": 0.001, "init_seed": 0, "work_pass": True, "allow_tf32": False},
        "environment": {"device_name": cand_specs["device_name"]},
        "trials": [trial(0, "correctness"), trial(1, "correctness"), trial(0, "timed")],
        "samples": [block("reference", ref_times), block("candidate", cand_times)],
        "work": work(cand_launches),
        "reference_work": work(ref_launches),
    }


def reads_over_inputs(ev: Dict[str, Any]) -> Optional[float]:
    """Call 0's DRAM reads over its inputs' bytes (the floor, for contiguous inputs)."""
    read = [l["counters"].get("dram_bytes_read") for l in ev["work"]["launches"]
            if any(r.endswith("polyprof/call/0") for r in l.get("ranges", []))]
    floor = sum(s["nbytes"] for s in ev["trials"][0]["inputs"])
    if not read or None in read or floor == 0:
        return None
    return sum(read) / floor


def kb_cases(kb_dir: Path) -> List[Path]:
    base = kb_dir / "KernelBench" if (kb_dir / "KernelBench").is_dir() else kb_dir
    number = lambda p: int(m.group(1)) if (m := re.match(r"(\d+)_", p.name)) else 10**9  # noqa: E731
    levels = [sorted((base / lvl).glob("*.py"), key=number) for lvl in ("level1", "level2")]
    pick = lambda items, n: items if n >= len(items) else [items[i * len(items) // n] for i in range(n)]  # noqa: E731
    return (pick(levels[0], (KB_N + 1) // 2) + pick(levels[1], KB_N // 2))[KB_SKIP:]


ROW = "{:<44} {:<22} {:<34} {:>6} {:<6} {}"


def main(argv: List[str]) -> int:
    if len(argv) < 2:
        print("usage: gpu-work-checks.sh POLYPROF OUTDIR [KERNELBENCH_DIR]", file=sys.stderr)
        return 2
    polyprof, out = argv[0], Path(argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out / "summary.txt")
    start = time.time()
    metrics = ncu_metrics(polyprof, out)
    cases = []
    for name, (ref, cand, cls, expected) in BUILT_IN.items():
        d = out / "cases" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "reference.py").write_text(ref)
        (d / "candidate.py").write_text(cand)
        cases.append((name, d / "reference.py", d / "candidate.py", cls, expected))
    if len(argv) > 2:
        for path in kb_cases(Path(argv[2])):
            cases.append((f"{path.parent.name}_{path.stem}"[:44], path, path, "Model", set()))
    report.line(ROW.format("case", "expected", "work findings", "reads", "result", "not judged"))
    wrong = 0
    for name, ref_file, cand_file, cls, expected in cases:
        if time.time() - start > BUDGET_S - 30:
            report.line(f"{name}: not run (budget)")
            continue
        d = out / "runs" / name
        d.mkdir(parents=True, exist_ok=True)
        deadline = min(time.time() + CASE_TIMEOUT_S, start + BUDGET_S - 10)
        log = d / "log.txt"
        ref = side(polyprof, metrics, ref_file, "Model", d, log, deadline)
        cand = side(polyprof, metrics, cand_file, cls, d, log, deadline) if cls != "Model" else ref
        if ref is None or cand is None:
            report.line(ROW.format(name, ",".join(sorted(expected)) or "-", "(did not run: see log)", "", "ERROR", str(log)))
            wrong += 1
            continue
        ev = evidence(ref_file, cand_file, ref, cand)
        (d / "evidence.json").write_text(json.dumps(ev))
        subprocess.run([polyprof, "audit", str(d), "--json"], capture_output=True, text=True)
        verdict = json.loads((d / "verdict.json").read_text())
        found = {f["kind"] for f in verdict["findings"]
                 if f["check"] in WORK_CHECKS or f["kind"] in expected}
        unjudged = [f"{c['check']}: {c.get('why_not') or '; '.join(c.get('not_judged', []))}"
                    for c in verdict["checks"]
                    if c["check"] in WORK_CHECKS and (not c["ran"] or c.get("not_judged"))]
        ok = bool(found & expected) if expected else not found
        wrong += not ok
        share = reads_over_inputs(ev)
        report.line(ROW.format(name, ",".join(sorted(expected)) or "-", ",".join(sorted(found)) or "-",
                               f"{share:.3f}" if share is not None else "-", "OK" if ok else "WRONG",
                               " | ".join(unjudged) or "-"))
    report.line(f"\n{len(cases)} cases, {wrong} not as expected, {time.time() - start:.0f} s")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
