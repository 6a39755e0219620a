/* launch_slurm.c - `ganflow launch --elastic-capacity slurm`: the Slurm
 * job's allocation as a capacity source. Each read runs
 *   scontrol show job -o <SLURM_JOB_ID>
 *   scontrol show hostnames <its NodeList>
 * and turns them into a capacity file's text (gf_capacity_from_slurm, pure,
 * in gf/launch.h): one line per node of the allocation, the job's tasks
 * spread over its nodes, and the job's EndTime (its time limit) as a notice
 * on every node, so the ranks checkpoint --capacity-notice-margin seconds
 * before Slurm ends the job. A running job that Slurm shrinks (`scontrol
 * update JobId=... NumNodes=...`) or whose limit moves is followed like a
 * rewritten file. Not here: what the supervisor does with the capacity
 * (launch_capacity.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gf/clock.h"
#include "gf/strbuf.h"
#include "gf/text.h"
#include "launch_internal.h"

#define SCONTROL_TIMEOUT_S 10.0

gf_status gf_slurm_job_value(const char *job, size_t len, const char *key,
                             char *out, size_t cap, gf_err *err) {
  size_t kl = strlen(key);
  for (size_t i = 0; i + kl < len; i++) {
    if ((i > 0 && job[i - 1] != ' ' && job[i - 1] != '\n') ||
        memcmp(job + i, key, kl) != 0 || job[i + kl] != '=')
      continue;
    size_t s = i + kl + 1, e = s;
    while (e < len && job[e] != ' ' && job[e] != '\n' && job[e] != '\0') e++;
    if (e - s >= cap)
      return gf_fail(err, GF_EFORMAT, "scontrol: %s is longer than %zu "
                     "characters", key, cap - 1);
    memcpy(out, job + s, e - s);
    out[e - s] = '\0';
    return GF_OK;
  }
  return gf_fail(err, GF_EFORMAT, "scontrol: no %s= in the job's record", key);
}

/* A decimal count of at most 6 digits in v, else -1. */
static int count_of(const char *v) {
  if (!*v || strlen(v) > 6) return -1;
  int n = 0;
  for (const char *p = v; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    n = n * 10 + (*p - '0');
  }
  return n;
}

/* Slurm's local time "YYYY-MM-DDTHH:MM:SS" as Unix seconds (mktime: the
 * zone Slurm prints in is this machine's); -1 for "Unknown", "NONE" and
 * anything else. */
static int64_t slurm_time(const char *v) {
  int y, mo, d, h, mi, s;
  char tail;
  if (sscanf(v, "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s,
             &tail) != 6 || strlen(v) != 19)
    return -1;
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
      s > 60)
    return -1;
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
  tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = s;
  tm.tm_isdst = -1;
  time_t t = mktime(&tm);
  return t == (time_t)-1 ? -1 : (int64_t)t;
}

gf_status gf_capacity_from_slurm(const char *job, size_t job_len,
                                 const char *hosts, size_t hosts_len,
                                 char *out, size_t cap, gf_err *err) {
  char state[32], tasks[16], nodes[16], end[32];
  GF_TRY(gf_slurm_job_value(job, job_len, "JobState", state, sizeof state,
                            err));
  out[0] = '\0';
  /* a job that does not run (any more) has no slots */
  if (strcmp(state, "RUNNING") != 0) return GF_OK;
  GF_TRY(gf_slurm_job_value(job, job_len, "NumTasks", tasks, sizeof tasks,
                            err));
  GF_TRY(gf_slurm_job_value(job, job_len, "NumNodes", nodes, sizeof nodes,
                            err));
  int nt = count_of(tasks), nn = count_of(nodes);
  if (nt < 1 || nn < 1)
    return gf_fail(err, GF_EFORMAT, "scontrol: NumTasks=%s NumNodes=%s: not "
                   "counts", tasks, nodes);
  int64_t leaving = -1;
  if (gf_slurm_job_value(job, job_len, "EndTime", end, sizeof end, NULL) ==
      GF_OK)
    leaving = slurm_time(end);
  gf_strbuf b;
  gf_strbuf_init(&b);
  int node = 0;
  size_t pos = 0;
  while (pos < hosts_len) {
    size_t n;
    const char *ls = gf_next_line(hosts, hosts_len, &pos, &n);
    if (n == 0) continue;
    if (node >= nn) {
      gf_strbuf_free(&b);
      return gf_fail(err, GF_EFORMAT, "scontrol show hostnames: more than "
                     "NumNodes=%d names", nn);
    }
    /* the tasks spread as Slurm's block distribution does: the first
     * NumTasks % NumNodes nodes one more */
    int slots = nt / nn + (node < nt % nn);
    gf_strbuf_printf(&b, "%.*s slots=%d", (int)n, ls, slots);
    if (leaving >= 0) gf_strbuf_printf(&b, " leaving=%" PRId64, leaving);
    gf_strbuf_puts(&b, "\n");
    node++;
  }
  gf_status st = GF_OK;
  if (b.failed) st = gf_fail(err, GF_ENOMEM, "out of memory");
  else if (node != nn)
    st = gf_fail(err, GF_EFORMAT, "scontrol show hostnames: %d names for "
                 "NumNodes=%d", node, nn);
  else if (b.len >= cap)
    st = gf_fail(err, GF_EFORMAT, "the allocation's capacity text is more "
                 "than %zu bytes", cap - 1);
  else
    memcpy(out, b.len ? b.data : "", b.len + 1);
  gf_strbuf_free(&b);
  return st;
}

/* Runs argv (searched on PATH) with stdout into out[cap] (NUL-terminated,
 * *len bytes) and stderr to /dev/null, at most SCONTROL_TIMEOUT_S; GF_EIO
 * naming the command when it cannot run, times out, exits non-zero or
 * writes more than cap - 1 bytes. */
static gf_status run_capture(char *const argv[], char *out, size_t cap,
                             size_t *len, gf_err *err) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return gf_fail(err, GF_EIO, "%s: pipe: %s", argv[0], strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return gf_fail(err, GF_EIO, "%s: fork: %s", argv[0], strerror(errno));
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* the supervisor blocks some */
    dup2(fds[1], 1);
    int dn = open("/dev/null", O_WRONLY);
    if (dn >= 0) dup2(dn, 2);
    execvp(argv[0], argv);
    _exit(127);
  }
  close(fds[1]);
  size_t n = 0;
  bool big = false, late = false;
  double end = gf_mono_s() + SCONTROL_TIMEOUT_S;
  for (;;) {
    int left = (int)((end - gf_mono_s()) * 1000);
    if (left <= 0) {
      late = true;
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    int r = poll(&p, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      late = r == 0;
      break;
    }
    char tmp[4096];
    ssize_t got = read(fds[0], tmp, sizeof tmp);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (n + (size_t)got >= cap) big = true;
    else memcpy(out + n, tmp, (size_t)got), n += (size_t)got;
  }
  close(fds[0]);
  if (late) kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  out[n] = '\0';
  *len = n;
  if (late)
    return gf_fail(err, GF_EIO, "%s %s: no answer in %g s", argv[0], argv[1],
                   SCONTROL_TIMEOUT_S);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return gf_fail(err, GF_EIO, "%s %s %s: %s %d", argv[0], argv[1], argv[2],
                   WIFEXITED(st) ? "exit" : "signal",
                   WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  if (big)
    return gf_fail(err, GF_EIO, "%s %s: more than %zu bytes", argv[0],
                   argv[1], cap - 1);
  return GF_OK;
}

gf_status launch_slurm_read(const char *job_id, char *text, size_t cap,
                            size_t *len, gf_err *err) {
  char job[8192], nodelist[4096], hosts[GF_CAP_FILE_MAX];
  size_t jl = 0, hl = 0;
  char *show[] = {"scontrol", "show", "job", "-o", (char *)job_id, NULL};
  GF_TRY(run_capture(show, job, sizeof job, &jl, err));
  char state[32];
  GF_TRY(gf_slurm_job_value(job, jl, "JobState", state, sizeof state, err));
  hosts[0] = '\0';
  if (strcmp(state, "RUNNING") == 0) {
    GF_TRY(gf_slurm_job_value(job, jl, "NodeList", nodelist, sizeof nodelist,
                              err));
    char *names[] = {"scontrol", "show", "hostnames", nodelist, NULL};
    GF_TRY(run_capture(names, hosts, sizeof hosts, &hl, err));
  }
  GF_TRY(gf_capacity_from_slurm(job, jl, hosts, hl, text, cap, err));
  *len = strlen(text);
  return GF_OK;
}
