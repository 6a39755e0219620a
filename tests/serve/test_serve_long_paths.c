/* test_serve_long_paths.c - paths from flags that are too long for what
 * they will be joined into are refused before anything starts: the process
 * exits 2 (usage) at once, its message names the flag, nothing is created
 * below the path, and nothing crashes. ganflow-serve --cache-dir (longer
 * than GFS_CACHE_DIR_MAX, and longer than a path at all) and --token-file;
 * ganflow launch --heartbeat-dir (no room for rank-N.hb); ganflow generate
 * --cache-dir; ganflow sync PATH. No MLflow server is needed: the refusals
 * come before any contact (MLFLOW_TRACKING_URI points at a closed port, so
 * a binary that went on would only wait and be killed). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "file_util.h"
#include "gf/text.h"
#include "proc_util.h"

#define NOWHERE "http://127.0.0.1:9" /* the discard port: nothing listens */
#define LIMIT_S 20 /* a refusal takes milliseconds; going on, much longer */

static char g_base[64]; /* the paths under test start here */
static char g_logs[64]; /* the children's output, outside g_base */

/* base + "/ddd...d" components of up to 200 bytes, exactly len bytes in
 * all (len > strlen(base) + 1); malloc'd. */
static char *long_path(const char *base, size_t len) {
  size_t n = strlen(base);
  REQUIRE(len > n + 1);
  char *p = malloc(len + 1);
  REQUIRE(p != NULL);
  memcpy(p, base, n);
  while (n < len) {
    size_t k = len - n - 1 < 200 ? len - n - 1 : 200;
    p[n++] = '/';
    if (k == 0) { /* a lone '/' left: lengthen the last component */
      p[n - 1] = 'd';
      continue;
    }
    memset(p + n, 'd', k);
    n += k;
  }
  p[len] = '\0';
  return p;
}

/* Runs argv (its own process group) with output into g_logs/<tag>.log;
 * kills the group after LIMIT_S. Returns the exit status, 128 + signal
 * when one ended it, or -1 when it was killed for running too long. */
static int run(const char *tag, char *const *argv, char *log, size_t cap) {
  REQUIRE(gf_fits(snprintf(log, cap, "%s/%s.log", g_logs, tag), cap));
  pid_t pid = tu_spawn_log(log, argv, "MLFLOW_TRACKING_URI", NOWHERE, 1);
  for (int i = 0; i < LIMIT_S * 20; i++) {
    int status = 0;
    pid_t w = waitpid(pid, &status, WNOHANG);
    REQUIRE(w >= 0);
    if (w == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  killpg(pid, SIGKILL);
  tu_wait_rc(pid);
  return -1;
}

static int log_has(const char *log, const char *text) {
  FILE *f = fopen(log, "r");
  if (!f) return 0;
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strstr(buf, text) != NULL;
}

/* One refusal: exit 2 within LIMIT_S, `flag` named in the output, nothing
 * created below g_base. Clears g_base for the next case. */
static void expect_refusal(const char *tag, char *const *argv,
                           const char *flag) {
  char log[256];
  int rc = run(tag, argv, log, sizeof log);
  CHECKF(rc == 2, "%s: exit %d (2 = usage; -1 = still running after %d s, "
         "killed; >= 128 = a signal)", tag, rc, LIMIT_S);
  CHECKF(log_has(log, flag), "%s: the output does not name %s", tag, flag);
  int made = tu_count_names(g_base, "") - 2; /* all names but . and .. */
  CHECKF(made == 0, "%s: %d entries created below %s", tag, made, g_base);
  if (rc != 2 || !log_has(log, flag)) {
    fprintf(stderr, "--- %s output:\n", tag);
    char cmd[512];
    if (gf_fits(snprintf(cmd, sizeof cmd, "head -c 2000 '%s' >&2", log),
                     sizeof cmd) &&
        system(cmd) != 0)
      fprintf(stderr, "(cannot show %s)\n", log);
  }
  if (made) { /* rm copes with paths longer than PATH_MAX */
    char cmd[256];
    REQUIRE(gf_fits(snprintf(cmd, sizeof cmd,
                                  "rm -rf '%s' && mkdir '%s'", g_base, g_base),
                         sizeof cmd));
    REQUIRE(system(cmd) == 0);
  }
}

static void serve_cases(void) {
  /* Longer than GFS_CACHE_DIR_MAX (3756) yet a valid path (< 4096): the
   * server used to create it and run. */
  char *cache = long_path(g_base, 4039);
  char *a[] = {GF_SERVE_BIN, "--model", "models:/m@production", "--listen",
               "127.0.0.1:0", "--poll", "0", "--cache-dir", cache, NULL};
  expect_refusal("serve-cache-dir", a, "--cache-dir");
  free(cache);
  /* Longer than any path: it used to be cut to 4095 bytes. */
  cache = long_path(g_base, 5000);
  a[8] = cache;
  expect_refusal("serve-cache-dir-5000", a, "--cache-dir");
  free(cache);
  char *token = long_path(g_base, 5000);
  char *b[] = {GF_SERVE_BIN, "--model", "models:/m@production", "--listen",
               "127.0.0.1:0", "--poll", "0", "--token-file", token, NULL};
  expect_refusal("serve-token-file", b, "--token-file");
  free(token);
}

static void cli_cases(void) {
  /* 4090 bytes: a path, but no room for /rank-255.hb below it. */
  char *hb = long_path(g_base, 4090);
  char train[128];
  REQUIRE(gf_fits(snprintf(train, sizeof train, "%s/no/ganflow-train",
                                g_logs), sizeof train));
  char *a[] = {GF_CLI_BIN, "launch", "--nproc", "1", "--max-restarts", "0",
               "--heartbeat-dir", hb, "--", train, "--data", "x", NULL};
  expect_refusal("launch-heartbeat-dir", a, "--heartbeat-dir");
  free(hb);
  char *cache = long_path(g_base, 4039);
  char out[128];
  REQUIRE(gf_fits(snprintf(out, sizeof out, "%s/grid.png", g_logs),
                       sizeof out));
  char *b[] = {GF_CLI_BIN, "generate", "--model", "models:/m@production",
               "--seed", "1", "-o", out, "--cache-dir", cache, NULL};
  expect_refusal("generate-cache-dir", b, "--cache-dir");
  free(cache);
  char *dir = long_path(g_base, 5000);
  char *c[] = {GF_CLI_BIN, "sync", dir, NULL};
  expect_refusal("sync-path", c, "PATH too long");
  free(dir);
}

int main(void) {
  tu_mkdtemp(g_base, sizeof g_base);
  tu_mkdtemp(g_logs, sizeof g_logs);
  serve_cases();
  cli_cases();
  char cmd[256];
  REQUIRE(gf_fits(snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", g_base,
                                g_logs), sizeof cmd));
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", cmd + 7);
  return check_report();
}
