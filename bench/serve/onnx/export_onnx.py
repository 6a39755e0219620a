#!/usr/bin/env python3
"""export_onnx.py - a registered ganflow generator as an ONNX file, for
ONNX Runtime to run the same weights as gf_generator_run (bench/serve/onnx/).

Reads a model directory (MLmodel + config.json + generator.safetensors, the
layout of model/src/mlmodel_write.c; the sha256 of both files is checked
against MLmodel's ganflow flavor), builds the PyTorch twin of ganflow's G
(the module of tests/model/golden/make_golden.py, imported from there, so
that the state_dict names are ganflow's), loads generator.safetensors with
load_state_dict(strict=True), puts it in eval mode (BatchNorm from its
running statistics, eps 1e-5 = GF_BN_EPS in model/include/gf/net.h) and
exports it (opset 17, input "z" [batch, z_dim] with a dynamic batch axis,
output "image" [batch, C, H, W]). Then runs ONNX Runtime (CPU) and PyTorch
on random latents at batch 1 and 16 and prints the largest absolute
difference; exits 1 when it is over --tol.

ganflow files hold no BatchNorm num_batches_tracked (an eval-mode forward
never reads it); it is set to 0 before the strict load, which still refuses
any missing, extra or misshapen weight.

  python export_onnx.py MODEL_DIR OUT.onnx [--tol 1e-4]
Exit status: 0 success, 1 error or mismatch, 2 usage error.
"""
import argparse
import hashlib
import json
import os
import re
import sys
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "model", "golden"))
from make_golden import Net  # noqa: E402  (the twin of model/src/net_*.c)

GF_BN_EPS = 1e-5  # model/include/gf/net.h; nn.BatchNorm*d's default too


def die(msg):
    print("export_onnx.py: " + msg, file=sys.stderr)
    sys.exit(1)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_model_dir(d):
    """(config dict of make_golden.Net, state_dict of tensors) of model dir d."""
    mlmodel = os.path.join(d, "MLmodel")
    try:
        text = open(mlmodel, encoding="utf-8").read()
    except OSError as e:
        die("%s: %s" % (mlmodel, e.strerror))
    if not re.search(r"^  ganflow:\s*$", text, re.M):
        die("%s: no ganflow flavor" % mlmodel)
    for name in ("config.json", "generator.safetensors"):
        m = re.search(r"^\s+%s:\s*\n\s+sha256:\s*\"?([0-9a-f]{64})\"?" % re.escape(name), text, re.M)
        if not m:
            die("%s: no sha256 of %s" % (mlmodel, name))
        got = sha256(os.path.join(d, name))
        if got != m.group(1):
            die("%s: sha256 %s, MLmodel says %s" % (os.path.join(d, name), got, m.group(1)))
    c = json.load(open(os.path.join(d, "config.json"), encoding="utf-8"))
    if c.get("format_version") != 1:
        die("config.json: format_version %r, expected 1" % c.get("format_version"))
    if c["architecture"] not in ("dcgan", "mlp"):
        die("config.json: architecture %r" % c["architecture"])
    if c["num_classes"] != 0:
        die("config.json: conditional generators (num_classes %d) have no twin" % c["num_classes"])
    if c["image_height"] != c["image_width"]:
        die("config.json: non-square image")
    cfg = dict(arch=c["architecture"], size=c["image_height"], channels=c["image_channels"],
               z_dim=c["z_dim"], ngf=c["ngf"], ndf=c["ndf"])
    from safetensors.torch import load_file

    return cfg, load_file(os.path.join(d, "generator.safetensors"))


def build(cfg, weights):
    g = Net("g", cfg)
    sd = dict(weights)
    for name, buf in g.state_dict().items():
        if name.endswith("num_batches_tracked") and name not in sd:
            sd[name] = torch.zeros_like(buf)
    g.load_state_dict(sd, strict=True)
    for mod in g.modules():
        if isinstance(mod, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)) and mod.eps != GF_BN_EPS:
            die("BatchNorm eps %g, ganflow uses %g" % (mod.eps, GF_BN_EPS))
    return g.eval()


def main():
    ap = argparse.ArgumentParser(description="export a ganflow model directory's generator to ONNX")
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--tol", type=float, default=1e-4, help="largest |ORT - torch| allowed (1e-4)")
    a = ap.parse_args()
    cfg, weights = read_model_dir(a.model_dir)
    torch.set_num_threads(1)
    g = build(cfg, weights)
    z = torch.zeros(2, cfg["z_dim"])
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        # The TorchScript exporter: it needs no onnxscript, and its
        # dynamic_axes give the batch axis a symbolic size.
        torch.onnx.export(g, (z,), a.out, dynamo=False, opset_version=17, input_names=["z"],
                          output_names=["image"], dynamic_axes={"z": {0: "batch"}, "image": {0: "batch"}},
                          do_constant_folding=True)
    import onnx
    import onnxruntime as ort

    model = onnx.load(a.out)
    onnx.checker.check_model(model)
    ops = sorted({n.op_type for n in model.graph.node})
    print("%s: %s %dx%dx%d z_dim %d ngf %d, opset %d, ops %s, %d bytes" % (
        a.out, cfg["arch"], cfg["size"], cfg["size"], cfg["channels"], cfg["z_dim"], cfg["ngf"],
        model.opset_import[0].version, ",".join(ops), os.path.getsize(a.out)))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(a.out, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    worst = 0.0
    for n in (1, 16):
        zn = rng.standard_normal((n, cfg["z_dim"])).astype(np.float32)
        with torch.no_grad():
            ref = g(torch.from_numpy(zn)).numpy()
        got = sess.run(["image"], {"z": zn})[0]
        if got.shape != ref.shape:
            die("batch %d: ORT shape %s, torch %s" % (n, got.shape, ref.shape))
        d = float(np.abs(got.astype(np.float64) - ref).max())
        worst = max(worst, d)
        print("batch %d: max |ORT - torch| = %.3e" % (n, d))
    if not worst <= a.tol:
        die("ORT and torch differ by %.3e > --tol %g" % (worst, a.tol))


if __name__ == "__main__":
    main()
