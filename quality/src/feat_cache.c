/* feat_cache.c - the feature cache of gf/feat_cache.h: the file name from
 * the key's digest, the safetensors writer's call with the three tensors
 * and the metadata, and a reader that trusts nothing in the file: the
 * safetensors parser's checks and the data digest first, then the format,
 * the metadata, the key, the tensors' names, dtypes and shapes, and finite
 * values. Not for: computing features or moments. */
#include "gf/feat_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gf/fs.h"
#include "gf/safetensors.h"
#include "gf/sha256.h"
#include "gf/strbuf.h"
#include "gf/text.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "feat_cache.c copies safetensors' little-endian tensors as they are"
#endif

/* GF_OK when s is 1..GF_FEAT_CACHE_PREPROCESS_MAX printable ASCII bytes. */
static int preprocess_valid(const char *s) {
  size_t n = 0;
  for (; s[n]; n++)
    if (n >= GF_FEAT_CACHE_PREPROCESS_MAX || s[n] < 0x20 || s[n] > 0x7e)
      return 0;
  return n > 0;
}

static gf_status check_key(const char *what, const gf_feat_cache_key *key,
                           gf_err *err) {
  if (!key) return gf_fail(err, GF_EINVAL, "%s: NULL key", what);
  if (!key->network_sha256 || !gf_sha256_hex_valid(key->network_sha256))
    return gf_fail(err, GF_EINVAL,
                   "%s: key network_sha256 is not 64 lowercase hex digits",
                   what);
  if (!key->data_sha256 || !gf_sha256_hex_valid(key->data_sha256))
    return gf_fail(err, GF_EINVAL,
                   "%s: key data_sha256 is not 64 lowercase hex digits", what);
  if (!key->preprocess || !preprocess_valid(key->preprocess))
    return gf_fail(err, GF_EINVAL,
                   "%s: key preprocess must be 1 to %d printable ASCII "
                   "characters",
                   what, GF_FEAT_CACHE_PREPROCESS_MAX);
  if (key->count < 2)
    return gf_fail(err, GF_EINVAL, "%s: key count must be >= 2, got %" PRId64,
                   what, key->count);
  if (key->dim < 1)
    return gf_fail(err, GF_EINVAL, "%s: key dim must be >= 1, got %d", what,
                   key->dim);
  if ((uint64_t)key->count > SIZE_MAX / sizeof(float) / (size_t)key->dim)
    return gf_fail(err, GF_EINVAL, "%s: key [%" PRId64 ", %d] is too large",
                   what, key->count, key->dim);
  return GF_OK;
}

gf_status gf_feat_cache_path(const char *dir, const gf_feat_cache_key *key,
                             char *buf, size_t cap, gf_err *err) {
  if (buf && cap) buf[0] = '\0';
  if (!dir || !buf || cap == 0)
    return gf_fail(err, GF_EINVAL, "feature cache path: NULL argument");
  GF_TRY(check_key("feature cache path", key, err));
  gf_strbuf sb;
  gf_strbuf_init(&sb);
  gf_strbuf_printf(&sb, "%s/%s\n%s\n%s\n%s\n%" PRId64 "\n%d",
                   GF_FEAT_CACHE_FORMAT, GF_FEAT_CACHE_VERSION,
                   key->network_sha256, key->data_sha256, key->preprocess,
                   key->count, key->dim);
  size_t len = 0;
  char *text = gf_strbuf_take(&sb, &len);
  if (!text)
    return gf_fail(err, GF_ENOMEM, "feature cache path: out of memory");
  char hex[GF_SHA256_HEX_LEN + 1];
  gf_status st = gf_sha256_buf(text, len, hex, err);
  free(text);
  if (st != GF_OK) return st;
  char name[32];
  GF_TRY(gf_format(name, sizeof name, err, "feature cache name",
                   "%.16s.safetensors", hex));
  return gf_path_join(buf, cap, dir, name, err);
}

/* ---- writing ------------------------------------------------------------ */

/* Creates the directory part of path, if any. */
static gf_status make_parent(const char *path, gf_err *err) {
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path) return GF_OK; /* "." or "/" */
  size_t n = (size_t)(slash - path);
  char *dir = malloc(n + 1);
  if (!dir) return gf_fail(err, GF_ENOMEM, "feature cache: out of memory");
  memcpy(dir, path, n);
  dir[n] = '\0';
  gf_status st = gf_mkdir_p(dir, 0755, err);
  free(dir);
  return st;
}

/* Index of the first non-finite value of x[0..n), or n. */
static size_t first_nonfinite_f32(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return i;
  return n;
}
static size_t first_nonfinite_f64(const double *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return i;
  return n;
}

gf_status gf_feat_cache_write(const char *path, const gf_feat_cache_key *key,
                              const float *feats, const gf_feat_moments *m,
                              gf_err *err) {
  if (!path || !*path)
    return gf_fail(err, GF_EINVAL, "feature cache write: empty path");
  GF_TRY(check_key("feature cache write", key, err));
  if (!feats || !m || !m->mean || !m->cov)
    return gf_fail(err, GF_EINVAL,
                   "feature cache write %s: NULL features or moments", path);
  if (m->dim != key->dim || m->n != key->count)
    return gf_fail(err, GF_EINVAL,
                   "feature cache write %s: moments of %" PRId64
                   " vectors of dim %d, key says %" PRId64 " of dim %d",
                   path, m->n, m->dim, key->count, key->dim);
  const size_t d = (size_t)key->dim, nf = (size_t)key->count * d;
  size_t bad;
  if ((bad = first_nonfinite_f32(feats, nf)) < nf)
    return gf_fail(err, GF_EINVAL,
                   "feature cache write %s: features[%zu, %zu] is not finite",
                   path, bad / d, bad % d);
  if ((bad = first_nonfinite_f64(m->mean, d)) < d)
    return gf_fail(err, GF_EINVAL,
                   "feature cache write %s: mean[%zu] is not finite", path, bad);
  if ((bad = first_nonfinite_f64(m->cov, d * d)) < d * d)
    return gf_fail(err, GF_EINVAL,
                   "feature cache write %s: cov[%zu, %zu] is not finite", path,
                   bad / d, bad % d);

  const int64_t fshape[2] = {key->count, key->dim};
  const int64_t mshape[1] = {key->dim};
  const int64_t cshape[2] = {key->dim, key->dim};
  const gf_st_tensor_desc tensors[3] = {
      {.name = "features", .dtype = GF_ST_F32, .ndim = 2, .shape = fshape,
       .data = feats},
      {.name = "mean", .dtype = GF_ST_F64, .ndim = 1, .shape = mshape,
       .data = m->mean},
      {.name = "cov", .dtype = GF_ST_F64, .ndim = 2, .shape = cshape,
       .data = m->cov},
  };
  char count[24], dim[16];
  GF_TRY(gf_format(count, sizeof count, err, "count", "%" PRId64, key->count));
  GF_TRY(gf_format(dim, sizeof dim, err, "dim", "%d", key->dim));
  const gf_st_kv meta[7] = {
      {"format", GF_FEAT_CACHE_FORMAT},
      {"version", GF_FEAT_CACHE_VERSION},
      {"network_sha256", key->network_sha256},
      {"data_sha256", key->data_sha256},
      {"preprocess", key->preprocess},
      {"count", count},
      {"dim", dim},
  };
  GF_TRY(make_parent(path, err));
  return gf_st_write_file(path, tensors, 3, meta, 7, GF_ST_DATA_SHA256, err);
}

/* ---- reading ------------------------------------------------------------ */

/* Strict decimal: 1-19 digits, no sign, no leading zero but "0" itself. */
static int parse_i64(const char *s, int64_t *out) {
  if (!s || !*s || strlen(s) > 18 || (s[0] == '0' && s[1])) return 0;
  int64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (*p - '0');
  }
  *out = v;
  return 1;
}

/* The metadata value for key k that passes `valid`, or NULL after filling
 * err (GF_EFORMAT naming the file and the field). */
static const char *meta_field(const gf_st_file *f, const char *name,
                              const char *k, gf_err *err) {
  const char *v = gf_st_meta_get(f, k);
  if (!v)
    gf_fail(err, GF_EFORMAT, "feature cache %s: no metadata field %s", name, k);
  return v;
}

/* GF_OK when the tensor `tname` exists with dtype dt and shape s[0..ndim). */
static gf_status check_tensor(const gf_st_file *f, const char *name,
                              const char *tname, gf_st_dtype dt, int ndim,
                              const int64_t *s, const gf_st_tensor **out,
                              gf_err *err) {
  const gf_st_tensor *t = gf_st_find(f, tname);
  if (!t)
    return gf_fail(err, GF_EFORMAT, "feature cache %s: no tensor %s", name,
                   tname);
  char want[GF_ST_SHAPE_TEXT_MAX], got[GF_ST_SHAPE_TEXT_MAX];
  if (t->dtype != dt)
    return gf_fail(err, GF_EFORMAT, "feature cache %s: tensor %s is %s, not %s",
                   name, tname, gf_st_dtype_name(t->dtype),
                   gf_st_dtype_name(dt));
  int same = t->ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = t->shape[i] == s[i];
  if (!same)
    return gf_fail(err, GF_EFORMAT,
                   "feature cache %s: tensor %s has shape %s, the metadata say "
                   "%s",
                   name, tname, gf_st_shape_text(t->shape, t->ndim, got),
                   gf_st_shape_text(s, ndim, want));
  *out = t;
  return GF_OK;
}

static gf_status key_mismatch(const char *name, const char *field,
                              const char *file_v, const char *key_v,
                              gf_err *err) {
  return gf_fail(err, GF_EINVAL,
                 "feature cache %s: written for %s %s, not %s (another "
                 "network, dataset or preprocessing: recompute it)",
                 name, field, file_v, key_v);
}

/* Everything after the safetensors parse; f is the parsed file. */
static gf_status parse_cache(const gf_st_file *f, const char *name,
                             const gf_feat_cache_key *key, float **feats,
                             gf_feat_moments *m, gf_err *err) {
  const char *format = meta_field(f, name, "format", err);
  if (!format) return GF_EFORMAT;
  if (strcmp(format, GF_FEAT_CACHE_FORMAT) != 0)
    return gf_fail(err, GF_EFORMAT,
                   "feature cache %s: metadata format is \"%.64s\", not \"%s\"",
                   name, format, GF_FEAT_CACHE_FORMAT);
  const char *version = meta_field(f, name, "version", err);
  if (!version) return GF_EFORMAT;
  if (strcmp(version, GF_FEAT_CACHE_VERSION) != 0)
    return gf_fail(err, GF_EFORMAT,
                   "feature cache %s: metadata version is \"%.32s\"; this "
                   "reader knows version %s",
                   name, version, GF_FEAT_CACHE_VERSION);
  const char *net = meta_field(f, name, "network_sha256", err);
  const char *data = net ? meta_field(f, name, "data_sha256", err) : NULL;
  const char *pre = data ? meta_field(f, name, "preprocess", err) : NULL;
  const char *count_s = pre ? meta_field(f, name, "count", err) : NULL;
  const char *dim_s = count_s ? meta_field(f, name, "dim", err) : NULL;
  if (!dim_s) return GF_EFORMAT;
  if (!gf_sha256_hex_valid(net) || !gf_sha256_hex_valid(data))
    return gf_fail(err, GF_EFORMAT,
                   "feature cache %s: metadata %s is not 64 lowercase hex "
                   "digits",
                   name, gf_sha256_hex_valid(net) ? "data_sha256" : "network_sha256");
  if (!preprocess_valid(pre))
    return gf_fail(err, GF_EFORMAT,
                   "feature cache %s: metadata preprocess is not 1 to %d "
                   "printable ASCII characters",
                   name, GF_FEAT_CACHE_PREPROCESS_MAX);
  int64_t count = 0, dim64 = 0;
  if (!parse_i64(count_s, &count) || count < 2)
    return gf_fail(err, GF_EFORMAT,
                   "feature cache %s: metadata count \"%.32s\" is not an "
                   "integer >= 2",
                   name, count_s);
  if (!parse_i64(dim_s, &dim64) || dim64 < 1 || dim64 > 1 << 20)
    return gf_fail(err, GF_EFORMAT,
                   "feature cache %s: metadata dim \"%.32s\" is not an "
                   "integer in [1, 2^20]",
                   name, dim_s);
  const int dim = (int)dim64;

  if (key) {
    if (strcmp(net, key->network_sha256) != 0)
      return key_mismatch(name, "network_sha256", net, key->network_sha256, err);
    if (strcmp(data, key->data_sha256) != 0)
      return key_mismatch(name, "data_sha256", data, key->data_sha256, err);
    if (strcmp(pre, key->preprocess) != 0)
      return key_mismatch(name, "preprocess", pre, key->preprocess, err);
    if (count != key->count || dim != key->dim)
      return gf_fail(err, GF_EINVAL,
                     "feature cache %s: written for count %" PRId64
                     " dim %d, not count %" PRId64 " dim %d",
                     name, count, dim, key->count, key->dim);
  }

  if (f->n_tensors != 3)
    return gf_fail(err, GF_EFORMAT,
                   "feature cache %s: %zu tensors; a cache file has exactly "
                   "features, mean and cov",
                   name, f->n_tensors);
  const int64_t fshape[2] = {count, dim};
  const int64_t mshape[1] = {dim};
  const int64_t cshape[2] = {dim, dim};
  const gf_st_tensor *tf, *tm, *tc;
  GF_TRY(check_tensor(f, name, "features", GF_ST_F32, 2, fshape, &tf, err));
  GF_TRY(check_tensor(f, name, "mean", GF_ST_F64, 1, mshape, &tm, err));
  GF_TRY(check_tensor(f, name, "cov", GF_ST_F64, 2, cshape, &tc, err));

  /* The shapes matched the tensors the parser sized against the buffer,
   * so these products fit. */
  const size_t d = (size_t)dim, nf = tf->numel;
  double *mean = malloc(d * sizeof *mean);
  double *cov = malloc(d * d * sizeof *cov);
  float *fe = feats ? malloc(nf * sizeof *fe) : NULL;
  if (!mean || !cov || (feats && !fe)) {
    free(mean);
    free(cov);
    free(fe);
    return gf_fail(err, GF_ENOMEM, "feature cache %s: cannot allocate %zu bytes",
                   name, tf->nbytes + tc->nbytes);
  }
  memcpy(mean, tm->data, tm->nbytes);
  memcpy(cov, tc->data, tc->nbytes);
  gf_status st = GF_OK;
  size_t bad;
  if ((bad = first_nonfinite_f64(mean, d)) < d) {
    st = gf_fail(err, GF_EFORMAT, "feature cache %s: mean[%zu] is not finite",
                 name, bad);
  } else if ((bad = first_nonfinite_f64(cov, d * d)) < d * d) {
    st = gf_fail(err, GF_EFORMAT,
                 "feature cache %s: cov[%zu, %zu] is not finite", name, bad / d,
                 bad % d);
  } else {
    /* Unaligned in the file: check value by value through a copy. */
    const uint8_t *src = tf->data;
    for (size_t i = 0; i < nf; i++) {
      float v;
      memcpy(&v, src + i * sizeof v, sizeof v);
      if (!isfinite(v)) {
        st = gf_fail(err, GF_EFORMAT,
                     "feature cache %s: features[%zu, %zu] is not finite", name,
                     i / d, i % d);
        break;
      }
    }
  }
  if (st != GF_OK) {
    free(mean);
    free(cov);
    free(fe);
    return st;
  }
  if (fe) memcpy(fe, tf->data, tf->nbytes);
  if (feats) *feats = fe;
  m->dim = dim;
  m->n = count;
  m->mean = mean;
  m->cov = cov;
  return GF_OK;
}

gf_status gf_feat_cache_parse(const void *buf, size_t len, const char *name,
                              const gf_feat_cache_key *key, float **feats,
                              gf_feat_moments *m, gf_err *err) {
  if (feats) *feats = NULL;
  if (!m) return gf_fail(err, GF_EINVAL, "feature cache: NULL moments");
  memset(m, 0, sizeof *m);
  if (!name) name = "(buffer)";
  if (!buf && len)
    return gf_fail(err, GF_EINVAL, "feature cache %s: NULL buffer", name);
  if (key) GF_TRY(check_key("feature cache read", key, err));
  gf_st_file f;
  gf_status st = gf_st_parse(&f, buf, len, GF_ST_VERIFY_SHA256, err);
  if (st != GF_OK) {
    /* The parser's own codes (GF_EUNSUPPORTED for an unknown dtype,
     * GF_ENOTFOUND for a missing digest) all mean a bad file here. */
    if (st != GF_EINTEGRITY && st != GF_ENOMEM) st = GF_EFORMAT;
    if (err) {
      char msg[sizeof err->msg];
      memcpy(msg, err->msg, sizeof msg);
      gf_fail(err, st, "feature cache %s: %s", name, msg);
    }
    return st;
  }
  st = parse_cache(&f, name, key, feats, m, err);
  gf_st_file_free(&f);
  return st;
}

gf_status gf_feat_cache_read(const char *path, const gf_feat_cache_key *key,
                             float **feats, gf_feat_moments *m, gf_err *err) {
  if (feats) *feats = NULL;
  if (m) memset(m, 0, sizeof *m);
  if (!path || !m)
    return gf_fail(err, GF_EINVAL, "feature cache read: NULL argument");
  if (key) GF_TRY(check_key("feature cache read", key, err));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return gf_fail(err, GF_ENOTFOUND, "feature cache %s: no such file", path);
    return gf_fail(err, GF_EIO, "feature cache %s: cannot open: %s", path,
                   strerror(errno));
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return gf_fail(err, GF_EIO, "feature cache %s: not a regular file", path);
  }
  if ((uint64_t)sb.st_size > SIZE_MAX - 1) {
    close(fd);
    return gf_fail(err, GF_ENOMEM, "feature cache %s: too large", path);
  }
  size_t size = (size_t)sb.st_size, got = 0;
  uint8_t *bytes = malloc(size ? size : 1);
  if (!bytes) {
    close(fd);
    return gf_fail(err, GF_ENOMEM, "feature cache %s: cannot allocate %zu bytes",
                   path, size);
  }
  while (got < size) {
    ssize_t r = read(fd, bytes + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  int read_errno = errno;
  close(fd);
  if (got != size) {
    free(bytes);
    return gf_fail(err, GF_EIO, "feature cache %s: short read (%zu of %zu bytes): %s",
                   path, got, size, got < size ? strerror(read_errno) : "");
  }
  gf_status st = gf_feat_cache_parse(bytes, size, path, key, feats, m, err);
  free(bytes);
  return st;
}

/* ---- default directory -------------------------------------------------- */

gf_status gf_feat_cache_default_dir(char *buf, size_t cap, gf_err *err) {
  if (!buf || cap == 0)
    return gf_fail(err, GF_EINVAL, "feature cache dir: NULL buffer");
  buf[0] = '\0';
  const char *v = getenv("GANFLOW_CACHE_DIR");
  if (v && *v) return gf_format(buf, cap, err, "$GANFLOW_CACHE_DIR/fid", "%s%sfid", v,
                                v[strlen(v) - 1] == '/' ? "" : "/");
  v = getenv("XDG_CACHE_HOME");
  if (v && v[0] == '/')
    return gf_format(buf, cap, err, "$XDG_CACHE_HOME/ganflow/fid", "%s%sganflow/fid",
                     v, v[strlen(v) - 1] == '/' ? "" : "/");
  v = getenv("HOME");
  if (v && *v)
    return gf_format(buf, cap, err, "$HOME/.cache/ganflow/fid", "%s%s.cache/ganflow/fid",
                     v, v[strlen(v) - 1] == '/' ? "" : "/");
  return gf_fail(err, GF_ENOTFOUND,
                 "feature cache dir: none of GANFLOW_CACHE_DIR, XDG_CACHE_HOME "
                 "(absolute) or HOME is set");
}
