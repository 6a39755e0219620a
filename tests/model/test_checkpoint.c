/* test_checkpoint.c - gf/checkpoint.h: save/load round trips of dcgan-28
 * and mlp GANs after two steps (every state arena byte-identical, the next
 * step bit-identical to never stopping), errors that leave the gan
 * unchanged (config, missing / extra / reshaped tensor, corrupted file),
 * keep-K pruning, the newest good checkpoint found past truncated, flipped,
 * garbled, empty, misnamed and temporary files, and `ganflow inspect` on a
 * checkpoint and a model directory (through gf_inspect_print and the built
 * binary, whose path is argv[1]). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/cli.h"
#include "gf/ctx.h"
#include "gf/gan.h"
#include "gf/mlmodel.h"

static const char *g_ganflow_bin;

/* ---- files -------------------------------------------------------------- */

static int file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

static void ckpt_path(char *buf, size_t cap, const char *dir, long long step) {
  char name[64];
  snprintf(name, sizeof name, GF_CKPT_NAME_FMT, step);
  snprintf(buf, cap, "%s/%s", dir, name);
}

/* The whole of stream f (rewound first) as a malloc'd string. */
static char *slurp(FILE *f) {
  REQUIRE(fflush(f) == 0);
  long n = ftell(f);
  REQUIRE(n >= 0);
  rewind(f);
  char *s = malloc((size_t)n + 1);
  REQUIRE(s != NULL);
  REQUIRE(fread(s, 1, (size_t)n, f) == (size_t)n);
  s[n] = '\0';
  return s;
}

/* ---- gan state ---------------------------------------------------------- */

static const gf_arena *state_arena(const gf_gan *g, int k) {
  const gf_net *net = k < 4 ? &g->g : &g->d;
  switch (k % 4) {
    case 0: return &net->params;
    case 1: return &net->adam_m;
    case 2: return &net->adam_v;
    default: return &net->bn_stats;
  }
}

/* 1 when every state arena (params, both moments, BN stats of G and D) and
 * both step counters are byte-identical. */
static int same_state(const gf_gan *a, const gf_gan *b) {
  for (int k = 0; k < 8; k++) {
    const gf_arena *x = state_arena(a, k), *y = state_arena(b, k);
    if (x->used != y->used) return 0;
    if (x->used && memcmp(x->base, y->base, x->used) != 0) return 0;
  }
  return a->adam_step_g == b->adam_step_g && a->adam_step_d == b->adam_step_d;
}

/* A malloc'd copy of all state arenas, to check that a failed load left the
 * gan unchanged. */
static unsigned char *snapshot(const gf_gan *g, size_t *len) {
  size_t n = 2 * sizeof(int64_t);
  for (int k = 0; k < 8; k++) n += state_arena(g, k)->used;
  unsigned char *s = malloc(n), *p = s;
  REQUIRE(s != NULL);
  for (int k = 0; k < 8; k++) {
    const gf_arena *a = state_arena(g, k);
    if (a->used) memcpy(p, a->base, a->used);
    p += a->used;
  }
  memcpy(p, &g->adam_step_g, sizeof(int64_t));
  memcpy(p + sizeof(int64_t), &g->adam_step_d, sizeof(int64_t));
  *len = n;
  return s;
}

static int unchanged(const gf_gan *g, const unsigned char *snap, size_t len) {
  size_t n;
  unsigned char *now = snapshot(g, &n);
  int same = n == len && memcmp(now, snap, n) == 0;
  free(now);
  return same;
}

static void fill_real(gf_tensor *real) {
  float *x = real->data;
  int64_t n = gf_tensor_numel(real);
  for (int64_t i = 0; i < n; i++) x[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
}

static void meta_for(gf_ckpt_meta *m, const gf_gan *g, int64_t step) {
  memset(m, 0, sizeof *m);
  m->format_version = GF_CKPT_FORMAT_VERSION;
  m->step = step;
  m->epoch = 1;
  m->epoch_offset = 64;
  m->seed = 99;
  m->world_size = 1;
  snprintf(m->run_id, sizeof m->run_id, "0123abcd");
  m->config = g->cfg;
}

/* A gan of cfg with parameters from seed, after `steps` training steps. */
static void make_gan(gf_gan *g, gf_ctx *ctx, const gf_model_config *cfg,
                     int batch, uint64_t seed, int steps, gf_tensor *real) {
  gf_err err;
  REQUIRE(gf_gan_init(g, ctx, cfg, NULL, batch, &err) == GF_OK);
  REQUIRE(gf_gan_init_params(g, seed, &err) == GF_OK);
  for (int s = 0; s < steps; s++)
    REQUIRE(gf_gan_step(g, ctx, real, NULL, 99, s, 0, NULL, &err) == GF_OK);
}

/* ---- malformed tensor sets ---------------------------------------------- */

/* Rewrites the checkpoint at src into dst (same metadata) with its tensor
 * list changed: drop `drop` (NULL: none), add an extra F32 tensor when
 * add_extra, and give `reshape` (NULL: none) shape [numel/1, 1]. */
static void rewrite(const char *src, const char *dst, const char *drop,
                    int add_extra, const char *reshape) {
  gf_err err;
  gf_st_file f;
  gf_st_file_init(&f);
  gf_ckpt_meta m;
  REQUIRE(gf_ckpt_open(src, &f, &m, &err) == GF_OK);
  gf_st_tensor_desc *d = calloc(f.n_tensors + 1, sizeof *d);
  int64_t(*shapes)[GF_ST_MAX_DIMS] = calloc(f.n_tensors + 1, sizeof *shapes);
  REQUIRE(d && shapes);
  size_t n = 0;
  for (size_t i = 0; i < f.n_tensors; i++) {
    const gf_st_tensor *t = &f.tensors[i];
    if (drop && !strcmp(t->name, drop)) continue;
    d[n].name = t->name;
    d[n].dtype = t->dtype;
    d[n].ndim = t->ndim;
    memcpy(shapes[n], t->shape, sizeof shapes[n]);
    if (reshape && !strcmp(t->name, reshape)) {
      d[n].ndim = 2;
      shapes[n][0] = (int64_t)t->numel;
      shapes[n][1] = 1;
    }
    d[n].shape = shapes[n];
    d[n].data = t->data;
    n++;
  }
  static const float extra[3] = {1, 2, 3};
  static const int64_t extra_shape[1] = {3};
  if (add_extra) {
    d[n].name = "g.main.99.weight";
    d[n].dtype = GF_ST_F32;
    d[n].ndim = 1;
    d[n].shape = extra_shape;
    d[n].data = extra;
    n++;
  }
  REQUIRE(gf_ckpt_write(dst, d, n, &m, &err) == GF_OK);
  free(shapes);
  free(d);
  gf_st_file_free(&f);
}

/* ---- round trip --------------------------------------------------------- */

static void test_round_trip(gf_ctx *ctx, const gf_model_config *cfg, int batch,
                            const char *what, int full) {
  fprintf(stderr, "round trip: %s\n", what);
  gf_err err;
  gf_tensor real;
  int64_t rs[4] = {batch, cfg->image_channels, cfg->image_height, cfg->image_width};
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  fill_real(&real);

  char dir[512], path[1024];
  tu_mkdtemp(dir, sizeof dir);
  gf_gan a, b;
  make_gan(&a, ctx, cfg, batch, 7, 2, &real);
  CHECK(a.adam_step_g == 2 && a.adam_step_d == 2);
  gf_ckpt_meta m;
  meta_for(&m, &a, 2);
  REQUIRE(gf_checkpoint_save(dir, &a, &m, 0, path, sizeof path, &err) == GF_OK);
  char want[1024];
  ckpt_path(want, sizeof want, dir, 2);
  CHECK_STR_EQ(path, want);

  /* b starts elsewhere (other seed, no steps) and is loaded. */
  make_gan(&b, ctx, cfg, batch, 12345, 0, &real);
  CHECK(!same_state(&a, &b));
  gf_ckpt_meta got;
  REQUIRE(gf_checkpoint_load(path, &b, &got, &err) == GF_OK);
  CHECKF(same_state(&a, &b), "%s: loaded state differs", what);
  CHECK_INT_EQ(got.step, 2);
  CHECK_INT_EQ(got.epoch_offset, 64);
  CHECK_STR_EQ(got.run_id, "0123abcd");
  CHECK(gf_model_config_equal(&got.config, cfg));

  /* The next step after the load is the step that never stopped. */
  gf_gan_stats sa, sb;
  REQUIRE(gf_gan_step(&a, ctx, &real, NULL, 99, 2, 0, &sa, &err) == GF_OK);
  REQUIRE(gf_gan_step(&b, ctx, &real, NULL, 99, 2, 0, &sb, &err) == GF_OK);
  CHECKF(same_state(&a, &b), "%s: step after load differs", what);
  CHECK(memcmp(&sa, &sb, sizeof sa) == 0);
  /* The comparison can fail: one more step on a only. */
  REQUIRE(gf_gan_step(&a, ctx, &real, NULL, 99, 3, 0, NULL, &err) == GF_OK);
  CHECK(!same_state(&a, &b));

  /* Config mismatch: error naming the field, gan unchanged. */
  gf_model_config c2 = *cfg;
  if (cfg->architecture == GF_ARCH_DCGAN)
    c2.ngf = cfg->ngf * 2;
  else
    c2.z_dim = cfg->z_dim + 1;
  gf_gan c;
  make_gan(&c, ctx, &c2, batch, 5, 0, &real);
  size_t snap_len;
  unsigned char *snap = snapshot(&c, &snap_len);
  CHECK(gf_checkpoint_load(path, &c, NULL, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "config mismatch") != NULL);
  CHECK(strstr(err.msg, cfg->architecture == GF_ARCH_DCGAN ? "ngf" : "z_dim") != NULL);
  CHECK(unchanged(&c, snap, snap_len));
  free(snap);
  gf_gan_free(&c);

  if (full) {
    /* Missing, extra and reshaped tensors, a corrupted file: each an
     * error naming it; b unchanged. */
    snap = snapshot(&b, &snap_len);
    char bad[1100];
    snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    rewrite(path, bad, "d.main.0.weight.adam_v", 0, NULL);
    CHECK(gf_checkpoint_load(bad, &b, NULL, &err) == GF_EFORMAT);
    CHECK(strstr(err.msg, "d.main.0.weight.adam_v") && strstr(err.msg, "missing"));
    rewrite(path, bad, NULL, 1, NULL);
    CHECK(gf_checkpoint_load(bad, &b, NULL, &err) == GF_EFORMAT);
    CHECK(strstr(err.msg, "unexpected tensor g.main.99.weight") != NULL);
    rewrite(path, bad, NULL, 0, "g.main.0.weight");
    CHECK(gf_checkpoint_load(bad, &b, NULL, &err) == GF_EFORMAT);
    CHECK(strstr(err.msg, "g.main.0.weight") && strstr(err.msg, "shape"));
    rewrite(path, bad, "g.adam_step", 0, NULL);
    CHECK(gf_checkpoint_load(bad, &b, NULL, &err) == GF_EFORMAT);
    CHECK(strstr(err.msg, "g.adam_step") != NULL);
    size_t len;
    unsigned char *bytes = tu_read(path, &len);
    bytes[len - 3] ^= 0x40;
    tu_write(bad, bytes, len);
    CHECK(gf_checkpoint_load(bad, &b, NULL, &err) == GF_EINTEGRITY);
    tu_write(bad, bytes, len / 2);
    CHECK(gf_checkpoint_load(bad, &b, NULL, &err) != GF_OK);
    free(bytes);
    CHECK(unchanged(&b, snap, snap_len));
    free(snap);
    /* Bad arguments and unreadable paths. */
    CHECK(gf_checkpoint_load("/nonexistent/x.safetensors", &b, NULL, &err) != GF_OK);
    CHECK(gf_checkpoint_save(dir, &b, NULL, 0, NULL, 0, &err) == GF_EINVAL);
    gf_ckpt_meta wrong = m;
    wrong.config.ndf++;
    CHECK(gf_checkpoint_save(dir, &b, &wrong, 0, NULL, 0, &err) == GF_EINVAL);
    char tiny[8];
    CHECK(gf_checkpoint_save(dir, &b, &m, 0, tiny, sizeof tiny, &err) == GF_EINVAL);
  }
  gf_gan_free(&a);
  gf_gan_free(&b);
  gf_tensor_free(&real);
  tu_rmdir(dir);
}

/* ---- pruning ------------------------------------------------------------ */

static void test_keep(gf_ctx *ctx, const gf_model_config *cfg) {
  gf_err err;
  gf_tensor real;
  int64_t rs[4] = {2, cfg->image_channels, cfg->image_height, cfg->image_width};
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  fill_real(&real);
  gf_gan g;
  make_gan(&g, ctx, cfg, 2, 3, 0, &real);
  char dir[512], p[1024];
  tu_mkdtemp(dir, sizeof dir);
  gf_ckpt_meta m;
  /* A stale temporary file of an interrupted write, and an unrelated file. */
  snprintf(p, sizeof p, "%s/ckpt-000000000009.safetensors.tmp.AbC123", dir);
  tu_write(p, "partial", 7);
  snprintf(p, sizeof p, "%s/notes.txt", dir);
  tu_write(p, "keep me", 7);
  for (int s = 1; s <= 5; s++) {
    meta_for(&m, &g, s);
    REQUIRE(gf_checkpoint_save(dir, &g, &m, 3, NULL, 0, &err) == GF_OK);
  }
  for (int s = 1; s <= 5; s++) {
    ckpt_path(p, sizeof p, dir, s);
    CHECKF(file_exists(p) == (s >= 3), "step %d", s);
  }
  CHECK_INT_EQ(tu_count_names(dir, ".tmp."), 0);
  CHECK_INT_EQ(tu_count_names(dir, "notes.txt"), 1);
  /* keep 0 keeps everything. */
  for (int s = 6; s <= 7; s++) {
    meta_for(&m, &g, s);
    REQUIRE(gf_checkpoint_save(dir, &g, &m, 0, NULL, 0, &err) == GF_OK);
  }
  CHECK_INT_EQ(tu_count_names(dir, ".safetensors"), 5);
  /* Saving an older step (resumed from it) makes it the newest: the
   * higher steps of the abandoned timeline go. */
  meta_for(&m, &g, 4);
  REQUIRE(gf_checkpoint_save(dir, &g, &m, 2, NULL, 0, &err) == GF_OK);
  for (int s = 1; s <= 7; s++) {
    ckpt_path(p, sizeof p, dir, s);
    CHECKF(file_exists(p) == (s == 3 || s == 4), "after resave, step %d", s);
  }
  /* Names. */
  int64_t step = -1;
  CHECK(gf_checkpoint_parse_name("ckpt-000000000042.safetensors", &step) && step == 42);
  CHECK(gf_checkpoint_parse_name("ckpt-1234567890123.safetensors", &step) &&
        step == 1234567890123LL);
  CHECK(!gf_checkpoint_parse_name("ckpt-42.safetensors", &step));
  CHECK(!gf_checkpoint_parse_name("ckpt-000000000042.safetensors.tmp.x", &step));
  CHECK(!gf_checkpoint_parse_name("ckpt-00000000004a.safetensors", &step));
  CHECK(!gf_checkpoint_parse_name("ckpt-99999999999999999999.safetensors", &step));
  gf_gan_free(&g);
  gf_tensor_free(&real);
  tu_rmdir(dir);
}

/* ---- corruption --------------------------------------------------------- */

static void expect_latest(const char *dir, long long want_step, int want_skipped,
                          const char *skipped_name, const char *what) {
  char path[1024], msg[600], want[1024];
  gf_ckpt_meta m;
  int n = -1;
  gf_err err;
  gf_status st = gf_checkpoint_find_latest(dir, path, sizeof path, &m, &n, msg,
                                           sizeof msg, &err);
  CHECKF(st == GF_OK, "%s: %s", what, err.msg);
  if (st != GF_OK) return;
  ckpt_path(want, sizeof want, dir, want_step);
  CHECKF(strcmp(path, want) == 0, "%s: got %s", what, path);
  CHECKF(m.step == want_step, "%s: step %lld", what, (long long)m.step);
  CHECKF(n == want_skipped, "%s: skipped %d", what, n);
  if (skipped_name)
    CHECKF(strstr(msg, skipped_name) != NULL, "%s: skip message '%s'", what, msg);
  else
    CHECKF(msg[0] == '\0', "%s: skip message '%s'", what, msg);
}

static void test_corruption(gf_ctx *ctx, const gf_model_config *cfg) {
  gf_err err;
  gf_tensor real;
  int64_t rs[4] = {2, cfg->image_channels, cfg->image_height, cfg->image_width};
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  fill_real(&real);
  gf_gan g;
  make_gan(&g, ctx, cfg, 2, 3, 1, &real);
  char dir[512], p3[1024], p[1024];
  tu_mkdtemp(dir, sizeof dir);
  gf_ckpt_meta m;
  for (int s = 1; s <= 3; s++) {
    meta_for(&m, &g, s);
    REQUIRE(gf_checkpoint_save(dir, &g, &m, 0, NULL, 0, &err) == GF_OK);
  }
  expect_latest(dir, 3, 0, NULL, "all good");
  ckpt_path(p3, sizeof p3, dir, 3);
  size_t len;
  unsigned char *good = tu_read(p3, &len);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | good[i];
  REQUIRE(hlen + 8 < len);
  const char *name3 = "ckpt-000000000003.safetensors";

  /* Truncated at several points, including zero length. */
  const size_t cuts[] = {0, 1, 7, 8, 20, (size_t)hlen + 7, (size_t)hlen + 8,
                         (size_t)hlen + 9, len / 2, len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    tu_write(p3, good, cuts[i]);
    char what[64];
    snprintf(what, sizeof what, "truncated at %zu of %zu", cuts[i], len);
    expect_latest(dir, 2, 1, name3, what);
  }
  /* One byte flipped in the data, at its start, middle and end. */
  const size_t flips[] = {(size_t)hlen + 8, (size_t)hlen + 8 + (len - hlen - 8) / 2,
                          len - 1};
  for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
    unsigned char *b = malloc(len);
    REQUIRE(b != NULL);
    memcpy(b, good, len);
    b[flips[i]] ^= 0x01;
    tu_write(p3, b, len);
    expect_latest(dir, 2, 1, name3, "flipped data byte");
    free(b);
  }
  {
    /* The skip reason says why: the digest. */
    char path[1024], msg[600];
    int n;
    unsigned char *b = malloc(len);
    REQUIRE(b != NULL);
    memcpy(b, good, len);
    b[len - 2] ^= 0x80;
    tu_write(p3, b, len);
    REQUIRE(gf_checkpoint_find_latest(dir, path, sizeof path, NULL, &n, msg,
                                      sizeof msg, &err) == GF_OK);
    CHECKF(strstr(msg, "sha") || strstr(msg, "digest") || strstr(msg, "SHA"),
           "reason: %s", msg);
    free(b);
  }
  /* Header garbage: bytes of the JSON replaced, then the length itself. */
  {
    unsigned char *b = malloc(len);
    REQUIRE(b != NULL);
    memcpy(b, good, len);
    memset(b + 8, 'x', 16);
    tu_write(p3, b, len);
    expect_latest(dir, 2, 1, name3, "header garbage");
    memcpy(b, good, len);
    b[8 + hlen / 2] = '\0';
    tu_write(p3, b, len);
    expect_latest(dir, 2, 1, name3, "NUL in header");
    memcpy(b, good, len);
    memset(b, 0xff, 8);
    tu_write(p3, b, len);
    expect_latest(dir, 2, 1, name3, "huge header length");
    /* A digit of the stored step changed: metadata garbage. */
    memcpy(b, good, len);
    const char *key = "\"ganflow.step\":\"";
    unsigned char *at = NULL;
    for (size_t i = 8; i + strlen(key) < 8 + hlen; i++)
      if (!memcmp(b + i, key, strlen(key))) at = b + i + strlen(key);
    REQUIRE(at != NULL);
    *at = 'z';
    tu_write(p3, b, len);
    expect_latest(dir, 2, 1, name3, "metadata garbage");
    free(b);
  }
  /* A valid checkpoint under the wrong name (its metadata says step 3). */
  tu_write(p3, good, len);
  ckpt_path(p, sizeof p, dir, 8);
  tu_write(p, good, len);
  expect_latest(dir, 3, 1, "ckpt-000000000008", "misnamed copy");
  unlink(p);
  /* A directory where a checkpoint should be. */
  ckpt_path(p, sizeof p, dir, 9);
  REQUIRE(mkdir(p, 0755) == 0);
  expect_latest(dir, 3, 1, "ckpt-000000000009", "directory");
  rmdir(p);
  /* A complete temporary file of a newer step is ignored, not counted. */
  snprintf(p, sizeof p, "%s/ckpt-000000000004.safetensors.tmp.Zy9x8W", dir);
  tu_write(p, good, len);
  expect_latest(dir, 3, 0, NULL, "stale tmp file");
  /* Two newest corrupted: both skipped. */
  tu_write(p3, good, len / 3);
  char p2[1024];
  ckpt_path(p2, sizeof p2, dir, 2);
  size_t len2;
  unsigned char *good2 = tu_read(p2, &len2);
  tu_write(p2, "", 0);
  expect_latest(dir, 1, 2, "ckpt-000000000002", "two corrupted");
  /* All corrupted: GF_ENOTFOUND, every one counted. */
  char p1[1024];
  ckpt_path(p1, sizeof p1, dir, 1);
  tu_write(p1, "garbage!garbage!", 16);
  char path[1024], msg[600];
  int n = -1;
  CHECK(gf_checkpoint_find_latest(dir, path, sizeof path, NULL, &n, msg,
                                  sizeof msg, &err) == GF_ENOTFOUND);
  CHECK_INT_EQ(n, 3);
  CHECK(strstr(msg, "ckpt-000000000001") != NULL);
  /* An empty or missing directory: GF_ENOTFOUND. */
  tu_rmdir(dir);
  CHECK(gf_checkpoint_find_latest(dir, path, sizeof path, NULL, NULL, NULL, 0,
                                  &err) == GF_ENOTFOUND);
  tu_mkdtemp(dir, sizeof dir);
  CHECK(gf_checkpoint_find_latest(dir, path, sizeof path, NULL, NULL, NULL, 0,
                                  &err) == GF_ENOTFOUND);
  /* Too small a path buffer. */
  ckpt_path(p, sizeof p, dir, 1);
  tu_write(p, good2, len2); /* step-2 metadata under name 1: skipped */
  meta_for(&m, &g, 5);
  REQUIRE(gf_checkpoint_save(dir, &g, &m, 0, NULL, 0, &err) == GF_OK);
  char small[8];
  CHECK(gf_checkpoint_find_latest(dir, small, sizeof small, NULL, NULL, NULL, 0,
                                  &err) == GF_EINVAL);
  free(good2);
  free(good);
  gf_gan_free(&g);
  gf_tensor_free(&real);
  tu_rmdir(dir);
}

/* ---- inspect ------------------------------------------------------------ */

/* Runs `ganflow ARGS > out 2> err`, returns the exit status and the
 * captured stdout (malloc'd) in *out_text. */
static int run_ganflow(const char *args, const char *tmpdir, char **out_text) {
  char cmd[4096], out[1024];
  snprintf(out, sizeof out, "%s/ganflow.out", tmpdir);
  snprintf(cmd, sizeof cmd, "'%s' %s > '%s' 2>&1", g_ganflow_bin, args, out);
  int rc = system(cmd);
  REQUIRE(rc != -1 && WIFEXITED(rc));
  *out_text = tu_read_text(tmpdir, "ganflow.out");
  return WEXITSTATUS(rc);
}

static void test_inspect(gf_ctx *ctx, const gf_model_config *cfg) {
  gf_err err;
  gf_tensor real;
  int64_t rs[4] = {2, cfg->image_channels, cfg->image_height, cfg->image_width};
  REQUIRE(gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) == GF_OK);
  fill_real(&real);
  gf_gan g;
  make_gan(&g, ctx, cfg, 2, 3, 1, &real);
  char dir[512], path[1100], mdir[1024], args[2300];
  tu_mkdtemp(dir, sizeof dir);
  gf_ckpt_meta m;
  meta_for(&m, &g, 17);
  REQUIRE(gf_checkpoint_save(dir, &g, &m, 0, path, sizeof path, &err) == GF_OK);

  /* A checkpoint, into a tmpfile. */
  FILE *f = tmpfile();
  REQUIRE(f != NULL);
  CHECK(gf_inspect_print(path, f, &err) == GF_OK);
  char *s = slurp(f);
  fclose(f);
  const char *ckpt_fields[] = {"checkpoint: ", "step: 17", "epoch: 1 (offset 64",
                               "seed: 99", "world_size: 1", "run_id: 0123abcd",
                               "config: dcgan, z_dim 16, image 28x28x1, ngf 8, ndf 8",
                               " OK", "g.main.0.weight", "d.main.0.weight.adam_m",
                               "g.adam_step", "I64", "F32", "[16, 32, 7, 7]"};
  for (size_t i = 0; i < sizeof ckpt_fields / sizeof ckpt_fields[0]; i++)
    CHECKF(strstr(s, ckpt_fields[i]) != NULL, "inspect checkpoint: no '%s' in\n%s",
           ckpt_fields[i], s);
  free(s);

  /* A model directory written by gf_mlmodel_write: G values only. */
  snprintf(mdir, sizeof mdir, "%s/model", dir);
  gf_st_tensor_desc d[GF_NET_MAX_TENSORS];
  for (int i = 0; i < g.g.n_tensors; i++) {
    const gf_param *p = &g.g.tensors[i];
    d[i].name = p->name + 2; /* state_dict name without "g." */
    d[i].dtype = GF_ST_F32;
    d[i].ndim = p->value.ndim;
    d[i].shape = p->value.shape;
    d[i].data = p->value.data;
  }
  gf_mlmodel_info info = {"model", "0123abcd", "2.17.0", "0.1.0", NULL};
  REQUIRE(gf_mlmodel_write(mdir, &g.cfg, d, (size_t)g.g.n_tensors, NULL, 0, &info,
                           NULL, &err) == GF_OK);
  f = tmpfile();
  REQUIRE(f != NULL);
  CHECK(gf_inspect_print(mdir, f, &err) == GF_OK);
  s = slurp(f);
  fclose(f);
  const char *model_fields[] = {"model directory: ", "artifact_path: model",
                                "run_id: 0123abcd", "model_uuid: ",
                                "utc_time_created: ", "mlflow_version: 2.17.0",
                                "ganflow_version: 0.1.0", "generator.safetensors",
                                "config.json", "main.0.weight", "ngf 8",
                                ("signature inputs: seed long (optional), z "
                                 "array<double> (optional)"),
                                "signature outputs: image float32 [-1, ",
                                "python_function: loader_module ganflow_pyfunc",
                                "code/ganflow_pyfunc.py"};
  for (size_t i = 0; i < sizeof model_fields / sizeof model_fields[0]; i++)
    CHECKF(strstr(s, model_fields[i]) != NULL, "inspect model: no '%s' in\n%s",
           model_fields[i], s);
  CHECK(strstr(s, "MISMATCH") == NULL);
  free(s);

  /* The binary: both, then errors. */
  char *out;
  snprintf(args, sizeof args, "inspect '%s'", path);
  CHECK_INT_EQ(run_ganflow(args, dir, &out), 0);
  CHECK(strstr(out, "step: 17") && strstr(out, "g.adam_step"));
  free(out);
  snprintf(args, sizeof args, "inspect '%s'", mdir);
  CHECK_INT_EQ(run_ganflow(args, dir, &out), 0);
  CHECK(strstr(out, "ganflow_version: 0.1.0") && strstr(out, "main.0.weight"));
  free(out);
  CHECK_INT_EQ(run_ganflow("--help", dir, &out), 0);
  CHECK(strstr(out, "inspect") != NULL);
  free(out);
  CHECK_INT_EQ(run_ganflow("inspect --help", dir, &out), 0);
  free(out);
  CHECK_INT_EQ(run_ganflow("", dir, &out), 2);
  free(out);
  CHECK_INT_EQ(run_ganflow("inspect", dir, &out), 2);
  free(out);
  CHECK_INT_EQ(run_ganflow("inspect a b", dir, &out), 2);
  free(out);
  CHECK_INT_EQ(run_ganflow("frobnicate", dir, &out), 2);
  CHECK(strstr(out, "unknown command") != NULL);
  free(out);
  snprintf(args, sizeof args, "inspect '%s/nothing-here'", dir);
  CHECK_INT_EQ(run_ganflow(args, dir, &out), 1);
  CHECK(strstr(out, "nothing-here") != NULL);
  free(out);

  /* A flipped data byte: described, reported, exit 1. */
  size_t len;
  unsigned char *b = tu_read(path, &len);
  b[len - 1] ^= 0x01;
  tu_write(path, b, len);
  f = tmpfile();
  REQUIRE(f != NULL);
  CHECK(gf_inspect_print(path, f, &err) == GF_EINTEGRITY);
  s = slurp(f);
  fclose(f);
  CHECK(strstr(s, "MISMATCH") && strstr(s, "step: 17"));
  free(s);
  snprintf(args, sizeof args, "inspect '%s'", path);
  CHECK_INT_EQ(run_ganflow(args, dir, &out), 1);
  free(out);
  /* Truncated: cannot be parsed, error. */
  tu_write(path, b, len / 2);
  f = tmpfile();
  REQUIRE(f != NULL);
  CHECK(gf_inspect_print(path, f, &err) != GF_OK);
  fclose(f);
  free(b);
  /* A model file changed after writing. */
  snprintf(path, sizeof path, "%s/config.json", mdir);
  tu_write(path, "{}", 2);
  f = tmpfile();
  REQUIRE(f != NULL);
  CHECK(gf_inspect_print(mdir, f, &err) == GF_EINTEGRITY);
  s = slurp(f);
  fclose(f);
  CHECK(strstr(s, "MISMATCH") != NULL);
  free(s);
  CHECK(gf_inspect_print(NULL, stdout, &err) == GF_EINVAL);

  gf_gan_free(&g);
  gf_tensor_free(&real);
  tu_rmdir(dir);
}

int main(int argc, char **argv) {
  REQUIRE(argc == 2); /* the path of the built ganflow binary */
  g_ganflow_bin = argv[1];
  gf_ctx ctx;
  gf_err err = {0};
  gf_ctx_config cc = {GF_BACKEND_CPU, 2, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&ctx, &cc, &err) == GF_OK);
  gf_model_config dc;
  gf_model_config_default(&dc, GF_ARCH_DCGAN);
  dc.image_height = dc.image_width = 28;
  dc.image_channels = 1;
  dc.z_dim = 16;
  dc.ngf = dc.ndf = 8;
  test_round_trip(&ctx, &dc, 4, "dcgan-28", 1);
  gf_model_config mc;
  gf_model_config_default(&mc, GF_ARCH_MLP);
  test_round_trip(&ctx, &mc, 4, "mlp", 0);
  test_keep(&ctx, &dc);
  test_corruption(&ctx, &dc);
  test_inspect(&ctx, &dc);
  gf_ctx_free(&ctx);
  return check_report();
}
