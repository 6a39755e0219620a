/* price.c - the price table of gf/energy.h: what an hour of an instance
 * kind costs on a market, parsed from a small text file the user writes
 * (outside input: every byte is checked, every error names its line).
 *
 * Not the cost arithmetic (the trainer multiplies hours by these prices)
 * and not a price source: nothing here asks a cloud for prices. */
#include "gf/energy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/file.h"
#include "gf/text.h"

/* The exact doubles 10^0 .. 10^22 (each is representable exactly). */
static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,
                               1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17,
                               1e18, 1e19, 1e20, 1e21, 1e22};
#define MAX_SIG_DIGITS 15 /* < 2^53: the mantissa is exact */
#define MAX_DECIMALS 22   /* 10^22 is the largest exact power of ten */

void gf_price_table_init(gf_price_table *t) {
  if (t) memset(t, 0, sizeof *t);
}

void gf_price_table_free(gf_price_table *t) {
  if (!t) return;
  free(t->entries);
  t->entries = NULL;
  t->n = 0;
}

const char *gf_price_market_name(gf_price_market m) {
  switch (m) {
    case GF_MARKET_ON_DEMAND: return "on-demand";
    case GF_MARKET_SPOT: return "spot";
  }
  return "unknown";
}

const char *gf_price_unit_name(gf_price_unit u) {
  switch (u) {
    case GF_PRICE_PER_NODE: return "node";
    case GF_PRICE_PER_GPU: return "gpu";
  }
  return "unknown";
}

static int token_is(const char *s, size_t n, const char *word) {
  return strlen(word) == n && memcmp(s, word, n) == 0;
}

static int market_of(const char *s, size_t n, gf_price_market *out) {
  if (token_is(s, n, "on-demand")) *out = GF_MARKET_ON_DEMAND;
  else if (token_is(s, n, "spot")) *out = GF_MARKET_SPOT;
  else return 0;
  return 1;
}

static int unit_of(const char *s, size_t n, gf_price_unit *out) {
  if (token_is(s, n, "node")) *out = GF_PRICE_PER_NODE;
  else if (token_is(s, n, "gpu")) *out = GF_PRICE_PER_GPU;
  else return 0;
  return 1;
}

gf_status gf_price_parse_market(const char *s, gf_price_market *out,
                                gf_err *err) {
  if (s && out && market_of(s, strlen(s), out)) return GF_OK;
  return gf_fail(err, GF_EINVAL, "market '%.64s' (on-demand or spot)",
                 s ? s : "(null)");
}

gf_status gf_price_parse_unit(const char *s, gf_price_unit *out,
                              gf_err *err) {
  if (s && out && unit_of(s, strlen(s), out)) return GF_OK;
  return gf_fail(err, GF_EINVAL, "price unit '%.64s' (node or gpu)",
                 s ? s : "(null)");
}

static int kind_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
         c == '/' || c == '-';
}

/* The token (n bytes at s) as printable text for a message: at most 40
 * characters, bytes outside printable ASCII as '?', "..." when cut. */
static const char *shown(const char *s, size_t n, char buf[48]) {
  size_t k = 0;
  for (; k < n && k < 40; k++)
    buf[k] = (s[k] >= 0x20 && s[k] < 0x7f) ? s[k] : '?';
  if (k < n) {
    memcpy(buf + k, "...", 3);
    k += 3;
  }
  buf[k] = '\0';
  return buf;
}

/* Parses a price: [0-9]+ ('.' [0-9]+)?, at most MAX_SIG_DIGITS significant
 * digits and MAX_DECIMALS decimals. The mantissa and the power of ten are
 * exact doubles, so the one division is correctly rounded: the value
 * strtod gives in the C locale, whatever LC_NUMERIC says. NULL and *out on
 * success; else what is wrong. */
static const char *price_of(const char *s, size_t n, double *out) {
  if (n == 0) return "is empty";
  if (s[0] == '-') return "is negative";
  if (s[0] == '+') return "has a sign (write a plain number, e.g. 0.357)";
  size_t i = 0, int_digits = 0, dec_digits = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++, int_digits++;
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, dec_digits++;
    if (dec_digits == 0) return "is not a plain decimal number (e.g. 0.357)";
  }
  if (int_digits == 0 || i != n)
    return "is not a plain decimal number (e.g. 0.357)";
  /* digits without the point, without leading zeros or trailing decimal
   * zeros */
  size_t dec_end = int_digits + 1 + dec_digits; /* one past the last */
  if (dec_digits) {
    while (dec_digits && s[dec_end - 1] == '0') dec_end--, dec_digits--;
  }
  uint64_t mant = 0;
  int sig = 0;
  for (size_t k = 0; k < (dec_digits ? dec_end : int_digits); k++) {
    if (s[k] == '.') continue;
    unsigned d = (unsigned)(s[k] - '0');
    if (sig == 0 && d == 0) continue;
    if (++sig > MAX_SIG_DIGITS) return "has more than 15 significant digits";
    mant = mant * 10 + d;
  }
  if (dec_digits > MAX_DECIMALS) return "has more than 22 decimals";
  *out = (double)mant / POW10[dec_digits];
  return NULL;
}

/* A field of a line: n bytes at s. */
typedef struct field {
  const char *s;
  size_t n;
} field;

gf_status gf_price_parse(const char *text, size_t len, const char *origin,
                         gf_price_table *out, gf_err *err) {
  if (!out) return gf_fail(err, GF_EINVAL, "price table: NULL output");
  out->entries = NULL;
  out->n = 0;
  const char *who = origin ? origin : "price table";
  if (len > GF_PRICE_FILE_MAX)
    return gf_fail(err, GF_EINVAL, "%s: %zu bytes, more than the %d a price "
                   "file may have", who, len, GF_PRICE_FILE_MAX);
  if (!text && len)
    return gf_fail(err, GF_EINVAL, "%s: NULL text", who);
  gf_price_entry *ent = NULL;
  size_t n = 0, cap = 0;
  gf_status st = GF_OK;
  char a[48];
  size_t pos = 0;
  for (int line = 1; pos < len; line++) {
    size_t ll;
    const char *p = gf_next_line(text, len, &pos, &ll);
    if (ll && p[ll - 1] == '\r') ll--;
    if (memchr(p, '\0', ll)) {
      st = gf_fail(err, GF_EFORMAT, "%s: line %d: a NUL byte", who, line);
      goto fail;
    }
    field f[4];
    int nf = 0;
    for (size_t i = 0; i < ll;) {
      if (p[i] == ' ' || p[i] == '\t') {
        i++;
        continue;
      }
      if (p[i] == '#') break; /* a comment to the end of the line */
      size_t j = i;
      while (j < ll && p[j] != ' ' && p[j] != '\t') j++;
      if (nf < 4) f[nf] = (field){p + i, j - i};
      nf++;
      i = j;
    }
    if (nf == 0) continue;
    if (nf != 4) {
      st = gf_fail(err, GF_EFORMAT, "%s: line %d: %d field%s, expected 4 "
                   "(kind market usd/hour unit)", who, line, nf,
                   nf == 1 ? "" : "s");
      goto fail;
    }
    gf_price_entry e;
    memset(&e, 0, sizeof e);
    e.line = line;
    if (f[0].n >= GF_PRICE_KIND_MAX) {
      st = gf_fail(err, GF_EFORMAT, "%s: line %d: kind '%s' is %zu "
                   "characters long, more than %d", who, line,
                   shown(f[0].s, f[0].n, a), f[0].n, GF_PRICE_KIND_MAX - 1);
      goto fail;
    }
    for (size_t k = 0; k < f[0].n; k++)
      if (!kind_char(f[0].s[k])) {
        st = gf_fail(err, GF_EFORMAT, "%s: line %d: kind '%s' has the "
                     "character 0x%02x at %zu (allowed: A-Z a-z 0-9 . _ : / "
                     "-)", who, line, shown(f[0].s, f[0].n, a),
                     (unsigned)(unsigned char)f[0].s[k], k + 1);
        goto fail;
      }
    memcpy(e.kind, f[0].s, f[0].n);
    e.kind[f[0].n] = '\0';
    if (!market_of(f[1].s, f[1].n, &e.market)) {
      st = gf_fail(err, GF_EFORMAT, "%s: line %d: market '%s' (on-demand or "
                   "spot)", who, line, shown(f[1].s, f[1].n, a));
      goto fail;
    }
    const char *why = price_of(f[2].s, f[2].n, &e.usd_per_hour);
    if (why) {
      st = gf_fail(err, GF_EFORMAT, "%s: line %d: price '%s' %s", who, line,
                   shown(f[2].s, f[2].n, a), why);
      goto fail;
    }
    if (!unit_of(f[3].s, f[3].n, &e.unit)) {
      st = gf_fail(err, GF_EFORMAT, "%s: line %d: unit '%s' (node or gpu)",
                   who, line, shown(f[3].s, f[3].n, a));
      goto fail;
    }
    for (size_t k = 0; k < n; k++)
      if (ent[k].market == e.market && strcmp(ent[k].kind, e.kind) == 0) {
        st = gf_fail(err, GF_EFORMAT, "%s: line %d: duplicate entry %s %s "
                     "(first on line %d)", who, line, e.kind,
                     gf_price_market_name(e.market), ent[k].line);
        goto fail;
      }
    if (n == GF_PRICE_MAX_ENTRIES) {
      st = gf_fail(err, GF_EFORMAT, "%s: line %d: more than %d entries", who,
                   line, GF_PRICE_MAX_ENTRIES);
      goto fail;
    }
    if (n == cap) {
      size_t ncap = cap ? 2 * cap : 16;
      gf_price_entry *grown = realloc(ent, ncap * sizeof *grown);
      if (!grown) {
        st = gf_fail(err, GF_ENOMEM, "%s: out of memory at line %d", who,
                     line);
        goto fail;
      }
      ent = grown;
      cap = ncap;
    }
    ent[n++] = e;
  }
  out->entries = ent;
  out->n = n;
  return GF_OK;
fail:
  free(ent);
  return st;
}

gf_status gf_price_load(const char *path, gf_price_table *out, gf_err *err) {
  if (!out) return gf_fail(err, GF_EINVAL, "price file: NULL output");
  out->entries = NULL;
  out->n = 0;
  if (!path || !path[0])
    return gf_fail(err, GF_EINVAL, "price file: no path");
  char *buf = NULL;
  size_t n = 0;
  gf_err e;
  gf_status st = gf_read_file(path, GF_PRICE_FILE_MAX, &buf, &n, &e);
  if (st != GF_OK) /* gf_price_load's codes: see gf/energy.h */
    return gf_fail(err, st == GF_ENOTFOUND ? GF_EIO
                        : st == GF_EFORMAT ? GF_EINVAL : st,
                   "price file %s", e.msg);
  st = gf_price_parse(buf, n, path, out, err);
  free(buf);
  return st;
}

gf_status gf_price_lookup(const gf_price_table *t, const char *kind,
                          gf_price_market market, const gf_price_entry **out,
                          gf_err *err) {
  if (!t || !kind || !out)
    return gf_fail(err, GF_EINVAL, "price lookup: NULL argument");
  *out = NULL;
  for (size_t i = 0; i < t->n; i++)
    if (t->entries[i].market == market &&
        strcmp(t->entries[i].kind, kind) == 0) {
      *out = &t->entries[i];
      return GF_OK;
    }
  /* What there is: the markets of this kind, else the kinds. */
  char have[320];
  size_t hl = 0;
  int same_kind = 0;
  have[0] = '\0';
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->entries[i].kind, kind) == 0) same_kind = 1;
  for (size_t i = 0; i < t->n; i++) {
    const gf_price_entry *e = &t->entries[i];
    if (same_kind && strcmp(e->kind, kind) != 0) continue;
    int w = snprintf(have + hl, sizeof have - hl, "%s%s %s", hl ? ", " : "",
                     e->kind, gf_price_market_name(e->market));
    if (!gf_fits(w, sizeof have - hl - 5)) { /* keep room for ", ..." */
      have[hl] = '\0';
      memcpy(have + hl, hl ? ", ..." : "...", hl ? 6 : 4);
      break;
    }
    hl += (size_t)w;
  }
  if (t->n == 0)
    return gf_fail(err, GF_ENOTFOUND, "no %s price for %.63s: the price "
                   "table is empty", gf_price_market_name(market), kind);
  return gf_fail(err, GF_ENOTFOUND, "no %s price for %.63s; the price table "
                 "has %s%s", gf_price_market_name(market), kind,
                 same_kind ? "only " : "", have);
}
