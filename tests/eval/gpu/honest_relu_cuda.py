# Honest candidate for relu.py: one inline CUDA kernel (relu_kernel) on torch's current stream
# (the timing captures calls in CUDA graphs on a side stream: a launch on the legacy default
# stream would break the capture).
# Expected: correct, no finding; the witness sees relu_kernel inside every call (coverage 1).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "relu_forward needs a contiguous fp32 CUDA tensor");
    auto y = torch::empty_like(x);
    long long n = x.numel();
    const int threads = 256;
    const long long blocks = (n + threads - 1) / threads;
    relu_kernel<<<(unsigned int)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

CPP_SOURCE = "torch::Tensor relu_forward(torch::Tensor x);"

relu_module = load_inline(
    name="polyprof_corpus_honest_relu",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["relu_forward"],
    extra_cuda_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_module.relu_forward(x.contiguous())
