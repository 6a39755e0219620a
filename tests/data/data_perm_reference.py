#!/usr/bin/env python3
"""data_perm_reference.py - an independent Python model of the data
permutation of data/include/gf/data.h, which produced the golden values
of test_data_order.c: Philox-4x32-10 (Salmon et al. 2011) keyed by the seed
halves, counter {block, 0, purpose 5 (GF_RNG_DATA_PERM of model/include/gf/rng.h),
epoch} as gf_rng_stream lays it out; image i gets the 64-bit key
words 2i, 2i+1; the epoch's order is the indices sorted by (key, index).
Usage: data_perm_reference.py SEED EPOCH N   (epoch < 2^32)"""
import sys

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
PURPOSE = 5  # GF_RNG_DATA_PERM; sub 0 in bits 8..31 of the same word


def philox(ctr, key):
    c, k = list(ctr), list(key)
    for _ in range(10):
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & 0xFFFFFFFF,
             (p0 >> 32) ^ c[3] ^ k[1], p0 & 0xFFFFFFFF]
        k = [(k[0] + W0) & 0xFFFFFFFF, (k[1] + W1) & 0xFFFFFFFF]
    return c


def permutation(seed, epoch, n):
    key = [seed & 0xFFFFFFFF, seed >> 32]
    words = []
    for block in range((2 * n + 3) // 4):
        words += philox([block, 0, PURPOSE, epoch], key)
    keys = [((words[2 * i] << 32) | words[2 * i + 1], i) for i in range(n)]
    return [i for _, i in sorted(keys)]


if __name__ == "__main__":
    seed, epoch, n = (int(a) for a in sys.argv[1:4])
    print(", ".join(str(i) for i in permutation(seed, epoch, n)))
