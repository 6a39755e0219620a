#!/usr/bin/env python3
"""torch_dcgan.py - the PyTorch side of bench/metrics/quality.sh: the DCGAN
ganflow's quickstart trains (28x28x1 Fashion-MNIST, z 100, 64 filters, the
networks of tests/model/golden/make_golden.py with the DCGAN example's
initialisation (conv weights N(0, 0.02), batch-norm weights N(1, 0.02)), BCE
with logits, Adam 2e-4 (0.5, 0.999), batch 64, a new shuffle of the
training set each epoch) trained the usual PyTorch way for the same steps; at each
--save step it writes --images generated images as 8-bit grey PNGs (the
mapping ganflow uses: round((x + 1) / 2 * 255)) into OUT/step-<k>/, for
`ganflow fid` to score against the same reference as ganflow's checkpoints.

  python torch_dcgan.py OUT [--steps 3000] [--save 500,1000,3000]
                        [--images 2000] [--threads 2] [--seed 1]
"""
import argparse
import gzip
import os
import struct
import sys
import time

import numpy as np
import PIL.Image
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "model", "golden"))
import make_golden  # noqa: E402

FASHION = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"


def weights_init(m):
    """The PyTorch DCGAN example's initialisation, which ganflow's dcgan
    uses too (model/src/net_dcgan.c)."""
    if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


def load():
    with gzip.open(FASHION, "rb") as f:
        magic, n, h, w = struct.unpack(">IIII", f.read(16))
        assert magic == 2051
        x = np.frombuffer(f.read(n * h * w), np.uint8).reshape(n, 1, h, w)
    return torch.from_numpy(x.astype(np.float32) / 127.5 - 1.0)


def save(g, z, out, k):
    d = os.path.join(out, f"step-{k}")
    os.makedirs(d, exist_ok=True)
    g.eval()
    with torch.no_grad():
        imgs = torch.cat([g(z[i:i + 256]) for i in range(0, len(z), 256)])
    g.train()
    px = torch.clamp(torch.floor((imgs + 1) * 0.5 * 255 + 0.5), 0, 255).to(torch.uint8).numpy()
    for i, im in enumerate(px):
        PIL.Image.fromarray(im[0], "L").save(os.path.join(d, f"{i:05d}.png"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--save", default="500,1000,3000")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    saves = {int(s) for s in a.save.split(",")}
    cfg = dict(arch="dcgan", size=28, channels=1, z_dim=100, ngf=64, ndf=64)
    g, d = make_golden.Net("g", cfg), make_golden.Net("d", cfg)
    g.apply(weights_init)
    d.apply(weights_init)
    data = load()
    crit = nn.BCEWithLogitsLoss()
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    n = 64
    ones, zeros = torch.ones(n, 1), torch.zeros(n, 1)
    z_eval = torch.randn(a.images, cfg["z_dim"])
    perm, at = torch.randperm(len(data)), 0
    t0 = time.perf_counter()
    for k in range(1, a.steps + 1):
        if at + n > len(data):
            perm, at = torch.randperm(len(data)), 0
        real = data[perm[at:at + n]]
        at += n
        fake = g(torch.randn(n, cfg["z_dim"]))
        d.zero_grad()
        crit(d(real), ones).backward()
        crit(d(fake.detach()), zeros).backward()
        opt_d.step()
        g.zero_grad()
        crit(d(fake), ones).backward()
        opt_g.step()
        if k in saves:
            save(g, z_eval, a.out, k)
            print(f"step {k}: {a.images} images in {a.out}/step-{k} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
