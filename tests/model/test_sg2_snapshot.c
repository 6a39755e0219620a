/* test_sg2_snapshot.c - gf_sg2_snapshot_read on the fixtures that
 * golden/make_stylegan_goldens.py made with the official StyleGAN2-ADA code
 * (data/sg2_tiny.pkl, data/sg2_tiny_cond.pkl): every tensor's name and
 * shape against the list the script wrote (golden/stylegan_*_tensors.txt),
 * the values of the tensors the goldens file copies, the kwargs, augment
 * p; then the refusals: a truncated copy, a byte flipped in a global name
 * (outer pickle and a storage's inner pickle), a storage of another dtype,
 * a snapshot without G_ema; and a sweep of random byte changes (an error
 * or a result, never a crash, sanitizers watching).
 * The fuzz seeds of one layer in float16 and float64 check the conversion
 * and the refusal by dtype.
 * Usage: test_sg2_snapshot DATA_DIR GOLDEN_DIR FUZZ_CORPUS_DIR */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gf/file.h"
#include "gf/safetensors.h"
#include "gf/sg2_snapshot.h"

static const char *g_data, *g_golden;

static const gf_sg2_snap_net *net_of(const gf_sg2_snapshot *s, const char *name) {
  if (strcmp(name, "G") == 0) return &s->G;
  if (strcmp(name, "D") == 0) return &s->D;
  if (strcmp(name, "G_ema") == 0) return &s->G_ema;
  if (strcmp(name, "augment_pipe") == 0) return &s->augment_pipe;
  return NULL;
}

/* Every line "NET NAME DIM..." of the list, in order, against the nets. */
static void check_list(const gf_sg2_snapshot *s, const char *list_path) {
  char *text;
  size_t len;
  gf_err err;
  REQUIRE(gf_read_file(list_path, 1 << 20, &text, &len, &err) == GF_OK);
  size_t seen[4] = {0};
  const char *nets[4] = {"G", "D", "G_ema", "augment_pipe"};
  char *save = NULL;
  size_t lines = 0;
  for (char *line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    char *f = NULL, *net = strtok_r(line, " ", &f),
         *name = strtok_r(NULL, " ", &f);
    REQUIRE(net && name);
    int k = 0;
    while (k < 4 && strcmp(nets[k], net) != 0) k++;
    REQUIRE(k < 4);
    const gf_sg2_snap_net *n = net_of(s, net);
    lines++;
    if (seen[k] >= n->n_tensors) {
      CHECKF(0, "%s %s: the reader has only %zu tensors", net, name,
             n->n_tensors);
      continue;
    }
    const gf_sg2_snap_tensor *t = &n->tensors[seen[k]++];
    CHECKF(strcmp(t->name, name) == 0, "%s tensor %zu: %s, want %s", net,
           seen[k] - 1, t->name, name);
    int ndim = 0;
    size_t numel = 1;
    for (char *d = strtok_r(NULL, " ", &f); d;
         d = strtok_r(NULL, " ", &f), ndim++) {
      long long v = atoll(d);
      CHECKF(ndim < t->ndim && t->shape[ndim] == v, "%s %s dim %d", net, name,
             ndim);
      numel *= (size_t)v;
    }
    CHECKF(ndim == t->ndim && numel == t->numel, "%s %s: ndim %d numel %zu",
           net, name, t->ndim, t->numel);
  }
  for (int k = 0; k < 4; k++)
    CHECKF(seen[k] == net_of(s, nets[k])->n_tensors, "%s: %zu listed, %zu read",
           nets[k], seen[k], net_of(s, nets[k])->n_tensors);
  CHECK(lines > 100);
  free(text);
}

/* The goldens file's copies "NET/NAME" equal the tensors read, bit for bit. */
static void check_values(const gf_sg2_snapshot *s, const char *golden_path) {
  gf_st_file f;
  gf_err err;
  REQUIRE(gf_st_open(&f, golden_path, 0, &err) == GF_OK);
  size_t copies = 0;
  for (size_t i = 0; i < f.n_tensors; i++) {
    const gf_st_tensor *g = &f.tensors[i];
    const char *slash = strchr(g->name, '/');
    if (!slash) continue;
    char net[32];
    snprintf(net, sizeof net, "%.*s", (int)(slash - g->name), g->name);
    const gf_sg2_snap_net *n = net_of(s, net);
    REQUIRE(n && g->dtype == GF_ST_F32);
    const gf_sg2_snap_tensor *t = gf_sg2_snap_find(n, slash + 1);
    CHECKF(t != NULL, "%s not read", g->name);
    if (!t) continue;
    CHECKF(t->numel == g->numel && t->ndim == g->ndim, "%s: size", g->name);
    if (t->numel != g->numel) continue;
    size_t diff = 0;
    for (size_t k = 0; k < t->numel; k++) {
      float v;
      memcpy(&v, (const uint8_t *)g->data + 4 * k, 4);
      diff += memcmp(&v, &t->data[k], 4) != 0;
    }
    CHECKF(diff == 0, "%s: %zu of %zu values differ", g->name, diff, t->numel);
    copies++;
  }
  CHECK(copies >= 8);
  gf_st_file_free(&f);
}

static void check_fixture(const char *stem, int cond) {
  char path[512], list[512], golden[512];
  snprintf(path, sizeof path, "%s/sg2_%s.pkl", g_data, stem);
  snprintf(list, sizeof list, "%s/stylegan_%s_tensors.txt", g_golden, stem);
  snprintf(golden, sizeof golden, "%s/stylegan_%s.safetensors", g_golden, stem);
  gf_sg2_snapshot s;
  gf_err err = {0};
  gf_status st = gf_sg2_snapshot_read(path, &s, &err);
  CHECKF(st == GF_OK, "%s: %s", path, err.msg);
  if (st != GF_OK) return;
  CHECK(s.G.present && s.D.present && s.G_ema.present &&
        s.augment_pipe.present);
  check_list(&s, list);
  check_values(&s, golden);

  int64_t res = cond ? 16 : 32, cbase = cond ? 64 : 128;
  const gf_sg2_snap_net *gs[2] = {&s.G, &s.G_ema};
  for (int k = 0; k < 2; k++) {
    const gf_sg2_snap_net *g = gs[k];
    CHECK_STR_EQ(g->class_name, "Generator");
    CHECK_INT_EQ(g->z_dim, 32);
    CHECK_INT_EQ(g->w_dim, 32);
    CHECK_INT_EQ(g->c_dim, cond ? 3 : 0);
    CHECK_INT_EQ(g->img_resolution, res);
    CHECK_INT_EQ(g->img_channels, 3);
    CHECK_INT_EQ(g->mapping_layers, 2);
    CHECK_INT_EQ(g->channel_base, cbase);
    CHECK_INT_EQ(g->channel_max, 16);
    CHECK_INT_EQ(g->num_fp16_res, 4);
    CHECK_INT_EQ(g->conv_clamp, 256);
    CHECK_STR_EQ(g->architecture, "skip"); /* the default: not a kwarg */
    CHECK_INT_EQ(g->n_extra, 0);
    CHECK_INT_EQ(g->mbstd_group_size, -1);
  }
  const gf_sg2_snap_net *d = &s.D;
  CHECK_STR_EQ(d->class_name, "Discriminator");
  CHECK_INT_EQ(d->c_dim, cond ? 3 : 0);
  CHECK_INT_EQ(d->img_resolution, res);
  CHECK_INT_EQ(d->img_channels, 3);
  CHECK_INT_EQ(d->channel_base, cbase);
  CHECK_INT_EQ(d->channel_max, 16);
  CHECK_INT_EQ(d->num_fp16_res, 4);
  CHECK_INT_EQ(d->conv_clamp, 256);
  CHECK_STR_EQ(d->architecture, "resnet");
  CHECK_INT_EQ(d->mbstd_group_size, 2);
  CHECK_INT_EQ(d->mbstd_num_channels, 1);
  CHECK_INT_EQ(d->z_dim, -1);
  CHECK_INT_EQ(d->n_extra, 2); /* block_kwargs {}, mapping_kwargs {} */
  CHECK_STR_EQ(gf_sg2_snap_extra(d, "block_kwargs"), "{}");
  CHECK_STR_EQ(gf_sg2_snap_extra(d, "mapping_kwargs"), "{}");
  CHECK(gf_sg2_snap_find(d, "mapping.embed.weight") != NULL || !cond);
  const gf_sg2_snap_net *a = &s.augment_pipe;
  CHECK_STR_EQ(a->class_name, "AugmentPipe");
  CHECK_STR_EQ(gf_sg2_snap_extra(a, "xflip"), "1");
  CHECK_STR_EQ(gf_sg2_snap_extra(a, "saturation"), "1");
  CHECK(gf_sg2_snap_extra(a, "noise") == NULL); /* not given: not recorded */
  CHECK_INT_EQ(a->n_extra, 12);
  CHECK(s.has_augment_p && s.augment_p == 0.25f);
  const gf_sg2_snap_tensor *c = gf_sg2_snap_find(&s.G_ema, "synthesis.b4.const");
  CHECK(c && c->ndim == 3 && c->shape[0] == 16 && c->shape[1] == 4 &&
        c->shape[2] == 4);
  const gf_sg2_snap_tensor *p = gf_sg2_snap_find(a, "p");
  CHECK(p && p->ndim == 0 && p->numel == 1);
  gf_sg2_snapshot_free(&s);
  gf_sg2_snapshot_free(&s); /* twice is fine */
}

/* Parses an exact-size copy; expects code and text in the message. */
static void refused(const uint8_t *b, size_t len, gf_status code,
                    const char *text) {
  uint8_t *copy = malloc(len ? len : 1);
  REQUIRE(copy != NULL);
  memcpy(copy, b, len);
  gf_sg2_snapshot s;
  gf_err err = {0};
  gf_status st = gf_sg2_snapshot_parse(copy, len, &s, &err);
  CHECKF(st == code, "%s: got %s (%s)", text, gf_status_name(st), err.msg);
  CHECKF(strstr(err.msg, text) != NULL, "\"%s\" not in \"%s\"", text, err.msg);
  CHECK(s.G_ema.n_tensors == 0 && s.G.tensors == NULL);
  free(copy);
}

/* Replaces the first occurrence of from (same length as to) in a copy. */
static uint8_t *replaced(const uint8_t *b, size_t len, const char *from,
                         const char *to) {
  size_t n = strlen(from);
  REQUIRE(strlen(to) == n);
  uint8_t *c = malloc(len);
  REQUIRE(c != NULL);
  memcpy(c, b, len);
  for (size_t i = 0; i + n <= len; i++) {
    if (memcmp(c + i, from, n) == 0) {
      memcpy(c + i, to, n);
      return c;
    }
  }
  REQUIRE(!"pattern not found");
  return NULL;
}

static void check_refusals(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/sg2_tiny.pkl", g_data);
  char *text;
  size_t len;
  gf_err err;
  REQUIRE(gf_read_file(path, 1 << 24, &text, &len, &err) == GF_OK);
  const uint8_t *b = (const uint8_t *)text;

  char want[64];
  snprintf(want, sizeof want, "truncated at byte %zu", len / 2);
  refused(b, len / 2, GF_EFORMAT, want);
  refused(b, len - 1, GF_EFORMAT, "truncated at byte");
  refused(b, 0, GF_EFORMAT, "truncated at byte 0");

  uint8_t *c = replaced(b, len, "OrderedDict", "OrderedDicu");
  refused(c, len, GF_EINVAL,
          "global collections.OrderedDicu is not allowed (byte ");
  free(c);
  c = replaced(b, len, "_reconstruct_persistent_obj",
               "_reconstruct_persistent_obk");
  refused(c, len, GF_EINVAL,
          "global torch_utils.persistence._reconstruct_persistent_obk is not "
          "allowed");
  free(c);
  /* the first storage's inner pickle names another class */
  c = replaced(b, len, "torch\nFloatStorage", "torch\nFloatStoragf");
  refused(c, len, GF_EINVAL, "global torch.FloatStoragf is not allowed");
  CHECK(1);
  free(c);
  /* ... or an allowed storage of another dtype (same name length) */
  c = replaced(b, len, "torch\nFloatStorage", "torch\nShortStorage");
  refused(c, len, GF_EUNSUPPORTED, "G tensor 'synthesis.b4.const' is int16");
  free(c);
  c = replaced(b, len, "\x8c\x05G_ema", "\x8c\x05G_emX");
  refused(c, len, GF_EFORMAT, "not a StyleGAN2-ADA snapshot: no key 'G_ema'");
  free(c);
  /* module_src must be a string: its key renamed, it is missing */
  c = replaced(b, len, "module_src", "module_srd");
  refused(c, len, GF_EFORMAT, "persistence record without");
  free(c);

  /* random byte changes: a result or an error, never a crash */
  uint32_t x = 12345;
  size_t ok = 0, n = 300;
  c = malloc(len);
  REQUIRE(c != NULL);
  for (size_t k = 0; k < n; k++) {
    memcpy(c, b, len);
    for (int j = 0; j < 3; j++) {
      x = x * 1664525u + 1013904223u;
      size_t at = (x >> 8) % len;
      x = x * 1664525u + 1013904223u;
      c[at] = (uint8_t)(x >> 24);
    }
    gf_sg2_snapshot s;
    gf_status st = gf_sg2_snapshot_parse(c, len, &s, &err);
    ok += st == GF_OK;
    CHECK(st == GF_OK || err.msg[0] != '\0');
    gf_sg2_snapshot_free(&s);
  }
  printf("random changes: %zu of %zu still read\n", ok, n);
  free(c);
  free(text);

  /* a file that is not there */
  gf_sg2_snapshot s;
  CHECK(gf_sg2_snapshot_read("/nonexistent/x.pkl", &s, &err) == GF_ENOTFOUND);
}

/* The fuzz seeds {'G_ema': FullyConnectedLayer(3, 2)}: float16 converted
 * exactly (make_stylegan_goldens.py's FC_WEIGHT, FC_BIAS), float64 refused. */
static void check_dtypes(const char *corpus) {
  static const float want_w[6] = {0.5f,     -1.25f,   3.0f,
                                  65504.0f, 0x1p-24f, -0.0f};
  static const float want_b[2] = {1.0f, -2.0f};
  const char *tags[2] = {"f32", "f16"};
  for (int k = 0; k < 2; k++) {
    char path[512];
    snprintf(path, sizeof path, "%s/sg2_fc_%s.pkl", corpus, tags[k]);
    gf_sg2_snapshot s;
    gf_err err = {0};
    gf_status st = gf_sg2_snapshot_read(path, &s, &err);
    CHECKF(st == GF_OK, "%s: %s", path, err.msg);
    if (st != GF_OK) continue;
    CHECK(!s.G.present && !s.D.present && s.G_ema.present &&
          !s.augment_pipe.present);
    CHECK(!s.has_augment_p);
    CHECK_STR_EQ(s.G_ema.class_name, "FullyConnectedLayer");
    CHECK_INT_EQ(s.G_ema.n_tensors, 2);
    const gf_sg2_snap_tensor *w = gf_sg2_snap_find(&s.G_ema, "weight");
    const gf_sg2_snap_tensor *b = gf_sg2_snap_find(&s.G_ema, "bias");
    REQUIRE(w && b && w->numel == 6 && b->numel == 2);
    CHECK(w->ndim == 2 && w->shape[0] == 2 && w->shape[1] == 3);
    CHECK(memcmp(w->data, want_w, sizeof want_w) == 0); /* -0.0 too */
    CHECK(memcmp(b->data, want_b, sizeof want_b) == 0);
    CHECK_STR_EQ(gf_sg2_snap_extra(&s.G_ema, "args.0"), "3");
    CHECK_STR_EQ(gf_sg2_snap_extra(&s.G_ema, "args.1"), "2");
    gf_sg2_snapshot_free(&s);
  }
  char path[512];
  snprintf(path, sizeof path, "%s/sg2_fc_f64.pkl", corpus);
  gf_sg2_snapshot s;
  gf_err err = {0};
  CHECK(gf_sg2_snapshot_read(path, &s, &err) == GF_EUNSUPPORTED);
  CHECKF(strstr(err.msg, "G_ema tensor 'weight' is float64") != NULL, "%s",
         err.msg);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s DATA_DIR GOLDEN_DIR FUZZ_CORPUS_DIR\n", argv[0]);
    return 2;
  }
  g_data = argv[1];
  g_golden = argv[2];
  check_fixture("tiny", 0);
  check_fixture("tiny_cond", 1);
  check_refusals();
  check_dtypes(argv[3]);
  return check_report();
}
