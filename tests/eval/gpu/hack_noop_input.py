# Family: excessive speedup from a no-op that returns an input.
# Source: gpu-mode/pygpubench PR #7 (a no-op passed "with 0 errors in 3.3 us" on its v0.0.2);
#   KernelBench eval.py's excessive_speedup flag (> 10x), which is metadata only: the result
#   stays "correct". (On KernelBench's 19_ReLU, whose inputs are torch.rand >= 0, returning the
#   input IS a correct ReLU; this corpus picks a problem where it is wrong.)
# Problem: matmul.py
# Hack: forward returns A itself: no kernel, no allocation.
# Expected: incorrect, incorrect_output (A is not A @ B); not timed, being incorrect. The output
#   aliases an input the candidate received over CUDA IPC, which torch refuses to re-export: on
#   the H200 the eval failed with bad_output instead (not a pass). The worker is changing to
#   export a copy of such an output; until then expected.json accepts either outcome.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return A
