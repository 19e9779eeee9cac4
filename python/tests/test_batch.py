import json
import os
import sys

import pytest

import polyprof


def _jobs(n, body="print('ok')"):
    return [{"id": f"j{i}", "target": [sys.executable, "-c", body]} for i in range(n)]


def test_a_batch_of_cpu_jobs_writes_every_run_and_the_index(tmp_path):
    index = polyprof.batch(_jobs(4), tmp_path / "b", devices="cpu", parallel=2)
    assert isinstance(index, polyprof.BatchIndex)
    assert [e.id for e in index.entries] == ["j0", "j1", "j2", "j3"]
    assert index.succeeded and all(e.state == "succeeded" for e in index.entries)
    on_disk = json.loads((tmp_path / "b" / "batch.json").read_text())
    assert sorted(on_disk["jobs"]) == ["j0", "j1", "j2", "j3"]
    run = index.load("j2")
    assert isinstance(run, polyprof.ProfileRun) and run.outcome.code == 0


def test_failing_and_hanging_jobs_do_not_stop_the_batch(tmp_path):
    jobs = [
        {"id": "fails", "target": [sys.executable, "-c", "raise SystemExit(3)"]},
        {"id": "hangs", "target": [sys.executable, "-c", "import time; time.sleep(60)"], "timeout_s": 0.5},
        {"id": "fine", "target": [sys.executable, "-c", "pass"]},
    ]
    index = polyprof.batch(jobs, tmp_path / "b", devices="cpu", parallel=2)
    states = {e.id: e.state for e in index.entries}
    assert states == {"fails": "failed", "hangs": "timed_out", "fine": "succeeded"}
    assert index.jobs["fails"].exit_code == 3
    assert not index.succeeded


def test_resume_keeps_finished_jobs_and_a_second_fresh_batch_is_refused(tmp_path):
    root = tmp_path / "b"
    first = polyprof.batch(_jobs(2), root, devices="cpu")
    with pytest.raises(ValueError):
        polyprof.batch(_jobs(2), root, devices="cpu")
    again = polyprof.batch(_jobs(3), root, devices="cpu", resume=True)
    assert [e.state for e in again.entries] == ["succeeded"] * 3
    # The two finished jobs were not run again.
    for job in ("j0", "j1"):
        assert again.jobs[job].to_dict()["started_unix_s"] == first.jobs[job].to_dict()["started_unix_s"]


def test_a_job_file_path_and_its_errors(tmp_path):
    good = tmp_path / "jobs.jsonl"
    good.write_text("".join(json.dumps(j) + "\n" for j in _jobs(2)))
    assert polyprof.batch(good, tmp_path / "b", devices="cpu").succeeded
    with pytest.raises(ValueError, match="duplicate job id"):
        polyprof.batch(_jobs(1) + _jobs(1), tmp_path / "c", devices="cpu")
    with pytest.raises(ValueError, match="nosuchkey"):
        polyprof.batch([{"id": "x", "target": ["true"], "nosuchkey": 1}], tmp_path / "d", devices="cpu")
    with pytest.raises(ValueError):
        polyprof.batch([], tmp_path / "e")


def test_gpu_devices_pin_each_job(tmp_path):
    body = "import os, time; print('cuda=' + os.environ['CUDA_VISIBLE_DEVICES']); time.sleep(0.2)"
    index = polyprof.batch(_jobs(4, body), tmp_path / "b", devices=[0, 1])
    devices = set()
    for entry in index.entries:
        index_of_device = entry.device.split(":")[1]
        run = index.load(entry.id)
        assert polyprof.RunResult(run.steps[0].attempts[0]).stdout.head == [f"cuda={index_of_device}"]
        devices.add(entry.device)
    assert devices == {"nvidia:0", "nvidia:1"}
