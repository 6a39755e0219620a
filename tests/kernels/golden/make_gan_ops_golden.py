#!/usr/bin/env python3
"""make_gan_ops_golden.py - golden numbers for tests/kernels/test_gan_ops.c
and test_cuda_gan_ops.c: the hinge loss, the mean, lerp (an EMA update) and
spectral normalization, computed by PyTorch on the CPU in float32.

Writes gan_ops.safetensors (safetensors.numpy; every tensor F32) holding
  hinge.x                       64 logits, among them exact +-1 (the kinks of
                                relu(1 -+ x)), 0 and values far on each side
  hinge.{real,fake}.loss        relu(1 + sign x).mean(), sign -1 / +1
  hinge.{real,fake}.dx          its gradient wrt x for an upstream gradient
                                of hinge.dloss (autograd)
  hinge.dloss                   [1]
  mean.x, mean.loss             x.mean() over 1000 values
  lerp.avg, lerp.x              1003 values (not a multiple of any vector
                                width, so both ATen's vector body and its
                                scalar tail are covered)
  lerp.beta                     the betas, in order: 0, 0.3, 0.5, 0.999, 1
  lerp.out<i>                   torch.lerp(x, avg, beta_i)
  sn.<case>.w                   the weight ([8,4,3,3] conv, [5,7] linear)
  sn.<case>.u0, .v0             the power-iteration vectors before the call
  sn.<case>.g                   a random dw_sn (the gradient of
                                sum(w_sn * g) wrt w_sn)
  sn.<case>.it<n>.{u,v,sigma,w_sn,dw}
                                after n power iterations (n = 0: eval mode,
                                which reuses u0, v0; n = 1: training; n = 3
                                for the linear case too): the updated
                                vectors, sigma, the weight torch's
                                spectral_norm hook gives and the autograd
                                gradient of sum(w_sn * g) wrt weight_orig
The spectral-norm numbers come from torch.nn.utils.spectral_norm itself
(the old API, dim 0): a module is wrapped, its weight_orig / weight_u /
weight_v are set, and its forward pre-hook runs in training or eval mode.
sigma is recomputed as the hook does (dot(u, mv(W, v))) and checked
bit-for-bit against the hook's weight (w / sigma).

Run (needs torch, numpy, safetensors; CI does not: the output is committed):
  python3 tests/kernels/golden/make_gan_ops_golden.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "gan_ops.safetensors")


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def hinge(out, rng):
    x = rng.standard_normal(64).astype(np.float32) * 2
    x[:8] = [1.0, -1.0, 1.0, -1.0, 0.0, 5.0, -5.0, 0.5]
    dloss = np.float32(0.75)
    out["hinge.x"] = x
    out["hinge.dloss"] = np.array([dloss], np.float32)
    for name, sign in (("real", -1.0), ("fake", 1.0)):
        xt = torch.from_numpy(x.copy()).requires_grad_(True)
        # as SNGAN/BigGAN write it: relu(1 - D(x)) on real, relu(1 + D(G(z)))
        # on fake
        loss = torch.relu(1.0 - xt).mean() if sign < 0 else \
            torch.relu(1.0 + xt).mean()
        loss.backward(torch.tensor(float(dloss)))
        out[f"hinge.{name}.loss"] = f32(loss).reshape(1)
        out[f"hinge.{name}.dx"] = f32(xt.grad)


def mean(out, rng):
    x = (rng.standard_normal(1000) + 0.25).astype(np.float32)
    out["mean.x"] = x
    out["mean.loss"] = f32(torch.from_numpy(x).mean()).reshape(1)


def lerp(out, rng):
    n = 1003
    avg = rng.standard_normal(n).astype(np.float32)
    x = (avg + 0.01 * rng.standard_normal(n)).astype(np.float32)
    x[:4] = [0.0, 1e-30, -3.0e4, 7.0]
    avg[:4] = [0.0, 2.0, 1e-3, 7.0]
    betas = [0.0, 0.3, 0.5, 0.999, 1.0]
    out["lerp.avg"] = avg
    out["lerp.x"] = x
    out["lerp.beta"] = np.array(betas, np.float32)
    for i, b in enumerate(betas):
        # p_ema.copy_(p.lerp(p_ema, beta)) of StyleGAN2-ADA: beta a Python
        # float
        r = torch.lerp(torch.from_numpy(x), torch.from_numpy(avg), b)
        out[f"lerp.out{i}"] = f32(r)


def spectral(out, rng, case, module, iters):
    w = rng.standard_normal(tuple(module.weight.shape)).astype(np.float32)
    w *= np.float32(0.3)
    R = w.shape[0]
    K = w.size // R
    u0 = rng.standard_normal(R).astype(np.float32)
    v0 = rng.standard_normal(K).astype(np.float32)
    u0 /= np.float32(np.linalg.norm(u0))
    v0 /= np.float32(np.linalg.norm(v0))
    g = rng.standard_normal(w.shape).astype(np.float32)
    p = f"sn.{case}"
    out[p + ".w"] = w
    out[p + ".u0"] = u0
    out[p + ".v0"] = v0
    out[p + ".g"] = g
    for n in iters:
        m = nn.utils.spectral_norm(module, n_power_iterations=max(n, 1))
        with torch.no_grad():
            m.weight_orig.copy_(torch.from_numpy(w))
            m.weight_u.copy_(torch.from_numpy(u0))
            m.weight_v.copy_(torch.from_numpy(v0))
        m.train(n > 0)
        m.weight_orig.grad = None
        hook = next(h for h in m._forward_pre_hooks.values()
                    if isinstance(h, nn.utils.spectral_norm.__globals__[
                        "SpectralNorm"]))
        hook(m, None)
        w_sn = m.weight
        u, v = m.weight_u.detach().clone(), m.weight_v.detach().clone()
        with torch.no_grad():
            wm = m.weight_orig.reshape(R, -1)
            sigma = torch.dot(u, torch.mv(wm, v))
            if not torch.equal(m.weight_orig / sigma, w_sn):
                sys.exit(f"{case} it{n}: sigma differs from the hook's")
        (w_sn * torch.from_numpy(g)).sum().backward()
        q = f"{p}.it{n}"
        out[q + ".u"] = f32(u)
        out[q + ".v"] = f32(v)
        out[q + ".sigma"] = f32(sigma).reshape(1)
        out[q + ".w_sn"] = f32(w_sn)
        out[q + ".dw"] = f32(m.weight_orig.grad)
        nn.utils.remove_spectral_norm(m)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(20240611)
    out = {}
    hinge(out, rng)
    mean(out, rng)
    lerp(out, rng)
    spectral(out, rng, "conv", nn.Conv2d(4, 8, 3, bias=False), (0, 1))
    spectral(out, rng, "linear", nn.Linear(7, 5, bias=False), (0, 1, 3))
    meta = {"torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata=meta)
    print(f"wrote {OUT}: {len(out)} tensors, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
