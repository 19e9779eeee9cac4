"""polyprof.Evaluator on the CPU with numpy problems (tests/programs/eval/): one warm
evaluator judging candidate after candidate, synchronously, as they finish and from asyncio,
with the verdicts a cold eval gives them."""

import asyncio
import shutil
import sys
from pathlib import Path

import pytest

import polyprof

pytest.importorskip("numpy", reason="the eval problems are numpy ones")

PROBLEMS = Path(__file__).resolve().parents[2] / "tests" / "programs" / "eval"
QUICK = dict(trials=2, timing_blocks=3, repeat=3, warmup=1, timeout=10, python=sys.executable)
EXPECTED = {
    "honest.py": ("correct", True),
    "slow.py": ("correct", True),
    "same_as_reference.py": ("correct", True),
    "wrong_shape.py": ("incorrect", False),
    "raises.py": ("failed", False),
    "inplace.py": ("correct", False),
}


@pytest.fixture
def candidates(tmp_path):
    folder = tmp_path / "candidates"
    folder.mkdir()
    for name in EXPECTED:
        shutil.copy(PROBLEMS / name, folder / name)
    return folder


def test_one_evaluator_judges_candidate_after_candidate(tmp_path, candidates):
    with polyprof.Evaluator(PROBLEMS / "reference.py", device="cpu", output_dir=tmp_path / "warm", **QUICK) as ev:
        honest = ev.evaluate(candidates / "honest.py")
        assert isinstance(honest, polyprof.Judged)
        assert (honest.status, honest.passed) == ("correct", True), honest
        assert honest.speedup is not None and honest.speedup_low <= honest.speedup <= honest.speedup_high
        assert honest.reward() == honest.speedup and honest.device_seconds > 0
        assert Path(honest.dir, "evidence.json").is_file()
        assert honest.evidence()["trusted_run"].endswith("reference.000")
        assert honest.verdict()["passed"]
        # A failing candidate is returned, its reward the failure's.
        raised = ev.evaluate(candidates / "raises.py")
        assert (raised.status, raised.failure, raised.reward(-1.0)) == ("failed", "raised", -1.0)
        # evaluate_many yields every verdict; each as a cold eval gives it.
        judged = {Path(j.candidate).name: j for j in ev.evaluate_many(sorted(candidates.iterdir()))}
        assert {n: (j.status, j.passed) for n, j in judged.items()} == EXPECTED
        # The trusted worker was set up once for all of them.
        lane = tmp_path / "warm" / "lane-0"
        assert sorted(p.name for p in lane.glob("warm-reference.*")) == ["warm-reference.000"]
        # Missing files are rows, not exceptions.
        missing = ev.evaluate(tmp_path / "nope.py")
        assert missing.status == "not_run" and not missing.passed


def test_lanes_and_asyncio_and_cold(tmp_path, candidates):
    async def judge_all(ev):
        return await asyncio.gather(*(ev.evaluate_async(candidates / n) for n in EXPECTED))

    with polyprof.Evaluator(PROBLEMS / "reference.py", device="cpu", output_dir=tmp_path / "two", lanes=2, **QUICK) as ev:
        judged = asyncio.run(judge_all(ev))
    assert {Path(j.candidate).name: (j.status, j.passed) for j in judged} == EXPECTED
    with polyprof.Evaluator(PROBLEMS / "reference.py", device="cpu", output_dir=tmp_path / "cold", cold=True, **QUICK) as ev:
        cold = ev.evaluate(candidates / "honest.py")
    assert (cold.status, cold.reference_reused) == ("correct", False)
    assert not (tmp_path / "cold" / "lane-0" / "warm-reference.000").exists()


def test_unknown_options_and_missing_references_are_refused(tmp_path):
    with pytest.raises(TypeError, match="timout"):
        polyprof.Evaluator(PROBLEMS / "reference.py", device="cpu", timout=5)
    with pytest.raises(FileNotFoundError):
        polyprof.Evaluator(tmp_path / "nope.py", device="cpu")
    with pytest.raises(ValueError):
        polyprof.Evaluator(PROBLEMS / "reference.py", device="cpu", lanes=0)


@pytest.mark.skipif(shutil.which("cc") is None, reason="the build candidates compile a C library with cc")
def test_evaluate_many_sends_every_candidate_at_once_so_later_builds_run_ahead(tmp_path):
    folder = tmp_path / "candidates"
    folder.mkdir()
    for name in ("a.py", "b.py", "c.py"):
        shutil.copy(PROBLEMS / "build_c_library.py", folder / name)
    with polyprof.Evaluator(PROBLEMS / "reference.py", device="cpu", output_dir=tmp_path / "out", build_jobs=2, **QUICK) as ev:
        judged = list(ev.evaluate_many(sorted(folder.iterdir())))
    assert len(judged) == 3 and all(j.passed for j in judged), judged
    evidence = sorted((j.evidence() for j in judged), key=lambda e: e["judged"]["started_at"])
    assert all(e["build"]["reused"] for e in evidence)
    if not all(e["build"]["ahead"] for e in evidence):
        pytest.skip("the sandbox does not confine everything here: each candidate built right before its turn")
    # RFC 3339 with nanoseconds, UTC: the timestamps compare as text. Each later build began
    # before the judging of the one before it ended.
    for earlier, later in zip(evidence, evidence[1:]):
        assert later["build"]["started_at"] < earlier["judged"]["ended_at"], (earlier, later)
