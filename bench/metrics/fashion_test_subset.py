#!/usr/bin/env python3
"""fashion_test_subset.py OUT N - the first N images of Fashion-MNIST's
test set (and their labels) written as an IDX training set in OUT, the
layout `ganflow eval --data` and `ganflow fid` read, so that both score
against the same reference (one FID cache entry). Used by
bench/metrics/quality.sh and bench/quality/run.sh."""
import gzip
import struct
import sys

out, n = sys.argv[1], int(sys.argv[2])
src = "/usr/share/datasets/fashion-mnist/t10k-%s-idx%d-ubyte.gz"
with gzip.open(src % ("images", 3)) as f:
    magic, total, h, w = struct.unpack(">IIII", f.read(16))
    assert magic == 2051 and n <= total
    px = f.read(n * h * w)
with gzip.open(src % ("labels", 1)) as f:
    f.read(8)
    lab = f.read(n)
with open(out + "/train-images-idx3-ubyte", "wb") as f:
    f.write(struct.pack(">IIII", 2051, n, h, w) + px)
with open(out + "/train-labels-idx1-ubyte", "wb") as f:
    f.write(struct.pack(">II", 2049, n) + lab)
