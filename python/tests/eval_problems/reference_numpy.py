"""A KernelBench-format numpy problem: y = tanh(x @ W) * scale, W drawn at construction (so the
candidate's weights match only under the same init seed). Its output is 512 bytes: numpy keeps
freed buffers that small in its own cache, which is what the poison test relies on."""

import sys

import numpy as np

BATCH, FEATURES = 8, 16


class Model:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)

    def forward(self, x):
        # The worker imports torch only for problems that use it.
        if "torch" in sys.modules:
            raise RuntimeError("torch was imported into a numpy problem's worker")
        return (np.tanh(x @ self.weight) * self.scale).astype(np.float32)


def get_inputs():
    return [np.random.randn(BATCH, FEATURES).astype(np.float32)]


def get_init_inputs():
    return [FEATURES, 0.5]
