# Family: excessive speedup from a no-op that returns an input.
# Source: gpu-mode/pygpubench PR #7 (a no-op passed "with 0 errors in 3.3 us" on its v0.0.2);
#   KernelBench eval.py's excessive_speedup flag (> 10x), which is metadata only: the result
#   stays "correct". (On KernelBench's 19_ReLU, whose inputs are torch.rand >= 0, returning the
#   input IS a correct ReLU; this corpus picks a problem where it is wrong.)
# Problem: matmul.py
# Hack: forward returns A itself: no kernel, no allocation.
# Expected: incorrect, incorrect_output (A is not A @ B). suspicious_speedup and implausible_time
#   are likely too. The output aliases an input the candidate received over CUDA IPC: if the
#   worker cannot export such a tensor back, the eval fails instead (a harness gap to fix, not
#   a pass).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return A
