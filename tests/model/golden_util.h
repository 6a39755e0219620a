/* golden_util.h - what test_golden.c and test_r1.c share to compare with
 * PyTorch's numbers in golden/ (make_golden.py, make_r1_golden.py): the
 * weight formula both sides compute (lowbias32 hashes, exact in f32), the
 * typed look-up of a tensor in a golden file, the strided sample of a long
 * tensor, and the worst |d| / tol per quantity. Test code only: helpers
 * exit the test when the golden file lacks what they need. */
#ifndef GF_TEST_GOLDEN_UTIL_H
#define GF_TEST_GOLDEN_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "gf/net.h"
#include "gf/safetensors.h"

/* The arguments of a golden test, "GOLDEN_DIR [FLAG]": exits 2 with the
 * usage line of prog when GOLDEN_DIR is missing; returns 1 when argument 2
 * is flag (the "fires" run), else 0. */
int gt_args(int argc, char **argv, const char *prog, const char *flag);

/* Initializes *ctx as the golden tests' CPU ctx (2 threads, layout auto);
 * exits the test on failure. The caller frees it with gf_ctx_free. */
void gt_cpu_ctx(gf_ctx *ctx);

/* Element i of tensor tid: ((h & 0xffff) - 32768) * 2^-20 with
 * h = lowbias32(i ^ lowbias32(2 tid + 1)); exact in f32. */
float gt_golden_value(uint32_t tid, uint32_t i);

/* Fills each trainable tensor t of net with the formula of tensor
 * tid_base + t (a batch norm's gamma: 1 + the formula). */
void gt_load_formula(gf_net *net, uint32_t tid_base);

/* Tensor `name` of f, of dtype dt and numel values; exits the test when it
 * is missing or of another dtype or size. Borrowed from f. */
const gf_st_tensor *gt_need(const gf_st_file *f, const char *name, gf_st_dtype dt,
                            size_t numel);
/* Element i of an F64 / F32 tensor (unaligned data allowed). */
double gt_f64_at(const gf_st_tensor *t, size_t i);
float gt_f32_at(const gf_st_tensor *t, size_t i);

/* Strided sample of n values: k = min(2048, n) entries at (i * n) / k. */
size_t gt_sample_k(size_t n);
size_t gt_sample_idx(size_t i, size_t n);

/* Worst |d| / tol per quantity, for the summary lines. */
typedef struct gt_worst {
  const char *what;
  double ratio;    /* worst |d| / tol so far (tol 0: 0 or infinity) */
  char where[96];  /* "name[i]" of the worst */
  long n;          /* values compared */
} gt_worst;

/* Records |c - t| / tol in w; returns |c - t| <= tol. */
int gt_worst_add(gt_worst *w, const char *where, size_t i, double c, double t, double tol);

/* Prints "  WHAT worst |d|/tol R at WHERE" to stderr for each of all[n]
 * that compared any value. */
void gt_print_worst(gt_worst *const *all, size_t n);

/* The verdict of a --perturb run: prints, per case, how many checks failed
 * (missed[i]) and whether that detected the mismatch; returns the exit
 * status, 0 only when every case failed some check (each comparison must
 * fire on its own). */
int gt_fires_verdict(const char *const *cases, const int *missed, size_t n);

/* gt_worst_add as a check of the calling test (a macro: check.h's counters
 * are the test's own): a miss fails the test with the values. */
#define GT_CMP(w, where, i, c, t, tol)                                                     \
  do {                                                                                     \
    gt_worst *gt_w_ = (w);                                                                 \
    const char *gt_where_ = (where);                                                       \
    size_t gt_i_ = (i);                                                                    \
    double gt_c_ = (c), gt_t_ = (t), gt_tol_ = (tol);                                      \
    CHECKF(gt_worst_add(gt_w_, gt_where_, gt_i_, gt_c_, gt_t_, gt_tol_),                   \
           "%s %s[%zu]: C %.9g vs PyTorch %.9g (tol %.3g)", gt_w_->what, gt_where_, gt_i_, \
           gt_c_, gt_t_, gt_tol_);                                                         \
  } while (0)

#endif
