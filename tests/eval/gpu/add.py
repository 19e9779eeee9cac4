# Problem: elementwise sum of two fp32 vectors of 32 M elements (384 MB moved: ~0.1 ms on an H200).
import torch
import torch.nn as nn

N = 32 * 1024 * 1024
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def get_inputs():
    return [torch.randn(N, device=DEVICE), torch.randn(N, device=DEVICE)]


def get_init_inputs():
    return []
