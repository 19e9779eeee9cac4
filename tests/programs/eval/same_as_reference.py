"""An honest candidate identical to reference.py, for the speedup of an identical kernel."""

import numpy as np


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)

    def forward(self, x):
        return (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
