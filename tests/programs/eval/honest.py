"""An honest candidate for reference.py. It also writes what its own process can see (argv,
/proc/self/cmdline and /proc/self/environ) beside itself, so the test can check that no secret
seed reached it."""

import json
import os
import sys

import numpy as np


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)
        seen = {"argv": sys.argv, "cmdline": open("/proc/self/cmdline", "rb").read().decode(errors="replace"),
                "environ": open("/proc/self/environ", "rb").read().decode(errors="replace"),
                "env": dict(os.environ)}
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"seen.{os.getpid()}.json")
        with open(path, "w") as f:
            json.dump(seen, f)

    def forward(self, x):
        return (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
