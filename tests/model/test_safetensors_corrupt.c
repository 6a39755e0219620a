/* test_safetensors_corrupt.c - every way of breaking a safetensors file
 * that the strict reader must catch: each broken file gives an error (never
 * a crash, never GF_OK) through both the buffer and the file path. Each
 * hand-made header is first shown to parse when left intact, so a failure
 * is the corruption's doing. Ends with a deterministic random-mutation
 * sweep (no crash, sanitizers watching). */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gf/safetensors.h"
#include "file_util.h"

static char g_dir[256];

/* Parses bytes both ways; returns the buffer-path status and checks the
 * file path agrees. The buffer is copied to an exact-size allocation so
 * ASan catches any read past the end. */
static gf_status parse_both(const uint8_t *bytes, size_t len, unsigned flags, gf_err *err) {
  uint8_t *copy = calloc(len ? len : 1, 1);
  REQUIRE(copy != NULL);
  if (len) memcpy(copy, bytes, len);
  gf_st_file f;
  gf_status a = gf_st_parse(&f, copy, len, flags, err);
  if (a == GF_OK) {
    /* Touch every byte the reader handed out. */
    unsigned sum = 0;
    for (size_t i = 0; i < f.n_tensors; i++)
      for (size_t k = 0; k < f.tensors[i].nbytes; k++)
        sum += ((const uint8_t *)f.tensors[i].data)[k];
    (void)sum;
  }
  gf_st_file_free(&f);
  free(copy);
  char path[512];
  snprintf(path, sizeof path, "%s/c.safetensors", g_dir);
  tu_write(path, bytes, len);
  gf_err ferr;
  gf_status b = gf_st_open(&f, path, flags, &ferr);
  gf_st_file_free(&f);
  CHECKF(a == b, "buffer path %s, file path %s", gf_status_name(a), gf_status_name(b));
  return a;
}

/* 8-byte little-endian length + header text (padded with spaces to a
 * multiple of 8) + data. Caller frees. */
static uint8_t *craft(const char *header, const void *data, size_t data_len, size_t *len) {
  size_t h = strlen(header);
  size_t hp = (h + 7) / 8 * 8;
  *len = 8 + hp + data_len;
  uint8_t *b = malloc(*len);
  REQUIRE(b != NULL);
  for (int k = 0; k < 8; k++) b[k] = (uint8_t)((uint64_t)hp >> (8 * k));
  memcpy(b + 8, header, h);
  memset(b + 8 + h, ' ', hp - h);
  if (data_len) memcpy(b + 8 + hp, data, data_len);
  return b;
}

static void expect_header(const char *name, const char *header, size_t data_len,
                          gf_status want) {
  static const uint8_t data[64];
  size_t len;
  uint8_t *b = craft(header, data, data_len, &len);
  gf_err err = {GF_OK, ""};
  gf_status st = parse_both(b, len, 0, &err);
  CHECKF(st == want, "%s: got %s (%s), want %s", name, gf_status_name(st), err.msg,
         gf_status_name(want));
  free(b);
}

static void set_len(uint8_t *b, uint64_t n) {
  for (int k = 0; k < 8; k++) b[k] = (uint8_t)(n >> (8 * k));
}

int main(void) {
  tu_mkdtemp(g_dir, sizeof g_dir);
  gf_err err = {GF_OK, ""};

  /* ---- a valid file from the writer -------------------------------------- */
  float w[6] = {1, 2, 3, 4, 5, 6};
  int64_t steps[2] = {7, 8};
  uint8_t u[3] = {9, 10, 11};
  const int64_t sw[] = {2, 3}, ss[] = {2}, su[] = {3};
  gf_st_tensor_desc t[] = {{"w", GF_ST_F32, 2, sw, w}, {"steps", GF_ST_I64, 1, ss, steps},
                           {"u", GF_ST_U8, 1, su, u}};
  gf_st_kv meta[] = {{"note", "valid"}};
  uint8_t *good;
  size_t len;
  REQUIRE(gf_st_write_buffer(t, 3, meta, 1, GF_ST_DATA_SHA256, &good, &len, &err) == GF_OK);
  uint64_t hlen = 0;
  for (int k = 7; k >= 0; k--) hlen = (hlen << 8) | good[k];
  const size_t data_at = 8 + (size_t)hlen;
  CHECK_INT_EQ(parse_both(good, len, GF_ST_VERIFY_SHA256, &err), GF_OK);

  /* ---- truncated at several points --------------------------------------- */
  const size_t cuts[] = {0, 1, 7, 8, 9, 8 + (size_t)hlen / 2, data_at - 1, data_at,
                         data_at + 1, data_at + 24, len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    gf_status st = parse_both(good, cuts[i], 0, &err);
    CHECKF(st == GF_EFORMAT, "truncated at %zu of %zu: %s", cuts[i], len, gf_status_name(st));
  }

  /* ---- header length field ------------------------------------------------ */
  uint8_t *b = malloc(len);
  REQUIRE(b != NULL);
  const uint64_t lens[] = {0, (uint64_t)len - 7, (uint64_t)len, 200000000ull,
                           GF_ST_MAX_HEADER + 1ull, UINT64_MAX, hlen - 1, hlen + 1};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    memcpy(b, good, len);
    set_len(b, lens[i]);
    gf_status st = parse_both(b, len, 0, &err);
    CHECKF(st == GF_EFORMAT, "header length %llu: %s", (unsigned long long)lens[i],
           gf_status_name(st));
  }

  /* ---- one byte of data flipped: only the digest can tell ---------------- */
  memcpy(b, good, len);
  b[data_at + 5] ^= 0x01;
  CHECK_INT_EQ(parse_both(b, len, 0, &err), GF_OK);
  CHECK_INT_EQ(parse_both(b, len, GF_ST_VERIFY_SHA256, &err), GF_EINTEGRITY);
  CHECK(strstr(err.msg, "SHA-256") != NULL);
  memcpy(b, good, len);
  b[len - 1] ^= 0x80;
  CHECK_INT_EQ(parse_both(b, len, GF_ST_VERIFY_SHA256, &err), GF_EINTEGRITY);
  /* A damaged digest value is caught too. */
  memcpy(b, good, len);
  char *dg = strstr((char *)b + 8, GF_ST_DATA_SHA256_KEY "\":\"");
  REQUIRE(dg != NULL);
  dg += strlen(GF_ST_DATA_SHA256_KEY "\":\"");
  dg[0] = dg[0] == 'a' ? 'b' : 'a';
  CHECK_INT_EQ(parse_both(b, len, GF_ST_VERIFY_SHA256, &err), GF_EINTEGRITY);
  dg[0] = 'X';
  CHECK_INT_EQ(parse_both(b, len, GF_ST_VERIFY_SHA256, &err), GF_EFORMAT);
  /* Extra bytes appended after the last tensor. */
  uint8_t *longer = malloc(len + 8);
  REQUIRE(longer != NULL);
  memcpy(longer, good, len);
  memset(longer + len, 0, 8);
  CHECK_INT_EQ(parse_both(longer, len + 8, 0, &err), GF_EFORMAT);
  free(longer);
  free(b);

  /* ---- hand-made headers --------------------------------------------------- */
#define T(name, dtype, shape, b0, b1) \
  "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b0 "," #b1 "]}"
  /* Controls: these parse. */
  expect_header("control two tensors", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[1]", 8, 12) "}",
                12, GF_OK);
  expect_header("control metadata", "{\"__metadata__\":{\"k\":\"v\"}," T("a", "U8", "[3]", 0, 3) "}",
                3, GF_OK);
  expect_header("control null metadata", "{\"__metadata__\":null," T("a", "I16", "[]", 0, 2) "}",
                2, GF_OK);
  expect_header("control zero-size", "{" T("z", "F32", "[0,5]", 0, 0) "," T("a", "I8", "[1]", 0, 1) "}",
                1, GF_OK);
  expect_header("control empty", "{}", 0, GF_OK);
  /* Broken. */
  expect_header("invalid JSON (unclosed)", "{" T("a", "F32", "[2]", 0, 8), 8, GF_EFORMAT);
  expect_header("invalid JSON (garbage)", "{\"a\": nope}", 0, GF_EFORMAT);
  expect_header("trailing bytes after JSON", "{" T("a", "F32", "[2]", 0, 8) "} x", 8, GF_EFORMAT);
  expect_header("not an object", "[1,2]", 0, GF_EFORMAT);
  expect_header("unknown dtype", "{" T("a", "F8_E4M3", "[8]", 0, 8) "}", 8, GF_EUNSUPPORTED);
  expect_header("dtype not a string", "{\"a\":{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}}",
                8, GF_EFORMAT);
  expect_header("shape x dtype != bytes", "{" T("a", "F32", "[3]", 0, 8) "}", 8, GF_EFORMAT);
  expect_header("shape x dtype != bytes (dtype)", "{" T("a", "F64", "[2]", 0, 8) "}", 8, GF_EFORMAT);
  expect_header("offsets beyond the file", "{" T("a", "F32", "[4]", 0, 16) "}", 8, GF_EFORMAT);
  expect_header("offsets far beyond", "{" T("a", "U8", "[8]", 4294967296, 4294967304) "}", 8,
                GF_EFORMAT);
  expect_header("offsets reversed", "{" T("a", "U8", "[0]", 8, 0) "}", 8, GF_EFORMAT);
  expect_header("overlapping tensors", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 4, 12) "}",
                12, GF_EFORMAT);
  expect_header("identical ranges", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 0, 8) "}",
                8, GF_EFORMAT);
  expect_header("gap between tensors", "{" T("a", "F32", "[1]", 0, 4) "," T("b", "F32", "[1]", 8, 12) "}",
                12, GF_EFORMAT);
  expect_header("gap at the start", "{" T("a", "F32", "[1]", 4, 8) "}", 8, GF_EFORMAT);
  expect_header("duplicate names", "{" T("a", "F32", "[1]", 0, 4) "," T("a", "F32", "[1]", 4, 8) "}",
                8, GF_EFORMAT);
  expect_header("duplicate __metadata__", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, GF_EFORMAT);
  expect_header("non-string metadata", "{\"__metadata__\":{\"k\":1}," T("a", "U8", "[1]", 0, 1) "}",
                1, GF_EFORMAT);
  expect_header("metadata not an object", "{\"__metadata__\":[\"k\"]}", 0, GF_EFORMAT);
  expect_header("duplicate metadata key", "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, GF_EFORMAT);
  expect_header("negative dim", "{" T("a", "U8", "[-1]", 0, 0) "}", 0, GF_EFORMAT);
  expect_header("fractional dim", "{" T("a", "U8", "[1.5]", 0, 1) "}", 1, GF_EFORMAT);
  expect_header("string dim", "{" T("a", "U8", "[\"1\"]", 0, 1) "}", 1, GF_EFORMAT);
  expect_header("shape overflow",
                "{" T("a", "F64", "[4294967296,4294967296,4294967296]", 0, 8) "}", 8, GF_EFORMAT);
  expect_header("dim beyond 2^53", "{" T("a", "U8", "[1e300]", 0, 8) "}", 8, GF_EFORMAT);
  expect_header("too many dims", "{" T("a", "U8", "[1,1,1,1,1,1,1,1,1]", 0, 1) "}", 1,
                GF_EUNSUPPORTED);
  expect_header("three offsets",
                "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1, GF_EFORMAT);
  expect_header("missing data_offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, GF_EFORMAT);
  expect_header("unknown field",
                "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1}}", 1,
                GF_EFORMAT);
  expect_header("entry not an object", "{\"a\":[1]}", 0, GF_EFORMAT);
  expect_header("data but no tensors", "{}", 8, GF_EFORMAT);
  expect_header("not starting with {", " {}", 0, GF_EFORMAT);
  expect_header("invalid UTF-8", "{\"\xc3\x28\":{}}", 0, GF_EFORMAT);
  expect_header("control byte", "{\"a\x01\":{}}", 0, GF_EFORMAT);
#undef T

  /* ---- random mutations: errors or success, never a crash --------------- */
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  b = malloc(len);
  REQUIRE(b != NULL);
  int rejected = 0;
  for (int it = 0; it < 400; it++) {
    memcpy(b, good, len);
    int flips = 1 + it % 4;
    for (int k = 0; k < flips; k++) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      size_t at = (size_t)(rng % len);
      b[at] = (uint8_t)(rng >> 32);
    }
    gf_st_file f;
    gf_status st = gf_st_parse(&f, b, len, GF_ST_VERIFY_SHA256, NULL);
    gf_st_file_free(&f);
    if (st != GF_OK) rejected++;
  }
  /* A digest-verified parse accepts a mutated file only if the mutation
   * left it byte-identical or touched nothing checked (header whitespace). */
  CHECKF(rejected > 300, "only %d of 400 mutations rejected", rejected);
  free(b);
  free(good);
  tu_rmdir(g_dir);
  return check_report();
}
