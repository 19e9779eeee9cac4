"""Right output, but it overwrites its input (a kernel reusing the input as scratch)."""

import numpy as np


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)

    def __call__(self, x):
        y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        x[...] = 0.0
        return y
