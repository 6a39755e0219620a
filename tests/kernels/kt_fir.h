/* kt_fir.h - helpers of the upfirdn2d tests (test_fir.c, test_cuda_fir.c):
 * a golden case of golden/fir.safetensors read into owned CPU tensors, and
 * the formulas of ops.h ("FIR resampling") as plain loops written from the
 * definition, not from the backends' tap ranges: the forward (every window
 * tap tested for landing on a sample of the zero-inserted, padded plane)
 * and the adjoint summed directly over dy (not as an upfirdn2d with
 * derived pads), in the order ops.h states, so their f32 results are the
 * ops' bits. Test code only: helpers exit the test on a failure. */
#ifndef GF_TEST_KT_FIR_H
#define GF_TEST_KT_FIR_H

#include "gf/kernels.h"
#include "gf/safetensors.h"

/* One case of golden/fir.safetensors (make_fir_golden.py): x, f, y =
 * upfirdn2d(x, f, p), a random upstream gradient g and dx, PyTorch's
 * gradient of (y g).sum() wrt x. All owned, on the CPU. */
typedef struct kt_fir_case {
  gf_fir_params p;
  gf_tensor x, f, y, g, dx;
} kt_fir_case;

/* Reads case `name` (name.x, .f, .p, .gain, .y, .g, .dx); exits on a
 * missing or malformed entry. Free with kt_fir_case_free. */
kt_fir_case kt_fir_case_load(const gf_st_file *file, const char *name);
void kt_fir_case_free(kt_fir_case *c);

/* y = upfirdn2d(x, f, p) for CPU tensors x [N,C,H,W], f [fh,fw] and y of
 * the output shape, the ops.h formula tap by tap (acc = fmaf(u, w, acc)
 * over the window in row-major order, taps off the samples skipped, then
 * acc * gain). With absum non-NULL, absum[i] = |gain| sum |u w| over the
 * same taps in double (the scale of y[i]'s rounding error). */
void kt_fir_ref(const gf_tensor *x, const gf_tensor *f, const gf_fir_params *p,
                gf_tensor *y, double *absum);

/* dx = the adjoint of upfirdn2d(., f, p) applied to dy, for dx
 * [N,C,H,W] and dy its output shape, summed directly:
 *   dx[h][v] = (fmaf over i = 0..OH-1, then j = 0..OW-1, of
 *               dy[i][j] w[h up_y + y0 - i down_y][v up_x + x0 - j down_x]
 *               where the window index is inside [0,fh) x [0,fw)) * gain
 * with the window weights w of ops.h; ops.h's upfirdn2d with derived
 * parameters visits the same terms in the same order. absum as above. */
void kt_fir_ref_adj(const gf_tensor *dy, const gf_tensor *f,
                    const gf_fir_params *p, gf_tensor *dx, double *absum);

/* The allowance against PyTorch per element, 2 (taps + 2) ulp of its
 * |gain| sum |terms| (absum, n elements): PyTorch sums in another order
 * and adds the zero-inserted and padded taps as zeros. A malloc'd array
 * of n the caller frees; exits on failure. */
double *kt_fir_torch_tol(const double *absum, size_t n, int taps);

#endif
