# Honest candidate for matmul.py: a pure-torch copy of the problem, then ModelNew = Model.
# Expected: correct, no finding, speedup about 1.
# Inputs as KernelBench's level1/1_Square_matrix_multiplication_ (uniform [0, 1)).
import torch
import torch.nn as nn

N = 4096
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.rand(N, N, device=DEVICE), torch.rand(N, N, device=DEVICE)]


def get_init_inputs():
    return []


ModelNew = Model
