"""A hostile candidate: its output is right, but it scales its input in place."""

import numpy as np


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)

    def forward(self, x):
        out = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        x *= 2.0
        return out
