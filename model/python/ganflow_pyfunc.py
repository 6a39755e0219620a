"""ganflow_pyfunc - the python_function flavor of a ganflow model directory.

MLflow imports this module (MLmodel: flavors.python_function.loader_module)
from the model's code/ directory and calls _load_pyfunc(path to
generator.safetensors). The returned model's predict() turns seeds or
latent vectors into images with a numpy float32 copy of ganflow's
generator in inference mode, the same numbers ganflow-serve and
`ganflow generate` compute (within float rounding):

  * latents: Philox-4x32-10 keyed by the seed as in model/include/gf/rng.h
    (purpose GF_RNG_SAMPLE = 7, step 0, sub 0, sample 0) and the
    Box-Muller transform of kernels/src/philox.c (gf_philox_normal);
  * networks: model/src/net_mlp.c, net_dcgan.c and net_resnet.c (linear,
    convolution and transposed convolution without bias, batch norm with
    the running statistics and eps 1e-5, ReLU, tanh, nearest 2x
    upsampling, residual adds whose shortcut is a 1x1 convolution of the
    upsampled block input); images NCHW in [-1, 1]
    (pixel_normalization "tanh_-1_1");
  * class-conditional models (config num_classes K > 0, model/src/net.c,
    net_layers.c): every batch norm of G is conditional, BigGAN's: xhat =
    (x - running_mean) / sqrt(running_var + 1e-5) without affine, then
    y = xhat * gain + bias with gain = e W_gain^T + b_gain and bias =
    e W_bias^T + b_bias, e = row `class` of the shared embedding
    ("shared.weight" [K, 128]; "main.i.gain.weight" [C, 128],
    "main.i.gain.bias" [C], "main.i.bias.weight", "main.i.bias.bias").

Input rows: a `seed` (integer 0..2^64-1) or a `z` (z_dim numbers); for a
class-conditional model also a `class` on EVERY row, required (there is no
default class: a missing one is an error naming the row), given as an
index 0..K-1 or, when calling the loaded model without MLflow's schema
enforcement (get_raw_model().predict, or _load_pyfunc), also as a class
name from config.json's "class_names" (an exact name wins over an index
of the same spelling; a decimal index has no sign, spaces or leading
zeros, as gf_mlmodel_class_index reads it). The MLmodel signature types
the column long, so MLflow's scoring server takes indices. An
unconditional model refuses a `class` that is given.

Needs numpy only (pandas when MLflow hands it a DataFrame). The weights are
read with a small safetensors reader (the JSON header and numpy.frombuffer),
not the safetensors package. This file is embedded into the C library at
build time (model/CMakeLists.txt) and written by gf_mlmodel_write as
code/ganflow_pyfunc.py, listed with its SHA-256 in the ganflow flavor.
"""

import json
import math
import os
import struct

import numpy as np

_BN_EPS = 1e-5                 # GF_BN_EPS
_COND_EMBED_DIM = 128          # GF_COND_EMBED_DIM
_RNG_SAMPLE = 7                # GF_RNG_SAMPLE
_MLP_HIDDEN = (1200, 1000)     # GF_MLP_G_HIDDEN1, GF_MLP_G_HIDDEN2
_MAX_HEADER = 100 << 20        # safetensors header bound
_ST_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16,
              "I64": np.int64, "I32": np.int32, "U8": np.uint8}


# ---- safetensors ---------------------------------------------------------

def read_safetensors(path):
    """{name: numpy array} of a safetensors file (little-endian)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short for safetensors")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > _MAX_HEADER or 8 + n > len(raw):
        raise ValueError(f"{path}: bad safetensors header length {n}")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        dt = _ST_DTYPES.get(t["dtype"])
        if dt is None:
            raise ValueError(f"{path}: {name}: unsupported dtype {t['dtype']}")
        a, b = t["data_offsets"]
        shape = tuple(int(s) for s in t["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= a <= b <= len(data) or b - a != count * np.dtype(dt).itemsize:
            raise ValueError(f"{path}: {name}: bad data offsets")
        arr = np.frombuffer(data[a:b], dtype=np.dtype(dt).newbyteorder("<"))
        out[name] = arr.astype(dt).reshape(shape)
    return out


# ---- latents: Philox-4x32-10 and Box-Muller, as kernels/src/philox.c ----

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_U32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(ctr, key):
    """ctr: 4 uint64 arrays holding 32-bit words (broadcastable); key: 2.
    Returns the 4 output words (uint64 arrays of 32-bit values)."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in ctr)
    k0, k1 = (np.asarray(k, dtype=np.uint64) for k in key)
    for r in range(10):
        if r > 0:
            k0 = (k0 + np.uint64(_W0)) & _U32
            k1 = (k1 + np.uint64(_W1)) & _U32
        p0 = np.uint64(_M0) * c0
        p1 = np.uint64(_M1) * c2
        hi0, lo0 = p0 >> np.uint64(32), p0 & _U32
        hi1, lo1 = p1 >> np.uint64(32), p1 & _U32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def latents_from_seeds(seeds, z_dim):
    """float32 [n, z_dim]: row i = gf_generator_latents(seeds[i]) with
    per_image (stream (seed, SAMPLE, step 0, sub 0), sample 0)."""
    s = np.asarray([int(x) & 0xFFFFFFFFFFFFFFFF for x in seeds], dtype=np.uint64)
    n = s.shape[0]
    nblocks = z_dim // 4 + 1  # covers word z_dim (the pair of an odd last one)
    blk = np.arange(nblocks, dtype=np.uint64)[None, :]
    key = ((s & _U32)[:, None], (s >> np.uint64(32))[:, None])
    ctr = (blk, np.zeros_like(blk), np.full_like(blk, _RNG_SAMPLE), np.zeros_like(blk))
    words = np.stack(philox4x32_10(ctr, key), axis=-1).reshape(n, nblocks * 4)
    k = np.arange(z_dim)
    w = (k >> 1) * 2
    u1 = ((words[:, w] >> np.uint64(8)).astype(np.float64) + 1.0) * 2.0 ** -24
    u2 = (words[:, w + 1] >> np.uint64(8)).astype(np.float64) * 2.0 ** -24
    r = np.sqrt(-2.0 * np.log(u1))
    t = 6.283185307179586476925286766559 * u2
    z = np.where((k & 1).astype(bool)[None, :], r * np.sin(t), r * np.cos(t))
    return z.astype(np.float32)


# ---- layers (float32, NCHW) ----------------------------------------------

def _linear(x, w, b):
    return x @ w.T + b


def _batchnorm(x, p):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = p["weight"] / np.sqrt(p["running_var"] + np.float32(_BN_EPS))
    shift = p["bias"] - p["running_mean"] * scale
    return (x * scale.reshape(shape) + shift.reshape(shape)).astype(np.float32)


def _deconv(x, w, stride, pad):
    """nn.ConvTranspose2d without bias: x [n, cin, h, wd], w [cin, cout, k, k]."""
    n, _, h, wd = x.shape
    cout, k = w.shape[1], w.shape[2]
    cols = np.tensordot(x, w, axes=([1], [0]))  # [n, h, wd, cout, k, k]
    cols = cols.transpose(0, 3, 4, 5, 1, 2)      # [n, cout, k, k, h, wd]
    fh, fw = (h - 1) * stride + k, (wd - 1) * stride + k
    y = np.zeros((n, cout, fh, fw), dtype=np.float32)
    for i in range(k):
        for j in range(k):
            y[:, :, i:i + stride * (h - 1) + 1:stride,
              j:j + stride * (wd - 1) + 1:stride] += cols[:, :, i, j]
    return y[:, :, pad:fh - pad, pad:fw - pad]


def _conv(x, w, stride, pad):
    """nn.Conv2d without bias: x [n, cin, h, wd], w [cout, cin, k, k]."""
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    cols = cols[:, :, ::stride, ::stride]              # [n, cin, oh, ow, k, k]
    y = np.tensordot(cols, w, axes=([1, 4, 5], [1, 2, 3]))  # [n, oh, ow, cout]
    return np.ascontiguousarray(y.transpose(0, 3, 1, 2), dtype=np.float32)


def _upsample(x):
    """Nearest-neighbour 2x (F.interpolate(scale_factor=2))."""
    return x.repeat(2, axis=2).repeat(2, axis=3)


def _relu(x):
    return np.maximum(x, np.float32(0))


def _cond_batchnorm(x, p, e):
    """Conditional batch norm in inference mode: x [n, C, ...], e [n, 128]
    (the rows of the shared embedding)."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    rows = (x.shape[0], -1) + (1,) * (x.ndim - 2)
    scale = np.float32(1) / np.sqrt(p["running_var"] + np.float32(_BN_EPS))
    shift = -p["running_mean"] * scale
    xhat = x * scale.reshape(shape) + shift.reshape(shape)
    gain = _linear(e, p["gain.weight"], p["gain.bias"])
    bias = _linear(e, p["bias.weight"], p["bias.bias"])
    return (xhat * gain.reshape(rows) + bias.reshape(rows)).astype(np.float32)


# ---- the networks (model/src/net_mlp.c, net_dcgan.c), G only --------------

def _layers(cfg):
    """G's layers as (module index, kind, args), as the C builders add them."""
    out = []
    if cfg["architecture"] == "mlp":
        for width in _MLP_HIDDEN:
            out += [("linear", width), ("bn",), ("relu",)]
        out += [("linear", cfg["image_channels"] * cfg["image_height"] * cfg["image_width"]),
                ("tanh",)]
    elif cfg["architecture"] == "dcgan":
        size = cfg["image_height"]
        stages, k0, mult = {64: (4, 4, 8), 32: (3, 4, 4)}.get(size, (2, 7, 4))
        ch = cfg["ngf"] * mult
        out += [("deconv", ch, k0, 1, 0), ("bn",), ("relu",)]
        for _ in range(1, stages):
            ch //= 2
            out += [("deconv", ch, 4, 2, 1), ("bn",), ("relu",)]
        out += [("deconv", cfg["image_channels"], 4, 2, 1), ("tanh",)]
    elif cfg["architecture"] == "resnet":
        size, ngf = cfg["image_height"], cfg["ngf"]
        s0 = 7 if size == 28 else 4
        blocks = {28: 2, 32: 3}.get(size, 4)
        widths = [ngf * m for m in (8, 8, 4, 2, 1)] if size == 64 else [ngf] * (blocks + 1)
        out += [("linear_map", widths[0], s0, s0)]
        for b in range(blocks):
            start = len(out)
            out += [("bn",), ("relu",), ("upsample",), ("conv", widths[b + 1], 3, 1, 1),
                    ("bn",), ("relu",), ("conv", widths[b + 1], 3, 1, 1), ("resadd", start)]
        out += [("bn",), ("relu",), ("conv", cfg["image_channels"], 3, 1, 1), ("tanh",)]
    else:
        raise ValueError(f"unknown architecture {cfg['architecture']!r}")
    return list(enumerate(out))


class GanflowGenerator:
    """A loaded generator: config, weights, and predict()."""

    def __init__(self, path):
        d = path if os.path.isdir(path) else os.path.dirname(path)
        st = path if not os.path.isdir(path) else os.path.join(d, "generator.safetensors")
        with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
            self.config = json.load(f)
        c = self.config
        if c.get("pixel_normalization") != "tanh_-1_1":
            raise ValueError(f"unsupported pixel_normalization {c.get('pixel_normalization')!r}")
        self.num_classes = int(c.get("num_classes", 0))
        self.class_names = c.get("class_names")
        if self.num_classes < 0 or self.num_classes == 1:
            raise ValueError(f"config.json: num_classes {self.num_classes} is not 0 or >= 2")
        if self.class_names is not None:
            names = self.class_names
            if (self.num_classes == 0 or not isinstance(names, list)
                    or len(names) != self.num_classes
                    or not all(isinstance(x, str) and x for x in names)
                    or len(set(names)) != len(names)):
                raise ValueError("config.json: class_names must be num_classes distinct "
                                 "non-empty strings of a conditional model")
        self.z_dim = int(c["z_dim"])
        self.image_shape = (int(c["image_channels"]), int(c["image_height"]),
                            int(c["image_width"]))
        tensors = read_safetensors(st)
        self.layers = _layers(c)
        used = set()
        self.params = {}
        bn = ("weight", "bias", "running_mean", "running_var")
        if self.num_classes > 0:
            bn = ("gain.weight", "gain.bias", "bias.weight", "bias.bias",
                  "running_mean", "running_var")
            key = "shared.weight"
            if key not in tensors:
                raise ValueError(f"generator.safetensors: {key} missing")
            self.shared = np.ascontiguousarray(tensors[key], dtype=np.float32)
            if self.shared.shape != (self.num_classes, _COND_EMBED_DIM):
                raise ValueError(f"generator.safetensors: {key} has shape "
                                 f"{list(self.shared.shape)}, expected "
                                 f"[{self.num_classes}, {_COND_EMBED_DIM}]")
            used.add(key)
        for i, spec in self.layers:
            names = {"linear": ("weight", "bias"), "linear_map": ("weight", "bias"),
                     "deconv": ("weight",), "conv": ("weight",), "resadd": ("weight",),
                     "bn": bn}.get(spec[0], ())
            p = {}
            for s in names:
                key = f"main.{i}.{s}"
                if key not in tensors:
                    raise ValueError(f"generator.safetensors: {key} missing")
                p[s] = np.ascontiguousarray(tensors[key], dtype=np.float32)
                used.add(key)
            self.params[i] = p
        extra = sorted(set(tensors) - used)
        if extra:
            raise ValueError(f"generator.safetensors: unexpected tensors {extra[:4]}")

    def generate(self, z, classes=None):
        """Images float32 [n, C, H, W] in [-1, 1] from latents z [n, z_dim]
        and, for a class-conditional model, class indices [n] (required)."""
        x = np.asarray(z, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.z_dim:
            raise ValueError(f"z must be [n, {self.z_dim}], got {list(x.shape)}")
        e = None
        if self.num_classes > 0:
            if classes is None:
                raise ValueError("this model is class-conditional: give a class per row")
            y = np.asarray(classes).reshape(-1)
            if y.shape[0] != x.shape[0] or y.dtype.kind not in "iu" or \
                    np.any(y < 0) or np.any(y >= self.num_classes):
                raise ValueError(f"classes must be {x.shape[0]} integers in "
                                 f"0..{self.num_classes - 1}")
            e = self.shared[y.astype(np.int64)]
        elif classes is not None:
            raise ValueError("this model is not class-conditional: give no class")
        if self.config["architecture"] == "dcgan":
            x = x.reshape(x.shape[0], self.z_dim, 1, 1)
        inputs = []  # each layer's input: a residual block's shortcut reads one
        for i, spec in self.layers:
            p, kind = self.params[i], spec[0]
            inputs.append(x)
            if kind == "linear_map":
                x = _linear(x.reshape(x.shape[0], -1), p["weight"], p["bias"])
                x = x.reshape((x.shape[0],) + tuple(spec[1:]))
            elif kind == "conv":
                x = _conv(x, p["weight"], spec[3], spec[4])
            elif kind == "upsample":
                x = _upsample(x)
            elif kind == "resadd":  # G's shortcut: conv1x1(upsample(block input))
                x = x + _conv(_upsample(inputs[spec[1]]), p["weight"], 1, 0)
            elif kind == "linear":
                x = _linear(x.reshape(x.shape[0], -1), p["weight"], p["bias"])
            elif kind == "deconv":
                x = _deconv(x, p["weight"], spec[3], spec[4])
            elif kind == "bn":
                x = _batchnorm(x, p) if e is None else _cond_batchnorm(x, p, e)
            elif kind == "relu":
                x = _relu(x)
            elif kind == "tanh":
                x = np.tanh(x)
        return x.reshape((x.shape[0],) + self.image_shape).astype(np.float32)

    def latents(self, model_input):
        """[n, z_dim] float32 from the rows of model_input (see predict)."""
        return self._latents(_rows(model_input))

    def classes(self, model_input):
        """int64 [n] class indices of the rows of model_input (a
        class-conditional model only; see predict)."""
        return self._classes(_rows(model_input))

    def _classes(self, rows):
        if self.num_classes == 0:
            given = [r for r, row in enumerate(rows) if row[2] is not None]
            if given:
                raise ValueError(f"row {given[0]}: this model is not class-conditional; "
                                 f"give no `class`")
            return None
        out = np.empty(len(rows), dtype=np.int64)
        for r, row in enumerate(rows):
            out[r] = _class(row[2], r, self.num_classes, self.class_names)
        return out

    def _latents(self, rows):
        if not rows:
            raise ValueError("no input rows: give `seed` or `z` per row")
        z = np.empty((len(rows), self.z_dim), dtype=np.float32)
        seed_rows, seeds = [], []
        for r, (seed, zrow, _) in enumerate(rows):
            if zrow is not None:
                v = np.asarray(zrow, dtype=np.float32).reshape(-1)
                if v.shape[0] != self.z_dim:
                    raise ValueError(f"row {r}: z has {v.shape[0]} values, the model takes "
                                     f"{self.z_dim}")
                if not np.all(np.isfinite(v)):
                    raise ValueError(f"row {r}: z holds a value that is not finite")
                z[r] = v
            elif seed is not None:
                seed_rows.append(r)
                seeds.append(seed)
            else:
                raise ValueError(f"row {r}: needs a `seed` (integer) or a `z` "
                                 f"(list of {self.z_dim} floats)")
        if seeds:
            z[seed_rows] = latents_from_seeds(seeds, self.z_dim)
        return z

    def predict(self, model_input, params=None):
        """model_input: a pandas DataFrame (or dict of columns, list of row
        dicts, or numpy array) whose rows each hold a `seed` (int) or a `z`
        (z_dim floats), and for a class-conditional model a `class` (an
        index, or a class name; required). Returns float32 [n, C, H, W] in
        [-1, 1]."""
        del params
        rows = _rows(model_input)
        z = self._latents(rows)
        return self.generate(z, self._classes(rows))

    def get_raw_model(self):
        """PyFuncModel.get_raw_model(): this object (z_dim, image_shape,
        latents(), generate())."""
        return self


def _missing(v):
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    if isinstance(v, np.floating) and np.isnan(v):
        return True
    return False


def _seed(v, r):
    if isinstance(v, (bool, np.bool_)):
        raise ValueError(f"row {r}: seed must be an integer")
    if isinstance(v, (float, np.floating)):
        if not float(v).is_integer():
            raise ValueError(f"row {r}: seed {v} is not an integer")
        v = int(v)
    if isinstance(v, (np.ndarray, list, tuple)):
        a = np.asarray(v).reshape(-1)
        if a.shape[0] != 1:
            raise ValueError(f"row {r}: seed must be one integer")
        return _seed(a[0].item(), r)
    v = int(v)
    if not 0 <= v < (1 << 64):  # ganflow's seeds are unsigned, as in ganflow-serve
        raise ValueError(f"row {r}: seed {v} is outside 0..2^64-1")
    return v


def _class(v, r, k, names):
    """The class index of row r's `class` value v (K = k classes)."""
    hint = "an index 0..%d%s" % (k - 1, " or a class name" if names else "")
    if isinstance(v, (np.ndarray, list, tuple)):
        a = np.asarray(v, dtype=object).reshape(-1)
        if a.shape[0] != 1:
            raise ValueError(f"row {r}: class must be one value ({hint})")
        v = a[0]
    if _missing(v):
        raise ValueError(f"row {r}: this model is class-conditional: every row needs a "
                         f"`class` ({hint})")
    if isinstance(v, (bool, np.bool_)):
        raise ValueError(f"row {r}: class must be {hint}, not a boolean")
    if isinstance(v, (str, np.str_)):
        s = str(v)
        if names and s in names:
            return names.index(s)
        if s.isdigit() and s.isascii() and (len(s) == 1 or s[0] != "0") and int(s) < k:
            return int(s)
        near = [i for i, x in enumerate(names or []) if x.lower() == s.lower()]
        if near:
            raise ValueError(f"row {r}: no class {s!r}; names are case-sensitive: did you "
                             f"mean {names[near[0]]!r} (index {near[0]})?")
        raise ValueError(f"row {r}: no class {s!r} ({hint})")
    if isinstance(v, (float, np.floating)):
        if not float(v).is_integer():
            raise ValueError(f"row {r}: class {v} is not an integer")
        v = int(v)
    if not isinstance(v, (int, np.integer)):
        raise ValueError(f"row {r}: class must be {hint}, got {type(v).__name__}")
    v = int(v)
    if not 0 <= v < k:
        raise ValueError(f"row {r}: class {v} is outside 0..{k - 1}")
    return v


def _rows(data):
    """[(seed or None, z or None, class or None)] from the accepted input
    forms."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - MLflow brings pandas
        pd = None
    if pd is not None and isinstance(data, pd.Series):
        data = data.to_frame()
    if pd is not None and isinstance(data, pd.DataFrame):
        cols = {c: data[c].tolist() for c in ("seed", "z", "class") if c in data.columns}
        if "seed" not in cols and "z" not in cols:
            raise ValueError("input needs a `seed` or a `z` column")
        n = len(data.index)
        return _pairs(cols.get("seed", [None] * n), cols.get("z", [None] * n),
                      cols.get("class", [None] * n))
    if isinstance(data, dict):
        seeds, zs = data.get("seed"), data.get("z")
        if seeds is None and zs is None:
            raise ValueError("input needs `seed` or `z`")
        seeds = None if seeds is None else np.asarray(seeds, dtype=object).reshape(-1).tolist()
        if zs is not None:
            zs = np.asarray(zs, dtype=np.float32)
            zs = list(zs.reshape(1, -1) if zs.ndim == 1 else zs.reshape(zs.shape[0], -1))
        n = len(seeds) if seeds is not None else len(zs)
        cls = data.get("class")
        if cls is not None:
            cls = np.asarray(cls, dtype=object).reshape(-1).tolist()
        return _pairs(seeds or [None] * n, zs if zs is not None else [None] * n,
                      cls if cls is not None else [None] * n)
    if isinstance(data, list) and all(isinstance(x, dict) for x in data):
        return _pairs([x.get("seed") for x in data], [x.get("z") for x in data],
                      [x.get("class") for x in data])
    a = np.asarray(data)
    if a.ndim == 1 and a.dtype.kind in "iu":
        return [(_seed(v, r), None, None) for r, v in enumerate(a.tolist())]
    if a.ndim == 2 and a.dtype.kind in "fiu":
        return [(None, row, None) for row in a.astype(np.float32)]
    raise ValueError("input must be a DataFrame (or dict / records) with `seed` or `z`, "
                     "an integer array of seeds, or a float array [n, z_dim]")


def _pairs(seeds, zs, classes):
    if len(seeds) != len(zs) or len(classes) != len(zs):
        raise ValueError("`seed`, `z` and `class` have different lengths")
    out = []
    for r, (s, z, c) in enumerate(zip(seeds, zs, classes)):
        z_given = z is not None and not (np.isscalar(z) and _missing(z))
        c_given = c is not None and not (np.isscalar(c) and _missing(c))
        out.append((None if _missing(s) or z_given else _seed(s, r),
                    z if z_given else None, c if c_given else None))
    return out


def _load_pyfunc(path):
    """MLflow's loader_module entry point: path is flavors.python_function.data
    (generator.safetensors) inside the model directory."""
    return GanflowGenerator(path)
