/* test_mlmodel_classes.c - class names in the model directory: the rule
 * (gf_class_name_check, gf_class_names_check), the writer (config.json and
 * flavors.ganflow.config gain "class_names" for a conditional model; an
 * unconditional one's files are as before, config.json byte for byte
 * gf_model_config_to_json's; the signature's class column for every
 * conditional model), the reader's round trip and its refusals (wrong
 * count, bad name, duplicate, names on an unconditional model, config.json
 * and MLmodel disagreeing), and the lookup gf_mlmodel_class_index (name,
 * index, a name winning over an index, case hint, errors). */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "file_util.h"
#include "gf/class_name.h"
#include "gf/mlmodel.h"

static float g_w[6] = {1, 2, 3, 4, 5, 6};
static const int64_t s23[] = {2, 3};

#define K 5
/* A name that needs quoting in YAML ("Ankle boot"), one PyYAML would read
 * as a bool unquoted ("yes"), one that looks like an index ("3", at index
 * 1: the name wins), one with '/', one non-ASCII. */
static const char *const k_names[K] = {"Ankle boot", "3", "yes", "T-shirt/top", "caf\xc3\xa9"};

static void cond_config(gf_model_config *c, int k) {
  gf_model_config_default(c, GF_ARCH_DCGAN);
  c->num_classes = k;
}

static gf_status write_dir(const char *dir, const gf_model_config *c, const char *const *names,
                           gf_err *err) {
  gf_st_tensor_desc t[] = {{"main.0.weight", GF_ST_F32, 2, s23, g_w}};
  gf_mlmodel_info info = {"model", NULL, "3.0.0", "0.1.0", names};
  return gf_mlmodel_write(dir, c, t, 1, NULL, 0, &info, NULL, err);
}

static void write_text(const char *dir, const char *name, const char *text) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  tu_write(p, text, strlen(text));
}

static gf_status parse_text(const char *text, gf_err *err) {
  gf_mlmodel m;
  gf_status st = gf_mlmodel_parse(text, strlen(text), &m, err);
  CHECK(st == GF_OK || m.class_names == NULL); /* freed on failure */
  gf_mlmodel_free(&m);
  return st;
}

static void test_rule(void) {
  gf_err err = {GF_OK, ""};
  CHECK(gf_class_name_check("T-shirt/top", &err) == GF_OK);
  CHECK(gf_class_name_check("caf\xc3\xa9", &err) == GF_OK);
  CHECK(gf_class_name_check("", &err) == GF_EINVAL);
  CHECK(gf_class_name_check("a,b", &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "'a,b'") && strstr(err.msg, "','"), "%s", err.msg);
  CHECK(gf_class_name_check(" a", &err) == GF_EINVAL);
  CHECK(gf_class_name_check("a ", &err) == GF_EINVAL);
  CHECK(gf_class_name_check("a\tb", &err) == GF_EINVAL);
  CHECK(gf_class_name_check("\xff", &err) == GF_EINVAL);
  CHECK(gf_class_name_check("a\xe2\x80\x8b", &err) == GF_EINVAL); /* U+200B */
  char long_name[GF_CLASS_NAME_MAX + 2];
  memset(long_name, 'x', sizeof long_name - 1);
  long_name[GF_CLASS_NAME_MAX + 1] = '\0';
  CHECK(gf_class_name_check(long_name, &err) == GF_EINVAL);
  long_name[GF_CLASS_NAME_MAX] = '\0';
  CHECK(gf_class_name_check(long_name, &err) == GF_OK);
  CHECK(gf_class_names_check(k_names, K, &err) == GF_OK);
  const char *dup[] = {"cat", "dog", "cat"};
  CHECK(gf_class_names_check(dup, 3, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "class_names[2]") && strstr(err.msg, "class_names[0]"), "%s", err.msg);
  const char *cased[] = {"cat", "Cat"}; /* distinct */
  CHECK(gf_class_names_check(cased, 2, &err) == GF_OK);
  CHECK(gf_class_names_check(dup, 0, &err) == GF_EINVAL);
}

/* An unconditional model: no class_names anywhere, no class column,
 * config.json exactly gf_model_config_to_json's. */
static void test_unconditional(const char *tmp) {
  char dir[600];
  snprintf(dir, sizeof dir, "%s/uncond", tmp);
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  gf_err err = {GF_OK, ""};
  REQUIRE(write_dir(dir, &c, NULL, &err) == GF_OK);
  char *json = tu_read_text(dir, GF_MLMODEL_CONFIG), *want = NULL;
  REQUIRE(gf_model_config_to_json(&c, &want, &err) == GF_OK);
  CHECK_STR_EQ(json, want);
  char *ml = tu_read_text(dir, GF_MLMODEL_FILE);
  CHECK(strstr(ml, "class_names") == NULL && strstr(ml, "\\\"class\\\"") == NULL);
  gf_mlmodel m;
  REQUIRE(gf_mlmodel_read(dir, &m, &err) == GF_OK);
  CHECK(m.class_names == NULL && m.n_class_names == 0);
  CHECK_INT_EQ(m.n_sig_inputs, 2);
  int k = 7;
  CHECK(gf_mlmodel_class_index(&m, "0", &k, &err) == GF_EINVAL && k == -1);
  gf_mlmodel_free(&m);
  /* names for it are refused, before anything is written */
  snprintf(dir, sizeof dir, "%s/uncond-names", tmp);
  CHECK(write_dir(dir, &c, k_names, &err) == GF_EINVAL);
  CHECKF(strstr(err.msg, "not class-conditional"), "%s", err.msg);
  struct stat sb;
  CHECK(stat(dir, &sb) != 0);
  free(json);
  free(want);
  free(ml);
}

static void test_roundtrip(const char *tmp) {
  char dir[600];
  snprintf(dir, sizeof dir, "%s/cond", tmp);
  gf_model_config c;
  cond_config(&c, K);
  gf_err err = {GF_OK, ""};
  REQUIRE(write_dir(dir, &c, k_names, &err) == GF_OK);
  gf_mlmodel m;
  CHECKF(gf_mlmodel_read(dir, &m, &err) == GF_OK, "%s", err.msg);
  REQUIRE(m.n_class_names == K && m.class_names != NULL);
  for (int i = 0; i < K; i++) CHECK_STR_EQ(m.class_names[i], k_names[i]);
  CHECK_INT_EQ(m.config.num_classes, K);
  /* the signature: seed, z, class (long, optional) */
  REQUIRE(m.n_sig_inputs == 3);
  CHECK_STR_EQ(m.sig_inputs[2].name, GF_MLMODEL_SIG_CLASS);
  CHECK_STR_EQ(m.sig_inputs[2].type, "long");
  CHECK(m.sig_inputs[2].required == 0);
  /* the lookup */
  int k = -2;
  CHECK(gf_mlmodel_class_index(&m, "T-shirt/top", &k, &err) == GF_OK && k == 3);
  CHECK(gf_mlmodel_class_index(&m, "caf\xc3\xa9", &k, &err) == GF_OK && k == 4);
  CHECK(gf_mlmodel_class_index(&m, "3", &k, &err) == GF_OK && k == 1); /* the name wins */
  CHECK(gf_mlmodel_class_index(&m, "4", &k, &err) == GF_OK && k == 4);
  CHECK(gf_mlmodel_class_index(&m, "0", &k, &err) == GF_OK && k == 0);
  CHECK(gf_mlmodel_class_index(&m, "5", &k, &err) == GF_ENOTFOUND && k == -1);
  CHECK(gf_mlmodel_class_index(&m, "04", &k, &err) == GF_ENOTFOUND);
  CHECK(gf_mlmodel_class_index(&m, "-1", &k, &err) == GF_ENOTFOUND);
  CHECK(gf_mlmodel_class_index(&m, "99999999999999999999", &k, &err) == GF_ENOTFOUND);
  CHECK(gf_mlmodel_class_index(&m, "ankle boot", &k, &err) == GF_ENOTFOUND);
  CHECKF(strstr(err.msg, "did you mean 'Ankle boot' (index 0)"), "%s", err.msg);
  CHECK(gf_mlmodel_class_index(&m, "dog", &k, &err) == GF_ENOTFOUND);
  CHECKF(strstr(err.msg, "'dog'") && strstr(err.msg, "'yes'"), "%s", err.msg);
  CHECK(gf_mlmodel_class_index(&m, "", &k, &err) == GF_EINVAL);
  CHECK(gf_mlmodel_class_index(&m, NULL, &k, &err) == GF_EINVAL);
  CHECK(gf_mlmodel_class_index(NULL, "0", &k, &err) == GF_EINVAL);
  gf_mlmodel_free(&m);
  CHECK(m.class_names == NULL && m.n_class_names == 0);

  /* config.json carries them after the config's fields */
  char *json = tu_read_text(dir, GF_MLMODEL_CONFIG);
  CHECKF(strstr(json, "\"class_names\":\t[\"Ankle boot\", \"3\", \"yes\", \"T-shirt/top\", "
                      "\"caf\xc3\xa9\"]"),
         "%s", json);
  gf_model_config back;
  CHECK(gf_model_config_from_json(json, strlen(json), &back, &err) == GF_OK);
  CHECK(gf_model_config_equal(&back, &c));

  /* config.json that disagrees with the flavor (with its digest fixed up,
   * so that only the class names differ) */
  char *ml = tu_read_text(dir, GF_MLMODEL_FILE);
  char old_sha[GF_SHA256_HEX_LEN + 1], new_sha[GF_SHA256_HEX_LEN + 1];
  REQUIRE(gf_sha256_buf(json, strlen(json), old_sha, &err) == GF_OK);
  const struct {
    const char *from, *to, *want;
  } edits[] = {{"\"yes\"", "\"no\"", "class_names[2] differs"},
               {"\"Ankle boot\", ", "", "has 4 class_names"},
               {",\n\t\"class_names\"", ",\n\t\"other_names\"", "has no class_names"},
               {"[\"Ankle boot\"", "[1, \"Ankle boot\"", "has 6 class_names"},
               {"[\"Ankle boot\", \"3\"", "[\"Ankle boot\", 3", "class_names[1] differs"}};
  for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
    char *bad = tu_replace(json, edits[i].from, edits[i].to);
    REQUIRE(gf_sha256_buf(bad, strlen(bad), new_sha, &err) == GF_OK);
    char *ml2 = tu_replace(ml, old_sha, new_sha);
    write_text(dir, GF_MLMODEL_CONFIG, bad);
    write_text(dir, GF_MLMODEL_FILE, ml2);
    gf_err e2 = {GF_OK, ""};
    CHECKF(gf_mlmodel_read(dir, &m, &e2) == GF_EFORMAT && strstr(e2.msg, edits[i].want),
           "edit %zu: %s", i, e2.msg);
    gf_mlmodel_free(&m);
    free(bad);
    free(ml2);
  }
  write_text(dir, GF_MLMODEL_CONFIG, json);
  write_text(dir, GF_MLMODEL_FILE, ml);
  CHECK(gf_mlmodel_read(dir, &m, &err) == GF_OK);
  gf_mlmodel_free(&m);

  /* The flavor config's names as MLmodel text: refusals */
  const struct {
    const char *from, *to, *want;
  } yedits[] = {
      {"      - \"yes\"\n", "", "4 class_names for num_classes 5"},
      {"- \"yes\"\n", "- \"yes\"\n      - extra\n", "6 class_names for num_classes 5"},
      {"- \"yes\"", "- \"3\"", "is also class_names[1]"},
      {"- \"yes\"", "- \"a,b\"", "class_names[2]: class name 'a,b' contains ','"},
      {"- \"yes\"", "- \"\"", "is empty"},
      {"- \"yes\"", "- {a: b}", "class_names[2] is not a string"},
      {"num_classes: 5", "num_classes: 0", "not class-conditional"},
      {"class_names:", "class_names: x\n      other:", "is not a sequence"},
  };
  for (size_t i = 0; i < sizeof yedits / sizeof *yedits; i++) {
    char *bad = tu_replace(ml, yedits[i].from, yedits[i].to);
    gf_err e2 = {GF_OK, ""};
    CHECKF(parse_text(bad, &e2) == GF_EFORMAT && strstr(e2.msg, yedits[i].want),
           "yaml edit %zu: %s", i, e2.msg);
    free(bad);
  }
  /* an explicit null is none */
  char *none = tu_replace(ml, "class_names:", "class_names: null\n      other_names:");
  CHECK(parse_text(none, &err) == GF_OK);
  free(none);
  free(json);
  free(ml);
}

/* A conditional model without names: class column, indices only. */
static void test_cond_without_names(const char *tmp) {
  char dir[600];
  snprintf(dir, sizeof dir, "%s/cond-nonames", tmp);
  gf_model_config c;
  cond_config(&c, 3);
  gf_err err = {GF_OK, ""};
  REQUIRE(write_dir(dir, &c, NULL, &err) == GF_OK);
  char *json = tu_read_text(dir, GF_MLMODEL_CONFIG), *want = NULL;
  REQUIRE(gf_model_config_to_json(&c, &want, &err) == GF_OK);
  CHECK_STR_EQ(json, want);
  gf_mlmodel m;
  REQUIRE(gf_mlmodel_read(dir, &m, &err) == GF_OK);
  CHECK(m.class_names == NULL && m.n_class_names == 0);
  CHECK(m.n_sig_inputs == 3 && strcmp(m.sig_inputs[2].name, "class") == 0);
  int k = -2;
  CHECK(gf_mlmodel_class_index(&m, "2", &k, &err) == GF_OK && k == 2);
  CHECK(gf_mlmodel_class_index(&m, "3", &k, &err) == GF_ENOTFOUND);
  CHECK(gf_mlmodel_class_index(&m, "cat", &k, &err) == GF_ENOTFOUND);
  CHECKF(strstr(err.msg, "no class names"), "%s", err.msg);
  gf_mlmodel_free(&m);
  free(json);
  free(want);
}

static void test_writer_refusals(const char *tmp) {
  gf_model_config c;
  cond_config(&c, 3);
  const char *bad[][3] = {{"cat", "dog", "cat"}, {"cat", "", "dog"}, {"cat", "a;b", "dog"},
                          {"cat", " dog", "cow"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/bad%zu", tmp, i);
    gf_err err = {GF_OK, ""};
    CHECKF(write_dir(dir, &c, bad[i], &err) == GF_EINVAL, "case %zu", i);
    CHECKF(strstr(err.msg, "class_names["), "%s", err.msg);
    struct stat sb;
    CHECK(stat(dir, &sb) != 0); /* nothing written */
  }
}

/* The fuzz corpus's conditional MLmodels (tests/model/make_fuzz_corpus.py)
 * are what their names say. */
static void test_corpus(void) {
  static const struct {
    const char *name;
    gf_status want;
  } files[] = {{"valid_cond", GF_OK},          {"bad_class_count", GF_EFORMAT},
               {"bad_class_dup", GF_EFORMAT},  {"bad_class_name", GF_EFORMAT},
               {"bad_class_uncond", GF_EFORMAT}};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", GF_MLMODEL_CORPUS, files[i].name);
    size_t len = 0;
    unsigned char *b = tu_read(p, &len);
    gf_mlmodel m;
    gf_err err = {GF_OK, ""};
    gf_status st = gf_mlmodel_parse((const char *)b, len, &m, &err);
    CHECKF(st == files[i].want, "%s: %s", files[i].name, err.msg);
    if (st == GF_OK) {
      CHECK(m.n_class_names == 3 && strcmp(m.class_names[1], "7") == 0);
      CHECK(m.n_sig_inputs == 3);
    }
    gf_mlmodel_free(&m);
    free(b);
  }
}

int main(void) {
  char tmp[256];
  tu_mkdtemp(tmp, sizeof tmp);
  test_rule();
  test_unconditional(tmp);
  test_roundtrip(tmp);
  test_cond_without_names(tmp);
  test_writer_refusals(tmp);
  test_corpus();
  tu_rmdir(tmp);
  return check_report();
}
