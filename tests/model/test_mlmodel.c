/* test_mlmodel.c - the MLflow model directory: write + read round trip
 * (MLmodel fields, uuid, time format, digests, config), generator load;
 * tampered, missing or swapped files are errors; hostile MLmodel texts
 * (path escapes in the files list, aliases, deep nesting, oversize,
 * duplicates, missing flavor, bad digests) are errors, never crashes; the
 * python_function flavor's files are listed and verified, and a directory
 * written before them (no code/, no env files) still reads. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "gf/mlmodel.h"
#include "gf/strbuf.h"
#include "file_util.h"

static float g_w[6] = {1, 2, 3, 4, 5, 6};
static float g_mean[2] = {0.5f, -0.5f};
static const int64_t s23[] = {2, 3}, s2[] = {2};

static void write_model(const char *dir, char uuid[33]) {
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  gf_st_tensor_desc t[] = {{"G.fc.weight", GF_ST_F32, 2, s23, g_w},
                           {"G.bn0.running_mean", GF_ST_F32, 1, s2, g_mean}};
  gf_mlmodel_info info = {"model", "0123456789abcdef0123456789abcdef", "2.17.0", "0.1.0",
                          NULL};
  gf_err err = {GF_OK, ""};
  CHECKF(gf_mlmodel_write(dir, &c, t, 2, NULL, 0, &info, uuid, &err) == GF_OK, "%s", err.msg);
}

static void path_of(char *buf, size_t cap, const char *dir, const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
}

static gf_status parse_text(const char *text, gf_err *err) {
  gf_mlmodel m;
  gf_status st = gf_mlmodel_parse(text, strlen(text), &m, err);
  gf_mlmodel_free(&m);
  return st;
}

static gf_status read_dir(const char *dir, gf_err *err) {
  gf_mlmodel m;
  gf_status st = gf_mlmodel_read(dir, &m, err);
  CHECK(st == GF_OK || (m.files == NULL && m.dir == NULL)); /* freed on failure */
  gf_mlmodel_free(&m);
  return st;
}

static void test_roundtrip(const char *dir) {
  char uuid[33] = "";
  write_model(dir, uuid);
  gf_err err = {GF_OK, ""};
  gf_mlmodel m;
  REQUIRE(gf_mlmodel_read(dir, &m, &err) == GF_OK);
  CHECK_STR_EQ(m.artifact_path, "model");
  CHECK_STR_EQ(m.run_id, "0123456789abcdef0123456789abcdef");
  CHECK_STR_EQ(m.mlflow_version, "2.17.0");
  CHECK_STR_EQ(m.ganflow_version, "0.1.0");
  CHECK_STR_EQ(m.model_uuid, uuid);
  /* uuid4().hex: 32 lowercase hex, version nibble 4, variant 8..b. */
  CHECK(strlen(uuid) == 32 && uuid[12] == '4' && strchr("89ab", uuid[16]));
  for (int i = 0; i < 32; i++) CHECK(isxdigit((unsigned char)uuid[i]) && !isupper((unsigned char)uuid[i]));
  /* "YYYY-MM-DD HH:MM:SS.ffffff" */
  const char *tm = m.utc_time_created;
  REQUIRE(tm != NULL);
  CHECK_INT_EQ(strlen(tm), 26);
  for (int i = 0; i < 26; i++) {
    char want = i == 4 || i == 7 ? '-' : i == 10 ? ' ' : i == 13 || i == 16 ? ':' : i == 19 ? '.' : 'd';
    CHECKF(want == 'd' ? isdigit((unsigned char)tm[i]) != 0 : tm[i] == want, "time %s", tm);
  }
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  CHECK(gf_model_config_equal(&m.config, &c));
  CHECK_INT_EQ(m.n_files, 6);
  CHECK_STR_EQ(m.pyfunc_loader, GF_MLMODEL_PYFUNC_MODULE);
  CHECK(m.pyfunc_python != NULL && strchr(m.pyfunc_python, '.') != NULL);
  static const char *const pyfiles[] = {GF_MLMODEL_PYFUNC_CODE, "requirements.txt",
                                        "python_env.yaml", "conda.yaml"};
  for (size_t i = 0; i < sizeof pyfiles / sizeof *pyfiles; i++) {
    char fp[600], fh[GF_SHA256_HEX_LEN + 1];
    path_of(fp, sizeof fp, dir, pyfiles[i]);
    REQUIRE(gf_sha256_file(fp, fh, &err) == GF_OK);
    CHECKF(gf_mlmodel_file_sha256(&m, pyfiles[i]) &&
               strcmp(gf_mlmodel_file_sha256(&m, pyfiles[i]), fh) == 0,
           "%s not listed with its digest", pyfiles[i]);
  }
  char p[600], hex[GF_SHA256_HEX_LEN + 1];
  path_of(p, sizeof p, dir, GF_MLMODEL_GENERATOR);
  CHECK_STR_EQ(m.generator_path, p);
  REQUIRE(gf_sha256_file(p, hex, &err) == GF_OK);
  CHECK_STR_EQ(gf_mlmodel_file_sha256(&m, GF_MLMODEL_GENERATOR), hex);
  path_of(p, sizeof p, dir, GF_MLMODEL_CONFIG);
  CHECK_STR_EQ(m.config_path, p);
  REQUIRE(gf_sha256_file(p, hex, &err) == GF_OK);
  CHECK_STR_EQ(gf_mlmodel_file_sha256(&m, GF_MLMODEL_CONFIG), hex);
  CHECK(gf_mlmodel_file_sha256(&m, "other") == NULL);

  gf_st_file f;
  CHECKF(gf_mlmodel_load_generator(&m, &f, &err) == GF_OK, "%s", err.msg);
  const gf_st_tensor *w = gf_st_find(&f, "G.fc.weight");
  CHECK(w && w->nbytes == sizeof g_w && memcmp(w->data, g_w, sizeof g_w) == 0);
  CHECK(gf_st_find(&f, "G.bn0.running_mean") != NULL);
  gf_st_file_free(&f);

  /* The MLmodel text: sorted top-level keys, quoted time, plain ints. */
  char *text = tu_read_text(dir, GF_MLMODEL_FILE);
  CHECK(strstr(text, "artifact_path: model\n") == text);
  CHECK(strstr(text, "    config:\n") != NULL);
  CHECK(strstr(text, "z_dim: 100\n") != NULL);
  CHECK(strstr(text, "utc_time_created: \"") != NULL);
  CHECK(strstr(text, "mlflow_version: \"2.17.0\"\n") != NULL);
  CHECKF(strstr(text, "  python_function:\n    code: code\n    data: generator.safetensors\n"
                      "    env:\n      conda: conda.yaml\n      virtualenv: python_env.yaml\n"
                      "    loader_module: ganflow_pyfunc\n    python_version: \"") != NULL,
         "MLmodel:\n%s", text);
  /* files in sorted order, as yaml.safe_dump writes them */
  const char *a = strstr(text, "      code/ganflow_pyfunc.py:"), *b = strstr(text, "      conda.yaml:"),
             *cj = strstr(text, "      config.json:"), *g = strstr(text, "      generator.safetensors:"),
             *pe = strstr(text, "      python_env.yaml:"), *rq = strstr(text, "      requirements.txt:");
  CHECK(a && b && cj && g && pe && rq && a < b && b < cj && cj < g && g < pe && pe < rq);
  free(text);

  /* Swapped after the read: load_generator checks the bytes it loads. */
  path_of(p, sizeof p, dir, GF_MLMODEL_GENERATOR);
  size_t len;
  unsigned char *bytes = tu_read(p, &len);
  bytes[len - 1] ^= 1;
  tu_write(p, bytes, len);
  CHECK_INT_EQ(gf_mlmodel_load_generator(&m, &f, &err), GF_EINTEGRITY);
  CHECK(f.tensors == NULL && f.owned == NULL);
  gf_mlmodel_free(&m);
  gf_mlmodel_free(&m);
  gf_mlmodel_free(NULL);
  /* ... and read now refuses the directory. */
  CHECK_INT_EQ(read_dir(dir, &err), GF_EINTEGRITY);
  CHECK(strstr(err.msg, GF_MLMODEL_GENERATOR) != NULL);
  free(bytes);
}

static void test_tampering(const char *dir) {
  gf_err err = {GF_OK, ""};
  char p[600];
  write_model(dir, NULL);
  CHECK_INT_EQ(read_dir(dir, &err), GF_OK);

  /* Tampered generator: one byte of a weight, digests in the header left. */
  path_of(p, sizeof p, dir, GF_MLMODEL_GENERATOR);
  size_t len;
  unsigned char *gen = tu_read(p, &len);
  gen[len - 9] ^= 0x40;
  tu_write(p, gen, len);
  gen[len - 9] ^= 0x40;
  CHECK_INT_EQ(read_dir(dir, &err), GF_EINTEGRITY);
  tu_write(p, gen, len);
  CHECK_INT_EQ(read_dir(dir, &err), GF_OK);

  /* Tampered config.json, still valid JSON with a valid config. */
  char q[600];
  path_of(q, sizeof q, dir, GF_MLMODEL_CONFIG);
  size_t clen;
  unsigned char *cfg = tu_read(q, &clen);
  char *cfgs = malloc(clen + 1);
  REQUIRE(cfgs != NULL);
  memcpy(cfgs, cfg, clen);
  cfgs[clen] = '\0';
  char *edited = tu_replace(cfgs, "\"z_dim\":\t100", "\"z_dim\":\t128");
  tu_write(q, edited, strlen(edited));
  CHECK_INT_EQ(read_dir(dir, &err), GF_EINTEGRITY);
  free(edited);
  tu_write(q, cfg, clen);

  /* Missing generator. */
  CHECK_INT_EQ(unlink(p), 0);
  CHECK_INT_EQ(read_dir(dir, &err), GF_EIO);
  tu_write(p, gen, len);
  CHECK_INT_EQ(read_dir(dir, &err), GF_OK);
  free(gen);

  /* MLmodel's config disagreeing with config.json. */
  char *text = tu_read_text(dir, GF_MLMODEL_FILE);
  char mp[600];
  path_of(mp, sizeof mp, dir, GF_MLMODEL_FILE);
  edited = tu_replace(text, "z_dim: 100", "z_dim: 99");
  tu_write(mp, edited, strlen(edited));
  CHECK_INT_EQ(read_dir(dir, &err), GF_EFORMAT);
  free(edited);
  /* A listed file that escapes the directory, or a missing listed file. */
  const char *escapes[] = {"../config.json", "/etc/passwd", "sub//config.json", "sub/", "..",
                           ".", "./config.json", "a/./b", "a/b/c/d/e", "a..b", "back\\slash"};
  for (size_t i = 0; i < sizeof escapes / sizeof escapes[0]; i++) {
    char to[128];
    snprintf(to, sizeof to, "      \"%s\":\n        sha256:", escapes[i]);
    char *e2 = tu_replace(text, "      config.json:\n        sha256:", to);
    CHECKF(parse_text(e2, &err) == GF_EFORMAT, "listed %s accepted", escapes[i]);
    tu_write(mp, e2, strlen(e2));
    CHECKF(read_dir(dir, &err) == GF_EFORMAT, "listed %s accepted", escapes[i]);
    free(e2);
  }
  edited = tu_replace(text, "    files:\n", "    files:\n      extra.bin:\n        sha256: "
                                         "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"\n");
  CHECK_INT_EQ(parse_text(edited, &err), GF_OK);
  tu_write(mp, edited, strlen(edited));
  CHECK_INT_EQ(read_dir(dir, &err), GF_EIO); /* listed but absent */
  char xp[600];
  path_of(xp, sizeof xp, dir, "extra.bin");
  tu_write(xp, "", 0);
  CHECK_INT_EQ(read_dir(dir, &err), GF_OK); /* empty file: that digest */
  free(edited);
  tu_write(mp, text, strlen(text));
  CHECK_INT_EQ(read_dir(dir, &err), GF_OK);
  free(text);

  /* The pyfunc loader is covered like the weights: tampered or missing. */
  char cp[600];
  path_of(cp, sizeof cp, dir, GF_MLMODEL_PYFUNC_CODE);
  size_t codelen;
  unsigned char *code = tu_read(cp, &codelen);
  REQUIRE(codelen > 100);
  code[codelen / 2] ^= 1;
  tu_write(cp, code, codelen);
  CHECK_INT_EQ(read_dir(dir, &err), GF_EINTEGRITY);
  CHECK(strstr(err.msg, GF_MLMODEL_PYFUNC_CODE) != NULL);
  CHECK_INT_EQ(unlink(cp), 0);
  CHECK_INT_EQ(read_dir(dir, &err), GF_EIO);
  code[codelen / 2] ^= 1;
  tu_write(cp, code, codelen);
  CHECK_INT_EQ(read_dir(dir, &err), GF_OK);
  free(code);
  free(cfg);
  free(cfgs);
  CHECK_INT_EQ(read_dir("/nonexistent/gf_model_dir", &err), GF_EIO);
}

static void test_hostile_text(const char *dir) {
  gf_err err = {GF_OK, ""};
  char *text = tu_read_text(dir, GF_MLMODEL_FILE);
  CHECK_INT_EQ(parse_text(text, &err), GF_OK); /* the control */
  struct {
    const char *name, *from, *to;
  } edits[] = {
      {"no ganflow flavor", "  ganflow:\n", "  other:\n"},
      {"flavors not a map", "flavors:\n", "flavors: 3\nx:\n"},
      {"no ganflow_version", "    ganflow_version:", "    other_version:"},
      {"bad digest", "sha256: \"", "sha256: \"zz"},
      {"short digest", "sha256: \"", "sha256: \"0\"\n        x: \""},
      {"no config", "    config:\n", "    konfig:\n"},
      {"bad config value", "z_dim: 100", "z_dim: lots"},
      {"quoted config int", "z_dim: 100", "z_dim: \"100\""},
      {"duplicate key", "artifact_path: model\n", "artifact_path: model\nartifact_path: x\n"},
      {"alias", "artifact_path: model\n", "artifact_path: &a model\nrun_id2: *a\n"},
      {"non-scalar key", "artifact_path: model\n", "? [a, b]\n: 1\n"},
      {"run_id not a string", "run_id: ", "run_id: [1]\nx: "},
      {"second document", "artifact_path: model\n", "x: 1\n---\nartifact_path: model\n"},
      {"syntax error", "artifact_path: model\n", "artifact_path: [model\n"},
      {"tab indentation", "    config:\n", "\tconfig:\n"},
      {"generator not listed", "      generator.safetensors:", "      generator.bin:"},
  };
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    char *e = tu_replace(text, edits[i].from, edits[i].to);
    gf_status st = parse_text(e, &err);
    CHECKF(st == GF_EFORMAT, "%s: %s (%s)", edits[i].name, gf_status_name(st), err.msg);
    free(e);
  }
  free(text);
  CHECK_INT_EQ(parse_text("", &err), GF_EFORMAT);
  CHECK_INT_EQ(parse_text("just a scalar", &err), GF_EFORMAT);
  CHECK_INT_EQ(parse_text("[1, 2]", &err), GF_EFORMAT);
  CHECK_INT_EQ(parse_text("a: \"\\0\"\nflavors: {}", &err), GF_EFORMAT);

  /* Deep nesting: rejected before any recursion runs away. */
  size_t depth = 5000;
  char *deep = malloc(2 * depth + 16);
  REQUIRE(deep != NULL);
  strcpy(deep, "flavors: ");
  size_t at = strlen(deep);
  for (size_t i = 0; i < depth; i++) deep[at++] = '[';
  for (size_t i = 0; i < depth; i++) deep[at++] = ']';
  deep[at] = '\0';
  CHECK_INT_EQ(parse_text(deep, &err), GF_EFORMAT);
  CHECK(strstr(err.msg, "deep") != NULL);
  free(deep);

  /* Oversize: over 1 MiB, as text and as a file. */
  size_t big = GF_MLMODEL_MAX_BYTES + 10;
  char *huge = malloc(big + 1);
  REQUIRE(huge != NULL);
  memset(huge, '#', big);
  memcpy(huge, "a: 1\n#", 6);
  huge[big] = '\0';
  CHECK_INT_EQ(parse_text(huge, &err), GF_EFORMAT);
  char sub[600], mp[700];
  snprintf(sub, sizeof sub, "%s/big", dir);
  REQUIRE(mkdir(sub, 0755) == 0);
  snprintf(mp, sizeof mp, "%s/%s", sub, GF_MLMODEL_FILE);
  tu_write(mp, huge, big);
  CHECK_INT_EQ(read_dir(sub, &err), GF_EFORMAT);
  tu_rmdir(sub);
  free(huge);

  /* Many entries in one mapping: bounded, fast, rejected. */
  size_t n = 5000;
  char *wide = malloc(n * 16 + 32);
  REQUIRE(wide != NULL);
  at = 0;
  for (size_t i = 0; i < n; i++) at += (size_t)sprintf(wide + at, "k%zu: %zu\n", i, i);
  wide[at] = '\0';
  CHECK_INT_EQ(parse_text(wide, &err), GF_EFORMAT);
  free(wide);
}

static void test_writer_rejects(const char *dir) {
  gf_err err = {GF_OK, ""};
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  gf_st_tensor_desc t[] = {{"w", GF_ST_F32, 1, s2, g_mean}};
  gf_mlmodel_info info = {"model", NULL, "2.17.0", "0.1.0", NULL};
  char sub[600];
  snprintf(sub, sizeof sub, "%s/w", dir);
  gf_mlmodel_info bad = info;
  bad.mlflow_version = "";
  CHECK_INT_EQ(gf_mlmodel_write(sub, &c, t, 1, NULL, 0, &bad, NULL, &err), GF_EINVAL);
  bad = info;
  bad.artifact_path = "line\nbreak";
  CHECK_INT_EQ(gf_mlmodel_write(sub, &c, t, 1, NULL, 0, &bad, NULL, &err), GF_EINVAL);
  c.z_dim = -1;
  CHECK_INT_EQ(gf_mlmodel_write(sub, &c, t, 1, NULL, 0, &info, NULL, &err), GF_EINVAL);
  gf_model_config_default(&c, GF_ARCH_MLP);
  /* No run id: MLmodel has none, and still reads back. */
  CHECKF(gf_mlmodel_write(sub, &c, t, 1, NULL, 0, &info, NULL, &err) == GF_OK, "%s", err.msg);
  gf_mlmodel m;
  CHECKF(gf_mlmodel_read(sub, &m, &err) == GF_OK, "%s", err.msg);
  CHECK(m.run_id == NULL);
  CHECK(m.config.architecture == GF_ARCH_MLP);
  gf_mlmodel_free(&m);
  CHECK_INT_EQ(tu_count_names(sub, ".tmp."), 0);
  tu_rmdir(sub);
  /* A D with spectral norm: config.json and the flavor config both say
   * so, and the directory reads back (they must agree). */
  c.spectral_norm = 1;
  CHECKF(gf_mlmodel_write(sub, &c, t, 1, NULL, 0, &info, NULL, &err) == GF_OK, "%s", err.msg);
  CHECKF(gf_mlmodel_read(sub, &m, &err) == GF_OK, "%s", err.msg);
  CHECK(m.config.spectral_norm == 1 && gf_model_config_equal(&m.config, &c));
  gf_mlmodel_free(&m);
  tu_rmdir(sub);
  c.spectral_norm = 0;
  snprintf(sub, sizeof sub, "%s/no/such/parent", dir);
  CHECK_INT_EQ(gf_mlmodel_write(sub, &c, t, 1, NULL, 0, &info, NULL, &err), GF_EIO);
}

/* A directory written before the python_function flavor: MLmodel with
 * only generator.safetensors and config.json listed, no python_function
 * flavor, the tensor signature, no code/ or env files. It still reads. */
static void test_older_dir(const char *dir) {
  char sub[600];
  snprintf(sub, sizeof sub, "%s/old", dir);
  write_model(sub, NULL);
  char *text = tu_read_text(sub, GF_MLMODEL_FILE);
  gf_strbuf old;
  gf_strbuf_init(&old);
  /* Keep every line except the python_function flavor and the new files'
   * entries (each "      NAME:" line plus its sha256 line). */
  int skip_flavor = 0, skip_next = 0;
  for (char *line = text; *line;) {
    char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
    int keep = 1;
    if (skip_next) {
      keep = 0;
      skip_next = 0;
    } else if (strncmp(line, "  python_function:", 18) == 0) {
      skip_flavor = 1;
      keep = 0;
    } else if (skip_flavor && strncmp(line, "    ", 4) == 0) {
      keep = 0;
    } else {
      skip_flavor = 0;
      static const char *const gone[] = {"      code/", "      conda.yaml:",
                                         "      python_env.yaml:", "      requirements.txt:"};
      for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        if (strncmp(line, gone[i], strlen(gone[i])) == 0) keep = 0, skip_next = 1;
    }
    if (keep) gf_strbuf_append(&old, line, len);
    line += len;
  }
  free(text);
  REQUIRE(!old.failed);
  text = old.data;
  char *olds = tu_replace(text, GF_MLMODEL_SIG_INPUTS,
                       "[{\"name\": \"seed\", \"type\": \"tensor\", \"tensor-spec\": "
                       "{\"dtype\": \"int64\", \"shape\": [-1]}}]");
  free(text);
  CHECKF(strstr(olds, "python_function") == NULL && strstr(olds, "code/") == NULL &&
             strstr(olds, "conda.yaml") == NULL,
         "%s", olds);
  char p[700];
  snprintf(p, sizeof p, "%s/%s", sub, GF_MLMODEL_FILE);
  tu_write(p, olds, strlen(olds));
  static const char *const rm[] = {GF_MLMODEL_PYFUNC_CODE, "conda.yaml", "python_env.yaml",
                                   "requirements.txt"};
  for (size_t i = 0; i < sizeof rm / sizeof *rm; i++) {
    snprintf(p, sizeof p, "%s/%s", sub, rm[i]);
    CHECK_INT_EQ(unlink(p), 0);
  }
  snprintf(p, sizeof p, "%s/code", sub);
  CHECK_INT_EQ(rmdir(p), 0);
  gf_mlmodel m;
  gf_err err = {GF_OK, ""};
  CHECKF(gf_mlmodel_read(sub, &m, &err) == GF_OK, "%s", err.msg);
  CHECK_INT_EQ(m.n_files, 2);
  CHECK(m.pyfunc_loader == NULL && m.pyfunc_python == NULL);
  REQUIRE(m.n_sig_inputs == 1);
  CHECK_STR_EQ(m.sig_inputs[0].type, "tensor");
  CHECK_STR_EQ(m.sig_inputs[0].dtype, "int64");
  CHECK(m.sig_inputs[0].ndim == 1 && m.sig_inputs[0].shape[0] == -1);
  gf_mlmodel_free(&m);
  free(olds);
  tu_rmdir(sub);
}

/* The MLflow signature: written in MLflow's form, read back; an MLmodel
 * without one (older versions) or with null is fine; malformed ones, ones
 * mixing tensors and columns, or with unsupported column types are
 * refused. */
static void test_signature(const char *dir) {
  write_model(dir, NULL);
  char *text = tu_read_text(dir, GF_MLMODEL_FILE);
  CHECKF(strstr(text, "signature:\n  inputs: '[{\"type\": \"long\", \"name\": \"seed\", "
                      "\"required\": false}, {\"type\": \"array\", \"items\": {\"type\": "
                      "\"double\"}, \"name\": \"z\", \"required\": false}]'\n  outputs: "
                      "'[{\"name\": \"image\", \"type\": \"tensor\", \"tensor-spec\": "
                      "{\"dtype\": \"float32\", \"shape\": [-1, 3, 64, 64]}}]'\n  params: "
                      "null\n"), "MLmodel:\n%s", text);
  gf_mlmodel m;
  gf_err err = {GF_OK, ""};
  REQUIRE(gf_mlmodel_parse(text, strlen(text), &m, &err) == GF_OK);
  CHECK(m.has_signature);
  REQUIRE(m.n_sig_inputs == 2 && m.n_sig_outputs == 1);
  const gf_mlmodel_spec *in = m.sig_inputs;
  CHECK_STR_EQ(in[0].name, "seed");
  CHECK_STR_EQ(in[0].type, "long");
  CHECK(in[0].dtype[0] == '\0' && in[0].ndim == 0 && !in[0].required);
  CHECK_STR_EQ(in[1].name, "z");
  CHECK_STR_EQ(in[1].type, "array");
  CHECK_STR_EQ(in[1].dtype, "double");
  CHECK(in[1].ndim == 0 && !in[1].required);
  const gf_mlmodel_spec *o = &m.sig_outputs[0];
  CHECK_STR_EQ(o->name, "image");
  CHECK_STR_EQ(o->type, "tensor");
  CHECK_STR_EQ(o->dtype, "float32");
  CHECK(o->required);
  CHECK(o->ndim == 4 && o->shape[0] == -1 && o->shape[1] == m.config.image_channels &&
        o->shape[2] == m.config.image_height && o->shape[3] == m.config.image_width);
  gf_mlmodel_free(&m);
  CHECK(read_dir(dir, &err) == GF_OK);

  /* Columns without "required" are required (MLflow's default). */
  char *req = tu_replace(text, ", \"required\": false}, {", "}, {");
  REQUIRE(gf_mlmodel_parse(req, strlen(req), &m, &err) == GF_OK);
  CHECK(m.sig_inputs[0].required && !m.sig_inputs[1].required);
  gf_mlmodel_free(&m);
  free(req);

  /* Without a signature (an MLmodel of an older version), or null. */
  char *start = strstr(text, "signature:");
  char *end = strstr(text, "utc_time_created:");
  REQUIRE(start && end && end > start);
  char *cut = strdup(text);
  REQUIRE(cut);
  memmove(cut + (start - text), cut + (end - text), strlen(end) + 1);
  REQUIRE(gf_mlmodel_parse(cut, strlen(cut), &m, &err) == GF_OK);
  CHECK(!m.has_signature && m.n_sig_inputs == 0 && m.sig_inputs == NULL);
  gf_mlmodel_free(&m);
  free(cut);
  char *nul = tu_replace(text, "signature:\n  inputs:", "signature: null\nx_inputs:");
  char *nul2 = tu_replace(nul, "\n  outputs:", "\nx_outputs:");
  char *nul3 = tu_replace(nul2, "\n  params: null", "\nx_params: null");
  CHECKF(parse_text(nul3, &err) == GF_OK, "%s", err.msg);
  free(nul);
  free(nul2);
  free(nul3);

  static const char *const bad[][2] = {
      {"\"type\": \"long\"", "\"type\": \"object\""},
      {"\"type\": \"long\"", "\"type\": \"tensor\""},
      {"\"type\": \"long\"", "\"type\": \"\""},
      {"\"type\": \"long\"", "\"type\": 7"},
      {"{\"type\": \"long\", \"name\": \"seed\", \"required\": false}",
       "{\"name\": \"seed\", \"type\": \"tensor\", \"tensor-spec\": {\"dtype\": \"int64\", "
       "\"shape\": [-1]}}"},
      {"\"items\": {\"type\": \"double\"}", "\"items\": {\"type\": \"array\"}"},
      {"\"items\": {\"type\": \"double\"}", "\"items\": 3"},
      {"\"items\": {\"type\": \"double\"}", "\"elements\": {\"type\": \"double\"}"},
      {"\"required\": false}, {", "\"required\": 0}, {"},
      {"\"name\": \"seed\"", "\"name\": 7"},
      {"\"name\": \"seed\"", "\"name\": \"\""},
      {"\"shape\": [-1, 3", "\"shape\": [-1.5, 3"},
      {"\"shape\": [-1, 3", "\"shape\": [-2, 3"},
      {"\"shape\": [-1, 3", "\"shape\": [-1, 1, 1, 1, 1, 1, 1, 1, 3"},
      {"\"shape\": [-1, 3, 64, 64]", "\"shape\": \"-1\""},
      {"\"dtype\": \"float32\"", "\"dtype\": \"\""},
      {"\"dtype\": \"float32\"", "\"dtype\": 64"},
      {"\"tensor-spec\": {", "\"tensor_spec\": {"},
      {"inputs: '[{", "inputs: '{{"},
      {"inputs: '[{", "inputs:\n    - '[{"},
      {"signature:\n  inputs", "signature: 3\nx_inputs"},
      {"  python_function:\n", "  python_function: 3\n  x:\n"},
      {"    loader_module: ganflow_pyfunc\n", ""},
      {"    loader_module: ganflow_pyfunc\n", "    loader_module: [a]\n"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *t = tu_replace(text, bad[i][0], bad[i][1]);
    gf_status st = parse_text(t, &err);
    CHECKF(st == GF_EFORMAT, "bad signature %zu accepted (%d):\n%s", i, (int)st, t);
    free(t);
  }
  free(text);
}

int main(void) {
  char dir[256];
  tu_mkdtemp(dir, sizeof dir);
  test_roundtrip(dir);
  test_tampering(dir);
  test_hostile_text(dir);
  test_writer_rejects(dir);
  test_signature(dir);
  test_older_dir(dir);
  tu_rmdir(dir);
  return check_report();
}
