"""Read a safetensors file into tensors and its metadata.

Uses the `safetensors` package when it is installed; otherwise reads the
format itself (8-byte little-endian header length, a JSON header, the
data), which is all this needs: float32 tensors.
"""
import json
import struct

import torch

_DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "I32": torch.int32}


def read_safetensors(path):
    """Return (tensors: dict name -> torch.Tensor, metadata: dict str -> str)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its header length)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header of {n} bytes in a file of {len(raw)}")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    try:
        from safetensors.torch import load as st_load
        tensors = st_load(raw)
    except ImportError:
        data = memoryview(raw)[8 + n:]
        tensors = {}
        for name, h in header.items():
            b, e = h["data_offsets"]
            dt = _DTYPES.get(h["dtype"])
            if dt is None:
                raise ValueError(f"{path}: tensor {name} has dtype {h['dtype']}")
            t = torch.frombuffer(bytearray(data[b:e]), dtype=dt) if e > b else torch.empty(0, dtype=dt)
            tensors[name] = t.reshape(h["shape"])
    return tensors, meta
