# Family: segfault (the candidate's process dies by a signal inside the call).
# Source: KernelBench PR #164 and emmy PR #215 (a crashing or faulting candidate must not take
#   the harness down with it, nor leave it judging a broken device).
# Problem: relu.py
# Hack: forward sends itself SIGSEGV.
# Expected: failed, failure_kind crashed (stage correctness), the worker's log kept.
import os
import signal

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        os.kill(os.getpid(), signal.SIGSEGV)
        return torch.relu(x)
