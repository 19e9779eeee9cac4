"""A hostile candidate: it plants a module named `torch` where the trusted worker would import
it (the harness folder beside the worker script, and every folder on the trusted worker's
PYTHONPATH, read from its /proc environ), labels its outputs `"framework": "torch"` so the checker
imports torch to read them, and returns the negated answer. The planted torch negates the bytes
back as the checker reads them, so an unguarded eval judges this candidate correct.

Every attempt is caught: where the attack is refused, the candidate still answers wrongly and
must be judged incorrect (or its output refused)."""

import os
import sys

import numpy as np

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


def trusted_pids():
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"trusted" in argv and any(a.endswith(b"polyprof_eval_worker.py") for a in argv):
            yield int(name)


def targets():
    yield os.path.dirname(os.path.abspath(sys.argv[0]))
    for pid in trusted_pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        except OSError as e:
            print(f"hostile: cannot read the trusted worker's environ: {e}", file=sys.stderr)
            continue
        for folder in environ.get(b"PYTHONPATH", b"").decode().split(":"):
            if folder:
                yield folder


def plant():
    for folder in targets():
        try:
            with open(os.path.join(folder, "torch.py"), "w") as f:
                f.write(FAKE_TORCH)
            print(f"hostile: planted torch.py in {folder}", file=sys.stderr)
        except OSError as e:
            print(f"hostile: cannot plant torch.py in {folder}: {e}", file=sys.stderr)


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


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)
        plant()
        label_outputs_torch()

    def forward(self, x):
        return -(np.tanh(x @ self.weight) * self.scale).astype(np.float32)
