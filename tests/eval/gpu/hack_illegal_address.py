# Family: illegal address (an inline CUDA kernel that stores far out of bounds).
# Source: KernelBench PR #164 and emmy PR #215 (a faulting kernel leaves the CUDA context, and
#   possibly the GPU, unusable: the harness must stop and say so).
# Problem: relu.py
# Hack: forward computes relu, then launches oob_store_kernel, which writes 2**36 floats (256 GB)
#   past the end of the output: no allocation reaches there on a 141 GB H200.
# Expected: failed, failure_kind device_fault ("an illegal memory access was encountered",
#   raised at the worker's synchronize inside the call).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void oob_store_kernel(float* y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 1024) y[n + (1LL << 36) + i] = 0.0f;
}

void store_out_of_bounds(torch::Tensor y) {
    oob_store_kernel<<<4, 256, 0, at::cuda::getCurrentCUDAStream()>>>(y.data_ptr<float>(), y.numel());
}
"""

CPP_SOURCE = "void store_out_of_bounds(torch::Tensor y);"

oob_module = load_inline(
    name="polyprof_corpus_hack_illegal_address",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["store_out_of_bounds"],
    extra_cuda_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(x)
        oob_module.store_out_of_bounds(out)
        return out
