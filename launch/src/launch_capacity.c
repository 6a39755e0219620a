/* launch_capacity.c - `ganflow launch --elastic-capacity`: the capacity
 * sources' parser (a capacity file, an Open MPI host file), the spot
 * notices' times, and the plan that turns a capacity into a grow, a shrink
 * or a loss (gf/launch.h); then the supervisor's side that reads the
 * source and writes mpirun's host file (launch_internal.h). The parser and
 * the planner are pure; what acts on the plan is launch_run.c. */
#define _GNU_SOURCE
#include <assert.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gf/atomic_file.h"
#include "gf/clock.h"
#include "gf/file.h"
#include "gf/fs.h"
#include "gf/note.h"
#include "gf/parse.h"
#include "gf/strbuf.h"
#include "gf/text.h"
#include "launch_internal.h"

/* ---- WHEN -------------------------------------------------------------- */

static bool all_digits(const char *s, size_t n) {
  if (!n) return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

/* s[0..n) as a decimal number (all digits, n <= 9). */
static int num(const char *s, size_t n) {
  int v = 0;
  for (size_t i = 0; i < n; i++) v = v * 10 + (s[i] - '0');
  return v;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int month_days(int y, int m) {
  static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : d[m - 1];
}

gf_status gf_capacity_parse_when(const char *v, int64_t *unix_s, gf_err *err) {
  size_t n = strlen(v);
  if (all_digits(v, n)) {
    if (gf_parse_i64(NULL, v, 0, INT64_C(100000000000), unix_s, NULL) !=
        GF_OK)
      return gf_fail(err, GF_EFORMAT, "'%.40s' is past year 5000 in Unix "
                     "seconds", v);
    return GF_OK;
  }
  /* YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM) */
  const char *p = v;
  bool ok = n >= 20 && all_digits(p, 4) && p[4] == '-' &&
            all_digits(p + 5, 2) && p[7] == '-' && all_digits(p + 8, 2) &&
            (p[10] == 'T' || p[10] == 't') && all_digits(p + 11, 2) &&
            p[13] == ':' && all_digits(p + 14, 2) && p[16] == ':' &&
            all_digits(p + 17, 2);
  if (!ok)
    return gf_fail(err, GF_EFORMAT, "'%.40s' is neither Unix seconds nor "
                   "RFC 3339 (2026-11-26T15:30:00Z)", v);
  int y = num(p, 4), mo = num(p + 5, 2), d = num(p + 8, 2);
  int h = num(p + 11, 2), mi = num(p + 14, 2), s = num(p + 17, 2);
  const char *q = p + 19;
  if (*q == '.') {
    const char *f = ++q;
    while (*q >= '0' && *q <= '9') q++;
    if (q == f)
      return gf_fail(err, GF_EFORMAT, "'%.40s': no digits after '.'", v);
  }
  int off = 0; /* seconds east of UTC */
  if (*q == 'Z' || *q == 'z') {
    q++;
  } else if ((*q == '+' || *q == '-') && all_digits(q + 1, 2) &&
             q[3] == ':' && all_digits(q + 4, 2)) {
    int oh = num(q + 1, 2), om = num(q + 4, 2);
    if (oh > 23 || om > 59)
      return gf_fail(err, GF_EFORMAT, "'%.40s': offset out of range", v);
    off = (oh * 60 + om) * 60 * (*q == '-' ? -1 : 1);
    q += 6;
  } else {
    return gf_fail(err, GF_EFORMAT, "'%.40s': no time zone (Z or +HH:MM)", v);
  }
  if (*q)
    return gf_fail(err, GF_EFORMAT, "'%.40s': text after the time", v);
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo) ||
      h > 23 || mi > 59 || s > 60)
    return gf_fail(err, GF_EFORMAT, "'%.40s': a field out of range (or "
                   "before 1970)", v);
  if (s == 60) s = 59; /* a leap second: the host goes at its start */
  int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - off;
  if (t < 0)
    return gf_fail(err, GF_EFORMAT, "'%.40s' is before 1970", v);
  *unix_s = t;
  return GF_OK;
}

/* ---- the parser -------------------------------------------------------- */

static bool host_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_' ||
         ch == ':';
}

/* One token tok[0..n) of line `line` into *h; the first is the host. */
static gf_status parse_token(const char *tok, size_t n, int line, bool first,
                             gf_cap_kind kind, gf_cap_host *h, bool *seen_slots,
                             bool *seen_leaving, gf_err *err) {
  if (first) {
    if (n > GF_CAP_HOST_MAX)
      return gf_fail(err, GF_EFORMAT, "line %d: host name longer than %d "
                     "characters", line, GF_CAP_HOST_MAX);
    for (size_t i = 0; i < n; i++)
      if (!host_char(tok[i]) || (i == 0 && tok[i] == '-'))
        return gf_fail(err, GF_EFORMAT, "line %d: '%.*s' is not a host name",
                       line, (int)(n > 64 ? 64 : n), tok);
    memcpy(h->name, tok, n);
    h->name[n] = '\0';
    return GF_OK;
  }
  const char *eq = memchr(tok, '=', n);
  size_t kl = eq ? (size_t)(eq - tok) : n;
  const char *v = eq ? eq + 1 : NULL;
  size_t vl = eq ? n - kl - 1 : 0;
  char val[48];
  if (kl == 5 && memcmp(tok, "slots", 5) == 0 && v) {
    if (*seen_slots)
      return gf_fail(err, GF_EFORMAT, "line %d: slots= twice", line);
    if (!all_digits(v, vl) || vl > 4 || num(v, vl) > GF_LAUNCH_MAX_RANKS)
      return gf_fail(err, GF_EFORMAT, "line %d: slots='%.*s' is not an "
                     "integer in 0..%d", line, (int)(vl > 32 ? 32 : vl), v,
                     GF_LAUNCH_MAX_RANKS);
    h->slots = num(v, vl);
    *seen_slots = true;
    return GF_OK;
  }
  if (kl == 7 && memcmp(tok, "leaving", 7) == 0 && v && kind == GF_CAP_FILE) {
    if (*seen_leaving)
      return gf_fail(err, GF_EFORMAT, "line %d: leaving= twice", line);
    if (vl >= sizeof val)
      return gf_fail(err, GF_EFORMAT, "line %d: leaving= too long", line);
    memcpy(val, v, vl);
    val[vl] = '\0';
    gf_err e;
    memset(&e, 0, sizeof e);
    if (gf_capacity_parse_when(val, &h->leaving, &e) != GF_OK)
      return gf_fail(err, GF_EFORMAT, "line %d: leaving=: %s", line, e.msg);
    *seen_leaving = true;
    return GF_OK;
  }
  if (kind == GF_CAP_HOSTFILE) return GF_OK; /* max_slots= and the like */
  return gf_fail(err, GF_EFORMAT, "line %d: '%.*s' is not slots=N or "
                 "leaving=WHEN", line, (int)(n > 64 ? 64 : n), tok);
}

gf_status gf_capacity_parse(const char *text, size_t len, gf_cap_kind kind,
                            gf_capacity *c, gf_err *err) {
  assert(kind == GF_CAP_FILE || kind == GF_CAP_HOSTFILE);
  c->n = 0;
  if (len > GF_CAP_FILE_MAX)
    return gf_fail(err, GF_EFORMAT, "more than %d bytes", GF_CAP_FILE_MAX);
  int line = 0;
  for (size_t at = 0; at < len;) {
    line++;
    const char *nl = memchr(text + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - text) : len;
    const char *hash = memchr(text + at, '#', end - at);
    size_t stop = hash ? (size_t)(hash - text) : end;
    if (memchr(text + at, '\0', end - at))
      return gf_fail(err, GF_EFORMAT, "line %d: a NUL byte", line);
    gf_cap_host h;
    memset(&h, 0, sizeof h);
    h.slots = 1;
    h.leaving = -1;
    h.line = line;
    bool seen_slots = false, seen_leaving = false;
    int ntok = 0;
    for (size_t i = at; i < stop;) {
      char ch = text[i];
      if (ch == ' ' || ch == '\t' || ch == '\r') {
        i++;
        continue;
      }
      size_t j = i;
      while (j < stop && text[j] != ' ' && text[j] != '\t' && text[j] != '\r')
        j++;
      GF_TRY(parse_token(text + i, j - i, line, ntok == 0, kind, &h,
                         &seen_slots, &seen_leaving, err));
      ntok++;
      i = j;
    }
    at = end + (nl ? 1 : 0);
    if (!ntok) continue;
    if (c->n == GF_CAP_MAX_HOSTS)
      return gf_fail(err, GF_EFORMAT, "line %d: more than %d hosts", line,
                     GF_CAP_MAX_HOSTS);
    if (kind == GF_CAP_FILE)
      for (int k = 0; k < c->n; k++)
        if (strcmp(c->h[k].name, h.name) == 0)
          return gf_fail(err, GF_EFORMAT, "line %d: host %s is already on "
                         "line %d", line, h.name, c->h[k].line);
    c->h[c->n++] = h;
  }
  return GF_OK;
}

/* ---- the plan ---------------------------------------------------------- */

void gf_capacity_slots(const gf_capacity *c, double now, double margin,
                       int *present, int *usable) {
  long p = 0, u = 0;
  for (int i = 0; i < c->n; i++) {
    const gf_cap_host *h = &c->h[i];
    if (h->leaving < 0 || (double)h->leaving > now) p += h->slots;
    if (h->leaving < 0 || (double)h->leaving - margin > now) u += h->slots;
    if (p > GF_LAUNCH_MAX_RANKS) p = GF_LAUNCH_MAX_RANKS;
    if (u > GF_LAUNCH_MAX_RANKS) u = GF_LAUNCH_MAX_RANKS;
  }
  *present = (int)p;
  *usable = (int)u;
}

/* Appends printf text to p->text; a text cut short ends "...". */
__attribute__((format(printf, 2, 3)))
static void say(gf_cap_plan *p, const char *fmt, ...) {
  size_t n = strlen(p->text);
  if (n + 1 >= sizeof p->text) return;
  va_list ap;
  va_start(ap, fmt);
  gf_vnote_append(p->text, sizeof p->text, fmt, ap);
  va_end(ap);
}

static void utc(int64_t t, char out[32]) {
  time_t tt = (time_t)t;
  struct tm tm;
  if (!gmtime_r(&tt, &tm) || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    gf_format(out, 32, NULL, "time", "@%" PRId64, t);
}

/* The slots host `name` had in prev (-1: not there). */
static int slots_in(const gf_capacity *c, const char *name, double now) {
  int s = -1;
  for (int i = 0; c && i < c->n; i++)
    if (strcmp(c->h[i].name, name) == 0 &&
        (c->h[i].leaving < 0 || (double)c->h[i].leaving > now))
      s = (s < 0 ? 0 : s) + c->h[i].slots;
  return s;
}

void gf_capacity_plan(const gf_launch_opts *o, const gf_capacity *prev,
                      const gf_capacity *c, int running, int other,
                      double now, gf_cap_plan *p) {
  memset(p, 0, sizeof *p);
  p->deadline = -1;
  gf_capacity_slots(c, now, o->cap_margin, &p->present, &p->usable);
  int avail = p->usable < other ? p->usable : other;
  gf_err e;
  memset(&e, 0, sizeof e);
  if (gf_launch_plan_world(o, avail, &p->world, &p->grad_accum, &e) != GF_OK)
    p->world = 0, p->grad_accum = o->train.grad_accum;
  if (running > 0 && p->present < running) {
    p->act = GF_CAP_LOST;
    say(p, "%d -> %d slots: %d slot%s gone without notice", running,
        p->world, running - p->present, running - p->present == 1 ? "" : "s");
    int named = 0;
    for (int i = 0; i < c->n; i++) { /* deadlines passed */
      const gf_cap_host *h = &c->h[i];
      if (h->leaving >= 0 && (double)h->leaving <= now && h->slots > 0) {
        char t[32];
        utc(h->leaving, t);
        say(p, "%shost %s past its deadline %s", named++ ? ", " : " (", h->name,
            t);
      }
    }
    for (int i = 0; prev && i < prev->n; i++) { /* gone from the source */
      const gf_cap_host *h = &prev->h[i];
      int was = slots_in(prev, h->name, now), is = slots_in(c, h->name, now);
      bool first = true; /* a repeated host (host file) named once */
      for (int k = 0; k < i; k++) first &= strcmp(prev->h[k].name, h->name) != 0;
      if (first && was > 0 && is < was)
        say(p, "%shost %s %d -> %d", named++ ? ", " : " (", h->name, was,
            is < 0 ? 0 : is);
    }
    if (named) say(p, ")");
    return;
  }
  if (running > 0 && p->usable < running) {
    p->act = GF_CAP_SHRINK;
    say(p, "%d -> %d slots: spot notice for", running, p->world);
    int named = 0;
    for (int i = 0; i < c->n; i++) {
      const gf_cap_host *h = &c->h[i];
      if (h->leaving < 0 || (double)h->leaving <= now ||
          (double)h->leaving - o->cap_margin > now || h->slots == 0)
        continue;
      char t[32];
      utc(h->leaving, t);
      say(p, "%s host %s (%d slot%s), deadline %s, in %.0f s",
          named++ ? ";" : "", h->name, h->slots, h->slots == 1 ? "" : "s", t,
          (double)h->leaving - now);
      if (p->deadline < 0 || h->leaving < p->deadline) p->deadline = h->leaving;
    }
    return;
  }
  if (running > 0 && p->world > running) {
    p->act = GF_CAP_GROW;
    say(p, "%d -> %d slots: %d usable slot%s (planned restart at a "
        "checkpoint)", running, p->world, p->usable,
        p->usable == 1 ? "" : "s");
    return;
  }
  p->act = GF_CAP_KEEP;
  if (running > 0) p->world = running;
}

/* ---- the supervisor's side --------------------------------------------- */

gf_status launch_capacity_read(const gf_launch_opts *o, gf_capacity *c,
                               char *text, size_t *len, gf_err *err) {
  if (o->cap_kind == GF_CAP_SLURM) {
    gf_err e;
    memset(&e, 0, sizeof e);
    gf_status st = launch_slurm_read(o->cap_path, text, GF_CAP_FILE_MAX + 1,
                                     len, &e);
    if (st == GF_OK) st = gf_capacity_parse(text, *len, GF_CAP_FILE, c, &e);
    if (st != GF_OK)
      return gf_fail(err, st, "--elastic-capacity slurm (job %s): %s",
                     o->cap_path, e.msg);
    return GF_OK;
  }
  char *buf = NULL;
  size_t n = 0;
  gf_err e;
  memset(&e, 0, sizeof e);
  gf_status st = gf_read_file(o->cap_path, GF_CAP_FILE_MAX, &buf, &n, &e);
  if (st != GF_OK)
    return gf_fail(err, st == GF_ENOTFOUND ? GF_EIO : st,
                   "--elastic-capacity %s", e.msg);
  memcpy(text, buf, n);
  free(buf);
  *len = n;
  if (gf_capacity_parse(text, n, o->cap_kind, c, &e) != GF_OK)
    return gf_fail(err, GF_EFORMAT, "--elastic-capacity %s: %s", o->cap_path,
                   e.msg);
  return GF_OK;
}

gf_status launch_capacity_hostfile(const gf_capacity *c, double now,
                                   double margin, const char *path,
                                   gf_err *err) {
  gf_strbuf b;
  gf_strbuf_init(&b);
  for (int i = 0; i < c->n; i++) {
    const gf_cap_host *h = &c->h[i];
    bool usable = h->leaving < 0 || (double)h->leaving - margin > now;
    if (usable && h->slots > 0)
      gf_strbuf_printf(&b, "%s slots=%d\n", h->name, h->slots);
  }
  gf_status st = b.failed
      ? gf_fail(err, GF_ENOMEM, "out of memory")
      : gf_atomic_write_file(path, b.len ? b.data : "", b.len, err);
  gf_strbuf_free(&b);
  return st;
}

#define CAP_POLL_S 0.5 /* seconds between reads of the source */
#define CAP_POLL_SLURM_S 5.0 /* ... when each read asks slurmctld */

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void say_capacity(launch_sup *s, const char *what) {
  int present = 0, usable = 0;
  gf_capacity_slots(s->cap, wall_s(), s->o->cap_margin, &present, &usable);
  launch_say(s, "capacity%s: %d host%s, %d slot%s, %d usable (notice margin "
      "%gs)", what, s->cap->n, s->cap->n == 1 ? "" : "s", present,
      present == 1 ? "" : "s", usable, s->o->cap_margin);
}

gf_status launch_capacity_start(launch_sup *s, gf_err *err) {
  s->cap = malloc(sizeof *s->cap);
  s->cap_next = malloc(sizeof *s->cap_next);
  s->cap_planned = calloc(1, sizeof *s->cap_planned);
  s->cap_text = malloc(GF_CAP_FILE_MAX + 1);
  s->cap_buf = malloc(GF_CAP_FILE_MAX + 1);
  if (!s->cap || !s->cap_next || !s->cap_planned || !s->cap_text ||
      !s->cap_buf)
    return gf_fail(err, GF_ENOMEM, "out of memory");
  GF_TRY(launch_capacity_read(s->o, s->cap, s->cap_text, &s->cap_len, err));
  s->t_cap_read = gf_mono_s();
  say_capacity(s, "");
  return GF_OK;
}

void launch_capacity_free(launch_sup *s) {
  free(s->cap);
  free(s->cap_next);
  free(s->cap_planned);
  free(s->cap_text);
  free(s->cap_buf);
  s->cap = s->cap_next = s->cap_planned = NULL;
  s->cap_text = s->cap_buf = NULL;
}

/* Reads the source again: a good read that changed replaces s->cap (and
 * is said); a bad one keeps the last good capacity (said once). */
static void refresh(launch_sup *s) {
  if (s->o->cap_kind == GF_CAP_SLURM &&
      gf_mono_s() - s->t_cap_read < CAP_POLL_SLURM_S)
    return;
  s->t_cap_read = gf_mono_s();
  size_t len = 0;
  gf_err e;
  memset(&e, 0, sizeof e);
  if (launch_capacity_read(s->o, s->cap_next, s->cap_buf, &len, &e) != GF_OK) {
    if (!s->cap_bad)
      launch_say(s, "capacity: %s; keeping the last good capacity", e.msg);
    s->cap_bad = true;
    return;
  }
  if (s->cap_bad) launch_say(s, "capacity: the source reads again");
  s->cap_bad = false;
  if (len == s->cap_len && memcmp(s->cap_buf, s->cap_text, len) == 0) return;
  gf_capacity *c = s->cap;
  s->cap = s->cap_next;
  s->cap_next = c;
  char *t = s->cap_text;
  s->cap_text = s->cap_buf;
  s->cap_buf = t;
  s->cap_len = len;
  say_capacity(s, " changed");
}

int launch_capacity_avail(launch_sup *s, int other) {
  refresh(s);
  int present = 0, usable = 0;
  gf_capacity_slots(s->cap, wall_s(), s->o->cap_margin, &present, &usable);
  return usable < other ? usable : other;
}

gf_status launch_capacity_begin(launch_sup *s, launch_attempt *a,
                                gf_err *err) {
  *s->cap_planned = *s->cap;
  s->cap_stopping = false;
  s->cap_deadline = -1;
  s->cap_why[0] = '\0';
  if (s->o->launcher != GF_LAUNCHER_MPIRUN) return GF_OK;
  GF_TRY(gf_path_join(s->cap_hosts, sizeof s->cap_hosts, s->o->hb_dir,
                      "capacity.hosts", err));
  GF_TRY(launch_capacity_hostfile(s->cap, wall_s(), s->o->cap_margin,
                                  s->cap_hosts, err));
  a->hostfile = s->cap_hosts;
  return GF_OK;
}

bool launch_capacity_watch(launch_sup *s, launch_attempt *a, int other,
                           outcome *out) {
  const gf_launch_opts *o = s->o;
  if (o->cap_kind == GF_CAP_NONE || s->signals ||
      gf_mono_s() - s->t_cap_read < CAP_POLL_S)
    return false;
  refresh(s);
  gf_cap_plan p;
  gf_capacity_plan(o, s->cap_planned, s->cap, a->world, other, wall_s(), &p);
  if (p.act == GF_CAP_LOST) {
    /* as the hosts vanished: the ranks on the slots gone die at once
     * (local: the last ranks; mpirun: mpirun ends the job), then all */
    for (int i = p.present; o->launcher == GF_LAUNCHER_LOCAL && i < a->world;
         i++)
      if (a->r[i].pid > 0 && !a->r[i].exited) kill(a->r[i].pid, SIGKILL);
    launch_kill_all(a);
    out->end = END_FAILED;
    out->start_slot = -1;
    out->t_seen = gf_mono_s();
    /* a literal and a plan's text (< 400 bytes): cause[512] holds them */
    GF_FORMAT_FITS(out->cause, sizeof out->cause, "capacity: %s", p.text);
    launch_say(s, "%s: the ranks on them are gone", out->cause);
    char ev[sizeof p.text + 64]; /* the text and a literal */
    GF_FORMAT_FITS(ev, sizeof ev, "%s; recovering as from a failure", p.text);
    launch_add_capacity_event(s, ev);
    launch_flush_events(s);
    return true;
  }
  if (s->cap_stopping || p.act == GF_CAP_KEEP) return false;
  /* a grow waits for training to begin (a stop in start-up only costs) */
  if (p.act == GF_CAP_GROW && !(a->r[0].trained && a->rank_base == 0))
    return false;
  launch_say(s, "capacity: %s: the ranks checkpoint and stop", p.text);
  launch_signal_stop(o, a);
  s->cap_stopping = true;
  s->cap_deadline = p.deadline;
  _Static_assert(sizeof s->cap_why == sizeof p.text, "the plan's text fits");
  memcpy(s->cap_why, p.text, sizeof p.text);
  return false;
}

void launch_capacity_resized(launch_sup *s, int64_t step) {
  char ev[sizeof s->cap_why + 128]; /* the text, literals and numbers */
  if (s->cap_deadline >= 0)
    GF_FORMAT_FITS(ev, sizeof ev, "%s; checkpoint of step %" PRId64
                   " written %.1f s before the deadline", s->cap_why, step,
                   (double)s->cap_deadline - wall_s());
  else
    GF_FORMAT_FITS(ev, sizeof ev, "%s; checkpoint of step %" PRId64
                   " written", s->cap_why, step);
  launch_say(s, "capacity: %s", ev);
  launch_add_capacity_event(s, ev);
}

bool launch_capacity_wait(launch_sup *s, int other, int *world, int *ga,
                          bool *stopped, gf_err *err) {
  const gf_launch_opts *o = s->o;
  double t0 = gf_mono_s();
  *stopped = false;
  launch_say(s, "capacity: waiting up to %gs (--start-timeout) for slots "
      "enough to run", o->start_timeout);
  while (gf_mono_s() - t0 < o->start_timeout) {
    struct timespec ts = {0, (long)(CAP_POLL_S * 1e9)};
    int sig = sigtimedwait(&s->sigs, NULL, &ts);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      s->signals++;
      *stopped = true;
      return false;
    }
    int avail = launch_capacity_avail(s, other);
    if (gf_launch_plan_world(o, avail, world, ga, err) == GF_OK) return true;
  }
  return false;
}
