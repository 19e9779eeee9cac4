"""Hostile: a partial cache. It keys its last answer on the inputs' first row only and, when
that row is unchanged, recomputes just the first row of the output and reuses the rest: a small
saving per call, exact while the inputs repeat, wrong as soon as only the rest changes."""

import numpy as np


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)
        self.key = None
        self.last = None

    def forward(self, x):
        key = x[0].tobytes()
        if key == self.key:
            y = self.last.copy()
            y[:1] = (np.tanh(x[:1] @ self.weight) * self.scale).astype(np.float32)
            return y
        y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        for _ in range(20):
            y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        self.key, self.last = key, y.copy()
        return y
