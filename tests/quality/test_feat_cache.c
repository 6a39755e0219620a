/* test_feat_cache.c - the feature cache: file names from the key, the
 * default directory from the environment, a bit-exact round trip, and every
 * refusal of the reader (absent file, another key, truncated, flipped
 * bytes, wrong shapes, dtypes, tensors, format, version, metadata,
 * non-finite values), each naming the file and the field.
 *
 *   test_feat_cache --write-corpus DIR   writes the fuzz seed corpus
 *   (tests/fuzz/corpus/feat_cache/) with the key of fuzz_feat_cache.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "file_util.h"
#include "gf/atomic_file.h"
#include "gf/feat_cache.h"
#include "gf/fs.h"
#include "gf/safetensors.h"
#include "metrics_test_data.h"

#define NET_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define NET_B "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define DATA_A "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define DATA_B "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

/* Writes a file like the cache writer's, with the given changes: for
 * making broken files. meta_key/meta_val replace (or, when the key is new,
 * add) one metadata entry, meta_val NULL removes it; `variant` changes the
 * tensors:
 *   0 as written by gf_feat_cache_write
 *   1 mean has dim + 1 entries      2 cov is F32
 *   3 features has count - 1 rows   4 no cov
 *   5 an extra tensor               6 mean[0] is NaN
 *   7 cov [dim, dim + 1]
 * digest 0: no data digest. */
static void craft(const char *path, const gf_feat_cache_key *key,
                  const float *feats, const gf_feat_moments *m,
                  const char *meta_key, const char *meta_val, int variant,
                  int digest) {
  int64_t fshape[2] = {key->count, key->dim};
  int64_t mshape[1] = {key->dim};
  int64_t cshape[2] = {key->dim, key->dim};
  const size_t d = (size_t)key->dim;
  double *mean = calloc(d + 1, sizeof *mean);
  double *cov = calloc(d * (d + 1), sizeof *cov);
  float *cov32 = calloc(d * d, sizeof *cov32);
  REQUIRE(mean && cov && cov32);
  memcpy(mean, m->mean, d * sizeof *mean);
  memcpy(cov, m->cov, d * d * sizeof *cov);
  for (size_t i = 0; i < d * d; i++) cov32[i] = (float)cov[i];
  gf_st_tensor_desc t[4] = {
      {"features", GF_ST_F32, 2, fshape, feats},
      {"mean", GF_ST_F64, 1, mshape, mean},
      {"cov", GF_ST_F64, 2, cshape, cov},
  };
  size_t nt = 3;
  if (variant == 1) mshape[0] = key->dim + 1;
  if (variant == 2) t[2] = (gf_st_tensor_desc){"cov", GF_ST_F32, 2, cshape, cov32};
  if (variant == 3) fshape[0] = key->count - 1;
  if (variant == 4) nt = 2;
  if (variant == 5) t[nt++] = (gf_st_tensor_desc){"extra", GF_ST_F64, 1, mshape, mean};
  if (variant == 6) mean[0] = NAN;
  if (variant == 7) cshape[1] = key->dim + 1;
  char count[24], dim[16];
  snprintf(count, sizeof count, "%lld", (long long)key->count);
  snprintf(dim, sizeof dim, "%d", key->dim);
  gf_st_kv meta[8] = {
      {"format", GF_FEAT_CACHE_FORMAT}, {"version", GF_FEAT_CACHE_VERSION},
      {"network_sha256", key->network_sha256}, {"data_sha256", key->data_sha256},
      {"preprocess", key->preprocess}, {"count", count}, {"dim", dim},
  };
  size_t nm = 7;
  if (meta_key) {
    size_t i = 0;
    while (i < nm && strcmp(meta[i].key, meta_key) != 0) i++;
    if (i == nm) nm++;
    meta[i] = (gf_st_kv){meta_key, meta_val};
    if (!meta_val) meta[i] = meta[--nm];
  }
  gf_err err = {0};
  gf_status st = gf_st_write_file(path, t, nt, meta, nm, digest ? GF_ST_DATA_SHA256 : 0, &err);
  if (st != GF_OK) fprintf(stderr, "craft %s: %s\n", path, err.msg);
  REQUIRE(st == GF_OK);
  free(mean);
  free(cov);
  free(cov32);
}

static void make_set(int n, int dim, float **feats, gf_feat_moments *m) {
  *feats = td_feature_set(3, n, dim, 0.5, 0.25);
  REQUIRE(gf_feat_moments_compute(*feats, n, dim, m, NULL) == GF_OK);
}

/* Reads path with key and expects status `want` and every `needle` (up to
 * three, NULL ends) in the message, with the outputs left empty. */
static void expect_read(const char *path, const gf_feat_cache_key *key,
                        gf_status want, const char *n1, const char *n2,
                        const char *n3) {
  float *feats = (float *)1;
  gf_feat_moments m;
  gf_err err = {0};
  gf_status st = gf_feat_cache_read(path, key, &feats, &m, &err);
  CHECKF(st == want, "%s: got %s, want %s (%s)", path, gf_status_name(st),
         gf_status_name(want), err.msg);
  const char *needles[3] = {n1, n2, n3};
  for (int i = 0; i < 3; i++)
    if (needles[i])
      CHECKF(strstr(err.msg, needles[i]) != NULL, "message \"%s\" lacks \"%s\"",
             err.msg, needles[i]);
  if (st == GF_OK) {
    CHECK(feats != NULL && m.mean != NULL && m.cov != NULL);
    gf_feat_moments_free(&m);
    free(feats);
  } else {
    CHECK(feats == NULL && m.mean == NULL && m.cov == NULL);
  }
}

static void test_path(void) {
  gf_feat_cache_key k = {NET_A, DATA_A, "u8-rgb299-nvbilinear-tf", 10000, 2048};
  char p1[256], p2[256], p3[256];
  gf_err err = {0};
  CHECKF(gf_feat_cache_path("/c/fid", &k, p1, sizeof p1, &err) == GF_OK, "%s", err.msg);
  CHECK(strncmp(p1, "/c/fid/", 7) == 0 && strlen(p1) == 7 + 16 + 12);
  CHECK(strcmp(p1 + strlen(p1) - 12, ".safetensors") == 0);
  CHECK(gf_feat_cache_path("/c/fid/", &k, p2, sizeof p2, &err) == GF_OK);
  CHECK_STR_EQ(p1, p2);
  /* Each field changes the name. */
  gf_feat_cache_key k2 = k;
  k2.network_sha256 = NET_B;
  CHECK(gf_feat_cache_path("/c/fid", &k2, p3, sizeof p3, &err) == GF_OK);
  CHECK(strcmp(p1, p3) != 0);
  k2 = k;
  k2.data_sha256 = DATA_B;
  CHECK(gf_feat_cache_path("/c/fid", &k2, p3, sizeof p3, &err) == GF_OK);
  CHECK(strcmp(p1, p3) != 0);
  k2 = k;
  k2.preprocess = "u8-rgb299-pilbicubic-tf";
  CHECK(gf_feat_cache_path("/c/fid", &k2, p3, sizeof p3, &err) == GF_OK);
  CHECK(strcmp(p1, p3) != 0);
  k2 = k;
  k2.count = 10001;
  CHECK(gf_feat_cache_path("/c/fid", &k2, p3, sizeof p3, &err) == GF_OK);
  CHECK(strcmp(p1, p3) != 0);
  /* Pinned: the name is part of the cache's contract. */
  CHECK_STR_EQ(p1, "/c/fid/5bff982bb75c8a3b.safetensors");
  /* Refusals. */
  CHECK(gf_feat_cache_path("/c/fid", &k, p3, 20, &err) == GF_EINVAL);
  CHECK(p3[0] == '\0');
  k2 = k;
  k2.network_sha256 = "ABC";
  CHECK(gf_feat_cache_path("/c/fid", &k2, p3, sizeof p3, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "network_sha256") != NULL, "%s", err.msg);
  k2 = k;
  k2.preprocess = "two\nlines";
  CHECK(gf_feat_cache_path("/c/fid", &k2, p3, sizeof p3, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "preprocess") != NULL, "%s", err.msg);
  k2 = k;
  k2.preprocess = "";
  CHECK(gf_feat_cache_path("/c/fid", &k2, p3, sizeof p3, &err) == GF_EINVAL);
  k2 = k;
  k2.count = 1;
  CHECK(gf_feat_cache_path("/c/fid", &k2, p3, sizeof p3, &err) == GF_EINVAL);
  k2 = k;
  k2.dim = 0;
  CHECK(gf_feat_cache_path("/c/fid", &k2, p3, sizeof p3, &err) == GF_EINVAL);
  CHECK(gf_feat_cache_path("/c/fid", NULL, p3, sizeof p3, &err) == GF_EINVAL);
}

static void test_default_dir(void) {
  char buf[512];
  gf_err err = {0};
  setenv("GANFLOW_CACHE_DIR", "/g/cache/", 1);
  setenv("XDG_CACHE_HOME", "/x", 1);
  setenv("HOME", "/h", 1);
  CHECK(gf_feat_cache_default_dir(buf, sizeof buf, &err) == GF_OK);
  CHECK_STR_EQ(buf, "/g/cache/fid");
  setenv("GANFLOW_CACHE_DIR", "", 1);
  CHECK(gf_feat_cache_default_dir(buf, sizeof buf, &err) == GF_OK);
  CHECK_STR_EQ(buf, "/x/ganflow/fid");
  setenv("XDG_CACHE_HOME", "relative", 1);
  CHECK(gf_feat_cache_default_dir(buf, sizeof buf, &err) == GF_OK);
  CHECK_STR_EQ(buf, "/h/.cache/ganflow/fid");
  unsetenv("GANFLOW_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  CHECK(gf_feat_cache_default_dir(buf, sizeof buf, &err) == GF_OK);
  CHECK_STR_EQ(buf, "/h/.cache/ganflow/fid");
  CHECK(gf_feat_cache_default_dir(buf, 8, &err) == GF_EINVAL);
  CHECK(buf[0] == '\0');
  unsetenv("HOME");
  CHECK(gf_feat_cache_default_dir(buf, sizeof buf, &err) == GF_ENOTFOUND);
}

static void test_round_trip_and_refusals(const char *tmp) {
  const int n = 37, dim = 6;
  float *feats;
  gf_feat_moments m;
  make_set(n, dim, &feats, &m);
  gf_feat_cache_key key = {NET_A, DATA_A, "u8-rgb299-nvbilinear-tf", n, dim};
  char dir[1024], path[1200];
  snprintf(dir, sizeof dir, "%s/nested/cache", tmp);
  gf_err err = {0};
  REQUIRE(gf_feat_cache_path(dir, &key, path, sizeof path, &err) == GF_OK);

  expect_read(path, &key, GF_ENOTFOUND, path, NULL, NULL);
  CHECKF(gf_feat_cache_write(path, &key, feats, &m, &err) == GF_OK, "%s", err.msg);

  float *got = NULL;
  gf_feat_moments gm;
  CHECKF(gf_feat_cache_read(path, &key, &got, &gm, &err) == GF_OK, "%s", err.msg);
  if (got) {
    CHECK(memcmp(got, feats, (size_t)n * dim * sizeof *got) == 0);
    CHECK(gm.dim == dim && gm.n == n);
    CHECK(memcmp(gm.mean, m.mean, (size_t)dim * sizeof *gm.mean) == 0);
    CHECK(memcmp(gm.cov, m.cov, (size_t)dim * dim * sizeof *gm.cov) == 0);
  }
  free(got);
  gf_feat_moments_free(&gm);
  /* Moments only; and no key check. */
  CHECK(gf_feat_cache_read(path, &key, NULL, &gm, &err) == GF_OK);
  gf_feat_moments_free(&gm);
  CHECK(gf_feat_cache_read(path, NULL, NULL, &gm, &err) == GF_OK);
  CHECK(gm.n == n && gm.dim == dim);
  gf_feat_moments_free(&gm);

  /* Another key: network, data, preprocessing, count, dim. */
  gf_feat_cache_key k2 = key;
  k2.network_sha256 = NET_B;
  expect_read(path, &k2, GF_EINVAL, path, "network_sha256", NET_A);
  k2 = key;
  k2.data_sha256 = DATA_B;
  expect_read(path, &k2, GF_EINVAL, path, "data_sha256", NULL);
  k2 = key;
  k2.preprocess = "u8-rgb299-pilbicubic-tf";
  expect_read(path, &k2, GF_EINVAL, path, "preprocess", NULL);
  k2 = key;
  k2.count = n + 1;
  expect_read(path, &k2, GF_EINVAL, path, "count 37", NULL);
  k2 = key;
  k2.dim = dim + 1;
  expect_read(path, &k2, GF_EINVAL, path, "dim 6", NULL);

  /* Truncated, flipped, empty. */
  size_t len = 0;
  uint8_t *bytes = NULL;
  {
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    fseek(f, 0, SEEK_END);
    len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    bytes = malloc(len);
    REQUIRE(bytes && fread(bytes, 1, len, f) == len);
    fclose(f);
  }
  char bad[1300];
  snprintf(bad, sizeof bad, "%s/truncated.safetensors", tmp);
  REQUIRE(gf_atomic_write_file(bad, bytes, len - 9, NULL) == GF_OK);
  expect_read(bad, &key, GF_EFORMAT, bad, NULL, NULL);
  REQUIRE(gf_atomic_write_file(bad, bytes, 5, NULL) == GF_OK);
  expect_read(bad, &key, GF_EFORMAT, bad, NULL, NULL);
  REQUIRE(gf_atomic_write_file(bad, bytes, 0, NULL) == GF_OK);
  expect_read(bad, &key, GF_EFORMAT, bad, NULL, NULL);
  bytes[len - 3] ^= 0x40; /* inside cov */
  REQUIRE(gf_atomic_write_file(bad, bytes, len, NULL) == GF_OK);
  expect_read(bad, &key, GF_EINTEGRITY, bad, NULL, NULL);
  free(bytes);
  snprintf(bad, sizeof bad, "%s", tmp); /* a directory */
  expect_read(bad, &key, GF_EIO, bad, NULL, NULL);

  /* Consistent safetensors, inconsistent cache files. */
  snprintf(bad, sizeof bad, "%s/crafted.safetensors", tmp);
  craft(bad, &key, feats, &m, NULL, NULL, 0, 1);
  expect_read(bad, &key, GF_OK, NULL, NULL, NULL); /* craft works */
  craft(bad, &key, feats, &m, NULL, NULL, 1, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "tensor mean", "[7]");
  craft(bad, &key, feats, &m, NULL, NULL, 2, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "cov is F32", NULL);
  craft(bad, &key, feats, &m, NULL, NULL, 3, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "tensor features", "[36, 6]");
  craft(bad, &key, feats, &m, NULL, NULL, 4, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "2 tensors", NULL);
  craft(bad, &key, feats, &m, NULL, NULL, 5, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "4 tensors", NULL);
  craft(bad, &key, feats, &m, NULL, NULL, 6, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "mean[0]", "not finite");
  craft(bad, &key, feats, &m, NULL, NULL, 7, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "tensor cov", NULL);
  craft(bad, &key, feats, &m, NULL, NULL, 0, 0);
  expect_read(bad, &key, GF_EFORMAT, bad, "ganflow.data_sha256", NULL);
  craft(bad, &key, feats, &m, "format", "something-else", 0, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "format", NULL);
  craft(bad, &key, feats, &m, "version", "2", 0, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "version", NULL);
  craft(bad, &key, feats, &m, "count", "036", 0, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "count", NULL);
  craft(bad, &key, feats, &m, "count", "36", 0, 1); /* metadata vs shape */
  expect_read(bad, NULL, GF_EFORMAT, bad, "features", NULL);
  expect_read(bad, &key, GF_EINVAL, bad, "count 36", NULL);
  craft(bad, &key, feats, &m, "dim", "x", 0, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "dim", NULL);
  craft(bad, &key, feats, &m, "network_sha256", NULL, 0, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "network_sha256", NULL);
  craft(bad, &key, feats, &m, "data_sha256", "not hex", 0, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "data_sha256", NULL);
  craft(bad, &key, feats, &m, "preprocess", "", 0, 1);
  expect_read(bad, &key, GF_EFORMAT, bad, "preprocess", NULL);

  /* Writer refusals: nothing is written. */
  snprintf(bad, sizeof bad, "%s/refused.safetensors", tmp);
  gf_feat_moments wrong = m;
  wrong.n = n + 1;
  CHECK(gf_feat_cache_write(bad, &key, feats, &wrong, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "moments of 38") != NULL, "%s", err.msg);
  feats[5] = INFINITY;
  CHECK(gf_feat_cache_write(bad, &key, feats, &m, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "features[0, 5]") != NULL, "%s", err.msg);
  CHECK(gf_feat_cache_write(bad, &key, NULL, &m, &err) == GF_EINVAL);
  struct stat sb;
  CHECK(stat(bad, &sb) != 0 && errno == ENOENT);

  free(feats);
  gf_feat_moments_free(&m);
}

/* The fuzz seeds: the key of tests/fuzz/fuzz_feat_cache.c (network 64 x
 * 'a', data 64 x 'b', preprocess "fuzz", count 3, dim 2). */
static int write_corpus(const char *dir) {
  gf_feat_cache_key key = {NET_A, DATA_A, "fuzz", 3, 2};
  float *feats;
  gf_feat_moments m;
  make_set(3, 2, &feats, &m);
  gf_err err = {0};
  if (gf_mkdir_p(dir, 0755, &err) != GF_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  char p[4096];
#define SEED(name) (snprintf(p, sizeof p, "%s/%s", dir, name), p)
  REQUIRE(gf_feat_cache_write(SEED("valid"), &key, feats, &m, &err) == GF_OK);
  gf_feat_cache_key other = key;
  other.network_sha256 = NET_B;
  REQUIRE(gf_feat_cache_write(SEED("valid_other_network"), &other, feats, &m, &err) == GF_OK);
  craft(SEED("bad_mean_shape"), &key, feats, &m, NULL, NULL, 1, 1);
  craft(SEED("bad_cov_dtype"), &key, feats, &m, NULL, NULL, 2, 1);
  craft(SEED("bad_features_rows"), &key, feats, &m, NULL, NULL, 3, 1);
  craft(SEED("bad_no_cov"), &key, feats, &m, NULL, NULL, 4, 1);
  craft(SEED("bad_nan_mean"), &key, feats, &m, NULL, NULL, 6, 1);
  craft(SEED("bad_no_digest"), &key, feats, &m, NULL, NULL, 0, 0);
  craft(SEED("bad_version"), &key, feats, &m, "version", "2", 0, 1);
  craft(SEED("bad_count"), &key, feats, &m, "count", "4", 0, 1);
  /* Truncated copy of the valid seed. */
  FILE *f = fopen(SEED("valid"), "rb");
  REQUIRE(f);
  uint8_t buf[4096];
  size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  REQUIRE(len > 16);
  REQUIRE(gf_atomic_write_file(SEED("bad_truncated"), buf, len - 7, NULL) == GF_OK);
#undef SEED
  free(feats);
  gf_feat_moments_free(&m);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0) return write_corpus(argv[2]);
  char tmp[512];
  tu_mkdtemp(tmp, sizeof tmp);
  test_path();
  test_round_trip_and_refusals(tmp);
  test_default_dir();
  tu_rmdir(tmp);
  return check_report();
}
