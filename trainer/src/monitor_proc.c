/* monitor_proc.c - the /proc readers of the resource monitor (gf/monitor.h):
 * machine CPU time from /proc/stat, system memory from /proc/meminfo and
 * this process's resident set from /proc/self/status. Parsers take the
 * file's text so tests can feed known answers; readers read the real file.
 * Linux only. Not for: sampling policy or names (monitor.c). */
#include "gf/monitor.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a small /proc file (they report size 0) into buf, NUL-terminated.
 * Returns the byte count or -1 with errno set. */
static long read_small(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, cap - 1, f);
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    errno = EIO;
    return -1;
  }
  buf[n] = '\0';
  return (long)n;
}

gf_status gf_cpu_times_parse(const char *text, gf_cpu_times *out,
                             gf_err *err) {
  const char *p = text;
  while (p && strncmp(p, "cpu ", 4) != 0) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!p) return gf_fail(err, GF_EFORMAT, "monitor: /proc/stat has no cpu line");
  p += 4;
  uint64_t v[10] = {0};
  int got = 0;
  while (got < 10) {
    while (*p == ' ') p++;
    if (*p < '0' || *p > '9') break;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(p, &end, 10);
    if (errno) break;
    v[got++] = x;
    p = end;
  }
  if (got < 4)
    return gf_fail(err, GF_EFORMAT,
                   "monitor: /proc/stat cpu line has %d fields (need >= 4)", got);
  /* user nice system idle iowait irq softirq steal guest guest_nice: the
   * guest fields are already inside user and nice. */
  uint64_t total = 0;
  for (int i = 0; i < 8; i++) total += v[i];
  uint64_t idle = v[3] + v[4];
  out->total = total;
  out->busy = total - idle;
  return GF_OK;
}

gf_status gf_cpu_times_read(gf_cpu_times *out, gf_err *err) {
  char buf[8192]; /* the cpu line comes first */
  if (read_small("/proc/stat", buf, sizeof buf) < 0)
    return gf_fail(err, GF_EIO, "monitor: cannot read /proc/stat: %s",
                   strerror(errno));
  return gf_cpu_times_parse(buf, out, err);
}

double gf_cpu_utilization(const gf_cpu_times *a, const gf_cpu_times *b) {
  if (b->total <= a->total || b->busy < a->busy) return 0.0;
  double u = 100.0 * (double)(b->busy - a->busy) / (double)(b->total - a->total);
  return u < 0.0 ? 0.0 : u > 100.0 ? 100.0 : u;
}

/* Value in kB of "key:" at the start of a line, or -1. */
static int64_t field_kb(const char *text, const char *key) {
  size_t kl = strlen(key);
  const char *p = text;
  while (p && *p) {
    if (strncmp(p, key, kl) == 0 && p[kl] == ':') {
      char *end;
      errno = 0;
      long long v = strtoll(p + kl + 1, &end, 10);
      if (errno || end == p + kl + 1 || v < 0) return -1;
      return v;
    }
    p = strchr(p, '\n');
    if (p) p++;
  }
  return -1;
}

gf_status gf_meminfo_parse(const char *text, gf_mem_info *out, gf_err *err) {
  int64_t total = field_kb(text, "MemTotal");
  int64_t avail = field_kb(text, "MemAvailable");
  if (total <= 0 || avail < 0)
    return gf_fail(err, GF_EFORMAT,
                   "monitor: /proc/meminfo lacks MemTotal or MemAvailable");
  int64_t used = total > avail ? total - avail : 0;
  out->total_mb = (double)total * 1024.0 / 1e6;
  out->used_mb = (double)used * 1024.0 / 1e6;
  out->used_pct = 100.0 * (double)used / (double)total;
  return GF_OK;
}

gf_status gf_meminfo_read(gf_mem_info *out, gf_err *err) {
  char buf[8192];
  if (read_small("/proc/meminfo", buf, sizeof buf) < 0)
    return gf_fail(err, GF_EIO, "monitor: cannot read /proc/meminfo: %s",
                   strerror(errno));
  return gf_meminfo_parse(buf, out, err);
}

gf_status gf_process_rss_read(double *rss_mb, double *peak_mb, gf_err *err) {
  char buf[8192];
  if (read_small("/proc/self/status", buf, sizeof buf) < 0)
    return gf_fail(err, GF_EIO, "monitor: cannot read /proc/self/status: %s",
                   strerror(errno));
  int64_t rss = field_kb(buf, "VmRSS"), hwm = field_kb(buf, "VmHWM");
  if (rss < 0 || hwm < 0)
    return gf_fail(err, GF_EFORMAT,
                   "monitor: /proc/self/status lacks VmRSS or VmHWM");
  *rss_mb = (double)rss * 1024.0 / 1e6;
  *peak_mb = (double)hwm * 1024.0 / 1e6;
  return GF_OK;
}
