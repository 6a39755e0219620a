#!/usr/bin/env python3
"""torch_baseline.py - PyTorch eager CPU baseline for bench_model.c: the
same networks (built by tests/model/golden/make_golden.py, the module the
golden tests use, with nn.Dropout in D as PyTorch users would write it) and
the same step (D on real and on G(z).detach(), Adam on D, G through D,
Adam on G), timed per step, with the process's VmHWM. One model per
process, as the C benchmark.

  python torch_baseline.py --model mlp|dcgan28|dcgan64 [--batch 64] [--threads 1] [--steps 10]
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "model", "golden"))
import make_golden  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_util import vm_hwm_mib  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.model == "mlp":
        cfg = dict(arch="mlp", size=28, channels=1, z_dim=50, ngf=1, ndf=1)
    else:
        size = int(a.model[5:])
        cfg = dict(arch="dcgan", size=size, channels=1 if size == 28 else 3, z_dim=100, ngf=64, ndf=64)
    g, d = make_golden.Net("g", cfg), make_golden.Net("d", cfg)
    for i, m in enumerate(d.main):  # the ordinary dropout layer
        if isinstance(m, make_golden.MaskDropout):
            d.main[i] = nn.Dropout(m.p)
    n = a.batch
    crit = nn.BCEWithLogitsLoss()
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real = torch.rand(n, cfg["channels"], cfg["size"], cfg["size"]) * 2 - 1
    ones, zeros = torch.ones(n, 1), torch.zeros(n, 1)
    times = []
    for i in range(a.steps + 1):
        t0 = time.perf_counter()
        z = torch.randn(n, cfg["z_dim"])
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
        if i > 0:  # step 0 warms up
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    print("%-8s batch %3d threads %d: step %8.1f ms median (min %.1f, max %.1f, %d steps), %7.1f img/s; "
          "VmHWM %.1f MiB; torch %s" % (a.model, n, a.threads, 1e3 * med, 1e3 * times[0], 1e3 * times[-1],
                                        len(times), n / med, vm_hwm_mib(), torch.__version__))


if __name__ == "__main__":
    main()
