#!/usr/bin/env python3
"""make_modconv_golden.py - golden numbers for tests/kernels/test_modconv.c
and test_cuda_modconv.c: StyleGAN2's modulated convolution (Karras et al.
2020, "Analyzing and Improving the Image Quality of StyleGAN"), computed by
PyTorch on the CPU in float32 from its definition:

  ws[n, o, i, a, b] = w[o, i, a, b] * s[n, i]                (modulation)
  d[n, o]           = 1 / sqrt(sum_{i, a, b} ws[n, o, i, a, b]^2 + eps)
  wmod              = ws * d[n, o]                         (demodulation)
                      (or wmod = ws without demodulation)
  y[n]              = conv2d(x[n], wmod[n])  for each sample n, as ONE
                      grouped convolution: x viewed as [1, N Cin, H, W],
                      wmod as [N Cout, Cin, kh, kw], groups = N

and the gradients of (y * g).sum() by autograd wrt x, w, s and wmod (the
last kept with retain_grad: it is what gf_conv2d_batched_bwd hands to
gf_modconv_weight_bwd).

Writes modconv.safetensors (safetensors.numpy, all F32), for each case P:
  P.w [Cout, Cin, kh, kw]   P.s [N, Cin]   P.x [N, Cin, H, W]
  P.g [N, Cout, OH, OW]     the upstream gradient of y
  P.wmod [N Cout, Cin, kh, kw] (the grouped layout)   P.dcoef [N, Cout]
  P.y [N, Cout, OH, OW]     P.dx [N, Cin, H, W]
  P.dwmod [N Cout, Cin, kh, kw]   P.dw [Cout, Cin, kh, kw]   P.ds [N, Cin]
  P.cfg [7] = demodulate, stride h, stride w, pad h, pad w, eps, 0
Cases (N = 3, Cin = 5, Cout = 4, eps = 1e-8):
  syn3   3x3 kernel, pad 1, demodulated, on 8x8 (a synthesis layer)
  rgb1   1x1 kernel, pad 0, not demodulated, on 8x8 (toRGB)
  rect   3x2 kernel, pad (1, 0), demodulated, on 6x10 (non-square)
w, x and g are standard normal; s is 1 + 0.5 standard normal (StyleGAN2's
style affine starts at a bias of 1). dcoef is 1 where not demodulated.

The script checks its grouped convolution against a loop of per-sample
F.conv2d calls and the gradients against float64 autograd (relative to
the largest magnitude), and exits non-zero on a miss.

Run (needs torch, numpy, safetensors; CI does not: the output is committed):
  python3 tests/kernels/golden/make_modconv_golden.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "modconv.safetensors")
N, CIN, COUT, EPS = 3, 5, 4, 1e-8


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def modconv(x, w, s, g, demod, stride, pad):
    """y, wmod, d and the autograd gradients, in x's dtype."""
    n, cin, h, wd = x.shape
    cout, _, kh, kw = w.shape
    ws = w.unsqueeze(0) * s.reshape(n, 1, cin, 1, 1)
    if demod:
        d = 1.0 / torch.sqrt((ws * ws).sum(dim=(2, 3, 4)) + EPS)
        wm = ws * d.reshape(n, cout, 1, 1, 1)
    else:
        d = torch.ones(n, cout, dtype=x.dtype)
        wm = ws
    wmod = wm.reshape(n * cout, cin, kh, kw)
    wmod.retain_grad()
    y = F.conv2d(x.reshape(1, n * cin, h, wd), wmod, stride=stride,
                 padding=pad, groups=n)
    y = y.reshape(n, cout, y.shape[2], y.shape[3])
    (y * g).sum().backward()
    return y, wmod, d


def leaf(a, dtype):
    return torch.from_numpy(a).to(dtype).requires_grad_(True)


def close(name, got, want, rel):
    err = float(np.max(np.abs(got.astype(np.float64) - want)))
    scale = float(np.max(np.abs(want)))
    if err > rel * scale:
        sys.exit(f"{name}: |f32 - f64| = {err:.3g} > {rel} max|t| "
                 f"({scale:.3g})")


def case(out, rng, p, hw, k, demod, stride, pad):
    H, W = hw
    kh, kw = k
    w = rng.standard_normal((COUT, CIN, kh, kw)).astype(np.float32)
    s = (1.0 + 0.5 * rng.standard_normal((N, CIN))).astype(np.float32)
    x = rng.standard_normal((N, CIN, H, W)).astype(np.float32)
    OH = (H + 2 * pad[0] - kh) // stride[0] + 1
    OW = (W + 2 * pad[1] - kw) // stride[1] + 1
    g = rng.standard_normal((N, COUT, OH, OW)).astype(np.float32)
    res = {}
    for dt in (torch.float32, torch.float64):
        xt, wt, st = leaf(x, dt), leaf(w, dt), leaf(s, dt)
        y, wmod, d = modconv(xt, wt, st, torch.from_numpy(g).to(dt), demod,
                             stride, pad)
        res[dt] = {"y": y, "wmod": wmod, "dcoef": d, "dx": xt.grad,
                   "dw": wt.grad, "ds": st.grad, "dwmod": wmod.grad}
    r = res[torch.float32]
    # the grouped convolution is the per-sample convolution
    wm = r["wmod"].detach().reshape(N, COUT, CIN, kh, kw)
    for n in range(N):
        yn = F.conv2d(torch.from_numpy(x[n:n + 1]), wm[n], stride=stride,
                      padding=pad)
        if not torch.allclose(yn[0], r["y"][n].detach(), rtol=1e-5,
                              atol=1e-5):
            sys.exit(f"{p}: grouped conv differs from sample {n}'s conv")
    for name, t in r.items():
        close(f"{p}.{name}", f32(t),
              res[torch.float64][name].detach().numpy(), 1e-5)
    out.update({p + ".w": w, p + ".s": s, p + ".x": x, p + ".g": g})
    for name, t in r.items():
        out[f"{p}.{name}"] = f32(t)
    out[p + ".cfg"] = np.array([demod, stride[0], stride[1], pad[0], pad[1],
                                EPS, 0], np.float32)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(20261207)
    out = {}
    case(out, rng, "syn3", (8, 8), (3, 3), 1, (1, 1), (1, 1))
    case(out, rng, "rgb1", (8, 8), (1, 1), 0, (1, 1), (0, 0))
    case(out, rng, "rect", (6, 10), (3, 2), 1, (1, 1), (1, 0))
    meta = {"torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata=meta)
    print(f"wrote {OUT}: {len(out)} tensors, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
