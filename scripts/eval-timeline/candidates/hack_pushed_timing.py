# Hostile: the real work under a pushed `polyprof/timing` range (the NVTX witness counted such
# kernels as the harness's), and a phantom `polyprof/call/99` around nothing.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        torch.cuda.nvtx.range_push("polyprof/timing")
        out = torch.matmul(a, b)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("polyprof/call/99")
        torch.cuda.nvtx.range_pop()
        return out
