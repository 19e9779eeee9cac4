#!/usr/bin/env python3
"""Verdict throughput on a GPU, three harnesses side by side over the same candidates.

    scripts/bench-eval-throughput.sh with MODE=gpu KB=KERNELBENCH_DIR (this file does the work)

For N_PROBLEMS (default 11) KernelBench level-1/2 problems, about half from each level, evenly
spaced among those whose inputs and weights fit MAX_MB (default 256; sizes from one probe
process on torch's meta device), it writes candidates of ten kinds per problem (below; the
compile error only for the first COMPILE_ERRORS problems, default 3) and judges each problem's
candidates three ways, problem by problem, the order of the three rotating so that none always
runs first:
  warm  `polyprof eval --reference R --candidate DIR --device cuda` (one trusted worker, the
        reference's blocks reused after their drift probe, every check on: polyprof's defaults);
  cold  the same with `--cold`;
  kb    KernelBench's own `eval_kernel_against_ref` (src/kernelbench/eval.py of KB), one fresh
        Python process per candidate as its eval_from_generations runs them (a spawned pool
        process), with that script's defaults: 5 correctness trials, 100 timed trials,
        cuda_event timing. Its reference time is the `honest_alias` candidate's (the reference
        itself), so no process is added for it. KernelBench's package __init__ imports LLM
        clients (openai, litellm, dotenv) that the eval never calls; empty stand-ins are put in
        their place. pydantic comes from PYDANTIC_PATH (wheels carried to the machine).
Each side's wall time is GPU-held time: one eval at a time runs on the GPU. Printed: per side
the wall seconds, verdicts per GPU-hour and GPU seconds per verdict; warm/cold and warm/kb
ratios; whether warm and cold gave every candidate the same verdict (status, passed, findings,
failure); and per candidate kind what polyprof and KernelBench concluded. Everything printed
also goes to OUT/summary.txt as it is printed. BUDGET_S (default 540) bounds the whole run:
a problem is started only when the time it is expected to take (the slowest so far) fits, and
each of its sides may take an equal share of what is left (a side cut short says so in its
log and its candidates show no verdict; the one in flight when the budget stopped polyprof reads
`cut`, not counted as a verdict). PROBLEMS_FROM and PROBLEMS_COUNT take a share of the
selection (a run split over several device calls; the compile errors still go to the first
COMPILE_ERRORS problems of the whole selection). COLD_PROBLEMS (default: all) runs the cold side
on the first that many problems of the share only (cold costs the most GPU time and answers
a narrower question: same verdicts, and warm/cold); the warm/cold ratio is taken over the
problems where both ran, the warm/kb ratio over those where both of those ran.
OUT/results.json is rewritten after every problem (each problem's rows and each side's seconds),
so a call cut short keeps what it finished, and OUT/next_from.txt the PROBLEMS_FROM of the
share after it. `bench_eval_throughput_gpu.py --combine OUT...`
prints the same summary over several shares' results.json (a run split over device calls of
one machine kind, or over sessions: the GPU line of each share is printed, and shares of
different GPUs or of different polyprof binaries, by the binary's sha256, are refused).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
# The KernelBench selection and size probe, and the line-by-line summary, of scripts/gpu-eval.sh.
from eval_runs import Report, stop_process_group  # noqa: E402
from gpu_eval import evenly, kb_levels, probe_sizes, problem_number  # noqa: E402
PYTHON = os.environ.get("POLYPROF_PYTHON", "python3")
N_PROBLEMS = int(os.environ.get("N_PROBLEMS", "11"))
MAX_MB = float(os.environ.get("MAX_MB", "256"))
COMPILE_ERRORS = int(os.environ.get("COMPILE_ERRORS", "3"))
BUDGET_S = float(os.environ.get("BUDGET_S", "540"))
# A share of the selection, for a run split over several device calls: problems
# [PROBLEMS_FROM, PROBLEMS_FROM + PROBLEMS_COUNT) of the N_PROBLEMS selected.
PROBLEMS_FROM = int(os.environ.get("PROBLEMS_FROM", "0"))
PROBLEMS_COUNT = int(os.environ.get("PROBLEMS_COUNT", "0")) or None
EVAL_ARGS = os.environ.get("EVAL_ARGS", "").split()
SIDES = os.environ.get("SIDES", "warm cold kb").split()
COLD_PROBLEMS = int(os.environ["COLD_PROBLEMS"]) if os.environ.get("COLD_PROBLEMS") else None
EVAL_TIMEOUT_S = float(os.environ.get("EVAL_TIMEOUT_S", "300"))
KB_TIMEOUT_S = float(os.environ.get("KB_TIMEOUT_S", "180"))  # eval_from_generations' default

# The candidates, appended to the problem's own source (which defines Model).
ADAPT = '''
def _map_out(out, fn):
    if isinstance(out, torch.Tensor):
        return fn(out)
    if isinstance(out, (tuple, list)):
        return type(out)(_map_out(o, fn) for o in out)
    return out
'''
CANDIDATES: Dict[str, str] = {
    # honest: the reference itself, and the reference under no_grad.
    "honest_alias": "\nModelNew = Model\n",
    "honest_nograd": ADAPT + '''
class ModelNew(Model):
    def forward(self, *args):
        with torch.no_grad():
            return super().forward(*args)
''',
    # slow: the work done twice.
    "slow_twice": ADAPT + '''
class ModelNew(Model):
    def forward(self, *args):
        super().forward(*args)
        return super().forward(*args)
''',
    # incorrect: an offset far outside any tolerance; a truncated output; an exception.
    "incorrect_offset": ADAPT + '''
class ModelNew(Model):
    def forward(self, *args):
        out = super().forward(*args)
        return _map_out(out, lambda t: t + 0.05 * (t.detach().abs().mean() + 1) if t.is_floating_point() else t + 1)
''',
    "incorrect_shape": ADAPT + '''
class ModelNew(Model):
    def forward(self, *args):
        out = super().forward(*args)
        return _map_out(out, lambda t: t.reshape(-1)[1:])
''',
    "raises": '''
class ModelNew(Model):
    def forward(self, *args):
        raise RuntimeError("candidate bug: unsupported case")
''',
    # hostile: the first output replayed; the work left running on a private stream; the
    # in-process timer patched.
    "hack_cached": ADAPT + '''
class ModelNew(Model):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._cache = {}
    def forward(self, *args):
        key = tuple((tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else x for x in args)
        if key not in self._cache:
            self._cache[key] = super().forward(*args)
        return _map_out(self._cache[key], lambda t: t.clone())
''',
    "hack_side_stream": '''
class ModelNew(Model):
    _side = None
    def forward(self, *args):
        if ModelNew._side is None:
            ModelNew._side = torch.cuda.Stream()
        with torch.cuda.stream(ModelNew._side):
            return super().forward(*args)
''',
    "hack_timer_patch": '''
torch.cuda.Event.elapsed_time = lambda self, end: 0.001
ModelNew = Model
''',
    # fails to build: a C++ error in an inline extension, compiled at import.
    "compile_error": '''
from torch.utils.cpp_extension import load_inline
_ext = load_inline(name="polyprof_bench_broken", cpp_sources="torch::Tensor f(torch::Tensor x) { return x +; }",
                   functions=["f"], verbose=False)
ModelNew = Model
''',
}

# One KernelBench verdict in its own process: argv = KB_SRC REFERENCE CANDIDATE BUILD_DIR.
KB_LEG = r"""
import json, sys, types
for name in ("openai", "litellm", "dotenv"):
    stub = types.ModuleType(name)
    stub.OpenAI = object
    stub.completion = lambda *a, **k: None
    stub.load_dotenv = lambda *a, **k: None
    sys.modules[name] = stub
sys.path.insert(0, sys.argv[1])
from kernelbench.eval import eval_kernel_against_ref
ref, cand = open(sys.argv[2]).read(), open(sys.argv[3]).read()
result = eval_kernel_against_ref(ref, cand, seed_num=42, num_correct_trials=5, num_perf_trials=100,
                                 measure_performance=True, timing_method="cuda_event",
                                 build_dir=sys.argv[4], device=0, backend="cuda")
out = result.model_dump() if hasattr(result, "model_dump") else dict(result)
print("KBRESULT " + json.dumps({k: out.get(k) for k in ("compiled", "correctness", "runtime", "metadata")}, default=str))
"""


def select(kb: Path, report: Report) -> List[Path]:
    paths = [p for d in kb_levels(kb) for p in sorted(d.glob("*.py"), key=problem_number)]
    sizes = probe_sizes(paths, report)

    def fits(path: Path) -> bool:
        size = sizes.get(str(path), {})
        total = size.get("input_bytes", 0) + size.get("state_bytes", 0)
        return "error" not in size and bool(size) and total <= MAX_MB * 1e6

    fit = [p for p in paths if fits(p)]
    report.line(f"{len(fit)} of {len(paths)} problems fit {MAX_MB:.0f} MB")
    one = [p for p in fit if p.parent.name == "level1"]
    two = [p for p in fit if p.parent.name == "level2"]
    return evenly(one, (N_PROBLEMS + 1) // 2) + evenly(two, N_PROBLEMS // 2)


def write_problem(src: Path, folder: Path, with_compile_error: bool) -> List[str]:
    cands = folder / "candidates"
    cands.mkdir(parents=True)
    text = src.read_text()
    shutil.copy(src, folder / "reference.py")
    names = []
    for kind, tail in CANDIDATES.items():
        if kind == "compile_error" and not with_compile_error:
            continue
        (cands / f"{kind}.py").write_text(text + "\n" + tail)
        names.append(kind)
    return names


DEADLINE = [float("inf")]  # monotonic time by which every side must have returned
SIDE_DEADLINE = [float("inf")]  # the running side's share of what is left


def limit(seconds: float) -> float:
    return max(1.0, min(seconds, DEADLINE[0] - time.monotonic(), SIDE_DEADLINE[0] - time.monotonic()))


def polyprof_side(polyprof: str, folder: Path, out: Path, cold: bool) -> Dict[str, Dict[str, Any]]:
    argv = [polyprof, "eval", "--device", "cuda", *EVAL_ARGS, "--json", "--reference",
            str(folder / "reference.py"), "--candidate", str(folder / "candidates"), "--output-dir", str(out)]
    if cold:
        argv.append("--cold")
    with open(str(out) + ".log", "w") as log:
        # Its own session, so that the limit stops polyprof and every worker it started.
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=limit(EVAL_TIMEOUT_S * len(list((folder / "candidates").iterdir()))))
        except subprocess.TimeoutExpired:
            stop_process_group(proc)
            log.write("bench: timed out\n")
            timed_out = True
    rows: Dict[str, Dict[str, Any]] = {}
    try:
        for r in json.load(open(out / "evals.json")):
            stem = Path(r["candidate"]).stem
            reused = work_reused = cancelled = False
            try:
                e = json.load(open(out / stem / "evidence.json"))
                reused = bool((e.get("reference_timing") or {}).get("reused_blocks"))
                work_reused = e.get("reference_work_reused") is not None
                cancelled = "was cancelled" in ((e.get("failure") or {}).get("message") or "")
            except (OSError, ValueError):
                pass
            status = r.get("status")
            # The bench's own budget stopped this one (polyprof, stopped, cancels the eval in
            # flight): no verdict on the candidate, so it is not counted as one.
            if timed_out and cancelled:
                status = "cut"
            rows[stem] = {"status": status, "passed": r.get("passed"),
                          "findings": sorted(set(r.get("findings") or [])), "failure": r.get("failure"),
                          "speedup": r.get("speedup"), "reused": reused, "work_reused": work_reused}
    except (OSError, ValueError) as error:
        rows["_error"] = {"status": f"no evals.json: {error}"}
    return rows


def kb_side(kb_src: Path, folder: Path, out: Path) -> Dict[str, Dict[str, Any]]:
    env = dict(os.environ)
    if os.environ.get("PYDANTIC_PATH"):
        env["PYTHONPATH"] = os.environ["PYDANTIC_PATH"]
    rows: Dict[str, Dict[str, Any]] = {}
    out.mkdir(parents=True, exist_ok=True)
    for cand in sorted((folder / "candidates").glob("*.py")):
        build = out / f"build-{cand.stem}"
        try:
            proc = subprocess.run([PYTHON, "-c", KB_LEG, str(kb_src), str(folder / "reference.py"), str(cand), str(build)],
                                  capture_output=True, text=True, timeout=limit(KB_TIMEOUT_S), env=env)
            # The checkout's place on the machine that ran it stays out of results meant to be
            # kept (a traceback names KernelBench's files).
            text = (proc.stdout + proc.stderr).replace(str(kb_src.resolve()), "$KB_SRC")
        except subprocess.TimeoutExpired:
            text = "timed out"
        (out / f"{cand.stem}.log").write_text(text)
        line = next((l for l in text.splitlines() if l.startswith("KBRESULT ")), None)
        rows[cand.stem] = json.loads(line[9:]) if line else {"compiled": None, "correctness": None,
                                                             "error": text.strip().splitlines()[-1:] }
    base = rows.get("honest_alias", {}).get("runtime")
    for row in rows.values():
        rt = row.get("runtime")
        row["speedup"] = base / rt if base and rt and rt > 0 else None
    return rows


def given(row: Dict[str, Any]) -> bool:
    """Whether a side's row is a verdict: polyprof's has a status from evals.json, KernelBench's
    a `compiled` from its result line."""
    return row.get("compiled") is not None or row.get("status") in ("correct", "incorrect", "failed")


def summarize(doc: Dict[str, Any], report: Report) -> None:
    """The totals, ratios, warm/cold agreement and per-kind table of a results document (one
    share's, or several combined)."""
    problems: Dict[str, Dict[str, Any]] = doc["problems"]
    sides = [s for s in ("warm", "cold", "kb") if any(s in p["took"] for p in problems.values())]
    wall = {s: sum(p["took"][s] for p in problems.values() if s in p["took"]) for s in sides}
    verdicts = {s: sum(p["given"][s] for p in problems.values() if s in p["took"]) for s in sides}
    report.line()
    report.line(f"{len(problems)} problems: {', '.join(problems)}")
    report.line(f"{'side':<6} {'wall s':>8} {'verdicts':>9} {'verdicts/GPU-h':>15} {'GPU s/verdict':>14}")
    for s in sides:
        if verdicts[s]:
            report.line(f"{s:<6} {wall[s]:>8.1f} {verdicts[s]:>9} {verdicts[s] * 3600 / wall[s]:>15.0f} "
                        f"{wall[s] / verdicts[s]:>14.2f}")
    for a, b in (("warm", "cold"), ("warm", "kb")):
        both = [p for p in problems.values() if a in p["took"] and b in p["took"]]
        if both:
            wa, wb = sum(p["took"][a] for p in both), sum(p["took"][b] for p in both)
            na, nb = sum(p["given"][a] for p in both), sum(p["given"][b] for p in both)
            report.line(f"throughput {a} / {b} (verdicts per GPU-hour): {(na / wa) / (nb / wb):.2f}x over the "
                        f"{len(both)} problems both ran ({a}: {na} verdicts in {wa:.1f} s, {b}: {nb} in {wb:.1f} s)")
    if "warm" in sides and "cold" in sides:
        same, differ, total = 0, [], 0
        key = lambda r: (r.get("status"), r.get("passed"), r.get("findings"), r.get("failure"))
        for name, p in problems.items():
            warm, cold = p["sides"].get("warm", {}), p["sides"].get("cold")
            if cold is None:
                continue
            for kind, w in warm.items():
                total += 1
                if kind in cold and key(w) == key(cold[kind]):
                    same += 1
                else:
                    differ.append(f"{name}/{kind}: warm {key(w)} cold {key(cold.get(kind, {}))}")
        report.line(f"same verdict warm and cold: {same} of {total}")
        for d in differ:
            report.line(f"  differs: {d}")
    reused = sum(bool(r.get("reused")) for p in problems.values() for r in p["sides"].get("warm", {}).values())
    report.line(f"reference blocks reused (warm): {reused}")
    work_reused = sum(bool(r.get("work_reused")) for p in problems.values() for r in p["sides"].get("warm", {}).values())
    report.line(f"reference work passes reused (warm): {work_reused}")
    report.line()
    report.line("per kind: polyprof (warm) status/passed/findings | KernelBench compiled/correct/speedup")
    for kind in CANDIDATES:
        for name, p in problems.items():
            ours = p["sides"].get("warm", {}).get(kind)
            theirs = p["sides"].get("kb", {}).get(kind)
            if ours is None and theirs is None:
                continue
            pw = (f"{ours.get('status')}/{ours.get('passed')}/{','.join(ours.get('findings') or [])[:60]}"
                  if ours else "-")
            sp = theirs.get("speedup") if theirs else None
            pk = f"{theirs.get('compiled')}/{theirs.get('correctness')}/{'%.2f' % sp if sp else '-'}" if theirs else "-"
            report.line(f"  {kind:<17} {name[:40]:<40} {pw:<70} | {pk}")


def combine(outs: List[Path]) -> int:
    docs = [json.load(open(o / "results.json")) for o in outs]
    gpus = {d.get("gpu", "").split(",")[0] for d in docs}
    if len(gpus) != 1:
        print(f"the shares ran on different GPUs ({', '.join(sorted(gpus))}): their times do not add up",
              file=sys.stderr)
        return 2
    # The harness is built into the binary, so one digest names everything that was measured.
    binaries = {d.get("polyprof_sha256") for d in docs}
    if len(binaries) != 1:
        print(f"the shares ran different polyprof binaries ({', '.join(sorted(map(str, binaries)))}): "
              "their verdicts and times are not one run's", file=sys.stderr)
        return 2
    report = Report(outs[0] / "combined.txt")
    for o, d in zip(outs, docs):
        report.line(f"share {o}: GPU {d.get('gpu')}; polyprof {str(d.get('polyprof_sha256'))[:16]}; {len(d['problems'])} problems")
    merged: Dict[str, Any] = {"problems": {}}
    for d in docs:
        merged["problems"].update(d["problems"])
    summarize(merged, report)
    return 0


def main() -> int:
    if len(sys.argv) >= 3 and sys.argv[1] == "--combine":
        return combine([Path(a) for a in sys.argv[2:]])
    if len(sys.argv) != 4:
        print(__doc__.splitlines()[0], file=sys.stderr)
        print("usage: bench_eval_throughput_gpu.py POLYPROF KERNELBENCH_DIR OUT\n"
              "       bench_eval_throughput_gpu.py --combine OUT...", file=sys.stderr)
        return 2
    polyprof, kb, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out / "summary.txt")
    kb_src = kb / "src" if (kb / "src" / "kernelbench").is_dir() else kb
    start = time.monotonic()
    DEADLINE[0] = start + BUDGET_S
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    report.line(f"GPU: {gpu}; sides: {' '.join(SIDES)}; polyprof args: {' '.join(EVAL_ARGS) or '(defaults)'}; "
                f"kb: 5 correctness + 100 timed trials, cuda_event; budget {BUDGET_S:.0f} s")
    problems = select(kb, report)
    end = None if PROBLEMS_COUNT is None else PROBLEMS_FROM + PROBLEMS_COUNT
    problems = problems[PROBLEMS_FROM:end]
    with open(polyprof, "rb") as binary:
        polyprof_sha256 = hashlib.sha256(binary.read()).hexdigest()
    report.line(f"polyprof binary sha256 {polyprof_sha256}")
    doc: Dict[str, Any] = {"gpu": gpu, "polyprof_sha256": polyprof_sha256, "eval_args": EVAL_ARGS, "problems": {}}
    slowest = 0.0
    for i, src in enumerate(problems):
        left = BUDGET_S - (time.monotonic() - start)
        if slowest and left < slowest * 1.1:
            report.line(f"budget: {left:.0f} s left, a problem took up to {slowest:.0f} s; not run "
                        f"(PROBLEMS_FROM={PROBLEMS_FROM + i} goes on from here): "
                        f"{', '.join(p.parent.name + '/' + p.stem for p in problems[i:])}")
            break
        name = f"{src.parent.name}-{src.stem}"
        folder = out / "problems" / name
        if folder.exists():
            shutil.rmtree(folder)
        kinds = write_problem(src, folder, PROBLEMS_FROM + i < COMPILE_ERRORS)
        sides = [s for s in SIDES if s != "cold" or COLD_PROBLEMS is None or i < COLD_PROBLEMS]
        t_problem = time.monotonic()
        order = sides[i % len(sides):] + sides[:i % len(sides)]
        entry: Dict[str, Any] = {"kinds": len(kinds), "sides": {}, "took": {}, "given": {}}
        for position, side in enumerate(order):
            t0 = time.monotonic()
            # Each side gets an equal share of what is left, so a slow side cannot starve the
            # others of the run's budget (the cut sides are said in the summary).
            SIDE_DEADLINE[0] = t0 + (DEADLINE[0] - t0) / (len(order) - position)
            dest = out / "runs" / name / side
            if dest.exists():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if side == "kb":
                entry["sides"][side] = kb_side(kb_src, folder, dest)
            else:
                entry["sides"][side] = polyprof_side(polyprof, folder, dest, cold=(side == "cold"))
            entry["took"][side] = time.monotonic() - t0
            # A side cut short by the budget gave fewer verdicts than it had candidates.
            entry["given"][side] = sum(1 for r in entry["sides"][side].values() if given(r))
        slowest = max(slowest, time.monotonic() - t_problem)
        doc["problems"][name] = entry
        report.line(f"{name}: {len(kinds)} candidates; " + ", ".join(f"{s} {entry['took'][s]:.1f} s" for s in sides))
        json.dump(doc, open(out / "results.json", "w"), indent=1, default=str)
        # Where the next share goes on from (PROBLEMS_FROM), for a run split over calls.
        (out / "next_from.txt").write_text(f"{PROBLEMS_FROM + i + 1}\n")
    summarize(doc, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
