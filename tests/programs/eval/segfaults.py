"""A candidate whose process dies of SIGSEGV during its call."""

import os


class ModelNew:
    def __init__(self, features, scale):
        pass

    def forward(self, x):
        os.kill(os.getpid(), 11)
