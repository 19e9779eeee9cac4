"""The eval worker (python/polyprof/harness/polyprof_eval_worker.py) driven for real: a
subprocess per role, a Unix socket server written here, the framing of docs/eval-harness.md.
numpy problems run everywhere; the torch ones need torch (CUDA ones a GPU) and say so."""

import hashlib
import importlib.util
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "polyprof" / "harness"
WORKER = HARNESS / "polyprof_eval_worker.py"
PROBLEMS = Path(__file__).resolve().parent / "eval_problems"
ATOL = RTOL = 1e-4

np = pytest.importorskip("numpy", reason="the eval worker's tests need numpy (pip install numpy)")


def load_worker_module():
    sys.path.insert(0, str(HARNESS))
    try:
        spec = importlib.util.spec_from_file_location("polyprof_eval_worker_under_test", WORKER)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(HARNESS))


def clean_environment():
    """The environment without any variable naming a seed (the orchestrator passes none)."""
    return {k: v for k, v in os.environ.items() if "SEED" not in k.upper()}


class Worker:
    """One worker process and the orchestrator's end of its socket."""

    def __init__(self, role, source, device="cpu"):
        self.directory = tempfile.mkdtemp(prefix="ppw")  # short: a socket path has ~100 bytes
        path = os.path.join(self.directory, "s")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        server.settimeout(120)
        argv = [sys.executable, str(WORKER), "--socket", path, "--role", role, "--source", str(source), "--device", device]
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_environment())
        try:
            self.conn, _ = server.accept()
        finally:
            server.close()
            os.unlink(path)
        self.conn.settimeout(300)
        self.stdout = self.stderr = b""
        self.finished = False

    def send(self, header, payload=b""):
        header = dict(header)
        if payload:
            header["payload_bytes"] = len(payload)
        data = json.dumps(header).encode()
        self.conn.sendall(struct.pack(">I", len(data)) + data + bytes(payload))

    def receive(self):
        (length,) = struct.unpack(">I", self._exact(4))
        header = json.loads(self._exact(length).decode())
        payload = self._exact(header.get("payload_bytes") or 0)
        return header, payload

    def request(self, header, payload=b""):
        self.send(header, payload)
        return self.receive()

    def _exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.conn.recv(n - len(data))
            if not chunk:
                raise EOFError("the worker closed the socket")
            data += chunk
        return data

    def finish(self):
        """Say bye (when still running), wait for the process; (stdout, stderr)."""
        if not self.finished:
            self.finished = True
            if self.process.poll() is None:
                try:
                    self.send({"op": "bye"})
                    self.receive()
                except (OSError, EOFError, struct.error):
                    pass
            self.conn.close()
            self.stdout, self.stderr = self.process.communicate(timeout=60)
            shutil.rmtree(self.directory, ignore_errors=True)
        return self.stdout, self.stderr


@pytest.fixture
def workers():
    started = []

    def start(role, source, device="cpu"):
        w = Worker(role, PROBLEMS / source, device)
        started.append(w)
        return w

    yield start
    for w in started:
        w.finish()


def set_up(start, candidate, reference="reference_numpy.py", device="cpu", init_seed=42):
    trusted = start("trusted", reference, device)
    reply, payload = trusted.request({"op": "setup", "device": device, "init_seed": init_seed, "atol": ATOL, "rtol": RTOL})
    assert reply["ok"], reply
    cand = start("candidate", candidate, device)
    header = {"op": "setup", "device": device, "init_seed": init_seed, "annotate": False, "init_inputs": reply["init_inputs"]}
    cand_reply, _ = cand.request(header, payload)
    return trusted, cand, reply, cand_reply


def run_trial(trusted, candidate, k, seed, transport="bytes", profile=None):
    """trial -> call -> check, the orchestrator's order; (trial, call, check) replies. `profile`:
    the call is made inside the profiler's window (the work pass's `profile` field)."""
    trial, trial_payload = trusted.request({"op": "trial", "trial": k, "seed": seed, "transport": transport})
    assert trial["ok"], trial
    request = {"op": "call", "trial": k, "inputs": trial["inputs"], "poison": trial["reference_outputs"]}
    if profile is not None:
        request["profile"] = profile
    call, call_payload = candidate.request(request, trial_payload)
    check = None
    if call["ok"]:
        header = {"op": "check", "trial": k, "outputs": call["outputs"]}
        if "inputs_after" in call:
            header["inputs_after"] = call["inputs_after"]
        check, _ = trusted.request(header, call_payload)
        assert check["ok"], check
    return trial, call, check


def release(trusted, candidate, k):
    for w in (trusted, candidate):
        reply, _ = w.request({"op": "release", "trial": k})
        assert reply == {"ok": True}, reply


def test_honest_candidate_passes_and_its_prints_stay_off_the_protocol(workers):
    trusted, cand, setup, cand_setup = set_up(workers, "candidate_honest.py")
    assert setup["framework"] == "numpy" and setup["numpy"] == np.__version__ and "torch" not in setup
    assert [i["transport"] for i in setup["init_inputs"]] == ["value", "value"]
    assert cand_setup["ok"] and cand_setup["framework"] == "numpy", cand_setup
    for k, seed in enumerate([11, 12]):
        trial, call, check = run_trial(trusted, cand, k, seed)
        assert call["ok"], call
        comparison = check["comparison"]
        assert comparison["passed"], comparison
        assert comparison["mismatched_elements"] == 0 and comparison["total_elements"] == 8 * 16
        assert comparison["poisoned_elements"] == 0
        assert comparison["max_abs_diff"] < 1e-5
        assert check["inputs_unchanged"] is True
        ref_stats = trial["reference_outputs"][0]["stats"]
        cand_stats = check["candidate_outputs"][0]["stats"]
        assert ref_stats["nan_count"] == 0 and -0.5 <= ref_stats["min"] < ref_stats["max"] <= 0.5
        assert abs(ref_stats["mean"] - cand_stats["mean"]) < 1e-5
        release(trusted, cand, k)
    stdout, stderr = cand.finish()
    assert stdout == b"", "user prints must go to stderr"
    assert b"candidate module imported" in stderr and b"a raw write to fd 1" in stderr


def test_secret_seeds_make_different_inputs_and_the_same_seed_the_same(workers):
    trusted = workers("trusted", "reference_numpy.py")
    assert trusted.request({"op": "setup", "device": "cpu", "init_seed": 1, "atol": ATOL, "rtol": RTOL})[0]["ok"]
    payloads = []
    for k, seed in enumerate([1000, 2000, 1000]):
        trial, payload = trusted.request({"op": "trial", "trial": k, "seed": seed, "transport": "bytes"})
        spec = trial["inputs"][0]
        assert spec["transport"] == "bytes" and spec["dtype"] == "float32" and spec["shape"] == [8, 16]
        assert spec["nbytes"] == 8 * 16 * 4 and spec["stride"] == [16, 1]
        assert trial["input_specs"][0]["shape"] == [8, 16] and "digest" in trial["input_specs"][0]["stats"]
        payloads.append(payload[spec["offset"] : spec["offset"] + spec["nbytes"]])
    assert payloads[0] != payloads[1]
    assert payloads[0] == payloads[2]


@pytest.mark.parametrize(
    "candidate, mismatch",
    [
        ("candidate_wrong_shape.py", "shape"),
        ("candidate_wrong_dtype.py", "dtype"),
        ("candidate_two_outputs.py", "count"),
        ("candidate_patches_checks.py", "values"),
        ("candidate_env_seed.py", "values"),
    ],
)
def test_wrong_outputs_fail_with_the_kind_of_mismatch(workers, candidate, mismatch):
    trusted, cand, _, cand_setup = set_up(workers, candidate)
    assert cand_setup["ok"], cand_setup
    _, call, check = run_trial(trusted, cand, 0, 7)
    assert call["ok"], call
    comparison = check["comparison"]
    assert comparison["passed"] is False and comparison["mismatch"] == mismatch, comparison
    assert comparison["detail"]
    if mismatch == "values":
        assert comparison["mismatched_elements"] > 0


def test_stale_memory_reads_as_poison(workers):
    trusted, cand, _, _ = set_up(workers, "candidate_stale.py")
    _, call, check = run_trial(trusted, cand, 0, 5)
    comparison = check["comparison"]
    assert comparison["passed"] is False and comparison["mismatch"] == "values"
    assert comparison["poisoned_elements"] == comparison["total_elements"] == 8 * 16, comparison
    assert check["candidate_outputs"][0]["stats"]["nan_count"] == 8 * 16


def test_an_input_written_in_place_is_seen(workers):
    trusted, cand, _, _ = set_up(workers, "candidate_inplace.py")
    _, call, check = run_trial(trusted, cand, 0, 5)
    assert check["comparison"]["passed"] is True
    assert check["inputs_unchanged"] is False


def test_missing_inputs_after_cannot_show_inputs_unchanged(workers):
    trusted, cand, _, _ = set_up(workers, "candidate_honest.py")
    trial, payload = trusted.request({"op": "trial", "trial": 0, "seed": 3, "transport": "bytes"})
    call, call_payload = cand.request({"op": "call", "trial": 0, "inputs": trial["inputs"], "poison": []}, payload)
    check, _ = trusted.request({"op": "check", "trial": 0, "outputs": call["outputs"]}, call_payload)
    assert check["comparison"]["passed"] is True
    assert check["inputs_unchanged"] is False and "inputs_after" in check["note"]


def test_a_non_contiguous_output_is_exported_as_a_contiguous_copy(workers):
    trusted, cand, _, _ = set_up(workers, "candidate_noncontiguous.py")
    _, call, check = run_trial(trusted, cand, 0, 5)
    assert "not contiguous" in call["note"]
    assert call["outputs"][0]["stride"] == [16, 1]
    assert check["comparison"]["passed"] is True


def test_a_cached_result_fails_the_second_trial(workers):
    trusted, cand, _, _ = set_up(workers, "candidate_cached.py")
    _, _, first = run_trial(trusted, cand, 0, 100)
    _, _, second = run_trial(trusted, cand, 1, 200)
    assert first["comparison"]["passed"] is True
    assert second["comparison"]["passed"] is False and second["comparison"]["mismatch"] == "values"


def test_raising_candidate_is_raised_with_its_traceback(workers):
    trusted, cand, _, _ = set_up(workers, "candidate_raises.py")
    _, call, check = run_trial(trusted, cand, 0, 1)
    assert call["ok"] is False and check is None
    assert call["error"]["kind"] == "raised"
    assert "the candidate's kernel gave up" in call["error"]["message"]
    assert "candidate_raises.py" in call["error"]["traceback"]
    # The worker is still there for the next request.
    assert cand.request({"op": "release", "trial": 0})[0] == {"ok": True}


def test_a_subclass_output_is_bad_output(workers):
    trusted, cand, _, _ = set_up(workers, "candidate_subclass.py")
    _, call, _ = run_trial(trusted, cand, 0, 1)
    assert call["ok"] is False and call["error"]["kind"] == "bad_output"
    assert "Lazy" in call["error"]["message"]


def test_a_source_that_does_not_compile_is_compile_error(workers):
    _, _, _, cand_setup = set_up(workers, "candidate_syntax_error.py")
    assert cand_setup["ok"] is False and cand_setup["error"]["kind"] == "compile_error"
    assert "SyntaxError" in cand_setup["error"]["message"]


def test_time_returns_host_times_on_both_sides(workers):
    trusted, cand, _, _ = set_up(workers, "candidate_honest.py")
    _, _, check = run_trial(trusted, cand, 0, 9)
    assert check["comparison"]["passed"]
    for side in (trusted, cand):
        reply, payload = side.request({"op": "time", "trial": 0, "repeat": 5, "warmup": 2, "flush_l2": True})
        assert reply["ok"], reply
        assert reply["method"] == "host" and reply["batch"] == 1
        assert len(reply["times_ms"]) == 5 and all(t > 0 for t in reply["times_ms"])
        # Host timing has no device state to reset, and none is judged.
        assert reply["device_state"] is None
    # The candidate's last timed output comes back, checkable like a call's.
    assert reply["outputs"][0]["shape"] == [8, 16]
    header = {"op": "check", "trial": 0, "outputs": reply["outputs"], "inputs_after": reply["inputs_after"]}
    timed_check, _ = trusted.request(header, payload)
    assert timed_check["comparison"]["passed"] and timed_check["inputs_unchanged"]
    warm, _ = cand.request({"op": "warmup", "trial": 0, "calls": 2})
    assert warm == {"ok": True}


def test_a_pooled_time_runs_each_call_on_its_set_and_hands_back_every_output(workers):
    """The fresh-input timing: calls cycle through a pool of trials in the given order, the
    warm-up runs on a trial outside it, every output (poisoned before its call) comes back, and
    any of them can be compared afterwards with its own set's reference outputs."""
    trusted, cand, _, _ = set_up(workers, "candidate_honest.py")
    _, _, check = run_trial(trusted, cand, 0, 9)
    assert check["comparison"]["passed"]
    pool, poison = [], []
    for k, seed in [(1, 101), (2, 102), (3, 103)]:
        trial, payload = trusted.request({"op": "trial", "trial": k, "seed": seed, "transport": "bytes"})
        assert trial["ok"], trial
        given, _ = cand.request({"op": "inputs", "trial": k, "inputs": trial["inputs"]}, payload)
        assert given == {"ok": True}, given
        pool.append(k)
        poison.append(trial["reference_outputs"])
    order = [2, 0, 1, 1, 0]
    request = {"op": "time", "pool": pool, "order": order, "repeat": len(order), "warmup": 2, "warmup_trial": 0, "poison": poison}
    for side in (trusted, cand):
        reply, payload = side.request(request)
        assert reply["ok"], reply
        assert reply["method"] == "host" and len(reply["times_ms"]) == 5
    assert len(reply["calls"]) == 5 and len(reply["inputs_after"]) == 3
    # Call 0 ran on pool[2] (trial 3): it matches trial 3's reference and not trial 1's.
    for trial, passed in [(3, True), (1, False)]:
        header = {"op": "check", "trial": trial, "outputs": reply["calls"][0]["outputs"], "inputs_after": reply["inputs_after"][2]}
        checked, _ = trusted.request(header, payload)
        assert checked["comparison"]["passed"] is passed, checked
    # A pool position past the pool is refused, and the worker goes on.
    bad, _ = cand.request(dict(request, order=[3]))
    assert bad["error"]["kind"] == "protocol"


NOTHING_PROFILED = "nothing was profiled"


def test_a_profiled_call_on_the_cpu_runs_and_says_nothing_was_profiled(workers):
    # The work pass's `profile` on `call` (candidate) and `trial` (trusted): on the CPU there is
    # no CUDA profiler window to open, the request still runs and the answer says so.
    trusted, cand, _, _ = set_up(workers, "candidate_honest.py")
    _, plain, plain_check = run_trial(trusted, cand, 0, 5, profile=False)
    assert plain["ok"] and NOTHING_PROFILED not in plain.get("note", ""), plain
    release(trusted, cand, 0)
    _, call, check = run_trial(trusted, cand, 1, 5, profile=True)
    assert call["ok"], call
    assert NOTHING_PROFILED in call["note"], call
    assert check["comparison"]["passed"], check
    # The same inputs, profiled or not: the same answer.
    assert check["candidate_outputs"][0]["stats"]["digest"] == plain_check["candidate_outputs"][0]["stats"]["digest"]
    reference, _ = trusted.request({"op": "trial", "trial": 2, "seed": 5, "transport": "bytes", "profile": True})
    assert reference["ok"], reference
    assert NOTHING_PROFILED in reference["note"], reference
    assert reference["reference_outputs"][0]["stats"]["digest"] == check["candidate_outputs"][0]["stats"]["digest"] or (
        check["comparison"]["max_abs_diff"] < 1e-5
    )
    unprofiled, _ = trusted.request({"op": "trial", "trial": 3, "seed": 5, "transport": "bytes"})
    assert unprofiled["ok"] and "note" not in unprofiled, unprofiled


@pytest.mark.parametrize("end", ["bye", "bye, exit now", "connection closed"])
def test_a_worker_ends_without_its_teardown_unless_a_plain_bye_asks_for_it(workers, end):
    """`bye` ends the worker with status 0, running the interpreter's teardown (here the
    candidate's atexit handler); with `exit: now`, or when polyprof closes the connection
    without a `bye` (after a failed request), the teardown does not run."""
    trusted, cand, _, setup = set_up(workers, "candidate_teardown.py")
    assert setup["ok"], setup
    run_trial(trusted, cand, 0, 11)
    if end != "connection closed":
        reply, _ = cand.request({"op": "bye", "exit": "now"} if end == "bye, exit now" else {"op": "bye"})
        assert reply["ok"]
    cand.finished = True
    cand.conn.close()
    _, stderr = cand.process.communicate(timeout=60)
    assert cand.process.returncode == 0
    assert (b"candidate teardown ran" in stderr) is (end == "bye")


def test_protocol_errors_are_answered_not_fatal(workers):
    trusted = workers("trusted", "reference_numpy.py")
    early, _ = trusted.request({"op": "trial", "trial": 0, "seed": 1})
    assert early["ok"] is False and early["error"]["kind"] == "protocol"
    unknown, _ = trusted.request({"op": "call", "trial": 0})
    assert unknown["error"]["kind"] == "protocol" and "no op 'call'" in unknown["error"]["message"]
    assert trusted.request({"op": "setup", "device": "cpu", "init_seed": 1})[0]["ok"]
    missing, _ = trusted.request({"op": "check", "trial": 9, "outputs": []})
    assert missing["error"]["kind"] == "protocol" and "no trial 9" in missing["error"]["message"]
    trial, payload = trusted.request({"op": "trial", "trial": 0, "seed": 1, "transport": "bytes"})
    forged = dict(trial["inputs"][0], nbytes=10**9)
    bad, _ = trusted.request({"op": "check", "trial": 0, "outputs": [forged]}, payload)
    assert bad["error"]["kind"] == "bad_output" and "run past" in bad["error"]["message"]
    pickled = dict(trial["inputs"][0], transport="pickle")
    bad, _ = trusted.request({"op": "check", "trial": 0, "outputs": [pickled]}, payload)
    assert bad["error"]["kind"] == "bad_output"


# -- the comparison itself, in process -------------------------------------------------------


@pytest.fixture(scope="module")
def worker_module():
    return load_worker_module()


def test_nan_is_equal_only_where_the_reference_is_nan(worker_module):
    ref = np.array([1.0, np.nan, 3.0, np.inf], dtype=np.float32)
    same = worker_module.compare_outputs([ref.copy()], [ref], 1e-3, 1e-3)
    assert same["passed"] and same["max_abs_diff"] == 0.0
    cand = np.array([np.nan, np.nan, 3.0, np.inf], dtype=np.float32)
    result = worker_module.compare_outputs([cand], [ref], 1e-3, 1e-3)
    assert result["passed"] is False and result["mismatched_elements"] == 1
    flipped = np.array([1.0, 2.0, 3.0, -np.inf], dtype=np.float32)
    result = worker_module.compare_outputs([flipped], [ref], 1e-3, 1e-3)
    assert result["mismatched_elements"] == 2


def test_tolerance_is_atol_plus_rtol_times_the_reference(worker_module):
    ref = np.array([100.0, 0.0], dtype=np.float64)
    inside = np.array([100.0 + 1.0 + 0.5, 0.5])  # atol 0.5 + rtol 0.01 * 100
    outside = np.array([100.0 + 1.6, 0.6])
    assert worker_module.compare_outputs([inside], [ref], 0.5, 0.01)["passed"]
    result = worker_module.compare_outputs([outside], [ref], 0.5, 0.01)
    assert result["mismatched_elements"] == 2
    assert abs(result["max_abs_diff"] - 1.6) < 1e-12 and abs(result["max_rel_diff"] - 0.016) < 1e-12


def test_poison_counts_all_ff_elements_the_reference_does_not_hold(worker_module):
    ref = np.arange(4, dtype=np.float32)
    cand = ref.copy()
    cand.view(np.uint8)[4:12] = 0xFF  # elements 1 and 2
    result = worker_module.compare_outputs([cand], [ref], 0.0, 0.0)
    assert result["poisoned_elements"] == 2 and result["mismatched_elements"] == 2
    ref_poison = cand.copy()
    assert worker_module.compare_outputs([cand], [ref_poison], 0.0, 0.0)["poisoned_elements"] == 0


def test_poison_is_found_where_the_words_cannot_be_viewed_whole(worker_module):
    """An element of all-0xFF bytes is poison whether it is read as one integer (sizes 1-8) or
    byte by byte (complex128, 16 bytes; a view whose offset the integer view refuses)."""
    ref = np.arange(6, dtype=np.complex128)
    cand = ref.copy()
    cand.view(np.uint8)[16:48] = 0xFF  # elements 1 and 2
    assert worker_module.compare_outputs([cand], [ref], 0.0, 0.0)["poisoned_elements"] == 2
    raw = np.zeros(13, dtype=np.uint8)
    raw[5:9] = 0xFF
    words = worker_module.all_ones_words(raw[1:13], 4)  # offset 1: a misaligned int32 view
    assert words.tolist() == [False, True, False]
    torch = torch_or_skip(cuda=False)
    shifted = torch.from_numpy(raw)[1:13]
    assert worker_module.all_ones_words(shifted, 4).tolist() == [False, True, False]
    assert worker_module.all_ones_words(torch.from_numpy(raw[:12]), 4).tolist() == [False, False, False]


def test_integers_compare_exactly_and_stats_ignore_nan(worker_module):
    ref = np.array([1, 2, 2**40], dtype=np.int64)
    assert worker_module.compare_outputs([ref + np.array([0, 0, 1])], [ref], 10.0, 10.0)["mismatched_elements"] == 1
    stats = worker_module.array_stats(np.array([np.nan, 1.0, 3.0], dtype=np.float32))
    assert stats == {**stats, "min": 1.0, "max": 3.0, "mean": 2.0, "nan_count": 1}
    assert stats["digest"] == worker_module.array_stats(np.array([np.nan, 1.0, 3.0], dtype=np.float32))["digest"]
    assert stats["digest"] != worker_module.array_stats(np.array([np.nan, 1.0, 4.0], dtype=np.float32))["digest"]
    infinite = worker_module.array_stats(np.array([np.inf, 1.0]))
    assert infinite["max"] is None and infinite["min"] == 1.0 and infinite["mean"] is None


def expected_comparison(c, r, atol, rtol):
    """compare_values's answer computed directly over the whole arrays (float64, no chunks)."""
    cv, rv = c.astype(np.float64), r.astype(np.float64)
    with np.errstate(all="ignore"):
        diff = np.abs(cv - rv)
        ok = ((diff <= atol + rtol * np.abs(rv)) & np.isfinite(rv)) | (cv == rv) | (np.isnan(cv) & np.isnan(rv))
        finite = np.isfinite(cv) & np.isfinite(rv)
        nonzero = finite & (rv != 0)
        abs_top = float(diff[finite].max()) if finite.any() else None
        rel_top = float((diff[nonzero] / np.abs(rv[nonzero])).max()) if nonzero.any() else None
    return int((~ok).sum()), abs_top, rel_top


def chunk_case():
    """A reference and a candidate whose chunks hold every case a running total must survive."""
    rng = np.random.default_rng(7)
    ref = rng.standard_normal(200).astype(np.float32)
    ref[:5] = np.nan  # a whole chunk of NaN when chunks are 5 long
    ref[5:10] = 0.0  # a chunk with no relative difference
    ref[50] = np.inf
    cand = ref + rng.standard_normal(200).astype(np.float32) * 1e-3
    cand[7] = np.nan
    cand.view(np.uint8)[4 * 100 : 4 * 102] = 0xFF
    return cand, ref


@pytest.mark.parametrize("chunk", [1, 5, 64, 1 << 24])
def test_chunked_totals_match_the_whole_array(worker_module, monkeypatch, chunk):
    """Counts, maxima and statistics are carried from chunk to chunk unread: a chunk that holds
    only NaN, or no element that counts toward a maximum, must not change the answer."""
    monkeypatch.setattr(worker_module, "CHUNK_ELEMENTS", chunk)
    monkeypatch.setattr(worker_module, "HOST_CHUNK_ELEMENTS", chunk)
    cand, ref = chunk_case()
    bad, poisoned, abs_top, rel_top = worker_module.compare_values(cand, ref, 1e-3, 1e-3)
    want_bad, want_abs, want_rel = expected_comparison(cand, ref, 1e-3, 1e-3)
    assert (bad, poisoned) == (want_bad, 2)
    assert (abs_top, rel_top) == (want_abs, want_rel)
    nothing_finite = np.full(10, np.nan, dtype=np.float32)
    assert worker_module.compare_values(nothing_finite, nothing_finite, 0.0, 0.0) == (0, 0, None, None)
    zeros = np.zeros(10, dtype=np.float32)
    assert worker_module.compare_values(zeros, zeros, 0.0, 0.0) == (0, 0, 0.0, None)
    stats = worker_module.array_stats(ref)
    finite = ref[~np.isnan(ref) & np.isfinite(ref)]
    assert stats["nan_count"] == 5 and stats["min"] == float(finite.min()) and stats["max"] is None
    ints = np.arange(-3, 17, dtype=np.int32)
    assert worker_module.array_stats(ints) == {**worker_module.array_stats(ints), "min": -3.0, "max": 16.0, "mean": 6.5}
    assert worker_module.array_stats(nothing_finite) == {**worker_module.array_stats(nothing_finite), "min": None, "max": None, "mean": None, "nan_count": 10}


@pytest.mark.parametrize("chunk", [5, 1 << 24])
def test_torch_chunked_totals_match_numpy(worker_module, monkeypatch, chunk):
    """torch carries its totals as tensors (on a GPU, left on the device): numpy's answers."""
    torch = torch_or_skip(cuda=False)
    monkeypatch.setattr(worker_module, "CHUNK_ELEMENTS", chunk)
    monkeypatch.setattr(worker_module, "HOST_CHUNK_ELEMENTS", chunk)
    cand, ref = chunk_case()
    on_torch = worker_module.compare_values(torch.from_numpy(cand), torch.from_numpy(ref), 1e-3, 1e-3)
    assert on_torch == worker_module.compare_values(cand, ref, 1e-3, 1e-3)
    keys = ("min", "max", "mean", "nan_count")
    torch_stats, numpy_stats = worker_module.array_stats(torch.from_numpy(ref)), worker_module.array_stats(ref)
    assert {k: torch_stats[k] for k in keys} == {k: numpy_stats[k] for k in keys}


def test_cuda_digest_is_the_documented_sums(worker_module, monkeypatch):
    """The CUDA digest's sums, added on the device chunk by chunk, give the bits a host float
    adding the same chunk sums gives (digests stay comparable with earlier evidence)."""
    torch = torch_or_skip(cuda=True)
    monkeypatch.setattr(worker_module, "CHUNK_ELEMENTS", 1000)
    x = torch.randn(4096 + 3, device="cuda")
    words = x.view(torch.int32)
    plain = squares = weighted = 0.0
    for a in range(0, words.numel(), 1000):
        w = words[a : a + 1000].to(torch.float64)
        weights = torch.remainder(torch.arange(a, a + w.numel(), dtype=torch.float64, device="cuda"), 65521) + 1
        plain += float(w.sum())
        squares += float((w * w).sum())
        weighted += float((w * weights).sum())
    text = f"cuda-sums|float32|[{x.numel()}]|{plain!r}|{squares!r}|{weighted!r}"
    assert worker_module.digest(x) == hashlib.sha256(text.encode()).hexdigest()


# -- torch ------------------------------------------------------------------------------------


def torch_or_skip(cuda):
    torch = pytest.importorskip("torch", reason="torch is not installed here (these run on the GPU machine)")
    if cuda and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


def test_cuda_inputs_are_drawn_on_the_device_and_host_only_problems_fall_back(worker_module):
    torch = torch_or_skip(cuda=True)
    worker = worker_module.Worker("trusted", "problem.py", "cuda")

    def on_device():
        return [torch.rand(256, 256), 3]

    def host_only():
        return [torch.from_numpy(torch.rand(64).numpy() * 2)]

    notes = []
    first, again = worker.draw_inputs(on_device, 11, notes), worker.draw_inputs(on_device, 11, notes)
    assert first[0].is_cuda and first[1] == 3
    assert torch.equal(first[0], again[0]), "one seed must draw the same inputs"
    assert not torch.equal(first[0], worker.draw_inputs(on_device, 12, notes)[0]) and notes == []
    fallback = worker.draw_inputs(host_only, 5, notes)
    worker_module.seed_everything(5)
    assert fallback[0].is_cuda and torch.equal(fallback[0].cpu(), host_only()[0])
    assert len(notes) == 1 and "drawn on the CPU" in notes[0], notes
    # Later trials go to the host at once, without a second note.
    again = worker.draw_inputs(host_only, 5, notes)
    assert torch.equal(again[0], fallback[0]) and len(notes) == 1, notes


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_torch_honest_candidate_passes(workers, device, worker_module):
    torch_or_skip(device == "cuda")
    transport = "ipc" if device == "cuda" else "bytes"
    trusted, cand, setup, cand_setup = set_up(workers, "candidate_torch_honest.py", "reference_torch.py", device)
    assert setup["framework"] == "torch" and cand_setup["ok"], cand_setup
    for k, seed in enumerate([3, 4]):
        trial, call, check = run_trial(trusted, cand, k, seed, transport)
        assert trial["inputs"][0]["transport"] == transport and trial["inputs"][0]["dtype"] == "float32"
        assert call["ok"], call
        assert call["outputs"][0]["transport"] == transport
        assert check["comparison"]["passed"], check
        assert check["inputs_unchanged"] is True
        assert trial["reference_outputs"][0]["stats"]["digest"] == check["candidate_outputs"][0]["stats"]["digest"] or (
            check["comparison"]["max_abs_diff"] > 0
        )
        release(trusted, cand, k)
    trial, call, check = run_trial(trusted, cand, 5, 5, transport)
    repeat = 5
    # Events give one time a call; a graph path one a replay, at least GRAPH_MIN_REPLAYS of them
    # (the constant of the timing module the worker loaded).
    graph_replays = worker_module._timing.GRAPH_MIN_REPLAYS
    for side in (trusted, cand):
        reply, payload = side.request({"op": "time", "trial": 5, "repeat": repeat, "warmup": 2, "flush_l2": True})
        assert reply["ok"], reply
        replays = max(graph_replays, -(-repeat // reply["batch"]))
        expected = repeat if reply["method"] != "graph_pairs" else replays
        assert len(reply["times_ms"]) == expected, reply["method_detail"]
        if device == "cuda":
            assert reply["method"] in ("graph_pairs", "events"), reply["method_detail"]
            assert reply["device_state"]["persisting_l2_reset"] is True, reply["device_state"]
            assert reply["device_state"]["persisting_l2_limit_bytes"] == 0
        else:
            assert reply["method"] == "host"
    header = {"op": "check", "trial": 5, "outputs": reply["outputs"]}
    if "inputs_after" in reply:
        header["inputs_after"] = reply["inputs_after"]
    timed, _ = trusted.request(header, payload)
    assert timed["comparison"]["passed"], timed


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_torch_hostile_candidates(workers, device):
    torch_or_skip(device == "cuda")
    transport = "ipc" if device == "cuda" else "bytes"
    trusted, cand, _, _ = set_up(workers, "candidate_torch_inplace.py", "reference_torch.py", device)
    _, _, check = run_trial(trusted, cand, 0, 1, transport)
    assert check["comparison"]["passed"] and check["inputs_unchanged"] is False
    trusted, cand, _, _ = set_up(workers, "candidate_torch_subclass.py", "reference_torch.py", device)
    _, call, _ = run_trial(trusted, cand, 0, 1, transport)
    assert call["error"]["kind"] == "bad_output"


def test_torch_profiled_call_and_reference_run_on_the_gpu(workers):
    # cudaProfilerStart/Stop around the call (no profiler attached here: they succeed and
    # change nothing); under `ncu --profile-from-start off` only these windows are profiled.
    torch_or_skip(True)
    trusted, cand, _, _ = set_up(workers, "candidate_torch_honest.py", "reference_torch.py", "cuda")
    trusted.request({"op": "release", "trial": 0})
    _, call, check = run_trial(trusted, cand, 0, 7, "ipc", profile=True)
    assert call["ok"], call
    assert NOTHING_PROFILED not in call.get("note", ""), call
    assert check["comparison"]["passed"], check
    reference, _ = trusted.request({"op": "trial", "trial": 1, "seed": 7, "transport": "ipc", "profile": True})
    assert reference["ok"] and NOTHING_PROFILED not in reference.get("note", ""), reference


def test_torch_stale_output_on_the_gpu_reads_as_poison(workers):
    torch_or_skip(True)
    trusted, cand, _, _ = set_up(workers, "candidate_torch_stale.py", "reference_torch.py", "cuda")
    _, _, check = run_trial(trusted, cand, 0, 1, "ipc")
    comparison = check["comparison"]
    assert comparison["passed"] is False
    assert comparison["poisoned_elements"] == comparison["total_elements"], comparison


def test_a_device_fault_is_reported_and_ends_the_worker(workers):
    torch_or_skip(True)
    trusted, cand, _, _ = set_up(workers, "candidate_torch_fault.py", "reference_torch.py", "cuda")
    _, call, _ = run_trial(trusted, cand, 0, 1, "ipc")
    assert call["ok"] is False and call["error"]["kind"] == "device_fault", call
    assert cand.process.wait(timeout=60) == 3


def run_build(source, tmp_path):
    """The worker's build role on ``source``: no socket, its exit status and stderr."""
    argv = [sys.executable, "-I", str(WORKER), "--role", "build", "--source", str(source), "--device", "cpu"]
    env = dict(clean_environment(), POLYPROF_BUILD_DIR=str(tmp_path))
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def test_the_build_role_imports_the_candidate_and_says_it_started_first(tmp_path):
    good = tmp_path / "good.py"
    good.write_text("import os\nopen(os.path.join(os.environ['POLYPROF_BUILD_DIR'], 'built'), 'w').close()\nclass ModelNew:\n    pass\n")
    done = run_build(good, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == load_worker_module().BUILD_STARTED
    assert (tmp_path / "built").exists()


def test_a_build_whose_import_raises_exits_4_with_its_traceback(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('Error building extension on purpose')\n")
    done = run_build(bad, tmp_path)
    assert done.returncode == load_worker_module().EXIT_BUILD_FAILED == 4
    lines = done.stderr.splitlines()
    assert lines[0] == "polyprof build worker: started"
    assert "compile_error" in done.stderr and "on purpose" in lines[-1]
