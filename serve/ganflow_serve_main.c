/* ganflow_serve_main.c - ganflow-serve: parses the command line, starts the
 * server library (serve/include/gfs/server.h) and waits for SIGINT or
 * SIGTERM. Exit codes: 0 after a clean stop, 1 runtime error, 2 usage. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <time.h>

#include "gf/clock.h"
#include "gfs/server.h"

static void log_line(void *arg, const char *line) {
  FILE *f = arg;
  char ts[32];
  time_t t = (time_t)(gf_unix_ms() / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  fprintf(f, "%s ganflow-serve: %s\n", ts, line);
  fflush(f);
}

int main(int argc, char **argv) {
  gfs_config cfg;
  gf_err err;
  memset(&err, 0, sizeof err);
  int help = 0;
  if (gfs_config_parse_args(&cfg, argc, argv, &help, &err) != GF_OK) {
    fprintf(stderr, "ganflow-serve: %s\n\n", err.msg);
    gfs_usage(stderr);
    return 2;
  }
  if (help) {
    gfs_usage(stdout);
    return 0;
  }
  cfg.log = log_line;
  cfg.log_arg = stderr;
#ifdef __GLIBC__
  /* A fixed mmap threshold: every block of 1 MiB or more (a version's
   * weights, its work buffers) is its own mapping and goes back to the
   * system when the version is freed. glibc's default raises the threshold
   * past the first such block freed, after which each hot swap leaves its
   * weights in the heap (RSS +8 to +20 MB per swap in bench/serve/soak.sh
   * with an mlp, flat with this). */
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  mlflow_config mcfg;
  mlflow_error me;
  if (mlflow_config_from_env(&mcfg, &me) != MLFLOW_OK) {
    fprintf(stderr, "ganflow-serve: %s\n", me.message);
    return 2;
  }
  /* Block the stop signals in every thread; this one waits for them. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
  gfs_server *srv = NULL;
  if (gfs_server_start(&cfg, &mcfg, &srv, &err) != GF_OK) {
    fprintf(stderr, "ganflow-serve: %s\n", err.msg);
    mlflow_config_free(&mcfg);
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  log_line(stderr, sig == SIGINT ? "SIGINT: stopping" : "SIGTERM: stopping");
  gfs_server_stop(srv);
  mlflow_config_free(&mcfg);
  return 0;
}
