#!/usr/bin/env python3
"""make_cond_golden.py - golden numbers for tests/kernels/test_cond_ops.c and
test_cuda_cond_ops.c: the class-conditioning ops (embedding, per-sample
per-channel affine in a conditional batch norm, row-wise dot product in a
projection discriminator), computed by PyTorch on the CPU in float32.

Writes cond.safetensors (safetensors.numpy; labels I32, the rest F32):
  emb.table [K, D], emb.labels [N] (I32), emb.dy [N, D], emb.g0 [K, D]
      K = 40, D = 24, N = 200: every class drawn ~5 times, some classes
      not at all, labels[0..4] = 7 (a run of one class)
  emb.y        nn.Embedding's output table[labels]
  emb.dtable   its weight's gradient for the upstream gradient emb.dy
               (autograd: (y * dy).sum())
  emb.dtable_acc   the same with weight.grad = emb.g0 beforehand (autograd
               accumulates: g0 + dtable)
  ccbn.x [2, 3, 17, 17] (S = 289: more than the 256 lanes of a sum),
  ccbn.gain [2, 3], ccbn.bias [2, 3], ccbn.dy
      BigGAN's conditional batch norm with the per-sample gain and bias as
      leaves (the model forms gain = 1 + linear(e) itself):
      xhat = BatchNorm2d(3, affine=False) in training mode (eps 1e-5),
      y = xhat * gain[:, :, None, None] + bias[:, :, None, None]
  ccbn.xhat, ccbn.y, ccbn.dx, ccbn.dxhat, ccbn.dgain, ccbn.dbias
      the forward and the gradients of (y * dy).sum() (dxhat: the gradient
      reaching the batch norm's output)
  aff2.x [5, 7], aff2.gain, aff2.bias, aff2.dy, aff2.{y,dx,dgain,dbias}
      the affine alone on [N, C] (S = 1, BatchNorm1d's layout)
  rowdot.a, rowdot.b [4, 300], rowdot.y0 [4, 1], rowdot.dy [4, 1]
  rowdot.y     (a * b).sum(1, keepdim=True)
  rowdot.y_acc y0 + (a * b).sum(1, keepdim=True)
  rowdot.da, rowdot.db   gradients of (y * dy).sum()
  proj.h [8, 16], proj.w [1, 16], proj.bias [1], proj.table [5, 16],
  proj.labels [8] (I32), proj.dout [8, 1]
      the projection discriminator's head (Miyato & Koyama 2018):
      out = linear(h, w, bias) + (embed(labels) * h).sum(1, keepdim=True)
  proj.out, proj.dh, proj.dw, proj.dbias, proj.dtable
      the output and the gradients of (out * dout).sum()
The script checks that emb.dtable equals, bit for bit, an f32 sum over the
samples of each class in increasing n from 0 (the order the ops promise)
and that rowdot's and the affine's gradients of one product each are the
f32 products (dx = dy gain, da = dy b).

Run (needs torch, numpy, safetensors; CI does not: the output is committed):
  python3 tests/kernels/golden/make_cond_golden.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "cond.safetensors")


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))


def leaf(a):
    return torch.from_numpy(a.copy()).requires_grad_(True)


def embedding(out, rng):
    K, D, N = 40, 24, 200
    table = rng.standard_normal((K, D)).astype(np.float32)
    labels = rng.integers(0, K - 3, N).astype(np.int32)  # 37..39 unused
    labels[:5] = 7
    dy = rng.standard_normal((N, D)).astype(np.float32)
    g0 = rng.standard_normal((K, D)).astype(np.float32)
    out.update({"emb.table": table, "emb.labels": labels, "emb.dy": dy,
                "emb.g0": g0})
    for acc in (False, True):
        m = nn.Embedding(K, D)
        with torch.no_grad():
            m.weight.copy_(torch.from_numpy(table))
        if acc:
            m.weight.grad = torch.from_numpy(g0.copy())
        y = m(torch.from_numpy(labels).long())
        (y * torch.from_numpy(dy)).sum().backward()
        if acc:
            out["emb.dtable_acc"] = f32(m.weight.grad)
        else:
            out["emb.y"] = f32(y)
            out["emb.dtable"] = f32(m.weight.grad)
    # the promised order: per class, f32 from 0 in increasing n
    want = np.zeros((K, D), np.float32)
    for n in range(N):
        want[labels[n]] = want[labels[n]] + dy[n]
    if not np.array_equal(want.view(np.uint32),
                          out["emb.dtable"].view(np.uint32)):
        sys.exit("emb: PyTorch's dtable is not the in-order f32 sum")
    if not np.array_equal((g0 + want).view(np.uint32),
                          out["emb.dtable_acc"].view(np.uint32)):
        sys.exit("emb: PyTorch's accumulated dtable is not g0 + dtable")


def affine_case(out, rng, p, shape, with_bn):
    N, C = shape[0], shape[1]
    x = (rng.standard_normal(shape) * 1.5 + 0.3).astype(np.float32)
    gain = (1.0 + 0.3 * rng.standard_normal((N, C))).astype(np.float32)
    bias = (0.2 * rng.standard_normal((N, C))).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    xt, gt, bt = leaf(x), leaf(gain), leaf(bias)
    view = (N, C) + (1,) * (len(shape) - 2)
    if with_bn:
        bn = nn.BatchNorm2d(C, affine=False, eps=1e-5)
        bn.train()
        xhat = bn(xt)
        xhat.retain_grad()
    else:
        xhat = xt
    y = xhat * gt.view(view) + bt.view(view)
    (y * torch.from_numpy(dy)).sum().backward()
    out.update({p + ".x": x, p + ".gain": gain, p + ".bias": bias,
                p + ".dy": dy, p + ".y": f32(y), p + ".dx": f32(xt.grad),
                p + ".dgain": f32(gt.grad), p + ".dbias": f32(bt.grad)})
    if with_bn:
        out[p + ".xhat"] = f32(xhat)
        out[p + ".dxhat"] = f32(xhat.grad)
        dxhat = out[p + ".dxhat"]
    else:
        dxhat = out[p + ".dx"]
    prod = (dy * gain.reshape(view)).astype(np.float32)
    if not np.array_equal(prod.view(np.uint32), dxhat.view(np.uint32)):
        sys.exit(f"{p}: PyTorch's dxhat is not dy * gain in f32")


def rowdot(out, rng):
    N, D = 4, 300
    a = rng.standard_normal((N, D)).astype(np.float32)
    b = rng.standard_normal((N, D)).astype(np.float32)
    y0 = rng.standard_normal((N, 1)).astype(np.float32)
    dy = rng.standard_normal((N, 1)).astype(np.float32)
    at, bt = leaf(a), leaf(b)
    y = (at * bt).sum(1, keepdim=True)
    (y * torch.from_numpy(dy)).sum().backward()
    out.update({"rowdot.a": a, "rowdot.b": b, "rowdot.y0": y0,
                "rowdot.dy": dy, "rowdot.y": f32(y),
                "rowdot.y_acc": f32(torch.from_numpy(y0) + y),
                "rowdot.da": f32(at.grad), "rowdot.db": f32(bt.grad)})
    if not np.array_equal((dy * b).astype(np.float32).view(np.uint32),
                          out["rowdot.da"].view(np.uint32)):
        sys.exit("rowdot: PyTorch's da is not dy * b in f32")


def projection(out, rng):
    N, Fe, K = 8, 16, 5
    h = rng.standard_normal((N, Fe)).astype(np.float32)
    w = (0.3 * rng.standard_normal((1, Fe))).astype(np.float32)
    bias = np.array([0.1], np.float32)
    table = (0.5 * rng.standard_normal((K, Fe))).astype(np.float32)
    labels = np.array([3, 0, 3, 1, 4, 3, 0, 2], np.int32)
    dout = rng.standard_normal((N, 1)).astype(np.float32)
    ht, wt, bt = leaf(h), leaf(w), leaf(bias)
    emb = nn.Embedding(K, Fe)
    with torch.no_grad():
        emb.weight.copy_(torch.from_numpy(table))
    e = emb(torch.from_numpy(labels).long())
    o = F.linear(ht, wt, bt) + (e * ht).sum(1, keepdim=True)
    (o * torch.from_numpy(dout)).sum().backward()
    out.update({"proj.h": h, "proj.w": w, "proj.bias": bias,
                "proj.table": table, "proj.labels": labels,
                "proj.dout": dout, "proj.out": f32(o), "proj.dh": f32(ht.grad),
                "proj.dw": f32(wt.grad), "proj.dbias": f32(bt.grad),
                "proj.dtable": f32(emb.weight.grad)})


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(20240907)
    out = {}
    embedding(out, rng)
    affine_case(out, rng, "ccbn", (2, 3, 17, 17), True)
    affine_case(out, rng, "aff2", (5, 7), False)
    rowdot(out, rng)
    projection(out, rng)
    meta = {"torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(out, OUT, metadata=meta)
    print(f"wrote {OUT}: {len(out)} tensors, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
