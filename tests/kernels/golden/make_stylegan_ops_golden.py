#!/usr/bin/env python3
"""make_stylegan_ops_golden.py - golden numbers for
tests/kernels/test_stylegan_ops.c and test_cuda_stylegan_ops.c: StyleGAN2's
small layers (fused bias + activation + gain + clamp, minibatch standard
deviation, noise injection), written here as plain PyTorch from their
mathematical definitions (Karras et al. 2020) and computed on the CPU in
float32, forward and autograd backward.

Writes stylegan_ops.safetensors (safetensors.numpy, all F32):
  ba_<case>.x, .b, .dy   inputs (.b absent in the case without bias);
  ba_<case>.p [4]        act (0 linear, 1 leaky ReLU), alpha, gain, clamp
                         (clamp < 0: none), each an f32 value
  ba_<case>.y    torch.clamp(F.leaky_relu(x + b.view(1, -1, 1, 1), alpha)
                 * gain, -clamp, clamp) (linear: no leaky_relu; no clamp:
                 no torch.clamp)
  ba_<case>.dx, .db      autograd: y.backward(dy)
      cases: lin2 [6, 5] linear gain 1; lrelu4 [2, 3, 5, 4] leaky ReLU
      0.2 gain sqrt(2) (as f32); lrelu4c [3, 4, 6, 5] the same with clamp
      2.5 (33 of 360 clamped); lin4c [2, 3, 4, 7] linear with clamp 1.5
      (55 of 168); lrelu2c [300, 4] leaky ReLU with clamp 256 on values
      of a few hundred (StyleGAN2's conv_clamp; 134 of 1200 clamped; 300
      samples > 256 lanes); nob4 [1, 2, 17, 16] leaky ReLU without a bias
      (272 pixels > 256 lanes).
      Every dy holds some -0.0; no pre-clamp value equals +-clamp (a tie,
      where the op and PyTorch may differ by design), and y > 0 exactly
      where x + b > 0 (checked here).
  mb<k>.x, .dy, .p [2] (group_size, num_channels)
  mb<k>.y        cat([x, s], 1), s the per-group statistic: x viewed as
                 [G, M, F, C/F, H, W] (sample n = g M + m), minus its mean
                 over G, squared, mean over G, + 1e-8, sqrt, mean over
                 (C/F, H, W), repeated to [N, F, H, W]
  mb<k>.dx       autograd: y.backward(dy)
      cases: mb1 [8, 4, 4, 4] G = 4, F = 1; mb2 [6, 4, 3, 5] G = 3, F = 2;
      mb3 [2, 4, 4, 4] group_size 4 > N (G = 2), F = 2; mb4 [3, 2, 2, 2]
      group_size 1 (G = 1: sd = sqrt(1e-8)), F = 1
  nz<k>.x, .noise [N, 1, H, W], .strength [1], .dy
  nz<k>.y        x + noise * strength
  nz<k>.dx, .dstrength   autograd: y.backward(dy)
      cases: nz1 [2, 3, 4, 5]; nz2 [1, 3, 17, 16] (272 pixels > 256 lanes)
The script checks, bit for bit, what the ops promise to reproduce: the
bias_act forward's roundings (numpy f32, one rounding per step), its dx by
the op's rule read off y (m = dy where |y| < clamp else +0, times gain, times
alpha where y <= 0), noise's y and dx; and it prints how far PyTorch's f32
sums (db, mbstd, dstrength) are from the same sums in float64, which the
tests' tolerances cover.

Run (needs torch, numpy, safetensors; CI does not: the output is committed):
  python3 tests/kernels/golden/make_stylegan_ops_golden.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "stylegan_ops.safetensors")

LINEAR, LRELU = 0, 1


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def leaf(a):
    return torch.from_numpy(a.copy()).requires_grad_(True)


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(
        np.ascontiguousarray(a).view(np.uint32),
        np.ascontiguousarray(b).view(np.uint32))


def sprinkle_neg_zero(a, every):
    flat = a.reshape(-1)
    flat[::every] = -0.0
    return a


def rel(a, b):
    """max |a - b| / max |b| (b the float64 reference)."""
    return float(np.max(np.abs(a.astype(np.float64) - b)) /
                 max(np.max(np.abs(b)), 1e-300))


# ---- bias_act ---------------------------------------------------------------

def bias_act(out, rng, name, shape, act, alpha, gain, clamp, scale,
             with_bias=True):
    alpha, gain, clamp = (float(np.float32(v)) for v in (alpha, gain, clamp))
    C = shape[1]
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    b = (rng.standard_normal(C) * scale * 0.5).astype(np.float32)
    dy = sprinkle_neg_zero(rng.standard_normal(shape).astype(np.float32), 7)
    xt = leaf(x)
    bt = leaf(b) if with_bias else None
    t = xt + bt.view([1, C] + [1] * (len(shape) - 2)) if with_bias else xt
    a = F.leaky_relu(t, alpha) if act == LRELU else t
    v = a * gain
    y = torch.clamp(v, -clamp, clamp) if clamp >= 0 else v
    y.backward(torch.from_numpy(dy))
    p = name
    out.update({p + ".x": x, p + ".dy": dy, p + ".y": f32(y),
                p + ".dx": f32(xt.grad),
                p + ".p": np.array([act, alpha, gain, clamp], np.float32)})
    if with_bias:
        out.update({p + ".b": b, p + ".db": f32(bt.grad)})

    # the forward's roundings, in numpy f32
    bb = b.reshape([1, C] + [1] * (len(shape) - 2))
    tn = (x + bb).astype(np.float32) if with_bias else x
    an = np.where(tn > 0, tn, (tn * np.float32(alpha)).astype(np.float32)) \
        if act == LRELU else tn
    vn = (an * np.float32(gain)).astype(np.float32)
    if clamp >= 0:
        if np.any(np.abs(vn) == np.float32(clamp)):
            sys.exit(f"{p}: a value sits exactly on the clamp (a tie)")
        clamped = int(np.sum(np.abs(vn) > np.float32(clamp)))
        if clamped == 0:
            sys.exit(f"{p}: nothing is clamped")
        yn = np.minimum(np.maximum(vn, np.float32(-clamp)), np.float32(clamp))
    else:
        clamped, yn = 0, vn
    if not same_bits(yn, out[p + ".y"]):
        sys.exit(f"{p}: PyTorch's y is not the f32 steps of ops.h")
    yv = out[p + ".y"]
    if act == LRELU and not np.array_equal(yv > 0, tn > 0):
        sys.exit(f"{p}: y > 0 is not x + b > 0")
    # dx by the op's rule, from y alone
    pas = (np.abs(yv) < np.float32(clamp)) if clamp >= 0 else \
        np.ones(yv.shape, bool)
    m = np.where(pas, dy, np.float32(0.0)).astype(np.float32)
    d = (m * np.float32(gain)).astype(np.float32)
    if act == LRELU:
        d = np.where(yv > 0, d, (d * np.float32(alpha)).astype(np.float32))
    if not same_bits(d.astype(np.float32), out[p + ".dx"]):
        sys.exit(f"{p}: PyTorch's dx is not the op's rule read off y")
    msg = f"{p}: {clamped} of {x.size} clamped"
    if with_bias:
        axes = tuple(i for i in range(len(shape)) if i != 1)
        ref = d.astype(np.float64).sum(axis=axes)
        msg += f", db vs float64: {rel(out[p + '.db'], ref):.2e} of max|db|"
    print(msg)


# ---- minibatch standard deviation -------------------------------------------

def mbstd_torch(x, group_size, nf):
    N, C, H, W = x.shape
    G = min(group_size, N)
    M = N // G
    v = x.reshape(G, M, nf, C // nf, H, W)
    v = v - v.mean(dim=0)
    v = v.square().mean(dim=0)
    v = (v + 1e-8).sqrt()
    v = v.mean(dim=[2, 3, 4])                      # [M, F]
    v = v.reshape(M, nf, 1, 1).repeat(G, 1, H, W)  # sample g M + m: row m
    return torch.cat([x, v], dim=1)


def mbstd_f64(x, group_size, nf):
    """stat [M, F] in float64, the op's definition."""
    N, C, H, W = x.shape
    G = min(group_size, N)
    M = N // G
    v = x.astype(np.float64).reshape(G, M, nf, C // nf, H, W)
    v = np.sqrt(((v - v.mean(axis=0)) ** 2).mean(axis=0) + 1e-8)
    return v.mean(axis=(2, 3, 4))


def mbstd(out, rng, name, shape, group_size, nf):
    N, C, H, W = shape
    x = (rng.standard_normal(shape) * 1.5 + 0.25).astype(np.float32)
    dy = sprinkle_neg_zero(
        rng.standard_normal((N, C + nf, H, W)).astype(np.float32), 11)
    xt = leaf(x)
    y = mbstd_torch(xt, group_size, nf)
    y.backward(torch.from_numpy(dy))
    p = name
    out.update({p + ".x": x, p + ".dy": dy, p + ".y": f32(y),
                p + ".dx": f32(xt.grad),
                p + ".p": np.array([group_size, nf], np.float32)})
    if not same_bits(out[p + ".y"][:, :C], x):
        sys.exit(f"{p}: y's first C channels are not x")
    G = min(group_size, N)
    M = N // G
    ref = mbstd_f64(x, group_size, nf)
    stat = out[p + ".y"][:, C:, 0, 0]              # [N, F]
    want = np.concatenate([ref] * G, axis=0)
    print(f"{p}: G {G} M {M} F {nf}, stat vs float64: "
          f"{rel(stat, want):.2e} of max|stat|")


# ---- noise injection --------------------------------------------------------

def noise(out, rng, name, shape):
    N, C, H, W = shape
    x = rng.standard_normal(shape).astype(np.float32)
    z = rng.standard_normal((N, 1, H, W)).astype(np.float32)
    s = np.array([0.37], np.float32)
    dy = sprinkle_neg_zero(rng.standard_normal(shape).astype(np.float32), 5)
    xt, st = leaf(x), leaf(s.reshape(()))   # StyleGAN2's strength is 0-d
    y = xt + torch.from_numpy(z) * st
    y.backward(torch.from_numpy(dy))
    p = name
    out.update({p + ".x": x, p + ".noise": z, p + ".strength": s,
                p + ".dy": dy, p + ".y": f32(y), p + ".dx": f32(xt.grad),
                p + ".dstrength": f32(st.grad).reshape(1)})
    yn = (x + (z * s[0]).astype(np.float32)).astype(np.float32)
    if not same_bits(yn, out[p + ".y"]):
        sys.exit(f"{p}: PyTorch's y is not x + (noise * strength) in f32")
    if not same_bits(dy, out[p + ".dx"]):
        sys.exit(f"{p}: PyTorch's dx is not dy")
    ref = np.sum(dy.astype(np.float64) * z.astype(np.float64))
    d = abs(float(out[p + ".dstrength"][0]) - ref)
    tot = np.sum(np.abs(dy.astype(np.float64) * z.astype(np.float64)))
    print(f"{p}: dstrength vs float64: {d:.2e} = {d / tot:.2e} of "
          f"sum|terms|")


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(20261207)
    out = {}
    sqrt2 = np.sqrt(2.0)
    bias_act(out, rng, "ba_lin2", (6, 5), LINEAR, 0.0, 1.0, -1.0, 1.0)
    bias_act(out, rng, "ba_lrelu4", (2, 3, 5, 4), LRELU, 0.2, sqrt2, -1.0,
             1.0)
    bias_act(out, rng, "ba_lrelu4c", (3, 4, 6, 5), LRELU, 0.2, sqrt2, 2.5,
             2.0)
    bias_act(out, rng, "ba_lin4c", (2, 3, 4, 7), LINEAR, 0.0, 1.0, 1.5, 1.5)
    bias_act(out, rng, "ba_lrelu2c", (300, 4), LRELU, 0.2, sqrt2, 256.0,
             150.0)
    bias_act(out, rng, "ba_nob4", (1, 2, 17, 16), LRELU, 0.2, sqrt2, -1.0,
             1.0, with_bias=False)
    mbstd(out, rng, "mb1", (8, 4, 4, 4), 4, 1)
    mbstd(out, rng, "mb2", (6, 4, 3, 5), 3, 2)
    mbstd(out, rng, "mb3", (2, 4, 4, 4), 4, 2)
    mbstd(out, rng, "mb4", (3, 2, 2, 2), 1, 1)
    noise(out, rng, "nz1", (2, 3, 4, 5))
    noise(out, rng, "nz2", (1, 3, 17, 16))
    meta = {"torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata=meta)
    print(f"wrote {OUT}: {len(out)} tensors, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
