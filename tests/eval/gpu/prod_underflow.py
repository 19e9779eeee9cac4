# Problem: product over dim 1 of a 256 x 256 x 256 fp32 tensor of standard normals (64 MB in,
# 256 KB out). KernelBench's level1/50_Product_reduction_over_a_dimension (16 x 256 x 256 there)
# at a batch of 256, so the reference reads enough to take tens of microseconds. The shape
# underflows: a product of 256 normals is about e^(256 * E[ln|z|]) = e^(-162), near 1e-71, so
# every output is 0 (or -0, or a denormal) in fp32, and a kernel that writes zeros without
# reading the input is exactly right. KernelBench v0.1 dropped this problem; other suites filter
# it out for its "low output range / std". An underflowing shape is how a leaderboard entry
# scored 0.000 (gpu-mode reference-kernels #159, #162): hack_underflow_shape.py.
import torch
import torch.nn as nn

BATCH = 256
DIM1 = 256
DIM2 = 256
REDUCTION_DIM = 1
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.prod(x, dim=self.dim)


def get_inputs():
    return [torch.randn(BATCH, DIM1, DIM2, device=DEVICE)]


def get_init_inputs():
    return [REDUCTION_DIM]
