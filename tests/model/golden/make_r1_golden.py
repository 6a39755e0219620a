#!/usr/bin/env python3
"""make_r1_golden.py - golden numbers for tests/model/test_r1.c: the R1
gradient penalty of a discriminator (gf_net_r1, gf/net.h) computed by
PyTorch with double backpropagation (torch.autograd.grad(create_graph=True)).

Each case builds D as make_golden.py does (the same nn.Sequential, the same
formula weights with tensor ids from 64, spectral norm's u and v from the
normalized formula after 20 power iterations in double, dropout masks from the Philox re-implementation keyed
as gf_net_forward keys them: (seed, GF_RNG_DROPOUT, step, pass * 64 +
layer) at the words of global samples sample0 ..), a real batch uniform in
(-1, 1), and computes
  g = dD/dx           grad of sum_i D(x_i) wrt x, create_graph=True
  P = (1/n) sum_i ||g_i||^2
  dP/dtheta * scale   torch.autograd.grad(scale * P, D's parameters)
It writes to golden/r1_<case>.safetensors
  input.real                    the batch (full)
  sn.<name>                     SN cases: u and v (f32, full; loaded as is)
  penalty                       [P] (F64)
  grad.<name>, grad_stats.<name>
                                strided sample (k = min(2048, n) entries at
                                (i * n) // k) of each parameter's gradient,
                                and [sum, L2] (F64); biases' are 0 (P does
                                not depend on them: allow_unused gives None)
  nosn.grad_stats.<name>        SN cases: [sum, L2] of the gradient with
                                sigma detached, i.e. a sweep that forgets
                                spectral norm's u v^T term (test_r1.c checks
                                that its comparison would see that bug)
Metadata: the model config fields, batch, seed, step, sample0, pass, scale.

Run: python3 make_r1_golden.py [OUTDIR [CASE...]]
(default: here, every case)
"""
import os
import sys
import zlib

import numpy as np
import torch
from safetensors.numpy import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import (GF_RNG_DROPOUT, MaskDropout, Net, SNLayer, load_formula,  # noqa: E402
                         nn, sample, stream_uniform)


def set_masks(d, seed, step, pas, sample0, n):
    """make_golden.set_masks at the words of global samples sample0 .. sample0
    + n - 1 (gf_rng_sample_stream's offset sample0 * features)."""
    for i, module in enumerate(d.main):
        if isinstance(module, MaskDropout):
            feats = next(m.weight_orig if isinstance(m, SNLayer) else m.weight
                         for m in (d.main[j] for j in range(i - 1, -1, -1))
                         if isinstance(m, (nn.Linear, SNLayer))).shape[0]
            u = stream_uniform(seed, GF_RNG_DROPOUT, step, 0, pas * 64 + i, (sample0 + n) * feats)
            u = u[sample0 * feats:]
            p32 = np.float32(module.p)
            scale = np.float32(1.0 / (1.0 - np.float64(p32)))
            mult = np.where(u >= p32, scale, np.float32(0)).astype(np.float32).reshape(n, feats)
            module.mult = torch.from_numpy(mult)


class DetachedSigma:
    """Context: every SNLayer of d divides by sigma.detach() (the wrong R1
    gradient of a sweep without spectral norm's backward term)."""

    def __init__(self, d):
        self.layers = [m for m in d.main if isinstance(m, SNLayer)]

    def __enter__(self):
        for m in self.layers:  # an instance attribute hides the method
            m.sigma = (lambda mm: (lambda: SNLayer.sigma(mm).detach()))(m)

    def __exit__(self, *a):
        for m in self.layers:
            del m.sigma


def converge_sn(d, iters=20):
    """Spectral norm's u and v: from their formula start (load_formula),
    `iters` power iterations in double, rounded once to f32 (the formula
    vectors themselves give sigma = u . (W v) far below W's top singular
    value, even negative, and a D with weights of ~1/sigma). Returns
    {buffer name: f32 array}, written to the file for the C side to load."""
    out = {}
    with torch.no_grad():
        for i, m in enumerate(d.main):
            if not isinstance(m, SNLayer):
                continue
            w = m.matrix().numpy().astype(np.float64)
            u = m.weight_u.numpy().astype(np.float64)
            v = m.weight_v.numpy().astype(np.float64)
            for _ in range(iters):
                v = w.T @ u
                v /= max(np.linalg.norm(v), 1e-12)
                u = w @ v
                u /= max(np.linalg.norm(u), 1e-12)
            m.weight_u.copy_(torch.from_numpy(u.astype(np.float32)))
            m.weight_v.copy_(torch.from_numpy(v.astype(np.float32)))
            out["main.%d.weight_u" % i] = m.weight_u.numpy().copy()
            out["main.%d.weight_v" % i] = m.weight_v.numpy().copy()
    return out


def r1(d, real, scale):
    """(P, {name: scale dP/dtheta}) by double backprop."""
    n = real.shape[0]
    x = torch.from_numpy(real).requires_grad_(True)
    out = d(x)
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    pen = g.pow(2).reshape(n, -1).sum(1).mean()
    names, params = zip(*d.named_parameters())
    grads = torch.autograd.grad(scale * pen, params, allow_unused=True)
    return pen.item(), {nm: (gr.detach().numpy().copy() if gr is not None else np.zeros(p.shape, np.float32))
                        for nm, p, gr in zip(names, params, grads)}


def stats(grad):
    g64 = grad.astype(np.float64)
    return np.array([g64.sum(), np.sqrt((g64 * g64).sum())], np.float64)


def run_case(name, cfg, outdir):
    torch.manual_seed(0)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n = cfg["batch"]
    d = Net("d", cfg)
    load_formula(d, 64)
    sn = converge_sn(d)
    d.train()
    real = rng.uniform(-1, 1, size=(n, cfg["channels"], cfg["size"], cfg["size"])).astype(np.float32)
    set_masks(d, cfg["seed"], cfg["step"], cfg["pass"], cfg["sample0"], n)
    pen, grads = r1(d, real, cfg["scale"])
    data = {"input.real": real, "penalty": np.array([pen], np.float64)}
    for bname, vec in sn.items():
        data["sn.d." + bname] = vec
    for pname, gr in grads.items():
        data["grad.d." + pname] = sample(gr)
        data["grad_stats.d." + pname] = stats(gr)
    if cfg.get("spectral_norm", 0):
        with DetachedSigma(d):
            pen2, wrong = r1(d, real, cfg["scale"])
        assert pen2 == pen
        for pname, gr in wrong.items():
            data["nosn.grad_stats.d." + pname] = stats(gr)
    meta = {k: str(v) for k, v in cfg.items()}
    meta["torch_version"] = torch.__version__
    path = os.path.join(outdir, "r1_" + name + ".safetensors")
    save_file(data, path, metadata=meta)
    print("%s: %d tensors, %d bytes; P %.9g" % (path, len(data), os.path.getsize(path), pen))


# scale: 2 scale / n is 2.5 (dcgan28_sn: gf_net_r1 seeds its backward with
# k = 2) and below 1 in the mlp cases (k = 1).
CASES = {
    "dcgan28_sn": dict(arch="dcgan", size=28, channels=1, z_dim=16, ngf=8, ndf=8, spectral_norm=1,
                       batch=4, seed=77, step=5, sample0=0, scale=5.0, **{"pass": 3}),
    "mlp": dict(arch="mlp", size=28, channels=1, z_dim=50, ngf=1, ndf=1, spectral_norm=0,
                batch=8, seed=1234, step=7, sample0=2, scale=1.5, **{"pass": 3}),
    # the resnet's D (residual blocks: pooled and identity shortcuts, SN on
    # every weight, the 1x1 shortcuts included); 2 scale / n = 1.5: k = 2
    "resnet28_sn": dict(arch="resnet", size=28, channels=1, z_dim=16, ngf=4, ndf=4, spectral_norm=1,
                        batch=4, seed=99, step=6, sample0=0, scale=3.0, **{"pass": 3}),
    "mlp_sn": dict(arch="mlp", size=28, channels=1, z_dim=50, ngf=1, ndf=1, spectral_norm=1,
                   batch=8, seed=4321, step=2, sample0=0, scale=3.0, **{"pass": 0}),
}

if __name__ == "__main__":
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    for name in sys.argv[2:] or list(CASES):
        run_case(name, CASES[name], outdir)
