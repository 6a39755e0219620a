/* heartbeat.c - a rank's heartbeat file, written and read; see
 * gf/heartbeat.h for the format. */
#include "gf/heartbeat.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gf/fs.h"
#include "gf/text.h"

static const char MAGIC[] = "ganflow-heartbeat 1 ";

static const char *const PHASES[GF_HB_N_PHASES] = {
    "start", "setup", "train", "checkpoint", "eval", "finish", "done",
    "stopped"};

const char *gf_hb_phase_name(gf_hb_phase p) {
  return (unsigned)p < GF_HB_N_PHASES ? PHASES[p] : "?";
}

/* Characters a heartbeat field may hold: a host name's and a run id's. */
static int field_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/* Copies src into dst[max + 1], other characters as '_'. */
static void sanitize(char *dst, const char *src, size_t max) {
  size_t i = 0;
  for (; src[i] && i < max; i++) dst[i] = field_char(src[i]) ? src[i] : '_';
  dst[i] = '\0';
}

void gf_heartbeat_none(gf_heartbeat *hb) {
  memset(hb, 0, sizeof *hb);
  hb->fd = -1;
  strcpy(hb->run, "-");
  char h[256] = "";
  if (gethostname(h, sizeof h - 1) != 0 || !h[0]) strcpy(h, "-");
  sanitize(hb->host, h, GF_HB_HOST_MAX);
}

/* <dir>/rank-<rank>.hb into out[GF_PATH_MAX]; GF_EINVAL naming the path
 * when it does not fit. */
static gf_status path_of(char out[GF_PATH_MAX], const char *dir, int rank,
                         gf_err *err) {
  return gf_format(out, GF_PATH_MAX, err, "heartbeat file path", "%s/rank-%d.hb",
                   dir, rank);
}

gf_status gf_heartbeat_open(gf_heartbeat *hb, const char *dir, int rank,
                            gf_err *err) {
  gf_heartbeat_none(hb);
  char path[GF_PATH_MAX];
  GF_TRY(path_of(path, dir, rank, err));
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return gf_fail(err, GF_EIO, "heartbeat file %s: %s", path,
                   strerror(errno));
  hb->fd = fd;
  hb->rank = rank;
  gf_heartbeat_beat(hb, GF_HB_START, -1);
  return GF_OK;
}

void gf_heartbeat_set_run(gf_heartbeat *hb, const char *run_id) {
  if (!hb || !run_id || !*run_id) return;
  sanitize(hb->run, run_id, GF_HB_RUN_MAX);
}

void gf_heartbeat_beat(gf_heartbeat *hb, gf_hb_phase phase, int64_t step) {
  if (!hb || hb->fd < 0) return;
  char line[GF_HB_LINE];
  memset(line, ' ', sizeof line);
  hb->seq++;
  int n = snprintf(line, sizeof line,
                   "%srank=%d pid=%ld seq=%" PRIu64 " step=%" PRId64
                   " phase=%s host=%s run=%s",
                   MAGIC, hb->rank, (long)getpid(), hb->seq, step,
                   gf_hb_phase_name(phase), hb->host, hb->run);
  if (!gf_fits(n, sizeof line - 1)) return; /* cannot happen: fields are bounded */
  line[n] = ' '; /* snprintf's terminator becomes padding */
  line[sizeof line - 1] = '\n';
  ssize_t w = pwrite(hb->fd, line, sizeof line, 0);
  (void)w; /* best effort: see the header */
}

void gf_heartbeat_close(gf_heartbeat *hb) {
  if (!hb || hb->fd < 0) return;
  close(hb->fd);
  hb->fd = -1;
}

/* ---- reading ------------------------------------------------------------ */

/* The value of " key=" within [p, end): a pointer to it and its length
 * (up to the next space); NULL when absent. Keys appear in a fixed order,
 * so each search starts where the previous field ended. */
static const char *field(const char **p, const char *end, const char *key,
                         size_t *len) {
  size_t kl = strlen(key);
  if ((size_t)(end - *p) < kl || memcmp(*p, key, kl) != 0) return NULL;
  const char *v = *p + kl;
  const char *q = v;
  while (q < end && *q != ' ' && *q != '\n') q++;
  *len = (size_t)(q - v);
  *p = q < end && *q == ' ' ? q + 1 : q;
  return *len ? v : NULL;
}

/* A decimal integer in [min, max] from exactly len characters. */
static int parse_int(const char *v, size_t len, int64_t min, int64_t max,
                     int64_t *out) {
  if (len == 0 || len > 20) return 0;
  size_t i = 0;
  int neg = v[0] == '-';
  if (neg) i = 1;
  if (i == len) return 0;
  uint64_t acc = 0;
  for (; i < len; i++) {
    if (v[i] < '0' || v[i] > '9') return 0;
    unsigned d = (unsigned)(v[i] - '0');
    if (acc > (UINT64_MAX - d) / 10) return 0;
    acc = acc * 10 + d;
  }
  if (neg) {
    if (acc > (uint64_t)INT64_MAX) return 0;
    *out = -(int64_t)acc;
  } else {
    if (acc > (uint64_t)INT64_MAX) return 0;
    *out = (int64_t)acc;
  }
  return *out >= min && *out <= max;
}

gf_status gf_heartbeat_parse(const char *buf, size_t n, gf_heartbeat_rec *out,
                             gf_err *err) {
  memset(out, 0, sizeof *out);
  size_t ml = sizeof MAGIC - 1;
  if (n < ml || memcmp(buf, MAGIC, ml) != 0)
    return gf_fail(err, GF_EFORMAT, "heartbeat: not a ganflow heartbeat line");
  const char *end = buf + n;
  const char *p = buf + ml;
  static const char *const KEYS[] = {"rank=", "pid=", "seq=", "step=",
                                     "phase=", "host=", "run="};
  enum { NF = 7 };
  const char *v[NF];
  size_t len[NF];
  for (int i = 0; i < NF; i++) {
    v[i] = field(&p, end, KEYS[i], &len[i]);
    if (!v[i])
      return gf_fail(err, GF_EFORMAT, "heartbeat: field %s missing or empty",
                     KEYS[i]);
  }
  /* the rest is padding: spaces, then at most one newline at the end */
  for (const char *q = p; q < end; q++)
    if (*q != ' ' && !(*q == '\n' && q == end - 1))
      return gf_fail(err, GF_EFORMAT, "heartbeat: junk after the run field");
  int64_t x;
  if (!parse_int(v[0], len[0], 0, 1 << 16, &x))
    return gf_fail(err, GF_EFORMAT, "heartbeat: bad rank");
  out->rank = (int)x;
  if (!parse_int(v[1], len[1], 1, INT32_MAX, &x))
    return gf_fail(err, GF_EFORMAT, "heartbeat: bad pid");
  out->pid = (long)x;
  if (!parse_int(v[2], len[2], 1, INT64_MAX, &x))
    return gf_fail(err, GF_EFORMAT, "heartbeat: bad seq");
  out->seq = (uint64_t)x;
  if (!parse_int(v[3], len[3], -1, INT64_MAX, &x))
    return gf_fail(err, GF_EFORMAT, "heartbeat: bad step");
  out->step = x;
  int phase = -1;
  for (int i = 0; i < GF_HB_N_PHASES; i++)
    if (strlen(PHASES[i]) == len[4] && memcmp(PHASES[i], v[4], len[4]) == 0)
      phase = i;
  if (phase < 0) return gf_fail(err, GF_EFORMAT, "heartbeat: unknown phase");
  out->phase = (gf_hb_phase)phase;
  for (int f = 5; f < NF; f++) {
    if (len[f] > GF_HB_RUN_MAX)
      return gf_fail(err, GF_EFORMAT, "heartbeat: %s too long", KEYS[f]);
    for (size_t i = 0; i < len[f]; i++)
      if (!field_char(v[f][i]))
        return gf_fail(err, GF_EFORMAT, "heartbeat: bad character in %s",
                       KEYS[f]);
  }
  memcpy(out->host, v[5], len[5]);
  out->host[len[5]] = '\0';
  if (!(len[6] == 1 && v[6][0] == '-')) {
    memcpy(out->run, v[6], len[6]);
    out->run[len[6]] = '\0';
  }
  return GF_OK;
}

gf_status gf_heartbeat_read(const char *dir, int rank, gf_heartbeat_rec *out,
                            gf_err *err) {
  char path[GF_PATH_MAX];
  GF_TRY(path_of(path, dir, rank, err));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return gf_fail(err, GF_ENOTFOUND, "no heartbeat file %s yet", path);
    return gf_fail(err, GF_EIO, "heartbeat file %s: %s", path,
                   strerror(errno));
  }
  char buf[GF_HB_LINE + 1];
  ssize_t n = pread(fd, buf, sizeof buf, 0);
  int e = errno;
  close(fd);
  if (n < 0)
    return gf_fail(err, GF_EIO, "heartbeat file %s: %s", path, strerror(e));
  return gf_heartbeat_parse(buf, (size_t)n, out, err);
}
