/* cost_ledger.c - the run's cost ledger file and the price slots
 * (gf/cost.h). The parser reads a file that a crash, a disk or a person
 * may have damaged: every line is checked, nothing is trusted. */
#include "gf/cost.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gf/atomic_file.h"
#include "gf/file.h"
#include "gf/parse.h"
#include "gf/text.h"

int gf_price_slots(bool per_node, int local_rank) {
  return per_node ? local_rank == 0 : 1;
}

static bool totals_ok(const gf_cost_totals *t) {
  const double v[] = {t->cpu_joules, t->gpu_joules, t->usd, t->slot_seconds};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++)
    if (!isfinite(v[i]) || v[i] < 0) return false;
  return t->processes >= 0;
}

enum { K_RUN, K_PROC, K_CPU, K_GPU, K_USD, K_SLOT, K_N };
static const char *const k_keys[K_N] = {"run_id", "processes", "cpu_joules",
                                        "gpu_joules", "usd", "slot_seconds"};

/* A finite number >= 0 that is the whole of the NUL-terminated word
 * (gf/parse.h's decimal; no sign). */
static bool parse_nonneg(const char *w, double *out) {
  if (*w == '-') return false;
  return gf_parse_f64(NULL, w, 0, DBL_MAX, out, NULL) == GF_OK;
}

gf_status gf_cost_ledger_parse(const char *text, size_t len,
                               gf_cost_ledger *out, gf_err *err) {
  memset(out, 0, sizeof *out);
  if (len > GF_COST_LEDGER_MAX)
    return gf_fail(err, GF_EFORMAT, "cost ledger: %zu bytes (at most %d)", len,
                   GF_COST_LEDGER_MAX);
  bool seen[K_N] = {false};
  size_t pos = 0;
  for (int line = 1; pos < len; line++) {
    size_t n;
    const char *ls = gf_next_line(text, len, &pos, &n);
    char buf[256];
    if (n >= sizeof buf)
      return gf_fail(err, GF_EFORMAT, "cost ledger line %d: too long", line);
    memcpy(buf, ls, n);
    buf[n] = '\0';
    if (memchr(buf, '\0', n))
      return gf_fail(err, GF_EFORMAT, "cost ledger line %d: a NUL byte", line);
    char *p = buf;
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    if (!*p || *p == '#') continue;
    char *key = p;
    while (*p && *p != ' ' && *p != '\t') p++;
    if (*p) *p++ = '\0';
    while (*p == ' ' || *p == '\t') p++;
    char *val = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r') p++;
    if (*p) *p++ = '\0';
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    if (*p)
      return gf_fail(err, GF_EFORMAT, "cost ledger line %d: more than a key "
                     "and a value", line);
    int k = 0;
    while (k < K_N && strcmp(key, k_keys[k]) != 0) k++;
    if (k == K_N)
      return gf_fail(err, GF_EFORMAT, "cost ledger line %d: unknown key",
                     line);
    if (seen[k])
      return gf_fail(err, GF_EFORMAT, "cost ledger line %d: %s given twice",
                     line, k_keys[k]);
    seen[k] = true;
    if (!*val)
      return gf_fail(err, GF_EFORMAT, "cost ledger line %d: %s has no value",
                     line, k_keys[k]);
    if (k == K_RUN) {
      size_t vn = strlen(val); /* > 0: checked above */
      if (!gf_ckpt_run_id_valid(val))
        return gf_fail(err, GF_EFORMAT, "cost ledger line %d: not a run id",
                       line);
      memcpy(out->run_id, val, vn + 1);
      continue;
    }
    double v = 0;
    if (!parse_nonneg(val, &v))
      return gf_fail(err, GF_EFORMAT, "cost ledger line %d: %s is not a "
                     "finite number >= 0", line, k_keys[k]);
    switch (k) {
    case K_PROC:
      if (v != floor(v) || v > 1e15)
        return gf_fail(err, GF_EFORMAT, "cost ledger line %d: processes is "
                       "not a count", line);
      out->t.processes = (int64_t)v;
      break;
    case K_CPU: out->t.cpu_joules = v; break;
    case K_GPU: out->t.gpu_joules = v; break;
    case K_USD: out->t.usd = v; break;
    default: out->t.slot_seconds = v; break;
    }
  }
  for (int k = 0; k < K_N; k++)
    if (!seen[k])
      return gf_fail(err, GF_EFORMAT, "cost ledger: no %s", k_keys[k]);
  return GF_OK;
}

gf_status gf_cost_ledger_format(const gf_cost_ledger *l, char *out,
                                size_t cap, gf_err *err) {
  if (!memchr(l->run_id, '\0', sizeof l->run_id) || !l->run_id[0] ||
      !gf_ckpt_run_id_valid(l->run_id) || !totals_ok(&l->t))
    return gf_fail(err, GF_EINVAL, "cost ledger: bad run id or totals");
  return gf_format(out, cap, err, "cost ledger",
                   "# ganflow cost ledger: what every process of the run "
                   "spent, summed\n"
                   "run_id %s\nprocesses %lld\ncpu_joules %.17g\n"
                   "gpu_joules %.17g\nusd %.17g\nslot_seconds %.17g\n",
                   l->run_id, (long long)l->t.processes, l->t.cpu_joules,
                   l->t.gpu_joules, l->t.usd, l->t.slot_seconds);
}

gf_status gf_cost_ledger_read(const char *path, gf_cost_ledger *out,
                              bool *found, gf_err *err) {
  memset(out, 0, sizeof *out);
  *found = false;
  char *buf = NULL;
  size_t n = 0;
  gf_err e;
  gf_status s = gf_read_file(path, GF_COST_LEDGER_MAX, &buf, &n, &e);
  if (s == GF_ENOTFOUND) return GF_OK;
  if (s != GF_OK) /* too large: GF_EFORMAT; else it cannot be read */
    return gf_fail(err, s == GF_EINVAL ? GF_EIO : s, "cost ledger %s", e.msg);
  s = gf_cost_ledger_parse(buf, n, out, err);
  free(buf);
  if (s != GF_OK) return s;
  *found = true;
  return GF_OK;
}

gf_status gf_cost_ledger_write(const char *path, const gf_cost_ledger *l,
                               gf_err *err) {
  char text[GF_COST_LEDGER_MAX];
  GF_TRY(gf_cost_ledger_format(l, text, sizeof text, err));
  return gf_atomic_write_file(path, text, strlen(text), err);
}

int gf_cost_nvml_index(const char *cvd, int cuda_index) {
  if (cuda_index < 0) return -1;
  if (!cvd || !*cvd) return cuda_index;
  const char *p = cvd;
  for (int i = 0;; i++) {
    size_t n = strcspn(p, ",");
    char item[16];
    int v;
    if (n >= sizeof item) return -1;
    memcpy(item, p, n);
    item[n] = '\0';
    if (gf_parse_int(NULL, item, 0, 65535, &v, NULL) != GF_OK) return -1;
    if (i == cuda_index) return v;
    if (p[n] == '\0') return -1;
    p += n + 1;
  }
}
