"""A candidate that goes after a warm evaluator's long-lived trusted worker: it tries to stop,
kill and open the memory of every trusted worker of the test's folder (the folder above its
own: never another test's), and to plant a file in every directory there named like a warm
evaluator's. Then it answers honestly, so a verdict unlike its cold one, or a later candidate
judged differently, is the harness's fault."""

import os
import signal

import numpy as np

ME = os.getpid()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def others():
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != ME and int(name) != os.getppid():
            yield int(name)


def attack():
    hit = []
    for pid in others():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if b"trusted" not in cmdline or ROOT.encode() not in cmdline:
            continue
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(pid, sig)
                hit.append((pid, sig))
            except OSError:
                pass
        try:
            with open(f"/proc/{pid}/mem", "r+b"):
                hit.append((pid, "mem"))
        except OSError:
            pass
    for top, dirs, _ in os.walk(ROOT):
        for name in dirs:
            if name.startswith("warm-reference"):
                try:
                    open(os.path.join(top, name, "harness", "planted"), "w").close()
                    hit.append(name)
                except OSError:
                    pass
    return hit


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)
        self.hit = attack()

    def forward(self, x):
        return (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
