#!/usr/bin/env python3
"""make_ada_ops_golden.py - golden numbers for tests/kernels/test_ada_ops.c
and test_cuda_ada_ops.c: the ADA resampling ops (kernels/include/gf/ops.h,
"adaptive discriminator augmentation"), computed by PyTorch on the CPU in
float32 with its own operations:
  reflect  F.pad(x, [x0, x1, y0, y1], mode='reflect')
  sample   F.grid_sample(x, F.affine_grid(theta, [N, C, OH, OW],
           align_corners=False), mode='bilinear', padding_mode='zeros',
           align_corners=False)
  color    the colour step written here from its definition: RGB
           y = m[:, :3, :3] @ x + m[:, :3, 3:]; one channel: the mean of
           rows 0..2, y = x * sum(a[:3]) + a[3]
and the backward wrt the image by autograd of (y * g).sum().

Writes ada_ops.safetensors (safetensors.numpy), per case K:
  K.x [N,C,H,W], K.y, K.g (upstream gradient, y's shape), K.dx, and
  K.pad [4] I32 (reflect cases) or K.m (theta [N,2,3] / colour [N,4,4]).
Cases:
  reflect      [2,3,5,7], pad (3,1,4,2) -> [2,3,11,11] (pads up to side-1)
  reflect1     [1,2,1,4], pad (2,3,0,0) (a 1-row image)
  sample       [3,2,6,7] -> [3,2,9,8]; theta: sample 0 identity, 1 a
               rotation by 0.7 rad with scale 1.3 and shift (0.1, -0.2),
               2 a shear reaching outside the image (zeros there)
  sample_up    [2,3,5,5] -> [2,3,10,10], a mild random affine
  color3       [3,3,4,5], random 4x4 matrices (row 3 = [0,0,0,1])
  color1       [2,1,4,5], the 1-channel rule

Run (needs torch, numpy, safetensors; CI does not: the output is
committed), torch 2.15 (CPU):
  python3 tests/kernels/golden/make_ada_ops_golden.py
"""
import math
import os

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "ada_ops.safetensors")


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def color(x, m):
    n, c, h, w = x.shape
    v = x.reshape(n, c, h * w)
    if c == 3:
        v = m[:, :3, :3] @ v + m[:, :3, 3:]
    else:
        a = m[:, :3, :].mean(dim=1, keepdim=True)
        v = v * a[:, :, :3].sum(dim=2, keepdim=True) + a[:, :, 3:]
    return v.reshape(n, c, h, w)


def run(out, name, x, fn, extra):
    x = x.clone().requires_grad_(True)
    y = fn(x)
    g = torch.randn(y.shape)
    (y * g).sum().backward()
    out[name + ".x"] = f32(x)
    out[name + ".y"] = f32(y)
    out[name + ".g"] = f32(g)
    out[name + ".dx"] = f32(x.grad)
    out.update({name + "." + k: v for k, v in extra.items()})


def main():
    torch.manual_seed(2026)
    out = {}
    for name, shape, pad in [("reflect", [2, 3, 5, 7], [3, 1, 4, 2]),
                             ("reflect1", [1, 2, 1, 4], [2, 3, 0, 0])]:
        run(out, name, torch.randn(shape),
            lambda x, p=pad: F.pad(x, p, mode="reflect"),
            {"pad": np.asarray(pad, dtype=np.int32)})

    def rot(a, s, tx, ty):
        return [[s * math.cos(a), -s * math.sin(a), tx],
                [s * math.sin(a), s * math.cos(a), ty]]
    th = torch.tensor([[[1.0, 0, 0], [0, 1.0, 0]], rot(0.7, 1.3, 0.1, -0.2),
                       [[0.8, 0.9, -0.3], [-0.2, 1.4, 0.5]]])
    th2 = torch.eye(2, 3).repeat(2, 1, 1) + 0.15 * torch.randn(2, 2, 3)
    for name, shape, oshape, t in [("sample", [3, 2, 6, 7], [9, 8], th),
                                   ("sample_up", [2, 3, 5, 5], [10, 10], th2)]:
        def fn(x, t=t, o=oshape):
            grid = F.affine_grid(t, [x.shape[0], x.shape[1]] + o,
                                 align_corners=False)
            return F.grid_sample(x, grid, mode="bilinear",
                                 padding_mode="zeros", align_corners=False)
        run(out, name, torch.randn(shape), fn, {"m": f32(t)})
    for name, shape in [("color3", [3, 3, 4, 5]), ("color1", [2, 1, 4, 5])]:
        m = torch.randn(shape[0], 4, 4)
        m[:, 3, :] = torch.tensor([0.0, 0, 0, 1])
        run(out, name, torch.randn(shape), lambda x, m=m: color(x, m),
            {"m": f32(m)})
    save_file(out, OUT, metadata={"torch": torch.__version__})
    print("wrote", OUT, len(out), "tensors")


if __name__ == "__main__":
    main()
