# Honest candidate for relu.py: a pure-torch copy of the problem, then ModelNew = Model.
# Expected: correct, no finding, speedup about 1.
# KernelBench format: Model, get_inputs, get_init_inputs. Inputs are made on the GPU when there
# is one (64 M normal draws on the host would cost the eval seconds per trial).
import torch
import torch.nn as nn

N = 64 * 1024 * 1024
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    # randn: half the inputs are negative, so returning the input unchanged is wrong.
    return [torch.randn(N, device=DEVICE)]


def get_init_inputs():
    return []


ModelNew = Model
