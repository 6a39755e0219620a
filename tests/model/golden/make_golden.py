#!/usr/bin/env python3
"""make_golden.py - golden numbers for tests/model/test_golden.c: one GAN
training step of each network, computed by PyTorch.

For each case (mlp at full size; dcgan at 28x28x1 and 64x64x3 with reduced
widths) it builds the same G and D as model/src/net_*.c (nn.Sequential
`main`, the C code's state_dict names), loads the SAME initial weights
(an integer formula both languages evaluate exactly, so no weights are
stored), runs the step of gf_gan_step (model/include/gf/gan.h) as PyTorch's
DCGAN example does (D on real with label 1 and on G(z).detach() with
label 0, Adam on D; then D(G(z)) with label 1, Adam on G), and writes
  input.real, input.z              the batch (full)
  stats                            [loss_d_real, loss_d_fake, loss_g,
                                    d_real, d_fake, d_fake_after] (F64)
  out.fake                         strided sample of G(z)
  grad.<name>, grad_stats.<name>   strided sample of each parameter
                                   gradient, and [sum, L2 norm] (F64)
  after.<name>                     the same sample of the parameter after
                                   its Adam update
  bn.<name>                        BN running statistics after the step
to golden/<case>.safetensors. Samples: k = min(2048, n) entries at index
(i * n) // k. D's dropout masks are the ones the C code draws: Philox-4x32-10
is re-implemented below with numpy (checked against the Random123 known
answer) and keyed as gf/rng.h says.

Run: /tmp/torch-venv/bin/python make_golden.py [OUTDIR]   (default: here)
"""
import os
import sys
import zlib

import numpy as np
import torch
import torch.nn as nn
from safetensors.numpy import save_file

M32 = np.uint64(0xFFFFFFFF)

# ---- the weight formula (test_golden.c: golden_value) -----------------------


def lowbias32(x):
    x = np.asarray(x, dtype=np.uint32).copy()
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


def formula(tid, n):
    """((h & 0xffff) - 32768) * 2^-20 with h = lowbias32(i ^ lowbias32(2 tid + 1)):
    exact in float32 in C and numpy."""
    salt = lowbias32(np.array([2 * tid + 1], dtype=np.uint32))[0]
    h = lowbias32(np.arange(n, dtype=np.uint32) ^ salt)
    return ((h & np.uint32(0xFFFF)).astype(np.int32) - 32768).astype(np.float32) * np.float32(2.0**-20)


def initial_value(tid, kind, shape):
    n = int(np.prod(shape))
    v = formula(tid, n)
    if kind == "bn_weight":
        v = np.float32(1.0) + v
    return v.reshape(shape)


# ---- Philox-4x32-10 and the gf/rng.h streams -----------------------------------


def philox(c, key):
    c0, c1, c2, c3 = (np.asarray(x, dtype=np.uint64) for x in c)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(0x9E3779B9)) & M32
            k1 = (k1 + np.uint64(0xBB67AE85)) & M32
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        hi0, lo0 = p0 >> np.uint64(32), p0 & M32
        hi1, lo1 = p1 >> np.uint64(32), p1 & M32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


assert [int(v[0]) for v in philox([[0]] * 4, (0, 0))] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]

GF_RNG_DROPOUT = 4


def stream_uniform(seed, purpose, step, rank, sub, n):
    key = (seed & 0xFFFFFFFF, seed >> 32)
    hi0 = (purpose & 0xFF) | ((sub & 0xFFFFFF) << 8)
    hi1 = step & 0xFFFFFFFF
    w = np.arange(n, dtype=np.uint64) + np.uint64(rank << 40)
    block = w >> np.uint64(2)
    lane = (w & np.uint64(3)).astype(np.int64)
    out = philox([block & M32, block >> np.uint64(32), np.full(n, hi0, np.uint64), np.full(n, hi1, np.uint64)], key)
    words = np.choose(lane, out)
    return (words >> np.uint64(8)).astype(np.float32) * np.float32(2.0**-24)


# ---- the networks (model/src/net_mlp.c, net_dcgan.c) --------------------------------


class MaskDropout(nn.Module):
    """Dropout whose mask the caller sets: y = x * (keep ? 1/(1-p) : 0)."""

    def __init__(self, p):
        super().__init__()
        self.p = p
        self.mult = None

    def forward(self, x):
        return x * self.mult


def mlp(role, cfg):
    img = cfg["channels"] * cfg["size"] * cfg["size"]
    if role == "g":
        return nn.Sequential(nn.Linear(cfg["z_dim"], 1200), nn.BatchNorm1d(1200), nn.ReLU(),
                             nn.Linear(1200, 1000), nn.BatchNorm1d(1000), nn.ReLU(),
                             nn.Linear(1000, img), nn.Tanh())
    return nn.Sequential(nn.Linear(img, 256), nn.LeakyReLU(0.2), MaskDropout(0.3),
                         nn.Linear(256, 128), nn.LeakyReLU(0.2), MaskDropout(0.3),
                         nn.Linear(128, 1))


def dcgan(role, cfg):
    size, nc, nz, ngf, ndf = cfg["size"], cfg["channels"], cfg["z_dim"], cfg["ngf"], cfg["ndf"]
    stages, k0, gmult = {64: (4, 4, 8), 32: (3, 4, 4), 28: (2, 7, 4)}[size]
    layers = []
    if role == "g":
        ch = ngf * gmult
        layers += [nn.ConvTranspose2d(nz, ch, k0, 1, 0, bias=False), nn.BatchNorm2d(ch), nn.ReLU()]
        for _ in range(1, stages):
            layers += [nn.ConvTranspose2d(ch, ch // 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ch // 2), nn.ReLU()]
            ch //= 2
        layers += [nn.ConvTranspose2d(ch, nc, 4, 2, 1, bias=False), nn.Tanh()]
    else:
        ch = ndf
        layers += [nn.Conv2d(nc, ch, 4, 2, 1, bias=False), nn.LeakyReLU(0.2)]
        for _ in range(1, stages):
            layers += [nn.Conv2d(ch, ch * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ch * 2), nn.LeakyReLU(0.2)]
            ch *= 2
        layers += [nn.Conv2d(ch, 1, k0, 1, 0, bias=False)]
    return nn.Sequential(*layers)


class Net(nn.Module):
    def __init__(self, role, cfg):
        super().__init__()
        self.role, self.cfg = role, cfg
        self.main = (mlp if cfg["arch"] == "mlp" else dcgan)(role, cfg)

    def forward(self, x):
        n = x.shape[0]
        if self.role == "g":
            if self.cfg["arch"] == "mlp":
                return self.main(x).view(n, self.cfg["channels"], self.cfg["size"], self.cfg["size"])
            return self.main(x.view(n, -1, 1, 1))
        if self.cfg["arch"] == "mlp":
            return self.main(x.reshape(n, -1))
        return self.main(x).view(n, 1)


def kind_of(module, pname):
    if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
        return {"weight": "bn_weight", "bias": "bn_bias"}.get(pname, pname)
    return pname


def load_formula(net, tid_base):
    """Tensor t of the C net (state_dict order without num_batches_tracked)
    gets formula(tid_base + t); running stats keep their defaults."""
    t = 0
    with torch.no_grad():
        for mname, module in net.main.named_children():
            for pname in ["weight", "bias", "running_mean", "running_var"]:
                p = getattr(module, pname, None)
                if p is None or not isinstance(p, torch.Tensor):
                    continue
                if pname in ("weight", "bias"):
                    p.copy_(torch.from_numpy(initial_value(tid_base + t, kind_of(module, pname), tuple(p.shape))))
                t += 1


def set_masks(d, cfg, seed, step, pas, n):
    for i, module in enumerate(d.main):
        if isinstance(module, MaskDropout):
            feats = d.main[i - 1].weight.shape[0] if hasattr(d.main[i - 1], "weight") else d.main[i - 2].weight.shape[0]
            u = stream_uniform(seed, GF_RNG_DROPOUT, step, 0, pas * 64 + i, n * feats)
            p32 = np.float32(module.p)
            scale = np.float32(1.0 / (1.0 - np.float64(p32)))
            mult = np.where(u >= p32, scale, np.float32(0)).astype(np.float32).reshape(n, feats)
            module.mult = torch.from_numpy(mult)


def sample(a):
    a = np.ascontiguousarray(a, dtype=np.float32).reshape(-1)
    n = a.size
    k = min(2048, n)
    idx = (np.arange(k, dtype=np.int64) * n) // k
    return a[idx].copy()


def run_case(name, cfg, outdir):
    torch.manual_seed(0)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n, seed, step = cfg["batch"], cfg["seed"], cfg["step"]
    g, d = Net("g", cfg), Net("d", cfg)
    load_formula(g, 0)
    load_formula(d, 64)
    real = rng.uniform(-1, 1, size=(n, cfg["channels"], cfg["size"], cfg["size"])).astype(np.float32)
    z = rng.standard_normal((n, cfg["z_dim"])).astype(np.float32)
    g.train()
    d.train()
    crit = nn.BCEWithLogitsLoss()
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999), eps=1e-8)
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999), eps=1e-8)
    ones, zeros = torch.ones(n, 1), torch.zeros(n, 1)
    real_t, z_t = torch.from_numpy(real), torch.from_numpy(z)

    fake = g(z_t)
    d.zero_grad()
    set_masks(d, cfg, seed, step, 0, n)
    out = d(real_t)
    loss_dr = crit(out, ones)
    loss_dr.backward()
    d_real = torch.sigmoid(out).mean().item()
    set_masks(d, cfg, seed, step, 1, n)
    out = d(fake.detach())
    loss_df = crit(out, zeros)
    loss_df.backward()
    d_fake = torch.sigmoid(out).mean().item()
    t = {}
    for pname, p in d.named_parameters():
        t["grad.d." + pname] = p.grad.detach().numpy().copy()
    opt_d.step()
    g.zero_grad()
    set_masks(d, cfg, seed, step, 2, n)
    out = d(fake)
    loss_g = crit(out, ones)
    loss_g.backward()
    d_fake2 = torch.sigmoid(out).mean().item()
    opt_g.step()
    for pname, p in g.named_parameters():
        t["grad.g." + pname] = p.grad.detach().numpy().copy()

    data = {"input.real": real, "input.z": z, "out.fake": sample(fake.detach().numpy()),
            "stats": np.array([loss_dr.item(), loss_df.item(), loss_g.item(), d_real, d_fake, d_fake2], np.float64)}
    for key, grad in t.items():
        pname = key[len("grad."):]
        data["grad." + pname] = sample(grad)
        g64 = grad.astype(np.float64)
        data["grad_stats." + pname] = np.array([g64.sum(), np.sqrt((g64 * g64).sum())], np.float64)
    for prefix, net in (("g", g), ("d", d)):
        for pname, p in net.named_parameters():
            data["after.%s.%s" % (prefix, pname)] = sample(p.detach().numpy())
        for bname, b in net.named_buffers():
            if bname.endswith("running_mean") or bname.endswith("running_var"):
                data["bn.%s.%s" % (prefix, bname)] = b.detach().numpy().astype(np.float32).copy()
    meta = {k: str(v) for k, v in cfg.items()}
    meta["torch_version"] = torch.__version__
    path = os.path.join(outdir, name + ".safetensors")
    save_file(data, path, metadata=meta)
    print("%s: %d tensors, %d bytes; losses %s" % (path, len(data), os.path.getsize(path), data["stats"]))


CASES = {
    "mlp": dict(arch="mlp", size=28, channels=1, z_dim=50, ngf=1, ndf=1, batch=8, seed=1234, step=7),
    "dcgan28": dict(arch="dcgan", size=28, channels=1, z_dim=16, ngf=8, ndf=8, batch=4, seed=99, step=3),
    "dcgan64": dict(arch="dcgan", size=64, channels=3, z_dim=16, ngf=8, ndf=8, batch=4, seed=5, step=0),
}

if __name__ == "__main__":
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    for name, cfg in CASES.items():
        run_case(name, cfg, outdir)
