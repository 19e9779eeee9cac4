"""An honest candidate whose module leaves work for the interpreter's teardown (an atexit handler
that writes a line to stderr): it runs when the worker exits normally, and not when polyprof asks
the worker to end at once."""

import atexit
import sys

import numpy as np


def _at_teardown():
    sys.stderr.write("candidate teardown ran\n")


atexit.register(_at_teardown)


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)

    def __call__(self, x):
        return (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
