import json
import time

import pytest

import polyprof


def test_scopes_kernels_and_key_averages():
    with polyprof.profile_session("s") as prof:
        for _ in range(3):
            with polyprof.scope("matmul", metrics={"flops": 2e9, "bytes": 1e6}):
                prof.add_kernel("gemm_kernel", 1e6, flops=2e9, bytes=1e6)
        with polyprof.record_function("helper"):
            time.sleep(0.001)
    rows = prof.key_averages().by_name()
    assert rows["matmul"]["calls"] == 3
    assert rows["gemm_kernel"]["calls"] == 3
    assert "helper" in rows
    table = prof.key_averages(group_by="call_path").table(sort_by="calls")
    assert "gemm_kernel" in table
    assert "matmul" in prof.tree()


def test_scope_outside_a_session_does_nothing():
    with polyprof.scope("nothing") as s:
        s.add_metric("flops", 1.0)
    with polyprof.profile_session("t") as prof:
        pass
    assert prof.key_averages().rows() == []


def test_kernel_hooks_fill_missing_work():
    with polyprof.profile_session("h") as prof:
        polyprof.register_kernel_hook("k", lambda launch: {"flops": 4e9, "bytes": 8e6})
        prof.add_kernel("k", 2e6)
        assert polyprof.unregister_kernel_hook("k")
        prof.add_kernel("k", 2e6)
    rows = prof.key_averages().rows()
    (row,) = [r for r in rows if r["name"] == "k"]
    assert row["calls"] == 2
    assert row["flops"]["fp32"] == 4e9  # only the first launch got the hook's work


def test_one_session_at_a_time():
    with polyprof.profile_session("a"):
        with pytest.raises(ValueError, match="still active"):
            polyprof.profile_session("b").start()


def test_profile_runs_join_the_session(tmp_path):
    with polyprof.profile_session("job") as prof:
        with polyprof.scope("variant-1"):
            polyprof.profile(["true"], output_dir=tmp_path / "none.000")
    assert "variant-1" in prof.tree()


def test_exports_load_in_hatchet_and_chrome(tmp_path):
    with polyprof.profile_session("e") as prof:
        with polyprof.scope("outer"):
            prof.add_kernel("k1", 1e6, flops=1e9)
            prof.add_kernel("k2", 2e6, bytes=1e9)
    prof.export_hatchet(tmp_path / "p.hatchet.json")
    prof.export_chrome_trace(tmp_path / "p.trace.json")
    trace = json.loads((tmp_path / "p.trace.json").read_text())
    assert any(e.get("name") == "k1" for e in trace["traceEvents"])
    ht = pytest.importorskip("hatchet")
    gf = ht.GraphFrame.from_literal(json.loads((tmp_path / "p.hatchet.json").read_text()))
    names = set(gf.dataframe["name"])
    assert {"outer", "k1", "k2"} <= names
