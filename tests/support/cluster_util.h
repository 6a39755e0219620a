/* cluster_util.h - what a C test on the test cluster of
 * tests/support/cluster.sh needs: bring it up (77 when it cannot be made
 * here), relay the MLflow fixture's server into it, take it down on every
 * exit path (exit, SIGTERM, SIGINT), and run commands capturing their
 * output. Test code only (it may exit).
 *
 * The cluster's state directory is $GF_CLUSTER_DIR, set by tc_up. One
 * process-wide record (tc_exit_state) holds what the signal handler needs;
 * it is written by tc_up before the handlers go in, and by tc_track. */
#ifndef GF_TEST_CLUSTER_UTIL_H
#define GF_TEST_CLUSTER_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define TC_MAX_TRACKED 8

typedef struct tc_exit_state {
  char *down_argv[3];                     /* cluster.sh down */
  volatile pid_t groups[TC_MAX_TRACKED];  /* process groups to kill */
} tc_exit_state;

static inline tc_exit_state *tc_state(void) {
  static tc_exit_state st; /* the one record the signal handler reads */
  return &st;
}

/* Runs `cluster.sh down` and waits for it (fork, execv, waitpid: callable
 * from a signal handler). */
static inline void tc_down(void) {
  tc_exit_state *s = tc_state();
  if (!s->down_argv[0]) return;
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) dup2(fd, 1);
    execv(s->down_argv[0], s->down_argv);
    _exit(127);
  }
  if (pid > 0)
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

/* Kills every tracked process group, then the cluster. */
static inline void tc_end_all(void) {
  tc_exit_state *s = tc_state();
  for (int i = 0; i < TC_MAX_TRACKED; i++)
    if (s->groups[i] > 0) {
      kill(-s->groups[i], SIGKILL);
      waitpid(s->groups[i], NULL, 0);
      s->groups[i] = 0;
    }
  tc_down();
}

static inline void tc_on_signal(int sig) {
  tc_end_all();
  _exit(128 + sig);
}

/* Tracks (or, pid 0 at slot, forgets) a process group started by the
 * test, so the exit paths kill it. */
static inline void tc_track(int slot, pid_t pgid) {
  REQUIRE(slot >= 0 && slot < TC_MAX_TRACKED);
  tc_state()->groups[slot] = pgid;
}

/* Runs argv (argv[0] a path) to the end with stdout into out (at most
 * cap - 1 bytes, trailing newlines removed) and stderr into the test's;
 * returns its exit status (128 + signal), -1 when it could not start. */
static inline int tc_capture(char *const *argv, char *out, size_t cap) {
  int p[2];
  if (pipe(p) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    close(p[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  size_t n = 0;
  ssize_t r;
  char sink[256];
  while ((r = read(p[0], n + 1 < cap ? out + n : sink,
                   n + 1 < cap ? cap - 1 - n : sizeof sink)) != 0) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (n + 1 < cap) n += (size_t)r;
  }
  close(p[0]);
  out[n] = '\0';
  while (n && out[n - 1] == '\n') out[--n] = '\0';
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* `cluster.sh VERB ARG` (ARG may be NULL); its exit status, output in
 * out[cap] when out is not NULL. */
static inline int tc_verb(const char *sh, const char *verb, const char *arg,
                          char *out, size_t cap) {
  char sink[512];
  char *argv[] = {(char *)sh, (char *)verb, (char *)arg, NULL};
  return tc_capture(argv, out ? out : sink, out ? cap : sizeof sink);
}

/* Brings up n hosts with state in dir (GF_CLUSTER_DIR set to it) and
 * installs the exit paths; returns 0, or 77 (not root, a tool missing:
 * cluster.sh said why on stderr). Fails the test on any other error. */
static inline int tc_up(const char *sh, const char *dir, int n) {
  REQUIRE(setenv("GF_CLUSTER_DIR", dir, 1) == 0);
  tc_exit_state *s = tc_state();
  s->down_argv[0] = (char *)sh;
  s->down_argv[1] = "down";
  s->down_argv[2] = NULL;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = tc_on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  atexit(tc_end_all);
  signal(SIGPIPE, SIG_IGN);
  char ns[8], out[2048];
  snprintf(ns, sizeof ns, "%d", n);
  int rc = tc_verb(sh, "up", ns, out, sizeof out);
  if (rc == 77) {
    fprintf(stderr, "SKIP: cluster.sh up: not root or a tool missing (its "
                    "reason above)\n");
    return 77;
  }
  REQUIRE(rc == 0);
  fprintf(stderr, "%s\n", out);
  return 0;
}

/* The URI by which hosts reach the root-namespace server at uri
 * ("http://127.0.0.1:PORT"): cluster.sh gateway, then the hub's address
 * (MLflow 3's server checks the Host header: it knows loopback and the
 * private ranges, not the name "hub"). */
static inline void tc_gateway_uri(const char *sh, const char *uri, char *out,
                                  size_t cap) {
  const char *colon = strrchr(uri, ':');
  REQUIRE(strncmp(uri, "http://127.0.0.1:", 17) == 0 && colon);
  char relay[64], hub[64];
  REQUIRE(tc_verb(sh, "gateway", colon + 1, relay, sizeof relay) == 0 &&
          strncmp(relay, "hub:", 4) == 0);
  REQUIRE(tc_verb(sh, "addr", "hub", hub, sizeof hub) == 0 && hub[0]);
  snprintf(out, cap, "http://%s:%s", hub, relay + 4);
}

#endif
