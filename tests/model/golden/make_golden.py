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

The recipe cases (metadata keys absent from the three plain cases, whose
tensors this script still writes bit for bit as before; safetensors orders
the header's metadata differently from run to run) add
  loss          "bce" | "hinge" | "wgan" (gf_gan_loss); for hinge and
                WGAN the stats' D(.) are mean logits, not sigmoids
  spectral_norm 1: D's weights are "weight_orig" with buffers "weight_u"
                [R] and "weight_v" [K] (a hand-made module, gf/net.h's
                gf_net_sn_iterate: ONE power iteration at the start of each
                D step and of the G step, none inside forwards; the forward
                divides by sigma = u . (W v), autograd through sigma wrt W
                only), D's batch norms dropped; u and v start as their
                formula vector normalized in double, rounded once to f32
  ema_decay, ema_rampup   an EMA generator: after G's Adam update t = 1,
                every G_ema parameter and BN statistic becomes
                torch.lerp(G, G_ema, beta), beta = gf_gan_ema_beta
  d_steps       K D steps (gf_gan_d_step, step key K * step + j, its own
                real batch and latents) per G step (gf_gan_g_step on the
                last D step's fake, its step key)
  real_scale    real batches uniform(-s, s) rather than (-1, 1)
  r1_gamma, r1_every   the lazy R1 penalty (gf_gan_hparams): in a D step
                whose key is a multiple of r1_every, after D's backward on
                the real batch and before the fake pass, gamma / 2 *
                r1_every * P is added to D's loss, P = mean_i
                ||grad_x D(x_i)||^2 on the batch D saw (the augmented one),
                by double backprop (create_graph=True; make_r1_golden.py),
                dropout masks of pass 3
  augment       DiffAugment's policy ("color,translation,cutout" or a
                part): every batch D sees is augmented with the params
                gf_augment_draw draws (re-implemented below: Philox words
                of (seed, GF_RNG_AUGMENT, step key, pass), 8 per sample) -
                the real batch pass 0, the detached fake pass 1, G's step
                pass 2, G's gradient flowing back through the augmentation
                (the official DiffAugment_pytorch.py with its draws
                replaced by params: tests/kernels/golden/
                make_augment_golden.py)
  sn_start_iters spectral norm's u and v start from their formula vector
                after this many power iterations in double (rounded once
                to f32, as make_r1_golden.py's converge_sn), stored: the
                formula vectors give sigma far below W's top singular value
                (even negative), which R1's double backward amplifies
and write, besides the above (input.real / input.z then [K, n, ...];
stats' D half from the last D step; D's gradients those of the last D step)
  stats_d                          [K, 4] per D step [loss_d_real,
                                   loss_d_fake, d_real, d_fake] (F64; K > 1)
  sn.<name>                        u and v after the step (full)
  sigma.<d.main.N>                 u . (W v) from the final u, W, v (F64)
  ema.<name>                       G_ema: a sample of each parameter, BN
                                   statistics in full
  stats_r1                         [K, 2] per D step [P, applied] (F64;
                                   with r1_gamma; P 0 where not applied)
  aug.params                       [2K + 1, n, 7] the augmentation params
                                   (f32): D step j's real and fake
                                   batches, then G's step (with augment)
  sn_start.<name>                  u and v at the start (with
                                   sn_start_iters; the C side loads them)

Run: python3 make_golden.py [OUTDIR [CASE...]]
(default: here, every case)
"""
import copy
import math
import os
import sys
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.numpy import save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels", "golden"))
from make_augment_golden import DiffAugment  # noqa: E402

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


def unit_formula(tid, n):
    """A spectral-norm vector's start (test_golden.c: load_sn_start): formula(tid)
    normalized in double (its squares and their sum are exact: multiples of
    2^-40 below 1), rounded once to f32."""
    v = formula(tid, n).astype(np.float64)
    nrm = max(math.sqrt(float((v * v).sum())), 1e-12)
    return (v / nrm).astype(np.float32)


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


GF_RNG_AUGMENT = 8
GF_AUG_WORDS = 8  # Philox words per sample (gf/augment.h)
AUG_BITS = {"color": 1, "translation": 2, "cutout": 4}  # GF_AUG_*


def stream_words(seed, purpose, step, sub, offset, n):
    """Words offset .. offset + n - 1 of gf_rng_stream(seed, purpose, step,
    sub) (gf/philox.h: word w is lane w % 4 of the block for counter
    {w / 4 low, high, ctr_hi}), as uint64 holding 32-bit values."""
    key = (seed & 0xFFFFFFFF, seed >> 32)
    hi0 = (purpose & 0xFF) | ((sub & 0xFFFFFF) << 8)
    hi1 = step & 0xFFFFFFFF
    w = np.arange(n, dtype=np.uint64) + np.uint64(offset)
    block = w >> np.uint64(2)
    lane = (w & np.uint64(3)).astype(np.int64)
    out = philox([block & M32, block >> np.uint64(32), np.full(n, hi0, np.uint64), np.full(n, hi1, np.uint64)], key)
    return np.choose(lane, out)


def policy_bits(policy):
    return sum(AUG_BITS[p] for p in policy.split(",")) if policy else 0


def aug_draw(n, H, W, policy, seed, step, pas, sample0=0):
    """gf_augment_draw: params [n, 7] of global samples sample0 .. sample0 +
    n - 1 (sample g owns words g * 8 .. g * 8 + 7, word k for column k);
    u = (w >> 8) 2^-24 and int(w, m) = floor(w m / 2^32), f32 arithmetic."""
    bits = policy_bits(policy)
    w = stream_words(seed, GF_RNG_AUGMENT, step, pas, sample0 * GF_AUG_WORDS, n * GF_AUG_WORDS).reshape(n, 8)
    u = (w >> np.uint64(8)).astype(np.float32) * np.float32(2.0**-24)

    def below(col, m):
        return ((w[:, col] * np.uint64(m)) >> np.uint64(32)).astype(np.int64)

    shx, shy = (H + 4) // 8, (W + 4) // 8
    s0, s1 = (H + 1) // 2, (W + 1) // 2
    p = np.zeros((n, 7), np.float32)
    p[:, 1] = p[:, 2] = 1.0
    if bits & 1:
        p[:, 0] = u[:, 0] - np.float32(0.5)
        p[:, 1] = u[:, 1] * np.float32(2.0)
        p[:, 2] = u[:, 2] + np.float32(0.5)
    if bits & 2:
        p[:, 3] = below(3, 2 * shx + 1) - shx
        p[:, 4] = below(4, 2 * shy + 1) - shy
    if bits & 4:
        p[:, 5] = below(5, H + 1 - s0 % 2)
        p[:, 6] = below(6, W + 1 - s1 % 2)
    return p


# ---- the networks (model/src/net_mlp.c, net_dcgan.c) --------------------------------


class MaskDropout(nn.Module):
    """Dropout whose mask the caller sets: y = x * (keep ? 1/(1-p) : 0)."""

    def __init__(self, p):
        super().__init__()
        self.p = p
        self.mult = None

    def forward(self, x):
        return x * self.mult


SN_EPS = 1e-12  # GF_SN_EPS, torch.nn.utils.spectral_norm's eps


class SNLayer(nn.Module):
    """A linear or convolution layer of D with spectral norm as gf/net.h
    describes it: parameter weight_orig (W viewed [R, K]), buffers weight_u
    [R] and weight_v [K] changed only by power_iteration(); the forward
    uses weight_orig / sigma, sigma = u . (W v), with u and v constants
    for autograd (torch.nn.utils.spectral_norm in eval mode, where it does
    not iterate either)."""

    def __init__(self, shape, bias, conv=None):
        super().__init__()
        self.conv = conv  # (stride, padding) for a convolution, else None
        self.weight_orig = nn.Parameter(torch.zeros(shape))
        self.register_buffer("weight_u", torch.zeros(shape[0]))
        self.register_buffer("weight_v", torch.zeros(int(np.prod(shape[1:]))))
        self.bias = nn.Parameter(torch.zeros(shape[0])) if bias else None

    def matrix(self):
        return self.weight_orig.reshape(self.weight_orig.shape[0], -1)

    @torch.no_grad()
    def power_iteration(self):
        w = self.matrix()
        v = F.normalize(torch.mv(w.t(), self.weight_u), dim=0, eps=SN_EPS)
        u = F.normalize(torch.mv(w, v), dim=0, eps=SN_EPS)
        self.weight_v.copy_(v)
        self.weight_u.copy_(u)

    def sigma(self):
        return torch.dot(self.weight_u, torch.mv(self.matrix(), self.weight_v))

    def forward(self, x):
        w = self.weight_orig / self.sigma()
        if self.conv is None:
            return F.linear(x, w, self.bias)
        return F.conv2d(x, w, self.bias, stride=self.conv[0], padding=self.conv[1])


def linear(cin, cout, sn):
    return SNLayer((cout, cin), True) if sn else nn.Linear(cin, cout)


def conv(cin, cout, k, stride, pad, sn):
    if sn:
        return SNLayer((cout, cin, k, k), False, (stride, pad))
    return nn.Conv2d(cin, cout, k, stride, pad, bias=False)


def mlp(role, cfg):
    img = cfg["channels"] * cfg["size"] * cfg["size"]
    if role == "g":
        return nn.Sequential(nn.Linear(cfg["z_dim"], 1200), nn.BatchNorm1d(1200), nn.ReLU(),
                             nn.Linear(1200, 1000), nn.BatchNorm1d(1000), nn.ReLU(),
                             nn.Linear(1000, img), nn.Tanh())
    sn = cfg.get("spectral_norm", 0)
    return nn.Sequential(linear(img, 256, sn), nn.LeakyReLU(0.2), MaskDropout(0.3),
                         linear(256, 128, sn), nn.LeakyReLU(0.2), MaskDropout(0.3),
                         linear(128, 1, sn))


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
        sn = cfg.get("spectral_norm", 0)  # SNGAN's D: no batch norm
        ch = ndf
        layers += [conv(nc, ch, 4, 2, 1, sn), nn.LeakyReLU(0.2)]
        for _ in range(1, stages):
            layers += [conv(ch, ch * 2, 4, 2, 1, sn)] + ([] if sn else [nn.BatchNorm2d(ch * 2)])
            layers += [nn.LeakyReLU(0.2)]
            ch *= 2
        layers += [conv(ch, 1, k0, 1, 0, sn)]
    return nn.Sequential(*layers)


class LinearMap(nn.Linear):
    """nn.Linear whose output is viewed [n, C, H, W] (resnet G's first layer)."""

    def __init__(self, cin, shape):
        super().__init__(cin, int(np.prod(shape)))
        self.shape = shape

    def forward(self, x):
        return super().forward(x.reshape(x.shape[0], -1)).view((x.shape[0],) + self.shape)


class Upsample(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=2, mode="nearest")


def shortcut(m, s):
    if m.sc == "identity":
        return s
    if m.sc == "up_conv":
        return m.sc_conv(F.interpolate(s, scale_factor=2, mode="nearest"))
    if m.sc == "pool_conv":
        return m.sc_conv(F.avg_pool2d(s, 2))
    return F.avg_pool2d(m.sc_conv(s), 2)  # conv_pool


class ResAdd(nn.Module):
    """GF_L_RESADD: x + shortcut(s), s the input of layer `start`; the
    shortcut's 1x1 convolution (no bias) is this module's `weight`."""

    def __init__(self, start, sc, cin, cout):
        super().__init__()
        self.start, self.sc = start, sc
        self.weight = None if sc == "identity" else nn.Parameter(torch.zeros(cout, cin, 1, 1))

    def sc_conv(self, x):
        return F.conv2d(x, self.weight)

    def forward(self, x, s):
        return x + shortcut(self, s)


class ResAddSN(SNLayer):
    """ResAdd whose 1x1 convolution is spectrally normalized."""

    def __init__(self, start, sc, cin, cout):
        super().__init__((cout, cin, 1, 1), False, (1, 0))
        self.start, self.sc = start, sc

    def sc_conv(self, x):
        return SNLayer.forward(self, x)

    def forward(self, x, s):
        return x + shortcut(self, s)


def resnet(role, cfg):
    """model/src/net_resnet.c, layer for layer."""
    size, nc, nz, ngf, ndf = cfg["size"], cfg["channels"], cfg["z_dim"], cfg["ngf"], cfg["ndf"]
    sn = cfg.get("spectral_norm", 0) and role == "d"
    layers = []

    def resadd(start, sc, cin, cout):
        return (ResAddSN if sn and sc != "identity" else ResAdd)(start, sc, cin, cout)

    if role == "g":
        s0, blocks = (7, 2) if size == 28 else (4, {32: 3, 64: 4}[size])
        widths = [ngf * m for m in (8, 8, 4, 2, 1)] if size == 64 else [ngf] * (blocks + 1)
        layers.append(LinearMap(nz, (widths[0], s0, s0)))
        for b in range(blocks):
            start, cin, cout = len(layers), widths[b], widths[b + 1]
            layers += [nn.BatchNorm2d(cin), nn.ReLU(), Upsample(), nn.Conv2d(cin, cout, 3, 1, 1, bias=False),
                       nn.BatchNorm2d(cout), nn.ReLU(), nn.Conv2d(cout, cout, 3, 1, 1, bias=False)]
            layers.append(resadd(start, "up_conv", cin, cout))
        layers += [nn.BatchNorm2d(widths[-1]), nn.ReLU(), nn.Conv2d(widths[-1], nc, 3, 1, 1, bias=False), nn.Tanh()]
        return nn.ModuleList(layers)
    if size == 64:
        widths, down = [ndf * m for m in (1, 2, 4, 8, 8)], [True] * 4 + [False]
    else:
        nb = 3 if size == 28 else 4
        widths, down = [ndf] * nb, [b < 2 for b in range(nb)]
    w = widths[0]
    layers += [conv(nc, w, 3, 1, 1, sn), nn.ReLU(), conv(w, w, 3, 1, 1, sn), nn.AvgPool2d(2),
               resadd(0, "pool_conv", nc, w)]
    size //= 2
    for b in range(1, len(widths)):
        start, cin, w = len(layers), w, widths[b]
        layers += [nn.ReLU(), conv(cin, w, 3, 1, 1, sn), nn.ReLU(), conv(w, w, 3, 1, 1, sn)]
        if down[b]:
            layers.append(nn.AvgPool2d(2))
            size //= 2
        layers.append(resadd(start, "conv_pool" if down[b] else "identity", cin, w))
    layers += [nn.ReLU(), nn.AvgPool2d(size), linear(w, 1, sn)]
    return nn.ModuleList(layers)


class Net(nn.Module):
    def __init__(self, role, cfg):
        super().__init__()
        self.role, self.cfg = role, cfg
        self.main = {"mlp": mlp, "dcgan": dcgan, "resnet": resnet}[cfg["arch"]](role, cfg)

    def forward(self, x):
        n = x.shape[0]
        if self.cfg["arch"] == "resnet":
            inputs = []
            for m in self.main:
                inputs.append(x)
                if isinstance(m, (ResAdd, ResAddSN)):
                    x = m(x, inputs[m.start])
                elif x.ndim > 2 and not isinstance(m, LinearMap) and (
                        isinstance(m, nn.Linear) or (isinstance(m, SNLayer) and m.conv is None)):
                    x = m(x.reshape(n, -1))
                else:
                    x = m(x)
            return x
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
    """Tensor t of the C net (its order: weight or weight_orig, weight_u,
    weight_v, bias, running_mean, running_var; no num_batches_tracked) gets
    formula(tid_base + t), spectral norm's u and v unit_formula(tid_base +
    t); running stats keep their defaults."""
    t = 0
    with torch.no_grad():
        for mname, module in net.main.named_children():
            for pname in ["weight", "weight_orig", "weight_u", "weight_v", "bias", "running_mean", "running_var"]:
                p = getattr(module, pname, None)
                if p is None or not isinstance(p, torch.Tensor):
                    continue
                if pname in ("weight", "weight_orig", "bias"):
                    p.copy_(torch.from_numpy(initial_value(tid_base + t, kind_of(module, pname), tuple(p.shape))))
                elif pname in ("weight_u", "weight_v"):
                    p.copy_(torch.from_numpy(unit_formula(tid_base + t, p.numel())))
                t += 1


def converge_sn(d, iters):
    """u and v of every SN layer of d: `iters` power iterations in double
    from their current (formula) values, rounded once to f32 (make_r1_golden.py's
    converge_sn). Returns {"sn_start.d.main.N.weight_u": f32 array, ...}."""
    out = {}
    with torch.no_grad():
        for i, m in enumerate(d.main):
            if not isinstance(m, SNLayer):
                continue
            w = m.matrix().numpy().astype(np.float64)
            u = m.weight_u.numpy().astype(np.float64)
            for _ in range(iters):
                v = w.T @ u
                v /= max(np.linalg.norm(v), 1e-12)
                u = w @ v
                u /= max(np.linalg.norm(u), 1e-12)
            m.weight_u.copy_(torch.from_numpy(u.astype(np.float32)))
            m.weight_v.copy_(torch.from_numpy(v.astype(np.float32)))
            out["sn_start.d.main.%d.weight_u" % i] = m.weight_u.numpy().copy()
            out["sn_start.d.main.%d.weight_v" % i] = m.weight_v.numpy().copy()
    return out


def r1_penalty(d, x, scale):
    """R1 on the batch x (gf_net_r1): P = mean_i ||grad_x D(x_i)||^2 with
    create_graph=True, then scale * P backpropagated INTO D's .grad (added).
    Returns P."""
    n = x.shape[0]
    x = x.detach().requires_grad_(True)
    out = d(x)
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    pen = g.pow(2).reshape(n, -1).sum(1).mean()
    (scale * pen).backward()
    return pen.item()


def set_masks(d, cfg, seed, step, pas, n):
    for i, module in enumerate(d.main):
        if isinstance(module, MaskDropout):
            feats = next(m.weight_orig if isinstance(m, SNLayer) else m.weight
                         for m in (d.main[j] for j in range(i - 1, -1, -1))
                         if isinstance(m, (nn.Linear, SNLayer))).shape[0]
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


def ema_beta(cfg, t):
    """gf_gan_ema_beta for G update t (1-based)."""
    decay, rampup = cfg.get("ema_decay", 0.0), cfg.get("ema_rampup", 0.0)
    if not decay > 0.0:
        return 0.0
    if not rampup > 0.0:
        return decay
    h = math.log(0.5) / math.log(decay)
    h = min(h, (t - 1) * rampup)
    return math.pow(0.5, 1.0 / h) if h > 0.0 else 0.0


def d_loss(kind, out, real):
    """D's loss on one batch of logits (real: label 1, else a fake batch)
    and the mean D(.) the stats report (gf_gan_stats)."""
    if kind == "bce":
        target = torch.ones_like(out) if real else torch.zeros_like(out)
        return nn.BCEWithLogitsLoss()(out, target), torch.sigmoid(out).mean().item()
    if kind == "hinge":
        loss = F.relu(1 - out).mean() if real else F.relu(1 + out).mean()
    else:  # wgan
        loss = -out.mean() if real else out.mean()
    return loss, out.mean().item()


def g_loss(kind, out):
    if kind == "bce":
        return nn.BCEWithLogitsLoss()(out, torch.ones_like(out)), torch.sigmoid(out).mean().item()
    return -out.mean(), out.mean().item()


def run_case(name, cfg, outdir):
    torch.manual_seed(0)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n, seed, step = cfg["batch"], cfg["seed"], cfg["step"]
    K, kind = cfg.get("d_steps", 1), cfg.get("loss", "bce")
    g, d = Net("g", cfg), Net("d", cfg)
    load_formula(g, 0)
    load_formula(d, 64)
    g_ema = copy.deepcopy(g) if cfg.get("ema_decay", 0.0) > 0.0 else None  # a copy of G
    sn_layers = [(i, m) for i, m in enumerate(d.main) if isinstance(m, SNLayer)]
    sn_start = converge_sn(d, cfg["sn_start_iters"]) if cfg.get("sn_start_iters", 0) else {}
    policy, r1_gamma, r1_every = cfg.get("augment", ""), cfg.get("r1_gamma", 0.0), cfg.get("r1_every", 16)
    H, W = cfg["size"], cfg["size"]
    aug_params = []  # the params of each augmentation, in the order of the step

    def augment(x, key, pas):
        if not policy:
            return x
        prm = aug_draw(n, H, W, policy, seed, key, pas)
        aug_params.append(prm)
        return DiffAugment(x, torch.from_numpy(prm), policy)

    stats_r1 = []
    r1_share = []  # per D tensor: |R1's gradient| / |the loss's|, printed
    rshape, zshape = (n, cfg["channels"], cfg["size"], cfg["size"]), (n, cfg["z_dim"])
    if K == 1 and "real_scale" not in cfg:  # the plain cases' draws, unchanged
        real = rng.uniform(-1, 1, size=rshape).astype(np.float32)
        z = rng.standard_normal(zshape).astype(np.float32)
        reals, zs = real[None], z[None]
    else:
        real = reals = (rng.uniform(-1, 1, size=(K,) + rshape) * cfg.get("real_scale", 1.0)).astype(np.float32)
        z = zs = rng.standard_normal((K,) + zshape).astype(np.float32)
    g.train()
    d.train()
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999), eps=1e-8)
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999), eps=1e-8)
    t = {}
    stats_d = []
    margin = math.inf  # hinge: the smallest |1 -+ logit| of the D steps
    inactive = 0  # hinge: D-step logits past the hinge (relu gradient 0)

    for j in range(K):  # gf_gan_d_step, key K * step + j
        key = K * step + j
        for _, m in sn_layers:  # one power iteration per D weight version
            m.power_iteration()
        real_t, z_t = torch.from_numpy(reals[j]), torch.from_numpy(zs[j])
        fake = g(z_t)
        d.zero_grad()
        set_masks(d, cfg, seed, key, 0, n)
        real_a = augment(real_t, key, 0)
        out = d(real_a)
        loss_dr, d_real = d_loss(kind, out, True)
        loss_dr.backward()
        margin = min(margin, (1 - out).abs().min().item())
        inactive += int((1 - out <= 0).sum())
        if r1_gamma > 0:  # lazy R1 on the batch D saw, weighted by r1_every
            if key % r1_every == 0:
                set_masks(d, cfg, seed, key, 3, n)
                before = {pn: p.grad.clone() for pn, p in d.named_parameters()}
                stats_r1.append([r1_penalty(d, real_a, float(np.float32(r1_gamma / 2.0 * r1_every))), 1.0])
                r1_share[:] = ["%s %.3g" % (pn, float((p.grad - before[pn]).norm() / before[pn].norm()))
                               for pn, p in d.named_parameters()]
            else:
                stats_r1.append([0.0, 0.0])
        set_masks(d, cfg, seed, key, 1, n)
        out = d(augment(fake.detach(), key, 1))
        loss_df, d_fake = d_loss(kind, out, False)
        loss_df.backward()
        margin = min(margin, (1 + out).abs().min().item())
        inactive += int((1 + out <= 0).sum())
        stats_d.append([loss_dr.item(), loss_df.item(), d_real, d_fake])
        if j == K - 1:  # D's gradients as the step leaves them
            for pname, p in d.named_parameters():
                t["grad.d." + pname] = p.grad.detach().numpy().copy()
        opt_d.step()
    for _, m in sn_layers:  # gf_gan_g_step: D's weights changed
        m.power_iteration()
    g.zero_grad()
    set_masks(d, cfg, seed, key, 2, n)
    out = d(augment(fake, key, 2))
    loss_g, d_fake2 = g_loss(kind, out)
    loss_g.backward()
    opt_g.step()
    for pname, p in g.named_parameters():
        t["grad.g." + pname] = p.grad.detach().numpy().copy()
    if g_ema is not None:  # G update 1: every parameter and BN statistic
        beta = ema_beta(cfg, 1)
        with torch.no_grad():
            for (_, pe), (_, p) in zip(g_ema.named_parameters(), g.named_parameters()):
                pe.copy_(torch.lerp(p, pe, beta))
            for (bname, be), (_, b) in zip(g_ema.named_buffers(), g.named_buffers()):
                if bname.endswith("running_mean") or bname.endswith("running_var"):
                    be.copy_(torch.lerp(b, be, beta))
    if kind == "hinge":
        print("%s: hinge margin %.3g (the D steps' relu masks are not a coin toss), %d of %d logits "
              "past the hinge" % (name, margin, inactive, 2 * K * n))
        assert margin > 1e-3 and 0 < inactive < 2 * K * n

    data = {"input.real": real, "input.z": z, "out.fake": sample(fake.detach().numpy()),
            "stats": np.array([loss_dr.item(), loss_df.item(), loss_g.item(), d_real, d_fake, d_fake2], np.float64)}
    if K > 1:
        data["stats_d"] = np.array(stats_d, np.float64)
    if r1_gamma > 0:
        data["stats_r1"] = np.array(stats_r1, np.float64)
        print("%s: R1 %s; |R1 grad| / |loss grad|: %s" % (name, stats_r1, ", ".join(r1_share)))
    if policy:
        data["aug.params"] = np.stack(aug_params).astype(np.float32)
    data.update(sn_start)
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
    for i, m in sn_layers:
        data["sn.d.main.%d.weight_u" % i] = m.weight_u.numpy().copy()
        data["sn.d.main.%d.weight_v" % i] = m.weight_v.numpy().copy()
        w64 = m.matrix().detach().numpy().astype(np.float64)
        u64, v64 = m.weight_u.numpy().astype(np.float64), m.weight_v.numpy().astype(np.float64)
        data["sigma.d.main.%d" % i] = np.array([u64 @ (w64 @ v64)], np.float64)
    if g_ema is not None:
        for pname, p in g_ema.named_parameters():
            data["ema.g." + pname] = sample(p.detach().numpy())
        for bname, b in g_ema.named_buffers():
            if bname.endswith("running_mean") or bname.endswith("running_var"):
                data["ema.g." + bname] = b.numpy().astype(np.float32).copy()
    meta = {k: str(v) for k, v in cfg.items()}
    meta["torch_version"] = torch.__version__
    path = os.path.join(outdir, name + ".safetensors")
    save_file(data, path, metadata=meta)
    print("%s: %d tensors, %d bytes; losses %s" % (path, len(data), os.path.getsize(path), data["stats"]))


REAL_SCALE = 16.0
CASES = {
    "mlp": dict(arch="mlp", size=28, channels=1, z_dim=50, ngf=1, ndf=1, batch=8, seed=1234, step=7),
    "dcgan28": dict(arch="dcgan", size=28, channels=1, z_dim=16, ngf=8, ndf=8, batch=4, seed=99, step=3),
    "dcgan64": dict(arch="dcgan", size=64, channels=3, z_dim=16, ngf=8, ndf=8, batch=4, seed=5, step=0),
    # The recipes: SNGAN's (hinge, SN, 2 D steps per G step) with an EMA of
    # beta 0.9; WGAN's critic loss with SN on mlp's D (dropout keyed per D
    # step); BCE with a ramped EMA, whose first update copies G. The hinge
    # case's real batches are uniform(-16, 16) (real_scale): this D (SN, no
    # batch norm, no bias) is positively homogeneous, and at scale 1 its
    # logits are ~0.05, every relu active; at 16 some real logits pass 1.
    "dcgan28_hinge_sn_ema": dict(arch="dcgan", size=28, channels=1, z_dim=16, ngf=8, ndf=8, batch=4, seed=77,
                                 step=5, loss="hinge", spectral_norm=1, ema_decay=0.9, ema_rampup=0.0,
                                 d_steps=2, real_scale=10.0),
    "mlp_wgan_sn": dict(arch="mlp", size=28, channels=1, z_dim=50, ngf=1, ndf=1, batch=8, seed=4321, step=7,
                        loss="wgan", spectral_norm=1, d_steps=2),
    "dcgan28_ema_ramp": dict(arch="dcgan", size=28, channels=1, z_dim=16, ngf=8, ndf=8, batch=4, seed=11, step=2,
                             ema_decay=0.999, ema_rampup=0.05),
    # R1 and DiffAugment, one D step: SNGAN's D (hinge, SN from converged
    # u, v) with R1 on the augmented reals and every policy: r1_every 1;
    # r1_every 2 at an even step key (applied, weighted 2); at an odd one
    # (not applied). Reals uniform(-16, 16) as in the hinge recipe, so that
    # some real logits pass the hinge. mlp: BCE, R1, a policy subset
    # (translation and cutout: the colour columns drawn neutral), dropout
    # masks of passes 0-3. gamma 10 (StyleGAN2's FFHQ value) makes R1's
    # part of D's gradient 2-24 % (printed), so a 1 % error in it shows.
    "dcgan28_hinge_sn_r1_aug": dict(arch="dcgan", size=28, channels=1, z_dim=16, ngf=8, ndf=8, batch=4, seed=31,
                                    step=3, loss="hinge", spectral_norm=1, sn_start_iters=20, r1_gamma=10.0,
                                    r1_every=1, augment="color,translation,cutout", real_scale=REAL_SCALE),
    "dcgan28_hinge_sn_r1lazy_aug": dict(arch="dcgan", size=28, channels=1, z_dim=16, ngf=8, ndf=8, batch=4,
                                        seed=32, step=4, loss="hinge", spectral_norm=1, sn_start_iters=20,
                                        r1_gamma=10.0, r1_every=2, augment="color,translation,cutout",
                                        real_scale=REAL_SCALE),
    "dcgan28_hinge_sn_r1skip_aug": dict(arch="dcgan", size=28, channels=1, z_dim=16, ngf=8, ndf=8, batch=4,
                                        seed=33, step=5, loss="hinge", spectral_norm=1, sn_start_iters=20,
                                        r1_gamma=10.0, r1_every=2, augment="color,translation,cutout",
                                        real_scale=REAL_SCALE),
    # The residual pair (model/src/net_resnet.c): BCE at 28 px; SNGAN's
    # recipe at 32 px in RGB (hinge, SN, 2 D steps, EMA).
    "resnet28": dict(arch="resnet", size=28, channels=1, z_dim=16, ngf=8, ndf=8, batch=4, seed=21, step=3),
    "resnet32_hinge_sn_ema": dict(arch="resnet", size=32, channels=3, z_dim=16, ngf=8, ndf=8, batch=4, seed=22,
                                  step=5, loss="hinge", spectral_norm=1, ema_decay=0.9, ema_rampup=0.0,
                                  d_steps=2, real_scale=10.0),
    "mlp_r1_aug": dict(arch="mlp", size=28, channels=1, z_dim=50, ngf=1, ndf=1, batch=8, seed=2468, step=9,
                       r1_gamma=10.0, r1_every=1, augment="translation,cutout"),
}

if __name__ == "__main__":
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    names = sys.argv[2:] or list(CASES)
    for name in names:
        run_case(name, CASES[name], outdir)
