#!/usr/bin/env python3
"""The body of scripts/gpu-eval.sh (usage and settings are documented there): the GPU corpus
(tests/eval/gpu) judged by `polyprof eval` and checked against expected.json, then KernelBench
problems judged as their own candidates. Standard library only; torch is used by the child
processes it starts (the size probe, the extension prebuild), never imported here."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_runs import (  # noqa: E402
    Budget, EvalRun, Report, describe_work, figures, ms, ratio, run_eval, work_figures,
)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "eval" / "gpu"
PYTHON = os.environ.get("POLYPROF_PYTHON", "python3")


def setting(name: str, default: str) -> str:
    return os.environ.get(name, default)


BUDGET_S = float(setting("GPU_EVAL_BUDGET_S", "540"))
PARTS = setting("GPU_EVAL_PARTS", "corpus kb").split()
ONLY = set(setting("GPU_EVAL_CANDIDATES", "").split())
CORPUS_ARGS = shlex.split(setting("CORPUS_ARGS", "--blocks 3 --repeat 20"))
CORPUS_EVAL_TIMEOUT_S = float(setting("CORPUS_EVAL_TIMEOUT_S", "180"))
KB_N = int(setting("KB_N", "50"))
# The first KB_SKIP runnable problems (in the smallest-first order) are left out: a sweep longer
# than one device call continues where the last call stopped.
KB_SKIP = int(setting("KB_SKIP", "0"))
# Named problems instead of the evenly spaced selection: "level2/2 level2/3" (level/number).
KB_PROBLEMS = setting("KB_PROBLEMS", "").split()
# The N smallest problems of both levels (inputs and weights, from the size probe) instead of
# the evenly spaced selection: a sweep that must reach a count within a time budget.
KB_SMALLEST = int(setting("KB_SMALLEST", "0"))
KB_ARGS = shlex.split(setting("KB_ARGS", "--trials 2 --blocks 3 --repeat 20"))
KB_EVAL_TIMEOUT_S = float(setting("KB_EVAL_TIMEOUT_S", "150"))
KB_MAX_GB = float(setting("KB_MAX_GB", "8"))
#: A KernelBench eval is not started with less than this left of the budget (seconds).
KB_MIN_LEFT_S = float(setting("KB_MIN_LEFT_S", "45"))
#: A corpus eval is not started with less than this left (seconds).
CORPUS_MIN_LEFT_S = 25.0
PREBUILD_WAIT_S = 420.0


@dataclass
class Outcome:
    """One judged candidate, for the summary."""

    name: str
    role: str  # honest | hostile
    figures: Dict[str, Any]
    verdict_word: str = ""  # OK | MISMATCH (corpus only)
    problems: List[str] = field(default_factory=list)
    expect: Optional[Dict[str, Any]] = None


# --- expectations ---------------------------------------------------------------------------


def finding_kinds() -> Optional[set]:
    """FindingKind's variants in snake_case, read from src/eval/verdict.rs (None if unreadable)."""
    try:
        source = (ROOT / "src" / "eval" / "verdict.rs").read_text()
    except OSError:
        return None
    body = re.search(r"pub enum FindingKind \{(.*?)\}", source, re.S)
    if body is None:
        return None
    variants = re.findall(r"^\s*([A-Z]\w*),", body.group(1), re.M)
    return {re.sub(r"(?<!^)([A-Z])", r"_\1", v).lower() for v in variants}


def compare(expect: Dict[str, Any], run: EvalRun) -> "tuple[str, List[str], List[str]]":
    """(OK | MISMATCH, what differs, extra findings that are not a mismatch). `or_expect` lists
    other acceptable outcomes (a hack the harness defeats outright, say); a mismatch reports
    the differences from the first one."""
    first = compare_one(expect, run)
    if first[0] == "OK":
        return first
    for alternative in expect.get("or_expect", []):
        other = compare_one(alternative, run)
        if other[0] == "OK":
            return other
    return first


def compare_one(expect: Dict[str, Any], run: EvalRun) -> "tuple[str, List[str], List[str]]":
    if run.verdict is None:
        why = "killed at the wall limit" if run.exit_code is None else f"exit {run.exit_code}"
        return "MISMATCH", [f"no verdict ({why}), see {run.log}"], []
    got = figures(run.verdict)
    problems: List[str] = []
    statuses = expect["status"] if isinstance(expect["status"], list) else [expect["status"]]
    if got["status"] not in statuses:
        problems.append(f"status {got['status']}, expected {'|'.join(statuses)}")
    if got["failure_kind"] != expect.get("failure_kind"):
        problems.append(f"failure {got['failure_kind']}, expected {expect.get('failure_kind')}")
    kinds = set(got["findings"])
    missing = [k for k in expect["findings"] if k not in kinds]
    if missing:
        problems.append("missing " + ",".join(missing))
    extras = sorted(kinds - set(expect["findings"]) - set(expect.get("allowed", [])))
    if expect.get("exact") and extras:
        problems.append("unexpected " + ",".join(extras))
        extras = []
    limit = expect.get("speedup_max")
    if limit is not None:
        if got["speedup"] is None:
            problems.append("no speedup to check")
        elif got["speedup"] > limit:
            problems.append(f"speedup {got['speedup']:.2f} > {limit}")
    for kind, text in expect.get("mentions", {}).items():
        found = [f for f in run.verdict.get("findings") or [] if f.get("kind") == kind]
        if found and not any(text in json.dumps(f) for f in found):
            problems.append(f"{kind} does not mention {text!r}")
    # The CLI's contract: 0 only when passed, 1 when the candidate was judged otherwise.
    wanted_exit = 0 if run.verdict.get("passed") else 1
    if run.exit_code is not None and run.exit_code != wanted_exit:
        problems.append(f"exit {run.exit_code}, expected {wanted_exit}")
    return ("MISMATCH" if problems else "OK"), problems, extras


def describe_expect(expect: Dict[str, Any]) -> str:
    status = expect["status"] if isinstance(expect["status"], str) else "|".join(expect["status"])
    parts = [status + (f"/{expect['failure_kind']}" if expect.get("failure_kind") else "")]
    parts += expect["findings"]
    return " ".join(parts)


def describe_got(got: Dict[str, Any]) -> str:
    if got["status"] is None:
        return "no verdict"
    parts = [str(got["status"]) + (f"/{got['failure_kind']}" if got["failure_kind"] else "")]
    parts += got["findings"]
    return " ".join(parts)


def flagged(got: Dict[str, Any]) -> bool:
    return got["status"] != "correct" or bool(got["findings"])


# --- environment and preparation ------------------------------------------------------------


def calibrate(report: Report, polyprof: str) -> None:
    """`polyprof calibrate` into the default cache, which the evals' audits read and cite
    (GPU_EVAL_CALIBRATE=0 leaves it out); a cached calibration is reused, not measured again."""
    if setting("GPU_EVAL_CALIBRATE", "1") == "0":
        return
    report.line("== calibrate (the default cache, cited by each eval's audit)")
    for line in capture([polyprof, "calibrate"], timeout=300).splitlines():
        report.line("   " + line)


def capture(argv: List[str], timeout: float = 60) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return (done.stdout + done.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{argv[0]}: {error}"


def environment(report: Report, polyprof: str) -> None:
    report.line("== environment")
    report.line(capture(["nvidia-smi", "-L"]))
    report.line(capture([polyprof, "--version"]))
    ncu = capture(["ncu", "--version"]).splitlines() if shutil.which("ncu") else ["ncu: not on PATH"]
    report.line(ncu[-1] if ncu else "ncu: no version")
    report.line(capture([PYTHON, "-c", "import sys, torch, triton; print('python', sys.version.split()[0], "
                         "'torch', torch.__version__, 'triton', triton.__version__)"]))


def export_arch_list(report: Report) -> None:
    """TORCH_CUDA_ARCH_LIST for the device, set for this script and everything it starts: the
    prebuild (which must not open a CUDA context: it runs beside evals whose conditions count
    other processes on the GPU) then writes the same build files the workers would."""
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return
    text = capture([PYTHON, "-c", "import torch; c = torch.cuda.get_device_capability(); print(f'{c[0]}.{c[1]}')"])
    if re.fullmatch(r"\d+\.\d+", text.strip()):
        os.environ["TORCH_CUDA_ARCH_LIST"] = text.strip()
        report.line(f"TORCH_CUDA_ARCH_LIST={text.strip()}")
    else:
        report.line(f"note: no device capability ({text[-200:]}); extensions build inside the evals")


PREBUILD_CODE = (
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('polyprof_prebuild', sys.argv[1])\n"
    "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
    "print('built', sys.argv[1])\n"
)


def start_prebuild(files: List[Path], out: Path) -> List[subprocess.Popen]:
    """Import each load_inline candidate once, in parallel and without a GPU, so its extension
    is compiled into torch's extension cache before its eval (and not on the eval's clock)."""
    if not files or not os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return []
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", MAX_JOBS=os.environ.get("MAX_JOBS", "4"))
    (out / "prebuild").mkdir(parents=True, exist_ok=True)
    procs = []
    for path in files:
        with open(out / "prebuild" / f"{path.stem}.log", "w") as log:
            procs.append(subprocess.Popen([PYTHON, "-c", PREBUILD_CODE, str(path)], stdout=log,
                                          stderr=subprocess.STDOUT, env=env, cwd=path.parent))
    return procs


def wait_prebuild(procs: List[subprocess.Popen], report: Report, budget: Budget) -> None:
    for proc in procs:
        try:
            proc.wait(timeout=max(1.0, min(PREBUILD_WAIT_S, budget.left() - CORPUS_MIN_LEFT_S)))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.returncode != 0:
            report.line(f"note: prebuild of {proc.args[-1]} exited {proc.returncode}: the eval builds it")
    procs.clear()


def fresh_dir(path: Path) -> None:
    """An eval directory left by an earlier run of this script is removed; anything else there is
    not ours to delete."""
    if not path.exists():
        return
    if (path / "evidence.json").exists() or (path / "verdict.json").exists() or (path / "harness").is_dir():
        shutil.rmtree(path)
    else:
        raise SystemExit(f"{path} exists and is not an eval directory: choose another OUTDIR")


# --- the corpus -----------------------------------------------------------------------------

CORPUS_ROW = "{:<28} {:<44} {:<56} {:<8} {}"


def corpus_order(expected: Dict[str, Any]) -> "tuple[List[str], List[str]]":
    """Candidates without an inline extension first (honest ones first), then those with one
    (their prebuild runs meanwhile); the hang last of its group."""
    def key(name: str):
        return (expected[name]["role"] != "honest", name == "hack_hang.py", name)

    names = [n for n in expected if not ONLY or n in ONLY or Path(n).stem in ONLY]
    compiled = [n for n in names if "load_inline(" in (CORPUS / n).read_text()]
    plain = [n for n in names if n not in compiled]
    return sorted(plain, key=key), sorted(compiled, key=key)


def run_corpus(report: Report, polyprof: str, out: Path, budget: Budget, outcomes: List[Outcome]) -> None:
    expected = json.loads((CORPUS / "expected.json").read_text())["candidates"]
    kinds = finding_kinds()
    if kinds is not None:
        for name, entry in expected.items():
            unknown = [k for e in [entry["expect"], *entry["expect"].get("or_expect", [])]
                       for k in e["findings"] + e.get("allowed", []) + list(e.get("mentions", {}))
                       if k not in kinds]
            if unknown:
                report.line(f"note: expected.json names unknown finding kinds for {name}: {unknown}")
    plain, compiled = corpus_order(expected)
    prebuild = start_prebuild([CORPUS / n for n in compiled], out)
    report.line(f"\n== corpus ({len(plain) + len(compiled)} candidates; polyprof eval {shlex.join(CORPUS_ARGS)})")
    report.line(CORPUS_ROW.format("candidate", "expected", "got", "result", "detail"))
    for name in plain + compiled:
        if name in compiled and prebuild:
            wait_prebuild(prebuild, report, budget)
        entry = expected[name]
        stem = Path(name).stem
        if budget.left() < CORPUS_MIN_LEFT_S:
            report.line(CORPUS_ROW.format(stem, describe_expect(entry["expect"]), "-", "SKIPPED", "time budget"))
            outcomes.append(Outcome(stem, entry["role"], figures(None), "SKIPPED", [], entry["expect"]))
            continue
        eval_dir = out / stem
        fresh_dir(eval_dir)
        limit = min(CORPUS_EVAL_TIMEOUT_S, budget.left() - 5)
        run = run_eval(polyprof, CORPUS / entry["problem"], CORPUS / name, eval_dir,
                       CORPUS_ARGS + entry.get("args", []), limit, out / "logs" / f"{stem}.log")
        word, problems, extras = compare(entry["expect"], run)
        got = figures(run.verdict)
        detail = problems + ([f"extra: {','.join(extras)}"] if extras else [])
        detail.append(f"speedup {ratio(got['speedup'])}, score/witness {ratio(got['score_over_witness'])}, "
                      f"{run.wall_s:.0f} s")
        detail.append(describe_work(work_figures(eval_dir)))
        report.line(CORPUS_ROW.format(stem, describe_expect(entry["expect"]), describe_got(got), word,
                                      "; ".join(detail)))
        outcomes.append(Outcome(stem, entry["role"], got, word, problems, entry["expect"]))
    wait_prebuild(prebuild, report, budget)


def run_selfcheck(report: Report, out: Path, budget: Budget) -> None:
    """Each corpus candidate run plainly (scripts/eval_corpus_selfcheck.py), no polyprof: what
    it does on its own, to tell a corpus file that does not hack from a misjudging polyprof."""
    expected = json.loads((CORPUS / "expected.json").read_text())["candidates"]
    plain, compiled = corpus_order(expected)
    report.line("\n== selfcheck (each candidate in one plain process; hack_hang left out)")
    script = Path(__file__).resolve().parent / "eval_corpus_selfcheck.py"
    for name in plain + compiled:
        if name == "hack_hang.py" or budget.left() < CORPUS_MIN_LEFT_S:
            continue
        argv = [PYTHON, str(script), str(CORPUS / name), str(CORPUS / expected[name]["problem"])]
        text = capture(argv, timeout=min(240.0, budget.left() - 5))
        (out / "logs").mkdir(parents=True, exist_ok=True)
        (out / "logs" / f"selfcheck_{Path(name).stem}.log").write_text(text)
        line = next((l for l in reversed(text.splitlines()) if l.startswith("SELFCHECK ")), None)
        report.line(f"{Path(name).stem}: " + (line[len("SELFCHECK "):] if line else "no report: " + text[-200:]))


# --- KernelBench ----------------------------------------------------------------------------

SIZE_PROBE = r"""
import importlib.util, json, sys, torch
sizes = {}
for path in sys.argv[1:]:
    try:
        spec = importlib.util.spec_from_file_location("kb_size_probe", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with torch.device("meta"):  # shapes only: nothing is allocated or drawn
            inputs = module.get_inputs()
            model = module.Model(*module.get_init_inputs())
        tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
        state = list(model.parameters()) + list(model.buffers())
        sizes[path] = {"input_bytes": sum(t.numel() * t.element_size() for t in tensors),
                       "state_bytes": sum(t.numel() * t.element_size() for t in state)}
    except Exception as error:
        sizes[path] = {"error": f"{type(error).__name__}: {error}"[:200]}
print("SIZES " + json.dumps(sizes))
"""


def kb_levels(kb_dir: Path) -> List[Path]:
    base = kb_dir / "KernelBench" if (kb_dir / "KernelBench").is_dir() else kb_dir
    return [base / "level1", base / "level2"]


def problem_number(path: Path) -> int:
    match = re.match(r"(\d+)_", path.name)
    return int(match.group(1)) if match else 10**9


def evenly(items: List[Path], count: int) -> List[Path]:
    if count >= len(items):
        return list(items)
    return [items[i * len(items) // count] for i in range(count)]


def select_problems(kb_dir: Path, count: int) -> List[Path]:
    if KB_PROBLEMS:
        levels = {d.name: d for d in kb_levels(kb_dir)}
        named = []
        for item in KB_PROBLEMS:
            level, _, number = item.partition("/")
            named += sorted(levels[level].glob(f"{number}_*.py")) if level in levels else []
        return named
    level1, level2 = (sorted(d.glob("*.py"), key=problem_number) for d in kb_levels(kb_dir))
    if KB_SMALLEST:
        return level1 + level2
    return evenly(level1, (count + 1) // 2) + evenly(level2, count // 2)


def probe_sizes(paths: List[Path], report: Report) -> Dict[str, Dict[str, Any]]:
    text = capture([PYTHON, "-c", SIZE_PROBE, *map(str, paths)], timeout=300)
    for line in text.splitlines():
        if line.startswith("SIZES "):
            return json.loads(line[len("SIZES "):])
    report.line(f"note: the size probe gave nothing ({text[-300:]}); every problem runs, each under its limit")
    return {}


KB_ROW = "{:<58} {:>6} {:<10} {:<36} {:>9} {:>9} {:>9} {:>6} {:>7} {:>5} {:>6}  {}"


def run_kernelbench(report: Report, polyprof: str, kb_dir: Path, out: Path, budget: Budget,
                    outcomes: List[Outcome], skipped: Dict[str, List[str]]) -> None:
    problems = select_problems(kb_dir, KB_N)
    report.line(f"\n== KernelBench ({len(problems)} problems of {kb_dir}, each as its own candidate; "
                f"polyprof eval {shlex.join(KB_ARGS)})")
    if not problems:
        report.line(f"note: no level1/level2 problems under {kb_dir}")
        return
    sizes = probe_sizes(problems, report)
    runnable = []
    for path in problems:
        size = sizes.get(str(path), {})
        total = size.get("input_bytes", 0) + size.get("state_bytes", 0)
        if total > KB_MAX_GB * 1e9:
            skipped["size"].append(f"{path.parent.name}/{path.stem} ({total / 1e9:.1f} GB)")
        else:
            runnable.append((total, path, size.get("error") or ("" if size else "no size")))
    # Smallest first: more problems fit in the budget, and the slow host-side input draws last.
    runnable.sort(key=lambda item: (item[0], str(item[1])))
    if KB_SMALLEST:
        report.line(f"KB_SMALLEST={KB_SMALLEST}: the {KB_SMALLEST} smallest of {len(runnable)} runnable problems")
        runnable = runnable[:KB_SMALLEST]
    if KB_SKIP:
        report.line(f"KB_SKIP={KB_SKIP}: the first {KB_SKIP} runnable problems are left to an earlier call")
        runnable = runnable[KB_SKIP:]
    cand_dir = out / "kb" / "candidates"
    cand_dir.mkdir(parents=True, exist_ok=True)
    report.line(KB_ROW.format("problem", "GB", "status", "findings", "ref ms", "score ms", "witn ms",
                              "sc/wit", "speedup", "wall", "rd/in", "work FLOPs (ref's)"))
    for total, path, size_error in runnable:
        name = f"{path.parent.name}_{path.stem}"
        if budget.left() < KB_MIN_LEFT_S:
            skipped["time"].append(name)
            continue
        candidate = cand_dir / f"{name}.py"
        candidate.write_text(path.read_text() + "\n\nModelNew = Model\n")
        eval_dir = out / "kb" / name
        fresh_dir(eval_dir)
        limit = min(KB_EVAL_TIMEOUT_S, budget.left() - 5)
        run = run_eval(polyprof, path, candidate, eval_dir, KB_ARGS, limit, out / "logs" / f"kb_{name}.log")
        got = figures(run.verdict)
        status = got["status"] or ("killed" if run.exit_code is None else f"exit {run.exit_code}")
        if got["failure_kind"]:
            status += f"/{got['failure_kind']}"
        work = work_figures(eval_dir)
        split = work.get("split") or work.get("note", "-")
        if "reference_split" in work:
            split += f" (ref: {work['reference_split']})"
        report.line(KB_ROW.format(name[:58], f"{total / 1e9:.2f}" if not size_error else "?", status[:10],
                                  ",".join(got["findings"])[:36] or "-", ms(got["reference_ms"]),
                                  ms(got["score_ms"]), ms(got["witness_ms"]), ratio(got["score_over_witness"]),
                                  ratio(got["speedup"]), f"{run.wall_s:.0f}", ratio(work.get("read_over_input")),
                                  split))
        outcomes.append(Outcome(name, "honest", got))


# --- summary --------------------------------------------------------------------------------


def summarize(report: Report, outcomes: List[Outcome], skipped: Dict[str, List[str]], budget: Budget) -> int:
    report.line("\n== summary")
    corpus = [o for o in outcomes if o.expect is not None]
    mismatched = [o for o in corpus if o.verdict_word == "MISMATCH"]
    not_run = [o for o in corpus if o.verdict_word == "SKIPPED"]
    if corpus:
        line = (f"corpus: {len(corpus)} candidates, {sum(o.verdict_word == 'OK' for o in corpus)} OK, "
                f"{len(mismatched)} MISMATCH")
        if mismatched:
            line += f" ({', '.join(o.name for o in mismatched)})"
        if not_run:
            line += f", {len(not_run)} not run ({', '.join(o.name for o in not_run)})"
        report.line(line)
    ran = [o for o in outcomes if o.figures["status"] is not None]
    honest = [o for o in ran if o.role == "honest"]
    clean = [o for o in honest if not flagged(o.figures)]
    report.line(f"honest with no finding: {len(clean)} of {len(honest)}")
    for o in honest:
        if flagged(o.figures):
            report.line(f"  honest flagged: {o.name}: {describe_got(o.figures)}")
    hostile = [o for o in ran if o.role == "hostile"]
    # Hostile candidates expected to come back clean (not fooled, or out of this scope).
    unflagged = [o for o in hostile if o.expect.get("exact") and not o.expect["findings"]
                 and o.expect["status"] == "correct"]
    to_flag = [o for o in hostile if o not in unflagged]
    missed = [o for o in to_flag if not flagged(o.figures)]
    report.line(f"hostile flagged: {len(to_flag) - len(missed)} of {len(to_flag)}"
                + (f"; missed: {', '.join(o.name for o in missed)}" if missed else ""))
    for o in unflagged:
        state = "as expected" if o.verdict_word == "OK" else "NOT as expected: " + "; ".join(o.problems)
        report.line(f"  expected unflagged: {o.name}: {describe_got(o.figures)}, speedup "
                    f"{ratio(o.figures['speedup'])} ({state})")
    if skipped["size"]:
        report.line(f"KernelBench skipped over {KB_MAX_GB:g} GB: {len(skipped['size'])} ({', '.join(skipped['size'])})")
    if skipped["time"]:
        report.line(f"KernelBench not run for lack of time: {len(skipped['time'])} ({', '.join(skipped['time'])})")
    report.line(f"wall: {budget.elapsed():.0f} s (budget {BUDGET_S:.0f} s)")
    return 1 if mismatched else 0


def main(argv: List[str]) -> int:
    if len(argv) < 3:
        print(f"usage: {argv[0]} POLYPROF OUTDIR [KERNELBENCH_DIR]", file=sys.stderr)
        return 2
    polyprof = str(Path(argv[1]).resolve())
    out = Path(argv[2]).resolve()
    kb_dir = Path(argv[3]).resolve() if len(argv) > 3 else None
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out / "summary.txt")
    budget = Budget(BUDGET_S)
    environment(report, polyprof)
    calibrate(report, polyprof)
    outcomes: List[Outcome] = []
    skipped: Dict[str, List[str]] = {"size": [], "time": []}
    if "corpus" in PARTS or "selfcheck" in PARTS:
        export_arch_list(report)
    if "selfcheck" in PARTS:
        run_selfcheck(report, out, budget)
    if "corpus" in PARTS:
        run_corpus(report, polyprof, out, budget, outcomes)
    if kb_dir is not None and "kb" in PARTS:
        run_kernelbench(report, polyprof, kb_dir, out, budget, outcomes, skipped)
    return summarize(report, outcomes, skipped, budget)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
