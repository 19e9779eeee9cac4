"""A KernelBench-format numpy problem for the eval tests: y = tanh(x @ W) * scale, W drawn at
construction under the init seed (so the candidate's weights match only under the same seed)."""

import numpy as np

BATCH, FEATURES = 32, 64


class Model:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)

    def forward(self, x):
        return (np.tanh(x @ self.weight) * self.scale).astype(np.float32)


def get_inputs():
    return [np.random.randn(BATCH, FEATURES).astype(np.float32)]


def get_init_inputs():
    return [FEATURES, 0.5]
