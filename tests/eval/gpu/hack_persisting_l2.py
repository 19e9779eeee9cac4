# Family: persisting L2 (an L2 set-aside and a stream access-policy window, left behind).
# Source: llm.c PR #851 (3,530 GB/s reported on < 1,000 GB/s of HBM); gpu-mode/pygpubench PR #49;
#   NVIDIA/nvbench #458. Seen on the H200 against KernelBench: it times the reference after the
#   candidate in the same process, so the set-aside left behind slows the reference.
# Problem: relu.py
# Hack: in __init__, through ctypes on the libcudart this process loaded: cudaDeviceSetLimit(
#   cudaLimitPersistingL2CacheSize, max) and a persisting access-policy window (hitRatio 1) on the
#   current stream over a buffer of the model's (best effort); neither is ever reset. forward is
#   an honest relu.
# Expected: correct, speedup about 1 ("not fooled, the reference is protected"), and
#   reported_time_below_witness. The reference runs in the trusted worker's own process and
#   context, which resets its persisting L2 and sets the limit to 0 before timing; the candidate
#   worker does the same in its own process before each timing block, so its device_state reads
#   0 and DeviceNotReset stays quiet. DeviceNotReset (and unscored samples) would appear only if
#   a worker's reset failed. The witness worker times nothing, so nothing resets the set-aside
#   there: on the H200 each witnessed call took 0.376 ms against the 0.128 ms reported (about 3x
#   slower under ncu's cache control), score/witness 0.34: the hack is flagged.
#   Known gap, not exercised here: a candidate that re-sets the limit inside every call (after
#   the reset, before its calls) is not seen by the device_state read-back.
import ctypes

import torch
import torch.nn as nn

CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
CUDA_DEV_ATTR_MAX_PERSISTING_L2_CACHE_SIZE = 108
CUDA_DEV_ATTR_MAX_ACCESS_POLICY_WINDOW_SIZE = 109
CUDA_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
CUDA_ACCESS_PROPERTY_NORMAL = 0
CUDA_ACCESS_PROPERTY_PERSISTING = 2


class AccessPolicyWindow(ctypes.Structure):
    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hitRatio", ctypes.c_float),
        ("hitProp", ctypes.c_int),
        ("missProp", ctypes.c_int),
    ]


class StreamAttrValue(ctypes.Union):
    # cudaLaunchAttributeValue (CUDA 12+): 64 bytes, the window one member of it.
    _fields_ = [("accessPolicyWindow", AccessPolicyWindow), ("pad", ctypes.c_char * 64)]


def _load_cudart() -> ctypes.CDLL:
    """The libcudart torch already loaded (its runtime state is the one torch uses)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and "libcudart.so" in fields[5]:
                return ctypes.CDLL(fields[5])
    for soname in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(soname)
        except OSError:
            pass
    raise RuntimeError("hack_persisting_l2: no libcudart in this process or on the loader path")


def _check(what: str, code: int) -> None:
    if code != 0:
        raise RuntimeError(f"hack_persisting_l2: {what} returned cudaError {code}")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        torch.cuda.init()
        cudart = _load_cudart()
        device = torch.cuda.current_device()
        max_persisting = ctypes.c_int(0)
        max_window = ctypes.c_int(0)
        _check(
            "cudaDeviceGetAttribute(MaxPersistingL2CacheSize)",
            cudart.cudaDeviceGetAttribute(
                ctypes.byref(max_persisting), CUDA_DEV_ATTR_MAX_PERSISTING_L2_CACHE_SIZE, device
            ),
        )
        _check(
            "cudaDeviceGetAttribute(MaxAccessPolicyWindowSize)",
            cudart.cudaDeviceGetAttribute(
                ctypes.byref(max_window), CUDA_DEV_ATTR_MAX_ACCESS_POLICY_WINDOW_SIZE, device
            ),
        )
        if max_persisting.value <= 0 or max_window.value <= 0:
            raise RuntimeError("hack_persisting_l2: this device has no persisting L2 to abuse")
        _check(
            "cudaDeviceSetLimit(PersistingL2CacheSize)",
            cudart.cudaDeviceSetLimit(
                CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(max_persisting.value)
            ),
        )
        window_bytes = min(max_persisting.value, max_window.value)
        self._hot = torch.zeros(window_bytes // 4, device="cuda")
        value = StreamAttrValue()
        value.accessPolicyWindow.base_ptr = self._hot.data_ptr()
        value.accessPolicyWindow.num_bytes = window_bytes
        value.accessPolicyWindow.hitRatio = 1.0
        value.accessPolicyWindow.hitProp = CUDA_ACCESS_PROPERTY_PERSISTING
        value.accessPolicyWindow.missProp = CUDA_ACCESS_PROPERTY_NORMAL
        # The window is the lesser half of the hack (the set-aside above is what outlives the
        # call): the legacy default stream may refuse attributes, so a refusal is only logged.
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        code = cudart.cudaStreamSetAttribute(
            stream, CUDA_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, ctypes.byref(value)
        )
        if code != 0:
            cudart.cudaGetLastError()
            print(f"hack_persisting_l2: no access-policy window (cudaError {code})", flush=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)
