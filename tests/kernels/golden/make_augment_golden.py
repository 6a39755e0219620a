#!/usr/bin/env python3
"""make_augment_golden.py - golden numbers for tests/kernels/test_augment.c
and test_cuda_augment.c: DiffAugment's 'color', 'translation' and 'cutout'
(Zhao et al. 2020), forward and gradient, computed by PyTorch on the CPU in
float32.

The augment functions below are the official DiffAugment_pytorch.py
(github.com/mit-han-lab/data-efficient-gans, DiffAugment-stylegan2-pytorch)
line for line, except that each torch.rand / torch.randint draw is replaced
by a column of the given params (the rows gf_augment_fwd takes:
b, s, c, tx, ty, ox, oy), and meshgrid names its indexing ('ij', the
default the official code relies on).

Writes augment.safetensors (safetensors.numpy; every tensor F32) holding,
for each case <k> (c1_28: 4 x 1 x 28 x 28; c3_32: 2 x 3 x 32 x 32;
c2_13x17: 4 x 2 x 13 x 17, whose cutout sizes 7 and 9 are odd and whose
H != W catches a swapped axis):
  <k>.x                 the images, uniform in [-1, 1], a few exact zeros
                        and -0
  <k>.g                 the upstream gradient, N(0, 1)
  <k>.params            [N, 7]: sample 0 has tx = -shift(H), ty =
                        +shift(W), the cutout at row offset 0 and column
                        offset max (the top right border), b = -0.5, s = 0,
                        c = 0.5; sample 1 the opposite shifts and corner,
                        colour drawn as the official code draws it; samples
                        2, 3 (when N = 4) no shift and a centred cutout,
                        and shifts of +-1 with offsets 1 and max - 1
  <k>.p<policy>.y       DiffAugment(x) for policy bits 1 (color),
                        2 (translation), 4 (cutout), 6
                        (translation,cutout; not for c3_32) and 7 (all)
  <k>.p<policy>.dx      the gradient of sum(y * g) wrt x (autograd)

Run (needs torch, numpy, safetensors; CI does not: the output is committed):
  python3 tests/kernels/golden/make_augment_golden.py
"""
import os

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "augment.safetensors")


# ---- the official DiffAugment_pytorch.py, draws replaced by params ----------

def DiffAugment(x, prm, policy='', channels_first=True):
    if policy:
        if not channels_first:
            x = x.permute(0, 3, 1, 2)
        for p in policy.split(','):
            for f in AUGMENT_FNS[p]:
                x = f(x, prm)
        if not channels_first:
            x = x.permute(0, 2, 3, 1)
        x = x.contiguous()
    return x


def rand_brightness(x, prm):
    # official: x + (torch.rand(N, 1, 1, 1) - 0.5)
    x = x + prm[:, 0].reshape(-1, 1, 1, 1)
    return x


def rand_saturation(x, prm):
    x_mean = x.mean(dim=1, keepdim=True)
    # official: * (torch.rand(N, 1, 1, 1) * 2)
    x = (x - x_mean) * prm[:, 1].reshape(-1, 1, 1, 1) + x_mean
    return x


def rand_contrast(x, prm):
    x_mean = x.mean(dim=[1, 2, 3], keepdim=True)
    # official: * (torch.rand(N, 1, 1, 1) + 0.5)
    x = (x - x_mean) * prm[:, 2].reshape(-1, 1, 1, 1) + x_mean
    return x


def rand_translation(x, prm, ratio=0.125):
    shift_x, shift_y = int(x.size(2) * ratio + 0.5), int(x.size(3) * ratio + 0.5)
    # official: torch.randint(-shift_x, shift_x + 1, size=[N, 1, 1])
    translation_x = prm[:, 3].long().reshape(-1, 1, 1)
    translation_y = prm[:, 4].long().reshape(-1, 1, 1)
    assert int(translation_x.abs().max()) <= shift_x
    assert int(translation_y.abs().max()) <= shift_y
    grid_batch, grid_x, grid_y = torch.meshgrid(
        torch.arange(x.size(0), dtype=torch.long, device=x.device),
        torch.arange(x.size(2), dtype=torch.long, device=x.device),
        torch.arange(x.size(3), dtype=torch.long, device=x.device),
        indexing='ij',
    )
    grid_x = torch.clamp(grid_x + translation_x + 1, 0, x.size(2) + 1)
    grid_y = torch.clamp(grid_y + translation_y + 1, 0, x.size(3) + 1)
    x_pad = F.pad(x, [1, 1, 1, 1, 0, 0, 0, 0])
    x = x_pad.permute(0, 2, 3, 1).contiguous()[grid_batch, grid_x, grid_y].permute(0, 3, 1, 2)
    return x


def rand_cutout(x, prm, ratio=0.5):
    cutout_size = int(x.size(2) * ratio + 0.5), int(x.size(3) * ratio + 0.5)
    # official: torch.randint(0, x.size(2) + (1 - cutout_size[0] % 2), ...)
    offset_x = prm[:, 5].long().reshape(-1, 1, 1)
    offset_y = prm[:, 6].long().reshape(-1, 1, 1)
    assert 0 <= int(offset_x.min()) and \
        int(offset_x.max()) < x.size(2) + (1 - cutout_size[0] % 2)
    assert 0 <= int(offset_y.min()) and \
        int(offset_y.max()) < x.size(3) + (1 - cutout_size[1] % 2)
    grid_batch, grid_x, grid_y = torch.meshgrid(
        torch.arange(x.size(0), dtype=torch.long, device=x.device),
        torch.arange(cutout_size[0], dtype=torch.long, device=x.device),
        torch.arange(cutout_size[1], dtype=torch.long, device=x.device),
        indexing='ij',
    )
    grid_x = torch.clamp(grid_x + offset_x - cutout_size[0] // 2, min=0, max=x.size(2) - 1)
    grid_y = torch.clamp(grid_y + offset_y - cutout_size[1] // 2, min=0, max=x.size(3) - 1)
    mask = torch.ones(x.size(0), x.size(2), x.size(3), dtype=x.dtype, device=x.device)
    mask[grid_batch, grid_x, grid_y] = 0
    x = x * mask.unsqueeze(1)
    return x


AUGMENT_FNS = {
    'color': [rand_brightness, rand_saturation, rand_contrast],
    'translation': [rand_translation],
    'cutout': [rand_cutout],
}

# ---- cases ------------------------------------------------------------------

POLICY_NAMES = ((1, 'color'), (2, 'translation'), (4, 'cutout'))


def policy_string(bits):
    return ','.join(name for bit, name in POLICY_NAMES if bits & bit)


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def params_for(n, H, W, gen):
    sx, sy = int(H * 0.125 + 0.5), int(W * 0.125 + 0.5)
    c0, c1 = int(H * 0.5 + 0.5), int(W * 0.5 + 0.5)
    mx, my = H - c0 % 2, W - c1 % 2  # the largest offsets randint gives
    # colour drawn as the official code draws it
    b = torch.rand(n, generator=gen) - 0.5
    s = torch.rand(n, generator=gen) * 2
    c = torch.rand(n, generator=gen) + 0.5
    rows = [
        [-0.5, 0.0, 0.5, -sx, sy, 0, my],
        [b[1], s[1], c[1], sx, -sy, mx, 0],
        [b[2 % n], s[2 % n], c[2 % n], 0, 0, mx // 2, my // 2],
        [b[3 % n], s[3 % n], c[3 % n], 1, -1, 1, my - 1],
    ]
    return torch.tensor([[float(v) for v in r] for r in rows[:n]],
                        dtype=torch.float32)


def case(out, name, n, C, H, W, policies, gen):
    x = torch.rand(n, C, H, W, generator=gen) * 2 - 1
    flat = x.view(-1)
    flat[:3] = torch.tensor([0.0, -0.0, 1.0])
    g = torch.randn(n, C, H, W, generator=gen)
    prm = params_for(n, H, W, gen)
    out[f"{name}.x"] = f32(x)
    out[f"{name}.g"] = f32(g)
    out[f"{name}.params"] = f32(prm)
    for bits in policies:
        xt = x.clone().requires_grad_(True)
        y = DiffAugment(xt, prm, policy_string(bits))
        (y * g).sum().backward()
        out[f"{name}.p{bits}.y"] = f32(y)
        out[f"{name}.p{bits}.dx"] = f32(xt.grad)


def main():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(20201221)
    out = {}
    case(out, "c1_28", 4, 1, 28, 28, (1, 2, 4, 6, 7), gen)
    case(out, "c3_32", 2, 3, 32, 32, (1, 2, 4, 7), gen)
    case(out, "c2_13x17", 4, 2, 13, 17, (1, 2, 4, 6, 7), gen)
    save_file(out, OUT)
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes, {len(out)} tensors)"
          f" with torch {torch.__version__}")


if __name__ == "__main__":
    main()
