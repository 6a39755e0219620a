#!/usr/bin/env python3
"""make_sg2_reg_golden.py - golden numbers for tests/model/test_sg2_reg.c:
StyleGAN2-ADA's R1 penalty (gf_sg2_d_r1, model/src/sg2_r1.c) as the
official training loss computes it, by PyTorch autograd with
create_graph=True through the official discriminator.

Run by hand (not by ctest):
  python3 make_sg2_reg_golden.py SG2ADA_DIR [GOLDEN_DIR]
SG2ADA_DIR is NVlabs/stylegan2-ada-pytorch at commit d72cc7d extracted to a
folder OUTSIDE this repository, prepared as make_sg2_nets_golden.py's
header says (an empty requests.py in it); this script imports its
training.networks and runs it; nothing of it is copied here. Made with
torch 2.15 (CPU), numpy, safetensors. GOLDEN_DIR (default: this script's
folder) holds the nets' goldens sg2_<case>_d.safetensors of
make_sg2_nets_golden.py: their weights (D.<name>), inputs (in.img [4, 3,
32, 32], in.c) and sizes (metadata) are loaded into the official
Discriminator built at those sizes (the resample filters are the
constructor's), so no weights are made here.

For each case (uncond, cond, clamp, orig) it writes
golden/sg2_<case>_r1.safetensors:
  out.r1_grads     grad_x sum(D(x, c))                      [4, 3, 32, 32]
  out.r1_penalty   r1_grads.square().sum([1, 2, 3])         [4]
  D.r1.<name>      d(mean(r1_penalty))/d(param) for every D parameter
                   (scale 1: the loss's gamma / 2 and the lazy interval
                   multiply it)
Metadata: the case's sizes (copied from the nets' golden), torch.
"""
import os
import sys

import numpy as np
import torch
from safetensors.numpy import load_file, save_file
from safetensors import safe_open


def read_golden(gdir, name):
    """The metadata and tensors of golden/<name>.safetensors."""
    path = os.path.join(gdir, f'{name}.safetensors')
    with safe_open(path, 'np') as f:
        meta = dict(f.metadata())
    return meta, load_file(path)


def load_net(net, t, prefix):
    """Loads the golden tensors prefix.<name> into net (the resample
    filters are the constructor's)."""
    sd = {k[len(prefix) + 1:]: torch.from_numpy(v) for k, v in t.items()
          if k.startswith(prefix + '.')}
    missing, unexpected = net.load_state_dict(sd, strict=False)
    assert not unexpected, unexpected
    assert all(k.endswith('resample_filter') for k in missing), missing
    net.eval()


def write_golden(out, meta, gdir, name):
    out = {k: np.ascontiguousarray(v, dtype=np.float32)
           for k, v in out.items()}
    meta = dict(meta, torch=torch.__version__)
    opath = os.path.join(gdir, f'{name}.safetensors')
    save_file(out, opath, metadata=meta)
    print(opath, os.path.getsize(opath), 'bytes,', len(out), 'tensors')


def case(nets, name, gdir):
    meta, t = read_golden(gdir, f'sg2_{name}_d')
    c_dim = int(meta['c_dim'])
    clamp = float(meta['conv_clamp']) or None
    D = nets.Discriminator(
        c_dim=c_dim, img_resolution=int(meta['img_resolution']),
        img_channels=int(meta['img_channels']),
        architecture='resnet' if meta.get('d_resnet', '1') == '1' else 'orig',
        channel_base=int(meta['channel_base']),
        channel_max=int(meta['channel_max']), num_fp16_res=0,
        conv_clamp=clamp,
        mapping_kwargs=dict(num_layers=int(meta['d_map_layers'])),
        epilogue_kwargs=dict(mbstd_group_size=int(meta['mbstd_group']),
                             mbstd_num_channels=int(meta['mbstd_channels'])))
    load_net(D, t, 'D')
    img = torch.from_numpy(t['in.img']).clone().requires_grad_(True)
    c = torch.from_numpy(t['in.c']) if c_dim > 0 else None
    D.zero_grad()
    logits = D(img, c)
    g = torch.autograd.grad(outputs=[logits.sum()], inputs=[img],
                            create_graph=True, only_inputs=True)[0]
    pen = g.square().sum([1, 2, 3])
    pen.mean().backward()
    out = {'out.r1_grads': g.detach().numpy(),
           'out.r1_penalty': pen.detach().numpy()}
    for k, p in D.named_parameters():
        out[f'D.r1.{k}'] = (p.grad.numpy().copy() if p.grad is not None
                            else np.zeros(tuple(p.shape), np.float32))
    write_golden(out, meta, gdir, f'sg2_{name}_r1')


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    from training import networks as nets  # the official code, run only
    gdir = (sys.argv[2] if len(sys.argv) > 2
            else os.path.dirname(os.path.abspath(__file__)))
    torch.use_deterministic_algorithms(True)
    for name in ('uncond', 'cond', 'clamp', 'orig'):
        case(nets, name, gdir)


if __name__ == '__main__':
    main()
