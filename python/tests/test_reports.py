import json
import os
import subprocess
from pathlib import Path

import pytest

import polyprof

from conftest import FIXTURES, ROOT

BASE = FIXTURES / "runs" / "h200-baseline"
REGRESSED = FIXTURES / "runs" / "h200-regressed"


def test_load_gives_typed_kernels():
    run = polyprof.load(BASE)
    assert run.schema_version >= 1
    assert run.kernels and all(isinstance(k, polyprof.KernelRecord) for k in run.kernels)
    k = run.kernels[0]
    assert k.name and k.duration_ns > 0
    assert run.to_dict()["label"] == run.label


def test_diff_gives_the_cli_verdict():
    d = polyprof.diff(BASE, REGRESSED, threshold=5)
    assert d.regressed
    assert "regress" in str(d).lower() or d.kernels
    same = polyprof.diff(BASE, BASE, threshold=5)
    assert not same.regressed


def test_report_formats_render(tmp_path):
    run = polyprof.load(BASE)
    table = polyprof.report(run)
    assert "kernels" in table
    hatchet = json.loads(polyprof.report(run, format="hatchet"))
    assert isinstance(hatchet, list) and hatchet[0]["children"]
    chrome = json.loads(polyprof.report(run, format="chrome"))
    assert "traceEvents" in chrome
    assert "short_name" in polyprof.report(BASE, format="csv").splitlines()[0]
    page = polyprof.report(run, format="html")
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "<script src=" not in page  # self-contained: nothing fetched


def test_unknown_format_is_a_value_error():
    with pytest.raises(ValueError, match="format"):
        polyprof.report(BASE, format="pdf")


def test_missing_run_dir_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        polyprof.load(tmp_path / "nope")


def test_profile_writes_a_run_document_and_failures_are_returned(tmp_path):
    run = polyprof.profile(["sh", "-c", "echo hi; exit 4"], output_dir=tmp_path / "none.000")
    assert not run.succeeded
    assert run.outcome.code == 4
    assert (tmp_path / "none.000" / "run.json").exists()
    assert polyprof.load(tmp_path / "none.000").outcome == run.outcome


def test_profile_refuses_a_directory_holding_a_run_like_the_cli(tmp_path):
    out = tmp_path / "run"
    polyprof.profile(["sh", "-c", "exit 3"], output_dir=out)
    with pytest.raises(FileExistsError, match="already holds a run"):
        polyprof.profile(["sh", "-c", "exit 4"], output_dir=out)
    assert not (tmp_path / "run.001").exists()
    assert polyprof.load(out).outcome.code == 3

    numbered = polyprof.profile(["sh", "-c", "exit 5"], output_dir=out, if_exists="number")
    assert os.path.basename(numbered.output_dir) == "run.001"
    assert polyprof.load(out).outcome.code == 3

    replaced = polyprof.profile(["sh", "-c", "exit 6"], output_dir=out, if_exists="overwrite")
    assert os.path.basename(replaced.output_dir) == "run"
    assert polyprof.load(out).outcome.code == 6

    with pytest.raises(ValueError, match="if_exists"):
        polyprof.profile(["true"], output_dir=tmp_path / "other", if_exists="sometimes")


def test_profile_with_an_unavailable_profiler_says_why_in_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    run = polyprof.profile(["true"], profiler="ncu", output_dir=tmp_path / "ncu.000")
    assert not run.succeeded
    assert any("ncu" in str(e) for e in run.errors)
    assert [e.kind for e in run.errors] == ["profiler_unavailable"]


def test_errors_of_a_schema_version_1_document_read_as_kind_unknown():
    run = polyprof.ProfileRun({"schema_version": 1, "errors": ["step `x` was not accepted"]})
    assert [(e.kind, str(e)) for e in run.errors] == [("unknown", "step `x` was not accepted")]


def test_unknown_profile_option_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="unknown option"):
        polyprof.profile(["true"], output_dir=tmp_path, colour="blue")


def test_to_dataframe_when_pandas_is_there():
    pd = pytest.importorskip("pandas")
    df = polyprof.load(BASE).to_dataframe()
    assert len(df) == len(polyprof.load(BASE).kernels)
    assert "duration_ns" in df.columns


def test_profile_with_the_profile_cache_steps_aside_without_a_fingerprint_pass(tmp_path):
    run = polyprof.profile(["true"], output_dir=tmp_path / "run", profile_cache=tmp_path / "cache")
    assert run.succeeded
    assert run.profile_cache is not None
    assert "no fingerprint pass" in run.profile_cache["bypassed"]
    assert any(w.startswith("profile cache not used") for w in run.warnings)
    with pytest.raises(ValueError, match="profile_cache"):
        polyprof.profile(["true"], output_dir=tmp_path / "bad", profile_cache={"audit": 1})
