/* model_dir_util.h - test helper: an initialised generator written as an
 * MLflow model directory (gf_mlmodel_write), optionally with one byte of
 * its weights flipped so that the digest check must refuse it. Shared by
 * the generator tests (tests/model) and the serve tests' registry fixture.
 * Header-only; link gf_model. Returns 0 on success, -1 with a message in
 * err on failure (the caller decides how to stop). */
#ifndef GF_TEST_MODEL_DIR_UTIL_H
#define GF_TEST_MODEL_DIR_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "gf/kernels.h"
#include "gf/mlmodel.h"
#include "gf/net.h"

/* The generator of configuration cfg (tu_write_model_dir: arch's
 * default), with class names (cfg->num_classes of them) or NULL. */
static inline int tu_write_model_dir_names(const char *dir,
                                           const gf_model_config *cfgp,
                                           uint64_t seed, int corrupt,
                                           const char *const *class_names,
                                           gf_err *err) {
  gf_ctx ctx;
  gf_ctx_config cc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  if (gf_ctx_init(&ctx, &cc, err) != GF_OK) return -1;
  gf_model_config cfg = *cfgp;
  gf_net g;
  if (gf_net_init(&g, &ctx, &cfg, GF_NET_G, 1, false, err) != GF_OK) {
    gf_ctx_free(&ctx);
    return -1;
  }
  int rc = -1;
  if (gf_net_init_params(&g, seed, err) == GF_OK) {
    /* generator.safetensors names: the state_dict name without "g.". */
    gf_st_tensor_desc desc[GF_NET_MAX_TENSORS];
    for (int i = 0; i < g.n_tensors; i++) {
      const gf_param *p = &g.tensors[i];
      desc[i] = (gf_st_tensor_desc){p->name + 2, GF_ST_F32, p->value.ndim,
                                    p->value.shape, p->value.data};
    }
    gf_mlmodel_info info = {"model", NULL, "3.0.0", "0.1.0", class_names};
    if (gf_mlmodel_write(dir, &cfg, desc, (size_t)g.n_tensors, NULL, 0, &info,
                         NULL, err) == GF_OK)
      rc = 0;
  }
  gf_net_free(&g);
  gf_ctx_free(&ctx);
  if (rc == 0 && corrupt) { /* flip one byte of the last tensor's data */
    char path[4200];
    snprintf(path, sizeof path, "%s/generator.safetensors", dir);
    FILE *f = fopen(path, "r+b");
    int ch = f && fseek(f, -100, SEEK_END) == 0 ? fgetc(f) : EOF;
    if (ch == EOF || fseek(f, -100, SEEK_END) != 0 ||
        fputc(ch ^ 0x5a, f) == EOF) {
      gf_fail(err, GF_EIO, "%s: cannot corrupt", path);
      rc = -1;
    }
    if (f) fclose(f);
  }
  return rc;
}

static inline int tu_write_model_dir_cfg(const char *dir,
                                         const gf_model_config *cfgp,
                                         uint64_t seed, int corrupt,
                                         gf_err *err) {
  return tu_write_model_dir_names(dir, cfgp, seed, corrupt, NULL, err);
}

static inline int tu_write_model_dir(const char *dir, gf_arch arch,
                                     uint64_t seed, int corrupt, gf_err *err) {
  gf_model_config cfg;
  gf_model_config_default(&cfg, arch);
  return tu_write_model_dir_cfg(dir, &cfg, seed, corrupt, err);
}

#endif
