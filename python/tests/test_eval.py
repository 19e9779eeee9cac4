"""polyprof.evaluate on the CPU with numpy problems (tests/programs/eval/): real workers, the
typed result, a failing candidate returned (not raised), usage errors raised."""

import os
import shutil
import sys
from pathlib import Path

import pytest

import polyprof

pytest.importorskip("numpy", reason="the eval problems are numpy ones")

PROBLEMS = Path(__file__).resolve().parents[2] / "tests" / "programs" / "eval"
QUICK = dict(trials=2, timing_blocks=2, repeat=3, warmup=1, python=sys.executable)


def test_an_honest_candidate_is_correct(tmp_path):
    candidate = tmp_path / "honest.py"
    shutil.copy(PROBLEMS / "honest.py", candidate)
    result = polyprof.evaluate(PROBLEMS / "reference.py", candidate, device="cpu", output_dir=tmp_path / "eval", **QUICK)
    assert isinstance(result, polyprof.EvalResult)
    assert result.status == "correct"
    assert not result.harness_failed
    assert result.failure is None
    assert result.verdict["correctness"]["atol"] == 0.01
    assert Path(result.evidence_path).is_file()
    evidence = result.evidence()
    assert evidence["problem"]["framework"] == "numpy"
    assert len({t["seed"] for t in evidence["trials"] if t["phase"] == "correctness"}) == 2
    assert all(isinstance(f, polyprof.Finding) for f in result.findings)
    # With the real audit an honest candidate passes; the placeholder judges nothing.
    if result.verdict["checks"]:
        assert result.passed, result


def test_a_failing_candidate_is_returned_with_its_failure(tmp_path):
    result = polyprof.evaluate(PROBLEMS / "reference.py", PROBLEMS / "raises.py", device="cpu", output_dir=tmp_path / "eval", **QUICK)
    assert result.status == "failed"
    assert not result.passed
    assert result.failure["kind"] == "raised"
    assert result.failure["stage"] == "correctness"
    assert "candidate gave up on purpose" in result.failure["message"]
    assert (Path(result.dir) / result.failure["log"]).is_file()


def test_a_broken_reference_is_the_harness_failure(tmp_path):
    result = polyprof.evaluate(PROBLEMS / "broken_reference.py", PROBLEMS / "raises.py", device="cpu", output_dir=tmp_path / "eval", **QUICK)
    assert result.harness_failed
    assert result.failure["kind"] == "reference_error"


def test_usage_errors_raise(tmp_path):
    with pytest.raises(TypeError, match="unexpected option 'trails'"):
        polyprof.evaluate(PROBLEMS / "reference.py", PROBLEMS / "honest.py", device="cpu", trails=3)
    with pytest.raises(ValueError, match="eval device"):
        polyprof.evaluate(PROBLEMS / "reference.py", PROBLEMS / "honest.py", device="gpu")
    with pytest.raises(ValueError, match="cannot witness"):
        polyprof.evaluate(PROBLEMS / "reference.py", PROBLEMS / "honest.py", witness_profiler="vtune")
    with pytest.raises(OSError, match="missing.py"):
        polyprof.evaluate(tmp_path / "missing.py", PROBLEMS / "honest.py", device="cpu", output_dir=tmp_path / "e")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "evidence.json").write_text("{}")
    with pytest.raises(ValueError, match="not empty"):
        polyprof.evaluate(PROBLEMS / "reference.py", PROBLEMS / "honest.py", device="cpu", output_dir=tmp_path / "full")


def test_plain_callables_are_evaluated_in_their_own_processes(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import eval_callables as c
    finally:
        sys.path.pop(0)
    result = polyprof.evaluate(c.reference, c.candidate, get_inputs=c.inputs, device="cpu", output_dir=tmp_path / "ok", **QUICK)
    assert result.status == "correct", result.failure
    assert result.passed, result.findings
    wrong = polyprof.evaluate(c.reference, c.wrong, get_inputs=c.inputs, device="cpu", output_dir=tmp_path / "wrong", **QUICK)
    assert wrong.status == "incorrect" and not wrong.passed


def test_callables_that_cannot_cross_a_process_are_refused(tmp_path):
    with pytest.raises(ValueError, match="module level"):
        polyprof.evaluate(lambda x: x, PROBLEMS / "honest.py", get_inputs=lambda: [], device="cpu", output_dir=tmp_path / "e")
    with pytest.raises(ValueError, match="get_inputs"):
        polyprof.evaluate(print, PROBLEMS / "honest.py", device="cpu", output_dir=tmp_path / "e")
