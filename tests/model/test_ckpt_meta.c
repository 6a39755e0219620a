/* test_ckpt_meta.c - checkpoint metadata: write + open round trip with the
 * data digest, a flipped data byte detected, every key required and
 * strictly parsed, invalid metadata refused by the writer. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gf/ckpt_meta.h"
#include "file_util.h"

static gf_ckpt_meta sample(void) {
  gf_ckpt_meta m;
  memset(&m, 0, sizeof m);
  m.format_version = GF_CKPT_FORMAT_VERSION;
  m.step = 123456;
  m.epoch = 7;
  m.epoch_offset = 4096;
  m.seed = UINT64_MAX - 5;
  m.world_size = 4;
  strcpy(m.run_id, "0123456789abcdef0123456789abcdef");
  gf_model_config_default(&m.config, GF_ARCH_DCGAN);
  m.config.image_height = m.config.image_width = 32;
  strcpy(m.recipe, "loss=hinge,d_steps=2,ema_decay=0.999,ema_rampup=0.05,mirror=true");
  return m;
}

/* Writes a file with the sample metadata but key `key` set to `value`
 * (NULL: removed), then opens it as a checkpoint. */
static gf_status open_with(const char *dir, const char *key, const char *value, gf_err *err) {
  gf_ckpt_meta m = sample();
  gf_ckpt_meta_kv kv;
  REQUIRE(gf_ckpt_meta_to_kv(&m, &kv, NULL) == GF_OK);
  gf_st_kv edited[GF_CKPT_META_NKEYS];
  size_t n = 0;
  int found = 0;
  for (size_t i = 0; i < kv.n; i++) {
    if (strcmp(kv.kv[i].key, key) == 0) {
      found = 1;
      if (!value) continue;
      edited[n++] = (gf_st_kv){key, value};
    } else {
      edited[n++] = kv.kv[i];
    }
  }
  REQUIRE(found);
  float x[2] = {1, 2};
  const int64_t s[] = {2};
  gf_st_tensor_desc t[] = {{"x", GF_ST_F32, 1, s, x}};
  char path[512];
  snprintf(path, sizeof path, "%s/edited.safetensors", dir);
  REQUIRE(gf_st_write_file(path, t, 1, edited, n, GF_ST_DATA_SHA256, NULL) == GF_OK);
  gf_ckpt_meta_kv_free(&kv);
  gf_st_file f;
  gf_ckpt_meta out;
  gf_status st = gf_ckpt_open(path, &f, &out, err);
  gf_st_file_free(&f);
  return st;
}

int main(void) {
  char dir[256], path[512];
  tu_mkdtemp(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
  gf_err err = {GF_OK, ""};

  float g[4] = {0.5f, -1, 2, 3}, adam_m[4] = {0}, adam_v[4] = {1, 1, 1, 1};
  int64_t adam_step = 123456;
  const int64_t s4[] = {4}, s1[] = {1};
  gf_st_tensor_desc t[] = {{"G.w", GF_ST_F32, 1, s4, g},
                           {"opt.G.m", GF_ST_F32, 1, s4, adam_m},
                           {"opt.G.v", GF_ST_F32, 1, s4, adam_v},
                           {"opt.G.step", GF_ST_I64, 1, s1, &adam_step}};
  gf_ckpt_meta m = sample(), back;
  CHECKF(gf_ckpt_write(path, t, 4, &m, &err) == GF_OK, "%s", err.msg);
  gf_st_file f;
  CHECKF(gf_ckpt_open(path, &f, &back, &err) == GF_OK, "%s", err.msg);
  CHECK(back.format_version == m.format_version && back.step == m.step &&
        back.epoch == m.epoch && back.epoch_offset == m.epoch_offset && back.seed == m.seed &&
        back.world_size == m.world_size);
  CHECK_STR_EQ(back.run_id, m.run_id);
  CHECK_STR_EQ(back.recipe, m.recipe);
  CHECK(gf_model_config_equal(&back.config, &m.config));
  CHECK_INT_EQ(f.n_tensors, 4);
  const gf_st_tensor *w = gf_st_find(&f, "G.w");
  CHECK(w && w->nbytes == sizeof g && memcmp(w->data, g, sizeof g) == 0);
  CHECK(gf_st_meta_get(&f, GF_ST_DATA_SHA256_KEY) != NULL);
  gf_st_file_free(&f);

  /* An empty run id (untracked run) is allowed. */
  m.run_id[0] = '\0';
  CHECK_INT_EQ(gf_ckpt_write(path, t, 4, &m, &err), GF_OK);
  CHECK_INT_EQ(gf_ckpt_open(path, &f, &back, &err), GF_OK);
  CHECK_STR_EQ(back.run_id, "");
  gf_st_file_free(&f);

  /* A flipped data byte: the open fails with an integrity error. */
  size_t len;
  unsigned char *bytes = tu_read(path, &len);
  bytes[len - 3] ^= 0x10;
  tu_write(path, bytes, len);
  free(bytes);
  CHECK_INT_EQ(gf_ckpt_open(path, &f, &back, &err), GF_EINTEGRITY);
  CHECK(f.tensors == NULL && f.owned == NULL);
  /* Truncated: a format error. */
  bytes = tu_read(path, &len);
  tu_write(path, bytes, len / 2);
  free(bytes);
  CHECK_INT_EQ(gf_ckpt_open(path, &f, &back, &err), GF_EFORMAT);

  /* The control: the helper's untouched file opens. */
  CHECK_INT_EQ(open_with(dir, "ganflow.step", "123456", &err), GF_OK);
  /* Every key is required. */
  const char *keys[] = {"ganflow.format_version", "ganflow.step", "ganflow.epoch",
                        "ganflow.epoch_offset", "ganflow.seed", "ganflow.world_size",
                        "ganflow.run_id", "ganflow.config"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    gf_status st = open_with(dir, keys[i], NULL, &err);
    CHECKF(st == GF_EFORMAT && strstr(err.msg, keys[i]), "without %s: %s %s", keys[i],
           gf_status_name(st), err.msg);
  }
  /* Strict numbers and values. */
  const char *bad[][2] = {{"ganflow.step", "-1"},       {"ganflow.step", "01"},
                          {"ganflow.step", "1x"},       {"ganflow.step", ""},
                          {"ganflow.step", " 1"},       {"ganflow.step", "+1"},
                          {"ganflow.step", "9223372036854775808"},
                          {"ganflow.seed", "18446744073709551616"},
                          {"ganflow.world_size", "0"},  {"ganflow.format_version", "2"},
                          {"ganflow.run_id", "../etc"}, {"ganflow.config", "{}"},
                          {"ganflow.config", "not json"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_status st = open_with(dir, bad[i][0], bad[i][1], &err);
    CHECKF(st != GF_OK, "%s=\"%s\" accepted", bad[i][0], bad[i][1]);
  }
  CHECK_INT_EQ(open_with(dir, "ganflow.seed", "18446744073709551615", &err), GF_OK);
  /* ganflow.recipe is optional (files of an older ganflow lack it) and
   * printable ASCII of at most GF_CKPT_RECIPE_MAX characters. */
  CHECK_INT_EQ(open_with(dir, "ganflow.recipe", NULL, &err), GF_OK);
  char longr[GF_CKPT_RECIPE_MAX + 2];
  memset(longr, 'a', sizeof longr - 1);
  longr[sizeof longr - 1] = '\0';
  const char *bad_recipe[] = {"loss=bce\n", "\x01", longr};
  for (size_t i = 0; i < sizeof bad_recipe / sizeof *bad_recipe; i++) {
    gf_status st = open_with(dir, "ganflow.recipe", bad_recipe[i], &err);
    CHECKF(st == GF_EFORMAT && strstr(err.msg, "ganflow.recipe"), "recipe %zu: %s %s", i,
           gf_status_name(st), err.msg);
  }
  longr[GF_CKPT_RECIPE_MAX] = '\0';
  CHECK_INT_EQ(open_with(dir, "ganflow.recipe", longr, &err), GF_OK);

  /* The writer refuses invalid metadata. */
  gf_ckpt_meta b = sample();
  b.step = -1;
  CHECK_INT_EQ(gf_ckpt_write(path, t, 4, &b, &err), GF_EINVAL);
  b = sample();
  b.world_size = 0;
  CHECK_INT_EQ(gf_ckpt_write(path, t, 4, &b, &err), GF_EINVAL);
  b = sample();
  strcpy(b.run_id, "has space");
  CHECK_INT_EQ(gf_ckpt_write(path, t, 4, &b, &err), GF_EINVAL);
  b = sample();
  b.config.z_dim = 0;
  CHECK_INT_EQ(gf_ckpt_write(path, t, 4, &b, &err), GF_EINVAL);
  CHECK(strstr(err.msg, "z_dim") != NULL);
  b = sample();
  strcpy(b.recipe, "tab\there");
  CHECK_INT_EQ(gf_ckpt_write(path, t, 4, &b, &err), GF_EINVAL);
  CHECK(strstr(err.msg, "recipe") != NULL);
  gf_ckpt_meta_kv_free(NULL);
  tu_rmdir(dir);
  return check_report();
}
