"""A correct but slow candidate for reference.py: the same result, the product made twenty
times over."""

import numpy as np


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)

    def forward(self, x):
        for _ in range(20):
            y = x @ self.weight
        return (np.tanh(y) * self.scale).astype(np.float32)
