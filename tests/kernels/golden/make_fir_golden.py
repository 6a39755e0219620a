#!/usr/bin/env python3
"""make_fir_golden.py - golden numbers for tests/kernels/test_fir.c and
test_cuda_fir.c: FIR resampling, upfirdn2d (kernels/include/gf/ops.h, "FIR
resampling"), computed by PyTorch on the CPU in float32 from the definition:
upsample by zero insertion, pad (a negative pad crops), convolve with a 2-D
FIR filter, keep every down-th sample, multiply by the gain.

The formulation here is written from that definition with plain PyTorch
operations: zero insertion by stacking x with zeros along a new axis and
reshaping, F.pad for positive pads and slicing for negative ones (cropping),
F.conv2d per channel (groups = C) with the filter flipped for a true
convolution (flip 0) or as it is (flip 1, correlation), strided slicing for
the downsampling, then * gain. The backward is PyTorch's autograd through
it.

Writes fir.safetensors (safetensors.numpy):
  K.x      [N, C, H, W] F32 input
  K.f      [fh, fw]     F32 filter
  K.p      [9] I32      up_y, up_x, down_y, down_x, x0, x1, y0, y1, flip
  K.gain   [1] F32
  K.y      the forward
  K.g      a random upstream gradient of y's shape
  K.dx     the gradient of (y * g).sum() wrt x (autograd)
for the cases K:
  up2    up 2, [1,3,3,1] outer product / 64, gain 4, pad (2,1,2,1) (G's 2x
         upsampling with a 4-tap filter: ((fw+up-1)//2, (fw-up)//2)):
         [2,3,6,5] -> [2,3,12,10]
  down2  down 2, the same filter, pad (1,1,1,1): [2,3,8,6] -> [2,3,4,3]
  blur   up = down = 1, the same filter, pad (2,1,2,1): [1,4,7,9] -> same
  asym   up [1,2], down [2,1], a random 3x5 filter, pad (2,-1,-1,2) (the
         right and top sides cropped), gain 1.5: [2,2,9,6] -> [2,2,4,9]
  flip   flip 1 (correlation), up [2,1], down [1,2], a random 4x3 filter,
         pad (1,1,2,1), gain -0.75: [1,3,5,7] -> [1,3,10,4]
The script also checks what the C ops rely on and exits non-zero on a miss:
  the output shapes, OH = (H up_y + y0 + y1 - fh) // down_y + 1 (same in x);
  the backward as the forward of g with up and down swapped, the flip
  negated and the pads (fw-1-x0, (W-1) up_x - OW down_x + x0 + 1,
  fh-1-y0, (H-1) up_y - OH down_y + y0 + 1) (ops.h), against autograd
  within 1e-5 of max |dx|;
  the forward against the definition evaluated in float64 by plain loops
  (within 1e-5 of max |y|).

Run (needs torch, numpy, safetensors; CI does not: the output is committed):
  python3 tests/kernels/golden/make_fir_golden.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "fir.safetensors")


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def zero_insert(x, axis, up):
    """Inserts up-1 zeros after every sample of x along axis (2 or 3)."""
    if up == 1:
        return x
    z = torch.zeros_like(x)
    s = torch.stack([x] + [z] * (up - 1), dim=axis + 1)
    shape = list(x.shape)
    shape[axis] *= up
    return s.reshape(shape)


def pad_or_crop(x, x0, x1, y0, y1):
    """F.pad for positive pads, slicing for negative ones."""
    x = F.pad(x, [max(x0, 0), max(x1, 0), max(y0, 0), max(y1, 0)])
    H, W = x.shape[2], x.shape[3]
    return x[:, :, max(-y0, 0):H - max(-y1, 0), max(-x0, 0):W - max(-x1, 0)]


def upfirdn2d(x, f, up, down, pad, flip, gain):
    """The definition: zero insertion, pad, conv (per channel), stride."""
    C = x.shape[1]
    x = zero_insert(zero_insert(x, 2, up[0]), 3, up[1])
    x = pad_or_crop(x, *pad)
    w = f if flip else torch.flip(f, [0, 1])
    w = w[None, None].repeat(C, 1, 1, 1)
    y = F.conv2d(x, w, groups=C)
    y = y[:, :, ::down[0], ::down[1]]
    return y * gain


def out_side(n, up, p0, p1, k, down):
    return (n * up + p0 + p1 - k) // down + 1


def loops64(x, f, up, down, pad, flip, gain):
    """The definition by plain loops in float64, from ops.h's formula."""
    N, C, H, W = x.shape
    fh, fw = f.shape
    x0, x1, y0, y1 = pad
    OH = out_side(H, up[0], y0, y1, fh, down[0])
    OW = out_side(W, up[1], x0, x1, fw, down[1])
    w = f if flip else f[::-1, ::-1]
    y = np.zeros((N, C, OH, OW))
    for i in range(OH):
        for j in range(OW):
            for p in range(fh):
                r = i * down[0] + p - y0
                if r < 0 or r >= H * up[0] or r % up[0]:
                    continue
                for q in range(fw):
                    s = j * down[1] + q - x0
                    if s < 0 or s >= W * up[1] or s % up[1]:
                        continue
                    y[:, :, i, j] += (x[:, :, r // up[0], s // up[1]]
                                      .astype(np.float64) * float(w[p, q]))
    return y * float(gain)


def case(out, rng, name, shape, f, up, down, pad, flip, gain):
    N, C, H, W = shape
    fh, fw = f.shape
    x0, x1, y0, y1 = pad
    x = rng.standard_normal(shape).astype(np.float32)
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    ft = torch.from_numpy(f)
    y = upfirdn2d(xt, ft, up, down, pad, flip, np.float32(gain))
    OH = out_side(H, up[0], y0, y1, fh, down[0])
    OW = out_side(W, up[1], x0, x1, fw, down[1])
    if tuple(y.shape) != (N, C, OH, OW):
        sys.exit(f"{name}: y is {tuple(y.shape)}, the formula says "
                 f"{(N, C, OH, OW)}")
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    (y * torch.from_numpy(g)).sum().backward()
    dx = f32(xt.grad)
    yn = f32(y)
    ref = loops64(x, f, up, down, pad, flip, gain)
    err = np.abs(yn - ref).max() / max(np.abs(ref).max(), 1e-30)
    if err > 1e-5:
        sys.exit(f"{name}: F.conv2d's y is {err:.3g} off the float64 loops")
    # the adjoint as an upfirdn2d (ops.h's derivation)
    qpad = (fw - 1 - x0, (W - 1) * up[1] - OW * down[1] + x0 + 1,
            fh - 1 - y0, (H - 1) * up[0] - OH * down[0] + y0 + 1)
    adj = upfirdn2d(torch.from_numpy(g), ft, down, up, qpad, 1 - flip,
                    np.float32(gain))
    if tuple(adj.shape) != tuple(dx.shape):
        sys.exit(f"{name}: the adjoint's shape {tuple(adj.shape)} is not "
                 f"x's {tuple(dx.shape)}")
    err = np.abs(f32(adj) - dx).max() / max(np.abs(dx).max(), 1e-30)
    if err > 1e-5:
        sys.exit(f"{name}: the adjoint upfirdn2d is {err:.3g} off autograd")
    params = np.array([up[0], up[1], down[0], down[1], x0, x1, y0, y1, flip],
                      np.int32)
    out.update({name + ".x": x, name + ".f": np.ascontiguousarray(f),
                name + ".p": params,
                name + ".gain": np.array([gain], np.float32),
                name + ".y": yn, name + ".g": g, name + ".dx": dx})
    print(f"{name}: x {list(x.shape)} -> y {list(yn.shape)}")


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(20261207)
    k = np.array([1, 3, 3, 1], np.float64)
    binom = (np.outer(k, k) / np.outer(k, k).sum()).astype(np.float32)
    out = {}
    case(out, rng, "up2", (2, 3, 6, 5), binom, (2, 2), (1, 1),
         (2, 1, 2, 1), 0, 4.0)
    case(out, rng, "down2", (2, 3, 8, 6), binom, (1, 1), (2, 2),
         (1, 1, 1, 1), 0, 1.0)
    case(out, rng, "blur", (1, 4, 7, 9), binom, (1, 1), (1, 1),
         (2, 1, 2, 1), 0, 1.0)
    f35 = rng.standard_normal((3, 5)).astype(np.float32)
    case(out, rng, "asym", (2, 2, 9, 6), f35, (1, 2), (2, 1),
         (2, -1, -1, 2), 0, 1.5)
    f43 = rng.standard_normal((4, 3)).astype(np.float32)
    case(out, rng, "flip", (1, 3, 5, 7), f43, (2, 1), (1, 2),
         (1, 1, 2, 1), 1, -0.75)
    meta = {"torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata=meta)
    print(f"wrote {OUT}: {len(out)} tensors, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
