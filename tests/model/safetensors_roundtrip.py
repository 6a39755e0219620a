"""safetensors_roundtrip.py - the Python half of test_safetensors_python.

Usage: safetensors_roundtrip.py IN OUT
Loads IN (written by gf_st_write_file) with safetensors.numpy and checks
every tensor, the metadata and the ganflow data digest against the values
the C test wrote; then writes OUT with safetensors.numpy.save_file for the C
reader to check. Exits non-zero on any mismatch.
"""
import hashlib
import json
import struct
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file


def main(src, dst):
    t = load_file(src)
    want = {
        "weight": np.array([[1.5, -2.0, 3.25], [0.0, 1e-8, -7.0]], dtype=np.float32),
        "doubles": np.array([1.0, 2.0, -3.5, 1e300], dtype=np.float64),
        "steps": np.array([123456789012345, -1], dtype=np.int64),
        "i32": np.array([[-42]], dtype=np.int32),
        "i16": np.array([-2, 3], dtype=np.int16),
        "i8": np.array([-128, 127], dtype=np.int8),
        "bytes": np.array([0, 1, 2, 254, 255], dtype=np.uint8),
        "flags": np.array([True, False, True], dtype=np.bool_),
        "half": np.array([1.0, 2.0, -1.0], dtype=np.float16),
        "scalar": np.array(7, dtype=np.int32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    assert sorted(t) == sorted(want), (sorted(t), sorted(want))
    for k, v in want.items():
        assert t[k].dtype == v.dtype, (k, t[k].dtype, v.dtype)
        assert t[k].shape == v.shape, (k, t[k].shape, v.shape)
        assert np.array_equal(t[k], v), (k, t[k], v)
    with safe_open(src, framework="np") as f:
        meta = f.metadata()
    assert meta["origin"] == "ganflow", meta
    raw = open(src, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0, n
    header = json.loads(raw[8 : 8 + n])
    assert header["__metadata__"] == meta
    digest = hashlib.sha256(raw[8 + n :]).hexdigest()
    assert meta["ganflow.data_sha256"] == digest, (meta, digest)

    out = {
        "py_f32": np.arange(12, dtype=np.float32).reshape(3, 4) / 4,
        "py_i64": np.array([-(2**62), 2**62], dtype=np.int64),
        "py_u8": np.array([[1, 2], [3, 4]], dtype=np.uint8),
        "py_f64": np.array([np.pi], dtype=np.float64),
    }
    save_file(out, dst, metadata={"from": "python", "n": "4"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
