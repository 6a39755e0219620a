/* inspect.c - `ganflow inspect` (gf_inspect_print of gf/cli.h): a
 * human-readable description of a checkpoint or any safetensors file
 * (metadata, tensor table, data digest status) or of an MLflow model
 * directory (MLmodel fields, file digests, the generator's tensors). Reads
 * files, writes only to the FILE it is given; never loads into a network. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gf/checkpoint.h"
#include "gf/cli.h"
#include "gf/file.h"
#include "gf/fs.h"
#include "gf/mlmodel.h"
#include "gf/sha256.h"

static void print_config(FILE *out, const char *indent, const gf_model_config *c) {
  fprintf(out, "%sconfig: %s, z_dim %d, image %dx%dx%d, ngf %d, ndf %d, "
               "classes %d, pixels %s\n",
          indent, gf_arch_name(c->architecture), c->z_dim, c->image_height,
          c->image_width, c->image_channels, c->ngf, c->ndf, c->num_classes,
          gf_pixel_norm_name(c->pixel_norm));
}

static void print_tensors(FILE *out, const gf_st_file *f) {
  size_t total = 0;
  for (size_t i = 0; i < f->n_tensors; i++) total += f->tensors[i].nbytes;
  fprintf(out, "tensors: %zu, %zu bytes\n", f->n_tensors, total);
  fprintf(out, "  %-40s %-5s %-22s %12s\n", "name", "dtype", "shape", "bytes");
  for (size_t i = 0; i < f->n_tensors; i++) {
    const gf_st_tensor *t = &f->tensors[i];
    char shape[GF_ST_SHAPE_TEXT_MAX];
    fprintf(out, "  %-40s %-5s %-22s %12zu\n", t->name,
            gf_st_dtype_name(t->dtype),
            gf_st_shape_text(t->shape, t->ndim, shape), t->nbytes);
  }
}

/* A safetensors file. A checkpoint (ganflow.step in its metadata) is
 * described field by field and must carry a matching digest; any other
 * file's metadata is listed raw. Returns GF_EINTEGRITY after printing when
 * the digest does not match (or a checkpoint has none). */
static gf_status inspect_file(const char *path, FILE *out, gf_err *err) {
  gf_st_file f;
  gf_st_file_init(&f);
  gf_status st = gf_st_open(&f, path, 0, err); /* strict parse, no digest yet */
  if (st != GF_OK) return st;
  int is_ckpt = gf_st_meta_get(&f, "ganflow.step") != NULL;
  fprintf(out, "%s: %s\n", is_ckpt ? "checkpoint" : "safetensors", path);
  fprintf(out, "  size: %zu bytes (header %zu, data %zu)\n", f.size,
          f.header_len, f.data_len);
  if (is_ckpt) {
    gf_ckpt_meta m;
    gf_err me;
    if (gf_ckpt_meta_from_file(&f, &m, &me) == GF_OK) {
      fprintf(out, "  format_version: %d\n", m.format_version);
      fprintf(out, "  step: %lld\n", (long long)m.step);
      fprintf(out, "  epoch: %lld (offset %lld samples)\n", (long long)m.epoch,
              (long long)m.epoch_offset);
      fprintf(out, "  seed: %llu\n", (unsigned long long)m.seed);
      fprintf(out, "  world_size: %d\n", m.world_size);
      fprintf(out, "  run_id: %s\n", m.run_id[0] ? m.run_id : "(none)");
      print_config(out, "  ", &m.config);
    } else {
      fprintf(out, "  metadata: INVALID: %s\n", me.msg);
    }
  } else {
    for (size_t i = 0; i < f.n_meta; i++)
      if (strcmp(f.meta[i].key, GF_ST_DATA_SHA256_KEY) != 0)
        fprintf(out, "  %s: %.200s\n", f.meta[i].key, f.meta[i].value);
  }
  gf_err de;
  gf_status ds = gf_st_verify_data_sha256(&f, &de);
  const char *stored = gf_st_meta_get(&f, GF_ST_DATA_SHA256_KEY);
  if (ds == GF_OK) {
    fprintf(out, "  data sha256: %s OK\n", stored);
  } else if (ds == GF_ENOTFOUND) {
    fprintf(out, "  data sha256: (none recorded)\n");
    if (is_ckpt)
      st = gf_fail(err, GF_EINTEGRITY, "%s: checkpoint has no data digest", path);
  } else {
    fprintf(out, "  data sha256: MISMATCH (%s)\n", de.msg);
    st = gf_fail(err, GF_EINTEGRITY, "%s: %s", path, de.msg);
  }
  print_tensors(out, &f);
  gf_st_file_free(&f);
  return st;
}

/* "  signature inputs: seed long (optional), z array<double> (optional)"
 * (columns) or "  signature outputs: image float32 [-1, 3, 64, 64]"
 * (tensors). */
static void print_signature(FILE *out, const char *what,
                            const gf_mlmodel_spec *t, size_t n) {
  fprintf(out, "  signature %s:", what);
  for (size_t i = 0; i < n; i++) {
    fprintf(out, "%s %s ", i ? "," : "", t[i].name ? t[i].name : "(unnamed)");
    if (strcmp(t[i].type, "tensor") != 0) {
      if (strcmp(t[i].type, "array") == 0) fprintf(out, "array<%s>", t[i].dtype);
      else fputs(t[i].type, out);
      if (!t[i].required) fputs(" (optional)", out);
      continue;
    }
    fprintf(out, "%s [", t[i].dtype);
    for (int d = 0; d < t[i].ndim; d++)
      fprintf(out, "%s%lld", d ? ", " : "", (long long)t[i].shape[d]);
    fputc(']', out);
  }
  fputc('\n', out);
}

/* dir/name into path[GF_PATH_MAX]; GF_EINVAL naming both when it does not
 * fit. */
static gf_status join(char path[GF_PATH_MAX], const char *dir,
                      const char *name, gf_err *err) {
  gf_err e;
  if (gf_path_join(path, GF_PATH_MAX, dir, name, &e) != GF_OK)
    return gf_fail(err, GF_EINVAL, "inspect: %s in %.200s: %s", name, dir,
                   e.msg);
  return GF_OK;
}

static gf_status inspect_model_dir(const char *dir, FILE *out, gf_err *err) {
  char path[GF_PATH_MAX];
  GF_TRY(join(path, dir, GF_MLMODEL_FILE, err));
  char *yaml = NULL;
  size_t len = 0;
  gf_status st = gf_read_file(path, GF_MLMODEL_MAX_BYTES, &yaml, &len, err);
  if (st != GF_OK) return st;
  gf_mlmodel m;
  st = gf_mlmodel_parse(yaml, len, &m, err);
  free(yaml);
  if (st != GF_OK) return st;
  fprintf(out, "model directory: %s\n", dir);
  fprintf(out, "  artifact_path: %s\n", m.artifact_path ? m.artifact_path : "(none)");
  fprintf(out, "  run_id: %s\n", m.run_id ? m.run_id : "(none)");
  fprintf(out, "  model_uuid: %s\n", m.model_uuid ? m.model_uuid : "(none)");
  fprintf(out, "  utc_time_created: %s\n",
          m.utc_time_created ? m.utc_time_created : "(none)");
  fprintf(out, "  mlflow_version: %s\n", m.mlflow_version ? m.mlflow_version : "(none)");
  fprintf(out, "  ganflow_version: %s\n", m.ganflow_version);
  print_config(out, "  ", &m.config);
  if (m.pyfunc_loader)
    fprintf(out, "  python_function: loader_module %s, python %s\n", m.pyfunc_loader,
            m.pyfunc_python ? m.pyfunc_python : "(unspecified)");
  else
    fprintf(out, "  python_function: (none)\n");
  if (m.has_signature) {
    print_signature(out, "inputs", m.sig_inputs, m.n_sig_inputs);
    print_signature(out, "outputs", m.sig_outputs, m.n_sig_outputs);
  } else {
    fprintf(out, "  signature: (none)\n");
  }
  fprintf(out, "files: %zu\n", m.n_files);
  int bad = 0;
  for (size_t i = 0; i < m.n_files && st == GF_OK; i++) {
    char fpath[GF_PATH_MAX], hex[GF_SHA256_HEX_LEN + 1];
    if ((st = join(fpath, dir, m.files[i].name, err)) != GF_OK) break;
    gf_err fe;
    const char *verdict = "OK";
    if (gf_sha256_file(fpath, hex, &fe) != GF_OK) {
      verdict = "MISSING OR UNREADABLE";
      bad++;
    } else if (strcmp(hex, m.files[i].sha256) != 0) {
      verdict = "MISMATCH";
      bad++;
    }
    fprintf(out, "  %-24s sha256 %s %s\n", m.files[i].name, m.files[i].sha256,
            verdict);
  }
  if (st == GF_OK && (st = join(path, dir, GF_MLMODEL_GENERATOR, err)) == GF_OK) {
    gf_err ge;
    gf_status gs = inspect_file(path, out, &ge);
    if (gs != GF_OK && gs != GF_EINTEGRITY)
      fprintf(out, "  generator: cannot be read: %s\n", ge.msg);
    if (gs != GF_OK) bad++;
  }
  if (st == GF_OK && bad)
    st = gf_fail(err, GF_EINTEGRITY,
                 "model directory %s: %d file(s) missing or not matching their "
                 "digests", dir, bad);
  gf_mlmodel_free(&m);
  return st;
}

gf_status gf_inspect_print(const char *path, FILE *out, gf_err *err) {
  if (!path || !*path || !out)
    return gf_fail(err, GF_EINVAL, "inspect: NULL argument");
  struct stat sb;
  if (stat(path, &sb) != 0)
    return gf_fail(err, errno == ENOENT ? GF_ENOTFOUND : GF_EIO, "%s: %s", path,
                   strerror(errno));
  gf_status st = S_ISDIR(sb.st_mode) ? inspect_model_dir(path, out, err)
                                     : inspect_file(path, out, err);
  if (fflush(out) != 0 && st == GF_OK)
    st = gf_fail(err, GF_EIO, "inspect: writing the summary failed");
  return st;
}
