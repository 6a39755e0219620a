/* test_safetensors.c - safetensors round trips (buffer and file), layout
 * rules (alignment, stable order, 8-byte padded header), the data digest,
 * the writer's argument checks, and the atomic file write. The corruption
 * cases live in test_safetensors_corrupt.c. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gf/atomic_file.h"
#include "gf/safetensors.h"
#include "file_util.h"

static float w[2][3] = {{1.5f, -2.0f, 3.25f}, {0.0f, 1e-8f, -7.0f}};
static double dbl[4] = {1.0, 2.0, -3.5, 1e300};
static int64_t steps[1] = {123456789012345LL};
static uint8_t bytes[5] = {0, 1, 2, 254, 255};
static uint16_t half[3] = {0x3c00, 0x4000, 0xbc00};
static uint8_t flags[2] = {1, 0};
static int32_t scalar_i32 = -42;

static const int64_t shape_w[] = {2, 3}, shape_d[] = {4}, shape_s[] = {1}, shape_b[] = {5},
                     shape_h[] = {3}, shape_f[] = {2}, shape_z[] = {0, 3};

static void make_desc(gf_st_tensor_desc *t) {
  /* Deliberately not in layout order. */
  t[0] = (gf_st_tensor_desc){"weight", GF_ST_F32, 2, shape_w, w};
  t[1] = (gf_st_tensor_desc){"bytes", GF_ST_U8, 1, shape_b, bytes};
  t[2] = (gf_st_tensor_desc){"doubles", GF_ST_F64, 1, shape_d, dbl};
  t[3] = (gf_st_tensor_desc){"half", GF_ST_F16, 1, shape_h, half};
  t[4] = (gf_st_tensor_desc){"step", GF_ST_I64, 1, shape_s, steps};
  t[5] = (gf_st_tensor_desc){"flags", GF_ST_BOOL, 1, shape_f, flags};
  t[6] = (gf_st_tensor_desc){"scalar", GF_ST_I32, 0, NULL, &scalar_i32};
  t[7] = (gf_st_tensor_desc){"empty", GF_ST_BF16, 2, shape_z, NULL};
}
#define NT 8

static void check_contents(const gf_st_file *f, const gf_st_tensor_desc *t) {
  CHECK_INT_EQ(f->n_tensors, NT);
  CHECK_INT_EQ(f->header_len % 8, 0);
  for (size_t i = 1; i < f->n_tensors; i++)
    CHECK(strcmp(f->tensors[i - 1].name, f->tensors[i].name) < 0);
  for (int i = 0; i < NT; i++) {
    const gf_st_tensor *r = gf_st_find(f, t[i].name);
    CHECKF(r != NULL, "tensor %s missing", t[i].name);
    if (!r) continue;
    CHECK_INT_EQ(r->dtype, t[i].dtype);
    CHECK_INT_EQ(r->ndim, t[i].ndim);
    size_t numel = 1;
    for (int d = 0; d < t[i].ndim; d++) {
      CHECK_INT_EQ(r->shape[d], t[i].shape[d]);
      numel *= (size_t)t[i].shape[d];
    }
    CHECK_INT_EQ(r->numel, numel);
    CHECK_INT_EQ(r->nbytes, numel * gf_st_dtype_size(t[i].dtype));
    CHECK(r->nbytes == 0 || memcmp(r->data, t[i].data, r->nbytes) == 0);
    /* Largest element size first keeps each tensor aligned to its size. */
    CHECKF(r->begin % gf_st_dtype_size(r->dtype) == 0, "%s misaligned", r->name);
  }
  CHECK(gf_st_find(f, "nope") == NULL);
  CHECK(gf_st_find(f, "") == NULL);
}

static void test_dtypes(void) {
  gf_err err;
  gf_st_dtype dt;
  const char *names[] = {"F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"};
  const size_t sizes[] = {4, 2, 2, 8, 8, 4, 2, 1, 1, 1};
  for (int i = 0; i < GF_ST_DTYPE_COUNT; i++) {
    CHECK_STR_EQ(gf_st_dtype_name((gf_st_dtype)i), names[i]);
    CHECK_INT_EQ(gf_st_dtype_size((gf_st_dtype)i), sizes[i]);
    CHECK_INT_EQ(gf_st_dtype_parse(names[i], &dt, &err), GF_OK);
    CHECK_INT_EQ(dt, i);
  }
  CHECK_INT_EQ(gf_st_dtype_parse("F8_E4M3", &dt, &err), GF_EUNSUPPORTED);
  CHECK_INT_EQ(gf_st_dtype_parse("f32", &dt, &err), GF_EUNSUPPORTED);
  CHECK_INT_EQ(gf_st_dtype_size(GF_ST_DTYPE_COUNT), 0);
}

static void test_roundtrip(const char *dir) {
  gf_err err = {GF_OK, ""};
  gf_st_tensor_desc t[NT];
  make_desc(t);
  gf_st_kv meta[] = {{"z_last", "1"}, {"format", "pt"}, {"quote\"and\\slash\n", "v\"\x01"}};

  uint8_t *buf = NULL;
  size_t len = 0;
  REQUIRE(gf_st_write_buffer(t, NT, meta, 3, GF_ST_DATA_SHA256, &buf, &len, &err) == GF_OK);
  uint64_t n = 0;
  for (int k = 7; k >= 0; k--) n = (n << 8) | buf[k];
  CHECK_INT_EQ(n % 8, 0);
  CHECK_INT_EQ(buf[8], '{');

  gf_st_file f;
  CHECKF(gf_st_parse(&f, buf, len, GF_ST_VERIFY_SHA256, &err) == GF_OK, "%s", err.msg);
  check_contents(&f, t);
  CHECK_INT_EQ(f.n_meta, 4);
  CHECK_STR_EQ(gf_st_meta_get(&f, "format"), "pt");
  CHECK_STR_EQ(gf_st_meta_get(&f, "quote\"and\\slash\n"), "v\"\x01");
  CHECK(gf_st_meta_get(&f, "absent") == NULL);
  char hex[GF_SHA256_HEX_LEN + 1], hex2[GF_SHA256_HEX_LEN + 1];
  CHECK_INT_EQ(gf_st_data_sha256(&f, hex, &err), GF_OK);
  CHECK_INT_EQ(gf_sha256_buf(buf + 8 + n, len - 8 - n, hex2, &err), GF_OK);
  CHECK_STR_EQ(hex, hex2);
  CHECK_STR_EQ(gf_st_meta_get(&f, GF_ST_DATA_SHA256_KEY), hex);
  /* The F64 tensor is first in the data buffer. */
  CHECK_INT_EQ(gf_st_find(&f, "doubles")->begin, 0);
  gf_st_file_free(&f);
  gf_st_file_free(&f); /* idempotent */
  gf_st_file_free(NULL);

  /* Stable: the input order does not change a byte. */
  gf_st_tensor_desc r[NT];
  for (int i = 0; i < NT; i++) r[i] = t[NT - 1 - i];
  gf_st_kv meta_r[] = {meta[2], meta[0], meta[1]};
  uint8_t *buf2 = NULL;
  size_t len2 = 0;
  REQUIRE(gf_st_write_buffer(r, NT, meta_r, 3, GF_ST_DATA_SHA256, &buf2, &len2, &err) == GF_OK);
  CHECK(len2 == len && memcmp(buf, buf2, len) == 0);
  free(buf2);

  /* The file path writes the same bytes, atomically. */
  char path[512];
  snprintf(path, sizeof path, "%s/t.safetensors", dir);
  CHECKF(gf_st_write_file(path, t, NT, meta, 3, GF_ST_DATA_SHA256, &err) == GF_OK, "%s", err.msg);
  size_t flen;
  unsigned char *fbytes = tu_read(path, &flen);
  CHECK(flen == len && memcmp(fbytes, buf, len) == 0);
  free(fbytes);
  CHECK_INT_EQ(tu_count_names(dir, ".tmp."), 0);
  CHECKF(gf_st_open(&f, path, GF_ST_VERIFY_SHA256, &err) == GF_OK, "%s", err.msg);
  check_contents(&f, t);
  CHECK(f.owned != NULL);
  gf_st_file_free(&f);

  /* Without the digest flag there is no digest, and verify says so. */
  uint8_t *buf3 = NULL;
  size_t len3 = 0;
  REQUIRE(gf_st_write_buffer(t, NT, NULL, 0, 0, &buf3, &len3, &err) == GF_OK);
  REQUIRE(gf_st_parse(&f, buf3, len3, 0, &err) == GF_OK);
  CHECK_INT_EQ(f.n_meta, 0);
  CHECK(strstr((const char *)buf3 + 8, "__metadata__") == NULL);
  CHECK_INT_EQ(gf_st_verify_data_sha256(&f, &err), GF_ENOTFOUND);
  gf_st_file_free(&f);
  CHECK_INT_EQ(gf_st_parse(&f, buf3, len3, GF_ST_VERIFY_SHA256, &err), GF_ENOTFOUND);
  free(buf3);
  free(buf);

  /* No tensors at all: "{}" padded, empty data buffer. */
  REQUIRE(gf_st_write_buffer(NULL, 0, NULL, 0, 0, &buf, &len, &err) == GF_OK);
  CHECK_INT_EQ(len, 16);
  CHECK_INT_EQ(gf_st_parse(&f, buf, len, 0, &err), GF_OK);
  CHECK_INT_EQ(f.n_tensors, 0);
  gf_st_file_free(&f);
  free(buf);
}

static void test_writer_rejects(const char *dir) {
  gf_err err = {GF_OK, ""};
  uint8_t *buf = (uint8_t *)"sentinel";
  size_t len = 99;
  float x[2] = {1, 2};
  const int64_t s2[] = {2}, neg[] = {-1}, huge[] = {(int64_t)1 << 40, (int64_t)1 << 40};
  gf_st_tensor_desc dup[] = {{"a", GF_ST_F32, 1, s2, x}, {"a", GF_ST_F32, 1, s2, x}};
  CHECK_INT_EQ(gf_st_write_buffer(dup, 2, NULL, 0, 0, &buf, &len, &err), GF_EINVAL);
  CHECK(strstr(err.msg, "duplicate") != NULL);
  CHECK(buf == NULL && len == 0);
  gf_st_tensor_desc dup2[] = {{"a", GF_ST_F32, 1, s2, x}, {"b", GF_ST_U8, 1, s2, x},
                              {"a", GF_ST_I16, 1, s2, x}};
  CHECK_INT_EQ(gf_st_write_buffer(dup2, 3, NULL, 0, 0, &buf, &len, &err), GF_EINVAL);
  gf_st_tensor_desc bad[] = {{"__metadata__", GF_ST_F32, 1, s2, x}};
  CHECK_INT_EQ(gf_st_write_buffer(bad, 1, NULL, 0, 0, &buf, &len, &err), GF_EINVAL);
  bad[0] = (gf_st_tensor_desc){"", GF_ST_F32, 1, s2, x};
  CHECK_INT_EQ(gf_st_write_buffer(bad, 1, NULL, 0, 0, &buf, &len, &err), GF_EINVAL);
  bad[0] = (gf_st_tensor_desc){"bad\xff", GF_ST_F32, 1, s2, x};
  CHECK_INT_EQ(gf_st_write_buffer(bad, 1, NULL, 0, 0, &buf, &len, &err), GF_EINVAL);
  bad[0] = (gf_st_tensor_desc){"n", GF_ST_F32, 1, neg, x};
  CHECK_INT_EQ(gf_st_write_buffer(bad, 1, NULL, 0, 0, &buf, &len, &err), GF_EINVAL);
  bad[0] = (gf_st_tensor_desc){"n", GF_ST_F32, 1, s2, NULL};
  CHECK_INT_EQ(gf_st_write_buffer(bad, 1, NULL, 0, 0, &buf, &len, &err), GF_EINVAL);
  bad[0] = (gf_st_tensor_desc){"n", GF_ST_DTYPE_COUNT, 1, s2, x};
  CHECK_INT_EQ(gf_st_write_buffer(bad, 1, NULL, 0, 0, &buf, &len, &err), GF_EINVAL);
  bad[0] = (gf_st_tensor_desc){"n", GF_ST_F32, GF_ST_MAX_DIMS + 1, s2, x};
  CHECK_INT_EQ(gf_st_write_buffer(bad, 1, NULL, 0, 0, &buf, &len, &err), GF_EINVAL);
  bad[0] = (gf_st_tensor_desc){"n", GF_ST_F64, 2, huge, x}; /* 2^80 * 8 bytes */
  CHECK_INT_EQ(gf_st_write_buffer(bad, 1, NULL, 0, 0, &buf, &len, &err), GF_EINVAL);
  gf_st_tensor_desc ok[] = {{"a", GF_ST_F32, 1, s2, x}};
  gf_st_kv dupm[] = {{"k", "1"}, {"k", "2"}};
  CHECK_INT_EQ(gf_st_write_buffer(ok, 1, dupm, 2, 0, &buf, &len, &err), GF_EINVAL);
  gf_st_kv reserved[] = {{GF_ST_DATA_SHA256_KEY, "x"}};
  CHECK_INT_EQ(gf_st_write_buffer(ok, 1, reserved, 1, GF_ST_DATA_SHA256, &buf, &len, &err),
               GF_EINVAL);
  gf_st_kv nullv[] = {{"k", NULL}};
  CHECK_INT_EQ(gf_st_write_buffer(ok, 1, nullv, 1, 0, &buf, &len, &err), GF_EINVAL);

  /* File errors: no such directory; nothing left behind on failure. */
  char path[512];
  snprintf(path, sizeof path, "%s/no/such/dir/x.safetensors", dir);
  CHECK_INT_EQ(gf_st_write_file(path, ok, 1, NULL, 0, 0, &err), GF_EIO);
  snprintf(path, sizeof path, "%s/x.safetensors", dir);
  CHECK_INT_EQ(gf_st_write_file(path, dup, 2, NULL, 0, 0, &err), GF_EINVAL);
  CHECK_INT_EQ(tu_count_names(dir, "x.safetensors"), 0);
  gf_st_file f;
  CHECK_INT_EQ(gf_st_open(&f, path, 0, &err), GF_EIO);
  CHECK(strstr(err.msg, "x.safetensors") != NULL);
  CHECK_INT_EQ(gf_st_open(&f, dir, 0, &err), GF_EIO); /* a directory */
}

static void test_atomic(const char *dir) {
  gf_err err = {GF_OK, ""};
  char path[512];
  snprintf(path, sizeof path, "%s/atomic.txt", dir);
  CHECK_INT_EQ(gf_atomic_write_file(path, "old", 3, &err), GF_OK);
  gf_atomic_file af;
  REQUIRE(gf_atomic_open(&af, path, &err) == GF_OK);
  fputs("new contents", af.fp);
  /* Until commit the destination still holds the old bytes. */
  size_t len;
  unsigned char *b = tu_read(path, &len);
  CHECK(len == 3 && memcmp(b, "old", 3) == 0);
  free(b);
  CHECK_INT_EQ(tu_count_names(dir, "atomic.txt.tmp."), 1);
  CHECK_INT_EQ(gf_atomic_commit(&af, &err), GF_OK);
  CHECK(af.fp == NULL && af.tmp_path == NULL && af.final_path == NULL);
  b = tu_read(path, &len);
  CHECK(len == 12 && memcmp(b, "new contents", 12) == 0);
  free(b);
  CHECK_INT_EQ(tu_count_names(dir, ".tmp."), 0);
  /* Abort leaves the destination alone and removes the temporary. */
  REQUIRE(gf_atomic_open(&af, path, &err) == GF_OK);
  fputs("discarded", af.fp);
  gf_atomic_abort(&af);
  gf_atomic_abort(&af);
  gf_atomic_abort(NULL);
  b = tu_read(path, &len);
  CHECK(len == 12 && memcmp(b, "new contents", 12) == 0);
  free(b);
  CHECK_INT_EQ(tu_count_names(dir, ".tmp."), 0);
  CHECK_INT_EQ(gf_atomic_commit(&af, &err), GF_ESTATE);
  CHECK_INT_EQ(gf_atomic_open(&af, "", &err), GF_EINVAL);
  CHECK_INT_EQ(gf_fsync_parent_dir(path, &err), GF_OK);
}

static void test_shape_text(void) {
  char buf[GF_ST_SHAPE_TEXT_MAX];
  CHECK_STR_EQ(gf_st_shape_text(NULL, 0, buf), "[]");
  const int64_t s3[] = {64, 1, 28};
  CHECK_STR_EQ(gf_st_shape_text(s3, 3, buf), "[64, 1, 28]");
  /* The longest: GF_ST_MAX_DIMS dims of 20 characters each fit. */
  int64_t big[GF_ST_MAX_DIMS];
  for (int i = 0; i < GF_ST_MAX_DIMS; i++) big[i] = INT64_MIN;
  gf_st_shape_text(big, GF_ST_MAX_DIMS, buf);
  CHECK_INT_EQ(strlen(buf), 2 + GF_ST_MAX_DIMS * 20 + (GF_ST_MAX_DIMS - 1) * 2);
  CHECK(strncmp(buf, "[-9223372036854775808, ", 23) == 0);
  CHECK(buf[strlen(buf) - 1] == ']');
}

int main(void) {
  char dir[256];
  tu_mkdtemp(dir, sizeof dir);
  test_dtypes();
  test_shape_text();
  test_roundtrip(dir);
  test_writer_rejects(dir);
  test_atomic(dir);
  tu_rmdir(dir);
  return check_report();
}
