#!/usr/bin/env python3
"""make_stylegan_goldens.py - the StyleGAN2-ADA snapshot fixtures and goldens.

Run by hand, once; the outputs are committed:
  tests/model/data/sg2_tiny.pkl, tests/model/data/sg2_tiny_cond.pkl
      snapshots in the official network-snapshot-*.pkl shape (a dict with
      training_set_kwargs, G, D, G_ema, augment_pipe), every persistence
      record's module_src replaced by '' (no NVIDIA source is shipped);
  tests/model/golden/stylegan_tiny{,_cond}.safetensors
      inputs and outputs of the official code on the fixture's networks as
      read back from the fixture (write_goldens), float32:
        z [4, 32], c [4, c_dim] (one-hot or [4, 0]), d_img [4, 3, R, R]
        ws_psi1, ws_psi07      G_ema.mapping(z, c, truncation_psi=1 / 0.7)
        img_psi1, img_psi07    G_ema.synthesis(ws, noise_mode='const',
                               force_fp32=True)
        b4_x_*, b4_img_*       the b4 block's (x, img) in that pass
        d_logits, d_logits_fake  D(d_img, c) and D(img_psi1, c), force_fp32
        NET/NAME               copies of a few tensors of the snapshot
      c_dim 0 / 3, R 32 / 16; D's minibatch-std group is 2, so the 4 rows
      of a batch form 2 groups;
  tests/model/golden/stylegan_tiny{,_cond}_tensors.txt
      every state_dict tensor: "<net> <name> <dim0> <dim1> ..." per line;
  tests/fuzz/corpus/model_pickle/
      seeds of the snapshot reader's fuzz target: the first 4 KiB of
      sg2_tiny.pkl, and {'G_ema': one FullyConnectedLayer(3, 2)} in float32,
      float16 (its values also checked by test_sg2_snapshot) and float64,
      and two plain pickles (protocols 2 and 4) of nested containers.

How:
  1. the official code, outside any ganflow checkout, at commit d72cc7d:
       git clone https://github.com/NVlabs/stylegan2-ada-pytorch /tmp/sg2ada
       git -C /tmp/sg2ada checkout d72cc7d
     (its licence, the NVIDIA Source Code License, is non-commercial: it is
     only imported from there, never copied here).
  2. a Python 3.11 with torch 2.15.0 (CPU build), numpy 2.4, scipy 1.17
     (training/augment.py imports it) and safetensors:
       python tests/model/golden/make_stylegan_goldens.py /tmp/sg2ada tests/model
     from the checkout's root. A run rewrites every output: the storages'
     keys inside a pickle are memory addresses, so the fixtures' bytes
     differ from run to run while their values do not.
  requests (imported by dnnlib/util.py for downloads) need not be
  installed: an empty module stands in for it when it is missing.
  Nothing was patched in the official code: its custom ops fall back to
  their reference implementations on the CPU and ran as they are under
  torch 2.15.

The fixture is first pickled as training_loop.py does (module_src set) and
read back; then re-pickled with the persistence classes' module source set
to '' for the dump, and checked: no line of 24 or more characters of any
.py file of the official repository occurs in its bytes.

The parameters are the constructors' initial values plus a deterministic
perturbation (a torch.Generator seeded 1234), so that biases, w_avg and the
augment pipe's p are not zero and G differs from G_ema. Inputs (z, c,
images) are closed-form expressions, not random draws.
"""
import collections
import copy
import inspect
import os
import pickle
import sys

import numpy as np
import torch
from safetensors.numpy import save_file

if len(sys.argv) != 3:
    sys.exit("usage: make_stylegan_goldens.py OFFICIAL_REPO_DIR TESTS_MODEL_DIR")
REPO, OUT = sys.argv[1], sys.argv[2]
sys.path.insert(0, REPO)
try:  # dnnlib/util.py imports requests for open_url, which is not used here
    import requests  # noqa: F401
except ImportError:
    import types
    sys.modules["requests"] = types.ModuleType("requests")
import dnnlib                      # noqa: E402  (the official repo)
from torch_utils import persistence  # noqa: E402
import training.networks           # noqa: E402,F401
import training.augment            # noqa: E402,F401

CONFIGS = {
    # name: (c_dim, img_resolution, channel_base, channel_max)
    "stylegan_tiny": (0, 32, 128, 16),
    "stylegan_tiny_cond": (3, 16, 64, 16),
}
Z_DIM = W_DIM = 32
N = 4  # samples per golden batch


def build(c_dim, res, cbase, cmax):
    """G, D, G_ema and the augment pipe as training_loop.py builds them from
    train.py's kwargs (cfg auto: mapping 2 layers, fp16 in the 4 highest
    resolutions, conv_clamp 256, augpipe bgc)."""
    G_kwargs = dnnlib.EasyDict(class_name="training.networks.Generator", z_dim=Z_DIM, w_dim=W_DIM,
                               mapping_kwargs=dnnlib.EasyDict(), synthesis_kwargs=dnnlib.EasyDict())
    D_kwargs = dnnlib.EasyDict(class_name="training.networks.Discriminator", block_kwargs=dnnlib.EasyDict(),
                               mapping_kwargs=dnnlib.EasyDict(), epilogue_kwargs=dnnlib.EasyDict())
    G_kwargs.synthesis_kwargs.channel_base = D_kwargs.channel_base = cbase
    G_kwargs.synthesis_kwargs.channel_max = D_kwargs.channel_max = cmax
    G_kwargs.mapping_kwargs.num_layers = 2
    G_kwargs.synthesis_kwargs.num_fp16_res = D_kwargs.num_fp16_res = 4
    G_kwargs.synthesis_kwargs.conv_clamp = D_kwargs.conv_clamp = 256
    D_kwargs.epilogue_kwargs.mbstd_group_size = 2
    augment_kwargs = dnnlib.EasyDict(class_name="training.augment.AugmentPipe", xflip=1, rotate90=1, xint=1,
                                     scale=1, rotate=1, aniso=1, xfrac=1, brightness=1, contrast=1,
                                     lumaflip=1, hue=1, saturation=1)
    common = dict(c_dim=c_dim, img_resolution=res, img_channels=3)
    G = dnnlib.util.construct_class_by_name(**G_kwargs, **common).train().requires_grad_(False)
    D = dnnlib.util.construct_class_by_name(**D_kwargs, **common).train().requires_grad_(False)
    gen = torch.Generator().manual_seed(1234)
    for net in (G, D):
        for name, t in list(net.named_parameters()) + list(net.named_buffers()):
            if t.dtype.is_floating_point and t.numel() > 0 and "resample_filter" not in name:
                t.add_(0.05 * torch.randn(t.shape, generator=gen))
    G_ema = copy.deepcopy(G).eval()
    for name, t in G_ema.named_parameters():
        t.add_(0.01 * torch.randn(t.shape, generator=gen))
    augment_pipe = dnnlib.util.construct_class_by_name(**augment_kwargs).train().requires_grad_(False)
    augment_pipe.p.copy_(torch.as_tensor(0.25))
    training_set_kwargs = dnnlib.EasyDict(class_name="training.dataset.ImageFolderDataset", path="tiny.zip",
                                          use_labels=c_dim > 0, max_size=64, xflip=False, resolution=res)
    # The snapshot exactly as training_loop.py writes it.
    snap = dict(training_set_kwargs=dict(training_set_kwargs))
    for name, module in [("G", G), ("D", D), ("G_ema", G_ema), ("augment_pipe", augment_pipe)]:
        snap[name] = copy.deepcopy(module).eval().requires_grad_(False).cpu()
    return snap


def repickle_without_source(snap):
    """pickle.dumps(snap) with every persistence record's module_src = ''."""
    saved = {c: c._orig_module_src for c in persistence._decorators}
    try:
        for c in saved:
            c._orig_module_src = ""
        return pickle.dumps(snap)
    finally:
        for c, s in saved.items():
            c._orig_module_src = s


_SRC = {name: inspect.getsource(sys.modules[name]) for name in ("training.networks", "training.augment")}


def _restore_source(meta):
    """Import hook for reading the fixtures back: the class's source again."""
    if meta.module_src == "":
        mod = "training.augment" if meta.class_name == "AugmentPipe" else "training.networks"
        meta.module_src = _SRC[mod]
    return meta


persistence.import_hook(_restore_source)


def check_no_official_source(blob):
    """No line (>= 24 characters) of any official .py file is in blob."""
    for root, _, files in os.walk(REPO):
        for f in files:
            if not f.endswith(".py"):
                continue
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    s = line.strip().encode()
                    if len(s) >= 24 and s in blob:
                        sys.exit(f"official source in the fixture: {f}: {line.strip()!r}")


def inputs(c_dim, res):
    i = torch.arange(N * Z_DIM, dtype=torch.float64).reshape(N, Z_DIM)
    z = (1.5 * torch.sin(0.37 * i + 0.1)).float()
    c = torch.zeros(N, c_dim)
    for k in range(N):
        if c_dim:
            c[k, k % c_dim] = 1.0
    j = torch.arange(N * 3 * res * res, dtype=torch.float64).reshape(N, 3, res, res)
    img = torch.cos(0.013 * j + 0.3 * torch.sin(0.07 * j)).float()
    return z, c, img


def write_goldens(name, snap, c_dim, res):
    G, D, aug = snap["G_ema"], snap["D"], snap["augment_pipe"]
    z, c, img = inputs(c_dim, res)
    out = {"z": z, "c": c, "d_img": img}
    with torch.no_grad():
        for psi, tag in ((1.0, "psi1"), (0.7, "psi07")):
            ws = G.mapping(z, c, truncation_psi=psi)
            out[f"ws_{tag}"] = ws
            seen = {}
            h = G.synthesis.b4.register_forward_hook(lambda m, a, o: seen.update(x=o[0], img=o[1]))
            out[f"img_{tag}"] = G.synthesis(ws, noise_mode="const", force_fp32=True)
            h.remove()
            out[f"b4_x_{tag}"] = seen["x"]
            out[f"b4_img_{tag}"] = seen["img"]
        out["d_logits"] = D(img, c, force_fp32=True)
        out["d_logits_fake"] = D(out["img_psi1"], c, force_fp32=True)
    # copies of a few tensors as the snapshot holds them, for spot checks
    for net, key in (("G_ema", "synthesis.b4.const"), ("G_ema", "mapping.w_avg"),
                     ("G_ema", "mapping.fc0.weight"), ("G", "mapping.fc0.weight"),
                     ("G_ema", f"synthesis.b{res}.torgb.bias"), ("D", "b4.out.weight"),
                     ("D", f"b{res}.fromrgb.weight"), ("augment_pipe", "p"),
                     ("augment_pipe", "Hz_geom")):
        out[f"{net}/{key}"] = snap[net].state_dict()[key]
    arrays = {k: np.array(v.detach().cpu().float().numpy(), order="C") for k, v in out.items()}
    save_file(arrays, os.path.join(OUT, "golden", f"{name}.safetensors"),
              metadata={"torch": torch.__version__, "official_commit": "d72cc7d",
                        "fixture": f"tests/model/data/{name.replace('stylegan_', 'sg2_')}.pkl"})
    with open(os.path.join(OUT, "golden", f"{name}_tensors.txt"), "w") as fh:
        for net in ("G", "D", "G_ema", "augment_pipe"):
            for key, t in snap[net].state_dict().items():
                fh.write(" ".join([net, key] + [str(d) for d in t.shape]) + "\n")


# The float16 seed's weight and bias: every value exact in float16 (65504
# is its largest finite value, 2**-24 its smallest subnormal).
FC_WEIGHT = [[0.5, -1.25, 3.0], [65504.0, 2.0 ** -24, -0.0]]
FC_BIAS = [1.0, -2.0]


def write_seeds(tiny_blob):
    seeds = os.path.join(OUT, "..", "fuzz", "corpus", "model_pickle")
    os.makedirs(seeds, exist_ok=True)
    with open(os.path.join(seeds, "sg2_tiny_head4k"), "wb") as fh:
        fh.write(tiny_blob[:4096])
    plain = {"t": (1, 2.5, None, True, b"xy"), "l": [300, -1, False, 2 ** 70],
             "od": collections.OrderedDict(a=1), "s": {3}, "nested": [[{"k": (1,)}]]}
    for proto in (2, 4):
        with open(os.path.join(seeds, f"plain_p{proto}.pkl"), "wb") as fh:
            fh.write(pickle.dumps(plain, protocol=proto))
    for tag, dtype in (("f32", torch.float32), ("f16", torch.float16), ("f64", torch.float64)):
        fc = training.networks.FullyConnectedLayer(3, 2).eval().requires_grad_(False)
        fc.weight.copy_(torch.tensor(FC_WEIGHT))
        fc.bias.copy_(torch.tensor(FC_BIAS))
        fc = fc.to(dtype)
        blob = repickle_without_source({"G_ema": fc})
        check_no_official_source(blob)
        with open(os.path.join(seeds, f"sg2_fc_{tag}.pkl"), "wb") as fh:
            fh.write(blob)


def main():
    for name, (c_dim, res, cbase, cmax) in CONFIGS.items():
        snap = build(c_dim, res, cbase, cmax)
        # the official format first, read back as legacy.py reads a torch snapshot
        # (its _LegacyUnpickler differs from pickle only for TensorFlow pickles)
        official = pickle.dumps(snap)
        pickle.loads(official)
        blob = repickle_without_source(snap)
        check_no_official_source(blob)
        back = pickle.loads(blob)
        for net in ("G", "D", "G_ema", "augment_pipe"):
            a, b = snap[net].state_dict(), back[net].state_dict()
            assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a), net
        path = os.path.join(OUT, "data", name.replace("stylegan_", "sg2_") + ".pkl")
        with open(path, "wb") as fh:
            fh.write(blob)
        write_goldens(name, back, c_dim, res)
        if name == "stylegan_tiny":
            write_seeds(blob)
        print(f"{path}: {len(blob)} bytes (official pickle {len(official)} bytes)")


if __name__ == "__main__":
    main()
