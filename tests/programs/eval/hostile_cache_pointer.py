"""Hostile: caches its answer by the input's data pointer (numpy's __array_interface__), the
kind of cache seen keyed on data_ptr/id() in public leaderboards. Cheaper than hashing; wrong
whenever new inputs land at an old address."""

import numpy as np


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)
        self.cache = {}

    def forward(self, x):
        key = (x.__array_interface__["data"][0], x.shape)
        hit = self.cache.get(key)
        if hit is not None:
            return hit.copy()
        y = np.tanh(x @ self.weight) * self.scale
        for _ in range(20):
            y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        self.cache[key] = y
        return y.copy()
