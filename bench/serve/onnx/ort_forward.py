#!/usr/bin/env python3
"""ort_forward.py - the ONNX Runtime side of bench/serve/onnx/: times the
generator exported by export_onnx.py on ONNX Runtime's CPU execution
provider the way bench_forward.c times gf_generator_run, and compares its
images with ganflow's for the same latents.

Session: CPUExecutionProvider, intra_op_num_threads = --threads (give it
ganflow's --threads), inter_op_num_threads 1, ORT_ENABLE_ALL graph
optimizations, ORT_SEQUENTIAL execution. A pass is one session.run of B
latents (drawn once, outside the timing; the output is allocated by ORT
each run, as gf_generator_run copies into the caller's buffer each run);
warm-up passes for --warmup-seconds, then passes until --seconds have
passed and at least 10 were timed; median and p10/p90 (nearest rank, as
bench_forward.c). One line per batch size:
  ort batch B: median X ms/pass, Y img/s (p10 P ms, p90 Q ms, K passes, T threads)

With --latents and --images (bench_forward --dump-latents/--dump-f32:
float32 [N, z_dim] and [N, C, H, W]), runs ORT once on those N latents and
prints max |ORT - ganflow|; exits 1 when it is over --tol.

  python ort_forward.py MODEL.onnx [--threads N] [--batch "1 16"]
      [--seconds S] [--warmup-seconds S] [--latents F --images F] [--tol T]
Exit status: 0 success, 1 error or mismatch, 2 usage error.
"""
import argparse
import sys
import time

import numpy as np
import onnxruntime as ort

MIN_PASSES = 10


def die(msg):
    print("ort_forward.py: " + msg, file=sys.stderr)
    sys.exit(1)


def batches(s):
    try:
        v = [int(t) for t in s.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError("bad batch list %r" % s)
    if not v or any(b < 1 or b > 4096 for b in v):
        raise argparse.ArgumentTypeError("batch sizes are 1..4096: %r" % s)
    return v


def quantile(v, q):
    """Nearest rank of sorted v, as bench_forward.c's quantile()."""
    k = int(q * (len(v) - 1) + 0.5)
    return v[min(k, len(v) - 1)]


def main():
    ap = argparse.ArgumentParser(description="time ONNX Runtime (CPU) on an exported ganflow generator")
    ap.add_argument("onnx")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads (1)")
    ap.add_argument("--batch", type=batches, default=[1, 16], help='batch sizes ("1 16")')
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds per batch size (2)")
    ap.add_argument("--warmup-seconds", type=float, default=0.3, help="untimed seconds per batch size (0.3)")
    ap.add_argument("--latents", help="ganflow's latents, float32 [N, z_dim]")
    ap.add_argument("--images", help="ganflow's images of them, float32 [N, C, H, W]")
    ap.add_argument("--tol", type=float, default=1e-4, help="largest |ORT - ganflow| allowed (1e-4)")
    a = ap.parse_args()
    if a.threads < 1 or a.threads > 256:
        ap.error("--threads is 1..256")
    if a.seconds <= 0 or a.warmup_seconds < 0:
        ap.error("--seconds must be > 0 and --warmup-seconds >= 0")
    if (a.latents is None) != (a.images is None):
        ap.error("--latents and --images go together")

    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    try:
        sess = ort.InferenceSession(a.onnx, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # ORT raises its own exception types
        die("%s: %s" % (a.onnx, e))
    inp, out = sess.get_inputs()[0], sess.get_outputs()[0]
    z_dim = inp.shape[1]
    img_shape = out.shape[1:]
    print("# onnxruntime %s, %s: input %s %s, output %s %s; %d intra-op threads" % (
        ort.__version__, a.onnx, inp.name, inp.shape, out.name, out.shape, a.threads))

    if a.latents:
        z = np.fromfile(a.latents, dtype="<f4")
        if z.size == 0 or z.size % z_dim:
            die("%s: %d floats, not a multiple of z_dim %d" % (a.latents, z.size, z_dim))
        z = z.reshape(-1, z_dim)
        ref = np.fromfile(a.images, dtype="<f4")
        want = z.shape[0] * int(np.prod(img_shape))
        if ref.size != want:
            die("%s: %d floats, expected %d (%d images of %s)" % (a.images, ref.size, want, z.shape[0], img_shape))
        ref = ref.reshape((z.shape[0],) + tuple(img_shape))
        got = sess.run([out.name], {inp.name: z})[0]
        d = np.abs(got.astype(np.float64) - ref)
        print("cross-check: %d images, max |ORT - ganflow| = %.3e, mean %.3e" % (z.shape[0], d.max(), d.mean()))
        sys.stdout.flush()
        if not d.max() <= a.tol:
            die("ORT and ganflow differ by %.3e > --tol %g" % (d.max(), a.tol))

    rng = np.random.default_rng(7)
    for b in a.batch:
        zb = rng.standard_normal((b, z_dim)).astype(np.float32)
        feed = {inp.name: zb}
        names = [out.name]
        t_end = time.perf_counter() + a.warmup_seconds
        warm = 0
        while time.perf_counter() < t_end or warm < 2:
            sess.run(names, feed)
            warm += 1
        ts = []
        start = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            sess.run(names, feed)
            t1 = time.perf_counter()
            ts.append((t1 - t0) * 1e3)
            if t1 - start >= a.seconds and len(ts) >= MIN_PASSES:
                break
        ts.sort()
        med = quantile(ts, 0.5)
        print("ort batch %d: median %.4f ms/pass, %.1f img/s (p10 %.4f ms, p90 %.4f ms, %d passes, %d threads)" % (
            b, med, b * 1e3 / med, quantile(ts, 0.1), quantile(ts, 0.9), len(ts), a.threads))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
