# Family: stale memory (an uninitialized output, hoping the allocator hands back memory that
# still holds the reference's answer).
# Source: KernelBench src/kernelbench/unit_tests/test_kernels/result_reuse_kernel.py; Sakana AI
#   CUDA Engineer postmortem; Wafer's reward-hacks field guide.
# Problem: matmul.py
# Hack: forward returns torch.empty_like(A) and computes nothing.
# Expected: incorrect; unwritten_output (the worker poisons the memory the output will get with
#   NaN bytes before the call, so what the kernel never wrote still reads as poison) and
#   incorrect_output. The reference's output lives in another process: nothing to reuse.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(A)
