#!/usr/bin/env python3
"""torch_forward.py - PyTorch's eager forward of the same generator weights
as bench_forward times: the baseline for ganflow's generator pass on a GPU
(or CPU). Builds the twin of ganflow's G from a model directory
(onnx/export_onnx.py's read_model_dir and build), and times G(z) at each
batch size under torch.inference_mode: warm-up, then passes until --seconds
have passed (at least 10), each pass ending with a device synchronization,
as bench_forward's gf_generator_run ends with the images on the host
(--to-host copies them there too). Prints one line per batch size in
bench_forward's form. Optional: --dump-f32 of bench_forward for the same
seed is compared with torch's images of the same latents (--latents).

  python torch_forward.py MODEL_DIR [--device cuda] [--batch "1 16"]
      [--seconds 2] [--to-host] [--latents F --dump-f32 F]
Exit status: 0 success, 1 error, 2 usage error.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "onnx"))
from export_onnx import build, read_model_dir  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", default="1 16")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--to-host", action="store_true")
    ap.add_argument("--latents")
    ap.add_argument("--dump-f32")
    a = ap.parse_args()
    cfg, w = read_model_dir(a.model_dir)
    dev = torch.device(a.device)
    g = build(cfg, w).to(dev)
    sizes = [int(x) for x in a.batch.replace(",", " ").split()]
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    name = torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu"
    print("# torch %s on %s, %s %dx%d, eager, inference_mode" %
          (torch.__version__, name, cfg["arch"], cfg["size"], cfg["size"]))
    with torch.inference_mode():
        if a.latents and a.dump_f32:
            z = np.fromfile(a.latents, dtype="<f4").reshape(-1, cfg["z_dim"])
            ref = np.fromfile(a.dump_f32, dtype="<f4").reshape(z.shape[0], -1)
            y = g(torch.from_numpy(z).to(dev)).float().cpu().numpy().reshape(z.shape[0], -1)
            print("# max |torch - ganflow| over %d images: %.3g" % (z.shape[0], np.abs(y - ref).max()))
        for b in sizes:
            z = torch.randn(b, cfg["z_dim"], device=dev)
            t_end = time.perf_counter() + 0.3
            while time.perf_counter() < t_end:
                y = g(z)
                sync()
            ts = []
            t_end = time.perf_counter() + a.seconds
            while time.perf_counter() < t_end or len(ts) < 10:
                t = time.perf_counter()
                y = g(z)
                if a.to_host:
                    y = y.cpu()
                sync()
                ts.append(time.perf_counter() - t)
            ts.sort()
            med = ts[len(ts) // 2]
            print("torch batch %d: median %.3f ms/pass, %.0f img/s (p10 %.3f ms, p90 %.3f ms, %d passes)" %
                  (b, med * 1e3, b / med, ts[len(ts) // 10] * 1e3, ts[len(ts) * 9 // 10] * 1e3, len(ts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
