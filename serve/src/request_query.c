/* request_query.c - the query string of GET .../generate: percent
 * decoding, key=value pairs; numbers through gf/parse.h. See
 * gfs/request.h. */
#include <stdio.h>
#include <string.h>

#include "gf/parse.h"
#include "gf/text.h"
#include "gfs/request.h"

enum { KEY_SEED = 1u, KEY_N = 2u, KEY_CLASS = 4u, KEY_FORMAT = 8u };

enum { S_PSI = 1u, S_CUTOFF = 2u, S_NOISE = 4u, S_MIX = 8u, S_MIX_FROM = 16u };

void gfs_style_default(gfs_style *s) {
  memset(s, 0, sizeof *s);
  s->psi = 1.0;
  s->noise = GFS_NOISE_CONST;
}

int gfs_style_is_default(const gfs_style *s) {
  return s->psi == 1.0 && s->trunc_cutoff == 0 &&
         s->noise == GFS_NOISE_CONST && !s->has_mix;
}

gf_status gfs_style_set(gfs_style *s, const char *what, const char *key,
                        const char *value, int *handled, gf_err *err) {
  static const struct { const char *key; unsigned bit; } keys[] = {
      {"psi", S_PSI}, {"trunc_cutoff", S_CUTOFF}, {"noise", S_NOISE},
      {"mix", S_MIX}, {"mix_from", S_MIX_FROM}};
  *handled = 0;
  unsigned bit = 0;
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    if (strcmp(key, keys[i].key) == 0) bit = keys[i].bit;
  if (!bit) return GF_OK;
  *handled = 1;
  if (s->seen & bit)
    return gf_fail(err, GF_EINVAL, "%s: %s given twice", what, key);
  s->seen |= bit;
  char name[48];
  GF_FORMAT_FITS(name, sizeof name, "%.16s: %s", what, key);
  switch (bit) {
  case S_PSI:
    return gf_parse_f64(name, value, -8.0, 8.0, &s->psi, err);
  case S_CUTOFF:
    return gf_parse_int(name, value, 0, 64, &s->trunc_cutoff, err);
  case S_NOISE:
    if (strcmp(value, "const") == 0) s->noise = GFS_NOISE_CONST;
    else if (strcmp(value, "random") == 0) s->noise = GFS_NOISE_RANDOM;
    else if (strcmp(value, "none") == 0) s->noise = GFS_NOISE_NONE;
    else return gf_fail(err, GF_EINVAL, "%s: must be const, random or none",
                        name);
    return GF_OK;
  case S_MIX:
    s->has_mix = 1;
    return gf_parse_u64(name, value, 0, UINT64_MAX, &s->mix, err);
  default:
    return gf_parse_int(name, value, 1, 63, &s->mix_from, err);
  }
}

gf_status gfs_style_check(const gfs_style *s, const char *what, gf_err *err) {
  if (s->has_mix != (s->mix_from > 0))
    return gf_fail(err, GF_EINVAL, "%s: mix and mix_from go together", what);
  return GF_OK;
}

void gfs_gen_args_default(gfs_gen_args *a) {
  memset(a, 0, sizeof *a);
  a->n = 1;
  a->format = GFS_FORMAT_PNG;
  gfs_style_default(&a->style);
}

static gf_status once(gfs_gen_args *a, unsigned bit, const char *key,
                      gf_err *err) {
  if (a->seen & bit)
    return gf_fail(err, GF_EINVAL, "query: %s given twice", key);
  a->seen |= bit;
  return GF_OK;
}

gf_status gfs_gen_args_set(gfs_gen_args *a, const char *key,
                           const char *value, int max_images, gf_err *err) {
  if (!key || !*key) return gf_fail(err, GF_EFORMAT, "query: empty key");
  if (!value) value = "";
  gf_status st;
  int style = 0;
  GF_TRY(gfs_style_set(&a->style, "query", key, value, &style, err));
  if (style) {
    return GF_OK;
  } else if (strcmp(key, "seed") == 0) {
    if ((st = once(a, KEY_SEED, key, err))) return st;
    if ((st = gf_parse_u64("query: seed", value, 0, UINT64_MAX, &a->seed,
                           err)))
      return st;
  } else if (strcmp(key, "n") == 0) {
    if ((st = once(a, KEY_N, key, err))) return st;
    if ((st = gf_parse_int("query: n", value, 1, max_images, &a->n, err)))
      return st;
  } else if (strcmp(key, "class") == 0) {
    if ((st = once(a, KEY_CLASS, key, err))) return st;
    size_t len = strlen(value);
    if (len > GFS_CLASS_SPEC_MAX)
      return gf_fail(err, GF_EINVAL, "query: class is longer than %d bytes",
                     GFS_CLASS_SPEC_MAX);
    /* one class, or a comma-separated list of them, none empty */
    int items = 1;
    size_t item = 0;
    for (size_t i = 0; i <= len; i++) {
      if (i < len && value[i] != ',') {
        item++;
        continue;
      }
      if (item == 0 || item > GFS_CLASS_MAX)
        return gf_fail(err, GF_EINVAL, "query: class must be a class name "
                       "or index, or a comma-separated list of them (each "
                       "1..%d bytes)", GFS_CLASS_MAX);
      if (i < len && ++items > max_images)
        return gf_fail(err, GF_EINVAL, "query: class lists more than %d "
                       "classes", max_images);
      item = 0;
    }
    memcpy(a->cls, value, len + 1);
    a->n_cls = items;
    a->has_class = 1;
  } else if (strcmp(key, "format") == 0) {
    if ((st = once(a, KEY_FORMAT, key, err))) return st;
    if (strcmp(value, "png") == 0) a->format = GFS_FORMAT_PNG;
    else if (strcmp(value, "json") == 0) a->format = GFS_FORMAT_JSON;
    else return gf_fail(err, GF_EINVAL, "query: format must be png or json");
  } else {
    return gf_fail(err, GF_EINVAL,
                   "query: unknown parameter (expected seed, n, class, "
                   "format, psi, trunc_cutoff, noise, mix, mix_from)");
  }
  return GF_OK;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes src[0..n) into dst (capacity n + 1); -1 on a bad escape or a
 * decoded NUL. */
static int pct_decode(const char *src, size_t n, char *dst) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = src[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%') {
      if (i + 2 >= n) return -1;
      int h = hexval(src[i + 1]), l = hexval(src[i + 2]);
      if (h < 0 || l < 0) return -1;
      c = (char)(h * 16 + l);
      i += 2;
    }
    if (c == '\0') return -1;
    dst[o++] = c;
  }
  dst[o] = '\0';
  return 0;
}

gf_status gfs_query_parse(const char *query, size_t len, int max_images,
                          gfs_gen_args *out, gf_err *err) {
  gfs_gen_args_default(out);
  if (len == 0) return GF_OK;
  if (!query) return gf_fail(err, GF_EINVAL, "query: NULL");
  if (len > GFS_QUERY_MAX)
    return gf_fail(err, GF_EFORMAT, "query: longer than %d bytes",
                   GFS_QUERY_MAX);
  char key[GFS_QUERY_MAX + 1], val[GFS_QUERY_MAX + 1];
  size_t i = 0;
  while (i <= len) {
    size_t j = i;
    while (j < len && query[j] != '&') j++;
    if (j > i) { /* empty pieces ("a=1&&b=2") are skipped, as browsers do */
      size_t eq = i;
      while (eq < j && query[eq] != '=') eq++;
      if (eq == i) return gf_fail(err, GF_EFORMAT, "query: empty key");
      if (pct_decode(query + i, eq - i, key) != 0 ||
          pct_decode(eq < j ? query + eq + 1 : "", eq < j ? j - eq - 1 : 0,
                     val) != 0)
        return gf_fail(err, GF_EFORMAT, "query: bad percent-encoding");
      gf_status st = gfs_gen_args_set(out, key, val, max_images, err);
      if (st != GF_OK) return st;
    }
    i = j + 1;
  }
  return gfs_style_check(&out->style, "query", err);
}
