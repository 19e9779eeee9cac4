import os
import signal
import sys
import threading
import time

import pytest

import polyprof


def test_exit_code_and_output_are_returned():
    r = polyprof.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert r.returncode == 3
    assert r.outcome.kind == "exited" and r.outcome.code == 3
    assert r.stdout.head == ["out"] and r.stderr.head == ["err"]
    assert not r.success


def test_arguments_reach_the_program_verbatim():
    r = polyprof.run([sys.executable, "-c", "import sys; print(sys.argv[1])", "--template_params=(16, 32)"])
    assert r.stdout.head == ["--template_params=(16, 32)"]


def test_pytest_marker_then_hang_is_stopped_and_counts_as_passed():
    started = time.monotonic()
    r = polyprof.run(
        ["sh", "-c", "echo '=== 2 passed in 0.10s ==='; exec sleep 60"],
        end_marker="pytest",
        marker_grace=0.3,
        kill_grace=0.3,
    )
    assert time.monotonic() - started < 10
    assert r.outcome.kind == "hung_after_marker" and r.outcome.passed
    assert r.success and r.marker.passed


def test_timeout_keeps_the_output_captured_so_far():
    r = polyprof.run(["sh", "-c", "echo before; exec sleep 60"], timeout=0.5, kill_grace=0.2)
    assert r.outcome.kind == "timed_out"
    assert r.stdout.head == ["before"]


def test_untrusted_policy_keeps_host_secrets_out(monkeypatch):
    monkeypatch.setenv("MY_API_TOKEN", "hunter2")
    r = polyprof.run(["sh", "-c", "echo ${MY_API_TOKEN:-absent}"], env_policy="untrusted")
    assert r.stdout.head == ["absent"]


@pytest.mark.parametrize(
    "kwargs",
    [{"timeout": 1e19}, {"timeout": -1}, {"inactivity_timeout": float("nan")}, {"marker_grace": 1e12}],
)
def test_bad_durations_are_value_errors(kwargs):
    with pytest.raises(ValueError):
        polyprof.run(["true"], **kwargs)


def test_a_shell_string_is_refused():
    with pytest.raises(ValueError, match="list of arguments"):
        polyprof.run("echo hi")  # type: ignore[arg-type]


def test_unknown_env_policy_names_the_valid_ones():
    with pytest.raises(ValueError, match="inherit, clean, untrusted"):
        polyprof.run(["true"], env_policy="bogus")


def test_missing_program_is_a_result_not_an_exception():
    r = polyprof.run(["/nonexistent/program"])
    assert r.outcome.kind == "spawn_failed"
    assert r.returncode is None


def test_other_python_threads_run_while_polyprof_waits():
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    t = threading.Thread(target=tick)
    t.start()
    polyprof.run(["sleep", "0.5"])
    stop.set()
    t.join()
    assert len(ticks) > 20  # the GIL was released


@pytest.fixture
def ctrl_c_raises():
    """Python's own Ctrl-C handler for the test. A Python started with SIGINT ignored (a job a
    non-interactive shell put in the background, as `nohup cmd &` does) keeps it ignored, so
    the signal the test sends would be dropped and the run would go on to its end."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_stops_the_process_group_and_raises_keyboard_interrupt(tmp_path, ctrl_c_raises):
    pidfile = tmp_path / "pid"
    threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        polyprof.run(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"], kill_grace=0.5)
    assert time.monotonic() - started < 10
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_descendant_that_left_the_group_is_ended_too():
    from polyprof._options import supervisor

    if supervisor() is None:
        pytest.skip("polyprof-supervise is not installed with this package (python/build-wheel.sh ships it)")
    r = polyprof.run(["sh", "-c", "setsid sleep 60 & echo $!"])
    pid = int(r.stdout.head[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"setsid descendant {pid} survived the run")


def test_the_console_script_runs_the_rust_executable():
    import shutil
    import subprocess

    script = os.path.join(os.path.dirname(sys.executable), "polyprof")
    if not os.path.exists(script):
        script = shutil.which("polyprof")
    if script is None or not os.path.exists(os.path.join(os.path.dirname(polyprof.__file__), "bin", "polyprof")):
        pytest.skip("the wheel with the executable inside is not installed")
    out = subprocess.run([script, "run", "--json", "-q", "--", "sh", "-c", "exit 5"], capture_output=True, text=True)
    assert out.returncode == 5
    assert '"code": 5' in out.stdout


def test_a_clean_runs_errors_are_an_empty_list_and_fields_are_listed(tmp_path):
    import polyprof

    run = polyprof.profile([sys.executable, "-c", "pass"], output_dir=tmp_path / "run")
    assert run.succeeded
    assert run.errors == [] and run.warnings == []
    for field in ("errors", "kernels", "outcome", "steps", "output_dir"):
        assert field in dir(run), field
    kernel = polyprof.KernelRecord({"name": "k", "duration_ns": 5.0})
    for field in ("name", "duration_ns", "grid", "block"):
        assert field in dir(kernel), field


def test_missing_profiler_output_is_profiler_unavailable(tmp_path):
    import polyprof
    from polyprof.profiler_command import get_profilers

    ncu = get_profilers("cuda", "h100", "ncu")[0](str(tmp_path))
    with pytest.raises(polyprof.ProfilerUnavailable) as caught:
        ncu.read_output()
    assert isinstance(caught.value, polyprof.ProfilerOutputMissing)
    assert isinstance(caught.value, polyprof.PolyprofError)
