"""The eval worker: runs one side of ``polyprof eval`` (the trusted reference or the candidate)
and answers the orchestrator's requests on a Unix socket. docs/eval-harness.md is the protocol.

polyprof writes this file and ``polyprof_timing.py`` into an eval's ``harness/`` directory and
runs ``python3 harness/polyprof_eval_worker.py --socket PATH --role trusted|candidate --source
FILE.py --device cuda|cpu``. Standalone on purpose: the standard library, plus torch or numpy
only when the problem uses them (a numpy problem runs where torch is not installed). Arrays never
cross as pickles: CUDA tensors as IPC handle fields, host arrays as raw bytes, other arguments as
JSON values.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import hashlib
import importlib.util
import json
import math
import os
import platform
import random
import re
import socket
import struct
import sys
import traceback
from typing import Any, Callable, Dict, Iterator, List, NoReturn, Optional, Tuple


# Isolated (-I) workers ignore PYTHONDONTWRITEBYTECODE: no __pycache__ in the harness folder.
sys.dont_write_bytecode = True

def _load_timing() -> Any:
    """polyprof_timing from beside this file, by path: the worker runs isolated (``python -I``),
    so no folder, this one included, is searched for modules a candidate could place there."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "polyprof_timing.py")
    if not os.path.isfile(path):
        import polyprof_timing  # the Python package's copy, imported as a package module

        return polyprof_timing
    spec = importlib.util.spec_from_file_location("polyprof_timing", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    sys.modules["polyprof_timing"] = module
    spec.loader.exec_module(module)
    return module


_timing = _load_timing()
time_call, time_call_host, time_calls_host = _timing.time_call, _timing.time_call_host, _timing.time_calls_host

#: Largest header accepted (bytes): a header holds specs, never array data.
MAX_HEADER_BYTES = 64 * 2**20
#: Elements per chunk when statistics and comparisons run over a device array, so the float64
#: temporaries stay bounded (128 MiB each) whatever the array's size, while each of a chunk's
#: kernels still has enough elements to keep the GPU busy.
CHUNK_ELEMENTS = 1 << 24
#: Elements per chunk for a host array (numpy, a CPU tensor): a chunk's float64 temporaries (512
#: KiB) stay in the CPU's cache between the comparison's elementwise steps, which made the host
#: comparison about twice as fast as chunks of CHUNK_ELEMENTS.
HOST_CHUNK_ELEMENTS = 1 << 16
#: Exit status after a device fault: the CUDA context is unusable, the orchestrator ends the eval.
EXIT_DEVICE_FAULT = 3
#: Exit status after a broken protocol (a malformed frame: nothing can be answered any more).
EXIT_PROTOCOL = 2
#: Exit status of a build worker whose import of the candidate failed (its traceback on stderr).
EXIT_BUILD_FAILED = 4
#: The build worker's first line on stderr (polyprof reads it: the interpreter ran this script).
BUILD_STARTED = "polyprof build worker: started"
#: Module names the sources are loaded under (fixed, so neither side can guess the other's).
MODULE_NAMES = {"trusted": "polyprof_reference", "candidate": "polyprof_candidate"}
#: The class each role builds.
MODEL_CLASSES = {"trusted": "Model", "candidate": "ModelNew"}
#: Modulus of the position weights of the CUDA digest (a prime below 2**16: weights stay exact).
DIGEST_WEIGHT_MODULUS = 65521
#: cudaLimitPersistingL2CacheSize in the CUDA runtime's enum cudaLimit.
CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06

#: Exception text of a CUDA fault: after one, the process's context is unusable.
DEVICE_FAULT_TEXT = re.compile(
    r"illegal memory access|unspecified launch failure|device-side assert|illegal instruction"
    r"|misaligned address|CUDA error: ECC|uncorrectable ECC|an illegal address|hardware stack error"
    r"|cudaErrorIllegalAddress|cudaErrorLaunchFailure|cudaErrorAssert|CUDA_ERROR_ILLEGAL_ADDRESS"
    r"|CUDA_ERROR_LAUNCH_FAILED",
    re.IGNORECASE,
)
#: Exception text of a failed build (an inline extension compiled at construction).
COMPILE_ERROR_TEXT = re.compile(r"Error building extension|CompilationError|nvcc|ninja", re.IGNORECASE)
#: Dtype names accepted from the wire (letters, digits, underscores: never an attribute path).
DTYPE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class WorkerError(Exception):
    """A request that failed, answered as ``{"ok": false, "error": {...}}``."""

    def __init__(self, kind: str, message: str, trace: Optional[str] = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.trace = trace

    def to_json(self) -> Dict[str, Any]:
        error: Dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.trace:
            error["traceback"] = self.trace[-16000:]
        return error


class ProtocolError(WorkerError):
    def __init__(self, message: str):
        super().__init__("protocol", message)


def is_device_fault(error: BaseException) -> bool:
    return bool(DEVICE_FAULT_TEXT.search(f"{type(error).__name__}: {error}"))


def user_error(error: BaseException, kind: str = "raised") -> WorkerError:
    """A WorkerError for an exception raised by the source's code (or by the device under it)."""
    if is_device_fault(error):
        kind = "device_fault"
    message = f"{type(error).__name__}: {error}"
    return WorkerError(kind, message, traceback.format_exc())


# ---------------------------------------------------------------------------------------------
# Framing: a 4-byte big-endian header length, the JSON header, then header.payload_bytes bytes.


def recv_exact(sock: socket.socket, size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            raise EOFError(f"connection closed with {size - got} of {size} bytes unread")
        got += n
    return buffer


def read_message(sock: socket.socket) -> Tuple[Dict[str, Any], bytearray]:
    try:
        first = sock.recv(4, socket.MSG_WAITALL)
    except ConnectionResetError:
        first = b""
    if not first:
        raise EOFError("connection closed")
    if len(first) < 4:
        first = bytes(first) + bytes(recv_exact(sock, 4 - len(first)))
    (length,) = struct.unpack(">I", first)
    if length > MAX_HEADER_BYTES:
        raise ProtocolError(f"header of {length} bytes is over the {MAX_HEADER_BYTES} limit")
    try:
        header = json.loads(recv_exact(sock, length).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"header is not UTF-8 JSON: {e}") from e
    if not isinstance(header, dict):
        raise ProtocolError("header is not a JSON object")
    payload_bytes = header.get("payload_bytes") or 0
    if not isinstance(payload_bytes, int) or payload_bytes < 0:
        raise ProtocolError(f"payload_bytes must be an integer >= 0, got {payload_bytes!r}")
    payload = recv_exact(sock, payload_bytes) if payload_bytes else bytearray()
    return header, payload


def write_message(sock: socket.socket, header: Dict[str, Any], chunks: List[bytes]) -> None:
    total = sum(len(c) for c in chunks)
    if total:
        header = dict(header, payload_bytes=total)
    data = json.dumps(header, allow_nan=False, separators=(",", ":")).encode("utf-8")
    sock.sendall(struct.pack(">I", len(data)) + data)
    for chunk in chunks:
        sock.sendall(chunk)


# ---------------------------------------------------------------------------------------------
# Frameworks, imported lazily: whatever the source imported is in sys.modules.


def loaded_torch() -> Any:
    return sys.modules.get("torch")


def loaded_numpy() -> Any:
    return sys.modules.get("numpy")


def shares_storage(a: Any, b: Any) -> bool:
    """Whether torch tensors ``a`` and ``b`` live in the same storage (one is a view of the other)."""
    if not (is_tensor(a) and is_tensor(b)):
        return False
    return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())


def need_torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise WorkerError("protocol", "a torch array arrived but torch is not installed here") from e
    return torch


def need_numpy() -> Any:
    try:
        import numpy
    except ImportError as e:
        raise WorkerError("protocol", "a numpy array arrived but numpy is not installed here") from e
    return numpy


def is_tensor(x: Any) -> bool:
    torch = loaded_torch()
    return torch is not None and isinstance(x, torch.Tensor)


def is_ndarray(x: Any) -> bool:
    np = loaded_numpy()
    return np is not None and isinstance(x, np.ndarray)


def is_array(x: Any) -> bool:
    return is_tensor(x) or is_ndarray(x)


def framework_of(values: List[Any]) -> str:
    """torch if any value is a torch tensor, else numpy if any is an ndarray, else python."""
    if any(is_tensor(v) for v in values):
        return "torch"
    if any(is_ndarray(v) for v in values):
        return "numpy"
    return "python"


def seed_everything(seed: int) -> None:
    """Seed every generator a problem may draw from: Python's, numpy's and torch's (CPU, CUDA)."""
    random.seed(seed)
    np = loaded_numpy()
    if np is not None:
        np.random.seed(seed % 2**32)
    torch = loaded_torch()
    if torch is not None:
        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)


def dtype_name(x: Any) -> str:
    if is_tensor(x):
        return str(x.dtype).replace("torch.", "")
    return str(x.dtype.name)


def item_size(x: Any) -> int:
    return int(x.element_size()) if is_tensor(x) else int(x.itemsize)


def numel(x: Any) -> int:
    return int(x.numel()) if is_tensor(x) else int(x.size)


def shape_of(x: Any) -> List[int]:
    return [int(s) for s in x.shape]


def stride_of(x: Any) -> List[int]:
    """Strides in elements (numpy's are in bytes)."""
    if is_tensor(x):
        return [int(s) for s in x.stride()]
    size = item_size(x)
    return [int(s) // size if size else 0 for s in x.strides]


def is_cuda(x: Any) -> bool:
    return is_tensor(x) and x.is_cuda


def contiguous(x: Any) -> Any:
    if is_tensor(x):
        return x.detach().contiguous()
    np = loaded_numpy()
    a = np.ascontiguousarray(x)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return a


def clone(x: Any) -> Any:
    if is_tensor(x):
        return x.detach().clone()
    if is_ndarray(x):
        return x.copy()
    return x


def synchronize() -> None:
    torch = loaded_torch()
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def flat_bytes(x: Any) -> Any:
    """A contiguous array's bytes as a flat uint8 array of the same framework (no copy)."""
    if is_tensor(x):
        torch = loaded_torch()
        return x.reshape(-1).view(torch.uint8)
    np = loaded_numpy()
    return x.reshape(-1).view(np.uint8)


def host_bytes(x: Any) -> bytes:
    """A contiguous host array's bytes (a copy)."""
    if is_tensor(x):
        n = numel(x) * item_size(x)
        return ctypes.string_at(x.data_ptr(), n) if n else b""
    return bytes(x.tobytes())


def chunks(n: int, step: int = CHUNK_ELEMENTS) -> Iterator[Tuple[int, int]]:
    start = 0
    while start < n:
        yield start, min(n, start + step)
        start += step


def chunk_elements(x: Any) -> int:
    """The chunk for statistics and comparisons over x: small on the host (cache), large on a
    device (kernel size). A CUDA tensor's digest keeps CHUNK_ELEMENTS whatever this says: its
    sums are added chunk by chunk, so the chunk is part of what the digest means."""
    return CHUNK_ELEMENTS if is_cuda(x) else HOST_CHUNK_ELEMENTS


def all_ones_words(raw: Any, itemsize: int) -> Any:
    """Per element of a flat byte array (itemsize bytes an element): whether all its bytes are
    0xFF (the poison the orchestrator fills with). Read as one signed integer per element where
    the size allows (an element of all-one bits is -1): one comparison instead of a per-byte test
    and a reduction along a four- or eight-byte row, which dominated the host comparison."""
    signed = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}.get(itemsize)
    if signed is not None:
        try:
            if is_tensor(raw):
                return raw.view(getattr(loaded_torch(), signed)) == -1
            return raw.view(signed) == -1
        except (RuntimeError, ValueError, TypeError):  # an offset the wider view refuses
            pass
    rows = raw.reshape(-1, itemsize) == 255
    return rows.all(dim=1) if is_tensor(rows) else rows.all(axis=1)


class Ops:
    """The few array operations statistics and comparisons need, for torch or numpy."""

    def __init__(self, x: Any):
        self.torch = is_tensor(x)
        self.xp = loaded_torch() if self.torch else loaded_numpy()

    def quiet(self) -> Any:
        """numpy's warnings about NaN and infinity off: they are data here."""
        return contextlib.nullcontext() if self.torch else self.xp.errstate(all="ignore")

    def kind(self, x: Any) -> str:
        """b (bool), i (integer), f (floating), c (complex)."""
        if self.torch:
            if x.dtype == self.xp.bool:
                return "b"
            if x.dtype.is_complex:
                return "c"
            return "f" if x.dtype.is_floating_point else "i"
        return "i" if x.dtype.kind == "u" else x.dtype.kind

    def f64(self, x: Any) -> Any:
        if self.torch:
            return x.to(self.xp.complex128 if x.dtype.is_complex else self.xp.float64)
        return x.astype(self.xp.complex128 if x.dtype.kind == "c" else self.xp.float64)

    # The running totals below stay where they were computed (a CUDA tensor's on the device) and
    # are read once after the last chunk: reading one per chunk would wait for the GPU each time.

    def tally(self, mask: Any) -> Any:
        """The number of true elements, not read back."""
        return self.xp.count_nonzero(mask)

    def masked_max(self, x: Any, keep: Any) -> Any:
        """The largest element where keep holds, -inf where none does (no compaction, no read)."""
        return self.xp.where(keep, x, -math.inf).max()

    def masked_min(self, x: Any, keep: Any) -> Any:
        return self.xp.where(keep, x, math.inf).min()

    def sum64(self, x: Any) -> Any:
        """The sum accumulated in float64, without a float64 copy of x."""
        return x.sum(dtype=self.xp.float64)

    def nan_sum64(self, x: Any) -> Any:
        """sum64 over the elements that are not NaN."""
        return self.xp.nansum(x, dtype=self.xp.float64)

    def larger(self, running: Any, value: Any) -> Any:
        return value if running is None else self.xp.maximum(running, value)

    def smaller(self, running: Any, value: Any) -> Any:
        return value if running is None else self.xp.minimum(running, value)

    def size(self, x: Any) -> int:
        return int(x.numel()) if self.torch else int(x.size)

    def arange(self, start: int, stop: int, like: Any) -> Any:
        if self.torch:
            return self.xp.arange(start, stop, dtype=self.xp.float64, device=like.device)
        return self.xp.arange(start, stop, dtype=self.xp.float64)


def finite_or_none(value: Optional[float]) -> Optional[float]:
    return value if value is not None and math.isfinite(value) else None


def array_stats(x: Any) -> Dict[str, Any]:
    """min, max, mean over the elements that are not NaN (float64), the NaN count, a digest.
    Non-finite results (an infinite element) are null: JSON has no infinity."""
    x = contiguous(x)
    ops = Ops(x)
    kind = ops.kind(x)
    flat = x.reshape(-1)
    nan_count: Any = 0
    low: Any = None
    high: Any = None
    total: Any = 0.0
    counted: Any = 0
    with ops.quiet():
        for a, b in chunks(numel(x), chunk_elements(x)):
            chunk = flat[a:b]
            if kind == "c":
                nan_count = nan_count + ops.tally(ops.xp.isnan(chunk))
                continue
            # min and max in the element's own type (widening to float64 keeps the order, so
            # they are the same numbers); only the sum is carried in float64, without a float64
            # copy of the chunk.
            if kind == "f":
                nan = ops.xp.isnan(chunk)
                nans = ops.tally(nan)
                nan_count = nan_count + nans
                keep = ~nan
                low = ops.smaller(low, ops.masked_min(chunk, keep))
                high = ops.larger(high, ops.masked_max(chunk, keep))
                total = total + ops.nan_sum64(chunk)
                counted = counted + (ops.size(chunk) - nans)
            else:
                low = ops.smaller(low, chunk.min())
                high = ops.larger(high, chunk.max())
                total = total + ops.sum64(chunk)
                counted = counted + ops.size(chunk)
    counted = int(counted)
    return {
        "min": finite_or_none(float(low)) if counted else None,
        "max": finite_or_none(float(high)) if counted else None,
        "mean": finite_or_none(float(total) / counted) if counted else None,
        "nan_count": int(nan_count),
        "digest": digest(x),
    }


def digest(x: Any) -> str:
    """Hex sha256. Host arrays: of their bytes. CUDA tensors: of three float64 sums computed on
    the GPU over the bytes read as int32 words (uint8 when the size is not a multiple of 4):
    sum(w), sum(w*w) and sum(((i mod 65521) + 1) * w) for word i, with the dtype and shape; no
    copy to the host, and equal digests for equal bytes."""
    if not is_cuda(x):
        return hashlib.sha256(host_bytes(x)).hexdigest()
    torch = loaded_torch()
    ops = Ops(x)
    words = flat_bytes(x)
    if words.numel() % 4 == 0:
        try:
            words = words.view(torch.int32)
        except RuntimeError:  # a storage offset that is not 4-byte aligned: stay with bytes
            pass
    # float64 sums on the device, added chunk by chunk in the order a host float would be: the
    # same bits, read back once.
    plain = torch.zeros((), dtype=torch.float64, device=words.device)
    squares, weighted = plain.clone(), plain.clone()
    for a, b in chunks(int(words.numel())):
        w = words[a:b].to(torch.float64)
        weights = torch.remainder(ops.arange(a, b, w), DIGEST_WEIGHT_MODULUS) + 1
        plain = plain + w.sum()
        squares = squares + (w * w).sum()
        weighted = weighted + (w * weights).sum()
    sums = "|".join(repr(float(v)) for v in (plain, squares, weighted))
    text = f"cuda-sums|{dtype_name(x)}|{shape_of(x)}|{sums}"
    return hashlib.sha256(text.encode()).hexdigest()


def spec_of(x: Any, with_stats: bool = False) -> Dict[str, Any]:
    """An eval::evidence::TensorSpec."""
    if not is_array(x):
        return value_spec(x)
    spec: Dict[str, Any] = {
        "dtype": dtype_name(x),
        "shape": shape_of(x),
        "stride": stride_of(x),
        "nbytes": numel(x) * item_size(x),
    }
    if with_stats:
        spec["stats"] = array_stats(x)
    return spec


def json_value(x: Any) -> Any:
    """A non-array argument as JSON; tuples become lists (the spec's dtype keeps ``tuple``)."""
    np = loaded_numpy()
    if np is not None and isinstance(x, np.generic):
        x = x.item()
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"the value {x!r} cannot cross as JSON")
        return x
    if isinstance(x, (list, tuple)):
        return [json_value(v) for v in x]
    raise ValueError(f"a {type(x).__name__} cannot be sent between the workers (not an array, not a JSON value)")


def value_spec(x: Any) -> Dict[str, Any]:
    np = loaded_numpy()
    if np is not None and isinstance(x, np.generic):
        x = x.item()
    return {"dtype": type(x).__name__, "shape": [], "nbytes": 0, "value": json_value(x)}


def from_json_value(value: Any, dtype: Any) -> Any:
    if dtype == "tuple" and isinstance(value, list):
        return tuple(value)
    return value


# ---------------------------------------------------------------------------------------------
# Arrays on the wire.


class Outgoing:
    """Arrays of one answer: their wire dicts, the payload chunks, what must stay alive."""

    def __init__(self) -> None:
        self.chunks: List[bytes] = []
        self.size = 0
        self.keep: List[Any] = []
        self.notes: List[str] = []

    def add_bytes(self, data: bytes) -> int:
        offset = self.size
        self.chunks.append(data)
        self.size += len(data)
        return offset

    def array(self, x: Any, transport: str) -> Dict[str, Any]:
        if not is_array(x):
            return {**value_spec(x), "transport": "value"}
        if is_tensor(x):
            x = x.detach()
            if x.is_cuda and transport == "ipc":
                return self.ipc(x)
            if x.is_cuda:
                x = x.cpu()
        elif x.dtype.kind not in "biufc":
            raise ValueError(f"an array of dtype {x.dtype} cannot be sent (numbers and booleans only)")
        x = contiguous(x)
        wire = spec_of(x)
        wire.update(transport="bytes", framework="torch" if is_tensor(x) else "numpy")
        wire["offset"] = self.add_bytes(host_bytes(x))
        return wire

    def ipc(self, x: Any) -> Dict[str, Any]:
        storage = x.untyped_storage()
        (device, handle, size, offset, ref_handle, ref_offset, event, event_sync) = storage._share_cuda_()
        self.keep.append(x)
        wire = spec_of(x)
        wire.update(
            transport="ipc",
            framework="torch",
            ipc={
                "device": int(device),
                "handle": b64(handle),
                "storage_size": int(size),
                "storage_offset_bytes": int(offset),
                "ref_counter_handle": b64(ref_handle),
                "ref_counter_offset": int(ref_offset),
                "event_handle": b64(event),
                "event_sync_required": bool(event_sync),
                "tensor_offset": int(x.storage_offset()),
            },
        )
        return wire


def b64(data: Optional[bytes]) -> Optional[str]:
    return None if data is None else base64.b64encode(bytes(data)).decode("ascii")


def unb64(text: Any, field: str) -> Optional[bytes]:
    if text is None:
        return None
    if not isinstance(text, str):
        raise ProtocolError(f"ipc.{field} must be base64 text")
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as e:
        raise ProtocolError(f"ipc.{field} is not base64: {e}") from e


def wire_ints(value: Any, field: str, allow_negative: bool = False) -> List[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ProtocolError(f"{field} must be a list of integers")
    if not allow_negative and any(v < 0 for v in value):
        raise ProtocolError(f"{field} must hold no negative number")
    return value


def wire_int(value: Any, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ProtocolError(f"{field} must be an integer >= 0, got {value!r}")
    return value


def import_array(wire: Any, payload: bytearray, device: str) -> Any:
    """Rebuild one array (or value) from its wire dict: IPC fields or payload bytes, never a
    pickle. A size that does not add up is a protocol error, before any memory is touched."""
    if not isinstance(wire, dict):
        raise ProtocolError("an array on the wire must be a JSON object")
    transport = wire.get("transport")
    if transport == "value":
        return from_json_value(wire.get("value"), wire.get("dtype"))
    name = wire.get("dtype")
    if not isinstance(name, str) or not DTYPE_NAME.match(name):
        raise ProtocolError(f"dtype {name!r} is not a dtype name")
    shape = wire_ints(wire.get("shape"), "shape")
    count = math.prod(shape)
    if transport == "ipc":
        return import_ipc(wire, name, shape, count)
    if transport != "bytes":
        raise ProtocolError(f"transport must be ipc, bytes or value, got {transport!r}")
    offset = wire_int(wire.get("offset"), "offset")
    nbytes = wire_int(wire.get("nbytes"), "nbytes")
    if offset + nbytes > len(payload):
        raise ProtocolError(f"array bytes {offset}..{offset + nbytes} run past the {len(payload)}-byte payload")
    framework = wire.get("framework") or ("torch" if loaded_torch() is not None else "numpy")
    if framework == "torch":
        torch = need_torch()
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            raise ProtocolError(f"torch has no dtype {name!r}")
        size = torch.empty(0, dtype=dtype).element_size()
        if count * size != nbytes:
            raise ProtocolError(f"{nbytes} bytes do not hold {shape} of {name}")
        if count == 0:
            tensor = torch.empty(shape, dtype=dtype)
        else:
            tensor = torch.frombuffer(bytearray(payload[offset : offset + nbytes]), dtype=dtype).reshape(shape)
        return tensor.cuda() if device == "cuda" else tensor
    if framework != "numpy":
        raise ProtocolError(f"framework must be torch or numpy, got {framework!r}")
    np = need_numpy()
    try:
        dtype = np.dtype(name)
    except TypeError as e:
        raise ProtocolError(f"numpy has no dtype {name!r}") from e
    if dtype.kind not in "biufc":
        raise ProtocolError(f"dtype {name!r} is not a number or boolean dtype")
    if count * dtype.itemsize != nbytes:
        raise ProtocolError(f"{nbytes} bytes do not hold {shape} of {name}")
    return np.frombuffer(payload, dtype=dtype, count=count, offset=offset).reshape(shape).copy()


def refuse_foreign_frameworks(wires: Any, expected: str) -> None:
    """An output array must be of the trial's framework (the reference outputs'): a label the
    candidate sets cannot make the checker import (or rebuild with) another one."""
    if expected not in ("torch", "numpy") or not isinstance(wires, list):
        return
    for index, wire in enumerate(wires):
        if not isinstance(wire, dict) or wire.get("transport") == "value":
            continue
        framework = "torch" if wire.get("transport") == "ipc" else wire.get("framework")
        if framework != expected:
            raise WorkerError(
                "bad_output",
                f"output {index} says framework {framework!r}, but the trial's outputs are {expected}",
            )


def import_ipc(wire: Dict[str, Any], name: str, shape: List[int], count: int) -> Any:
    torch = need_torch()
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ProtocolError(f"torch has no dtype {name!r}")
    fields = wire.get("ipc")
    if not isinstance(fields, dict):
        raise ProtocolError("transport ipc needs the ipc fields")
    stride = wire_ints(wire.get("stride") or contiguous_stride(shape), "stride")
    if len(stride) != len(shape):
        raise ProtocolError("stride and shape differ in length")
    device = wire_int(fields.get("device"), "ipc.device")
    storage_size = wire_int(fields.get("storage_size"), "ipc.storage_size")
    tensor_offset = wire_int(fields.get("tensor_offset"), "ipc.tensor_offset")
    size = torch.empty(0, dtype=dtype).element_size()
    if count:
        last = tensor_offset + sum((s - 1) * st for s, st in zip(shape, stride))
        if (last + 1) * size > storage_size:
            raise ProtocolError(f"{shape} (stride {stride}, offset {tensor_offset}) of {name} runs past the {storage_size}-byte storage")
    handle = unb64(fields.get("handle"), "handle")
    if handle is None or storage_size == 0:
        return torch.empty_strided(shape, stride, dtype=dtype, device=f"cuda:{device}")
    torch.cuda._lazy_init()
    storage = torch.UntypedStorage._new_shared_cuda(
        device,
        handle,
        storage_size,
        wire_int(fields.get("storage_offset_bytes"), "ipc.storage_offset_bytes"),
        unb64(fields.get("ref_counter_handle"), "ref_counter_handle"),
        wire_int(fields.get("ref_counter_offset"), "ipc.ref_counter_offset"),
        unb64(fields.get("event_handle"), "event_handle"),
        bool(fields.get("event_sync_required")),
    )
    tensor = torch.empty(0, dtype=dtype, device=f"cuda:{device}").set_(storage, tensor_offset, shape, stride)
    torch.cuda.synchronize()
    return tensor


def contiguous_stride(shape: List[int]) -> List[int]:
    stride, step = [], 1
    for s in reversed(shape):
        stride.append(step)
        step *= max(s, 1)
    return list(reversed(stride))


def import_arrays(wires: Any, payload: bytearray, device: str, field: str) -> List[Any]:
    if not isinstance(wires, list):
        raise ProtocolError(f"{field} must be a list of arrays")
    return [import_array(w, payload, device) for w in wires]


# ---------------------------------------------------------------------------------------------
# Comparison (trusted side).


def same_bytes(a: Any, b: Any) -> bool:
    """Byte equality of two arrays (or values) of one framework."""
    if not is_array(a) or not is_array(b):
        if is_array(a) or is_array(b):
            return False
        return bool(json_value(a) == json_value(b))
    if is_tensor(a) != is_tensor(b) or dtype_name(a) != dtype_name(b) or shape_of(a) != shape_of(b):
        return False
    a, b = contiguous(a), contiguous(b)
    if is_tensor(a):
        torch = loaded_torch()
        if a.device != b.device:
            b = b.to(a.device)
        return bool(torch.equal(flat_bytes(a), flat_bytes(b)))
    return bool(loaded_numpy().array_equal(flat_bytes(a), flat_bytes(b)))


def compare_outputs(candidate: List[Any], reference: List[Any], atol: float, rtol: float) -> Dict[str, Any]:
    """An eval::evidence::Comparison of the candidate's outputs with the reference's.

    An element passes when |c - r| <= atol + rtol * |r| or c == r (equal infinities); a NaN
    passes only where the reference is NaN too. max_abs_diff and max_rel_diff are over the
    elements finite on both sides (rel: where the reference is not 0). An element is poisoned
    when all its bytes are 0xFF while the reference element's are not."""
    total = sum(numel(r) for r in reference if is_array(r))
    result: Dict[str, Any] = {
        "passed": False,
        "mismatched_elements": 0,
        "total_elements": total,
        "poisoned_elements": 0,
    }
    if len(candidate) != len(reference):
        result.update(mismatch="count", detail=f"{len(candidate)} outputs, the reference has {len(reference)}")
        return result
    mismatch: Optional[str] = None
    details: List[str] = []
    max_abs: Optional[float] = None
    max_rel: Optional[float] = None
    for index, (c, r) in enumerate(zip(candidate, reference)):
        kind = shape_or_dtype_mismatch(c, r)
        if kind is not None:
            mismatch = mismatch or kind
            details.append(f"output {index}: {describe(c)}, the reference {describe(r)}")
            continue
        if not is_array(r):
            if json_value(c) != json_value(r):
                mismatch = mismatch or "values"
                details.append(f"output {index}: {c!r}, the reference {r!r}")
            continue
        bad, poisoned, abs_diff, rel_diff = compare_values(c, r, atol, rtol)
        result["mismatched_elements"] += bad
        result["poisoned_elements"] += poisoned
        if bad:
            mismatch = mismatch or "values"
            details.append(f"output {index}: {bad} of {numel(r)} elements outside atol {atol} + rtol {rtol}")
        if abs_diff is not None:
            max_abs = abs_diff if max_abs is None else max(max_abs, abs_diff)
        if rel_diff is not None:
            max_rel = rel_diff if max_rel is None else max(max_rel, rel_diff)
    result["passed"] = mismatch is None
    if mismatch is not None:
        result["mismatch"] = mismatch
        result["detail"] = "; ".join(details)[:4000]
    if finite_or_none(max_abs) is not None:
        result["max_abs_diff"] = max_abs
    if finite_or_none(max_rel) is not None:
        result["max_rel_diff"] = max_rel
    return result


def describe(x: Any) -> str:
    if not is_array(x):
        return f"the value {x!r}"
    kind = "tensor" if is_tensor(x) else "ndarray"
    return f"{kind} {dtype_name(x)} {shape_of(x)}"


def shape_or_dtype_mismatch(c: Any, r: Any) -> Optional[str]:
    if is_array(c) != is_array(r):
        return "dtype"
    if not is_array(r):
        return None
    if shape_of(c) != shape_of(r):
        return "shape"
    if is_tensor(c) != is_tensor(r) or dtype_name(c) != dtype_name(r):
        return "dtype"
    return None


def compare_values(c: Any, r: Any, atol: float, rtol: float) -> Tuple[int, int, Optional[float], Optional[float]]:
    """(mismatched, poisoned, max abs diff, max rel diff) of two arrays of one shape and dtype."""
    c, r = contiguous(c), contiguous(r)
    if is_tensor(r) and c.device != r.device:
        c = c.to(r.device)
    ops = Ops(r)
    xp = ops.xp
    kind = ops.kind(r)
    itemsize = item_size(r)
    c_flat, r_flat = c.reshape(-1), r.reshape(-1)
    c_raw, r_raw = flat_bytes(c), flat_bytes(r)
    bad: Any = 0
    poisoned: Any = 0
    # The largest differences where both sides are finite (rel: and the reference not 0), -inf
    # while no element qualifies.
    abs_top: Any = None
    rel_top: Any = None
    with ops.quiet():
        for a, b in chunks(numel(r), chunk_elements(r)):
            cv, rv = ops.f64(c_flat[a:b]), ops.f64(r_flat[a:b])
            diff = xp.abs(cv - rv)
            scale = xp.abs(rv)
            finite_r = xp.isfinite(rv)
            if kind in "bi":
                ok = c_flat[a:b] == r_flat[a:b]
            else:
                # An infinite reference allows no tolerance (inf <= inf would pass -inf for inf).
                ok = ((diff <= atol + rtol * scale) & finite_r) | (cv == rv) | (xp.isnan(cv) & xp.isnan(rv))
            bad = bad + ops.tally(~ok)
            finite = xp.isfinite(cv) & finite_r
            abs_top = ops.larger(abs_top, ops.masked_max(diff, finite))
            rel_top = ops.larger(rel_top, ops.masked_max(diff / scale, finite & (rv != 0)))
            c_poison = all_ones_words(c_raw[a * itemsize : b * itemsize], itemsize)
            r_poison = all_ones_words(r_raw[a * itemsize : b * itemsize], itemsize)
            poisoned = poisoned + ops.tally(c_poison & ~r_poison)
    return int(bad), int(poisoned), top_or_none(abs_top), top_or_none(rel_top)


def top_or_none(running: Any) -> Optional[float]:
    """A running maximum read back: None where no element qualified (-inf) or none was seen."""
    if running is None:
        return None
    value = float(running)
    return None if value == -math.inf else value


# ---------------------------------------------------------------------------------------------
# Device state before timing.


def loaded_cudart_paths() -> List[str]:
    """The CUDA runtime libraries this process has mapped (torch's, an extension's)."""
    paths: List[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if "libcudart.so" in os.path.basename(path) and path not in paths:
                        paths.append(path)
    except OSError:
        pass
    return paths


def reset_device_state(device: str, framework: str) -> Optional[Dict[str, Any]]:
    """An eval::evidence::DeviceState: persisting L2 lines reset, the persisting L2 limit set to
    0 and read back, through the CUDA runtime the process loaded (so the same context). None for
    host timing: there is no device state, and none is judged."""
    if device != "cuda" or framework != "torch":
        return None
    synchronize()
    paths = loaded_cudart_paths()
    if not paths:
        return {
            "persisting_l2_reset": False,
            "note": "libcudart is not mapped in this process (linked statically?): persisting L2 not reset",
        }
    notes: List[str] = []
    reset_ok = True
    limit: Optional[int] = None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
            lib.cudaDeviceSetLimit.argtypes = [ctypes.c_int, ctypes.c_size_t]
            lib.cudaDeviceGetLimit.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
            rc = lib.cudaCtxResetPersistingL2Cache()
            rc_set = lib.cudaDeviceSetLimit(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE, 0)
            value = ctypes.c_size_t(0)
            rc_get = lib.cudaDeviceGetLimit(ctypes.byref(value), CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE)
        except (OSError, AttributeError) as e:
            reset_ok = False
            notes.append(f"{path}: {e}")
            continue
        reset_ok = reset_ok and rc == 0
        for what, code in (("cudaCtxResetPersistingL2Cache", rc), ("cudaDeviceSetLimit", rc_set), ("cudaDeviceGetLimit", rc_get)):
            if code != 0:
                notes.append(f"{os.path.basename(path)}: {what} returned {code}")
        if rc_get == 0:
            limit = max(limit or 0, int(value.value))
    synchronize()
    state: Dict[str, Any] = {"persisting_l2_reset": reset_ok}
    if limit is not None:
        state["persisting_l2_limit_bytes"] = limit
    if len(paths) > 1:
        notes.append(f"{len(paths)} CUDA runtimes loaded; each was reset")
    if notes:
        state["note"] = "; ".join(notes)
    return state


def short_method(method: str) -> str:
    """The evidence's method name for a polyprof_timing method description."""
    if method.startswith("cuda_graph"):
        return "graph_pairs"
    if method.startswith("events"):
        return "events"
    return method


# ---------------------------------------------------------------------------------------------
# The worker.


# ---------------------------------------------------------------------------------------------
# Marks on the GPU timeline (the scored pass runs under polyprof's CUPTI tracer).

#: Largest marker memset (bytes); the orchestrator draws each size below it.
MAX_MARK_BYTES = 1 << 20
#: The tracer's flush entry point (src/profilers/ncu/trace.c), found through the injection path.
TRACE_FLUSH = "polyprof_trace_flush"


class GpuMarks:
    """The harness's boundaries on the GPU's own timeline: a memset of a size the orchestrator
    drew for this request alone (``marks`` in the request, sent just in time), queued through the
    CUDA runtime the process mapped on the current stream. The tracer records every memset with
    its size and GPU timestamps, so polyprof finds where each request and each call began and
    ended on the GPU, whatever the candidate names or pushes. Around a request and a plain call
    the device is synchronized first, so work queued before the mark finished before it ran, and
    work the mark precedes started after it."""

    def __init__(self) -> None:
        self.lib: Any = None
        self.buffer: Any = None
        # The baseline's memsets write here, never into the marks' buffer (see `imitate`).
        self.imitation: Any = None
        self.flush_fn: Any = None
        self.tried = False

    def ready(self) -> bool:
        torch = loaded_torch()
        if torch is None or not torch.cuda.is_available():
            return False
        if not self.tried:
            self.tried = True
            paths = loaded_cudart_paths()
            if paths:
                try:
                    lib = ctypes.CDLL(paths[0])
                    lib.cudaMemsetAsync.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
                    self.lib = lib
                except (OSError, AttributeError):
                    self.lib = None
            injection = os.environ.get("CUDA_INJECTION64_PATH")
            if injection:
                try:
                    self.flush_fn = getattr(ctypes.CDLL(injection), TRACE_FLUSH)
                except (OSError, AttributeError):
                    self.flush_fn = None
            if self.lib is not None:
                self.buffer = torch.empty(MAX_MARK_BYTES, dtype=torch.uint8, device="cuda")
                self.imitation = torch.empty(MAX_MARK_BYTES, dtype=torch.uint8, device="cuda")
        return self.lib is not None and self.buffer is not None

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        torch = loaded_torch()
        stream = torch.cuda.current_stream().cuda_stream
        rc = self.lib.cudaMemsetAsync(ctypes.c_void_p(ptr), value, ctypes.c_size_t(nbytes), ctypes.c_void_p(stream))
        if rc != 0:
            raise RuntimeError(f"cudaMemsetAsync returned {rc}")

    def mark(self, nbytes: Optional[int], sync: bool = True) -> None:
        """Queue the marker memset of ``nbytes`` (nothing when the request carried none)."""
        if not nbytes or not self.ready():
            return
        nbytes = max(1, min(int(nbytes), MAX_MARK_BYTES))
        if sync:
            synchronize()
        self.memset(self.buffer.data_ptr(), 0, nbytes)
        if sync:
            synchronize()

    def imitate(self, nbytes: Optional[int]) -> None:
        """A memset as costly as the mark of ``nbytes`` but never a mark: 8 bytes shorter (every
        mark is a multiple of 16 bytes), of another value, into a buffer of its own. A timing
        block measures these outside any graph (``polyprof_timing._marks_ms``), so the marks'
        own time is not the call's; none runs inside a graph (see ``_time_graph_pairs``)."""
        if not nbytes or not self.ready():
            return
        size = max(1, min(int(nbytes), MAX_MARK_BYTES))
        self.memset(self.imitation.data_ptr(), 0x5A, max(8, size - 8))

    def flush(self) -> None:
        """Hand CUPTI's buffered records to the tracer's file now."""
        if self.flush_fn is not None:
            with contextlib.suppress(Exception):
                self.flush_fn()


def request_marks(header: Dict[str, Any]) -> Dict[str, int]:
    """The request's marker sizes: ``open``, ``close`` (the request), ``call_open``,
    ``call_close`` (each invocation of the candidate's callable); absent ones are 0."""
    marks = header.get("marks")
    if not isinstance(marks, dict):
        return {}
    return {k: wire_int(marks.get(k, 0), f"marks.{k}") for k in ("open", "close", "call_open", "call_close")}


class Trial:
    """What one trial keeps until ``release``."""

    def __init__(self) -> None:
        self.pristine: List[Any] = []  # trusted: never exported, never run on
        self.handout: List[Any] = []  # trusted: exported to the candidate
        self.run_inputs: List[Any] = []  # trusted: what the reference ran (and is timed) on
        self.reference_outputs: List[Any] = []
        self.handout_transport = "bytes"
        self.inputs: List[Any] = []  # candidate: the inputs as received
        self.keep: List[Any] = []  # everything exported, alive until release


class Worker:
    def __init__(self, role: str, source: str, device: str):
        self.role = role
        self.source = source
        self.device = device
        self.module: Any = None
        self.model: Any = None
        self.target: Optional[Callable[..., Any]] = None
        self.framework = "python"
        self.atol = 1e-2
        self.rtol = 1e-2
        self.annotate = False
        self.trials: Dict[int, Trial] = {}
        self.handout_pool: Any = None
        self.handout_pool_note: Optional[str] = None
        self.gpu_marks = GpuMarks()
        self.marks: Dict[str, int] = {}
        # Set once get_inputs() has failed under the device context: every later trial draws
        # on the host straight away (a problem that needs host tensors needs them every time).
        self.inputs_on_host = False

    # -- requests ------------------------------------------------------------------------------

    def handle(self, header: Dict[str, Any], payload: bytearray) -> Tuple[Dict[str, Any], Outgoing]:
        op = header.get("op")
        handlers = {
            "trusted": {"setup": self.setup, "trial": self.trial, "check": self.check, "time": self.time, "release": self.release},
            "candidate": {"setup": self.setup, "call": self.call, "warmup": self.warmup, "time": self.time, "inputs": self.take_inputs, "release": self.release},
        }[self.role]
        handler = handlers.get(op) if isinstance(op, str) else None
        if handler is None:
            raise ProtocolError(f"the {self.role} worker has no op {op!r} (it has {', '.join(sorted(handlers))}, bye)")
        if op != "setup" and self.target is None:
            raise ProtocolError(f"{op} before setup")
        out = Outgoing()
        self.marks = request_marks(header) if self.device == "cuda" else {}
        self.gpu_marks.mark(self.marks.get("open"))
        try:
            return handler(header, payload, out), out
        finally:
            self.gpu_marks.mark(self.marks.get("close"))
            self.gpu_marks.flush()

    def callable_target(self) -> Callable[..., Any]:
        """What a call runs: the model (or its forward); set up before any call (`handle`)."""
        if self.target is None:
            raise ProtocolError("a call before setup")
        return self.target

    def setup(self, header: Dict[str, Any], payload: bytearray, out: Outgoing) -> Dict[str, Any]:
        if self.target is not None:
            raise ProtocolError("setup twice")
        device = header.get("device", self.device)
        if device not in ("cuda", "cpu") or device != self.device:
            raise ProtocolError(f"setup device {device!r} differs from --device {self.device!r}")
        init_seed = wire_int(header.get("init_seed", 0), "init_seed")
        if self.role == "trusted":
            self.atol = float(header.get("atol", self.atol))
            self.rtol = float(header.get("rtol", self.rtol))
        self.annotate = bool(header.get("annotate", False))
        given_init = header.get("init_inputs")
        if self.annotate:
            # Ranges need torch before the source is imported: the import itself (an inline
            # extension's build, module-level tensors) launches kernels that belong to setup.
            import torch  # noqa: F401
        self.preload_frameworks()
        with self.range("polyprof/setup"):
            return self.set_up_model(init_seed, given_init, payload, out)

    def set_up_model(self, init_seed: int, given_init: Any, payload: bytearray, out: Outgoing) -> Dict[str, Any]:
        self.module = self.load_source()
        torch = loaded_torch()
        if self.device == "cpu" and torch is not None:
            torch.set_num_threads(1)  # as OMP_NUM_THREADS=1: both sides timed on one thread
        class_name = MODEL_CLASSES[self.role]
        model_class = getattr(self.module, class_name, None)
        if model_class is None:
            raise WorkerError("compile_error", f"{self.source} defines no {class_name}")
        make_init = getattr(self.module, "get_init_inputs", None)
        try:
            seed_everything(init_seed)
            if callable(make_init):
                init_inputs = list(make_init())
            elif given_init is not None:
                init_inputs = import_arrays(given_init, payload, "cpu", "init_inputs")
            else:
                init_inputs = []
            reply_init = self.sendable(init_inputs, out) if self.role == "trusted" else None
            init_inputs = [self.to_device(x) for x in init_inputs]
            # Reseeded right before construction (as KernelBench does) so both sides' weights
            # match whatever get_init_inputs drew.
            seed_everything(init_seed)
            with self.no_grad():
                self.model = model_class(*init_inputs)
                to = getattr(self.model, "to", None)
                if callable(to) and self.is_torch_module(self.model):
                    to(self.device)
            synchronize()
        except WorkerError:
            raise
        except Exception as e:
            text = f"{type(e).__name__}: {e}"
            raise user_error(e, "compile_error" if COMPILE_ERROR_TEXT.search(text) else "raised") from e
        if callable(self.model):
            self.target = self.model
        elif callable(getattr(self.model, "forward", None)):
            self.target = self.model.forward
        else:
            raise WorkerError("raised", f"{class_name} instances are neither callable nor have a forward method")
        self.framework = self.module_framework()
        reply: Dict[str, Any] = {"framework": self.framework, "python": platform.python_version()}
        torch, np = loaded_torch(), loaded_numpy()
        if torch is not None:
            reply["torch"] = str(torch.__version__)
            if self.device == "cuda" and torch.cuda.is_available():
                reply["device_name"] = str(torch.cuda.get_device_name())
        if np is not None:
            reply["numpy"] = str(np.__version__)
        if reply_init is not None:
            reply["init_inputs"] = reply_init
        elif self.role == "trusted":
            reply["note"] = "get_init_inputs() returned something that cannot cross as an array or JSON value: init_inputs left out"
        return reply

    @staticmethod
    def sendable(values: List[Any], out: Outgoing) -> Optional[List[Dict[str, Any]]]:
        """The init inputs as wire arrays (bytes: they are small and built once), or None when
        one cannot cross (a candidate with its own get_init_inputs does not need them)."""
        mark = (len(out.chunks), out.size)
        try:
            return [out.array(x, "bytes") for x in values]
        except ValueError:
            del out.chunks[mark[0] :]
            out.size = mark[1]
            return None

    def trial(self, header: Dict[str, Any], payload: bytearray, out: Outgoing) -> Dict[str, Any]:
        k = wire_int(header.get("trial"), "trial")
        seed = wire_int(header.get("seed"), "seed")
        transport = header.get("transport", "ipc" if self.device == "cuda" else "bytes")
        if transport not in ("ipc", "bytes"):
            raise ProtocolError(f"transport must be ipc or bytes, got {transport!r}")
        profile = bool(header.get("profile", False))
        get_inputs = getattr(self.module, "get_inputs", None)
        if not callable(get_inputs):
            raise WorkerError("raised", f"{self.source} defines no get_inputs()")
        state = Trial()
        try:
            inputs = self.draw_inputs(get_inputs, seed, out.notes)
            state.pristine = [clone(x) for x in inputs]
            with self.in_handout_pool():
                state.handout = [clone(x) for x in inputs]
            state.run_inputs = inputs
            # The reference's work pass profiles this run alone, as the candidate's call.
            with self.profiled(profile, out.notes), self.range(f"polyprof/call/{k}" if profile else ""):
                with self.no_grad():
                    outputs = self.callable_target()(*state.run_inputs)
                synchronize()
            state.reference_outputs = [contiguous(o) for o in self.reference_arrays(outputs)]
        except WorkerError:
            raise
        except Exception as e:
            raise user_error(e) from e
        state.handout_transport = transport
        wires = [out.array(x, transport) for x in state.handout]
        state.keep.extend(out.keep)
        self.trials[k] = state
        reply: Dict[str, Any] = {
            "framework": framework_of(inputs),
            "inputs": wires,
            "input_specs": [spec_of(x, with_stats=True) for x in state.pristine],
            "reference_outputs": [spec_of(o, with_stats=True) for o in state.reference_outputs],
        }
        if header.get("count_flops"):
            flops, why = self.count_reference_flops(state.run_inputs)
            if flops is not None:
                reply["reference_flops"] = flops
            else:
                reply["flops_note"] = why
        notes = ([self.handout_pool_note] if transport == "ipc" and self.handout_pool_note else []) + out.notes
        if notes:
            reply["note"] = "; ".join(notes)
        return reply

    def count_reference_flops(self, inputs: List[Any]) -> Tuple[Optional[float], Optional[str]]:
        """The reference's analytic FLOPs over one call (torch's ``FlopCounterMode``: matmuls,
        convolutions, attention), for the audit's FLOP floor; or why there is no count."""
        torch = loaded_torch()
        framework = self.framework_of_call(inputs)
        if torch is None or framework != "torch":
            return None, f"a {framework} problem: no analytic FLOP count (FlopCounterMode counts torch operators)"
        try:
            from torch.utils.flop_counter import FlopCounterMode
        except ImportError as e:
            return None, f"torch {torch.__version__} has no FlopCounterMode ({e})"
        try:
            with self.no_grad(), FlopCounterMode(display=False) as counter:
                self.callable_target()(*inputs)
            synchronize()
            total = int(counter.get_total_flops())
        except Exception as e:
            return None, f"FlopCounterMode failed on the reference: {type(e).__name__}: {e}"
        if total <= 0:
            return None, "FlopCounterMode counted no FLOPs (no matmul, convolution or attention in the reference)"
        return float(total), None

    def check(self, header: Dict[str, Any], payload: bytearray, out: Outgoing) -> Dict[str, Any]:
        state = self.trial_state(header)
        refuse_foreign_frameworks(header.get("outputs"), framework_of(state.reference_outputs))
        try:
            candidate = import_arrays(header.get("outputs"), payload, self.device, "outputs")
            after = header.get("inputs_after")
            inputs_after = None if after is None else import_arrays(after, payload, self.device, "inputs_after")
        except ProtocolError as e:
            raise WorkerError("bad_output", f"the candidate's arrays cannot be read: {e.message}") from e
        except Exception as e:
            raise user_error(e, "bad_output") from e
        comparison = compare_outputs(candidate, state.reference_outputs, self.atol, self.rtol)
        unchanged = all(same_bytes(h, p) for h, p in zip(state.handout, state.pristine))
        note: Optional[str] = None
        copied = [i for i, h in enumerate(state.handout) if is_array(h) and not (state.handout_transport == "ipc" and is_cuda(h))]
        if copied or inputs_after is not None:
            # Inputs that crossed as copies: only the candidate's own copies after the call can
            # show a write, so they must come back.
            if inputs_after is None or len(inputs_after) != len(state.pristine):
                unchanged = False
                note = "inputs_after missing or of the wrong count: the inputs cannot be shown unchanged"
            else:
                unchanged = unchanged and all(same_bytes(a, p) for a, p in zip(inputs_after, state.pristine))
        specs = [spec_of(c, with_stats=True) if is_array(c) else value_spec_safe(c) for c in candidate]
        del candidate, inputs_after
        synchronize()
        reply = {"comparison": comparison, "inputs_unchanged": unchanged, "candidate_outputs": specs}
        if note:
            reply["note"] = note
        return reply

    def call(self, header: Dict[str, Any], payload: bytearray, out: Outgoing) -> Dict[str, Any]:
        k = wire_int(header.get("trial"), "trial")
        poison = header.get("poison") or []
        if not isinstance(poison, list) or not all(isinstance(p, dict) for p in poison):
            raise ProtocolError("poison must be a list of specs")
        sizes = [wire_int(p.get("nbytes", 0), "poison nbytes") for p in poison]
        profile = bool(header.get("profile", False))
        state = self.receive_trial(k, header, payload)
        inputs = state.inputs
        with self.range(f"polyprof/poison/{k}"):
            self.poison(sizes, self.framework_of_call(inputs))
        try:
            with self.profiled(profile, out.notes), self.range(f"polyprof/call/{k}"):
                with self.no_grad():
                    outputs = self.marked(self.callable_target())(*inputs)
                synchronize()
        except Exception as e:
            raise user_error(e) from e
        with self.range(f"polyprof/export/{k}"):
            wires = self.export_outputs(outputs, inputs, out, state)
        return wires

    def receive_trial(self, k: int, header: Dict[str, Any], payload: bytearray) -> Trial:
        """Trial ``k`` made of the inputs the request carries (imported on this device)."""
        try:
            inputs = import_arrays(header.get("inputs"), payload, self.device, "inputs")
        except ProtocolError:
            raise
        except Exception as e:
            raise user_error(e, "protocol") from e
        state = Trial()
        state.inputs = inputs
        self.trials[k] = state
        return state

    def warmup(self, header: Dict[str, Any], payload: bytearray, out: Outgoing) -> Dict[str, Any]:
        if header.get("inputs") is not None:
            # The witness warms up before its first call, on that call's inputs (docs: the
            # witness's warmup), so compilation and autotuning stay out of the calls.
            state = self.receive_trial(wire_int(header.get("trial"), "trial"), header, payload)
        else:
            state = self.trial_state(header)
        calls = wire_int(header.get("calls", 1), "calls")
        try:
            with self.range("polyprof/warmup"):
                with self.no_grad():
                    for _ in range(calls):
                        self.marked(self.callable_target())(*state.inputs)
                synchronize()
        except Exception as e:
            raise user_error(e) from e
        return {}

    def time(self, header: Dict[str, Any], payload: bytearray, out: Outgoing) -> Dict[str, Any]:
        if header.get("pool") is not None:
            return self.time_pool(header, payload, out)
        state = self.trial_state(header)
        repeat = wire_int(header.get("repeat", 100), "repeat")
        warmup = wire_int(header.get("warmup", 10), "warmup")
        flush_l2 = bool(header.get("flush_l2", True))
        max_batch = wire_int(header.get("max_batch", 1000), "max_batch")
        if repeat < 1 or max_batch < 1:
            raise ProtocolError("repeat and max_batch must be >= 1")
        inputs = state.run_inputs if self.role == "trusted" else state.inputs
        framework = self.framework_of_call(inputs)
        device_state = reset_device_state(self.device, framework)
        # Inside a timing block the marks are not synchronized (a CUDA graph may be capturing):
        # each call's marks are on the stream the call runs on.
        target = self.marked(self.callable_target(), sync=False)
        opening, closing = self.marks.get("call_open"), self.marks.get("call_close")
        marks_cost: Optional[Callable[[], None]] = None
        if opening and closing:

            def marks_cost() -> None:
                self.gpu_marks.imitate(opening)
                self.gpu_marks.imitate(closing)

        def call() -> Any:
            return target(*inputs)

        try:
            with self.range("polyprof/timing"), self.no_grad():
                if self.device == "cuda" and framework == "torch":
                    times, method, batch, last = time_call(
                        loaded_torch(), call, repeat, warmup, flush_l2, max_batch=max_batch, marks_cost=marks_cost
                    )
                else:
                    times, method, batch, last = time_call_host(call, repeat, warmup)
                synchronize()
        except Exception as e:
            raise user_error(e) from e
        reply: Dict[str, Any] = {
            "times_ms": [float(t) for t in times],
            "method": short_method(method),
            "method_detail": method,
            "batch": int(batch),
            "device_state": device_state,
        }
        if self.role == "candidate":
            reply.update(self.export_outputs(last, inputs, out, state))
        return reply

    def take_inputs(self, header: Dict[str, Any], payload: bytearray, out: Outgoing) -> Dict[str, Any]:
        """Trial K's inputs, kept for a later pooled ``time`` (no call now)."""
        self.receive_trial(wire_int(header.get("trial"), "trial"), header, payload)
        return {}

    def time_pool(self, header: Dict[str, Any], payload: bytearray, out: Outgoing) -> Dict[str, Any]:
        """A timing block over a pool of input sets (trials made before): timed call ``i`` runs on
        trial ``pool[order[i]]``, its output memory poisoned first (``poison[order[i]]``); the
        warm-up calls run on ``warmup_trial``, which is in no pool. The candidate hands back every
        timed call's outputs (``calls``) and each pool trial's inputs after the block
        (``inputs_after``, for inputs that crossed as copies): which calls are compared is drawn
        by the orchestrator after this answer, so nothing in this process can tell."""
        pool = [wire_int(k, "pool") for k in wire_ints(header.get("pool"), "pool")]
        order = wire_ints(header.get("order"), "order")
        if not pool or not order or any(i >= len(pool) for i in order):
            raise ProtocolError("a pooled time needs a pool and an order of positions in it")
        poison = header.get("poison") or [[] for _ in pool]
        if not isinstance(poison, list) or len(poison) != len(pool):
            raise ProtocolError("poison must hold one list of specs per pool trial")
        sizes = [[wire_int(p.get("nbytes", 0), "poison nbytes") for p in specs if isinstance(p, dict)] for specs in poison]
        warmup = wire_int(header.get("warmup", 10), "warmup")
        states = [self.trial_state({"trial": k}) for k in pool]
        warm_state = self.trial_state({"trial": wire_int(header.get("warmup_trial"), "warmup_trial")})
        trusted = self.role == "trusted"

        def pick(st: Trial) -> List[Any]:
            return st.run_inputs if trusted else st.inputs

        sets = [pick(st) for st in states]
        warm_inputs = pick(warm_state)
        framework = self.framework_of_call(sets[0])
        if self.device == "cuda" and framework == "torch":
            raise ProtocolError("a pooled time runs on the host path only (the GPU path times one trial)")
        target = self.callable_target()
        calls = [(lambda inputs=sets[i]: target(*inputs)) for i in order]
        candidate = self.role == "candidate"

        def before_each(i: int) -> None:
            # Both sides: the fill's cost and what it leaves in the caches are the same for each.
            self.poison(sizes[order[i]], framework)

        try:
            with self.no_grad():
                times, method, batch, outputs = time_calls_host(calls, lambda: target(*warm_inputs), warmup, before_each)
        except Exception as e:
            raise user_error(e) from e
        reply: Dict[str, Any] = {"times_ms": [float(t) for t in times], "method": method, "method_detail": method, "batch": int(batch), "device_state": None}
        if not candidate:
            return reply
        exported = []
        for i, outs in enumerate(outputs):
            exported.append(self.export_outputs(outs, [], out, states[order[i]]))
        reply["calls"] = exported
        reply["inputs_after"] = [[out.array(x, "bytes") for x in inputs] for inputs in sets]
        return reply

    def release(self, header: Dict[str, Any], payload: bytearray, out: Outgoing) -> Dict[str, Any]:
        k = wire_int(header.get("trial"), "trial")
        self.trials.pop(k, None)
        torch = loaded_torch()
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            torch.cuda.ipc_collect()
        return {}

    # -- helpers -------------------------------------------------------------------------------

    def load_source(self) -> Any:
        """Import the source file under the role's fixed module name; any failure is a
        compile_error (a syntax error, a missing import, an extension that does not build)."""
        name = MODULE_NAMES[self.role]
        try:
            spec = importlib.util.spec_from_file_location(name, self.source)
            if spec is None or spec.loader is None:
                raise ImportError(f"{self.source} cannot be loaded as a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        except BaseException as e:  # SystemExit from a source that exits on import, too
            if isinstance(e, KeyboardInterrupt):
                raise
            raise user_error(e, "compile_error") from e
        return module

    def preload_frameworks(self) -> None:
        """The trusted side imports numpy (and torch, when the reference uses it) now, before
        any candidate runs: nothing it reads later is a first import from a path the candidate
        could have written to since."""
        if self.role == "trusted" and importlib.util.find_spec("numpy") is not None:
            import numpy  # noqa: F401

    def module_framework(self) -> str:
        """torch when the model is a torch module or the source imported torch, else numpy when
        it imported numpy, else python (the setup answer; trials say what their inputs are)."""
        torch, np = loaded_torch(), loaded_numpy()
        names = vars(self.module).values()
        if torch is not None and (self.is_torch_module(self.model) or any(v is torch for v in names)):
            return "torch"
        if np is not None and any(v is np for v in names):
            return "numpy"
        return "python"

    def framework_of_call(self, inputs: List[Any]) -> str:
        """The inputs' framework; the source's when no input is an array."""
        framework = framework_of(inputs)
        return self.framework if framework == "python" else framework

    @staticmethod
    def is_torch_module(x: Any) -> bool:
        torch = loaded_torch()
        return torch is not None and isinstance(x, torch.nn.Module)

    def draw_inputs(self, get_inputs: Callable[[], Any], seed: int, notes: List[str]) -> List[Any]:
        """A trial's inputs from ``get_inputs()`` seeded with ``seed``, on the device.

        On CUDA they are drawn there (``get_inputs`` under ``torch.device("cuda")``): drawing
        a large problem's tensors on the CPU and copying them over was most of a correctness
        trial's cost. A problem whose ``get_inputs`` cannot run that way (it needs host tensors,
        or this torch has no device context) is drawn again from the same seed on the CPU, as
        is every later trial of this worker; ``notes`` says why, once."""

        def drawn() -> List[Any]:
            seed_everything(seed)
            return [self.to_device(x) for x in get_inputs()]

        torch = loaded_torch()
        if self.device != "cuda" or self.inputs_on_host or torch is None or not torch.cuda.is_available():
            return drawn()
        try:
            with torch.device("cuda"):
                return drawn()
        except Exception as e:
            self.inputs_on_host = True
            notes.append(f"get_inputs() failed on the device ({type(e).__name__}: {e}): drawn on the CPU from now on")
        return drawn()

    def to_device(self, x: Any) -> Any:
        if self.device == "cuda" and is_tensor(x) and not x.is_cuda:
            return x.cuda()
        return x

    def marked(self, target: Callable[..., Any], sync: bool = True) -> Callable[..., Any]:
        """``target`` between the request's call marks on the GPU timeline (itself when the
        request carries none)."""
        opening, closing = self.marks.get("call_open"), self.marks.get("call_close")
        if not opening or not closing:
            return target
        marks = self.gpu_marks

        def run(*args: Any) -> Any:
            marks.mark(opening, sync)
            result = target(*args)
            marks.mark(closing, sync)
            return result

        return run

    def no_grad(self) -> Any:
        torch = loaded_torch()
        return torch.no_grad() if torch is not None else contextlib.nullcontext()

    @contextlib.contextmanager
    def range(self, name: str) -> Iterator[None]:
        """An NVTX range (the witness attributes kernels by it) when annotating, else nothing
        (nothing for an empty name either)."""
        torch = loaded_torch() if self.annotate and name else None
        if torch is None or not torch.cuda.is_available():
            yield
            return
        torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            torch.cuda.nvtx.range_pop()

    @contextlib.contextmanager
    def profiled(self, wanted: bool, notes: List[str]) -> Iterator[None]:
        """The profiler's collection window, cudaProfilerStart ... cudaProfilerStop, around the
        block when ``wanted``: the work pass runs ncu with ``--profile-from-start off``, so only
        these windows are profiled (the window opens before the call's range is pushed, so the
        range is seen). Without a CUDA device nothing is profiled, and a note says so. Code in
        the window can stop the profiler itself, which only hides its own work from the
        counters: the work checks then read too little work."""
        torch = loaded_torch()
        if not wanted:
            yield
            return
        if self.device != "cuda" or torch is None or not torch.cuda.is_available():
            notes.append("profile: no CUDA device in this worker, nothing was profiled")
            yield
            return
        torch.cuda.profiler.start()
        try:
            yield
        except BaseException:
            # The block's own error is the one to report (a device fault makes stop fail too).
            with contextlib.suppress(Exception):
                torch.cuda.profiler.stop()
            raise
        torch.cuda.profiler.stop()

    def in_handout_pool(self) -> Any:
        """Allocations for the handout copies, in a memory pool of their own on CUDA: an IPC
        handle opens the whole allocator segment, which must not also hold the pristine inputs
        or the reference outputs (the candidate could read or write them)."""
        torch = loaded_torch()
        if self.device != "cuda" or torch is None or not torch.cuda.is_available():
            return contextlib.nullcontext()
        if self.handout_pool is None and self.handout_pool_note is None:
            try:
                if not callable(getattr(torch.cuda, "use_mem_pool", None)):
                    raise AttributeError(f"torch {torch.__version__} has no torch.cuda.use_mem_pool")
                self.handout_pool = torch.cuda.MemPool()
            except (AttributeError, RuntimeError) as e:
                self.handout_pool_note = f"handout inputs share allocator segments with trusted memory ({e})"
        if self.handout_pool is None:
            return contextlib.nullcontext()
        return torch.cuda.use_mem_pool(self.handout_pool)

    def trial_state(self, header: Dict[str, Any]) -> Trial:
        k = wire_int(header.get("trial"), "trial")
        state = self.trials.get(k)
        if state is None:
            raise ProtocolError(f"no trial {k} (not made, or released)")
        return state

    def reference_arrays(self, outputs: Any) -> List[Any]:
        """The reference's outputs as a list of arrays (numpy scalars become 0-d arrays)."""
        items = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        np = loaded_numpy()
        arrays = []
        for o in items:
            if np is not None and isinstance(o, np.generic):
                o = np.asarray(o)
            if not is_array(o):
                raise WorkerError("raised", f"the reference returned a {type(o).__name__}, not an array")
            arrays.append(o.detach() if is_tensor(o) else o)
        return arrays

    def candidate_arrays(self, outputs: Any, framework: str) -> List[Any]:
        """The candidate's outputs, each exactly a torch.Tensor or numpy.ndarray: a subclass
        could do its work lazily, when the checker reads it."""
        items = list(outputs) if type(outputs) in (tuple, list) else [outputs]
        torch, np = loaded_torch(), loaded_numpy()
        scalar_types = set(np.sctypeDict.values()) if np is not None else set()
        arrays = []
        for index, o in enumerate(items):
            if np is not None and type(o) in scalar_types:
                o = np.asarray(o)
            plain = (torch is not None and type(o) is torch.Tensor) or (np is not None and type(o) is np.ndarray)
            if not plain:
                raise WorkerError("bad_output", f"output {index} is a {type(o).__module__}.{type(o).__qualname__}, not a plain torch.Tensor or numpy.ndarray")
            if framework == "torch" and type(o) is not torch.Tensor:
                raise WorkerError("bad_output", f"output {index} is a numpy array; the inputs are torch tensors")
            if framework == "numpy" and type(o) is not np.ndarray:
                raise WorkerError("bad_output", f"output {index} is a torch tensor; the inputs are numpy arrays")
            if is_tensor(o) and self.device == "cuda" and not o.is_cuda:
                raise WorkerError("bad_output", f"output {index} is on {o.device}, not on the GPU")
            if is_ndarray(o) and o.dtype.kind not in "biufc":
                raise WorkerError("bad_output", f"output {index} has dtype {o.dtype} (numbers and booleans only)")
            arrays.append(o)
        return arrays

    def export_outputs(self, outputs: Any, inputs: List[Any], out: Outgoing, state: Trial) -> Dict[str, Any]:
        """Validate and export a call's outputs (kept until release); inputs that arrived as
        copies go back too (``inputs_after``), so the checker sees writes into them."""
        arrays = self.candidate_arrays(outputs, framework_of(inputs))
        try:
            synchronize()
            exported = []
            for index, o in enumerate(arrays):
                if not (o.is_contiguous() if is_tensor(o) else o.flags.c_contiguous):
                    out.notes.append(f"output {index} was not contiguous: exported as a contiguous copy")
                    o = contiguous(o)
                elif is_cuda(o) and any(shares_storage(o, x) for x in inputs):
                    # torch cannot export memory it imported over IPC; the checker still has to
                    # see what the candidate returned (an input handed back as the answer).
                    out.notes.append(f"output {index} is an input's memory: exported as a copy")
                    o = o.clone()
                exported.append(out.array(o, "ipc" if is_cuda(o) else "bytes"))
            reply: Dict[str, Any] = {"outputs": exported}
            if any(is_array(x) and not is_cuda(x) for x in inputs):
                reply["inputs_after"] = [out.array(x, "bytes") for x in inputs]
            synchronize()
        except WorkerError:
            raise
        except Exception as e:
            raise user_error(e, "bad_output") from e
        state.keep.extend(arrays)
        state.keep.extend(out.keep)
        if out.notes:
            reply["note"] = "; ".join(out.notes)
        return reply

    def poison(self, sizes: List[int], framework: str) -> None:
        """Fill blocks the size of each expected output with 0xFF bytes (NaN in floating point)
        and free them, so the allocator hands this memory out next: an output the call never
        writes then reads as poison. All are allocated before any is freed, so each output's
        size class gets its own poisoned block."""
        torch, np = loaded_torch(), loaded_numpy()
        blocks = []
        for n in sizes:
            if n == 0:
                continue
            if framework == "torch" and torch is not None and self.device == "cuda" and self.gpu_marks.ready():
                # A memset of exactly the output's size: the only work the timeline allows in
                # the poison step (a kernel there is someone else's).
                block = torch.empty((n,), dtype=torch.uint8, device="cuda")
                self.gpu_marks.memset(block.data_ptr(), 0xFF, n)
                blocks.append(block)
            elif framework == "torch" and torch is not None:
                blocks.append(torch.full((n,), 255, dtype=torch.uint8, device="cuda" if self.device == "cuda" else "cpu"))
            elif np is not None:
                blocks.append(np.full(n, 255, dtype=np.uint8))
            else:
                blocks.append(bytearray(b"\xff" * n))
        synchronize()
        del blocks


def value_spec_safe(x: Any) -> Dict[str, Any]:
    try:
        return value_spec(x)
    except ValueError:
        return {"dtype": type(x).__name__, "shape": [], "nbytes": 0}


# ---------------------------------------------------------------------------------------------


def pin_host_threads(device: str) -> Optional[str]:
    """On ``--device cpu``: this process on one CPU (the first it may use) before any source is
    imported, so every thread it starts inherits it, and torch's pool at one thread when torch
    gets loaded (``OMP_NUM_THREADS=1`` comes from polyprof). Both sides run alike; the other side
    is stopped while one side's block runs, so they share that CPU without meeting. A candidate
    can widen its own affinity again: the timing is then its own (docs/eval.md)."""
    if device != "cpu" or not hasattr(os, "sched_setaffinity"):
        return None
    try:
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {allowed[0]})
        return f"pinned to cpu {allowed[0]}"
    except (OSError, IndexError) as e:
        return f"not pinned: {e}"


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="polyprof eval worker (run by polyprof eval)")
    parser.add_argument("--socket", help="the orchestrator's Unix socket (not for --role build)")
    parser.add_argument("--role", required=True, choices=("trusted", "candidate", "build"))
    parser.add_argument("--source", required=True, help="the reference (trusted) or candidate file")
    parser.add_argument("--device", required=True, choices=("cuda", "cpu"))
    args = parser.parse_args(argv)
    if args.role != "build" and not args.socket:
        parser.error("--socket is required for the trusted and candidate roles")
    return args


def build(source: str, device: str) -> int:
    """The build stage: import the candidate as its judged worker will (same module name), so an
    inline extension is compiled into the build folder polyprof points TORCH_EXTENSIONS_DIR (and
    POLYPROF_BUILD_DIR) at, with no device visible. Nothing is answered: polyprof reads the exit
    status and keeps stderr as the build log. Its first line says this script started, before
    any candidate code: without it a failure is polyprof's (no interpreter, no sandbox)."""
    print(BUILD_STARTED, file=sys.stderr, flush=True)
    try:
        Worker("candidate", source, device).load_source()
    except WorkerError as e:
        print(f"polyprof build: importing {source} failed ({e.kind}): {e.message}", file=sys.stderr)
        if e.trace:
            print(e.trace.rstrip(), file=sys.stderr)
        sys.stderr.flush()
        return EXIT_BUILD_FAILED
    sys.stderr.flush()
    return 0


def end_now(worker: Worker) -> NoReturn:
    """End without the interpreter's teardown, when polyprof asks (``bye`` with ``exit: now``):
    finalizing torch's modules and the candidate's took 0.4-0.7 s of every worker's end, and
    nothing in it is evidence. What the normal exit would still record is recorded first: the
    device is synchronized, so work queued before ``bye`` has finished, and the tracer's records
    are flushed to its file (its own flush at exit does not run under ``os._exit``)."""
    with contextlib.suppress(Exception):
        synchronize()
    worker.gpu_marks.flush()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def serve(sock: socket.socket, worker: Worker) -> int:
    while True:
        try:
            header, payload = read_message(sock)
        except EOFError:
            # polyprof is done with this worker without a `bye`: it closes the connection after
            # a failed request (a candidate that raised) and waits for the exit, which the
            # teardown would lengthen by 0.4-0.7 s with torch loaded, on that candidate's turn.
            end_now(worker)
        except ProtocolError as e:
            write_message(sock, {"ok": False, "error": e.to_json()}, [])
            return EXIT_PROTOCOL
        if header.get("op") == "bye":
            write_message(sock, {"ok": True}, [])
            if header.get("exit") == "now":
                end_now(worker)
            return 0
        chunks: List[bytes] = []
        fault = False
        try:
            reply, out = worker.handle(header, payload)
            answer: Dict[str, Any] = {"ok": True, **reply}
            chunks = out.chunks
        except WorkerError as e:
            answer = {"ok": False, "error": e.to_json()}
            fault = e.kind == "device_fault"
        except Exception as e:  # the worker's own failure, or the device's under it
            error = user_error(e)
            answer = {"ok": False, "error": error.to_json()}
            fault = error.kind == "device_fault"
        try:
            write_message(sock, answer, chunks)
        except ValueError as e:  # a non-finite number in the answer
            write_message(sock, {"ok": False, "error": {"kind": "raised", "message": f"answer not JSON: {e}"}}, [])
        if fault:
            # The CUDA context is unusable after a fault: end without running its teardown.
            sys.stderr.flush()
            os._exit(EXIT_DEVICE_FAULT)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    # Where Python still puts the script's folder first (before 3.11, -I does not drop it),
    # nothing is searched for there.
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    # The protocol is on the socket; stdout goes to stderr before any user code is imported, so
    # a print in the problem's code lands in the log and nowhere else.
    sys.stdout.flush()
    os.dup2(2, 1)
    if args.role == "build":
        return build(os.path.abspath(args.source), args.device)
    pin_host_threads(args.device)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(args.socket)
    except OSError as e:
        print(f"polyprof eval worker: cannot connect to {args.socket}: {e}", file=sys.stderr)
        return EXIT_PROTOCOL
    if args.device == "cuda" and importlib.util.find_spec("torch") is not None:
        # torch after connecting, before the first request is read: a worker started ahead of
        # its turn loads it meanwhile, and polyprof knows its pid by then (the connection's peer
        # credentials), so it can hold it still while a timing block runs. Importing it
        # initializes no device.
        import torch  # noqa: F401
    try:
        return serve(sock, Worker(args.role, os.path.abspath(args.source), args.device))
    finally:
        sock.close()


if __name__ == "__main__":
    sys.exit(main())
