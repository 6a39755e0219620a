#!/usr/bin/env python3
"""make_ada_golden.py - golden numbers for tests/model/test_ada.c: the
official StyleGAN2-ADA augmentation pipeline (AugmentPipe, bgc settings)
run on small batches with its random draws recorded, so that ganflow's
pipeline (model/include/gf/ada.h) can be run with the same draws.

Run by hand (not in CI; the output is committed), with torch 2.15 (CPU),
numpy, safetensors (and scipy, which the official module imports):
  git -C <mirror of NVlabs/stylegan2-ada-pytorch> archive d72cc7d \
      | tar -x -C /tmp/sg2ada
  python3 tests/model/golden/make_ada_golden.py /tmp/sg2ada
The argument is the folder of the official repository at commit d72cc7d
(its training/augment.py and torch_utils/ are imported from there; nothing
of it is copied here). Its dnnlib imports `requests` only for downloads:
an empty stand-in module is installed when requests is missing.

How the draws are given: during the official forward, torch.rand and
torch.randn (as the official module reaches them) are wrapped; each call's
result is recorded, in call order, and the calls laid side by side per
sample are exactly the params columns of gf/ada.h (GF_ADA_P_*, 28 columns:
xflip u, gate; rotate90 u, gate; xint ux, uy, gate; scale z, gate;
rotation u, gate; aniso z, gate; rotation u, gate; xfrac zx, zy, gate;
brightness z, gate; contrast z, gate; lumaflip u, gate; hue u, gate;
saturation z, gate). The script checks each call's shape and kind (rand or
randn) against that table. For 1-channel images the official code draws
no hue and saturation: those four columns are filled with fresh values
(unused). F.pad is wrapped too (the module's torch is the global one: the
wrappers are removed after the call) to record the reflect margin the official
code computed.

Writes ada.safetensors (safetensors.numpy), per case K:
  K.x [N,C,H,W], K.params [N,28], K.p [1], K.pad [4] I32 (x0, x1, y0, y1),
  K.y the official output, K.g a random upstream gradient, K.dx the
  gradient of (y * g).sum() wrt x (autograd through the official code).
Cases: rgb_p1 (4x3x16x16, p = 1), rgb_p03 (8x3x16x16, p = 0.3), rgb_wide
(3x3x12x20, p = 0.6), gray_p1 (4x1x16x16, p = 1), gray_p03 (6x1x16x16,
p = 0.3).

It also checks that the official geometric filter (Hz_geom, wavelets['sym6']
normalised) equals PyWavelets' sym6 dec_lo normalised, when pywt is
installed (the C code takes its constants from PyWavelets).
"""
import os
import sys
import types

import numpy as np
import torch
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "ada.safetensors")

# (kind, columns) of each draw call, in the official order (C = 3).
CALLS = [("rand", 1), ("rand", 1),      # xflip
         ("rand", 1), ("rand", 1),      # rotate90
         ("rand", 2), ("rand", 1),      # xint
         ("randn", 1), ("rand", 1),     # scale
         ("rand", 1), ("rand", 1),      # pre-rotation
         ("randn", 1), ("rand", 1),     # aniso
         ("rand", 1), ("rand", 1),      # post-rotation
         ("randn", 2), ("rand", 1),     # xfrac
         ("randn", 1), ("rand", 1),     # brightness
         ("randn", 1), ("rand", 1),     # contrast
         ("rand", 1), ("rand", 1),      # lumaflip
         ("rand", 1), ("rand", 1),      # hue
         ("randn", 1), ("rand", 1)]     # saturation
NCOLS = 28


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def load_official(root):
    try:
        import requests  # noqa: F401
    except ImportError:
        sys.modules["requests"] = types.ModuleType("requests")
    sys.path.insert(0, root)
    from training import augment
    return augment


def run_case(augment, name, shape, p, out, gen):
    pipe = augment.AugmentPipe(xflip=1, rotate90=1, xint=1, scale=1,
                               rotate=1, aniso=1, xfrac=1, brightness=1,
                               contrast=1, lumaflip=1, hue=1, saturation=1)
    pipe.p.copy_(torch.as_tensor(p))
    x = torch.randn(shape, generator=gen).requires_grad_(True)
    rec, pads = [], []
    real_rand, real_randn = torch.rand, torch.randn
    real_pad = torch.nn.functional.pad

    def wrap(kind, fn):
        def draw(*a, **k):
            t = fn(*a, **k)
            rec.append((kind, t.detach().clone()))
            return t
        return draw

    def pad(*a, **k):
        if k.get("mode") == "reflect":  # the geometric margin
            pads.append([int(v) for v in k["pad"]])
        return real_pad(*a, **k)
    augment.torch.rand = wrap("rand", real_rand)
    augment.torch.randn = wrap("randn", real_randn)
    augment.torch.nn.functional.pad = pad
    try:
        y = pipe(x)
    finally:
        augment.torch.rand, augment.torch.randn = real_rand, real_randn
        augment.torch.nn.functional.pad = real_pad
    n, c = shape[0], shape[1]
    calls = CALLS if c == 3 else CALLS[:-4]
    assert len(rec) == len(calls), (name, len(rec))
    cols = []
    for (kind, t), (want, k) in zip(rec, calls):
        assert kind == want and t.numel() == n * k, (name, kind, t.shape)
        cols.append(t.reshape(n, k))
    params = torch.cat(cols, dim=1)
    if c == 1:  # hue and saturation are not drawn: unused filler
        params = torch.cat([params, torch.rand(n, 4, generator=gen)], dim=1)
    assert params.shape == (n, NCOLS)
    assert len(pads) == 1, pads
    g = torch.randn(y.shape, generator=gen)
    (y * g).sum().backward()
    out[name + ".x"] = f32(x)
    out[name + ".params"] = f32(params)
    out[name + ".p"] = np.asarray([p], dtype=np.float32)
    out[name + ".pad"] = np.asarray(pads[0], dtype=np.int32)
    out[name + ".y"] = f32(y)
    out[name + ".g"] = f32(g)
    out[name + ".dx"] = f32(x.grad)
    print(f"{name}: {list(shape)} p {p} pad {pads[0]} "
          f"max|y| {y.abs().max():.3g} max|dx| {x.grad.abs().max():.3g}")


def check_filter(augment):
    try:
        import pywt
    except ImportError:
        print("pywt not installed: the sym6 filter check is skipped")
        return
    lo = np.asarray(pywt.Wavelet("sym6").dec_lo, dtype=np.float64)
    want = torch.as_tensor(lo, dtype=torch.float32)
    want = want / want.sum()
    got = augment.upfirdn2d.setup_filter(augment.wavelets["sym6"])
    assert torch.equal(got, want), (got, want)
    print("sym6: the official Hz_geom equals PyWavelets", pywt.__version__,
          "dec_lo normalised")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_ada_golden.py <stylegan2-ada-pytorch folder "
                 "at d72cc7d>")
    augment = load_official(sys.argv[1])
    check_filter(augment)
    torch.manual_seed(2026)
    gen = torch.Generator().manual_seed(7)
    out = {}
    for name, shape, p in [("rgb_p1", (4, 3, 16, 16), 1.0),
                           ("rgb_p03", (8, 3, 16, 16), 0.3),
                           ("rgb_wide", (3, 3, 12, 20), 0.6),
                           ("gray_p1", (4, 1, 16, 16), 1.0),
                           ("gray_p03", (6, 1, 16, 16), 0.3)]:
        run_case(augment, name, shape, p, out, gen)
    save_file(out, OUT, metadata={"torch": torch.__version__,
                                  "official": "stylegan2-ada-pytorch d72cc7d"})
    print("wrote", OUT, len(out), "tensors")


if __name__ == "__main__":
    main()
