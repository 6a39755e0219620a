#!/usr/bin/env python3
"""make_sg2_pl_golden.py - golden numbers for StyleGAN2-ADA's path length
regulariser (Greg; the planned gf_sg2_g_pl) as the official training loss
computes it, by PyTorch autograd with create_graph=True through the
official generator.

Run by hand (not by ctest):
  python3 make_sg2_pl_golden.py SG2ADA_DIR [GOLDEN_DIR]
SG2ADA_DIR is NVlabs/stylegan2-ada-pytorch at commit d72cc7d extracted to a
folder OUTSIDE this repository, prepared as make_sg2_nets_golden.py's
header says (an empty requests.py in it); this script imports its
training.networks and runs it; nothing of it is copied here. Made with
torch 2.15 (CPU), numpy, safetensors. GOLDEN_DIR (default: this script's
folder) holds the nets' goldens sg2_<case>_g.safetensors of
make_sg2_nets_golden.py: their weights (G.<name>), inputs (in.z [2, 32],
in.c) and sizes (metadata) are loaded into the official Generator built
at those sizes, so no weights are made here.

The loss is training/loss.py's Gpl phase for the whole batch (its
pl_batch_shrink is the caller's: the batch here is what it keeps), with
ws = G.mapping(z, c) (psi 1, no style mixing), the synthesis in fp32 with
noise_mode 'const' (the official training draws random noise; const
makes it reproducible), and the pl noise given as an input:
  pl_grads   = d(sum(img * pl_noise)) / dws                [N, num_ws, w_dim]
  pl_lengths = sqrt(mean over num_ws of sum over w_dim of pl_grads^2)
  pl_mean    = lerp(pl_mean_in, mean(pl_lengths), pl_decay)   (not detached)
  pl_penalty = (pl_lengths - pl_mean)^2
  loss       = mean(pl_penalty * pl_weight)                 (gain 1)
For each case (uncond, cond, clamp: conv_clamp 0.6) it writes
golden/sg2_<case>_pl.safetensors:
  in.pl_noise       randn(img.shape) / sqrt(H W)  (a fixed generator)
  in.pl_mean        [1] the pl_mean before the step (0.25)
  out.pl_grads, out.pl_lengths [N], out.pl_penalty [N]
  out.pl_mean       [1] the updated pl_mean
  out.dws           dloss/dws (through pl_grads)
  G.pl.<name>       dloss/dparam for every G parameter (the mapping's
                    through ws)
Metadata: the case's sizes (from the nets' golden), pl_decay 0.01,
pl_weight 2, torch.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sg2_reg_golden import load_net, read_golden, write_golden  # noqa

PL_DECAY, PL_WEIGHT, PL_MEAN = 0.01, 2.0, 0.25


def case(nets, name, gdir, seed):
    meta, t = read_golden(gdir, f'sg2_{name}_g')
    c_dim = int(meta['c_dim'])
    clamp = float(meta['conv_clamp']) or None
    G = nets.Generator(
        z_dim=int(meta['z_dim']), c_dim=c_dim, w_dim=int(meta['w_dim']),
        img_resolution=int(meta['img_resolution']),
        img_channels=int(meta['img_channels']),
        mapping_kwargs=dict(num_layers=int(meta['map_layers'])),
        synthesis_kwargs=dict(channel_base=int(meta['channel_base']),
                              channel_max=int(meta['channel_max']),
                              num_fp16_res=0, conv_clamp=clamp))
    load_net(G, t, 'G')
    z = torch.from_numpy(t['in.z'])
    c = torch.from_numpy(t['in.c']) if c_dim > 0 else None
    gen = torch.Generator().manual_seed(seed)
    G.zero_grad()
    ws = G.mapping(z, c)
    ws.retain_grad()
    img = G.synthesis(ws, noise_mode='const', force_fp32=True)
    noise = torch.randn(img.shape, generator=gen) / np.sqrt(
        img.shape[2] * img.shape[3])
    pl_grads = torch.autograd.grad(outputs=[(img * noise).sum()],
                                   inputs=[ws], create_graph=True,
                                   only_inputs=True)[0]
    pl_lengths = pl_grads.square().sum(2).mean(1).sqrt()
    pl_mean_in = torch.full([1], PL_MEAN)
    pl_mean = pl_mean_in.lerp(pl_lengths.mean(), PL_DECAY)
    pl_penalty = (pl_lengths - pl_mean).square()
    loss = pl_penalty * PL_WEIGHT
    (img[:, 0, 0, 0] * 0 + loss).mean().backward()
    out = {'in.pl_noise': noise.numpy(), 'in.pl_mean': pl_mean_in.numpy(),
           'out.pl_grads': pl_grads.detach().numpy(),
           'out.pl_lengths': pl_lengths.detach().numpy(),
           'out.pl_penalty': pl_penalty.detach().numpy(),
           'out.pl_mean': pl_mean.detach().numpy(),
           'out.dws': ws.grad.numpy()}
    for k, p in G.named_parameters():
        out[f'G.pl.{k}'] = (p.grad.numpy().copy() if p.grad is not None
                            else np.zeros(tuple(p.shape), np.float32))
    write_golden(out, dict(meta, pl_decay=str(PL_DECAY),
                           pl_weight=str(PL_WEIGHT)), gdir, f'sg2_{name}_pl')


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    from training import networks as nets  # the official code, run only
    gdir = (sys.argv[2] if len(sys.argv) > 2
            else os.path.dirname(os.path.abspath(__file__)))
    torch.use_deterministic_algorithms(True)
    case(nets, 'uncond', gdir, 5100)
    case(nets, 'cond', gdir, 5200)
    case(nets, 'clamp', gdir, 5300)


if __name__ == '__main__':
    main()
