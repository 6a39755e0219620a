#!/usr/bin/env python3
"""make_sg2_nets_golden.py - golden numbers for tests/model/test_sg2_nets.c:
the StyleGAN2-ADA generator (mapping + synthesis) and discriminator
forward passes (gf/sg2_net.h) as the official code computes them.

Run by hand (not by ctest):
  python3 make_sg2_nets_golden.py SG2ADA_DIR [OUTDIR]
SG2ADA_DIR is NVlabs/stylegan2-ada-pytorch at commit d72cc7d extracted to a
folder OUTSIDE this repository (`git archive d72cc7d | tar -x -C DIR`); this
script imports its training.networks and runs it; nothing of it is copied
here. Made with torch 2.15 (CPU) and numpy; the official custom ops fall
back to their reference implementations on the CPU. One patch of the /tmp
copy: dnnlib/util.py imports `requests` (downloads only), absent from that
venv, so an empty requests.py was put in SG2ADA_DIR.
OUTDIR defaults to this script's folder.

Each case builds the official Generator and Discriminator at a tiny size
(img_resolution 32, img_channels 3, z_dim = w_dim = 32, mapping 2 layers
in G and D, channel_base 256, channel_max 16: 16 channels at 4..16, 8 at
32), initialised by torch.manual_seed(case seed), then PERTURBS every
bias, every noise_strength and w_avg (N(0, 0.3) added; an affine bias
starts at 1 and keeps that offset) so that no term hides behind a zero.
It writes golden/sg2_<case>_g.safetensors (G, N = 2 samples) and
golden/sg2_<case>_d.safetensors (D, N = 4) with
  G.<state_dict name>   (_g) every tensor of G.state_dict() but the fixed
  D.<state_dict name>   (_d) resample_filter buffers (constants, not
                        weights)
  filter                the [4,4] resample filter (setup_filter([1,3,3,1]))
  in.z [N, z_dim] (_g), in.c [N, c_dim] (cond only), in.img [N, 3, 32, 32]
                        (_d)
  out.ws                mapping(z, c), psi 1                [N, num_ws, w_dim]
  out.ws_trunc          psi 0.7, truncation_cutoff 4
  out.w_avg_updated     w_avg after one training-mode mapping forward
  out.img_const         synthesis(ws, noise_mode='const', force_fp32=True)
  out.img_none          the same with noise_mode='none'
  out.logits            D(in.img, c)                       [N, 1]
  mid.const.b<r>.x, mid.const.b<r>.img   each synthesis block's outputs
                        (x for r = 4, 8; img for r = 4, 8, 16)
  mid.d.b<r>.x          each D block's output (r = 16, 8: b16's is the
                        epilogue's input)
The cond and clamp cases also write the gradients (torch autograd, eval
mode: fused modconv) to sg2_<case>_{g,d}_grad.safetensors:
  in.dimg               a fixed N(0, 1) dL/dimg of synthesis(ws, 'const')
  out.dws               dL/dws
  G.grad.<name>         dL/dparam of every G parameter, the mapping's
                        through ws = mapping(z, c) (psi 1)
  in.dlogits            a fixed N(0, 1) dL/dlogits of D(in.img, c)
  out.dimg              dL/dimg
  D.grad.<name>         dL/dparam of every D parameter
Metadata (strings): the sizes of the case.
Cases: uncond (c_dim 0), cond (c_dim 3), clamp (c_dim 0, conv_clamp 0.6:
clamping active in many layers), orig (D's architecture 'orig', the
cifar config's d_resnet 0: sg2_orig_d only). D's mbstd group is 2 (two groups of 2).
"""
import os
import sys

import numpy as np
import torch
from safetensors.numpy import save_file

N_G, N_D = 2, 4
RES, IMG_C, ZW = 32, 3, 32
CB, CM = 256, 16
MAP = 2
MBSTD_GROUP, MBSTD_C = 2, 1


def case(nets, name, seed, c_dim, conv_clamp, outdir, grads, arch='resnet'):
    torch.manual_seed(seed)
    G = nets.Generator(z_dim=ZW, c_dim=c_dim, w_dim=ZW, img_resolution=RES,
                       img_channels=IMG_C,
                       mapping_kwargs=dict(num_layers=MAP),
                       synthesis_kwargs=dict(channel_base=CB, channel_max=CM,
                                             num_fp16_res=0,
                                             conv_clamp=conv_clamp))
    D = nets.Discriminator(c_dim=c_dim, img_resolution=RES,
                           img_channels=IMG_C, architecture=arch,
                           channel_base=CB, channel_max=CM, num_fp16_res=0,
                           conv_clamp=conv_clamp,
                           mapping_kwargs=dict(num_layers=MAP),
                           epilogue_kwargs=dict(
                               mbstd_group_size=MBSTD_GROUP,
                               mbstd_num_channels=MBSTD_C))
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for net in (G, D):
            for k, t in net.state_dict().items():
                last = k.split('.')[-1]
                if last in ('bias', 'noise_strength', 'w_avg'):
                    t.add_(torch.randn(t.shape, generator=gen) * 0.3)
    G.eval()
    D.eval()
    og, od = {}, {}
    for out, pre, net in ((og, 'G', G), (od, 'D', D)):
        for k, t in net.state_dict().items():
            if k.endswith('resample_filter'):
                continue
            out[f'{pre}.{k}'] = t.detach().numpy().astype(np.float32).copy()
        out['filter'] = G.synthesis.b8.resample_filter.numpy().copy()
    z = torch.randn([N_G, ZW], generator=gen)
    c = cd = None
    if c_dim > 0:
        cd = torch.nn.functional.one_hot(torch.tensor([0, 2, 1, 2]),
                                         c_dim).float()
        c = cd[:N_G]
        og['in.c'] = c.numpy()
        od['in.c'] = cd.numpy()
    img = torch.randn([N_D, IMG_C, RES, RES], generator=gen)
    og['in.z'] = z.numpy()
    od['in.img'] = img.numpy()
    out = og
    with torch.no_grad():
        ws = G.mapping(z, c)
        out['out.ws'] = ws.numpy()
        out['out.ws_trunc'] = G.mapping(z, c, truncation_psi=0.7,
                                        truncation_cutoff=4).numpy()
        for mode in ('const', 'none'):
            out[f'out.img_{mode}'] = G.synthesis(
                ws, noise_mode=mode, force_fp32=True).numpy()
        # per-block outputs of the 'const' pass (SynthesisNetwork.forward's
        # loop, run here block by block)
        syn = G.synthesis
        x = im = None
        w_idx = 0
        for res in syn.block_resolutions:
            blk = getattr(syn, f'b{res}')
            cur = ws.narrow(1, w_idx, blk.num_conv + blk.num_torgb)
            w_idx += blk.num_conv
            x, im = blk(x, im, cur, noise_mode='const', force_fp32=True)
            if res < RES // 2:
                out[f'mid.const.b{res}.x'] = x.numpy().copy()
            if res < RES:
                out[f'mid.const.b{res}.img'] = im.numpy().copy()
        od['out.logits'] = D(img, cd).numpy()
        x = None
        im = img
        for res in D.block_resolutions:
            blk = getattr(D, f'b{res}')
            x, im = blk(x, im)
            if res < RES:
                od[f'mid.d.b{res}.x'] = x.numpy().copy()
        G.mapping.train()
        G.mapping(z, c)
        out['out.w_avg_updated'] = G.mapping.w_avg.numpy().copy()
    meta = dict(z_dim=str(ZW), w_dim=str(ZW), c_dim=str(c_dim),
                img_resolution=str(RES), img_channels=str(IMG_C),
                channel_base=str(CB), channel_max=str(CM),
                map_layers=str(MAP), d_map_layers=str(MAP),
                mbstd_group=str(MBSTD_GROUP), mbstd_channels=str(MBSTD_C),
                conv_clamp=str(conv_clamp if conv_clamp else 0),
                truncation_psi='0.7', truncation_cutoff='4',
                d_resnet=str(int(arch == 'resnet')),
                torch=torch.__version__, seed=str(seed))
    if grads:
        gg, gd = {}, {}
        dimg = torch.randn([N_G, IMG_C, RES, RES], generator=gen)
        dlog = torch.randn([N_D, 1], generator=gen)
        gg['in.dimg'] = dimg.numpy()
        gd['in.dlogits'] = dlog.numpy()
        G.zero_grad()
        ws = G.mapping(z, c).detach().requires_grad_(True)
        img_g = G.synthesis(ws, noise_mode='const', force_fp32=True)
        (img_g * dimg).sum().backward()
        ws_m = G.mapping(z, c)  # the mapping's parameters from dws
        ws_m.backward(ws.grad)
        gg['out.dws'] = ws.grad.numpy()
        for k, p in G.named_parameters():
            gg[f'G.grad.{k}'] = p.grad.numpy().copy()
        D.zero_grad()
        img_d = img.clone().requires_grad_(True)
        (D(img_d, cd) * dlog).sum().backward()
        gd['out.dimg'] = img_d.grad.numpy()
        for k, p in D.named_parameters():
            gd[f'D.grad.{k}'] = p.grad.numpy().copy()
        for net, out in (('g', gg), ('d', gd)):
            out = {k: np.ascontiguousarray(v, dtype=np.float32)
                   for k, v in out.items()}
            path = os.path.join(outdir, f'sg2_{name}_{net}_grad.safetensors')
            save_file(out, path, metadata=meta)
            print(path, os.path.getsize(path), 'bytes,', len(out), 'tensors')
    for net, out, n in (('g', og, N_G), ('d', od, N_D)):
        if arch != 'resnet' and net == 'g':
            continue  # the same G as the other cases: D only
        out = {k: np.ascontiguousarray(v, dtype=np.float32)
               for k, v in out.items()}
        path = os.path.join(outdir, f'sg2_{name}_{net}.safetensors')
        save_file(out, path, metadata=dict(meta, batch=str(n)))
        print(path, os.path.getsize(path), 'bytes,', len(out), 'tensors')


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    from training import networks as nets  # the official code, run only
    outdir = (sys.argv[2] if len(sys.argv) > 2
              else os.path.dirname(os.path.abspath(__file__)))
    case(nets, 'uncond', 1000, 0, None, outdir, False)
    case(nets, 'cond', 2000, 3, None, outdir, True)
    case(nets, 'clamp', 3000, 0, 0.6, outdir, True)
    case(nets, 'orig', 4000, 0, None, outdir, False, arch='orig')


if __name__ == '__main__':
    main()
