/* test_serve_unit.c - unit tests of the serve library without a network:
 * the generate query parser, the V2 body parser (JSON, outputs and
 * parameters asked, the binary tensor data extension), Content-Type and
 * Inference-Header-Content-Length, the MLflow scoring bodies (every form
 * MLflow's scoring server takes), the pixel mapping, the command line
 * (paths too long for what they are joined into refused there), slot
 * names too long for the cache, the metrics text, the JSON number writer (every float reads back as
 * itself), and the checker proving it fires. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gfs/json_num.h"
#include "gfs/metrics.h"
#include "gfs/request.h"
#include "gfs/server.h"
#include "gfs/slot.h"

static gf_status q(const char *s, gfs_gen_args *a) {
  gf_err e;
  return gfs_query_parse(s, strlen(s), 16, a, &e);
}

static void test_query(void) {
  gfs_gen_args a;
  CHECK_INT_EQ(q("", &a), GF_OK);
  CHECK_INT_EQ(a.n, 1);
  CHECK_INT_EQ(a.seed, 0);
  CHECK_INT_EQ(q("seed=42&n=16&format=json", &a), GF_OK);
  CHECK(a.seed == 42 && a.n == 16 && a.format == GFS_FORMAT_JSON);
  CHECK_INT_EQ(q("seed=18446744073709551615", &a), GF_OK);
  CHECK(a.seed == UINT64_MAX);
  CHECK_INT_EQ(q("seed=%34%32&&n=2", &a), GF_OK); /* %34%32 = "42" */
  CHECK(a.seed == 42 && a.n == 2);
  CHECK_INT_EQ(q("class=3", &a), GF_OK);
  CHECK(a.has_class && strcmp(a.cls, "3") == 0 && a.n_cls == 1);
  CHECK_INT_EQ(q("class=cat,3,dog%20x&n=3", &a), GF_OK);
  CHECK(a.has_class && strcmp(a.cls, "cat,3,dog x") == 0 && a.n_cls == 3);
  /* Every malformed or out-of-range form is refused. */
  const char *bad[] = {"seed=18446744073709551616", "seed=-1", "seed=abc",
                       "seed=", "seed=1e3", "seed= 1", "n=0", "n=17",
                       "n=1000000000", "n=99999999999999999999999", "n=-1",
                       "seed=1&seed=2", "=5", "bogus=1", "seed=%zz",
                       "seed=%4", "format=gif", "class=", "class=a,,b", "class=,a",
                       "class=a,", "class=1&class=2",
                       "class=0,1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6", "seed=%00"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECKF(q(bad[i], &a) != GF_OK, "accepted '%s'", bad[i]);
  char big[GFS_QUERY_MAX + 2];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK(q(big, &a) != GF_OK);
  /* the stylegan2 style; hostile values name their parameter */
  CHECK_INT_EQ(q("seed=1", &a), GF_OK);
  CHECK(gfs_style_is_default(&a.style));
  CHECK_INT_EQ(q("psi=0.7&trunc_cutoff=4&noise=random&mix=9&mix_from=3", &a),
               GF_OK);
  CHECK(a.style.psi == 0.7 && a.style.trunc_cutoff == 4 &&
        a.style.noise == GFS_NOISE_RANDOM && a.style.has_mix &&
        a.style.mix == 9 && a.style.mix_from == 3);
  CHECK_INT_EQ(q("noise=none", &a), GF_OK);
  CHECK(a.style.noise == GFS_NOISE_NONE && !gfs_style_is_default(&a.style));
  const struct { const char *q, *name; } hostile[] = {
      {"psi=nan", "psi"}, {"psi=inf", "psi"}, {"psi=9", "psi"},
      {"psi=", "psi"}, {"psi=0.5&psi=0.6", "psi"}, {"psi=1e999", "psi"},
      {"trunc_cutoff=-1", "trunc_cutoff"}, {"trunc_cutoff=65", "trunc_cutoff"},
      {"trunc_cutoff=x", "trunc_cutoff"}, {"noise=loud", "noise"},
      {"noise=", "noise"}, {"mix=-1", "mix"}, {"mix=1", "mix"},
      {"mix_from=2", "mix"}, {"mix=1&mix_from=0", "mix_from"},
      {"mix=1&mix_from=64", "mix_from"}, {"mix=18446744073709551616", "mix"}};
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
    gf_err e;
    gf_status st = gfs_query_parse(hostile[i].q, strlen(hostile[i].q), 16,
                                   &a, &e);
    CHECKF(st == GF_EINVAL && strstr(e.msg, hostile[i].name) != NULL,
           "'%s': %d %s", hostile[i].q, (int)st, e.msg);
  }
}

static gf_status v2(const char *body, gfs_infer_req *r) {
  gf_err e;
  return gfs_v2_parse(body, strlen(body), 3, 4, r, &e);
}

static void test_v2_style(void) {
  gfs_infer_req r;
  CHECK_INT_EQ(v2("{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                  "\"datatype\": \"INT64\", \"data\": [7]}], "
                  "\"parameters\": {\"psi\": 0.7, \"trunc_cutoff\": 2, "
                  "\"noise\": \"random\", \"mix\": \"9\", \"mix_from\": 3}}",
                  &r), GF_OK);
  CHECK(r.style.psi == 0.7 && r.style.trunc_cutoff == 2 &&
        r.style.noise == GFS_NOISE_RANDOM && r.style.mix == 9 &&
        r.style.mix_from == 3);
  gfs_infer_req_free(&r);
  CHECK(gfs_style_is_default(&r.style));
  const struct { const char *p, *name; } hostile[] = {
      {"\"psi\": \"nan\"", "psi"}, {"\"psi\": 100", "psi"},
      {"\"psi\": [1]", "psi"}, {"\"trunc_cutoff\": 1.5", "trunc_cutoff"},
      {"\"noise\": 3", "noise"}, {"\"mix\": 5", "mix"},
      {"\"mix\": -5, \"mix_from\": 2", "mix"},
      {"\"mix\": 5, \"mix_from\": true", "mix_from"}};
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
    char body[512];
    snprintf(body, sizeof body, "{\"inputs\": [{\"name\": \"seed\", "
             "\"shape\": [1], \"datatype\": \"INT64\", \"data\": [7]}], "
             "\"parameters\": {%s}}", hostile[i].p);
    gf_err e;
    gf_status st = gfs_v2_parse(body, strlen(body), 3, 4, &r, &e);
    CHECKF(st == GF_EINVAL && strstr(e.msg, hostile[i].name) != NULL,
           "%s: %d %s", hostile[i].p, (int)st, e.msg);
  }
}

static void test_v2(void) {
  gfs_infer_req r;
  CHECK_INT_EQ(v2("{\"id\": \"a1\", \"inputs\": [{\"name\": \"seed\", "
                  "\"shape\": [2], \"datatype\": \"INT64\", \"data\": [7, "
                  "\"18446744073709551615\"]}]}", &r), GF_OK);
  CHECK(r.n == 2 && r.seeds && r.seeds[0] == 7 &&
        r.seeds[1] == UINT64_MAX && !r.z);
  CHECK_STR_EQ(r.id, "a1");
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(v2("{\"inputs\": [{\"name\": \"z\", \"shape\": [2, 3], "
                  "\"datatype\": \"FP32\", \"data\": [[1, 2, 3], [4, 5, "
                  "6.5]]}]}", &r), GF_OK);
  CHECK(r.n == 2 && r.z && r.z[5] == 6.5f && !r.seeds);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(v2("{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], "
                  "\"datatype\": \"FP32\", \"data\": [1, 2, 3]}]}", &r),
               GF_OK);
  gfs_infer_req_free(&r);
  const char *bad[] = {
      "", "{", "[]", "null", "{\"inputs\": 3}", "{\"inputs\": []}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [5], \"datatype\": "
      "\"INT64\", \"data\": [1,2,3,4,5]}]}", /* n > max 4 */
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1000000000], "
      "\"datatype\": \"INT64\", \"data\": [1]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [2], \"datatype\": "
      "\"INT64\", \"data\": [1]}]}", /* shape != data */
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [-1]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [1.5]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"FP32\", \"data\": [1]}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 2], \"datatype\": "
      "\"FP32\", \"data\": [1, 2]}]}", /* z_dim 3 */
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], \"datatype\": "
      "\"FP32\", \"data\": [1, 2]}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], \"datatype\": "
      "\"FP32\", \"data\": [1, 2, 3, 4]}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], \"datatype\": "
      "\"FP32\", \"data\": [1, 2, \"x\"]}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], \"datatype\": "
      "\"FP32\", \"data\": [1, 2, 1e300]}]}",
      "{\"inputs\": [{\"name\": \"w\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [1]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [1]}, {\"name\": \"seed\", \"shape\": [1], "
      "\"datatype\": \"INT64\", \"data\": [1]}]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECKF(v2(bad[i], &r) != GF_OK, "accepted [%zu] %s", i, bad[i]);
    CHECK(r.seeds == NULL && r.z == NULL);
  }
}


static void test_v2_outputs(void) {
  gfs_infer_req r;
  const char *in = "\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                   "\"datatype\": \"INT64\", \"data\": [1]}]";
  char b[1024];
  /* default: JSON data, FP32 */
  snprintf(b, sizeof b, "{%s}", in);
  CHECK_INT_EQ(v2(b, &r), GF_OK);
  CHECK(r.binary_out == 0 && r.dtype == GFS_IMAGE_FP32);
  gfs_infer_req_free(&r);
  /* request-level parameters, as tritonclient sends them */
  snprintf(b, sizeof b, "{%s, \"parameters\": {\"binary_data_output\": true, "
           "\"image_datatype\": \"UINT8\", \"other\": 5}}", in);
  CHECK_INT_EQ(v2(b, &r), GF_OK);
  CHECK(r.binary_out == 1 && r.dtype == GFS_IMAGE_UINT8);
  gfs_infer_req_free(&r);
  /* per-output parameters override the request's */
  snprintf(b, sizeof b, "{%s, \"parameters\": {\"binary_data_output\": true},"
           " \"outputs\": [{\"name\": \"image\", \"parameters\": "
           "{\"binary_data\": false, \"datatype\": \"UINT8\"}}]}", in);
  CHECK_INT_EQ(v2(b, &r), GF_OK);
  CHECK(r.binary_out == 0 && r.dtype == GFS_IMAGE_UINT8);
  gfs_infer_req_free(&r);
  snprintf(b, sizeof b, "{%s, \"outputs\": [{\"name\": \"image\", "
           "\"parameters\": {\"binary_data\": true}}]}", in);
  CHECK_INT_EQ(v2(b, &r), GF_OK);
  CHECK(r.binary_out == 1 && r.dtype == GFS_IMAGE_FP32);
  gfs_infer_req_free(&r);
  snprintf(b, sizeof b, "{%s, \"outputs\": [{\"name\": \"image\"}]}", in);
  CHECK_INT_EQ(v2(b, &r), GF_OK);
  gfs_infer_req_free(&r);
  snprintf(b, sizeof b, "{%s, \"outputs\": []}", in);
  CHECK_INT_EQ(v2(b, &r), GF_OK);
  gfs_infer_req_free(&r);
  const char *bad[] = {
      "\"outputs\": [{\"name\": \"logits\"}]",
      "\"outputs\": [{\"name\": \"image\"}, {\"name\": \"image\"}]",
      "\"outputs\": {\"name\": \"image\"}",
      "\"outputs\": [\"image\"]",
      "\"outputs\": [{\"name\": \"image\", \"parameters\": {\"datatype\": "
      "\"FP16\"}}]",
      "\"outputs\": [{\"name\": \"image\", \"parameters\": {\"binary_data\": "
      "1}}]",
      "\"outputs\": [{\"name\": \"image\", \"parameters\": "
      "{\"classification\": 3}}]",
      "\"outputs\": [{\"name\": \"image\", \"parameters\": 5}]",
      "\"parameters\": {\"image_datatype\": \"INT8\"}",
      "\"parameters\": {\"binary_data_output\": \"yes\"}",
      "\"parameters\": [1]",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(b, sizeof b, "{%s, %s}", in, bad[i]);
    CHECKF(v2(b, &r) != GF_OK, "accepted %s", b);
    CHECK(r.seeds == NULL && r.z == NULL);
  }
}

/* A binary-extension body: json, then raw bytes; *hdr gets the JSON's
 * length as text. Returns the body length. */
static size_t bin_body(char *out, size_t cap, const char *json,
                       const void *raw, size_t raw_len, char *hdr) {
  size_t j = strlen(json);
  REQUIRE(j + raw_len <= cap);
  memcpy(out, json, j);
  if (raw_len) memcpy(out + j, raw, raw_len);
  sprintf(hdr, "%zu", j);
  return j + raw_len;
}

static gf_status v2b(const char *body, size_t len, const char *hdr,
                     gfs_infer_req *r) {
  gf_err e;
  return gfs_v2_parse_request(body, len, hdr, 3, 4, r, &e);
}

static void put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_lef32(unsigned char *p, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(u >> (8 * i));
}

static void test_v2_binary(void) {
  gfs_infer_req r;
  char body[1024], hdr[32];
  unsigned char raw[64];
  /* seeds: INT64 little-endian */
  put_le64(raw, 7);
  put_le64(raw + 8, 1234567890123ull);
  const char *js = "{\"id\": \"b1\", \"inputs\": [{\"name\": \"seed\", "
                   "\"shape\": [2], \"datatype\": \"INT64\", \"parameters\": "
                   "{\"binary_data_size\": 16}}], \"outputs\": [{\"name\": "
                   "\"image\", \"parameters\": {\"binary_data\": true}}]}";
  size_t len = bin_body(body, sizeof body, js, raw, 16, hdr);
  CHECK_INT_EQ(v2b(body, len, hdr, &r), GF_OK);
  CHECK(r.n == 2 && r.seeds && r.seeds[0] == 7 &&
        r.seeds[1] == 1234567890123ull && !r.z && r.binary_out);
  CHECK_STR_EQ(r.id, "b1");
  gfs_infer_req_free(&r);
  /* UINT64 takes the whole range */
  put_le64(raw, UINT64_MAX);
  const char *ju = "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                   "\"datatype\": \"UINT64\", \"parameters\": "
                   "{\"binary_data_size\": 8}}]}";
  len = bin_body(body, sizeof body, ju, raw, 8, hdr);
  CHECK_INT_EQ(v2b(body, len, hdr, &r), GF_OK);
  CHECK(r.n == 1 && r.seeds[0] == UINT64_MAX);
  gfs_infer_req_free(&r);
  /* ... INT64 refuses negatives */
  const char *ji = "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                   "\"datatype\": \"INT64\", \"parameters\": "
                   "{\"binary_data_size\": 8}}]}";
  len = bin_body(body, sizeof body, ji, raw, 8, hdr);
  CHECK(v2b(body, len, hdr, &r) != GF_OK && !r.seeds);
  /* z: FP32 [2, 3] */
  for (int i = 0; i < 6; i++) put_lef32(raw + 4 * i, 0.5f * (float)i - 1);
  const char *jz = "{\"inputs\": [{\"name\": \"z\", \"shape\": [2, 3], "
                   "\"datatype\": \"FP32\", \"parameters\": "
                   "{\"binary_data_size\": 24}}]}";
  len = bin_body(body, sizeof body, jz, raw, 24, hdr);
  CHECK_INT_EQ(v2b(body, len, hdr, &r), GF_OK);
  CHECK(r.n == 2 && r.z && !r.seeds && r.z[0] == -1.0f && r.z[5] == 1.5f);
  gfs_infer_req_free(&r);
  /* a header equal to the body: all JSON, the same as no header */
  const char *jj = "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                   "\"datatype\": \"INT64\", \"data\": [3]}]}";
  len = bin_body(body, sizeof body, jj, NULL, 0, hdr);
  CHECK_INT_EQ(v2b(body, len, hdr, &r), GF_OK);
  CHECK(r.n == 1 && r.seeds[0] == 3);
  gfs_infer_req_free(&r);
  /* NaN and huge latents are refused as in JSON */
  put_lef32(raw + 4, NAN);
  len = bin_body(body, sizeof body, jz, raw, 24, hdr);
  CHECK(v2b(body, len, hdr, &r) != GF_OK && !r.z);
  put_lef32(raw + 4, 1e30f);
  len = bin_body(body, sizeof body, jz, raw, 24, hdr);
  CHECK(v2b(body, len, hdr, &r) != GF_OK && !r.z);
  put_lef32(raw + 4, 0);
  /* bad header values */
  len = bin_body(body, sizeof body, jz, raw, 24, hdr);
  const char *bad_hdr[] = {"", "-1", "abc", "1e3", "0x10", "+5",
                           "99999999999999999999999", "18446744073709551615",
                           "1000"};
  for (size_t i = 0; i < sizeof bad_hdr / sizeof bad_hdr[0]; i++) {
    CHECKF(v2b(body, len, bad_hdr[i], &r) != GF_OK, "accepted header '%s'",
           bad_hdr[i]);
    CHECK(!r.z && !r.seeds);
  }
  /* header cuts the JSON short */
  CHECK(v2b(body, len, "10", &r) != GF_OK && !r.z);
  CHECK(v2b(body, len, "0", &r) != GF_OK && !r.z);
  /* sizes that do not add up */
  len = bin_body(body, sizeof body, jz, raw, 20, hdr); /* short */
  CHECK(v2b(body, len, hdr, &r) != GF_OK && !r.z);
  len = bin_body(body, sizeof body, jz, raw, 28, hdr); /* extra bytes */
  CHECK(v2b(body, len, hdr, &r) != GF_OK && !r.z);
  const char *bad_json[] = {
      /* size disagrees with shape */
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], \"datatype\": "
      "\"FP32\", \"parameters\": {\"binary_data_size\": 24}}]}",
      /* n past max_images 4 (checked before any allocation) */
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [1000000000, 3], "
      "\"datatype\": \"FP32\", \"parameters\": {\"binary_data_size\": "
      "12000000000}}]}",
      /* both data and binary */
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [2, 3], \"datatype\": "
      "\"FP32\", \"data\": [1,2,3,4,5,6], \"parameters\": "
      "{\"binary_data_size\": 24}}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [2, 3], \"datatype\": "
      "\"FP32\", \"parameters\": {\"binary_data_size\": -24}}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [2, 3], \"datatype\": "
      "\"FP32\", \"parameters\": {\"binary_data_size\": \"24\"}}]}",
      "{\"inputs\": [{\"name\": \"z\", \"shape\": [2, 3], \"datatype\": "
      "\"FP64\", \"parameters\": {\"binary_data_size\": 24}}]}",
      /* binary bytes but JSON data */
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [1]}]}",
  };
  for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
    len = bin_body(body, sizeof body, bad_json[i], raw, 24, hdr);
    CHECKF(v2b(body, len, hdr, &r) != GF_OK, "accepted [%zu] %s", i,
           bad_json[i]);
    CHECK(!r.z && !r.seeds);
  }
}

static void test_headers(void) {
  CHECK_INT_EQ(gfs_content_type(NULL), GFS_CT_NONE);
  CHECK_INT_EQ(gfs_content_type("application/json"), GFS_CT_JSON);
  CHECK_INT_EQ(gfs_content_type("Application/JSON; charset=UTF-8"),
               GFS_CT_JSON);
  CHECK_INT_EQ(gfs_content_type("application/json;charset=\"utf-8\""),
               GFS_CT_JSON);
  CHECK_INT_EQ(gfs_content_type("application/json; format=pandas-split"),
               GFS_CT_JSON);
  CHECK_INT_EQ(gfs_content_type("application/octet-stream"), GFS_CT_OCTET);
  const char *other[] = {"text/html", "text/plain",
                         "multipart/form-data; boundary=x",
                         "application/jsonx",
                         "application/json-patch+json", "application/js",
                         "", "application/json; charset=latin-1",
                         "text/csv", "application/x-www-form-urlencoded"};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
    CHECKF(gfs_content_type(other[i]) == GFS_CT_OTHER, "'%s' not OTHER",
           other[i]);
  size_t v = 0;
  CHECK(gfs_header_length_parse("123", 1000, &v) == 0 && v == 123);
  CHECK(gfs_header_length_parse(" 7 ", 1000, &v) == 0 && v == 7);
  CHECK(gfs_header_length_parse("1000", 1000, &v) == 0 && v == 1000);
  const char *bad[] = {"", " ", "-1", "1001", "abc", "12a", "1.5", "+3",
                       "99999999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECKF(gfs_header_length_parse(bad[i], 1000, &v) != 0, "accepted '%s'",
           bad[i]);
  CHECK(gfs_header_length_parse(NULL, 1000, &v) != 0);
}

static void test_pixel(void) {
  CHECK_INT_EQ(gfs_pixel_u8(-1.0f), 0);
  CHECK_INT_EQ(gfs_pixel_u8(-5.0f), 0);
  CHECK_INT_EQ(gfs_pixel_u8(NAN), 0);
  CHECK_INT_EQ(gfs_pixel_u8(1.0f), 255);
  CHECK_INT_EQ(gfs_pixel_u8(INFINITY), 255);
  CHECK_INT_EQ(gfs_pixel_u8(0.0f), 128); /* 127.5 rounds up */
  CHECK_INT_EQ(gfs_pixel_u8(-0.5f), 64); /* 63.75 */
}

/* x written by gfs_json_write_float reads back (strtof) as the same bits, is a
 * JSON number (-?digits[.digits][e[-]digits]) of at most 9 significant
 * digits; returns 0 when all holds. */
static int json_float_ok(float x) {
  char out[GFS_JSON_FLOAT_MAX];
  size_t n = gfs_json_write_float(x, out);
  if (n != strlen(out) || n >= GFS_JSON_FLOAT_MAX) return -1;
  const char *p = out + (out[0] == '-');
  int digits = 0, lead = 1;
  if (*p < '0' || *p > '9') return -2;
  for (; *p >= '0' && *p <= '9'; p++)
    if (!(lead && *p == '0')) lead = 0, digits++;
  if (*p == '.') {
    if (*++p < '0' || *p > '9') return -3;
    for (; *p >= '0' && *p <= '9'; p++)
      if (!(lead && *p == '0')) lead = 0, digits++;
  }
  if (*p == 'e') {
    if (*++p == '-') p++;
    if (*p < '0' || *p > '9') return -4;
    while (*p >= '0' && *p <= '9') p++;
  }
  if (*p != '\0' || digits > 9) return -5;
  float y = strtof(out, NULL);
  uint32_t a, b;
  memcpy(&a, &x, 4);
  memcpy(&b, &y, 4);
  return a == b ? 0 : -6;
}

static void test_json_float(void) {
  char out[GFS_JSON_FLOAT_MAX];
  gfs_json_write_float(0.5f, out);
  CHECK_STR_EQ(out, "0.5");
  gfs_json_write_float(-1.0f, out);
  CHECK_STR_EQ(out, "-1");
  gfs_json_write_float(0.1f, out);
  CHECK_STR_EQ(out, "0.100000001");
  gfs_json_write_float(1e-5f, out);
  CHECK_STR_EQ(out, "9.99999975e-6");
  gfs_json_write_float(123456.0f, out);
  CHECK_STR_EQ(out, "123456");
  gfs_json_write_float(1e10f, out);
  CHECK_STR_EQ(out, "1e10");
  gfs_json_write_float(NAN, out);
  CHECK_STR_EQ(out, "0");
  gfs_json_write_float(-INFINITY, out);
  CHECK_STR_EQ(out, "0");
  gfs_json_write_float(-0.0f, out);
  CHECK_STR_EQ(out, "-0");
  char u[12];
  u[gfs_json_write_uint(0, u)] = '\0';
  CHECK_STR_EQ(u, "0");
  u[gfs_json_write_uint(255, u)] = '\0';
  CHECK_STR_EQ(u, "255");
  /* edges, every power of two and its neighbours, powers of ten */
  float edge[] = {FLT_MIN, FLT_MAX, -FLT_MAX, FLT_TRUE_MIN, 1.0f, 0.9999999f,
                  9.99999944e8f, 999999999.5f, 1e-5f, 0.0001f, 1e9f};
  int bad = 0;
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++)
    bad += json_float_ok(edge[i]) != 0;
  for (int e = -149; e <= 127; e++) {
    float p2 = ldexpf(1.0f, e);
    bad += json_float_ok(p2) != 0;
    bad += json_float_ok(nextafterf(p2, 0)) != 0;
    bad += json_float_ok(-nextafterf(p2, INFINITY)) != 0;
  }
  for (int e = -45; e <= 38; e++) {
    float p10 = strtof("1", NULL) * powf(10.0f, (float)e);
    if (isfinite(p10)) bad += json_float_ok(p10) != 0;
  }
  /* a million random bit patterns (finite ones), and the image range */
  uint64_t st = 0x2545F4914F6CDD1Dull;
  for (int i = 0; i < 1000000; i++) {
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    uint32_t w = (uint32_t)(st >> 11);
    float x;
    memcpy(&x, &w, 4);
    if (!isfinite(x)) continue;
    int r = json_float_ok(x);
    if (r && bad < 5) {
      gfs_json_write_float(x, out);
      fprintf(stderr, "json float %.9g (0x%08x) -> %s: %d\n", (double)x,
              (unsigned)w, out, r);
    }
    bad += r != 0;
    float t = (float)((double)(st % 2000001) / 1e6 - 1.0);
    bad += json_float_ok(t) != 0;
  }
  CHECK_INT_EQ(bad, 0);
}

static gf_status inv(const char *body, gfs_infer_req *r) {
  gf_err e;
  return gfs_invocations_parse(body, strlen(body), 3, 4, r, &e);
}

static void test_invocations_mlflow(void) {
  gfs_infer_req r;
  /* dataframe_split, with index, columns in any order, null = absent */
  CHECK_INT_EQ(inv("{\"dataframe_split\": {\"columns\": [\"seed\"], "
                   "\"data\": [[1], [2]]}}", &r), GF_OK);
  CHECK(r.n == 2 && r.seeds && !r.z && r.seeds[1] == 2);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(inv("{\"dataframe_split\": {\"index\": [0, 1], \"columns\": "
                   "[\"z\", \"seed\"], \"data\": [[null, 5], [[1, 2, 3], "
                   "null]]}, \"params\": {\"x\": 1}}", &r), GF_OK);
  CHECK(r.n == 2 && r.seeds && r.z && r.row_z && r.row_z[0] == 0 &&
        r.row_z[1] == 1 && r.seeds[0] == 5 && r.z[3] == 1 && r.z[5] == 3);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(inv("{\"dataframe_split\": {\"columns\": [\"z\"], \"data\": "
                   "[[[0.5, 0, -1]]]}}", &r), GF_OK);
  CHECK(r.n == 1 && r.z && !r.seeds && !r.row_z && r.z[0] == 0.5f);
  gfs_infer_req_free(&r);
  /* dataframe_records, rows of both kinds */
  CHECK_INT_EQ(inv("{\"dataframe_records\": [{\"seed\": 1}, {\"z\": [1, 2, "
                   "3]}, {\"seed\": \"18446744073709551615\", \"z\": "
                   "null}]}", &r), GF_OK);
  CHECK(r.n == 3 && r.row_z && r.row_z[1] == 1 && r.seeds[2] == UINT64_MAX &&
        r.z[4] == 2);
  gfs_infer_req_free(&r);
  /* instances: records, latents, bare seeds */
  CHECK_INT_EQ(inv("{\"instances\": [{\"seed\": 1}, {\"seed\": 2}]}", &r),
               GF_OK);
  CHECK(r.n == 2 && r.seeds && !r.z);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(inv("{\"instances\": [{\"z\": [1, 2, 3]}, [4, 5, 6]]}", &r),
               GF_OK);
  CHECK(r.n == 2 && r.z && !r.seeds && r.z[3] == 4);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(inv("{\"instances\": [1, 2]}", &r), GF_OK);
  CHECK(r.n == 2 && r.seeds[1] == 2);
  gfs_infer_req_free(&r);
  /* inputs: columns, records */
  CHECK_INT_EQ(inv("{\"inputs\": {\"z\": [[1, 2, 3], [4, 5, 6]]}}", &r),
               GF_OK);
  CHECK(r.n == 2 && r.z && r.z[5] == 6);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(inv("{\"inputs\": {\"seed\": [1, null], \"z\": [null, [1, 2, "
                   "3]]}}", &r), GF_OK);
  CHECK(r.n == 2 && r.row_z && r.row_z[1] == 1);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(inv("{\"inputs\": [{\"seed\": 1}, {\"seed\": 9}], "
                   "\"params\": null, \"extra\": 1}", &r), GF_OK);
  CHECK(r.n == 2 && r.seeds[1] == 9);
  gfs_infer_req_free(&r);
  const char *bad[] = {
      "{\"dataframe_split\": {\"columns\": [\"seed\"], \"data\": [[1]]}, "
      "\"instances\": [1]}",                                   /* two forms */
      "{\"params\": {}}",
      "{\"dataframe_split\": [[1]]}",
      "{\"dataframe_split\": {\"data\": [[1]]}}",              /* no columns */
      "{\"dataframe_split\": {\"columns\": [\"seed\"], \"data\": [[1]], "
      "\"orient\": 1}}",
      "{\"dataframe_split\": {\"columns\": [\"seed\", \"seed\"], \"data\": "
      "[[1, 2]]}}",
      "{\"dataframe_split\": {\"columns\": [\"class\"], \"data\": [[1]]}}",
      "{\"dataframe_split\": {\"columns\": [\"seed\"], \"data\": [[1, 2]]}}",
      "{\"dataframe_split\": {\"columns\": [\"seed\"], \"data\": [1]}}",
      "{\"dataframe_split\": {\"columns\": [\"seed\"], \"data\": [[1]], "
      "\"index\": [0, 1]}}",
      "{\"dataframe_split\": {\"columns\": [\"seed\"], \"data\": [[1], [2], "
      "[3], [4], [5]]}}",                                        /* n > 4 */
      "{\"dataframe_split\": {\"columns\": [\"seed\", \"z\"], \"data\": "
      "[[1, [1, 2, 3]]]}}",                                      /* both */
      "{\"dataframe_split\": {\"columns\": [\"seed\", \"z\"], \"data\": "
      "[[null, null]]}}",                                        /* neither */
      "{\"dataframe_records\": {\"seed\": 1}}",
      "{\"dataframe_records\": [1]}",
      "{\"dataframe_records\": [{}]}",
      "{\"dataframe_records\": [{\"seed\": 1, \"label\": 2}]}",
      "{\"dataframe_records\": [{\"z\": [1, 2]}]}",
      "{\"dataframe_records\": [{\"z\": [1, 2, \"x\"]}]}",
      "{\"dataframe_records\": [{\"z\": [1, 2, 1e300]}]}",
      "{\"dataframe_records\": [{\"seed\": -1}]}",
      "{\"dataframe_records\": [{\"seed\": 1.5}]}",
      "{\"dataframe_records\": []}",
      "{\"instances\": [true]}",
      "{\"instances\": [null]}",
      "{\"instances\": []}",
      "{\"inputs\": {\"seed\": [1, 2], \"z\": [[1, 2, 3]]}}",  /* lengths */
      "{\"inputs\": {\"seed\": 5}}",
      "{\"inputs\": {\"class\": [1]}}",
      "{\"inputs\": {\"seed\": []}}",
      "{\"inputs\": 7}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECKF(inv(bad[i], &r) != GF_OK, "accepted [%zu] %s", i, bad[i]);
    CHECK(!r.seeds && !r.z && !r.row_z);
  }
}

static void test_invocations(void) {
  gfs_infer_req r;
  gf_err e;
  const char *a = "{\"inputs\": {\"seed\": [1, 2, 3]}}";
  CHECK_INT_EQ(gfs_invocations_parse(a, strlen(a), 3, 4, &r, &e), GF_OK);
  CHECK(r.n == 3 && r.seeds[2] == 3);
  gfs_infer_req_free(&r);
  const char *b = "{\"instances\": [{\"seed\": 5}, {\"seed\": 6}]}";
  CHECK_INT_EQ(gfs_invocations_parse(b, strlen(b), 3, 4, &r, &e), GF_OK);
  CHECK(r.n == 2 && r.seeds[1] == 6);
  gfs_infer_req_free(&r);
  const char *c = "{\"inputs\": [[0, 0, 0]]}";
  CHECK_INT_EQ(gfs_invocations_parse(c, strlen(c), 3, 4, &r, &e), GF_OK);
  CHECK(r.n == 1 && r.z);
  gfs_infer_req_free(&r);
  const char *bad[] = {"{}", "{\"inputs\": {}}",
                       "{\"inputs\": {\"seed\": [1], \"z\": [[1,2,3]]}}",
                       "{\"instances\": [1,2,3,4,5]}", "{\"inputs\": [[1]]}",
                       "{\"instances\": [{\"x\": 1}]}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECKF(gfs_invocations_parse(bad[i], strlen(bad[i]), 3, 4, &r, &e) !=
               GF_OK, "accepted %s", bad[i]);
}

/* Classes in bodies: V2's class input (JSON and binary, [n] and [n, 1],
 * either order) and /invocations' class column (indices, names, absent
 * rows); the refusals. */
static void test_classes(void) {
  gfs_infer_req r;
  CHECK_INT_EQ(v2("{\"inputs\": [{\"name\": \"seed\", \"shape\": [2], "
                  "\"datatype\": \"INT64\", \"data\": [5, 6]}, {\"name\": "
                  "\"class\", \"shape\": [2, 1], \"datatype\": \"INT32\", "
                  "\"data\": [[2], [0]]}]}", &r), GF_OK);
  CHECK(r.n == 2 && r.seeds && r.cls && r.cls[0] == 2 && r.cls[1] == 0 &&
        !r.cls_name);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(v2("{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], "
                  "\"datatype\": \"INT64\", \"data\": [5]}]}", &r), GF_OK);
  CHECK(r.cls == NULL);
  gfs_infer_req_free(&r);
  const char *bad[] = {
      /* class alone, twice, rows, datatype, shape, values */
      "{\"inputs\": [{\"name\": \"class\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [0]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [0]}, {\"name\": \"seed\", \"shape\": [1], "
      "\"datatype\": \"INT64\", \"data\": [0]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [0]}, {\"name\": \"class\", \"shape\": [2], "
      "\"datatype\": \"INT64\", \"data\": [0, 1]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [0]}, {\"name\": \"class\", \"shape\": [1], "
      "\"datatype\": \"BYTES\", \"data\": [\"cat\"]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [0]}, {\"name\": \"class\", \"shape\": [1, 2], "
      "\"datatype\": \"INT64\", \"data\": [0, 1]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [0]}, {\"name\": \"class\", \"shape\": [1], "
      "\"datatype\": \"INT64\", \"data\": [-1]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [0]}, {\"name\": \"class\", \"shape\": [1], "
      "\"datatype\": \"INT64\", \"data\": [2147483648]}]}",
      "{\"inputs\": [{\"name\": \"seed\", \"shape\": [1], \"datatype\": "
      "\"INT64\", \"data\": [0]}, {\"name\": \"class\", \"shape\": [1], "
      "\"datatype\": \"INT64\", \"data\": [0.5]}]}"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    CHECKF(v2(bad[i], &r) != GF_OK, "accepted %s", bad[i]);
    CHECK(r.cls == NULL && r.seeds == NULL);
  }
  /* binary: z FP32 [1, 3] then class INT64 [1] */
  unsigned char raw[20];
  put_lef32(raw, 0.5f);
  put_lef32(raw + 4, -0.5f);
  put_lef32(raw + 8, 0.25f);
  put_le64(raw + 12, 7);
  char body[1024], hdr[24];
  size_t len = bin_body(body, sizeof body,
                        "{\"inputs\": [{\"name\": \"z\", \"shape\": [1, 3], "
                        "\"datatype\": \"FP32\", \"parameters\": "
                        "{\"binary_data_size\": 12}}, {\"name\": \"class\", "
                        "\"shape\": [1], \"datatype\": \"INT64\", "
                        "\"parameters\": {\"binary_data_size\": 8}}]}",
                        raw, sizeof raw, hdr);
  CHECK_INT_EQ(v2b(body, len, hdr, &r), GF_OK);
  CHECK(r.n == 1 && r.z && r.z[1] == -0.5f && r.cls && r.cls[0] == 7);
  gfs_infer_req_free(&r);
  CHECK(v2b(body, len - 1, hdr, &r) != GF_OK); /* a byte short */
  /* /invocations */
  CHECK_INT_EQ(inv("{\"dataframe_split\": {\"columns\": [\"class\", "
                   "\"seed\"], \"data\": [[1, 4], [\"cat\", 5], [null, 6]]}}",
                   &r), GF_OK);
  CHECK(r.n == 3 && r.cls && r.cls[0] == 1 && r.cls[1] == -1 &&
        r.cls[2] == -2 && r.cls_name &&
        strcmp(r.cls_name + (GFS_CLASS_MAX + 1), "cat") == 0);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(inv("{\"inputs\": {\"seed\": [1, 2], \"class\": [2, 0]}}",
                   &r), GF_OK);
  CHECK(r.cls && r.cls[0] == 2 && r.cls[1] == 0 && !r.cls_name);
  gfs_infer_req_free(&r);
  CHECK_INT_EQ(inv("{\"instances\": [{\"seed\": 1, \"class\": 2}]}", &r),
               GF_OK);
  CHECK(r.cls && r.cls[0] == 2);
  gfs_infer_req_free(&r);
  char longname[128];
  memset(longname, 'a', sizeof longname);
  longname[GFS_CLASS_MAX + 1] = '\0';
  char lb[256];
  snprintf(lb, sizeof lb, "{\"instances\": [{\"seed\": 1, \"class\": "
           "\"%s\"}]}", longname);
  const char *ibad[] = {
      lb, "{\"instances\": [{\"seed\": 1, \"class\": \"\"}]}",
      "{\"instances\": [{\"seed\": 1, \"class\": -1}]}",
      "{\"instances\": [{\"seed\": 1, \"class\": true}]}",
      "{\"inputs\": {\"seed\": [1], \"class\": [1, 2]}}",
      "{\"inputs\": {\"class\": [1]}}"};
  for (size_t i = 0; i < sizeof ibad / sizeof *ibad; i++) {
    CHECKF(inv(ibad[i], &r) != GF_OK, "accepted %s", ibad[i]);
    CHECK(r.cls == NULL && r.cls_name == NULL);
  }
}

static gf_status args(gfs_config *c, int *help, gf_err *e, int n, ...) {
  char *argv[32] = {"ganflow-serve"};
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) argv[i + 1] = va_arg(ap, char *);
  va_end(ap);
  return gfs_config_parse_args(c, n + 1, argv, help, e);
}

static void test_config(void) {
  gfs_config c;
  gf_err e;
  int help;
  CHECK_INT_EQ(args(&c, &help, &e, 7, "--model", "models:/a@prod", "--listen",
                    "0.0.0.0:0", "--max-images=8", "--device", "cuda:1"),
               GF_OK);
  CHECK(c.n_models == 1 && c.port == 0 && c.max_images == 8 &&
        c.backend == GF_BACKEND_CUDA && c.device_index == 1);
  CHECK_STR_EQ(c.host, "0.0.0.0");
  CHECK_INT_EQ(args(&c, &help, &e, 1, "--help"), GF_OK);
  CHECK(help == 1);
  CHECK_INT_EQ(args(&c, &help, &e, 0), GF_EINVAL); /* no --model */
  CHECK(strstr(e.msg, "--model") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--max-images", "0"), GF_EINVAL);
  CHECK(strstr(e.msg, "--max-images") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p", "--device",
                    "tpu"), GF_EINVAL);
  CHECK(strstr(e.msg, "--device") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p", "--listen",
                    "nohost"), GF_EINVAL);
  CHECK_INT_EQ(args(&c, &help, &e, 2, "--model", "runs:/x"), GF_EINVAL);
  CHECK_INT_EQ(args(&c, &help, &e, 3, "--model", "models:/a@p", "--poll"),
               GF_EINVAL);
  CHECK(strstr(e.msg, "--poll") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 2, "--model", "models:/a@p"), GF_OK);
  CHECK_INT_EQ(c.preferred_batch, 16); /* defaults: dynamic batching */
  CHECK_INT_EQ(c.max_queue_delay_us, 500);
  CHECK_INT_EQ(args(&c, &help, &e, 6, "--model", "models:/a@p",
                    "--preferred-batch", "8", "--max-queue-delay-us", "0"),
               GF_OK);
  CHECK_INT_EQ(c.preferred_batch, 8);
  CHECK_INT_EQ(c.max_queue_delay_us, 0);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--preferred-batch", "0"), GF_EINVAL);
  CHECK(strstr(e.msg, "--preferred-batch") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--preferred-batch", "65"), GF_EINVAL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--max-queue-delay-us", "-1"), GF_EINVAL);
  CHECK(strstr(e.msg, "--max-queue-delay-us") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--max-queue-delay-us", "1000001"), GF_EINVAL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--batch-rows", "4"), GF_EINVAL); /* gone */
  CHECK_INT_EQ(c.precision, GF_GEN_FP32);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--precision", "bf16"), GF_OK);
  CHECK_INT_EQ(c.precision, GF_GEN_BF16);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--precision", "int8"), GF_OK);
  CHECK_INT_EQ(c.precision, GF_GEN_INT8);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--precision", "int4"), GF_EINVAL);
  CHECK(strstr(e.msg, "--precision") != NULL);
  /* --cache-dir: GFS_CACHE_DIR_MAX bytes are taken, one more is refused
   * (CACHE/NAME/VERSION/FILE would not fit a path) */
  static char dir[GF_PATH_MAX + 2];
  memset(dir, 'd', GFS_CACHE_DIR_MAX + 1);
  dir[0] = '/';
  dir[GFS_CACHE_DIR_MAX + 1] = '\0';
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--cache-dir", dir), GF_EINVAL);
  CHECK(strstr(e.msg, "--cache-dir") != NULL);
  dir[GFS_CACHE_DIR_MAX] = '\0';
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--cache-dir", dir), GF_OK);
  CHECK(c.cache_dir && strlen(c.cache_dir) == GFS_CACHE_DIR_MAX);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--cache-dir", ""), GF_EINVAL);
  /* --token-file and --port-file: no longer than a path */
  memset(dir, 'd', GF_PATH_MAX);
  dir[GF_PATH_MAX] = '\0';
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--token-file", dir), GF_EINVAL);
  CHECK(strstr(e.msg, "--token-file") != NULL);
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p",
                    "--port-file", dir), GF_EINVAL);
  CHECK(strstr(e.msg, "--port-file") != NULL);
  /* a flag longer than any flag: unknown, not cut to a known one */
  CHECK_INT_EQ(args(&c, &help, &e, 3, "--model", "models:/a@p", dir),
               GF_EINVAL);
  CHECK(strstr(e.msg, "unexpected argument") != NULL);
  dir[0] = dir[1] = '-';
  CHECK_INT_EQ(args(&c, &help, &e, 4, "--model", "models:/a@p", dir, "v"),
               GF_EINVAL);
  CHECK(strstr(e.msg, "unknown flag") != NULL);
}

/* A model name or alias that the cache and the headers cannot take is
 * refused when the slot is made; the longest one is taken. */
static void test_slot_names(void) {
  char uri[GFS_NAME_MAX + 64];
  char name[GFS_NAME_MAX + 2];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = '\0'; /* GFS_NAME_MAX + 1 bytes */
  gfs_slot sl;
  gf_err e;
  REQUIRE(snprintf(uri, sizeof uri, "models:/%s@prod", name) <
          (int)sizeof uri);
  CHECK_INT_EQ(gfs_slot_init(&sl, uri, &e), GF_EINVAL);
  CHECK(strstr(e.msg, "--model") && strstr(e.msg, "name is too long"));
  gfs_slot_free(&sl);
  REQUIRE(snprintf(uri, sizeof uri, "models:/m@%s", name) < (int)sizeof uri);
  CHECK_INT_EQ(gfs_slot_init(&sl, uri, &e), GF_EINVAL); /* the URI parser's */
  CHECK(strstr(e.msg, "--model") != NULL);
  gfs_slot_free(&sl);
  name[GFS_NAME_MAX] = '\0';
  REQUIRE(snprintf(uri, sizeof uri, "models:/%s@prod", name) <
          (int)sizeof uri);
  CHECK_INT_EQ(gfs_slot_init(&sl, uri, &e), GF_OK);
  CHECK_INT_EQ(strlen(sl.name), GFS_NAME_MAX);
  gfs_slot_free(&sl);
  CHECK_INT_EQ(gfs_cache_dir_check("", "--cache-dir", &e), GF_EINVAL);
  CHECK_INT_EQ(gfs_cache_dir_check("/tmp/cache", "--cache-dir", &e), GF_OK);
}

static void test_metrics(void) {
  gfs_metrics m;
  gfs_metrics_init(&m);
  gfs_metrics_observe(&m, GFS_EP_GENERATE, 200, 0.0015);
  gfs_metrics_observe(&m, GFS_EP_GENERATE, 429, 0.0001);
  char *text = NULL;
  size_t len = 0;
  gf_err e;
  REQUIRE(gfs_metrics_render(&m, NULL, 0, &text, &len, &e) == GF_OK);
  CHECK(strstr(text, "ganflow_serve_requests_total{endpoint=\"generate\"} 2"));
  CHECK(strstr(text, "ganflow_serve_request_failures_total{endpoint="
                     "\"generate\"} 1"));
  CHECK(strstr(text, "ganflow_serve_responses_total{code=\"429\"} 1"));
  CHECK(strstr(text, "ganflow_serve_forward_passes_total 0\n"));
  CHECK(strstr(text, "ganflow_serve_shared_jobs_total 0\n"));
  /* cumulative buckets: 0.0001 <= 0.0005, 0.0015 <= 0.002 */
  CHECK(strstr(text, "{endpoint=\"generate\",le=\"0.0005\"} 1\n"));
  CHECK(strstr(text, "{endpoint=\"generate\",le=\"0.001\"} 1\n"));
  CHECK(strstr(text, "{endpoint=\"generate\",le=\"0.002\"} 2\n"));
  CHECK(strstr(text, "{endpoint=\"generate\",le=\"+Inf\"} 2\n"));
  CHECK(len == strlen(text));
  free(text);
}

/* The checker fires: a miss is counted (then forgiven here). */
static void test_checker_fires(void) {
  int before = check_failures_;
  gfs_gen_args a;
  fprintf(stderr, "(the next CHECK failure is intended)\n");
  CHECK(q("n=17", &a) == GF_OK); /* must fail: 17 > max 16 */
  int fired = check_failures_ == before + 1;
  check_failures_ = before;
  CHECK(fired);
}

int main(void) {
  test_query();
  test_v2_style();
  test_v2();
  test_v2_outputs();
  test_v2_binary();
  test_headers();
  test_pixel();
  test_json_float();
  test_invocations();
  test_invocations_mlflow();
  test_classes();
  test_config();
  test_slot_names();
  test_metrics();
  test_checker_fires();
  return check_report();
}
