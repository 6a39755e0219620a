#!/usr/bin/env python3
"""make_sg2_train_golden.py - golden numbers for tests/model/test_sg2_gan.c:
ONE training iteration of the official StyleGAN2-ADA code (the Gmain and
Dmain phases of training/training_loop.py over training/loss.py's
StyleGAN2Loss.accumulate_gradients, Adam, the G EMA) on a tiny config, with
every random draw recorded so that ganflow's step (gf/sg2_gan.h) can be run
with the same draws.

Run by hand (not by ctest; the output is committed):
  git -C <mirror of NVlabs/stylegan2-ada-pytorch> archive d72cc7d \
      | tar -x -C /tmp/sg2ada
  touch /tmp/sg2ada/requests.py   # dnnlib imports it for downloads only
  python3 make_sg2_train_golden.py /tmp/sg2ada [OUTDIR]
with torch 2.15 (CPU) and numpy. The official code is imported from that
folder and run; nothing of it is copied here. This script is the driver
the official training loop would be for one iteration (batch_idx 0,
one GPU): for each of Gmain and Dmain, zero_grad(set_to_none),
requires_grad_(True), accumulate_gradients(gain 1) per round (sync on the
last), requires_grad_(False), nan_to_num of the gradients, Adam step; then the EMA. Greg and Dreg
are off (pl_weight 0, r1_gamma 0: the official phases then have no
gradients and Adam skips every parameter). The optimizers get the lazy
regularization correction c = k / (k + 1) (k = 4 for G, 16 for D): lr c,
betas ** c.

The tiny config: make_sg2_nets_golden.py's (img 32x32x3, z = w = 32,
mapping 2 layers in G and D, channel_base 256, channel_max 16, no conv
clamp, D 'resnet' with mbstd group 2), batch N = 4. Two cases:
  sg2_train       unconditional, one round (seed 3001: both phases mix,
                  with the cut-offs as the official code drew them)
  sg2_train_cond  c_dim 3 (random one-hot labels for the reals and each
                  phase's fakes), two rounds of 2 (the official rounds:
                  each adds its mean's gradient), seed 3100; the cut-off
                  forced to 3 (Gmain) and 6 (Dmain) and the mixing gate to
                  0 in every round (Tensor.random_ and rand([]) overridden),
                  since ganflow draws one cut-off per phase and batch where
                  the official code draws one per round.
  sg2_train_reg   the FULL iteration: as sg2_train_cond (seed 3200) with
                  all four phases of batch_idx 0 (Gmain, Greg gain 4,
                  Dmain, Dreg gain 16; pl_weight 2, r1_gamma 0.5, the
                  loss's pl_mean set to 0.25 before), Greg's cut-off forced
                  to 5. Greg runs on the first sample of each round
                  (pl_batch_shrink 2).
The nets are initialised by torch.manual_seed(seed) then every bias,
noise_strength and w_avg gets N(0, 0.3) added (so no term hides behind a
zero), and G_ema is G plus N(0, 0.05) on every parameter (so the EMA's
lerp shows). Synthesis noise is 'const' (G.synthesis.forward is given
noise_mode='const'; the C step runs with GF_SG2_NOISE_CONST); the
augmentation is bgc at a fixed p = 0.4; style mixing probability 0.9. The
EMA runs as at cur_nimg = 1000 (ema_kimg 10, rampup 0.05: beta =
0.5 ** (4 / 50)).

Recorded draws (torch.rand, torch.randn, torch.randn_like and
Tensor.random_ wrapped during accumulate_gradients): per run_G the
cut-off's random_(1, num_ws) value, the gate's rand([]) and the mixing
latents randn_like(z); per augment_pipe call its 26 draws laid out as
gf/ada.h's 28 params columns (make_ada_golden.py's CALLS table).

Writes <case>.safetensors:
  init.G.<name>, init.D.<name>, init.G_ema.<name>   state_dict before
                  (without the resample_filter buffers)
  in.real [N, 3, 32, 32]; in.real_c, in.c.gmain, in.c.dmain [N, c_dim]
                  (conditional case)
  in.z.gmain, in.z.dmain [N, 32]   gen_z of the two phases
  in.z2.gmain, in.z2.dmain [N, 32] the mixing latents
  in.cutoff [2] F32                cut-off of Gmain, Dmain (num_ws: none)
  in.ada.gmain_fake, in.ada.dmain_fake, in.ada.dmain_real [N, 28]
  grad.G.<name>, grad.D.<name>     the gradients Adam stepped with
  after.G.<name>, after.D.<name>, after.G_ema.<name>  the state after
  adam_m.G.<name>, adam_v.G.<name>, adam_m.D.<name>, adam_v.D.<name>
  out.loss_g [N], out.loss_d [N] (Dgen + Dreal per sample),
  out.scores_fake [N] (Dmain's), out.scores_real [N]
Metadata: the sizes, c_dim, rounds, p, the lr, ema beta, cur_nimg.
sg2_train_reg also: in.z.greg, in.z2.greg, in.c.greg, in.ada.dreg_real,
in.cutoff_greg [1], in.pl_mean [1], in.pl_noise [N, 3, 32, 32] (the
official randn_like / sqrt(H W); by global sample: rows of each round
past Greg's are 0; in.z2.greg likewise); grad_reg.G.<name>,
grad_reg.D.<name> (Greg's and Dreg's gradients, what Adam last stepped
with; grad.* are the main phases', which the C test leaves to the moments
and parameters); adam_step.<net>.<name> (Adam's per-parameter count);
out.pl_penalty, out.r1_penalty [rounds] (each round's mean),
out.pl_mean [1], out.dreg_scores_real [N]; metadata reg = 1, pl_weight,
r1_gamma, pl_mean0, cutoff_greg, none_greg / none_dreg (parameters
without a gradient in those phases: none).
"""
import copy
import math
import os
import sys

import numpy as np
import torch
from safetensors.numpy import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_ada_golden import CALLS, NCOLS  # noqa: E402

N, RES, IMG_C, ZW, CB, CM, MAP = 4, 32, 3, 32, 256, 16, 2
MBSTD_GROUP = 2
P = 0.4
LR = 0.0025
MIX = 0.9
CUR_NIMG, EMA_KIMG, EMA_RAMPUP = 1000, 10, 0.05
PL_WEIGHT, R1_GAMMA, PL_MEAN0 = 2, 0.5, 0.25  # the sg2_train_reg case


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def state(out, prefix, net):
    for k, t in net.state_dict().items():
        if not k.endswith('resample_filter'):
            out[f'{prefix}.{k}'] = f32(t)


def case(nets, augment, loss_mod, name, seed, c_dim, rounds, force_cut,
         outdir, reg=False):
    torch.manual_seed(seed)
    G = nets.Generator(z_dim=ZW, c_dim=c_dim, w_dim=ZW, img_resolution=RES,
                       img_channels=IMG_C,
                       mapping_kwargs=dict(num_layers=MAP),
                       synthesis_kwargs=dict(channel_base=CB, channel_max=CM,
                                             num_fp16_res=0, conv_clamp=None))
    D = nets.Discriminator(c_dim=c_dim, img_resolution=RES,
                           img_channels=IMG_C, architecture='resnet',
                           channel_base=CB, channel_max=CM, num_fp16_res=0,
                           conv_clamp=None,
                           mapping_kwargs=dict(num_layers=MAP),
                           epilogue_kwargs=dict(mbstd_group_size=MBSTD_GROUP,
                                                mbstd_num_channels=1))
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for net in (G, D):
            for k, t in net.state_dict().items():
                if k.split('.')[-1] in ('bias', 'noise_strength', 'w_avg'):
                    t.add_(torch.randn(t.shape, generator=gen) * 0.3)
    G.train().requires_grad_(False)
    D.train().requires_grad_(False)
    G_ema = copy.deepcopy(G).eval()
    with torch.no_grad():
        for p in G_ema.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    syn_fwd = G.synthesis.forward
    G.synthesis.forward = lambda ws, **kw: syn_fwd(ws, noise_mode='const',
                                                   **kw)
    pipe = augment.AugmentPipe(xflip=1, rotate90=1, xint=1, scale=1,
                               rotate=1, aniso=1, xfrac=1, brightness=1,
                               contrast=1, lumaflip=1, hue=1, saturation=1)
    pipe.train().requires_grad_(False)
    pipe.p.copy_(torch.as_tensor(P))
    loss = loss_mod.StyleGAN2Loss(device=torch.device('cpu'),
                                  G_mapping=G.mapping,
                                  G_synthesis=G.synthesis, D=D,
                                  augment_pipe=pipe, style_mixing_prob=MIX,
                                  r1_gamma=R1_GAMMA if reg else 0,
                                  pl_weight=PL_WEIGHT if reg else 0)
    if reg:
        loss.pl_mean.fill_(PL_MEAN0)
    out = {}
    state(out, 'init.G', G)
    state(out, 'init.D', D)
    state(out, 'init.G_ema', G_ema)
    real = torch.rand([N, IMG_C, RES, RES], generator=gen) * 2 - 1
    all_z = torch.randn([4 * N, ZW], generator=gen).split(N)
    out['in.real'] = f32(real)

    def labels():
        k = torch.randint(0, max(c_dim, 1), [N], generator=gen)
        return torch.nn.functional.one_hot(k, c_dim).float() if c_dim \
            else torch.zeros([N, 0])
    real_c, all_c = labels(), [labels() for _ in range(4)]
    if c_dim:
        out['in.real_c'] = f32(real_c)
        out['in.c.gmain'] = f32(all_c[0])
        out['in.c.dmain'] = f32(all_c[2])
        if reg:
            out['in.c.greg'] = f32(all_c[1])

    # the draws, recorded in call order; with force_cut, the cut-off's
    # random_ gives force_cut[phase] and the gate's rand([]) 0 (mixing in
    # every round, with one cut-off per phase as ganflow draws it)
    rec, stats = [], {}
    real_rand, real_randn = torch.rand, torch.randn
    real_randn_like, real_random_ = torch.randn_like, torch.Tensor.random_
    forced = {}

    def wrap(kind, fn):
        def draw(*a, **k):
            t = fn(*a, **k)
            if force_cut and kind == 'random_':
                t.fill_(forced['cut'])
            if force_cut and kind == 'rand' and t.dim() == 0:
                t = torch.zeros([])
            rec.append((kind, t.detach().clone()))
            return t
        return draw

    def report(name, value):
        stats.setdefault(name, []).append(value.detach().clone())
        return value
    loss_mod.training_stats.report = report

    opts = {}
    for tag, net, k in (('G', G, 4), ('D', D, 16)):
        c = k / (k + 1)
        opts[tag] = torch.optim.Adam(net.parameters(), lr=LR * c,
                                     betas=[0 ** c, 0.99 ** c], eps=1e-8)
    grads, none = {}, {}
    bg = N // rounds
    phases = [('Gmain', 'G', G, all_z[0], all_c[0], 1),
              ('Dmain', 'D', D, all_z[2], all_c[2], 1)]
    if reg:
        phases = [phases[0], ('Greg', 'G', G, all_z[1], all_c[1], 4),
                  phases[1], ('Dreg', 'D', D, all_z[3], all_c[3], 16)]
    for ph, (phase, tag, net, z, gc, gain) in enumerate(phases):
        opt = opts[tag]
        if force_cut:
            forced['cut'] = force_cut[ph]
        opt.zero_grad(set_to_none=True)
        net.requires_grad_(True)
        torch.rand, torch.randn = wrap('rand', real_rand), wrap('randn',
                                                                 real_randn)
        torch.randn_like = wrap('randn_like', real_randn_like)
        torch.Tensor.random_ = wrap('random_', real_random_)
        try:
            for r, (ri, rc, zi, ci) in enumerate(zip(
                    real.split(bg), real_c.split(bg), z.split(bg),
                    gc.split(bg))):
                loss.accumulate_gradients(phase=phase, real_img=ri,
                                          real_c=rc, gen_z=zi, gen_c=ci,
                                          sync=(r == rounds - 1), gain=gain)
        finally:
            torch.rand, torch.randn = real_rand, real_randn
            torch.randn_like, torch.Tensor.random_ = (real_randn_like,
                                                      real_random_)
        net.requires_grad_(False)
        gname = 'grad' if phase.endswith('main') else 'grad_reg'
        for k, p in net.named_parameters():
            if p.grad is None:  # Adam skips it in this phase
                none.setdefault(phase, []).append(k)
                continue
            grads[f'{gname}.{tag}.{k}'] = f32(p.grad)
            torch.nan_to_num(p.grad, nan=0, posinf=1e5, neginf=-1e5,
                             out=p.grad)
        opt.step()
        for k, p in net.named_parameters():
            st = opt.state[p]
            out[f'adam_m.{tag}.{k}'] = f32(st['exp_avg'])
            out[f'adam_v.{tag}.{k}'] = f32(st['exp_avg_sq'])
            if reg:  # every parameter steps in every phase (reg_test)
                out[f'adam_step.{tag}.{k}'] = np.asarray(
                    [float(st['step'])], dtype=np.float32)
    out.update(grads)

    # parse the draws: per round, run_G (3 records), augment calls (26 each)
    num_ws = G.num_ws
    pos = 0

    def take(kind):
        nonlocal pos
        k, t = rec[pos]
        assert k == kind, (pos, k, kind)
        pos += 1
        return t

    def run_g(z2s):
        cut = int(take('random_'))
        gate = float(take('rand'))
        z2s.append(take('randn_like'))
        return cut if gate < MIX else num_ws

    def aug(parts):
        cols = []
        for want, k in CALLS:
            t = take(want)
            assert t.numel() == bg * k, (want, t.shape)
            cols.append(t.reshape(bg, k))
        parts.append(torch.cat(cols, dim=1))
    z2g, z2d, ag, adf, adr = [], [], [], [], []
    z2r, pln, adreg = [], [], []
    cut_g, cut_d, cut_r = set(), set(), set()
    pos = 0
    for _ in range(rounds):
        cut_g.add(run_g(z2g))
        aug(ag)
    if reg:
        for r in range(rounds):
            z2s = []
            cut_r.add(run_g(z2s))
            # by global sample as the latents: the round's first bg / 2
            z2r.append(torch.cat([z2s[0], torch.zeros_like(z2s[0])]))
            t = take('randn_like')
            assert t.shape[0] == bg // 2, t.shape
            # by global sample: the round's first bg / 2 rows; the rest 0
            # (the draw is randn; the official then divides by sqrt(H W))
            full = torch.zeros([bg] + list(t.shape[1:]))
            full[:bg // 2] = t / np.sqrt(t.shape[2] * t.shape[3])
            pln.append(full)
    for _ in range(rounds):
        cut_d.add(run_g(z2d))
        aug(adf)
        aug(adr)
    if reg:
        for _ in range(rounds):
            aug(adreg)
    assert pos == len(rec), (pos, len(rec))
    assert len(cut_g) == 1 and len(cut_d) == 1, (cut_g, cut_d)
    cut_g, cut_d = cut_g.pop(), cut_d.pop()
    assert cut_g < num_ws and cut_d < num_ws, (cut_g, cut_d)
    out['in.z2.gmain'] = f32(torch.cat(z2g))
    out['in.z2.dmain'] = f32(torch.cat(z2d))
    out['in.ada.gmain_fake'] = f32(torch.cat(ag))
    out['in.ada.dmain_fake'] = f32(torch.cat(adf))
    out['in.ada.dmain_real'] = f32(torch.cat(adr))
    out['in.cutoff'] = np.asarray([cut_g, cut_d], dtype=np.float32)
    if reg:
        assert len(cut_r) == 1, cut_r
        cut_r = cut_r.pop()
        assert cut_r < num_ws, cut_r
        out['in.cutoff_greg'] = np.asarray([cut_r], dtype=np.float32)
        out['in.z2.greg'] = f32(torch.cat(z2r))
        out['in.z.greg'] = f32(all_z[1])
        out['in.pl_noise'] = f32(torch.cat(pln))
        out['in.ada.dreg_real'] = f32(torch.cat(adreg))
        out['in.pl_mean'] = np.asarray([PL_MEAN0], dtype=np.float32)
    out['in.z.gmain'] = f32(all_z[0])
    out['in.z.dmain'] = f32(all_z[2])

    # the EMA, as the training loop runs it at cur_nimg
    ema_nimg = min(EMA_KIMG * 1000, CUR_NIMG * EMA_RAMPUP)
    beta = 0.5 ** (N / max(ema_nimg, 1e-8))
    with torch.no_grad():
        for p_ema, p in zip(G_ema.parameters(), G.parameters()):
            p_ema.copy_(p.lerp(p_ema, beta))
        for b_ema, b in zip(G_ema.buffers(), G.buffers()):
            b_ema.copy_(b)
    state(out, 'after.G', G)
    state(out, 'after.D', D)
    state(out, 'after.G_ema', G_ema)

    def per_sample(key):
        return f32(torch.cat([v.reshape(-1) for v in stats[key]]))
    # 'Loss/scores/fake' is reported by Gmain's rounds, then Dmain's
    out['out.loss_g'] = per_sample('Loss/G/loss')
    out['out.loss_d'] = per_sample('Loss/D/loss')
    out['out.scores_fake'] = f32(torch.cat(
        [v.reshape(-1) for v in stats['Loss/scores/fake'][rounds:]]))
    # 'Loss/scores/real' is reported by Dmain's rounds (then Dreg's)
    out['out.scores_real'] = f32(torch.cat(
        [v.reshape(-1) for v in stats['Loss/scores/real'][:rounds]]))
    if reg:
        out['out.dreg_scores_real'] = f32(torch.cat(
            [v.reshape(-1) for v in stats['Loss/scores/real'][rounds:]]))
        # per round: the round's mean (ganflow reports their mean)
        out['out.pl_penalty'] = np.asarray(
            [float(v.mean()) for v in stats['Loss/pl_penalty']],
            dtype=np.float32)
        out['out.r1_penalty'] = np.asarray(
            [float(v.mean()) for v in stats['Loss/r1_penalty']],
            dtype=np.float32)
        out['out.pl_mean'] = f32(loss.pl_mean.reshape(1))
    meta = dict(batch=str(N), rounds=str(rounds), c_dim=str(c_dim),
                img_resolution=str(RES),
                img_channels=str(IMG_C), z_dim=str(ZW), w_dim=str(ZW),
                map_layers=str(MAP), channel_base=str(CB),
                channel_max=str(CM), mbstd_group=str(MBSTD_GROUP),
                ada_p=str(P), lr=str(LR), style_mixing=str(MIX),
                cur_nimg=str(CUR_NIMG), ema_kimg=str(EMA_KIMG),
                ema_rampup=str(EMA_RAMPUP), ema_beta=repr(beta),
                cutoffs=f'{cut_g},{cut_d}', torch=torch.__version__,
                official='stylegan2-ada-pytorch d72cc7d', seed=str(seed))
    if reg:
        meta.update(reg='1', pl_weight=str(PL_WEIGHT), r1_gamma=str(R1_GAMMA),
                    pl_mean0=str(PL_MEAN0), cutoff_greg=str(cut_r),
                    none_greg=','.join(none.get('Greg', [])),
                    none_dreg=','.join(none.get('Dreg', [])))
    path = os.path.join(outdir, f'{name}.safetensors')
    save_file(out, path, metadata=meta)
    print(path, os.path.getsize(path), 'bytes,', len(out), 'tensors;',
          f'cut-offs {cut_g} {cut_d} of {num_ws}, ema beta {beta:.6f},',
          f'loss_g {out["out.loss_g"].mean():.6f}',
          f'loss_d {out["out.loss_d"].mean():.6f}')


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    outdir = sys.argv[2] if len(sys.argv) > 2 else HERE
    from training import networks as nets  # the official code, run only
    from training import augment
    from training import loss as loss_mod
    case(nets, augment, loss_mod, 'sg2_train', 3001, 0, 1, None, outdir)
    case(nets, augment, loss_mod, 'sg2_train_cond', 3100, 3, 2, (3, 6),
         outdir)
    case(nets, augment, loss_mod, 'sg2_train_reg', 3200, 3, 2, (3, 5, 6, 0),
         outdir, reg=True)


if __name__ == '__main__':
    main()
