"""The eval worker's own costs on the critical path of every candidate, a base revision's worker
against the working tree's, side by side in one run (scripts/bench-eval-checks.sh says how):

1. an output check: compare_outputs + array_stats + digest of a candidate output against the
   reference's, N elements of float32 (numpy on the host; torch on the GPU when CUDA is there);
2. a worker's end: a candidate worker set up on the numpy (and, with torch, the torch) test
   problem, then `bye`, timed until its process has exited; plain `bye` (the base's end)
   against `bye` with `exit: now`.

Rounds alternate base and new. Prints the best of ROUNDS for each and the ratio base / new."""

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "python" / "polyprof" / "harness"
PROBLEMS = ROOT / "python" / "tests" / "eval_problems"
ROUNDS = int(os.environ.get("ROUNDS", "3"))


def load(path: Path, name: str) -> Any:
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


def best(f: Callable[[], Any], sync: Callable[[], None]) -> float:
    f()
    sync()
    times = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        f()
        sync()
        times.append(time.perf_counter() - t)
    return min(times)


def step(module: Any, what: str, c: Any, r: Any) -> Any:
    if what == "compare":
        return module.compare_outputs([c], [r], 1e-2, 1e-2)
    if what == "stats":
        return module.array_stats(c)
    return module.digest(c)


def checks(base: Any, new: Any) -> List[Tuple[str, float, float]]:
    rows = []
    sides: List[Tuple[str, Any, Any, Callable[[], None]]] = []
    import numpy as np

    n = int(os.environ.get("HOST_ELEMENTS", str(1 << 24)))
    r = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    sides.append((f"host, {n} float32", r + np.float32(1e-4), r, lambda: None))
    try:
        import torch

        if torch.cuda.is_available():
            n = int(os.environ.get("CUDA_ELEMENTS", str(1 << 30)))
            rc = torch.randn(n, device="cuda")
            sides.append((f"cuda, {n} float32", rc + 1e-4, rc, torch.cuda.synchronize))
    except ImportError:
        pass
    for label, c, r, sync in sides:
        answers = []
        for module in (base, new):
            answers.append(module.compare_outputs([c], [r], 1e-2, 1e-2))
        if answers[0] != answers[1]:
            raise SystemExit(f"{label}: the two workers' comparisons differ: {answers}")
        for what in ("compare", "stats", "digest"):
            t_base = best(lambda: step(base, what, c, r), sync)
            t_new = best(lambda: step(new, what, c, r), sync)
            rows.append((f"{what} ({label})", t_base, t_new))
    return rows


def start(role: str, source: Path, device: str) -> "Tuple[subprocess.Popen[bytes], socket.socket]":
    folder = tempfile.mkdtemp(prefix="ppb")
    path = os.path.join(folder, "s")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    server.settimeout(120)
    argv = [sys.executable, str(HARNESS / "polyprof_eval_worker.py"), "--socket", path, "--role", role, "--source", str(source), "--device", device]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn, _ = server.accept()
    server.close()
    os.unlink(path)
    os.rmdir(folder)
    return process, conn


def worker_end(protocol: Any, reference: str, candidate: str, device: str, at_once: bool) -> float:
    """Seconds from a candidate worker's `bye` to its exit, framed by the worker module's own
    read_message / write_message."""
    send, receive = protocol.write_message, protocol.read_message
    trusted, tconn = start("trusted", PROBLEMS / reference, device)
    send(tconn, {"op": "setup", "device": device, "init_seed": 1, "atol": 1e-4, "rtol": 1e-4}, [])
    reply, payload = receive(tconn)
    process, conn = start("candidate", PROBLEMS / candidate, device)
    send(conn, {"op": "setup", "device": device, "init_seed": 1, "annotate": False, "init_inputs": reply["init_inputs"]}, [bytes(payload)])
    answer, _ = receive(conn)
    if not answer.get("ok"):
        raise SystemExit(f"the candidate worker's setup failed: {answer}")
    t = time.perf_counter()
    send(conn, {"op": "bye", "exit": "now"} if at_once else {"op": "bye"}, [])
    receive(conn)
    process.wait(timeout=60)
    took = time.perf_counter() - t
    conn.close()
    send(tconn, {"op": "bye"}, [])
    receive(tconn)
    trusted.wait(timeout=60)
    return took


def ends(protocol: Any) -> List[Tuple[str, float, float]]:
    problems = [("numpy", "reference_numpy.py", "candidate_honest.py", "cpu")]
    try:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        problems.append((f"torch, {device}", "reference_torch.py", "candidate_torch_honest.py", device))
    except ImportError:
        pass
    rows = []
    for label, reference, candidate, device in problems:
        plain, now = [], []
        for _ in range(ROUNDS):
            plain.append(worker_end(protocol, reference, candidate, device, False))
            now.append(worker_end(protocol, reference, candidate, device, True))
        rows.append((f"worker end ({label})", min(plain), min(now)))
    return rows


def main() -> None:
    base_path, new_path = Path(sys.argv[1]), HARNESS / "polyprof_eval_worker.py"
    base, new = load(base_path, "polyprof_eval_worker_base"), load(new_path, "polyprof_eval_worker_new")
    rows = checks(base, new) + ends(new)
    print(f"{'step':<40} {'base s':>9} {'new s':>9} {'base/new':>9}")
    for what, t_base, t_new in rows:
        print(f"{what:<40} {t_base:>9.4f} {t_new:>9.4f} {t_base / t_new:>8.2f}x")


if __name__ == "__main__":
    main()
