#!/usr/bin/env python3
"""make_resample_golden.py - golden numbers for tests/kernels/test_resample.c
and test_cuda_resample.c: the ops of residual (SNGAN / BigGAN-style) blocks,
nearest 2x upsampling, average pooling with its backward and the element-wise
add, computed by PyTorch on the CPU in float32.

Writes resample.safetensors (safetensors.numpy, all F32):
  up1.x [2, 3, 5, 4], up2.x [1, 2, 7, 7]
  upK.y        F.interpolate(x, scale_factor=2, mode="nearest")
  upK.g        a random upstream gradient of y's shape; in up1 one 2x2
               block of g is all -0.0 (PyTorch's grad_input starts at +0,
               so that block's dx is +0) and another mixes -0.0 and +0.0
  upK.dx       the gradient of (y * g).sum() wrt x (autograd)
  pool2.x [2, 3, 8, 6]   2x2 windows, stride 2 (a residual D's downsample)
  pool23.x [1, 2, 4, 9]  2x3 windows, stride 2x3 (unequal sides)
  pool7.x [2, 4, 7, 7]   one 7x7 window (global average pooling)
  pool4.x [3, 5, 4, 4]   one 4x4 window (global average pooling)
  poolK.y      F.avg_pool2d(x, kernel, stride=kernel) (pad 0,
               count_include_pad True: irrelevant without padding)
  poolK.g      a random upstream gradient of y's shape (pool2: one element
               -0.0, whose window's dx is +0)
  poolK.dx     the gradient of (y * g).sum() wrt x (autograd)
  add.a, add.b [3, 4, 5], add.y = a + b
The script checks the orders and roundings the ops promise against
PyTorch's results, bit for bit, and exits non-zero on a difference:
  upsampling backward: dx[i, j] = (((0 + g[2i, 2j]) + g[2i, 2j+1])
      + g[2i+1, 2j]) + g[2i+1, 2j+1] in f32 (PyTorch's CPU kernel walks
      the output pixels row by row, adding into a zeroed grad_input);
  pooling backward: dx[i, j] = 0 + g[i / kh, j / kw] / (kh kw), one f32
      division (then the add to the zeroed grad_input: -0 becomes +0);
  add: one f32 addition.

Run (needs torch, numpy, safetensors; CI does not: the output is committed):
  python3 tests/kernels/golden/make_resample_golden.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "resample.safetensors")


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def leaf(a):
    return torch.from_numpy(a.copy()).requires_grad_(True)


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.uint32),
                                                 b.view(np.uint32))


def upsample(out, rng, p, shape, zeros):
    N, C, H, W = shape
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal((N, C, 2 * H, 2 * W)).astype(np.float32)
    if zeros:
        g[0, 0, 0:2, 0:2] = -0.0       # dx[0, 0, 0, 0] = +0 (not -0)
        g[0, 1, 2:4, 2:4] = [[-0.0, 0.0], [-0.0, -0.0]]
    xt = leaf(x)
    y = F.interpolate(xt, scale_factor=2, mode="nearest")
    (y * torch.from_numpy(g)).sum().backward()
    out.update({p + ".x": x, p + ".y": f32(y), p + ".g": g,
                p + ".dx": f32(xt.grad)})
    want_y = np.repeat(np.repeat(x, 2, axis=2), 2, axis=3)
    if not same_bits(want_y, out[p + ".y"]):
        sys.exit(f"{p}: PyTorch's y is not x[i / 2, j / 2]")
    s = np.zeros(shape, np.float32)
    for a, b in ((0, 0), (0, 1), (1, 0), (1, 1)):
        s = (s + g[:, :, a::2, b::2]).astype(np.float32)
    if not same_bits(s, out[p + ".dx"]):
        sys.exit(f"{p}: PyTorch's dx is not the in-order f32 sum from 0")
    if zeros and np.signbit(out[p + ".dx"][0, 0, 0, 0]):
        sys.exit(f"{p}: PyTorch's dx of a -0 block is -0")


def pool(out, rng, p, shape, k, neg_zero):
    N, C, H, W = shape
    kh, kw = k
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal((N, C, H // kh, W // kw)).astype(np.float32)
    if neg_zero:
        g[0, 0, 0, 0] = -0.0
    xt = leaf(x)
    y = F.avg_pool2d(xt, k, stride=k)
    (y * torch.from_numpy(g)).sum().backward()
    out.update({p + ".x": x, p + ".y": f32(y), p + ".g": g,
                p + ".dx": f32(xt.grad)})
    q = (g / np.float32(kh * kw)).astype(np.float32)
    q = (np.float32(0.0) + q).astype(np.float32)
    want = np.repeat(np.repeat(q, kh, axis=2), kw, axis=3)
    if not same_bits(want, out[p + ".dx"]):
        sys.exit(f"{p}: PyTorch's dx is not 0 + g / (kh kw) in f32")


def add(out, rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 4, 5)).astype(np.float32)
    y = f32(torch.from_numpy(a) + torch.from_numpy(b))
    out.update({"add.a": a, "add.b": b, "add.y": y})
    if not same_bits((a + b).astype(np.float32), y):
        sys.exit("add: PyTorch's a + b is not the f32 sum")


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(20241126)
    out = {}
    upsample(out, rng, "up1", (2, 3, 5, 4), True)
    upsample(out, rng, "up2", (1, 2, 7, 7), False)
    pool(out, rng, "pool2", (2, 3, 8, 6), (2, 2), True)
    pool(out, rng, "pool23", (1, 2, 4, 9), (2, 3), False)
    pool(out, rng, "pool7", (2, 4, 7, 7), (7, 7), False)
    pool(out, rng, "pool4", (3, 5, 4, 4), (4, 4), False)
    add(out, rng)
    meta = {"torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata=meta)
    print(f"wrote {OUT}: {len(out)} tensors, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
