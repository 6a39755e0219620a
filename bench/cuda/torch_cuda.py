#!/usr/bin/env python3
"""torch_cuda.py - PyTorch eager baseline for bench_cuda.c on the same GPU:
the same networks (tests/model/golden/make_golden.py, as bench/model uses)
and the same step (D on real and on G(z).detach(), Adam on D, G through D,
Adam on G), each timed step ending with torch.cuda.synchronize(); the
losses are read back with .item() as gf_gan_step reads its own.

  python torch_cuda.py --model dcgan28|dcgan64 [--batch 64] [--steps 50] [--tf32]
  python torch_cuda.py --model dcgan64 --batch 64 --flops-only

--flops-only prints the multiply-add FLOPs (2 x MACs of the conv, transposed
conv and linear layers) of one training step and exits (CPU is enough):
G forward once and backward once (dx + dw: 2x forward), D forward three
times (real, fake, fake after the update), backward with weight gradients
twice (2x forward each) and once for dx alone (1x). run.sh divides it by the
median step time of either implementation for achieved TFLOP/s.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "model", "golden"))
import make_golden  # noqa: E402


def config(model):
    if model == "mlp":
        return dict(arch="mlp", size=28, channels=1, z_dim=50, ngf=1, ndf=1)
    size = int(model[5:])
    return dict(arch="dcgan", size=size, channels=1 if size == 28 else 3, z_dim=100, ngf=64, ndf=64)


def forward_macs(net, x):
    """MACs of the conv / transposed conv / linear layers of one forward."""
    total = [0]

    def hook(m, inp, out):
        if isinstance(m, nn.ConvTranspose2d):
            total[0] += inp[0].numel() * m.out_channels * m.kernel_size[0] * m.kernel_size[1]
        elif isinstance(m, nn.Conv2d):
            total[0] += out.numel() * m.in_channels * m.kernel_size[0] * m.kernel_size[1]
        elif isinstance(m, nn.Linear):
            total[0] += inp[0].shape[0] * m.in_features * m.out_features

    hs = [m.register_forward_hook(hook) for m in net.modules()]
    with torch.no_grad():
        y = net(x)
    for h in hs:
        h.remove()
    return total[0], y


def step_flops(cfg, n):
    g, d = make_golden.Net("g", cfg).train(), make_golden.Net("d", cfg).train()
    gm, fake = forward_macs(g, torch.randn(n, cfg["z_dim"]))
    dm, _ = forward_macs(d, fake)
    return 2 * (3 * gm + 8 * dm)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--flops-only", action="store_true")
    a = ap.parse_args()
    cfg = config(a.model)
    n = a.batch
    if a.flops_only:
        print(step_flops(cfg, n))
        return
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    dev = torch.device("cuda")
    g, d = make_golden.Net("g", cfg).to(dev), make_golden.Net("d", cfg).to(dev)
    for i, m in enumerate(d.main):
        if isinstance(m, make_golden.MaskDropout):
            d.main[i] = nn.Dropout(m.p)
    crit = nn.BCEWithLogitsLoss()
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real = torch.rand(n, cfg["channels"], cfg["size"], cfg["size"], device=dev) * 2 - 1
    ones, zeros = torch.ones(n, 1, device=dev), torch.zeros(n, 1, device=dev)
    times = []
    for i in range(a.steps + 3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        z = torch.randn(n, cfg["z_dim"], device=dev)
        fake = g(z)
        d.zero_grad()
        err_real = crit(d(real), ones)
        err_real.backward()
        err_fake = crit(d(fake.detach()), zeros)
        err_fake.backward()
        opt_d.step()
        g.zero_grad()
        err_g = crit(d(fake), ones)
        err_g.backward()
        opt_g.step()
        losses = (err_real.item(), err_fake.item(), err_g.item())
        torch.cuda.synchronize()
        if i >= 3:  # 3 warm-up steps
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    print("%-8s batch %3d %s: step %8.3f ms median (min %.3f, max %.3f, %d steps), %9.1f img/s; "
          "loss_d %.3f; torch %s, %s" % (a.model, n, "tf32" if a.tf32 else "fp32", 1e3 * med, 1e3 * times[0],
                                          1e3 * times[-1], len(times), n / med, losses[0] + losses[1],
                                          torch.__version__, torch.cuda.get_device_name()))


if __name__ == "__main__":
    main()
