/* bench_util.h - helpers that more than one bench program needs (the
 * benchmarks only; not part of any ganflow library). */
#ifndef GF_BENCH_UTIL_H
#define GF_BENCH_UTIL_H

/* This process's RSS high-water mark (VmHWM of /proc/self/status) in KiB,
 * or -1 when it cannot be read. */
long gf_bench_vm_hwm_kib(void);

/* qsort comparator of doubles, ascending. */
int gf_bench_cmp_double(const void *a, const void *b);

#endif
