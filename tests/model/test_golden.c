/* test_golden.c - one gf_gan_step of each network against PyTorch's numbers
 * (tests/model/golden/CASE.safetensors, written by golden/make_golden.py; no
 * Python needed here). Both sides start from the same weights (an integer
 * formula, golden_value below, exact in f32 in C and numpy), the same real
 * batch and latents (stored), and the same dropout masks (Philox, keyed as
 * gf/rng.h says, re-implemented in numpy by the script).
 *
 * Tolerances (f32 throughout; the two sides sum in different orders:
 * oneDNN's blocked GEMM/convolutions and its batch-norm reductions versus
 * PyTorch's MKL/own kernels), per quantity:
 *   losses, mean D(.)     |d| <= 2e-6 + 2e-5 |t|    (mean of a few logits)
 *   G output sample       |d| <= 2e-6 + 1e-4 |t|    (tanh of a forward)
 *   gradient samples      |d| <= 2e-4 rms + 1e-3 |t|, rms = L2 / sqrt(n):
 *                         gradients pass two batch norms and the updated
 *                         D; errors scale with the tensor's magnitude,
 *                         and entries that cancel to ~0 get the rms term
 *   gradient L2 norm      |d| <= 1e-4 L2
 *   gradient sum          |d| <= 1e-5 L2 sqrt(n) + 1e-4 |t| (sums cancel;
 *                         bounded by the L2-scaled error of each entry)
 *   parameters after Adam |d| <= 1e-3 lr + 1e-6 |t| where the gradient is
 *                         clearly non-zero (|g| > 2 x its tolerance); else
 *                         2.01 lr: Adam's first step is lr * g / (|g| +
 *                         eps), a sign function of g, so an entry whose
 *                         gradient is within rounding of 0 may go either way
 *   BN running stats      |d| <= 2e-6 + 2e-5 |t|
 *   zero gradients        a gradient that is 0 in exact arithmetic (mlp G's
 *                         linear biases, followed by batch norm, which
 *                         removes any constant shift) is rounding noise on
 *                         both sides (~1e-9 of the others): where PyTorch's
 *                         L2 is below 1e-5 x the net's largest gradient L2,
 *                         ours must be too, entries are not compared, and
 *                         Adam (which turns noise into +-lr) gets 2.01 lr
 * Each line printed gives the worst |d| / tolerance seen per quantity.
 * Argument 2 "--perturb-z" adds 1e-3 to one latent value: the comparison
 * must then fail, and the program exits 0 only when every case ran and
 * checks failed in each of them, counted per network (ctest
 * model_golden_fires), which proves each network's tolerances are tight
 * enough to see a small real mismatch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/gan.h"
#include "gf/safetensors.h"

#define LR 2e-4

static uint32_t lowbias32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/* Element i of tensor tid: ((h & 0xffff) - 32768) * 2^-20, exact in f32. */
static float golden_value(uint32_t tid, uint32_t i) {
  uint32_t h = lowbias32(i ^ lowbias32(2 * tid + 1));
  return (float)((int32_t)(h & 0xffffu) - 32768) * 0x1p-20f;
}

static void load_formula(gf_net *net, uint32_t tid_base) {
  for (int t = 0; t < net->n_tensors; t++) {
    gf_param *p = &net->tensors[t];
    if (!p->trainable) continue;
    float *d = p->value.data;
    int64_t n = gf_tensor_numel(&p->value);
    for (int64_t i = 0; i < n; i++) {
      float v = golden_value(tid_base + (uint32_t)t, (uint32_t)i);
      d[i] = p->kind == GF_PARAM_BN_WEIGHT ? 1.0f + v : v;
    }
  }
}

static const gf_st_tensor *need(const gf_st_file *f, const char *name, gf_st_dtype dt, size_t numel) {
  const gf_st_tensor *t = gf_st_find(f, name);
  if (!t || t->dtype != dt || t->numel != numel) {
    fprintf(stderr, "golden file: tensor %s missing or not %zu %s values\n", name, numel,
            gf_st_dtype_name(dt));
    exit(1);
  }
  return t;
}

static void copy_f32(const gf_st_tensor *t, float *out) { memcpy(out, t->data, t->nbytes); }

static double f64_at(const gf_st_tensor *t, size_t i) {
  double v;
  memcpy(&v, (const char *)t->data + i * 8, 8);
  return v;
}
static float f32_at(const gf_st_tensor *t, size_t i) {
  float v;
  memcpy(&v, (const char *)t->data + i * 4, 4);
  return v;
}

static int meta_int(const gf_st_file *f, const char *key) {
  const char *v = gf_st_meta_get(f, key);
  REQUIRE(v != NULL);
  return atoi(v);
}

/* Worst |d| / tol per quantity, for the summary lines. */
typedef struct worst {
  const char *what;
  double ratio;
  char where[96];
} worst;

static void cmp(worst *w, const char *where, size_t i, double c, double t, double tol) {
  double d = fabs(c - t);
  double r = d / tol;
  if (!(r <= w->ratio)) { /* NaN counts as worst */
    w->ratio = isnan(r) ? INFINITY : r;
    snprintf(w->where, sizeof w->where, "%s[%zu]", where, i);
  }
  CHECKF(d <= tol, "%s %s[%zu]: C %.9g vs PyTorch %.9g (tol %.3g)", w->what, where, i, c, t, tol);
}

/* Strided sample of n values: k = min(2048, n) entries at (i * n) / k. */
static size_t sample_k(size_t n) { return n < 2048 ? n : 2048; }
static size_t sample_idx(size_t i, size_t n) { return (size_t)(((uint64_t)i * n) / sample_k(n)); }

static void run_case(gf_ctx *ctx, const char *path, int perturb) {
  gf_err err = {0};
  gf_st_file f;
  gf_st_file_init(&f);
  gf_status st = gf_st_open(&f, path, 0, &err);
  if (st) fprintf(stderr, "%s: %s\n", path, err.msg);
  REQUIRE(st == GF_OK);
  const char *arch = gf_st_meta_get(&f, "arch");
  REQUIRE(arch != NULL);
  gf_model_config c;
  gf_model_config_default(&c, strcmp(arch, "mlp") == 0 ? GF_ARCH_MLP : GF_ARCH_DCGAN);
  c.image_height = c.image_width = meta_int(&f, "size");
  c.image_channels = meta_int(&f, "channels");
  c.z_dim = meta_int(&f, "z_dim");
  c.ngf = meta_int(&f, "ngf");
  c.ndf = meta_int(&f, "ndf");
  int n = meta_int(&f, "batch");
  uint64_t seed = (uint64_t)strtoull(gf_st_meta_get(&f, "seed"), NULL, 10);
  int64_t step = meta_int(&f, "step");

  gf_gan gan;
  st = gf_gan_init(&gan, ctx, &c, NULL, n, &err);
  if (st) fprintf(stderr, "%s: %s\n", path, err.msg);
  REQUIRE(st == GF_OK);
  load_formula(&gan.g, 0);
  load_formula(&gan.d, 64);

  size_t img = (size_t)c.image_channels * c.image_height * c.image_width;
  gf_tensor real, z;
  int64_t rs[4] = {n, c.image_channels, c.image_height, c.image_width};
  int64_t zs[2] = {n, c.z_dim};
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  REQUIRE(gf_tensor_init(&z, GF_F32, GF_DEV_CPU, 2, zs, &err) == GF_OK);
  copy_f32(need(&f, "input.real", GF_ST_F32, n * img), real.data);
  copy_f32(need(&f, "input.z", GF_ST_F32, (size_t)n * c.z_dim), z.data);
  if (perturb) ((float *)z.data)[1] += 1e-3f;

  gf_gan_stats s;
  st = gf_gan_step(&gan, ctx, &real, &z, seed, step, 0, &s, &err);
  if (st) fprintf(stderr, "%s: %s\n", path, err.msg);
  REQUIRE(st == GF_OK);

  worst w_loss = {"loss", 0, ""}, w_fake = {"fake", 0, ""}, w_gs = {"grad sample", 0, ""},
        w_gl2 = {"grad L2", 0, ""}, w_gsum = {"grad sum", 0, ""}, w_after = {"after Adam", 0, ""},
        w_bn = {"bn stats", 0, ""}, w_zero = {"zero grad L2", 0, ""};
  const gf_st_tensor *stats = need(&f, "stats", GF_ST_F64, 6);
  double mine[6] = {s.loss_d_real, s.loss_d_fake, s.loss_g, s.d_real, s.d_fake, s.d_fake_after};
  for (size_t i = 0; i < 6; i++) {
    double t = f64_at(stats, i);
    cmp(&w_loss, "stats", i, mine[i], t, 2e-6 + 2e-5 * fabs(t));
  }

  gf_tensor fake;
  REQUIRE(gf_net_output(&gan.g, &fake, &err) == GF_OK);
  size_t nf = (size_t)gf_tensor_numel(&fake);
  const gf_st_tensor *tf = need(&f, "out.fake", GF_ST_F32, sample_k(nf));
  for (size_t i = 0; i < sample_k(nf); i++) {
    double t = f32_at(tf, i);
    cmp(&w_fake, "fake", i, ((float *)fake.data)[sample_idx(i, nf)], t, 2e-6 + 1e-4 * fabs(t));
  }

  gf_net *nets[2] = {&gan.g, &gan.d};
  char key[160];
  for (int k = 0; k < 2; k++) {
    gf_net *net = nets[k];
    double max_l2 = 0; /* the net's largest gradient L2 (PyTorch's) */
    for (int ti = 0; ti < net->n_tensors; ti++) {
      if (!net->tensors[ti].trainable) continue;
      snprintf(key, sizeof key, "grad_stats.%s", net->tensors[ti].name);
      double l2 = f64_at(need(&f, key, GF_ST_F64, 2), 1);
      max_l2 = l2 > max_l2 ? l2 : max_l2;
    }
    for (int ti = 0; ti < net->n_tensors; ti++) {
      gf_param *p = &net->tensors[ti];
      size_t nel = (size_t)gf_tensor_numel(&p->value);
      if (!p->trainable) {
        snprintf(key, sizeof key, "bn.%s", p->name);
        const gf_st_tensor *tb = need(&f, key, GF_ST_F32, nel);
        for (size_t i = 0; i < nel; i++) {
          double t = f32_at(tb, i);
          cmp(&w_bn, p->name, i, ((float *)p->value.data)[i], t, 2e-6 + 2e-5 * fabs(t));
        }
        continue;
      }
      snprintf(key, sizeof key, "grad_stats.%s", p->name);
      const gf_st_tensor *ts = need(&f, key, GF_ST_F64, 2);
      double tsum = f64_at(ts, 0), tl2 = f64_at(ts, 1);
      const float *g = p->grad.data;
      double sum = 0, l2 = 0;
      for (size_t i = 0; i < nel; i++) sum += g[i], l2 += (double)g[i] * g[i];
      l2 = sqrt(l2);
      snprintf(key, sizeof key, "after.%s", p->name);
      const gf_st_tensor *ta = need(&f, key, GF_ST_F32, sample_k(nel));
      if (tl2 <= 1e-5 * max_l2) { /* zero in exact arithmetic: noise */
        cmp(&w_zero, p->name, 0, l2, 0, 1e-5 * max_l2);
        for (size_t i = 0; i < sample_k(nel); i++)
          cmp(&w_after, p->name, sample_idx(i, nel),
              ((float *)p->value.data)[sample_idx(i, nel)], f32_at(ta, i), 2.01 * LR);
        continue;
      }
      cmp(&w_gl2, p->name, 0, l2, tl2, 1e-4 * tl2);
      cmp(&w_gsum, p->name, 0, sum, tsum, 1e-5 * tl2 * sqrt((double)nel) + 1e-4 * fabs(tsum));
      double rms = tl2 / sqrt((double)nel);
      snprintf(key, sizeof key, "grad.%s", p->name);
      const gf_st_tensor *tg = need(&f, key, GF_ST_F32, sample_k(nel));
      for (size_t i = 0; i < sample_k(nel); i++) {
        size_t j = sample_idx(i, nel);
        double t = f32_at(tg, i);
        double gtol = 2e-4 * rms + 1e-3 * fabs(t);
        cmp(&w_gs, p->name, j, g[j], t, gtol);
        double ta_i = f32_at(ta, i);
        double atol = fabs(t) > 2 * gtol ? 1e-3 * LR + 1e-6 * fabs(ta_i) : 2.01 * LR;
        cmp(&w_after, p->name, j, ((float *)p->value.data)[j], ta_i, atol);
      }
    }
  }
  worst *all[] = {&w_loss, &w_fake, &w_gs, &w_gl2, &w_gsum, &w_after, &w_bn, &w_zero};
  fprintf(stderr, "%s: loss_d %.6f loss_g %.6f\n", path, s.loss_d, s.loss_g);
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    fprintf(stderr, "  %-12s worst |d|/tol %.3g at %s\n", all[i]->what, all[i]->ratio,
            all[i]->where);
  gf_tensor_free(&real);
  gf_tensor_free(&z);
  gf_gan_free(&gan);
  gf_st_file_free(&f);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_golden GOLDEN_DIR [--perturb-z]\n");
    return 2;
  }
  int perturb = argc > 2 && strcmp(argv[2], "--perturb-z") == 0;
  gf_ctx ctx;
  gf_err err = {0};
  gf_ctx_config cc = {GF_BACKEND_CPU, 2, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&ctx, &cc, &err) == GF_OK);
  const char *cases[] = {"mlp", "dcgan28", "dcgan64"};
  enum { N_CASES = sizeof cases / sizeof cases[0] };
  int missed[N_CASES]; /* checks that failed in each case */
  char path[4096];
  for (size_t i = 0; i < N_CASES; i++) {
    snprintf(path, sizeof path, "%s/%s.safetensors", argv[1], cases[i]);
    int before = check_failures_;
    run_case(&ctx, path, perturb);
    missed[i] = check_failures_ - before;
  }
  gf_ctx_free(&ctx);
  if (perturb) {
    /* Each network's comparison must fire on its own: a failure counted
     * in one case must not stand in for a silent other. */
    int silent = 0;
    for (size_t i = 0; i < N_CASES; i++) {
      fprintf(stderr, "perturbed %s: %d checks failed: %s\n", cases[i], missed[i],
              missed[i] ? "mismatch detected (good)" : "NOT detected");
      silent += missed[i] == 0;
    }
    return silent ? 1 : 0;
  }
  return check_report();
}
