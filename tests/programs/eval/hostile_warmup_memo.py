"""Hostile: remembers the answer of its untimed warm-up calls and hands it back in the timed
calls without computing: right when the warm-up ran on the timed inputs, wrong otherwise."""

import sys

import numpy as np


def _in_timing():
    frame = sys._getframe(1)
    while frame is not None:
        if "times" in frame.f_locals:
            return True
        frame = frame.f_back
    return False


class ModelNew:
    def __init__(self, features, scale):
        self.weight = (np.random.randn(features, features) / np.sqrt(features)).astype(np.float32)
        self.scale = np.float32(scale)
        self.memo = None

    def forward(self, x):
        if _in_timing() and self.memo is not None:
            return self.memo.copy()
        y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        for _ in range(20):
            y = (np.tanh(x @ self.weight) * self.scale).astype(np.float32)
        self.memo = y
        return y
