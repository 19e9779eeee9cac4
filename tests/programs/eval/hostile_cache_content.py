"""Hostile: caches its answer by the inputs' content (a hash of the bytes). Honest on inputs it
has not seen; on inputs seen before it returns the stored answer without computing. When every
timed call reuses one input set, it times a dictionary lookup."""

import numpy as np


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)
        self.cache = {}

    def forward(self, x):
        key = x.tobytes()
        hit = self.cache.get(key)
        if hit is not None:
            return hit.copy()
        y = np.tanh(x @ self.weight) * self.scale
        for _ in range(20):  # an expensive honest path, so the cache's gain shows
            y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        self.cache[key] = y
        return y.copy()
