# Hostile: stops the profiler around its real kernel (cudaProfilerStop), so a work pass windowed
# by cudaProfilerStart/Stop counts none of its work.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        torch.cuda.profiler.stop()
        out = torch.matmul(a, b)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        return out
