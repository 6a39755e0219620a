/* proc_util.h - child processes of the tests: start a program with its
 * output into a log file (and optionally one environment variable set),
 * wait for it, run it to the end; run a function in a child and keep what
 * it said on stderr. Test code only (it may exit). */
#ifndef GF_TEST_PROC_UTIL_H
#define GF_TEST_PROC_UTIL_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* Starts argv[0] (a path; argv NULL-terminated) with stdout and stderr
 * into log (truncated), env_name=env_value set when env_name is not NULL,
 * and in a process group of its own when own_group. Returns its pid. */
static inline pid_t tu_spawn_log(const char *log, char *const *argv,
                                 const char *env_name, const char *env_value,
                                 int own_group) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (own_group) setpgid(0, 0);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    if (env_name) setenv(env_name, env_value, 1);
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

/* Waits for pid: its exit status, or 128 + the signal that ended it. */
static inline int tu_wait_rc(pid_t pid) {
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs fn(arg) in a child whose stderr goes into out[cap] (its start,
 * NUL-terminated; fn ends the child, with _exit or by dying) and returns
 * the child's wait status: for a check that must abort, seen from outside. */
static inline int tu_fork_capture(void (*fn)(void *), void *arg, char *out,
                                  size_t cap) {
  int p[2];
  REQUIRE(cap > 0 && pipe(p) == 0);
  fflush(NULL);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    dup2(p[1], 2);
    fn(arg);
    _exit(0);
  }
  close(p[1]);
  size_t n = 0;
  ssize_t k;
  while (n + 1 < cap && (k = read(p[0], out + n, cap - 1 - n)) > 0)
    n += (size_t)k;
  out[n] = '\0';
  close(p[0]);
  int ws = 0;
  REQUIRE(waitpid(pid, &ws, 0) == pid);
  return ws;
}

/* tu_spawn_log then tu_wait_rc. */
static inline int tu_run_log(const char *log, char *const *argv,
                             const char *env_name, const char *env_value) {
  return tu_wait_rc(tu_spawn_log(log, argv, env_name, env_value, 0));
}

#endif
