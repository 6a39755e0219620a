/* ganflow_train_main.c - the ganflow-train executable: parses the command
 * line, installs the SIGTERM/SIGINT handlers and runs gf_train_run
 * (trainer/include/gf/train.h). The only place that decides the exit
 * status.
 *
 * Signals: the handler only sets g_stop, the one piece of global mutable
 * state (a volatile sig_atomic_t, as a handler may touch nothing else);
 * the training loop reads it at every step boundary, writes a checkpoint
 * and ends the run KILLED. A second SIGINT while that is under way exits at
 * once with 130 (_exit is async-signal-safe). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gf/train.h"

static volatile sig_atomic_t g_stop; /* set by on_signal, read by the loop */

static void on_signal(int sig) {
  if (sig == SIGINT && g_stop) _exit(130);
  g_stop = 1;
}

int main(int argc, char **argv) {
  gf_train_config cfg;
  gf_err err;
  memset(&err, 0, sizeof err);
  const char *prog = argc > 0 && argv[0] ? argv[0] : "ganflow-train";
  const char *slash = strrchr(prog, '/');
  if (slash) prog = slash + 1;
  switch (gf_train_parse_args(&cfg, argc, argv, &err)) {
  case GF_PARSE_HELP:
    gf_train_usage(stdout, prog);
    return 0;
  case GF_PARSE_USAGE:
    fprintf(stderr, "%s: %s\nTry '%s --help'.\n", prog, err.msg, prog);
    return GF_TRAIN_EXIT_USAGE;
  case GF_PARSE_OK:
    break;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART; /* the loop polls the flag; no call needs EINTR */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  /* A closed stderr pipe (a log viewer gone) must not kill the run and
   * leave it RUNNING in MLflow: writes then fail with EPIPE instead. */
  signal(SIGPIPE, SIG_IGN);
  return (int)gf_train_run(&cfg, &g_stop);
}
