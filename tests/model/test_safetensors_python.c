/* test_safetensors_python.c - interoperability with the reference
 * implementation: a file from gf_st_write_file must load in Python's
 * safetensors.numpy with the same values, metadata and data digest, and a
 * file from safetensors.numpy.save_file must pass the strict reader.
 * Usage: test_safetensors_python PYTHON SCRIPT. Exits 77 (skip), saying
 * why, when PYTHON is missing (no .venv); when it is there but
 * `import safetensors, numpy` fails, the install is broken and the test
 * fails with Python's error. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "python_util.h"
#include "gf/safetensors.h"
#include "file_util.h"

int main(int argc, char **argv) {
  if (argc != 3 || !argv[1][0]) {
    fprintf(stderr, "usage: test_safetensors_python PYTHON SCRIPT\n");
    return 2;
  }
  if (tu_python_ready(argv[1], "safetensors, numpy") != 0) return 1;

  char dir[256], in[320], out[320];
  tu_mkdtemp(dir, sizeof dir);
  snprintf(in, sizeof in, "%s/from_c.safetensors", dir);
  snprintf(out, sizeof out, "%s/from_py.safetensors", dir);

  float w[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-8f, -7.0f};
  double d[4] = {1.0, 2.0, -3.5, 1e300};
  int64_t steps[2] = {123456789012345LL, -1};
  int32_t i32 = -42, sc = 7;
  int16_t i16[2] = {-2, 3};
  int8_t i8[2] = {-128, 127};
  uint8_t u8[5] = {0, 1, 2, 254, 255}, flags[3] = {1, 0, 1};
  uint16_t half[3] = {0x3c00, 0x4000, 0xbc00};
  const int64_t sw[] = {2, 3}, s4[] = {4}, s2[] = {2}, s11[] = {1, 1}, s5[] = {5}, s3[] = {3},
                s03[] = {0, 3};
  gf_st_tensor_desc t[] = {
      {"weight", GF_ST_F32, 2, sw, w},   {"doubles", GF_ST_F64, 1, s4, d},
      {"steps", GF_ST_I64, 1, s2, steps}, {"i32", GF_ST_I32, 2, s11, &i32},
      {"i16", GF_ST_I16, 1, s2, i16},     {"i8", GF_ST_I8, 1, s2, i8},
      {"bytes", GF_ST_U8, 1, s5, u8},     {"flags", GF_ST_BOOL, 1, s3, flags},
      {"half", GF_ST_F16, 1, s3, half},   {"scalar", GF_ST_I32, 0, NULL, &sc},
      {"empty", GF_ST_F32, 2, s03, NULL},
  };
  gf_st_kv meta[] = {{"origin", "ganflow"}};
  gf_err err = {GF_OK, ""};
  REQUIRE(gf_st_write_file(in, t, sizeof t / sizeof t[0], meta, 1, GF_ST_DATA_SHA256, &err) ==
          GF_OK);

  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' '%s'", argv[1], argv[2], in, out);
  int rc = system(cmd);
  CHECKF(rc == 0, "python side failed (%d)", rc);

  gf_st_file f;
  if (rc == 0) {
    CHECKF(gf_st_open(&f, out, 0, &err) == GF_OK, "%s", err.msg);
    CHECK_INT_EQ(f.n_tensors, 4);
    CHECK_STR_EQ(gf_st_meta_get(&f, "from"), "python");
    const gf_st_tensor *a = gf_st_find(&f, "py_f32");
    CHECK(a && a->dtype == GF_ST_F32 && a->ndim == 2 && a->shape[0] == 3 && a->shape[1] == 4);
    if (a) {
      for (int i = 0; i < 12; i++) {
        float v;
        memcpy(&v, (const char *)a->data + 4 * i, 4);
        CHECK(v == (float)i / 4);
      }
    }
    const gf_st_tensor *b = gf_st_find(&f, "py_i64");
    CHECK(b && b->dtype == GF_ST_I64 && b->numel == 2);
    if (b) {
      int64_t v[2];
      memcpy(v, b->data, sizeof v);
      CHECK(v[0] == -((int64_t)1 << 62) && v[1] == ((int64_t)1 << 62));
    }
    const gf_st_tensor *c = gf_st_find(&f, "py_u8");
    CHECK(c && c->dtype == GF_ST_U8 && c->nbytes == 4 && !memcmp(c->data, "\1\2\3\4", 4));
    CHECK(gf_st_find(&f, "py_f64") != NULL);
    gf_st_file_free(&f);
  }
  tu_rmdir(dir);
  return check_report();
}
