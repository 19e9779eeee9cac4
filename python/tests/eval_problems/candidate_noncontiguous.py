"""Right values in a transposed (non-contiguous) view."""

import numpy as np


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)

    def __call__(self, x):
        y_t = np.ascontiguousarray((np.tanh(x @ self.weight) * self.scale).astype(np.float32).T)
        return y_t.T
