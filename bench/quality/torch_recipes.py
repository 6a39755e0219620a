#!/usr/bin/env python3
"""torch_recipes.py - the PyTorch side of bench/quality/run.sh: the GAN
recipes of ganflow-train (--loss, --sn, --ema-decay, --d-steps, --mirror,
--r1, --diffaug, --cond)
on the quickstart's DCGAN (28x28x1 Fashion-MNIST, z 100, 64 filters, the
networks of tests/model/golden/make_golden.py, the DCGAN example's
initialisation, Adam 2e-4 (0.5, 0.999), batch 64, a new shuffle each
epoch), trained the usual PyTorch way for the same steps. It prints the
training images/s (the real images read per second, as ganflow-train's
perf/images_per_sec: batch x d-steps per step) and writes --images
generated images (of the EMA generator when there is one) as 8-bit grey
PNGs into OUT/, for `ganflow fid` to score against the same reference as
ganflow's checkpoint.

Spectral norm is torch.nn.utils.spectral_norm on every D convolution, D
without batch norm (SNGAN's D, as ganflow's --sn); PyTorch runs one power
iteration at every training forward of D, ganflow one per D weight
version (model/include/gf/net.h): the same function, a few more power
iterations here. EMA as StyleGAN2-ADA: p_ema = p.lerp(p_ema, beta), with
ganflow's ramp (gf_gan_ema_beta), BN running statistics averaged too.
R1 as StyleGAN2 (lazy, create_graph=True on the real batch, every
--r1-every D updates, weighted by it). DiffAugment as the official
DiffAugment_pytorch.py (torch's own random draws: the same distributions,
not ganflow's numbers). --cond as ganflow's: G's batch norms without
affine, gain = linear(e) (bias starting at 1) and bias = linear(e) from a
shared 128-wide class embedding e; D's projection <embed[y], h> on its last
layer's input; fake classes uniform; the images written cycle the classes.
--model resnet: make_golden.py's resnet (model/src/net_resnet.c) at
--width, z 128, ganflow's init (Glorot uniform); its --sn is make_golden's
SNLayer, one power iteration per D weight version as ganflow's.

  python torch_recipes.py OUT [--steps 2000] [--images 2000] [--threads 2]
        [--seed 1] [--loss bce|hinge|wgan] [--sn] [--ema-decay D]
        [--ema-rampup R] [--d-steps K] [--mirror] [--r1 G] [--diffaug P]
        [--cond] [--model dcgan|resnet] [--width N]
"""
import argparse
import copy
import gzip
import math
import os
import struct
import sys
import time

import numpy as np
import PIL.Image
import torch
import torch.nn as nn
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "metrics"))
import torch_dcgan  # noqa: E402  (load, weights_init, make_golden's networks)

make_golden = torch_dcgan.make_golden
LABELS = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"


def sn_discriminator(d):
    """ganflow's --sn D: the dcgan D (initialised) without its batch norms,
    every convolution spectrally normalized."""
    layers = [m for m in d.main if not isinstance(m, nn.BatchNorm2d)]
    d.main = nn.Sequential(*[nn.utils.spectral_norm(m) if isinstance(m, nn.Conv2d) else m
                             for m in layers])
    return d


class CBN(nn.Module):
    """ganflow's conditional batch norm (model/src/net_layers.c)."""

    def __init__(self, c, e=128):
        super().__init__()
        self.bn = nn.BatchNorm2d(c, affine=False)
        self.gain, self.bias = nn.Linear(e, c), nn.Linear(e, c)
        for lin in (self.gain, self.bias):
            nn.init.normal_(lin.weight, 0.0, 0.02)
            nn.init.zeros_(lin.bias)
        nn.init.ones_(self.gain.bias)

    def forward(self, x, e):
        return self.bn(x) * self.gain(e)[:, :, None, None] + self.bias(e)[:, :, None, None]


def run_layers(mods, x, e=None):
    """The layers of a make_golden network in order, as its Net.forward:
    a residual add reads its block's input, a linear flattens, a CBN takes
    the class embedding's rows e."""
    inputs = []
    for m in mods:
        inputs.append(x)
        if isinstance(m, (make_golden.ResAdd, make_golden.ResAddSN)):
            x = m(x, inputs[m.start])
        elif isinstance(m, CBN):
            x = m(x, e)
        elif x.ndim > 2 and not isinstance(m, make_golden.LinearMap) and (
                isinstance(m, nn.Linear) or (isinstance(m, make_golden.SNLayer) and m.conv is None)):
            x = m(x.flatten(1))
        else:
            x = m(x)
    return x


class CondG(nn.Module):
    def __init__(self, g, classes):
        super().__init__()
        self.main = nn.ModuleList([CBN(m.num_features) if isinstance(m, nn.BatchNorm2d) else m
                                   for m in g.main])
        self.shared = nn.Embedding(classes, 128)
        self.resnet = isinstance(self.main[0], make_golden.LinearMap)

    def forward(self, z, y):
        x = z if self.resnet else z.view(z.shape[0], -1, 1, 1)
        return run_layers(self.main, x, self.shared(y))


class CondD(nn.Module):
    def __init__(self, d, classes, feats):
        super().__init__()
        self.body, self.last = nn.ModuleList(list(d.main)[:-1]), d.main[-1]
        self.embed = nn.Embedding(classes, feats)
        nn.init.normal_(self.embed.weight, 0.0, 0.02)

    def forward(self, x, y):
        h = run_layers(self.body, x)
        return run_layers([self.last], h).view(x.shape[0], 1) + \
            (self.embed(y) * h.flatten(1)).sum(1, keepdim=True)


def resnet_init(net):
    """ganflow's resnet init (gf_mlp_init_params): Glorot uniform weights,
    biases 0, BN gamma 1 and beta 0; spectral norm's u, v normalized
    Gaussians."""
    with torch.no_grad():
        for m in net.modules():
            for name in ("weight", "weight_orig"):
                w = getattr(m, name, None)
                if isinstance(w, torch.Tensor) and w.ndim >= 2:
                    nn.init.xavier_uniform_(w)
            if isinstance(m, make_golden.SNLayer):
                m.weight_u.copy_(F.normalize(torch.randn_like(m.weight_u), dim=0))
                m.weight_v.copy_(F.normalize(torch.randn_like(m.weight_v), dim=0))


def diffaug(x, policy):
    """DiffAugment_pytorch.py's color, translation, cutout."""
    n = x.shape[0]
    if "color" in policy:
        x = x + (torch.rand(n, 1, 1, 1) - 0.5)
        m = x.mean(dim=1, keepdim=True)
        x = (x - m) * (torch.rand(n, 1, 1, 1) * 2) + m
        m = x.mean(dim=[1, 2, 3], keepdim=True)
        x = (x - m) * (torch.rand(n, 1, 1, 1) + 0.5) + m
    if "translation" in policy:
        sx, sy = int(x.size(2) * 0.125 + 0.5), int(x.size(3) * 0.125 + 0.5)
        tx = torch.randint(-sx, sx + 1, size=[n, 1, 1])
        ty = torch.randint(-sy, sy + 1, size=[n, 1, 1])
        gb, gx, gy = torch.meshgrid(torch.arange(n), torch.arange(x.size(2)),
                                    torch.arange(x.size(3)), indexing="ij")
        gx = torch.clamp(gx + tx + 1, 0, x.size(2) + 1)
        gy = torch.clamp(gy + ty + 1, 0, x.size(3) + 1)
        xp = F.pad(x, [1, 1, 1, 1, 0, 0, 0, 0])
        x = xp.permute(0, 2, 3, 1).contiguous()[gb, gx, gy].permute(0, 3, 1, 2)
    if "cutout" in policy:
        cs = int(x.size(2) * 0.5 + 0.5), int(x.size(3) * 0.5 + 0.5)
        ox = torch.randint(0, x.size(2) + (1 - cs[0] % 2), size=[n, 1, 1])
        oy = torch.randint(0, x.size(3) + (1 - cs[1] % 2), size=[n, 1, 1])
        gb, gx, gy = torch.meshgrid(torch.arange(n), torch.arange(cs[0]), torch.arange(cs[1]),
                                    indexing="ij")
        gx = torch.clamp(gx + ox - cs[0] // 2, min=0, max=x.size(2) - 1)
        gy = torch.clamp(gy + oy - cs[1] // 2, min=0, max=x.size(3) - 1)
        mask = torch.ones(n, x.size(2), x.size(3), dtype=x.dtype)
        mask[gb, gx, gy] = 0
        x = x * mask.unsqueeze(1)
    return x


def load_labels():
    with gzip.open(LABELS, "rb") as f:
        magic, n = struct.unpack(">II", f.read(8))
        assert magic == 2049
        return torch.from_numpy(np.frombuffer(f.read(n), np.uint8).astype(np.int64))


def ema_beta(decay, rampup, t):
    """gf_gan_ema_beta: decay, its half-life capped at (t - 1) rampup."""
    if decay <= 0:
        return 0.0
    if rampup <= 0:
        return decay
    h = math.log(0.5) / math.log(decay)
    h = min(h, (t - 1) * rampup)
    return 0.5 ** (1.0 / h) if h > 0 else 0.0


def d_loss(loss, out, real):
    if loss == "bce":
        return F.binary_cross_entropy_with_logits(out, torch.full_like(out, 1.0 if real else 0.0))
    if loss == "hinge":
        return F.relu(1.0 - out).mean() if real else F.relu(1.0 + out).mean()
    return -out.mean() if real else out.mean()


def g_loss(loss, out):
    if loss == "bce":
        return F.binary_cross_entropy_with_logits(out, torch.ones_like(out))
    return -out.mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--loss", default="bce", choices=["bce", "hinge", "wgan"])
    ap.add_argument("--sn", action="store_true")
    ap.add_argument("--ema-decay", type=float, default=0.0)
    ap.add_argument("--ema-rampup", type=float, default=0.05)
    ap.add_argument("--d-steps", type=int, default=1)
    ap.add_argument("--mirror", action="store_true")
    ap.add_argument("--r1", type=float, default=0.0)
    ap.add_argument("--r1-every", type=int, default=16)
    ap.add_argument("--diffaug", default="none")
    ap.add_argument("--cond", action="store_true")
    ap.add_argument("--model", default="dcgan", choices=["dcgan", "resnet"])
    ap.add_argument("--width", type=int, default=64)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    resnet = a.model == "resnet"
    cfg = dict(arch=a.model, size=28, channels=1, z_dim=128 if resnet else 100, ngf=a.width,
               ndf=a.width, spectral_norm=int(resnet and a.sn))
    g, d = make_golden.Net("g", cfg), make_golden.Net("d", cfg)
    if resnet:  # spectral norm as ganflow's: one power iteration per D weight version
        resnet_init(g)
        resnet_init(d)
    else:
        g.apply(torch_dcgan.weights_init)
        d.apply(torch_dcgan.weights_init)
        if a.sn:
            d = sn_discriminator(d)
    sn_layers = [m for m in d.modules() if isinstance(m, make_golden.SNLayer)]
    classes = 10
    if a.cond:
        feats = cfg["ndf"] if resnet else 2 * cfg["ndf"] * 7 * 7
        g, d = CondG(g, classes), CondD(d, classes, feats)
    aug = (lambda x: diffaug(x, a.diffaug)) if a.diffaug != "none" else (lambda x: x)
    g_ema = copy.deepcopy(g).eval() if a.ema_decay > 0 else None
    data = torch_dcgan.load()
    labels = load_labels()
    if a.mirror:
        data = torch.cat([data, torch.flip(data, dims=[3])])
        labels = torch.cat([labels, labels])
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    n = 64
    z_eval = torch.randn(a.images, cfg["z_dim"])
    perm, at = torch.randperm(len(data)), 0

    def batch():
        nonlocal perm, at
        if at + n > len(data):
            perm, at = torch.randperm(len(data)), 0
        at += n
        idx = perm[at - n:at]
        return data[idx], labels[idx]

    def G(z, y):
        return g(z, y) if a.cond else g(z)

    def D(x, y):
        return d(aug(x), y) if a.cond else d(aug(x))

    t0 = time.perf_counter()
    dstep = 0
    for k in range(1, a.steps + 1):
        for _ in range(a.d_steps):
            real, ry = batch()
            fy = torch.randint(0, classes, (n,))
            fake = G(torch.randn(n, cfg["z_dim"]), fy)
            for m in sn_layers:
                m.power_iteration()
            d.zero_grad()
            d_loss(a.loss, D(real, ry), True).backward()
            if a.r1 > 0 and dstep % a.r1_every == 0:
                xr = aug(real).detach().requires_grad_(True)
                out = d(xr, ry) if a.cond else d(xr)
                gr, = torch.autograd.grad(out.sum(), xr, create_graph=True)
                (a.r1 / 2 * a.r1_every * gr.pow(2).sum([1, 2, 3]).mean()).backward()
            d_loss(a.loss, D(fake.detach(), fy), False).backward()
            opt_d.step()
            dstep += 1
        for m in sn_layers:
            m.power_iteration()
        g.zero_grad()
        g_loss(a.loss, D(fake, fy)).backward()
        opt_g.step()
        if g_ema is not None:
            beta = ema_beta(a.ema_decay, a.ema_rampup, k)
            with torch.no_grad():
                for pe, p in zip(g_ema.parameters(), g.parameters()):
                    pe.copy_(p.lerp(pe, beta))
                for be, b in zip(g_ema.buffers(), g.buffers()):
                    if b.dtype.is_floating_point:
                        be.copy_(b.lerp(be, beta))
    secs = time.perf_counter() - t0
    print(f"images/s {a.steps * n * a.d_steps / secs:.1f}  ({a.steps} steps in {secs:.1f} s)",
          flush=True)
    gen = g_ema if g_ema is not None else g
    gen.eval()
    os.makedirs(a.out, exist_ok=True)
    y_eval = torch.arange(len(z_eval)) % classes
    with torch.no_grad():
        imgs = torch.cat([gen(z_eval[i:i + 256], y_eval[i:i + 256]) if a.cond
                          else gen(z_eval[i:i + 256]) for i in range(0, len(z_eval), 256)])
    px = torch.clamp(torch.floor((imgs + 1) * 0.5 * 255 + 0.5), 0, 255).to(torch.uint8).numpy()
    for i, im in enumerate(px):
        PIL.Image.fromarray(im[0], "L").save(os.path.join(a.out, f"{i:05d}.png"))


if __name__ == "__main__":
    main()
