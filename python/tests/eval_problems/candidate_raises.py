"""Raises on every call."""


class ModelNew:
    def __init__(self, features, scale):
        pass

    def __call__(self, x):
        raise RuntimeError("the candidate's kernel gave up")
