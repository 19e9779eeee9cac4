"""An honest candidate for reference.py. It also prints what its own process can see (argv,
/proc/self/cmdline and /proc/self/environ) on stderr, one line starting `SEEN `, so the test can
check in its worker's log that no secret seed reached it (its folder is read-only in the
sandbox)."""

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
        print("SEEN " + json.dumps(seen), file=sys.stderr, flush=True)

    def forward(self, x):
        return (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
