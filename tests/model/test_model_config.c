/* test_model_config.c - gf_model_config: defaults validate, JSON round
 * trips, unknown fields are ignored, and every missing, mistyped or
 * out-of-range field is rejected with a message naming that field. */
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "gf/model_config.h"

static const char *k_fields[] = {"format_version", "architecture", "z_dim",
                                 "image_height",   "image_width",  "image_channels",
                                 "num_classes",    "ngf",          "ndf",
                                 "pixel_normalization"};
#define NFIELDS (sizeof k_fields / sizeof k_fields[0])

/* JSON of the default dcgan config with one field replaced (value is raw
 * JSON) or removed (value NULL); caller frees. */
static char *variant(const char *field, const char *value) {
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  char *json = NULL;
  REQUIRE(gf_model_config_to_json(&c, &json, NULL) == GF_OK);
  cJSON *o = cJSON_Parse(json);
  free(json);
  REQUIRE(o != NULL);
  cJSON_DeleteItemFromObjectCaseSensitive(o, field);
  if (value) {
    cJSON *v = cJSON_Parse(value);
    REQUIRE(v != NULL);
    cJSON_AddItemToObject(o, field, v);
  }
  char *out = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  REQUIRE(out != NULL);
  return out;
}

static void expect_bad(const char *field, const char *value, gf_status want) {
  char *json = variant(field, value);
  gf_model_config c;
  memset(&c, 0x5a, sizeof c);
  gf_model_config before = c;
  gf_err err = {GF_OK, ""};
  gf_status st = gf_model_config_from_json(json, strlen(json), &c, &err);
  CHECKF(st == want, "%s=%s: got %s, want %s", field, value ? value : "(missing)",
         gf_status_name(st), gf_status_name(want));
  CHECKF(strstr(err.msg, field) != NULL, "%s=%s: message does not name the field: %s", field,
         value ? value : "(missing)", err.msg);
  CHECK(memcmp(&c, &before, sizeof c) == 0); /* untouched on failure */
  cJSON_free(json);
}

int main(void) {
  gf_err err = {GF_OK, ""};
  gf_model_config c, back;

  /* Round trips of the three defaults and a conditional variant. */
  for (int arch = 0; arch < 4; arch++) {
    gf_model_config_default(&c, arch == 1   ? GF_ARCH_MLP
                                : arch == 3 ? GF_ARCH_RESNET
                                            : GF_ARCH_DCGAN);
    if (arch == 2) {
      c.num_classes = 10;
      c.image_height = c.image_width = 28;
      c.image_channels = 1;
      c.ngf = 32;
      c.ndf = 48;
      c.z_dim = 62;
    }
    CHECKF(gf_model_config_validate(&c, &err) == GF_OK, "%s", err.msg);
    char *json = NULL;
    REQUIRE(gf_model_config_to_json(&c, &json, &err) == GF_OK);
    CHECK(json[strlen(json) - 1] == '\n');
    for (size_t i = 0; i < NFIELDS; i++) CHECK(strstr(json, k_fields[i]) != NULL);
    memset(&back, 0, sizeof back);
    CHECKF(gf_model_config_from_json(json, strlen(json), &back, &err) == GF_OK, "%s", err.msg);
    CHECK(gf_model_config_equal(&c, &back));
    free(json);
  }
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  CHECK_STR_EQ(gf_arch_name(c.architecture), "dcgan");
  CHECK_STR_EQ(gf_pixel_norm_name(c.pixel_norm), "tanh_-1_1");
  CHECK(c.z_dim == 100 && c.image_height == 64 && c.image_channels == 3 && c.ngf == 64);
  gf_model_config_default(&c, GF_ARCH_RESNET);
  CHECK_STR_EQ(gf_arch_name(c.architecture), "resnet");
  CHECK(c.z_dim == 128 && c.image_height == 32 && c.image_channels == 3 && c.ngf == 64);
  gf_arch ra;
  CHECK(gf_arch_parse("resnet", &ra, &err) == GF_OK && ra == GF_ARCH_RESNET);

  /* Unknown fields are ignored; the text need not be NUL-terminated. */
  const char *extra = "{\"format_version\":1,\"architecture\":\"mlp\",\"z_dim\":100,"
                      "\"image_height\":28,\"image_width\":28,\"image_channels\":1,"
                      "\"num_classes\":0,\"ngf\":1024,\"ndf\":1024,"
                      "\"pixel_normalization\":\"tanh_-1_1\",\"future\":{\"x\":[1]}}XYZ";
  CHECKF(gf_model_config_from_json(extra, strlen(extra) - 3, &back, &err) == GF_OK, "%s",
         err.msg);
  CHECK(back.architecture == GF_ARCH_MLP && back.ngf == 1024);
  CHECK_INT_EQ(gf_model_config_from_json(extra, strlen(extra), &back, &err), GF_EFORMAT);

  /* Each field missing. */
  for (size_t i = 0; i < NFIELDS; i++) expect_bad(k_fields[i], NULL, GF_EINVAL);
  /* Wrong types. */
  for (size_t i = 0; i < NFIELDS; i++) {
    int is_str = !strcmp(k_fields[i], "architecture") || !strcmp(k_fields[i], "pixel_normalization");
    expect_bad(k_fields[i], is_str ? "7" : "\"7\"", GF_EINVAL);
    expect_bad(k_fields[i], "null", GF_EINVAL);
  }
  /* Bad values. */
  expect_bad("z_dim", "0", GF_EINVAL);
  expect_bad("z_dim", "1.5", GF_EINVAL);
  expect_bad("z_dim", "1e12", GF_EINVAL);
  expect_bad("image_height", "48", GF_EINVAL);  /* dcgan: 28/32/64 */
  expect_bad("image_width", "32", GF_EINVAL);   /* dcgan: square */
  expect_bad("image_channels", "2", GF_EINVAL); /* dcgan: 1 or 3 */
  expect_bad("image_channels", "0", GF_EINVAL);
  expect_bad("num_classes", "1", GF_EINVAL);
  expect_bad("num_classes", "-1", GF_EINVAL);
  expect_bad("ngf", "0", GF_EINVAL);
  expect_bad("ndf", "100000", GF_EINVAL);
  expect_bad("architecture", "\"stylegan\"", GF_EINVAL);
  expect_bad("pixel_normalization", "\"0_1\"", GF_EINVAL);
  expect_bad("format_version", "2", GF_EUNSUPPORTED);
  expect_bad("format_version", "0", GF_EINVAL);

  /* spectral_norm: optional, a boolean, written only when set. */
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  char *plain = NULL, *sn = NULL;
  REQUIRE(gf_model_config_to_json(&c, &plain, &err) == GF_OK);
  CHECK(strstr(plain, "spectral_norm") == NULL);
  c.spectral_norm = 1;
  REQUIRE(gf_model_config_to_json(&c, &sn, &err) == GF_OK);
  CHECK(strstr(sn, "\"spectral_norm\":\ttrue") != NULL);
  CHECKF(gf_model_config_from_json(sn, strlen(sn), &back, &err) == GF_OK, "%s", err.msg);
  CHECK(back.spectral_norm == 1 && gf_model_config_equal(&back, &c));
  CHECK(!gf_model_config_equal(&back, &(gf_model_config){0}));
  CHECKF(gf_model_config_from_json(plain, strlen(plain), &back, &err) == GF_OK, "%s", err.msg);
  CHECK(back.spectral_norm == 0 && !gf_model_config_equal(&back, &c));
  free(plain);
  free(sn);
  expect_bad("spectral_norm", "1", GF_EINVAL);
  expect_bad("spectral_norm", "\"true\"", GF_EINVAL);
  const char *sn_twice = "{\"format_version\":1,\"architecture\":\"mlp\",\"z_dim\":100,"
                         "\"image_height\":28,\"image_width\":28,\"image_channels\":1,"
                         "\"num_classes\":0,\"ngf\":1024,\"ndf\":1024,"
                         "\"pixel_normalization\":\"tanh_-1_1\",\"spectral_norm\":true,"
                         "\"spectral_norm\":false}";
  CHECK_INT_EQ(gf_model_config_from_json(sn_twice, strlen(sn_twice), &back, &err), GF_EINVAL);
  CHECK(strstr(err.msg, "spectral_norm") != NULL);

  /* A field given twice is ambiguous. */
  const char *twice = "{\"format_version\":1,\"format_version\":1}";
  CHECK_INT_EQ(gf_model_config_from_json(twice, strlen(twice), &back, &err), GF_EINVAL);
  CHECK(strstr(err.msg, "format_version") != NULL);
  /* Not JSON / not an object. */
  CHECK_INT_EQ(gf_model_config_from_json("{", 1, &back, &err), GF_EFORMAT);
  CHECK_INT_EQ(gf_model_config_from_json("", 0, &back, &err), GF_EFORMAT);
  CHECK_INT_EQ(gf_model_config_from_json("[1]", 3, &back, &err), GF_EINVAL);
  CHECK_INT_EQ(gf_model_config_from_json(NULL, 0, &back, &err), GF_EINVAL);

  /* to_json refuses an invalid struct. */
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  c.image_height = 50;
  char *json = (char *)"x";
  CHECK_INT_EQ(gf_model_config_to_json(&c, &json, &err), GF_EINVAL);
  CHECK(json == NULL);
  CHECK(strstr(err.msg, "image_height") != NULL);
  /* The mlp accepts non-square images. */
  gf_model_config_default(&c, GF_ARCH_MLP);
  c.image_height = 20;
  c.image_width = 30;
  c.image_channels = 2;
  CHECK_INT_EQ(gf_model_config_validate(&c, &err), GF_OK);
  return check_report();
}
