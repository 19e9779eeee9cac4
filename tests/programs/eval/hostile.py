"""A hostile candidate for reference.py. The tests copy it under the name of one attack
(`hostile_<attack>.py`); it does that attack, uncaught, when it is built, then answers wrongly
(the negated answer), so a candidate whose attack was refused fails loudly (the refusal is its
failure's message) and one whose attack went through must still not pass.

Attacks: `shadow` (a module named torch planted in the harness folder and on the trusted
worker's PYTHONPATH, that negates the bytes back as the checker reads them, and outputs labelled
torch so the checker imports it), `rewrite` (the harness scripts and the reference), `cache` (~/.cache/polyprof of the
trusted worker's HOME), `plant` (verdict.json saying passed, evidence.json a directory), `chmod` (the
eval folder made read-only, which Landlock does not stop), `kill` and `stop` (the trusted worker: SIGKILL, SIGSTOP), `flood` (a 1 GiB output), `home` (a file in
the trusted worker's HOME), `network` (a TCP connection to the port in `port` beside it)."""

import json
import os
import signal
import socket
import sys

import numpy as np

ATTACK = os.path.basename(__file__)[len("hostile_"):-len(".py")]
HERE = os.path.dirname(os.path.abspath(__file__))

FAKE_TORCH = '''
import contextlib, numpy
class dtype:
    def __init__(self, name, size):
        self.name, self.size = name, size
float32 = dtype("float32", 4)
class Tensor:
    pass
class _Empty:
    def __init__(self, d):
        self.d = d
    def element_size(self):
        return self.d.size
def empty(shape, dtype=None, **kw):
    return _Empty(dtype)
def frombuffer(buf, dtype=None):
    return -numpy.frombuffer(bytes(buf), dtype=numpy.dtype(dtype.name))
def manual_seed(seed):
    return None
def no_grad():
    return contextlib.nullcontext()
class cuda:
    @staticmethod
    def is_available():
        return False
    @staticmethod
    def manual_seed_all(seed):
        return None
    @staticmethod
    def synchronize():
        return None
'''


def label_outputs_torch():
    main = sys.modules["__main__"]
    original = main.Worker.export_outputs

    def export_outputs(self, outputs, inputs, out, state):
        reply = original(self, outputs, inputs, out, state)
        for wire in reply.get("outputs", []):
            if wire.get("transport") == "bytes":
                wire["framework"] = "torch"
        return reply

    main.Worker.export_outputs = export_outputs


def trusted():
    """This eval's trusted worker's pid, argv and environment, from /proc."""
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{name}/comm", "rb") as f:
                comm = f.read().strip()
        except OSError:
            continue
        # This eval's trusted worker: it runs the same harness script.
        script = os.path.abspath(sys.argv[0]).encode()
        if b"trusted" in argv and comm.startswith(b"python") and script in argv:
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
            except OSError:
                env = {}
            return int(name), [a.decode() for a in argv], {k.decode(): v.decode() for k, v in env.items()}
    raise RuntimeError("hostile: no trusted worker found")


def attack():
    harness = os.path.dirname(os.path.abspath(sys.argv[0]))
    eval_dir = os.path.dirname(harness)
    if ATTACK == "shadow":
        _, _, env = trusted()
        folders = [harness] + [p for p in env.get("PYTHONPATH", "").split(":") if p]
        for folder in folders:
            with open(os.path.join(folder, "torch.py"), "w") as f:
                f.write(FAKE_TORCH)
        label_outputs_torch()
    elif ATTACK == "rewrite":
        pid, argv, _ = trusted()
        reference = argv[argv.index("--source") + 1]
        for path in [os.path.join(harness, "polyprof_eval_worker.py"), reference]:
            os.chmod(path, 0o644)  # a read-only mode stops no one who owns the file
            with open(path, "a") as f:
                f.write("\n# rewritten by a hostile candidate\n")
    elif ATTACK == "cache":
        _, _, env = trusted()
        cache = os.path.join(env.get("XDG_CACHE_HOME") or os.path.join(env["HOME"], ".cache"), "polyprof")
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, "planted.json"), "w") as f:
            f.write("{}")
    elif ATTACK == "plant":
        with open(os.path.join(eval_dir, "verdict.json"), "w") as f:
            json.dump({"schema_version": 1, "passed": True, "status": "correct"}, f)
        os.mkdir(os.path.join(eval_dir, "evidence.json"))
    elif ATTACK == "chmod":
        # Landlock does not confine chmod: an eval folder polyprof cannot write to.
        os.chmod(eval_dir, 0o500)
    elif ATTACK == "kill":
        os.kill(trusted()[0], signal.SIGKILL)
    elif ATTACK == "stop":
        os.kill(trusted()[0], signal.SIGSTOP)
    elif ATTACK == "home":
        _, _, env = trusted()
        with open(os.path.join(env["HOME"], "planted-by-candidate"), "w") as f:
            f.write("x")
    elif ATTACK == "network":
        with open(os.path.join(HERE, "port")) as f:
            port = int(f.read())
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    elif ATTACK != "flood":
        raise RuntimeError(f"hostile: unknown attack {ATTACK!r}")


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)
        attack()

    def forward(self, x):
        if ATTACK == "flood":
            return np.ones(1 << 28, dtype=np.float32)
        return -(np.tanh(x @ self.weight) * self.scale).astype(np.float32)
