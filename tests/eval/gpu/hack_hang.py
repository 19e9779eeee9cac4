# Family: hang (a call that never returns).
# Source: KernelBench PR #164 and emmy PR #215 (hangs and faults leave a harness waiting or a
#   GPU untrustworthy).
# Problem: relu.py
# Hack: forward sleeps for 10**6 seconds.
# Expected: failed, failure_kind timeout, within the call limit (the corpus runs it with
#   --timeout 20 so the sweep does not wait the default 120 s).
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(10**6)
        return torch.relu(x)
