# Honest kernel, launched on the legacy default stream (`<<<grid, block>>>` with no stream), as
# many KernelBench candidates do: it runs, but outside a CUDA graph captured on a side stream.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu_cuda(torch::Tensor x) {
  auto y = torch::empty_like(x);
  long n = x.numel();
  relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
CPP = "torch::Tensor relu_cuda(torch::Tensor x);"
ext = load_inline(name="pp_relu_inline_legacy", cpp_sources=CPP, cuda_sources=CUDA, functions=["relu_cuda"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_cuda(x)
