#!/usr/bin/env python3
"""official_step.py - the official StyleGAN2-ADA code's side of
sg2_step_bench.c: the same training step (the Gmain and Dmain phases of
training/training_loop.py over training/loss.py's StyleGAN2Loss, ADA's
AugmentPipe 'bgc' at a fixed p, the G EMA; Greg and Dreg off: pl_weight 0,
r1_gamma 0, unless --reg) or G's forward alone (eval, noise_mode 'const', psi 1), same
sizes, same batch, torch.set_num_threads(--threads), on the CPU, where the
official custom ops fall back to their reference implementations. Prints
one line in sg2_step_bench's format, "official" first.

The official code (NVlabs/stylegan2-ada-pytorch, NVIDIA Source Code
License, non-commercial) is imported from a copy of it outside the ganflow
checkout, never copied here:
  git -C <clone of NVlabs/stylegan2-ada-pytorch> archive d72cc7d | tar -x -C /tmp/sg2ada
  pip install torch numpy scipy      # a Python 3.11 with torch (2.15 CPU ran it)
  python official_step.py /tmp/sg2ada [--what step|gfwd] [--res 32]
      [--cbase N] [--cmax N] [--batch N] [--threads 2] [--steps 5]
      [--warmup 1] [--p 0.2]
Stand-in: dnnlib/util.py imports requests (for downloads only); an empty
module takes its place when it is not installed. Nothing else is patched.

The sizes are train.py's 'auto' configuration at --res (3 channels,
unconditional, mapping 2 layers, conv_clamp 256, mbstd group min(batch,
4)) with fp16 off (num_fp16_res 0: ganflow computes in f32, and the
official code only runs fp16 layers on CUDA), --cbase / --cmax overriding
channel_base / channel_max. Adam has the lazy-regularization correction
(k = 4 for G, 16 for D) as training_loop.py sets it up, whether or not the
reg phases run. Real images are a fixed batch in [-1, 1]; the latents are
torch.randn per phase, as training_loop.py draws them.
"""
import argparse
import copy
import os
import sys
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_util import vm_hwm_mib  # noqa: E402


def auto_batch(res):
    return max(min(min(4096 // res, 32), 64), 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("repo", help="a copy of NVlabs/stylegan2-ada-pytorch")
    ap.add_argument("--what", choices=("step", "gfwd"), default="step")
    ap.add_argument("--res", type=int, default=32)
    ap.add_argument("--cbase", type=int, default=0)
    ap.add_argument("--cmax", type=int, default=0)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--p", type=float, default=0.2)
    ap.add_argument("--reg", action="store_true",
                    help="Greg (pl 2, every 4th step) and Dreg (R1 gamma "
                         "0.0002 res^2 / batch, auto's, every 16th) as "
                         "training runs them; the mean step")
    a = ap.parse_args()

    import torch
    torch.set_num_threads(a.threads)
    try:
        import requests  # noqa: F401
    except ImportError:
        sys.modules["requests"] = types.ModuleType("requests")
    sys.path.insert(0, os.path.abspath(a.repo))
    from training import networks, augment, loss as loss_mod  # the official code

    res = a.res
    batch = a.batch or auto_batch(res)
    cbase = a.cbase or (32768 if res >= 512 else 16384)
    cmax = a.cmax or 512
    lr = 0.002 if res >= 1024 else 0.0025
    dev = torch.device("cpu")
    torch.manual_seed(1)
    G = networks.Generator(z_dim=512, c_dim=0, w_dim=512, img_resolution=res,
                           img_channels=3, mapping_kwargs=dict(num_layers=2),
                           synthesis_kwargs=dict(channel_base=cbase, channel_max=cmax,
                                                 num_fp16_res=0, conv_clamp=256))
    t = []
    if a.what == "gfwd":
        G.eval().requires_grad_(False)
        with torch.no_grad():
            for i in range(-a.warmup, a.steps):
                z = torch.randn([batch, G.z_dim])
                t0 = time.perf_counter()
                G(z, None, truncation_psi=1, noise_mode="const")
                if i >= 0:
                    t.append(time.perf_counter() - t0)
    else:
        D = networks.Discriminator(c_dim=0, img_resolution=res, img_channels=3,
                                   architecture="resnet", channel_base=cbase,
                                   channel_max=cmax, num_fp16_res=0, conv_clamp=256,
                                   epilogue_kwargs=dict(mbstd_group_size=min(batch, 4)))
        G.train().requires_grad_(False)
        D.train().requires_grad_(False)
        G_ema = copy.deepcopy(G).eval()
        pipe = augment.AugmentPipe(xflip=1, rotate90=1, xint=1, scale=1, rotate=1,
                                   aniso=1, xfrac=1, brightness=1, contrast=1,
                                   lumaflip=1, hue=1, saturation=1)
        pipe.train().requires_grad_(False)
        pipe.p.copy_(torch.as_tensor(a.p))
        loss = loss_mod.StyleGAN2Loss(device=dev, G_mapping=G.mapping,
                                      G_synthesis=G.synthesis, D=D, augment_pipe=pipe,
                                      style_mixing_prob=0.9,
                                      r1_gamma=0.0002 * res * res / batch if a.reg else 0,
                                      pl_weight=2 if a.reg else 0)
        opts = {}
        for name, net, k in (("G", G, 4), ("D", D, 16)):
            c = k / (k + 1)
            opts[name] = torch.optim.Adam(net.parameters(), lr=lr * c,
                                          betas=[0 ** c, 0.99 ** c], eps=1e-8)
        real = (torch.arange(batch * 3 * res * res) * 7919 % 255).float() / 127.5 - 1
        real = real.reshape(batch, 3, res, res)
        real_c = torch.zeros([batch, 0])
        ema_nimg = batch * 10 / 32 * 1000
        cur_nimg = 0
        for i in range(-a.warmup, a.steps):
            t0 = time.perf_counter()
            phases = (("Gmain", "G", G, 1), ("Greg", "G", G, 4),
                      ("Dmain", "D", D, 1), ("Dreg", "D", D, 16))
            for phase, name, net, every in phases:
                if every > 1 and (not a.reg or (i + a.warmup) % every != 0):
                    continue
                opt = opts[name]
                opt.zero_grad(set_to_none=True)
                net.requires_grad_(True)
                gen_z = torch.randn([batch, G.z_dim], device=dev)
                loss.accumulate_gradients(phase=phase, real_img=real, real_c=real_c,
                                          gen_z=gen_z, gen_c=real_c, sync=True,
                                          gain=every)
                net.requires_grad_(False)
                for p in net.parameters():
                    if p.grad is not None:
                        torch.nan_to_num(p.grad, nan=0, posinf=1e5, neginf=-1e5,
                                         out=p.grad)
                opt.step()
            with torch.no_grad():  # the EMA, ramp-up 0.05 as 'auto'
                nimg = min(ema_nimg, cur_nimg * 0.05)
                beta = 0.5 ** (batch / max(nimg, 1e-8))
                for pe, p in zip(G_ema.parameters(), G.parameters()):
                    pe.copy_(p.lerp(pe, beta))
                for be, b in zip(G_ema.buffers(), G.buffers()):
                    be.copy_(b)
            cur_nimg += batch
            if i >= 0:
                t.append(time.perf_counter() - t0)
    t.sort()
    med = sum(t) / len(t) if a.reg else t[len(t) // 2]
    rate = (f"s_per_kimg={med / batch * 1e3:.2f}" if a.what == "step"
            else f"img_per_s={batch / med:.2f}")
    print(f"official {a.what}{'+reg' if a.reg else ''} res={res} cbase={cbase} cmax={cmax} batch={batch} "
          f"threads={a.threads} steps={a.steps}: {rate} median_ms={1e3 * med:.1f} "
          f"min_ms={1e3 * t[0]:.1f} max_ms={1e3 * t[-1]:.1f} "
          f"vmhwm_mib={vm_hwm_mib():.1f}")


if __name__ == "__main__":
    main()
