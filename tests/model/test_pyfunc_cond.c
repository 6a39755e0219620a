/* test_pyfunc_cond.c - the python_function flavor of a class-conditional
 * model against ganflow's C generator: a conditional G (shared class
 * embedding, conditional batch norms; random weights, gains and biases and
 * batch-norm statistics far from the identity) is written with class names
 * by gf_mlmodel_write and loaded with MLflow's mlflow.pyfunc.load_model in
 * the checkout's .venv (pyfunc_predict_cond.py); its images for latents
 * with a class per row must equal gf_net_forward's (GF_MODE_INFER, labels
 * by gf_net_set_labels) within PYFUNC_IMG_TOL, for mlp and dcgan 28 and
 * 32. The script also checks that classes given by name, by index string,
 * in every input form, give the same images, and that a missing, unknown
 * or malformed class is refused. The check is shown to fire: the images of
 * the next class miss by far more than the tolerance.
 * Usage: test_pyfunc_cond PYTHON PYFUNC_PREDICT_COND_PY. Exits 77 when the
 * interpreter is missing (no .venv), as test_pyfunc. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "file_util.h"
#include "gf/kernels.h"
#include "gf/mlmodel.h"
#include "gf/net.h"
#include "gf/philox.h"
#include "python_util.h"

#define PYFUNC_IMG_TOL 1e-4 /* images in [-1, 1] */
#define K 3
#define N_ROWS 6

static const char *const k_names[K] = {"T-shirt/top", "Ankle boot", "7"};
static const int k_labels[N_ROWS] = {0, 1, 2, 1, 0, 2};

static void fill_normal(gf_param *p, uint64_t sub, float mean, float std) {
  gf_philox_stream s = {{0x5eedu, (uint32_t)sub}, {0x71u, 0}, 0};
  gf_philox_normal(&s, p->value.data, (size_t)gf_tensor_numel(&p->value), mean, std);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= m)) m = d; /* NaN propagates */
  }
  return m;
}

static double g_worst;

/* G of cfg with weights that keep activations O(1), conditional gains and
 * biases that differ by class, statistics that do not cancel; written to
 * dir with k_names; images of z (N_ROWS rows) for labels into img, and for
 * the labels shifted by one class into img_next. */
static void write_and_run(const char *dir, const gf_model_config *cfg, const float *z,
                          float *img, float *img_next, size_t numel) {
  gf_err err = {GF_OK, ""};
  gf_ctx ctx;
  gf_ctx_config cc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&ctx, &cc, &err) == GF_OK);
  gf_net g;
  REQUIRE(gf_net_init(&g, &ctx, cfg, GF_NET_G, N_ROWS, false, &err) == GF_OK);
  gf_st_tensor_desc desc[GF_NET_MAX_TENSORS];
  int n_embed = 0, n_gain = 0;
  for (int i = 0; i < g.n_tensors; i++) {
    gf_param *p = &g.tensors[i];
    const int64_t *s = p->value.shape;
    int cond_linear = strstr(p->name, ".gain.weight") || strstr(p->name, ".bias.weight");
    switch (p->kind) {
    case GF_PARAM_WEIGHT: /* linear [out, in]; deconv [cin, cout, k, k] */
      if (cond_linear) fill_normal(p, (uint64_t)i, 0.0f, 0.3f / sqrtf((float)s[1]));
      else if (p->value.ndim == 2) fill_normal(p, (uint64_t)i, 0.0f, 1.0f / sqrtf((float)s[1]));
      else fill_normal(p, (uint64_t)i, 0.0f, (i == 0 ? 1.0f : 0.5f) / sqrtf((float)s[0]));
      break;
    case GF_PARAM_BIAS: fill_normal(p, (uint64_t)i, 0.0f, 0.1f); break;
    case GF_PARAM_CBN_GAIN_BIAS: fill_normal(p, (uint64_t)i, 1.0f, 0.2f); n_gain++; break;
    case GF_PARAM_EMBED: fill_normal(p, (uint64_t)i, 0.0f, 1.0f); n_embed++; break;
    case GF_PARAM_BN_RUNNING_MEAN: fill_normal(p, (uint64_t)i, 0.1f, 0.3f); break;
    case GF_PARAM_BN_RUNNING_VAR: {
      fill_normal(p, (uint64_t)i, 0.0f, 1.0f);
      float *v = p->value.data;
      for (int64_t j = 0; j < gf_tensor_numel(&p->value); j++) v[j] = 0.5f + fabsf(v[j]);
      break;
    }
    default: break;
    }
    desc[i] = (gf_st_tensor_desc){p->name + 2, GF_ST_F32, p->value.ndim, p->value.shape,
                                  p->value.data};
  }
  CHECK(n_embed == 1 && n_gain >= 2); /* the conditional G this test is about */
  gf_mlmodel_info info = {"model", NULL, "3.17.2", "0.1.0", k_names};
  CHECKF(gf_mlmodel_write(dir, cfg, desc, (size_t)g.n_tensors, NULL, 0, &info, NULL, &err) ==
             GF_OK,
         "%s", err.msg);
  int32_t lab[N_ROWS], next[N_ROWS];
  for (int r = 0; r < N_ROWS; r++) {
    lab[r] = k_labels[r];
    next[r] = (k_labels[r] + 1) % K;
  }
  int32_t *sets[2] = {lab, next};
  float *outs[2] = {img, img_next};
  int64_t zs[2] = {N_ROWS, cfg->z_dim}, ls[1] = {N_ROWS};
  gf_tensor x, labels, y;
  REQUIRE(gf_tensor_view(&x, (void *)z, GF_F32, GF_DEV_CPU, 2, zs, &err) == GF_OK);
  for (int k = 0; k < 2; k++) {
    REQUIRE(gf_tensor_view(&labels, sets[k], GF_I32, GF_DEV_CPU, 1, ls, &err) == GF_OK);
    CHECKF(gf_net_set_labels(&g, &labels, &err) == GF_OK, "%s", err.msg);
    CHECKF(gf_net_forward(&g, &ctx, &x, GF_MODE_INFER, 0, 0, 0, 0, &y, &err) == GF_OK, "%s",
           err.msg);
    REQUIRE(gf_tensor_numel(&y) == (int64_t)(N_ROWS * numel));
    memcpy(outs[k], y.data, N_ROWS * numel * sizeof(float));
  }
  gf_net_free(&g);
  gf_ctx_free(&ctx);
}

static void check_arch(const char *py, const char *script, const char *tmp, const char *label,
                       const gf_model_config *cfg) {
  char dir[600], out[600], zpath[700], cmd[4096], p[700];
  snprintf(dir, sizeof dir, "%s/%s", tmp, label);
  snprintf(out, sizeof out, "%s/%s-out", tmp, label);
  tu_fresh_dir(out);
  int zd = cfg->z_dim;
  size_t numel = (size_t)cfg->image_channels * (size_t)cfg->image_height *
                 (size_t)cfg->image_width;
  float *z = malloc((size_t)N_ROWS * (size_t)zd * sizeof *z);
  float *img = malloc(N_ROWS * numel * sizeof *img);
  float *img_next = malloc(N_ROWS * numel * sizeof *img);
  REQUIRE(z && img && img_next);
  for (int r = 0; r < N_ROWS; r++)
    for (int j = 0; j < zd; j++)
      z[(size_t)r * (size_t)zd + (size_t)j] = (float)sin(0.37 * (j + 1) * (r + 1) + 0.1 * r);
  /* rows 2 and 3 share a latent: only their class differs */
  memcpy(z + 3 * (size_t)zd, z + 2 * (size_t)zd, (size_t)zd * sizeof *z);
  write_and_run(dir, cfg, z, img, img_next, numel);
  snprintf(zpath, sizeof zpath, "%s/z_in.f32", out);
  tu_write(zpath, z, (size_t)N_ROWS * (size_t)zd * sizeof *z);
  char classes[64];
  int at = 0;
  for (int r = 0; r < N_ROWS; r++)
    at += snprintf(classes + at, sizeof classes - (size_t)at, "%s%d", r ? "," : "",
                   k_labels[r]);
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' '%s' '%s' '%s' 2>&1", py, script, dir, zpath,
           classes, out);
  int rc = system(cmd);
  CHECKF(rc == 0, "%s: pyfunc_predict_cond.py failed (%d)", label, rc);
  if (rc == 0) {
    snprintf(p, sizeof p, "%s/img.f32", out);
    size_t len = 0;
    unsigned char *b = tu_read(p, &len);
    REQUIRE(len == N_ROWS * numel * sizeof(float));
    float *pi = malloc(len);
    REQUIRE(pi != NULL);
    memcpy(pi, b, len);
    free(b);
    double d = max_abs_diff(pi, img, N_ROWS * numel);
    double miss = max_abs_diff(pi, img_next, N_ROWS * numel);
    /* rows 2 and 3: one latent, two classes */
    double rows = max_abs_diff(img + 2 * numel, img + 3 * numel, numel);
    fprintf(stderr, "%-8s max|diff| %.3g (next class's images miss by %.3g; same z, "
            "other class: %.3g)\n", label, d, miss, rows);
    CHECKF(d <= PYFUNC_IMG_TOL, "%s: images differ by %g", label, d);
    CHECKF(miss > 100 * PYFUNC_IMG_TOL, "%s: the class makes no difference (%g)", label, miss);
    CHECKF(rows > 100 * PYFUNC_IMG_TOL, "%s: rows 2, 3 do not differ (%g)", label, rows);
    if (d > g_worst) g_worst = d;
    free(pi);
  }
  free(z);
  free(img);
  free(img_next);
}

int main(int argc, char **argv) {
  if (argc != 3 || !argv[1][0]) {
    fprintf(stderr, "usage: test_pyfunc_cond PYTHON PYFUNC_PREDICT_COND_PY\n");
    return 2;
  }
  if (tu_python_ready(argv[1], "mlflow, numpy, pandas") != 0) return 1;
  char tmp[256];
  tu_mkdtemp(tmp, sizeof tmp);
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_MLP); /* 28x28x1, z 50 */
  c.num_classes = K;
  check_arch(argv[1], argv[2], tmp, "mlp", &c);
  static const struct {
    const char *label;
    int size, ch, ngf, z;
  } dc[] = {{"dcgan32", 32, 3, 8, 64}, {"dcgan28", 28, 1, 8, 17}};
  for (size_t i = 0; i < sizeof dc / sizeof *dc; i++) {
    gf_model_config_default(&c, GF_ARCH_DCGAN);
    c.image_height = c.image_width = dc[i].size;
    c.image_channels = dc[i].ch;
    c.ngf = c.ndf = dc[i].ngf;
    c.z_dim = dc[i].z;
    c.num_classes = K;
    check_arch(argv[1], argv[2], tmp, dc[i].label, &c);
  }
  fprintf(stderr, "worst max|diff| %.3g (tolerance %g)\n", g_worst, PYFUNC_IMG_TOL);
  tu_rmdir(tmp);
  return check_report();
}
